"""The Python API on the corpus: descriptions, schemas, reading options, conversions, views,
DuckDB and export."""

import datetime
import decimal
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mdfkit
from conftest import with_compression
from conftest import optional

PUBS = "mdf/itsligo-sampledbs__pubs.mdf"
ADVENTUREWORKS = "big/jdhj-edx__adventureworkslt2012_data.mdf"


@pytest.fixture(scope="module")
def pubs(corpus):
    return mdfkit.open(corpus / PUBS)


def test_info(pubs):
    info = pubs.info
    assert isinstance(info, mdfkit.DatabaseInfo)
    assert info.version == 655 and info.product == "SQL Server 2008"
    assert info.collation == "Latin1_General_CI_AS"
    assert info.user_tables == len(pubs.tables) == 11
    assert isinstance(info.created, datetime.datetime)
    rows = [f for f in info.files if f.type == "ROWS"]
    assert rows[0].file_id == 1 and rows[0].location.endswith("pubs.mdf")
    assert info.missing_files == ()


def test_tables(pubs):
    names = [t.qualified_name for t in pubs.tables]
    assert "dbo.titles" in names and names == sorted(names)
    t = pubs.table("TITLES")
    assert (t.schema_name, t.name, t.rows) == ("dbo", "titles", 18)
    assert t.pages > 0 and t.compression == ("NONE",)
    assert "titles" in repr(t)
    assert pubs["dbo.titles"].object_id == t.object_id
    assert "CREATE TABLE" in t.ddl


def test_schema_carries_the_sql_types(pubs):
    schema = pubs.table("titles").schema
    assert isinstance(schema, pa.Schema)
    assert schema.field("price").type == pa.decimal128(19, 4)
    assert schema.field("price").metadata[b"mdfkit.sql_type"] == b"money"
    assert schema.field("title").metadata[b"mdfkit.sql_type"] == b"varchar(80)"
    assert schema.field("pubdate").type == pa.timestamp("ms")


def test_to_arrow_columns_and_limit(pubs):
    t = pubs.table("titles")
    full = t.to_arrow()
    assert full.num_rows == 18 and full.schema.equals(t.schema, check_metadata=True)
    part = t.to_arrow(columns=["title_id", "price"], limit=5)
    assert part.column_names == ["title_id", "price"] and part.num_rows == 5
    assert part.column("price")[0].as_py() == decimal.Decimal("19.9900")
    assert t.to_arrow(limit=0).num_rows == 0
    assert t.arrow_schema(["price"]).names == ["price"]


def test_iter_batches(pubs):
    t = pubs.table("titles")
    batches = list(t.iter_batches(batch_size=5))
    assert [b.num_rows for b in batches] == [5, 5, 5, 3]
    assert pa.Table.from_batches(batches).equals(t.to_arrow())
    # Stopping early stops the scan (no hang, no leak of a blocked thread).
    for i in range(50):
        for batch in t.iter_batches(batch_size=1):
            break


def test_iter_batches_of_the_largest_table(corpus):
    """Batches of exactly batch_size rows (the last one shorter) that add up to the table; the
    scan thread runs at most one batch ahead (a channel of one slot, see python/src/lib.rs)."""
    db = mdfkit.open(corpus / ADVENTUREWORKS)
    t = max((t for t in db.tables if t.name != "ProductModel"), key=lambda t: t.rows)
    sizes = [b.num_rows for b in t.iter_batches(batch_size=64)]
    assert sum(sizes) == t.rows > 64
    assert all(n == 64 for n in sizes[:-1]) and 0 < sizes[-1] <= 64
    assert pa.Table.from_batches(list(t.iter_batches(batch_size=100))).equals(t.to_arrow())


def test_the_arrow_pycapsule_interface(pubs):
    t = pubs.table("titles")
    assert pa.table(t).num_rows == 18
    assert pa.table(t).num_rows == 18  # a new stream each time
    reader = t.to_reader(columns=["title_id"], batch_size=4)
    assert reader.schema.names == ["title_id"]
    assert reader.read_all().num_rows == 18
    stream = pubs._native.scan("dbo.titles")
    pa.RecordBatchReader._import_from_c_capsule(stream.__arrow_c_stream__()).read_all()
    with pytest.raises(RuntimeError):
        stream.__arrow_c_stream__()  # one-shot


