"""Past one process: splits read in other processes, Dask (a distributed.LocalCluster of 2 worker
processes), Spark (a local[2] session through the `mdfkit` Python data source) and Delta Lake
(written with `deltalake`, read back with it), over corpus files, a compressed backup and files
served by a local S3 server (versitygw). Every engine's counts, integer and decimal sums and a hash
of every column equal the single-process read, and the row and null counts equal what SQL Server
measured (the corpus's expected-value files). A damaged page fails the job, naming the page.

scripts/test-scale.sh installs PySpark, Dask and deltalake, builds the wheel with object-store
support and runs this file with MDFKIT_SCALE_TESTS=1; elsewhere it says so and passes."""

import csv
import io
import json
import multiprocessing
import os
import pickle
import shutil
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import mdfkit
from conftest import CORPUS, loud_skip

if not os.environ.get("MDFKIT_SCALE_TESTS"):
    pytest.skip("scale tests not run: scripts/test-scale.sh runs them (MDFKIT_SCALE_TESTS=1)", allow_module_level=True)

AW = "big/jdhj-edx__adventureworkslt2012_data.mdf"
ENTREPOT = "bak/xxxnemesis4xxx-sql_server__entrepot.bak"
# Compressed (MSSQLBAK), 3.7 MB.
SHAREPOINT = "bak/dataplat-appveyor-lab__sharepoint_config.bak"
# Small splits, so that every table of a few pages is read by several workers.
TARGET = 16 << 10


def engine(module: str):
    try:
        return __import__(module)
    except ImportError:
        loud_skip(f"{module} is not installed (scripts/test-scale.sh installs it)")


def digest(table: pa.Table) -> dict:
    """Whatever the row order: the count, and per column its null count, its sum (integers and
    decimals: float sums depend on the order) and the sum of a CRC of each value's repr."""
    out = {"rows": table.num_rows}
    for name in table.column_names:
        column = table.column(name)
        kind = column.type
        total = None
        if pa.types.is_integer(kind) or pa.types.is_decimal(kind):
            total = pc.sum(column).as_py()
        crc = sum(zlib.crc32(repr(v).encode()) for v in column.to_pylist())
        out[name] = (column.null_count, total, crc)
    return out


def engine_type(t: pa.DataType) -> pa.DataType:
    """The type Spark and Delta Lake hold for ``t``, as mdfkit's Delta casts choose it
    (crates/mdfkit/src/export/delta.rs), applied here by pyarrow: an independent check of them."""
    if pa.types.is_uint8(t):
        return pa.int16()
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_time(t):
        return pa.string()
    if pa.types.is_timestamp(t) and t.unit != "us":
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(engine_type(f.type)) for f in t])
    return t


