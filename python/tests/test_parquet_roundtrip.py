"""Parquet written by `mdfkit export` read back with an independent reader (pyarrow) reproduces
the ground truth of the corpus: every listed row of every expected-value file about a data file."""

import json
import subprocess

import pyarrow.parquet as pq
import pytest

from conftest import spell


def expected_files(dir):
    for path in sorted((dir / "expected").glob("*.expected.json")):
        data = json.loads(path.read_text())
        yield dir / data["corpus_file"], data


def test_parquet_export_reproduces_the_expected_rows(corpus, mdfkit_bin, tmp_path):
    checked = 0
    for corpus_file, data in expected_files(corpus):
        tables = [t for t in data["tables"] if t.get("rows")]
        if not tables:
            continue
        out = tmp_path / corpus_file.stem
        args = [mdfkit_bin, "export", str(corpus_file), "--format", "parquet", "-o", str(out)]
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


def test_parquet_keeps_the_sql_types(corpus, mdfkit_bin, tmp_path):
    db = corpus / "mdf" / "itsligo-sampledbs__pubs.mdf"
    subprocess.run([mdfkit_bin, "export", str(db), "--table", "titles", "-o", str(tmp_path)], check=True, capture_output=True)
    schema = pq.read_schema(tmp_path / "dbo.titles.parquet")
    assert str(schema.field("price").type) == "decimal128(19, 4)"
    assert str(schema.field("pubdate").type) == "timestamp[ms]"
    assert str(schema.field("royalty").type) == "int32"
    assert schema.field("title").metadata[b"mdfkit.sql_type"] == b"varchar(80)"