def test_threads_read_in_parallel(corpus):
    db = mdfkit.open(corpus / ADVENTUREWORKS)
    t = db.table("SalesLT.SalesOrderDetail")
    results = []
    threads = [threading.Thread(target=lambda: results.append(t.to_arrow().num_rows)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [t.rows] * 4


def test_pandas_and_polars(pubs):
    optional("pandas")
    df = pubs.table("titles").to_pandas()
    assert len(df) == 18 and "price" in df.columns
    pl = optional("polars")
    frame = pubs.table("titles").to_polars(columns=["title_id", "royalty"])
    assert isinstance(frame, pl.DataFrame) and frame.shape == (18, 2)
    assert pl.DataFrame(pubs.table("authors")).height == 23
    assert len(pubs.sys("sys.columns").to_pandas()) > 0


def test_sys_views(pubs):
    columns = pubs.sys("sys.columns")
    assert isinstance(columns, pa.Table)
    assert {"object_id", "name", "column_id"} <= set(columns.column_names)
    assert columns.schema.field("object_id").type == pa.int64()
    tables = pubs.sys("sys.tables").to_pylist()
    assert "titles" in {r["name"] for r in tables}
    assert pubs.sys("sys.sysschobjs").num_rows > 0


def test_duckdb(pubs):
    optional("duckdb")
    con = pubs.duckdb()
    assert con.sql("select count(*) from dbo.titles").fetchall() == [(18,)]
    assert con.sql("select count(*) from titles").fetchall() == [(18,)]
    by_type = dict(con.sql("select type, count(*) from titles group by 1").fetchall())
    assert by_type["business    "] == 4
    joined = con.sql(
        "select count(*) from dbo.titleauthor ta join dbo.authors a on a.au_id = ta.au_id"
    ).fetchall()
    assert joined == [(25,)]


def test_export(corpus, tmp_path):
    results = mdfkit.export(corpus / PUBS, tmp_path / "out", format="parquet", tables=["titles", "dbo.authors"])
    assert [(r.table, r.rows, r.error) for r in results] == [("dbo.titles", 18, None), ("dbo.authors", 23, None)]
    assert pq.read_table(tmp_path / "out" / "dbo.titles.parquet").num_rows == 18
    for fmt, ext in [("arrow", "arrows"), ("csv", "csv"), ("jsonl", "jsonl")]:
        (r,) = mdfkit.export(corpus / PUBS, tmp_path / fmt, format=fmt, tables=["titles"])
        assert r.path.name == f"dbo.titles.{ext}" and r.path.stat().st_size == r.bytes > 0
    with pytest.raises(ValueError):
        mdfkit.export(corpus / PUBS, tmp_path, format="xlsx")


def test_export_parquet_compression(corpus, tmp_path):
    codecs = {"zstd": {"ZSTD"}, "zstd:9": {"ZSTD"}, "snappy": {"SNAPPY"}, "lz4": {"LZ4", "LZ4_RAW"}, "none": {"UNCOMPRESSED"}}
    tables = []
    for name, expected in codecs.items():
        (r,) = mdfkit.export(corpus / PUBS, tmp_path / name.replace(":", "-"), tables=["titles"], compression=name)
        meta = pq.ParquetFile(r.path).metadata
        written = {meta.row_group(0).column(i).compression for i in range(meta.num_columns)}
        assert written <= expected, (name, written)
        tables.append(pq.read_table(r.path))
    assert all(t.equals(tables[0]) for t in tables) and tables[0].num_rows == 18
    with pytest.raises(ValueError, match="zstd, zstd:LEVEL"):
        mdfkit.open(corpus / PUBS).table("titles").export(tmp_path / "x.parquet", compression="gzip")


def test_export_threads(corpus, tmp_path):
    # titles is clustered on title_id: one thread writes it in key order.
    (r,) = mdfkit.export(corpus / PUBS, tmp_path, format="csv", tables=["titles"], threads=1)
    ids = [line.split(",")[0] for line in r.path.read_text().splitlines()[1:]]
    assert len(ids) == 18 and ids == sorted(ids)
    assert ids[0] == "BU1032" and ids[-1] == "TC7777"
    with pytest.raises(ValueError, match="threads must be at least 1"):
        mdfkit.open(corpus / PUBS).table("titles").export(tmp_path / "x.csv", "csv", threads=0)


def test_export_all_with_a_refused_table(corpus, tmp_path):
    pubs = mdfkit.open(corpus / PUBS)
    authors = pubs.table("dbo.authors")
    partitions = pubs.sys("sys.partitions").to_pylist()
    pid = next(p["partition_id"] for p in partitions if p["object_id"] == authors.object_id and p["index_id"] == 1)
    path = tmp_path / "compressed.mdf"
    path.write_bytes(with_compression((corpus / PUBS).read_bytes(), pid, 3))
    db = mdfkit.open(path)
    with pytest.raises(mdfkit.UnsupportedFeatureError) as info:
        db.export(tmp_path / "a")
    assert info.value.table == "dbo.authors"
    written = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(written) == len(db.tables) - 1 and "dbo.authors.parquet" not in written
    results = mdfkit.export(db, tmp_path / "b", errors="skip")
    failed = [r for r in results if r.error]
    assert [r.table for r in failed] == ["dbo.authors"]
    assert sum(r.rows for r in results) > 0


def test_help_teaches():
    doc = mdfkit.open.__doc__
    assert "Example" in doc and "mdfkit.open(" in doc
    assert "iter_batches" in mdfkit.__doc__


def test_close(corpus):
    with mdfkit.open(corpus / PUBS) as db:
        t = db.table("titles")
        batches = t.iter_batches(batch_size=5)
        next(batches)
    assert sum(b.num_rows for b in batches) == 13  # a running stream keeps the files open
    with pytest.raises(ValueError):
        db.tables
    assert "pubs" in repr(db)
