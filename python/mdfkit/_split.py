"""Splits: a table scan cut into independent parts for other processes or machines (Spark and
Dask workers). :meth:`Table.splits` plans them on the driver; :func:`read_split` reads one
anywhere the split's files or URLs can be opened. A split is a small JSON document (the library's
``mdfkit::split::ScanSplit``: sources, table, partition, page runs, column plan) and pickles as
that text."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator, List, Optional, Sequence

import pyarrow as pa

from . import _native
from .errors import SalvageWarning, _stream_error


@dataclass(frozen=True)
class Split:
    """One independent part of a table scan. Together, a table's splits return every row once.

    Example::

        >>> splits = db.table("dbo.Orders").splits(target_bytes=64 << 20)
        >>> sum(mdfkit.read_split(s).read_all().num_rows for s in splits)
        5000
    """

    json: str
    """The split as the library writes it: what travels to a worker."""

    @cached_property
    def _fields(self) -> dict:
        return json.loads(self.json)

    @property
    def sources(self) -> List[str]:
        """The database's files or object URLs."""
        return list(self._fields["sources"])

    @property
    def table(self) -> str:
        return self._fields["table"]

    @property
    def database(self) -> str:
        return self._fields["database"]

    @property
    def columns(self) -> Optional[List[str]]:
        return self._fields["columns"]

    @property
    def timestamps(self) -> str:
        """The unit of datetime2(7) / datetimeoffset(7) timestamps: ``"ns"`` or ``"us"``."""
        return self._fields.get("timestamps", "ns")

    @property
    def salvage(self) -> bool:
        """Whether damaged pages and records are skipped (and reported) instead of failing."""
        return self._fields.get("salvage", False)

    @property
    def pages(self) -> int:
        """Pages the split names (data pages and the other pages of its extents)."""
        return sum(run[2] for run in self._fields["pages"])

    @property
    def index(self) -> int:
        return self._fields["index"]

    @property
    def count(self) -> int:
        """How many splits the plan made for the table."""
        return self._fields["count"]

    def __repr__(self) -> str:
        return (f"Split({self.table} of {self.database}, {self.index + 1} of {self.count}, "
                f"{self.pages} pages)")


def plan_splits(native_db: Any, sources: Sequence[str], table: str, target_bytes: int,
                columns: Optional[List[str]], timestamps: str = "ns", salvage: bool = False) -> List[Split]:
    """:meth:`Table.splits`'s work. Local paths are made absolute: a worker may run elsewhere."""
    if target_bytes < 1:
        raise ValueError("target_bytes must be at least 1")
    absolute = [s if "://" in s else os.path.abspath(s) for s in sources]
    return [Split(text) for text in native_db.splits(table, absolute, target_bytes, columns, timestamps, salvage)]


def _stream(split: Split, batch_size: int, delta_types: bool = False) -> Any:
    text = split.json if isinstance(split, Split) else split
    return _native.read_split(text, batch_size, delta_types)


def read_split(split: Split, batch_size: int = 65536) -> pa.RecordBatchReader:
    """The rows of one split as a :class:`pyarrow.RecordBatchReader`. The split's database is
    opened on first use in this process (its catalog, not its data) and kept for the next splits.
    Errors met while reading surface as pyarrow exceptions; :func:`iter_split` raises them as
    :class:`mdfkit.Error`."""
    return pa.RecordBatchReader._import_from_c_capsule(_stream(split, batch_size).__arrow_c_stream__())


def iter_split(split: Split, batch_size: int = 65536, delta_types: bool = False) -> Iterator[pa.RecordBatch]:
    """The batches of one split; a damaged page raises :class:`mdfkit.CorruptPageError` naming
    it (``page_id``, ``table``). A salvage split skips it instead and, once read, warns with a
    :class:`mdfkit.SalvageWarning` naming the split and what it skipped (on a Dask worker, also
    logged as a ``mdfkit-salvage`` event, which :func:`mdfkit.dask.skipped` gathers). With
    ``delta_types``, the batches come with the types Delta Lake and Spark hold (tinyint as
    int16, time as a string, ...: as ``export(format="delta")`` writes them)."""
    stream = _stream(split, batch_size, delta_types)
    yield from stream_batches(stream)
    skipped = stream.skipped()
    if skipped:
        _report_skipped(split if isinstance(split, Split) else Split(split), skipped)


def _report_skipped(split: Split, skipped: list) -> None:
    where = ", ".join(f"page {f}:{p}" + (f" slot {s}" if s is not None else "") + f" ({reason})"
                      for f, p, s, reason in skipped)
    message = (f"{split.table} of {split.database}, split {split.index + 1} of {split.count}: "
               f"{len(skipped)} damaged pages or records skipped: {where}")
    try:
        from distributed import get_worker

        get_worker().log_event("mdfkit-salvage", {"table": split.table, "database": split.database,
                                                  "split": split.index, "skipped": skipped})
    except (ImportError, ValueError):
        pass  # not on a Dask worker
    warnings.warn(SalvageWarning(message, skipped), stacklevel=3)


def stream_batches(stream: Any) -> Iterator[pa.RecordBatch]:
    """The batches of a native Arrow stream (a table's or a split's), an Arrow error raised as
    the mdfkit error behind it; the reader is closed when the caller stops early."""
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


def read_split_table(split: Split) -> pa.Table:
    """All the rows of one split as a :class:`pyarrow.Table` (errors as :class:`mdfkit.Error`)."""
    batches = list(iter_split(split))
    if batches:
        return pa.Table.from_batches(batches)
    return _stream_schema(split).empty_table()


def _stream_schema(split: Split) -> pa.Schema:
    return pa.Schema._import_from_c_capsule(_stream(split, 1).__arrow_c_schema__())
