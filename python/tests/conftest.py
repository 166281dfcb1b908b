"""Shared fixtures of the Python package tests: the corpus (MDFKIT_CORPUS, default ../shared/corpus
beside the repository) and the CLI built in the same target dir (MDFKIT_BIN)."""

import datetime
import decimal
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


def page_checksum(page):
    """SQL Server's page checksum (see crates/mdfkit/src/page/protection.rs)."""
    total = 0
    for sector in range(16):
        folded = 0
        for word in range(128):
            at = sector * 512 + word * 4
            if at != 60:
                folded ^= int.from_bytes(page[at : at + 4], "little")
        shift = 15 - sector
        total ^= ((folded << shift) | (folded >> (32 - shift))) & 0xFFFFFFFF
    return total


def with_compression(data, partition_id, level):
    """pubs with one partition's sysrowsets row saying compression `level` (cmprlevel, fixed
    offset 39 of the row: 1 ROW, 2 PAGE, 3 COLUMNSTORE), its page's checksum recomputed; the
    partition's pages stay as they were."""
    data = bytearray(data)
    key = partition_id.to_bytes(8, "little")
    for start in range(0, len(data), 8192):
        page = data[start : start + 8192]
        # sysrowsets pages: allocation unit 5 << 16 (object id part 5, index id part 0).
        if page[1] != 1 or page[24:28] != (5).to_bytes(4, "little") or page[6:8] != b"\0\0":
            continue
        at = page.find(key, 96)
        if at < 0:
            continue
        data[start + at - 4 + 39] = level
        data[start + 60 : start + 64] = page_checksum(data[start : start + 8192]).to_bytes(4, "little")
        return bytes(data)
    raise AssertionError("sysrowsets row not found")


def spell(value):
    """The corpus README's spellings of a value read by pyarrow."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + f".{value.microsecond // 1000:03d}" if value.microsecond else text
    if isinstance(value, bytes):
        return "0x" + value.hex().upper()
    return str(value)