def portable(table: pa.Table) -> pa.Table:
    """A single-process read cast by pyarrow to the types Spark and Delta Lake hold."""
    schema = pa.schema([f.with_type(engine_type(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table.cast(schema, safe=False)


def expected(name: str) -> dict:
    """SQL Server's row and null counts of each table of a corpus file, by `schema.name`."""
    data = json.loads((CORPUS / "expected" / f"{Path(name).name}.expected.json").read_text())
    return {f"{t['schema']}.{t['name']}": t for t in data["tables"]}


def check_against_sql_server(name: str, table: str, got: pa.Table) -> int:
    """Checks `got` against SQL Server's counts where the expected-value file has the table:
    1 when it did, 0 when the file does not list the table."""
    want = expected(name).get(table)
    if want is None:
        return 0
    assert got.num_rows == want["row_count"], (name, table)
    for column in want["columns"]:
        if column["name"] in got.column_names:
            assert got.column(column["name"]).null_count == column["null_count"], (name, table, column["name"])
    return 1


def readable_tables(db) -> list:
    """The user tables this version reads (with rows: an empty table proves nothing here)."""
    out = []
    for t in db.tables:
        try:
            t.arrow_schema()
        except mdfkit.UnsupportedFeatureError:
            continue
        if t.rows > 0:
            out.append(t)
    return out


def _read_pickled(blob: bytes) -> bytes:
    """In another process: a pickled split read, its rows sent back as Arrow IPC."""
    split = pickle.loads(blob)
    table = mdfkit.read_split(split).read_all()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.fixture(scope="module")
def corpus_here(corpus):
    for name in (AW, ENTREPOT, SHAREPOINT):
        if not (corpus / name).is_file():
            pytest.fail(f"{name} is missing from the corpus")
    return corpus


@pytest.mark.parametrize("name", [AW, ENTREPOT, SHAREPOINT])
def test_pickled_splits_read_in_other_processes_return_the_single_process_rows(corpus_here, name):
    db = mdfkit.open(corpus_here / name)
    context = multiprocessing.get_context("spawn")
    checked = 0
    with context.Pool(2) as pool:
        for t in readable_tables(db):
            splits = t.splits(target_bytes=TARGET)
            blobs = pool.map(_read_pickled, [pickle.dumps(s) for s in splits])
            parts = [pa.ipc.open_stream(b).read_all() for b in blobs]
            got = pa.concat_tables(parts)
            assert digest(got) == digest(t.to_arrow()), (name, t.qualified_name, len(splits))
            if name != SHAREPOINT:
                checked += check_against_sql_server(name, t.qualified_name, got)
    assert name == SHAREPOINT or checked >= 2, f"{name}: only {checked} tables compared with SQL Server's counts"


def versitygw() -> str:
    tools = Path.home() / ".cache" / "mdfkit" / "tools" / "bin" / "versitygw"
    found = shutil.which("versitygw") or (str(tools) if tools.is_file() else None)
    if not found:
        loud_skip("versitygw is not installed (scripts/test-cloud.sh installs it)")
    return found


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    """A bucket `corpus` on a fresh versitygw (object `k` is the file `root/corpus/k`), the
    environment pointing mdfkit at it (inherited by Dask's and Spark's worker processes)."""
    if not mdfkit._native.object_stores:
        loud_skip("this wheel has no object-store support (maturin build --features cloud)")
    root = tmp_path_factory.mktemp("versitygw")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    access, secret = "mdfkit-test", "mdfkit-test-secret"
    command = [versitygw(), "--port", f"127.0.0.1:{port}", "--quiet", "--access", access, "--secret", secret]
    server = subprocess.Popen([*command, "posix", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, "versitygw did not start"
            time.sleep(0.05)
        env = {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            (root / "corpus").mkdir()
            yield root / "corpus"
    finally:
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def dask_client(bucket):
    """Started after the S3 server, so that its workers inherit its address."""
    engine("dask")
    distributed = engine("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def dask_table(paths, table, **kw) -> pa.Table:
    import mdfkit.dask

    frame = mdfkit.dask.read_table(paths, table, target_bytes=TARGET, **kw).compute()
    return pa.Table.from_pandas(frame, preserve_index=False)


@pytest.mark.parametrize("name", [AW, ENTREPOT, SHAREPOINT])
def test_dask_on_two_worker_processes_reads_what_one_process_reads(corpus_here, dask_client, name):
    db = mdfkit.open(corpus_here / name)
    checked = 0
    for t in readable_tables(db):
        got = dask_table(str(corpus_here / name), t.qualified_name, source_column=None)
        assert digest(got) == digest(t.to_arrow()), (name, t.qualified_name)
        if name != SHAREPOINT:
            checked += check_against_sql_server(name, t.qualified_name, got)
    assert name == SHAREPOINT or checked >= 2, f"{name}: only {checked} tables compared with SQL Server's counts"


def test_dask_reads_one_table_of_many_databases_naming_each(corpus_here, dask_client, tmp_path):
    for copy in ("a", "b"):
        shutil.copyfile(corpus_here / AW, tmp_path / f"{copy}.mdf")
    got = dask_table(str(tmp_path / "*.mdf"), "SalesLT.Product", columns=["ProductID", "ListPrice"])
    single = mdfkit.open(corpus_here / AW).table("SalesLT.Product").to_arrow(columns=["ProductID", "ListPrice"])
    for copy in ("a", "b"):
        mine = got.filter(pc.equal(got.column("source"), str(tmp_path / f"{copy}.mdf"))).drop_columns(["source"])
        assert digest(mine) == digest(single), copy


# Whether the JVM data source (jvm/, its jar from scripts/spark-jar.sh in MDFKIT_SPARK_JAR) answers
# to format("mdfkit") in the session of the `spark` fixture.
SPARK = {"jvm": False}
# format("mdfkit") reads through the JVM data source; "mdfkit_python" is the Python one.
SOURCES = ["mdfkit", "mdfkit_python"]


@pytest.fixture(scope="module")
def spark(bucket, mdfkit_bin):
    """Started after the S3 server, so that its JVM and Python workers inherit its address."""
    engine("pyspark")
    from pyspark.sql import SparkSession

    import mdfkit.spark

    builder = (SparkSession.builder.master("local[2]").appName("mdfkit-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    jar = os.environ.get("MDFKIT_SPARK_JAR")
    if jar:
        builder = builder.config("spark.jars", jar)
    session = builder.getOrCreate()
    SPARK["jvm"] = mdfkit.spark.register(session, command=mdfkit_bin)
    assert SPARK["jvm"] or not jar, f"{jar} is on the classpath but its data source did not load"
    yield session
    session.stop()


def spark_reader(spark, table, source="mdfkit", **options):
    if source == "mdfkit" and not SPARK["jvm"]:
        loud_skip("the JVM data source is not loaded (scripts/spark-jar.sh builds its jar; MDFKIT_SPARK_JAR)")
    reader = spark.read.format(source).option("table", table).option("target_bytes", str(TARGET))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def spark_table(spark, path, table, source="mdfkit", **options) -> pa.Table:
    return spark_reader(spark, table, source, **options).load(path).toArrow()


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", [AW, ENTREPOT])
def test_spark_local2_reads_what_one_process_reads(corpus_here, spark, name, source):
    db = mdfkit.open(corpus_here / name)
    checked = 0
    for t in readable_tables(db):
        got = spark_table(spark, str(corpus_here / name), t.qualified_name, source)
        assert digest(got) == digest(portable(t.to_arrow())), (name, t.qualified_name)
        checked += check_against_sql_server(name, t.qualified_name, got)
    assert checked >= 2, f"{name}: only {checked} tables compared with SQL Server's counts"


@pytest.mark.parametrize("source", SOURCES)
def test_spark_lists_tables_prunes_columns_and_reads_many_databases(corpus_here, spark, tmp_path, source):
    import mdfkit.spark

    listed = mdfkit.spark.tables(spark, str(corpus_here / AW)).collect()
    want = expected(AW)
    assert {f"{r['schema']}.{r['name']}": r["rows"] for r in listed} == {k: t["row_count"] for k, t in want.items()}
    for copy in ("a", "b"):
        shutil.copyfile(corpus_here / AW, tmp_path / f"{copy}.mdf")
    got = spark_table(spark, str(tmp_path / "*.mdf"), "SalesLT.Product", source, columns="ProductID,ListPrice",
                      source_column="source")
    assert got.column_names == ["ProductID", "ListPrice", "source"]
    single = mdfkit.open(corpus_here / AW).table("SalesLT.Product").to_arrow(columns=["ProductID", "ListPrice"])
    for copy in ("a", "b"):
        mine = got.filter(pc.equal(got.column("source"), str(tmp_path / f"{copy}.mdf"))).drop_columns(["source"])
        assert digest(mine) == digest(single), copy
    # A schema naming some of the columns is a column plan too.
    named = (spark_reader(spark, "SalesLT.Product", source).schema("ProductID int, ListPrice decimal(19,4)")
             .load(str(corpus_here / AW)).toArrow())
    assert digest(named) == digest(single)


def test_the_jvm_source_reads_only_the_columns_a_query_uses(corpus_here, spark, tmp_path):
    from pyspark.sql import functions

    aw = str(corpus_here / AW)
    frame = spark_reader(spark, "SalesLT.SalesOrderHeader").load(aw)
    query = frame.select("SalesOrderID", "SubTotal").where(functions.col("SubTotal") > 1000)
    # Spark asks the source for the two columns alone (and the splits read only those).
    plan = query._jdf.queryExecution().executedPlan().toString()
    assert "mdfkit SalesLT.SalesOrderHeader reading SalesOrderID, SubTotal " in plan, plan
    single = mdfkit.open(aw).table("SalesLT.SalesOrderHeader").to_arrow(columns=["SalesOrderID", "SubTotal"])
    want = single.filter(pc.greater(single.column("SubTotal"), 1000))
    assert digest(query.toArrow()) == digest(want)
    # A count reads no values; with the source column alone, each row still names its database.
    assert frame.count() == expected(AW)["SalesLT.SalesOrderHeader"]["row_count"]
    shutil.copyfile(corpus_here / AW, tmp_path / "a.mdf")
    both = spark_reader(spark, "SalesLT.SalesOrderHeader", source_column="db").load(f"{aw},{tmp_path / 'a.mdf'}")
    counts = {r["db"]: r["count"] for r in both.groupBy("db").count().collect()}
    assert counts == {aw: single.num_rows, str(tmp_path / "a.mdf"): single.num_rows}


def damaged_copy(corpus: Path, tmp_path: Path, table: str):
    """A copy of AdventureWorksLT with one data page of `table` damaged (a byte of its rows
    flipped: the page checksum no longer matches), and that page's number."""
    db = mdfkit.open(corpus / AW)
    data = bytearray((corpus / AW).read_bytes())
    for split in db.table(table).splits(target_bytes=TARGET):
        for file_id, first, count in split._fields["pages"]:
            for page in range(first, first + count):
                header = data[page * 8192: page * 8192 + 96]
                # m_type 1 (data page), level 0, at least one row.
                if header[1] == 1 and header[3] == 0 and int.from_bytes(header[22:24], "little") > 0:
                    data[page * 8192 + 200] ^= 0xFF
                    path = tmp_path / "damaged.mdf"
                    path.write_bytes(bytes(data))
                    return path, f"1:{page}"
    raise AssertionError(f"no data page of {table} found")


def test_a_damaged_page_fails_the_dask_and_spark_jobs_naming_the_page(corpus_here, dask_client, spark, tmp_path):
    path, page = damaged_copy(corpus_here, tmp_path, "SalesLT.Customer")
    with pytest.raises(mdfkit.CorruptPageError) as caught:
        dask_table(str(path), "SalesLT.Customer")
    assert f"page {page}" in str(caught.value) and "SalesLT.Customer" in str(caught.value), caught.value
    with pytest.raises(Exception) as caught:
        spark_table(spark, str(path), "SalesLT.Customer", "mdfkit_python")
    assert f"page {page}" in str(caught.value) and "SalesLT.Customer" in str(caught.value), str(caught.value)[-2000:]
    # With salvage both jobs finish without that page's rows, and Dask's summary names the page.
    import mdfkit.dask as mdfkit_dask

    clean = mdfkit.open(corpus_here / AW).table("SalesLT.Customer").to_arrow()
    file_id, page_id = map(int, page.split(":"))
    rows_on_page = int.from_bytes((corpus_here / AW).read_bytes()[page_id * 8192 + 22: page_id * 8192 + 24], "little")
    got = dask_table(str(path), "SalesLT.Customer", source_column=None, salvage=True)
    assert clean.num_rows - got.num_rows == rows_on_page
    reports = mdfkit_dask.skipped(dask_client)
    assert [(r["table"], s[0], s[1]) for r in reports for s in r["skipped"]] == [("SalesLT.Customer", file_id, page_id)]
    assert spark_table(spark, str(path), "SalesLT.Customer", "mdfkit_python", salvage="true").num_rows == got.num_rows


def test_a_damaged_page_fails_the_jvm_source_naming_split_page_and_table(corpus_here, spark, tmp_path):
    path, page = damaged_copy(corpus_here, tmp_path, "SalesLT.Customer")
    with pytest.raises(Exception) as caught:
        spark_table(spark, str(path), "SalesLT.Customer")
    message = str(caught.value)
    assert f"page {page}" in message and "SalesLT.Customer" in message and f"in {path}" in message, message[-2000:]
    assert "mdfkit: split " in message, message[-2000:]
    # With salvage the job finishes without that page's rows (those on the page, by its header).
    clean = mdfkit.open(corpus_here / AW).table("SalesLT.Customer").to_arrow()
    page_id = int(page.split(":")[1])
    rows_on_page = int.from_bytes((corpus_here / AW).read_bytes()[page_id * 8192 + 22: page_id * 8192 + 24], "little")
    got = spark_table(spark, str(path), "SalesLT.Customer", salvage="true")
    assert clean.num_rows - got.num_rows == rows_on_page


def test_splits_carry_the_timestamp_unit_to_workers_dask_and_spark(mdfkit_bin, dask_client, spark, tmp_path):
    demo = subprocess.run([mdfkit_bin, "demo", "--dir", str(tmp_path)], capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    shop = str(tmp_path / "shop.mdf")
    # Its datetime2(7) values reach past 2262: nanoseconds refuse them, microseconds hold them.
    t = mdfkit.open(shop).table("sales.EventLog")
    single = t.to_arrow(timestamps="us")
    splits = t.splits(target_bytes=TARGET, timestamps="us")
    assert len(splits) > 1 and all(s.timestamps == "us" for s in splits)
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        blobs = pool.map(_read_pickled, [pickle.dumps(s) for s in splits])
    assert digest(pa.concat_tables(pa.ipc.open_stream(b).read_all() for b in blobs)) == digest(single)
    with pytest.raises(mdfkit.Error):
        for s in t.splits(target_bytes=TARGET):
            list(mdfkit.iter_split(s))
    assert digest(dask_table(shop, "sales.EventLog", source_column=None, timestamps="us")) == digest(single)
    for source in SOURCES:
        got = spark_table(spark, shop, "sales.EventLog", source, timestamps="us")
        assert digest(got) == digest(portable(single)), source


def test_the_jvm_source_reads_every_demo_table_as_one_process(mdfkit_bin, spark, tmp_path):
    demo = subprocess.run([mdfkit_bin, "demo", "--dir", str(tmp_path)], capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    shop = str(tmp_path / "shop.mdf")
    tables = readable_tables(mdfkit.open(shop))
    assert len(tables) >= 3, [t.qualified_name for t in tables]
    for t in tables:
        got = spark_table(spark, shop, t.qualified_name, timestamps="us")
        assert digest(got) == digest(portable(t.to_arrow(timestamps="us"))), t.qualified_name


# A stand-in for the `mdfkit` tool (option `command`): one split, whose rows are the Arrow stream
# in the file named below, so that the JVM source's reading of each type from Arrow's buffers is
# checked against values chosen here; written where `read-split` writes (stdout, or the Unix
# socket of `--socket PATH`).
STAND_IN_TOOL = """#!{python}
import socket, sys
if sys.argv[1] == "splits":
    print("{{}}")
else:
    data = open({stream!r}, "rb").read()
    if "--schema-only" in sys.argv:
        import pyarrow as pa
        schema = pa.ipc.open_stream(data).schema
        sink = pa.BufferOutputStream()
        pa.ipc.new_stream(sink, schema).close()
        data = sink.getvalue().to_pybytes()
    if "--socket" in sys.argv:
        with socket.socket(socket.AF_UNIX) as out:
            out.connect(sys.argv[sys.argv.index("--socket") + 1])
            out.sendall(data)
    else:
        sys.stdout.buffer.write(data)
"""


def test_the_jvm_source_reads_every_type_from_arrow_buffers_exactly(spark, tmp_path):
    """Decimals at and past the 10^18 where Spark leaves longs (money's whole range: the 64-bit
    extremes), nulls in every column, several batches of different lengths (each batch's buffers
    taken anew), multi-byte and empty strings: Spark's rows equal the values written."""
    if not SPARK["jvm"]:
        loud_skip("the JVM data source is not loaded (scripts/spark-jar.sh builds its jar; MDFKIT_SPARK_JAR)")
    from datetime import date, datetime, timezone
    from decimal import Decimal

    money = [0, 1, -1, 10**18 - 1, -(10**18 - 1), 10**18, -(10**18), 2**63 - 1, -(2**63), None]
    rows = len(money)
    columns = {
        "money": pa.array([None if m is None else Decimal(m).scaleb(-4) for m in money], pa.decimal128(19, 4)),
        "qty": pa.array([Decimal(i * 1234567 - 5000000).scaleb(-2) if i % 3 else None for i in range(rows)],
                        pa.decimal128(9, 2)),
        "huge": pa.array([Decimal(10**30 + i).scaleb(-4) * (-1) ** i for i in range(rows)], pa.decimal128(38, 4)),
        "flag": pa.array([None if i % 4 == 3 else i % 2 == 0 for i in range(rows)], pa.bool_()),
        "small": pa.array([None if i == 5 else (-1) ** i * 32767 // (i + 1) for i in range(rows)], pa.int16()),
        "int": pa.array([None if i == 2 else -(2**31) + i for i in range(rows)], pa.int32()),
        "big": pa.array([None if i == 7 else 2**63 - 1 - i for i in range(rows)], pa.int64()),
        "real": pa.array([None if i == 1 else i / 3 for i in range(rows)], pa.float32()),
        "float": pa.array([None if i == 9 else -i / 7 for i in range(rows)], pa.float64()),
        "day": pa.array([None if i == 4 else date(1, 1, 1 + i) if i % 2 else date(9999, 12, 31) for i in range(rows)],
                        pa.date32()),
        "at": pa.array([None if i == 3 else datetime(1900 + i * 20, 1 + i, 2, 3, 4, 5, i) for i in range(rows)],
                       pa.timestamp("us")),
        "at_utc": pa.array([None if i == 6 else datetime(2000 + i, 6, 1, 12, 0, 0, 999999, timezone.utc)
                            for i in range(rows)], pa.timestamp("us", tz="UTC")),
        "text": pa.array([None if i == 8 else "" if i == 0 else "é€𝄞" * i for i in range(rows)], pa.string()),
        "bytes": pa.array([None if i == 0 else bytes(range(i * 3)) for i in range(rows)], pa.binary()),
    }
    # 40 rows in batches of 16, 16 and 8: bitmaps of several bytes (`huge` has no nulls: no bitmap).
    want = pa.concat_tables([pa.table(columns)] * 4).combine_chunks()
    stream = tmp_path / "edge.arrow"
    with pa.ipc.new_stream(str(stream), want.schema) as writer:
        for batch in want.to_batches(max_chunksize=16):
            writer.write_batch(batch)
    tool = tmp_path / "mdfkit"
    tool.write_text(STAND_IN_TOOL.format(python=sys.executable, stream=str(stream)))
    tool.chmod(0o755)
    got = (spark.read.format("mdfkit").option("table", "dbo.Edge").option("command", str(tool))
           .load(str(tmp_path / "edge.mdf")).collect())
    for name in want.column_names:
        expected = want.column(name).to_pylist()
        values = [row[name] for row in got]
        if name == "at_utc":
            # Spark hands timestamps to Python as naive local times.
            expected = [v if v is None else v.replace(tzinfo=None) for v in expected]
            values = [v if v is None else v.astimezone(timezone.utc).replace(tzinfo=None) for v in values]
        assert values == expected, name


# A stand-in `mdfkit` whose `read-split` ends without connecting to the task's socket, as the
# real one does when it cannot open the split's database: its exit status and stderr below.
QUITTING_TOOL = """#!{python}
import sys
if sys.argv[1] == "splits":
    print("{{}}")
elif "--schema-only" in sys.argv:
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    pa.ipc.new_stream(sink, pa.schema([("id", pa.int32())])).close()
    sys.stdout.buffer.write(sink.getvalue().to_pybytes())
else:
    sys.stderr.write({said!r})
    sys.exit({status})
"""


@pytest.mark.parametrize("status, said, expected", [
    (2, "mdfkit: /x/shop.mdf: page 1:9 is damaged (checksum)\n", "/x/shop.mdf: page 1:9 is damaged (checksum)"),
    (0, "", "the tool ended without writing its rows"),
])
def test_the_jvm_source_fails_naming_the_split_when_the_tool_ends_before_writing(spark, tmp_path, status, said,
                                                                                 expected):
    if not SPARK["jvm"]:
        loud_skip("the JVM data source is not loaded (scripts/spark-jar.sh builds its jar; MDFKIT_SPARK_JAR)")
    tool = tmp_path / "mdfkit"
    tool.write_text(QUITTING_TOOL.format(python=sys.executable, said=said, status=status))
    tool.chmod(0o755)
    with pytest.raises(Exception) as caught:
        spark.read.format("mdfkit").option("table", "dbo.T").option("command", str(tool)).load(
            str(tmp_path / "shop.mdf")).collect()
    message = str(caught.value)
    assert f"mdfkit: split 1 of 1 of dbo.T in {tmp_path / 'shop.mdf'}: {expected}" in message, message[:3000]


def test_delta_export_of_two_databases_reads_back_equal(corpus_here, tmp_path):
    deltalake = engine("deltalake")
    shutil.copyfile(corpus_here / AW, tmp_path / "second.mdf")
    sources = [corpus_here / AW, tmp_path / "second.mdf"]
    lake = tmp_path / "lake"
    for source in sources:
        results = mdfkit.export(source, lake, format="delta", source_column="source")
        assert all(r.error is None for r in results), [r.error for r in results if r.error]
    db = mdfkit.open(corpus_here / AW)
    for t in db.tables:
        delta = deltalake.DeltaTable(str(lake / t.qualified_name))
        assert delta.version() == 1, f"{t.qualified_name}: one commit per export"
        back = delta.to_pyarrow_table()
        single = portable(t.to_arrow())
        for source in sources:
            mine = back.filter(pc.equal(back.column("source"), str(source))).drop_columns(["source"])
            assert digest(mine) == digest(single), (t.qualified_name, source)
        assert back.schema.field(back.column_names[0]).metadata[b"mdfkit.sql_type"]
        check_statistics(delta, t.to_arrow(timestamps="us"), 2)
        # Each file's source bounds are its database's: a filter on one keeps one file (none
        # for an empty table: a file of no rows matches nothing).
        kept = delta.file_uris(file_pruning_predicate=[("source", "=", str(sources[1]))])
        assert len(kept) == (1 if single.num_rows else 0), t.qualified_name


def test_python_delta_export_to_an_object_prefix(corpus_here, bucket):
    deltalake = engine("deltalake")
    results = mdfkit.export(corpus_here / AW, "s3://corpus/lake", format="delta", tables=["SalesLT.Address"])
    assert [r.error for r in results] == [None]
    assert results[0].path == "s3://corpus/lake/SalesLT.Address"
    # versitygw keeps object `k` of bucket `corpus` as the file `corpus/k`.
    back = deltalake.DeltaTable(str(bucket / "lake" / "SalesLT.Address")).to_pyarrow_table()
    assert digest(back) == digest(portable(mdfkit.open(corpus_here / AW).table("SalesLT.Address").to_arrow()))


# Types whose Delta statistics carry bounds (crates/mdfkit/src/export/delta_stats.rs).
def has_bounds(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_floating(t))


def check_statistics(delta, single: pa.Table, files: int) -> None:
    """Each of the table's ``files`` data files (each one export of ``single``'s rows) has the
    null counts and bounds of ``single``, the single-process read, as ``deltalake`` parses them;
    a filter above every maximum keeps no file, one at a minimum keeps them all."""
    actions = pa.table(delta.get_add_actions(flatten=True))
    assert actions.column("num_records").to_pylist() == [single.num_rows] * files
    for field in single.schema:
        if pa.types.is_struct(field.type) or pa.types.is_boolean(field.type):
            continue
        column = single.column(field.name)
        assert actions.column(f"null_count.{field.name}").to_pylist() == [column.null_count] * files, field.name
        if not has_bounds(field.type) or column.null_count == len(column):
            continue
        low, high = (v.as_py() for v in pc.min_max(column).values())
        maxima = actions.column(f"max.{field.name}").to_pylist()
        if pa.types.is_string(field.type) and len(high) > 32:
            # A maximum cut to 32 characters sorts after the value (UTF-8 bytes).
            assert all(m.encode() > high.encode() and len(m) <= 32 for m in maxima), field.name
            high = maxima[0]
        if pa.types.is_string(field.type):
            low = low[:32]  # a minimum cut to 32 characters
        assert actions.column(f"min.{field.name}").to_pylist() == [low] * files, field.name
        assert maxima == [high] * files, field.name
        if pa.types.is_integer(field.type):
            assert delta.file_uris(file_pruning_predicate=[(field.name, ">", high)]) == [], field.name
            assert len(delta.file_uris(file_pruning_predicate=[(field.name, "=", low)])) == files, field.name


# Declared types whose `mdfkit cat` spelling is the Delta value's str() (binary: 0x and upper-case hex).
CAT_SPELLED = ("tinyint", "smallint", "int", "bigint", "decimal", "numeric", "money", "smallmoney", "char", "varchar",
               "nchar", "nvarchar", "binary", "varbinary")


def cat_columns(mdfkit_bin: str, source: Path, table: str) -> dict:
    """`mdfkit cat SOURCE TABLE --format csv`: each column's sorted spellings (NULL: empty)."""
    done = subprocess.run([mdfkit_bin, "cat", str(source), table, "--format", "csv"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    return {name: sorted(row[i] for row in rows[1:]) for i, name in enumerate(rows[0])}


def spelled_like_cat(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return "0x" + value.hex().upper()
    return str(value)


def test_cli_delta_export_appends_versions_read_back_as_cat_prints(corpus_here, mdfkit_bin, tmp_path):
    deltalake = engine("deltalake")
    demo = subprocess.run([mdfkit_bin, "demo", "--dir", str(tmp_path / "demo")], capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    for source in (tmp_path / "demo" / "shop.mdf", corpus_here / AW):
        lake = tmp_path / f"lake-{source.stem}"
        for _ in range(2):
            done = subprocess.run([mdfkit_bin, "export", str(source), "--all", "--format", "delta", "-o", str(lake)],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        db = mdfkit.open(source)
        compared = 0
        for t in readable_tables(db):
            delta = deltalake.DeltaTable(str(lake / t.qualified_name))
            assert delta.version() == 1, f"{t.qualified_name}: one version per export"
            first = deltalake.DeltaTable(str(lake / t.qualified_name), version=0).to_pyarrow_table()
            assert delta.to_pyarrow_table().num_rows == 2 * first.num_rows
            assert digest(first) == digest(portable(t.to_arrow(timestamps="us"))), (source, t.qualified_name)
            check_statistics(delta, t.to_arrow(timestamps="us"), 2)
            cat = cat_columns(mdfkit_bin, source, t.qualified_name)
            for field in first.schema:
                sql_type = (field.metadata or {}).get(b"mdfkit.sql_type", b"").decode().split("(")[0]
                if sql_type in CAT_SPELLED:
                    got = sorted(spelled_like_cat(v) for v in first.column(field.name).to_pylist())
                    assert got == cat[field.name], (source, t.qualified_name, field.name)
                    compared += 1
        assert compared > 10, f"{source}: too few columns compared with mdfkit cat"
    # Python's export appends to the CLI's tables: the same writer.
    results = mdfkit.export(tmp_path / "demo" / "shop.mdf", tmp_path / "lake-shop", format="delta")
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    orders = tmp_path / "lake-shop" / "dbo.Orders"
    assert deltalake.DeltaTable(str(orders)).version() == 2
    # After three appends, a checkpoint by deltalake and the commits before it cleaned up, an
    # append reads the protocol and schema from the checkpoint and commits the next version.
    rows = deltalake.DeltaTable(str(orders)).to_pyarrow_table().num_rows
    deltalake.DeltaTable(str(orders)).create_checkpoint()
    for version in range(2):
        (orders / "_delta_log" / f"{version:020}.json").unlink()
    results = mdfkit.export(tmp_path / "demo" / "shop.mdf", tmp_path / "lake-shop", format="delta", tables=["dbo.Orders"])
    assert [r.error for r in results] == [None]
    after = deltalake.DeltaTable(str(orders))
    assert after.version() == 3
    assert after.to_pyarrow_table().num_rows == rows + rows // 3


def test_engines_read_objects_by_ranged_gets_as_local_files(corpus_here, bucket, dask_client, spark):
    for name in (AW, SHAREPOINT):
        shutil.copyfile(corpus_here / name, bucket / Path(name).name)
        db = mdfkit.open(corpus_here / name)
        for t in readable_tables(db)[:4]:
            got = dask_table(f"s3://corpus/{Path(name).name}", t.qualified_name, source_column=None)
            assert digest(got) == digest(t.to_arrow()), (name, t.qualified_name)
    db = mdfkit.open(corpus_here / AW)
    for t in readable_tables(db)[:4]:
        for source in SOURCES:
            got = spark_table(spark, f"s3://corpus/{Path(AW).name}", t.qualified_name, source)
            assert digest(got) == digest(portable(t.to_arrow())), (t.qualified_name, source)
