"""Parquet written by `mdfkit export` read back with an independent reader (pyarrow) reproduces
the ground truth of the corpus: every listed row of every expected-value file about a data file."""

import datetime
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

CORPUS = Path(os.environ.get("MDFKIT_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))
MDFKIT = os.environ.get("MDFKIT_BIN", "mdfkit")


def corpus_or_skip():
    if (CORPUS / "MANIFEST.tsv").is_file():
        return CORPUS
    if os.environ.get("CI"):
        pytest.fail(f"corpus not found at {CORPUS}: CI must run the corpus tests")
    print(f"\n*** SKIPPED: corpus not found at {CORPUS} (set MDFKIT_CORPUS) ***", file=sys.stderr)
    pytest.skip("corpus not found")


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


def expected_files():
    dir = corpus_or_skip()
    for path in sorted((dir / "expected").glob("*.expected.json")):
        data = json.loads(path.read_text())
        yield dir / data["corpus_file"], data


def test_parquet_export_reproduces_the_expected_rows(tmp_path):
    checked = 0
    for corpus_file, data in expected_files():
        tables = [t for t in data["tables"] if t.get("rows")]
        if not tables:
            continue
        out = tmp_path / corpus_file.stem
        args = [MDFKIT, "export", str(corpus_file), "--format", "parquet", "-o", str(out)]
        for t in tables:
            args += ["--table", f"{t['schema']}.{t['name']}"]
        subprocess.run(args, check=True, capture_output=True)
        for t in tables:
            unknown = {c["name"] for c in t["columns"] if c.get("unknown")}
            table = pq.read_table(out / f"{t['schema']}.{t['name']}.parquet")
            ours = [{k: spell(v) for k, v in row.items()} for row in table.to_pylist()]
            assert table.num_rows == t["row_count"], t["name"]
            for want in t["rows"]:
                want = {k: v for k, v in want.items() if k not in unknown}
                assert any(all(row.get(k) == v for k, v in want.items()) for row in ours), (t["name"], want)
                checked += 1
    assert checked > 150, f"only {checked} rows compared"
    print(f"parquet round trip: {checked} expected rows found through pyarrow")


def test_parquet_keeps_the_sql_types(tmp_path):
    dir = corpus_or_skip()
    db = dir / "mdf" / "itsligo-sampledbs__pubs.mdf"
    subprocess.run([MDFKIT, "export", str(db), "--table", "titles", "-o", str(tmp_path)], check=True, capture_output=True)
    schema = pq.read_schema(tmp_path / "dbo.titles.parquet")
    assert str(schema.field("price").type) == "decimal128(19, 4)"
    assert str(schema.field("pubdate").type) == "timestamp[ms]"
    assert str(schema.field("royalty").type) == "int32"
    assert schema.field("title").metadata[b"mdfkit.sql_type"] == b"varchar(80)"
