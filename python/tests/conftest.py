"""Shared fixtures of the Python package tests: the corpus (MDFKIT_CORPUS, default ../shared/corpus
beside the repository) and the CLI built in the same target dir (MDFKIT_BIN)."""

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("MDFKIT_CORPUS", REPO.parent / "shared" / "corpus"))


def loud_skip(what: str):
    """Fails under CI (which must run everything), skips loudly elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must run these tests")
    print(f"\n*** SKIPPED: {what} ***", file=sys.stderr)
    pytest.skip(what)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "MANIFEST.tsv").is_file():
        loud_skip(f"corpus not found at {CORPUS} (set MDFKIT_CORPUS)")
    return CORPUS


def corpus_files(kind: str):
    """The corpus files of one kind (mdf, bak), for parametrize (empty without the corpus)."""
    manifest = CORPUS / "MANIFEST.tsv"
    if not manifest.is_file():
        return []
    out = []
    for line in manifest.read_text().splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) > 1 and cols[1] == kind and (CORPUS / cols[0]).is_file():
            out.append(cols[0])
    return sorted(out)


@pytest.fixture(scope="session")
def mdfkit_bin() -> str:
    """The `mdfkit` CLI: MDFKIT_BIN, else $CARGO_TARGET_DIR/debug/mdfkit, else on PATH."""
    candidates = [os.environ.get("MDFKIT_BIN")]
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates.append(str(Path(target) / "debug" / "mdfkit"))
    candidates.append(shutil.which("mdfkit"))
    for c in candidates:
        if c and Path(c).is_file():
            return c
    loud_skip("the mdfkit CLI was not found (build it with `cargo build -p mdfkit-cli`, set MDFKIT_BIN)")


def optional(module: str):
    """Imports an optional dependency. A missing one skips loudly; under CI only when
    scripts/test.sh found that PyPI does not have it for this machine (MDFKIT_UNAVAILABLE)."""
    try:
        return __import__(module)
    except ImportError:
        what = f"{module} is not installed (pip install 'mdfkit[{module}]')"
        if module in os.environ.get("MDFKIT_UNAVAILABLE", "").split():
            print(f"\n*** SKIPPED: {what}: PyPI has no build of it for this machine ***", file=sys.stderr)
            pytest.skip(what)
        loud_skip(what)
