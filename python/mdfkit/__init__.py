"""Read Microsoft SQL Server data files (.mdf/.ndf) and backups (.bak) without SQL Server.

Tables come out as Arrow data (pyarrow, pandas, polars, DuckDB) straight from the bytes on disk::

    >>> import mdfkit
    >>> db = mdfkit.open("shop.mdf")                 # or ["a.mdf", "b.ndf"], or "backup.bak"
    >>> db.info.product, db.info.collation
    ('SQL Server 2012', 'SQL_Latin1_General_CP1_CI_AS')
    >>> [t.qualified_name for t in db.tables]
    ['dbo.Customers', 'dbo.Orders']
    >>> t = db.table("dbo.Orders")
    >>> t.schema.field("Freight").metadata            # the declared SQL type of each column
    {b'mdfkit.sql_type': b'money'}
    >>> t.to_arrow(columns=["OrderID", "Freight"], limit=10)   # a pyarrow.Table
    >>> df = t.to_pandas()                            # needs mdfkit[pandas]
    >>> for batch in t.iter_batches(batch_size=65536): ...  # bounded memory
    >>> db.sys("sys.columns").to_pandas()            # any catalog view, as a pyarrow.Table
    >>> con = db.duckdb()                             # needs mdfkit[duckdb]
    >>> con.sql("select count(*) from dbo.Orders").fetchall()
    >>> mdfkit.export("shop.mdf", "out/", format="parquet")

Rows travel through the Arrow C stream interface: the Rust reader builds the Arrow buffers and
hands them over without copies or per-value Python objects, and long scans run with the GIL
released. Errors are raised as subclasses of :class:`mdfkit.Error`.
"""

from __future__ import annotations

import datetime as _datetime
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _native

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pandas
    import polars

__version__: str = _native.__version__

__all__ = [
    "open",
    "export",
    "Database",
    "Table",
    "DatabaseInfo",
    "FileInfo",
    "ExportResult",
    "Error",
    "NotADatabaseError",
    "CorruptPageError",
    "UnsupportedFeatureError",
    "MissingFileError",
    "NotFoundError",
    "IoError",
]

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]


# ----------------------------------------------------------------------------------------------
# Errors


class Error(Exception):
    """Base class of every mdfkit error.

    The message is one line naming the file, table, page and slot involved, e.g.
    ``shop.mdf: dbo.Orders: page 1:153 slot 4: record is 12 bytes, its header needs at least 4``.
    The pieces are also attributes (``None`` when unknown).

    Attributes:
        kind: the library's error kind (``"NotADatabase"``, ``"Corrupt"``, ``"Unsupported"``,
            ``"MissingFile"``, ``"NotFound"``, ``"Io"``).
        message: the message without its context.
        file: the file involved.
        file_id: the file id of the page involved (``1`` for the .mdf).
        page_id: the page number within that file.
        slot: the slot of the record on that page.
        table: the table (or catalog object) being read, ``schema.name``.
        column: the column, when the problem is one column's.
        feature: for :class:`UnsupportedFeatureError`, what is not supported.
    """

    kind: Optional[str] = None
    message: Optional[str] = None
    file: Optional[str] = None
    file_id: Optional[int] = None
    page_id: Optional[int] = None
    slot: Optional[int] = None
    table: Optional[str] = None
    column: Optional[str] = None
    feature: Optional[str] = None


class NotADatabaseError(Error):
    """The input is not a SQL Server data file or backup (a log file, random bytes, files of two
    different databases, ...)."""


class CorruptPageError(Error):
    """A structure in the file is damaged: ``file_id`` and ``page_id`` say where
    (``DBCC PAGE`` style ``file_id:page_id``)."""


class UnsupportedFeatureError(Error):
    """The data is valid but uses something mdfkit does not decode yet: ``table`` names the table
    and ``feature`` says what, e.g. ``values of type xml are not decoded yet``."""


class MissingFileError(Error):
    """A file the database needs was not given (e.g. the primary .mdf)."""


class NotFoundError(Error, LookupError):
    """No table, column or view by that name."""


class IoError(Error, OSError):
    """Reading or writing a file failed at the operating-system level."""


def _stream_error(stream: Any, exc: BaseException) -> BaseException:
    """The mdfkit exception behind an Arrow error raised while reading ``stream``."""
    error = stream.take_error()
    return error if error is not None else exc


# ----------------------------------------------------------------------------------------------
# Descriptions


