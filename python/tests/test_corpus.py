"""Every table of every corpus database read through Python agrees with the catalog, with the
Rust export to Arrow IPC (the CLI, built in the same target dir) and with DuckDB."""

import subprocess

import pyarrow as pa
import pyarrow.ipc
import pytest

import mdfkit
from conftest import CORPUS, corpus_files, optional

DATABASES = corpus_files("mdf") + corpus_files("bak")

# Backups known not to open (as in crates/mdfkit/tests/corpus_backups.rs), with what they raise.
KNOWN_NOT_OPENING = {
    "bak/mariamahmed08080-chinook_analysis__chinook.bak": (mdfkit.MissingFileError, "stripe 2 is missing"),
}


def open_or_known_failure(corpus, name):
    """Opens a corpus database; None for a known failure (checked to fail the known way)."""
    try:
        return mdfkit.open(corpus / name)
    except mdfkit.Error as e:
        if name not in KNOWN_NOT_OPENING:
            raise
        kind, text = KNOWN_NOT_OPENING[name]
        assert isinstance(e, kind) and text in str(e), e
        return None


def export_with_cli(mdfkit_bin, path, out):
    """`mdfkit export --all --format arrow`: exit 0, or 2 when some tables were refused."""
    run = subprocess.run(
        # One thread: rows in the same (leaf) order as Python's serial scan.
        [mdfkit_bin, "export", str(path), "--all", "--format", "arrow", "--threads", "1", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    return run


@pytest.mark.parametrize("name", DATABASES)
def test_every_table_matches_the_catalog_and_the_rust_export(name, corpus, mdfkit_bin, tmp_path):
    path = corpus / name
    db = open_or_known_failure(corpus, name)
    if db is None:
        run = export_with_cli(mdfkit_bin, path, tmp_path)
        assert run.returncode in (1, 2) and KNOWN_NOT_OPENING[name][1] in run.stderr, (name, run.stderr)
        return
    run = export_with_cli(mdfkit_bin, path, tmp_path)
    assert run.returncode in (0, 2), (name, run.stderr)
    read = 0
    for t in db.tables:
        ipc = tmp_path / f"{t.schema_name}.{t.name}.arrows"
        try:
            ours = t.to_arrow()
        except mdfkit.UnsupportedFeatureError as e:
            assert not ipc.exists(), f"{t.qualified_name}: Python refused ({e}) what the CLI exported"
            assert e.table and e.table.startswith(t.qualified_name), (e.table, t.qualified_name)
            continue
        assert ours.num_rows == t.rows, t.qualified_name
        assert ipc.exists(), f"{t.qualified_name}: the CLI did not export it"
        theirs = pa.ipc.open_stream(ipc).read_all()
        assert ours.schema.equals(theirs.schema, check_metadata=True), t.qualified_name
        assert ours.equals(theirs), t.qualified_name
        read += 1
    assert read > 0 or not db.tables


@pytest.mark.parametrize("name", DATABASES)
def test_duckdb_counts_equal_the_catalog(name, corpus):
    optional("duckdb")
    db = open_or_known_failure(corpus, name)
    if db is None:
        return
    con = db.duckdb()
    for t in db.tables:
        try:
            t.schema
        except mdfkit.UnsupportedFeatureError:
            continue
        if "NONE" not in t.compression:
            continue
        sql = f'select count(*) from "{t.schema_name}"."{t.name}"'
        try:
            ((count,),) = con.sql(sql).fetchall()
        except Exception as e:  # a refused column type surfaces through DuckDB's own error
            if "not decoded yet" in str(e) or "not supported yet" in str(e):
                continue
            raise
        assert count == t.rows, t.qualified_name


def test_the_corpus_is_there(corpus):
    assert len(corpus_files("mdf")) >= 30, CORPUS
