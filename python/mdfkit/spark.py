"""Spark: a PySpark Python Data Source (Spark 4's ``pyspark.sql.datasource`` API) named
``mdfkit``, reading a table of one or many SQL Server databases (files, backups, object URLs),
one Spark partition per :class:`mdfkit.Split`, batches handed to Spark as Arrow (on a cluster,
so not a doctest)::

    import mdfkit.spark
    mdfkit.spark.register(spark)
    df = spark.read.format("mdfkit").option("table", "dbo.Orders").load("s3://bk/prod.bak")
    spark.read.format("mdfkit").option("table", "dbo.Orders").load("/data/clients/*.mdf")
    mdfkit.spark.tables(spark, "s3://bk/prod.bak").show()     # the tables of a database

Options: ``table`` (required), ``columns`` (comma-separated: only these are read; a schema given
with ``.schema(...)`` naming some of the columns does the same), ``target_bytes`` (pages per
partition, default 256 MB), ``source_column`` (a column naming each row's database; none by
default), ``timestamps`` (``us`` to read datetime2(7) of every year; ``ns`` by default: only
1677-2262), ``salvage`` (``true``: skip damaged pages and records; each task that skipped some
warns, naming them, in its executor's log). ``load`` takes a path, a URL, a glob of local files, or several databases separated by
commas; the splits are planned on the driver (Dask plans them on its workers). Spark 4's Python data
sources cannot be told which columns a query uses, hence
``columns``. Workers need only ``pip install mdfkit`` (with object-store support for URLs).
Types: Spark's from the Arrow schema (decimals exact, ``datetime`` as ``timestamp_ntz``), cast
as ``export(format="delta")`` casts them (``tinyint`` as ``smallint``, ``time`` as a string,
...; the casts are mdfkit's, done while reading).

Two implementations answer to ``format("mdfkit")``. With the JVM data source's jar on the
session's classpath (``scripts/spark-jar.sh`` builds it; ``.config("spark.jars", JAR)``), the
JVM reads each split from ``mdfkit read-split`` as Arrow vectors it hands to Spark unconverted
(1.6-2.2x the rows/s of the Python data source on the forged tables), plans through
``mdfkit splits``, and prunes the columns a query does not use by itself; the executors need
the ``mdfkit`` tool (``register(spark, command=PATH)``, ``spark.mdfkit.command`` or
``MDFKIT_BIN``; ``mdfkit`` on the PATH by default). Without the jar, :func:`register` registers
the Python data source under that name. The Python one is also always registered as
``mdfkit_python``.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional

import pyarrow as pa

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError as exc:  # pragma: no cover
    raise ImportError("mdfkit.spark needs PySpark 4 (pip install 'pyspark>=4')") from exc

from ._sources import databases, plan
from ._split import Split, iter_split


def _option_list(text: Optional[str]) -> Optional[List[str]]:
    if text is None or not text.strip():
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


class SplitPartition(InputPartition):
    """One Spark partition: a split's JSON."""

    def __init__(self, split: str) -> None:
        super().__init__(split)


class MdfkitDataSource(DataSource):
    """``spark.read.format("mdfkit")``; see the module documentation."""

    @classmethod
    def name(cls) -> str:
        return "mdfkit"

    def _paths(self) -> List[List[str]]:
        path = self.options.get("path") or self.options.get("paths")
        if not path:
            raise ValueError("mdfkit: give the database with .load(PATH) (a file, a backup, a URL, a glob)")
        return databases(_option_list(path) or [])

    def _table(self) -> str:
        table = self.options.get("table")
        if not table:
            raise ValueError("mdfkit: give the table with .option('table', 'schema.name'); "
                             "mdfkit.spark.tables(spark, PATH) lists them")
        return table

    def _splits(self, columns: Optional[List[str]]) -> List[Split]:
        target = int(self.options.get("target_bytes", 256 << 20))
        timestamps = self.options.get("timestamps", "ns")
        salvage = str(self.options.get("salvage", "false")).lower() in ("true", "1", "yes")
        return [s for files in self._paths() for s in plan(files, self._table(), target, columns, timestamps, salvage)]

    def _arrow_schema(self, delta_types: bool = False) -> pa.Schema:
        from ._database import Database

        with Database(self._paths()[0]) as db:
            schema = db.table(self._table()).arrow_schema(_option_list(self.options.get("columns")),
                                                          self.options.get("timestamps", "ns"), delta_types)
        if self.options.get("source_column"):
            schema = schema.append(pa.field(self.options["source_column"], pa.string()))
        return schema

    def schema(self) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self._arrow_schema(delta_types=True), prefer_timestamp_ntz=True)

    def reader(self, schema: Any) -> "MdfkitReader":
        columns = _option_list(self.options.get("columns"))
        source_column = self.options.get("source_column")
        if columns is None:
            # A schema the user gave naming only some columns is a column plan.
            full = [f.name for f in self._arrow_schema()]
            asked = [n for n in schema.fieldNames() if n != source_column]
            if asked != [n for n in full if n != source_column]:
                columns = asked
        return MdfkitReader(self._splits(columns), source_column)


class MdfkitReader(DataSourceReader):
    def __init__(self, splits: List[Split], source_column: Optional[str]) -> None:
        self.splits = [s.json for s in splits]
        self.source_column = source_column

    def partitions(self) -> List[SplitPartition]:
        return [SplitPartition(s) for s in self.splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = Split(partition.value)
        for batch in iter_split(split, delta_types=True):
            if self.source_column:
                source = pa.array([split.sources[0]] * batch.num_rows, pa.string())
                batch = batch.append_column(pa.field(self.source_column, pa.string()), source)
            yield batch


class PythonDataSource(MdfkitDataSource):
    """The Python data source under a name of its own, whether or not the JVM one is loaded."""

    @classmethod
    def name(cls) -> str:
        return "mdfkit_python"


JVM_SOURCE = "io.mdfkit.spark.MdfkitSource"


def jvm_source_loaded(spark: Any) -> bool:
    """Whether the JVM data source's jar is on ``spark``'s classpath (never under Spark Connect)."""
    try:
        jvm = spark.sparkContext._jvm
        jvm.java.lang.Class.forName(JVM_SOURCE, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False


def register(spark: Any, command: Optional[str] = None) -> bool:
    """Makes ``format("mdfkit")`` read with the JVM data source when its jar is loaded (with
    ``command``, the ``mdfkit`` tool it runs, when given), else with the Python one; the Python
    one is also ``format("mdfkit_python")``. Returns whether the JVM one answers."""
    spark.dataSource.register(PythonDataSource)
    if jvm_source_loaded(spark):
        if command:
            spark.conf.set("spark.mdfkit.command", command)
        return True
    spark.dataSource.register(MdfkitDataSource)
    return False


def tables(spark: Any, path: str, system: bool = False) -> Any:
    """The tables of the database at ``path`` as a Spark DataFrame: schema, name, rows, pages,
    heap or not, compression (read on the driver)."""
    from ._database import Database

    with Database(databases(path)[0]) as db:
        rows = [(t.schema_name, t.name, t.rows, t.pages, t.is_heap, ",".join(t.compression), t.has_lob)
                for t in (db.all_tables() if system else db.tables)]
    return spark.createDataFrame(
        rows, "schema string, name string, rows long, pages long, is_heap boolean, compression string, has_lob boolean")