def _parse_datetime(text: Optional[str]) -> Optional[_datetime.datetime]:
    if not text:
        return None
    try:
        return _datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        return None


@dataclass(frozen=True)
class FileInfo:
    """One file of the database as its catalog lists it (``sys.database_files``)."""

    file_id: int
    name: str
    physical_name: str
    type: str
    size_pages: Optional[int]
    max_size_pages: Optional[int]
    growth: Optional[int]
    is_percent_growth: bool
    location: Optional[str]
    """Where it was read from; ``None`` for a file that was not given (or a log file)."""


@dataclass(frozen=True)
class DatabaseInfo:
    """The database's description of itself (what ``mdfkit info`` prints)."""

    name: str
    version: int
    """On-disk format version (``dbi_version``), e.g. 706."""
    product: str
    """``SQL Server 2012`` etc. for ``version``."""
    create_version: int
    create_product: str
    compatibility_level: int
    collation: str
    page_verify: str
    recovery_model: str
    created: Optional[_datetime.datetime]
    pages_in_files: int
    pages_allocated: int
    pages_used: int
    user_tables: int
    files: Tuple[FileInfo, ...]

    @property
    def missing_files(self) -> Tuple[FileInfo, ...]:
        """Data files the catalog lists that were not given."""
        return tuple(f for f in self.files if f.type == "ROWS" and f.location is None)


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export` did for one table."""

    table: str
    path: Union[Path, str]
    """Where the table went: a path, or a ``PREFIX/NAME`` string for an object URL."""
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    error: Optional[Error] = None
    """Why the table was not written (``None`` when it was)."""


# ----------------------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True, eq=False)
class Table:
    """A table of the database: its catalog facts, and its rows as Arrow data.

    ``schema_name`` is the SQL schema (``dbo``); :attr:`schema` is the Arrow schema of the rows.

    Example::

        >>> t = db.table("dbo.Orders")
        >>> t.rows, t.pages
        (830, 12)
        >>> t.to_arrow(columns=["OrderID", "Freight"], limit=5).to_pylist()
    """

    schema_name: str
    name: str
    rows: int
    """Row count as recorded in the catalog (``sys.partitions.rows``)."""
    pages: int
    """Used pages."""
    total_pages: int
    object_id: int
    type: str
    """``U`` user table, ``S`` system base table, ``IT`` internal table."""
    is_heap: bool
    partitions: int
    compression: Tuple[str, ...]
    has_lob: bool
    has_row_overflow: bool
    _db: "Database" = field(repr=False)

    @property
    def qualified_name(self) -> str:
        """``schema.name``."""
        return f"{self.schema_name}.{self.name}"

    @cached_property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows. Each field's metadata holds the declared SQL type
        (``mdfkit.sql_type``, e.g. ``b"decimal(19,4)"``)."""
        return self.arrow_schema()

    def arrow_schema(self, columns: Optional[Sequence[str]] = None) -> pa.Schema:
        """The Arrow schema of :meth:`to_arrow` with these ``columns``."""
        native = self._db._native.schema(self.qualified_name, _columns(columns))
        return _import_schema(native)

    @property
    def column_names(self) -> List[str]:
        return list(self.schema.names)

    @property
    def ddl(self) -> str:
        """The table's ``CREATE TABLE`` statement, with keys and indexes."""
        return self._db._native.ddl(self.qualified_name)

    def _stream(self, columns: Optional[Sequence[str]], limit: Optional[int], batch_size: int) -> Any:
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        return self._db._native.scan(self.qualified_name, _columns(columns), limit, batch_size)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Arrow PyCapsule interface: a new stream of all the rows at each call, so
        ``pyarrow.table(t)``, ``polars.DataFrame(t)`` or DuckDB can read the table directly."""
        return self._stream(None, None, 65536).__arrow_c_stream__(requested_schema)

    def to_reader(
        self,
        columns: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        batch_size: int = 65536,
    ) -> pa.RecordBatchReader:
        """The rows as a :class:`pyarrow.RecordBatchReader` (read once, bounded memory).

        Errors met while reading surface as pyarrow exceptions; :meth:`iter_batches` raises
        them as :class:`mdfkit.Error` instead.
        """
        return pa.RecordBatchReader._import_from_c_capsule(
            self._stream(columns, limit, batch_size).__arrow_c_stream__()
        )

    def to_arrow(self, columns: Optional[Sequence[str]] = None, limit: Optional[int] = None) -> pa.Table:
        """Reads the rows into a :class:`pyarrow.Table`.

        Args:
            columns: only these columns, in table order (all when ``None``).
            limit: at most this many rows.

        Example::

            >>> db.table("dbo.titles").to_arrow(columns=["title", "price"], limit=2)
            pyarrow.Table
            title: string
            price: decimal128(19, 4)
        """
        stream = self._stream(columns, limit, 65536)
        reader = pa.RecordBatchReader._import_from_c_capsule(stream.__arrow_c_stream__())
        try:
            return reader.read_all()
        except pa.ArrowException as exc:
            raise _stream_error(stream, exc) from None

    def iter_batches(
        self,
        batch_size: int = 65536,
        columns: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
    ) -> Iterator[pa.RecordBatch]:
        """Yields the rows as :class:`pyarrow.RecordBatch` es of ``batch_size`` rows.

        Memory stays bounded by a couple of batches whatever the table's size: the scan runs
        ahead by at most one batch and stops when the loop stops.

        Example::

            >>> total = 0
            >>> for batch in db.table("dbo.Orders").iter_batches(batch_size=10_000):
            ...     total += batch.num_rows
        """
        stream = self._stream(columns, limit, batch_size)
        reader = pa.RecordBatchReader._import_from_c_capsule(stream.__arrow_c_stream__())
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowException as exc:
                    raise _stream_error(stream, exc) from None
                yield batch
        finally:
            reader.close()

    def to_pandas(
        self, columns: Optional[Sequence[str]] = None, limit: Optional[int] = None, **kwargs: Any
    ) -> "pandas.DataFrame":
        """The rows as a :class:`pandas.DataFrame` (``pip install mdfkit[pandas]``);
        ``kwargs`` go to :meth:`pyarrow.Table.to_pandas`."""
        _require("pandas", "pandas")
        return self.to_arrow(columns, limit).to_pandas(**kwargs)

    def to_polars(self, columns: Optional[Sequence[str]] = None, limit: Optional[int] = None) -> "polars.DataFrame":
        """The rows as a :class:`polars.DataFrame` (``pip install mdfkit[polars]``)."""
        pl = _require("polars", "polars")
        return pl.from_arrow(self.to_arrow(columns, limit))

    def export(
        self,
        path: PathLike,
        format: str = "parquet",
        columns: Optional[Sequence[str]] = None,
        compression: str = "zstd",
        threads: Optional[int] = None,
    ) -> ExportResult:
        """Writes the table to ``path`` as ``parquet``, ``arrow`` (IPC stream), ``csv`` or
        ``jsonl``, streaming (bounded memory, GIL released). ``compression`` is Parquet's:
        ``"zstd"``, ``"zstd:LEVEL"`` (1-22), ``"snappy"``, ``"lz4"`` or ``"none"``. ``threads``
        decode (and format) the rows, all cores by default; with more than one, rows come in page
        allocation order, so ``threads=1`` keeps a clustered table in key order."""
        stats = self._db._native.export(
            self.qualified_name, format, os.fspath(path), _columns(columns), compression, threads
        )
        return ExportResult(self.qualified_name, Path(path), stats["rows"], stats["bytes"], stats["seconds"])


def _columns(columns: Optional[Sequence[str]]) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def _import_schema(native: Any) -> pa.Schema:
    return pa.Schema._import_from_c_capsule(native.__arrow_c_schema__())


def _require(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed for this: pip install 'mdfkit[{extra}]'") from exc


# ----------------------------------------------------------------------------------------------
# Databases


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(paths)]
    out = [os.fsdecode(p) for p in paths]
    if not out:
        raise ValueError("give at least one file")
    return out


class Database:
    """An open database: its data files (``.mdf`` + ``.ndf``, any order) or a backup (``.bak``).

    Use :func:`mdfkit.open` to get one. Opening reads only the boot page, the file headers and
    the system tables; rows are read when asked for.

    Example::

        >>> db = mdfkit.open("shop.mdf")
        >>> db.info.product
        'SQL Server 2012'
        >>> db.table("Orders").to_arrow().num_rows
        830
    """

    def __init__(self, paths: Paths) -> None:
        self.paths: Tuple[str, ...] = tuple(_paths(paths))
        self._native = _native.NativeDatabase(list(self.paths))

    def __repr__(self) -> str:
        return f"<mdfkit.Database {', '.join(self.paths)}>"

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Releases the files (streams still being read keep them open until they end)."""
        self.__dict__.pop("_native", None)

    def __getattr__(self, name: str) -> Any:
        if name == "_native":
            raise ValueError("this mdfkit.Database was closed")
        raise AttributeError(name)

    @property
    def name(self) -> str:
        return self.info.name

    @cached_property
    def info(self) -> DatabaseInfo:
        """The database's description: name, versions, collation, options, files, page counts."""
        d = dict(self._native.info())
        files = tuple(
            FileInfo(
                file_id=f.get("file_id"),
                name=f.get("name"),
                physical_name=f.get("physical_name"),
                type=f.get("type_desc"),
                size_pages=f.get("size"),
                max_size_pages=f.get("max_size"),
                growth=f.get("growth"),
                is_percent_growth=bool(f.get("is_percent_growth")),
                location=f.get("location"),
            )
            for f in d.pop("files")
        )
        d["created"] = _parse_datetime(d.get("created"))
        return DatabaseInfo(files=files, **d)

    def _table(self, d: dict) -> Table:
        return Table(
            schema_name=d["schema"],
            name=d["name"],
            rows=d["rows"],
            pages=d["used_pages"],
            total_pages=d["total_pages"],
            object_id=d["object_id"],
            type=d["type"],
            is_heap=d["is_heap"],
            partitions=d["partitions"],
            compression=tuple(d["compression"]),
            has_lob=d["has_lob"],
            has_row_overflow=d["has_row_overflow"],
            _db=self,
        )

    @property
    def tables(self) -> List[Table]:
        """The user tables, sorted by schema and name."""
        return [self._table(d) for d in self._native.tables(False)]

    def all_tables(self) -> List[Table]:
        """User tables and the system base tables (``sys.sysschobjs``, ...)."""
        return [self._table(d) for d in self._native.tables(True)]

    def table(self, name: str) -> Table:
        """The table ``schema.name`` or ``name`` (case-insensitive; ``dbo`` preferred).

        Raises:
            NotFoundError: no such table.

        Example::

            >>> db.table("dbo.Orders").rows
            830
        """
        schema, table = self._native.resolve(name)
        for t in self.all_tables():
            if t.schema_name == schema and t.name == table:
                return t
        raise NotFoundError(f"no table named {name}")

    def __getitem__(self, name: str) -> Table:
        return self.table(name)

    def sys(self, view: str) -> pa.Table:
        """A catalog view (``sys.columns``, ``sys.indexes``, ...) or system base table
        (``sys.sysschobjs``) as a :class:`pyarrow.Table`. Integer columns are int64, everything
        else is SQL Server's spelling of the value.

        Example::

            >>> db.sys("sys.columns").to_pandas().head()
        """
        stream = self._native.view(view)
        return pa.RecordBatchReader._import_from_c_capsule(stream.__arrow_c_stream__()).read_all()

    def duckdb(self, connection: "Optional[duckdb.DuckDBPyConnection]" = None) -> "duckdb.DuckDBPyConnection":
        """A DuckDB connection where every user table is a view (``pip install mdfkit[duckdb]``).

        Views are named like the tables: ``dbo.Orders`` (a DuckDB schema per SQL schema), and
        also by the bare name (``Orders``) when no other schema has a table by that name. Each
        query reads the table afresh from the files through the Arrow C stream interface;
        nothing is loaded up front.

        Example::

            >>> con = db.duckdb()
            >>> con.sql("select ShipCountry, count(*) from Orders group by 1").df()
        """
        duckdb = _require("duckdb", "duckdb")
        con = connection if connection is not None else duckdb.connect()
        tables = self.tables
        counts: dict = {}
        for t in tables:
            counts[t.name.lower()] = counts.get(t.name.lower(), 0) + 1
        schemas = set()
        for t in tables:
            source = f"__mdfkit_{t.object_id}"
            con.register(source, t)
            if t.schema_name.lower() not in schemas and t.schema_name.lower() != "main":
                con.execute(f"create schema if not exists {_quote(t.schema_name)}")
                schemas.add(t.schema_name.lower())
            con.execute(f"create or replace view {_quote(t.schema_name)}.{_quote(t.name)} as select * from {source}")
            if counts[t.name.lower()] == 1 and t.schema_name.lower() != "main":
                con.execute(f"create or replace view main.{_quote(t.name)} as select * from {source}")
        return con

    def export(
        self,
        out_dir: PathLike,
        format: str = "parquet",
        tables: Optional[Iterable[str]] = None,
        errors: str = "raise",
        compression: str = "zstd",
        threads: Optional[int] = None,
    ) -> List[ExportResult]:
        """Writes tables to ``out_dir`` as ``schema.name.parquet`` (or ``.arrows``, ``.csv``,
        ``.jsonl``). See :func:`mdfkit.export`."""
        if errors not in ("raise", "skip"):
            raise ValueError("errors must be 'raise' or 'skip'")
        names = None if tables is None else list([tables] if isinstance(tables, str) else tables)
        target = os.fspath(out_dir)
        done = self._native.export_tables(target, format, names, compression, threads)
        results = [
            ExportResult(d["table"], _output_path(target, d["name"]), d.get("rows", 0), d.get("bytes", 0),
                         d.get("seconds", 0.0), d["error"])
            for d in done
        ]
        failed = [r for r in results if r.error is not None]
        if failed and errors == "raise":
            error = failed[0].error
            error.results = results  # type: ignore[union-attr]
            raise error  # type: ignore[misc]
        return results


def _output_path(out_dir: str, name: str) -> Union[Path, str]:
    """Where output ``name`` went: a path in a folder, or ``PREFIX/NAME`` for an object URL."""
    if "://" in out_dir:
        return out_dir.rstrip("/") + "/" + name
    return Path(out_dir) / name


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open(paths: Paths) -> Database:  # noqa: A001 - mirrors the builtin on purpose
    """Opens a SQL Server database from its files, without SQL Server.

    Args:
        paths: the ``.mdf`` (one path), the ``.mdf`` and its ``.ndf`` files (a list, any order:
            files are matched by the ids in their own headers), or a backup ``.bak`` (or the
            stripes of one backup set).

    Returns:
        A :class:`Database`.

    Raises:
        NotADatabaseError: a file is not a data file or backup (or belongs to another database).
        MissingFileError: the primary ``.mdf`` was not given.
        CorruptPageError: a page the catalog needs is damaged.
        IoError: a file cannot be read.

    Example::

        >>> import mdfkit
        >>> db = mdfkit.open("AdventureWorksLT2012_Data.mdf")
        >>> db.info.product
        'SQL Server 2012'
        >>> [(t.qualified_name, t.rows) for t in db.tables][:2]
        [('SalesLT.Address', 450), ('SalesLT.Customer', 847)]
        >>> db.table("SalesLT.Product").to_pandas().head()
        >>> mdfkit.open(["data.mdf", "data2.ndf"])
        >>> mdfkit.open("backup.bak")
    """
    return Database(paths)


def export(
    source: Union[Paths, Database],
    out_dir: PathLike,
    format: str = "parquet",
    tables: Optional[Iterable[str]] = None,
    errors: str = "raise",
    compression: str = "zstd",
    threads: Optional[int] = None,
) -> List[ExportResult]:
    """Exports tables to files in ``out_dir``, one per table: ``schema.name.parquet``.

    Args:
        source: the database's files (as for :func:`open`) or an open :class:`Database`.
        out_dir: the folder to write to (created if needed); with the object-store build
            (``mdfkit._native.object_stores``), an ``s3://bucket/prefix`` or ``az://`` prefix.
        format: ``"parquet"`` (zstd, exact types, SQL types in field metadata), ``"arrow"``
            (Arrow IPC stream, ``.arrows``), ``"csv"`` or ``"jsonl"`` (SQL Server's spellings).
        tables: names of the tables to write; all user tables when ``None``.
        errors: ``"raise"``: write every table that can be written, then raise the first
            error (its ``results`` attribute lists what was done); ``"skip"``: return the failures
            in the results (``ExportResult.error``).
        compression: Parquet's: ``"zstd"`` (level 1), ``"zstd:LEVEL"`` (1-22), ``"snappy"`` or
            ``"lz4"`` (faster, larger files), ``"none"``.
        threads: decoding (and formatting) threads, all cores by default. With more than one,
            rows come in page allocation order; ``threads=1`` keeps clustered tables in key order.

    Returns:
        One :class:`ExportResult` per table.

    Example::

        >>> results = mdfkit.export("shop.mdf", "out/", format="parquet", tables=["dbo.Orders"])
        >>> results[0].rows, results[0].path
        (830, PosixPath('out/dbo.Orders.parquet'))
    """
    db = source if isinstance(source, Database) else Database(source)
    return db.export(out_dir, format, tables, errors, compression, threads)
