"""The Python examples run: the docstrings of the package's modules and the README's Python
section are doctests, over the sample database `mdfkit demo` writes (mdfkit-forge's shop: the
values they show are its inputs, e.g. 5,000 orders numbered from 100000, SQL Server 2019)."""

import doctest
import importlib
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, optional

#: The modules with examples. mdfkit.dask and mdfkit.spark show a cluster reading object URLs:
#: their examples are plain code, not doctests.
MODULES = ["mdfkit", "mdfkit._database", "mdfkit._table", "mdfkit._split", "mdfkit._export"]

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture(scope="module")
def shop(tmp_path_factory, mdfkit_bin) -> Path:
    """A folder holding shop.mdf, written by `mdfkit demo`."""
    folder = tmp_path_factory.mktemp("doctests")
    subprocess.run([mdfkit_bin, "demo", "--dir", str(folder)], check=True, capture_output=True)
    return folder


def run_doctests(tests, folder: Path, monkeypatch) -> None:
    """Runs the tests in `folder` with `mdfkit`, `pa` and `db` (shop.mdf opened) defined; fails
    with doctest's report of every example that did not give what it shows."""
    import pyarrow as pa

    import mdfkit

    for extra in ("pandas", "polars", "duckdb"):
        optional(extra)
    monkeypatch.chdir(folder)
    names = {"mdfkit": mdfkit, "pa": pa, "db": mdfkit.open("shop.mdf")}
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    for test in tests:
        test.globs.update(names)
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    assert runner.tries > 0, "no example found"


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module, shop, monkeypatch):
    tests = doctest.DocTestFinder().find(importlib.import_module(module))
    run_doctests([t for t in tests if t.examples], shop, monkeypatch)


def test_readme_python_examples_run(shop, monkeypatch):
    readme = (REPO / "README.md").read_text()
    start = readme.index("### From Python")
    section = readme[start : readme.index("\n### ", start + 1)]
    # A code fence would read as an example's expected output: blank lines instead.
    section = "\n".join("" if l.startswith("```") else l for l in section.split("\n"))
    line = readme[:start].count("\n")
    test = doctest.DocTestParser().get_doctest(section, {}, "README.md: From Python", str(REPO / "README.md"), line)
    run_doctests([test], shop, monkeypatch)
