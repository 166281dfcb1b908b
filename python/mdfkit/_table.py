"""``Table``: one table's catalog facts, and its rows as Arrow data (streams through the Arrow C
stream interface, pyarrow tables, batches, pandas, polars) or a file (``Table.export``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from ._split import Split, plan_splits, stream_batches
from ._types import ExportResult, PathLike
from .errors import _stream_error

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars

    from ._database import Database


@dataclass(frozen=True, eq=False)
class Table:
    """A table of the database: its catalog facts, and its rows as Arrow data.

    ``schema_name`` is the SQL schema (``dbo``); :attr:`schema` is the Arrow schema of the rows.

    Example::

        >>> t = db.table("dbo.Orders")
        >>> t.rows, t.is_heap
        (5000, False)
        >>> t.to_arrow(columns=["OrderID"], limit=3).to_pylist()
        [{'OrderID': 100000}, {'OrderID': 100001}, {'OrderID': 100002}]
    """

    schema_name: str
    name: str
    rows: int
    """Row count as recorded in the catalog (``sys.partitions.rows``); counted on the pages
    for a table that a restore chain's log changed."""
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
    has_vardecimal: bool
    """Stored in the vardecimal format (``sp_tableoption 'vardecimal storage format'``): decimal
    and numeric values take only the bytes they need; ``mdfkit tables`` shows it too."""
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

    def arrow_schema(self, columns: Optional[Sequence[str]] = None, timestamps: str = "ns",
                     delta_types: bool = False) -> pa.Schema:
        """The Arrow schema of :meth:`to_arrow` with these ``columns`` and ``timestamps``; with
        ``delta_types``, the types ``export(format="delta")`` writes (those Delta Lake and Spark
        hold: tinyint as int16, time as a string, fixed-size binary as binary, microseconds)."""
        native = self._db._native.schema(self.qualified_name, _columns(columns), timestamps, delta_types)
        return _import_schema(native)

    @property
    def column_names(self) -> List[str]:
        return list(self.schema.names)

    @property
    def ddl(self) -> str:
        """The table's ``CREATE TABLE`` statement, with keys and indexes."""
        return self._db._native.ddl(self.qualified_name)

    def _stream(
        self, columns: Optional[Sequence[str]], limit: Optional[int], batch_size: int, timestamps: str = "ns"
    ) -> Any:
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        return self._db._native.scan(self.qualified_name, _columns(columns), limit, batch_size, timestamps)

    def splits(self, target_bytes: int = 256 << 20, columns: Optional[Sequence[str]] = None, timestamps: str = "ns",
               salvage: bool = False) -> List[Split]:
        """The table's scan cut into independent :class:`Split` s of about ``target_bytes`` of
        pages each, for :func:`mdfkit.read_split` on other processes or machines (picklable; the
        engines in :mod:`mdfkit.dask` and :mod:`mdfkit.spark` use them). Together they return every
        row once, in page allocation order. Workers open the database from the same paths (made
        absolute) or URLs. Each split carries ``timestamps`` (``"ns"`` or ``"us"``, as in
        :meth:`to_arrow`) and ``salvage``: a salvage split's reader skips damaged pages and
        records and reports them (:func:`mdfkit.iter_split`).

        Example::

            >>> splits = db.table("dbo.Orders").splits(target_bytes=64 << 20)
            >>> pa.concat_tables(mdfkit.read_split(s).read_all() for s in splits).num_rows
            5000
        """
        return plan_splits(self._db._native, self._db.paths, self.qualified_name, target_bytes, _columns(columns),
                           timestamps, salvage)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Arrow PyCapsule interface: a new stream of all the rows at each call, so
        ``pyarrow.table(t)``, ``polars.DataFrame(t)`` or DuckDB can read the table directly."""
        return self._stream(None, None, 65536).__arrow_c_stream__(requested_schema)

    def to_reader(
        self,
        columns: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        batch_size: int = 65536,
        timestamps: str = "ns",
    ) -> pa.RecordBatchReader:
        """The rows as a :class:`pyarrow.RecordBatchReader` (read once, bounded memory).

        Errors met while reading surface as pyarrow exceptions; :meth:`iter_batches` raises
        them as :class:`mdfkit.Error` instead.
        """
        return pa.RecordBatchReader._import_from_c_capsule(
            self._stream(columns, limit, batch_size, timestamps).__arrow_c_stream__()
        )

    def to_arrow(
        self, columns: Optional[Sequence[str]] = None, limit: Optional[int] = None, timestamps: str = "ns"
    ) -> pa.Table:
        """Reads the rows into a :class:`pyarrow.Table`.

        Args:
            columns: only these columns, in table order (all when ``None``).
            limit: at most this many rows.
            timestamps: the unit of datetime2(7) and datetimeoffset(7) values: ``"ns"`` (exact,
                but only the years 1677 to 2262: other values raise, naming this option) or
                ``"us"`` (every year 0001-9999, e.g. the 9999-12-31 sentinel; the seventh
                fractional digit, 100 ns, is dropped).

        Example::

            >>> db.table("dbo.Orders").to_arrow(columns=["OrderID", "Total"], limit=2)
            pyarrow.Table
            OrderID: int64
            Total: decimal128(12, 2)
            ----
            OrderID: [[100000,100001]]
            Total: [[...]]
        """
        stream = self._stream(columns, limit, 65536, timestamps)
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
        timestamps: str = "ns",
    ) -> Iterator[pa.RecordBatch]:
        """Yields the rows as :class:`pyarrow.RecordBatch` es of ``batch_size`` rows
        (``timestamps`` as in :meth:`to_arrow`).

        Memory stays bounded by a couple of batches whatever the table's size: the scan runs
        ahead by at most one batch and stops when the loop stops.

        Example::

            >>> total = 0
            >>> for batch in db.table("dbo.Orders").iter_batches(batch_size=1_000):
            ...     total += batch.num_rows
            >>> total
            5000
        """
        yield from stream_batches(self._stream(columns, limit, batch_size, timestamps))

    def to_pandas(
        self,
        columns: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        timestamps: str = "ns",
        **kwargs: Any,
    ) -> "pandas.DataFrame":
        """The rows as a :class:`pandas.DataFrame` (``pip install mdfkit[pandas]``);
        ``timestamps`` as in :meth:`to_arrow`, ``kwargs`` go to :meth:`pyarrow.Table.to_pandas`.

        time(7) columns become ``timedelta64[ns]`` since midnight: exact, where pandas'
        ``datetime.time`` would hold only microseconds (time(0) to time(6) stay ``datetime.time``).

        The Arrow data is not copied twice: each column becomes its own block (``split_blocks``,
        no consolidation into 2-D blocks; a numeric column without NULLs keeps its Arrow buffer)
        and is freed once converted (``self_destruct``), so the peak is about one copy of the
        rows. Pass ``split_blocks=False`` for pandas' consolidated layout.
        """
        _require("pandas", "pandas")
        kwargs.setdefault("split_blocks", True)
        kwargs.setdefault("self_destruct", True)
        return _times_as_durations(self.to_arrow(columns, limit, timestamps)).to_pandas(**kwargs)

    def to_polars(
        self, columns: Optional[Sequence[str]] = None, limit: Optional[int] = None, timestamps: str = "ns"
    ) -> "polars.DataFrame":
        """The rows as a :class:`polars.DataFrame` (``pip install mdfkit[polars]``); ``timestamps``
        as in :meth:`to_arrow`.

        Polars takes the Arrow batches as its chunks without copying them where its types allow
        (numbers, dates, times; text is converted to its string views): they are not joined into
        one chunk first (``rechunk=False``; call ``.rechunk()`` on the frame if you want that).
        """
        pl = _require("polars", "polars")
        return pl.from_arrow(self.to_arrow(columns, limit, timestamps), rechunk=False)

    def export(
        self,
        path: PathLike,
        format: str = "parquet",
        columns: Optional[Sequence[str]] = None,
        compression: str = "zstd",
        threads: Optional[int] = None,
        timestamps: str = "ns",
    ) -> ExportResult:
        """Writes the table to ``path`` as ``parquet``, ``arrow`` (IPC stream), ``csv`` or
        ``jsonl``, streaming (bounded memory, GIL released). ``compression`` is Parquet's:
        ``"zstd"``, ``"zstd:LEVEL"`` (1-22), ``"snappy"``, ``"lz4"`` or ``"none"``. ``threads``
        decode (and format) the rows, all cores by default; with more than one, rows come in page
        allocation order, so ``threads=1`` keeps a clustered table in key order. ``timestamps``
        (Parquet and Arrow) as in :meth:`to_arrow`: ``"us"`` writes the years ``"ns"`` refuses."""
        stats = self._db._native.export(
            self.qualified_name, format, os.fspath(path), _columns(columns), compression, threads, timestamps
        )
        return ExportResult(self.qualified_name, Path(path), stats["rows"], stats["bytes"], stats["seconds"])


def _columns(columns: Optional[Sequence[str]]) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def _times_as_durations(table: pa.Table) -> pa.Table:
    """time(7) columns (``time64[ns]``) as ``duration[ns]`` since midnight, which pandas holds
    exactly (its ``datetime.time`` stops at microseconds and refuses a 100 ns digit)."""
    for i, f in enumerate(table.schema):
        if f.type == pa.time64("ns"):
            durations = table.column(i).cast(pa.int64()).cast(pa.duration("ns"))
            table = table.set_column(i, f.with_type(pa.duration("ns")), durations)
    return table


def _import_schema(native: Any) -> pa.Schema:
    return pa.Schema._import_from_c_capsule(native.__arrow_c_schema__())


def _require(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed for this: pip install 'mdfkit[{extra}]'") from exc
