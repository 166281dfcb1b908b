"""Dask: a table of one or many SQL Server databases (files, backups, object URLs) as a
``dask.dataframe.DataFrame``, one partition per :class:`mdfkit.Split`, each read by a worker
straight from the files or the object store (on a cluster, so not a doctest)::

    import mdfkit.dask
    df = mdfkit.dask.read_table("s3://bk/prod.bak", "dbo.Orders", columns=["OrderID", "Freight"])
    df = mdfkit.dask.read_table("clients/*.mdf", "dbo.Orders")   # many databases at once
    df.groupby("source").size().compute()

Columns keep their Arrow types (``pandas.ArrowDtype``: exact decimals, timestamps); with
``source_column`` (default ``"source"``) each row names the database it came from (its first
file). The catalogs are opened, and the splits planned, as tasks on the cluster (one per
database), then the rows are read. Needs ``dask[dataframe]`` (imported when called).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import pyarrow as pa

from ._sources import Databases, databases, plan
from ._split import Split, _stream_schema, read_split_table


def splits(paths_or_urls: Databases, table: str, columns: Optional[Sequence[str]] = None,
           target_bytes: int = 256 << 20, timestamps: str = "ns", salvage: bool = False) -> List[Split]:
    """The splits of ``table`` in every database, planned in parallel on the current Dask
    scheduler (the cluster's workers open the catalogs)."""
    import dask

    cols = None if columns is None else [columns] if isinstance(columns, str) else list(columns)
    planned = dask.compute(*[dask.delayed(plan)(files, table, target_bytes, cols, timestamps, salvage)
                             for files in databases(paths_or_urls)])
    return [split for per_database in planned for split in per_database]


def _to_pandas(table: pa.Table) -> Any:
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _read(split: Split, source_column: Optional[str]) -> Any:
    data = read_split_table(split)
    if source_column is not None:
        data = data.append_column(source_column, pa.array([split.sources[0]] * data.num_rows, pa.string()))
    return _to_pandas(data)


def read_table(paths_or_urls: Databases, table: str, columns: Optional[Sequence[str]] = None,
               target_bytes: int = 256 << 20, source_column: Optional[str] = "source", timestamps: str = "ns",
               salvage: bool = False) -> Any:
    """``table`` of every database given as a lazy ``dask.dataframe.DataFrame``.

    Args:
        paths_or_urls: a database (a file, a backup, an object URL), a glob of local files, or a
            list of databases (a path or URL each, or a list of one database's files).
        table: ``schema.name``.
        columns: only these columns (all stored columns when ``None``).
        target_bytes: pages per partition, in bytes (about 256 MB of pages by default).
        source_column: name of a column naming each row's database (its first file); ``None``
            for none.
        timestamps: ``"ns"`` (exact, years 1677-2262) or ``"us"`` (every year) for datetime2(7)
            and datetimeoffset(7), as in :meth:`mdfkit.Table.to_arrow`.
        salvage: skip damaged pages and records instead of failing; each split that skipped
            some logs them (:func:`skipped` lists them after the computation).

    A damaged page fails the computation with :class:`mdfkit.CorruptPageError` naming the page
    and the table (unless ``salvage``).
    """
    import dask.dataframe as dd

    planned = splits(paths_or_urls, table, columns, target_bytes, timestamps, salvage)
    # The schema only: opening the first split's stream reads no page.
    meta = _stream_schema(planned[0]).empty_table()
    if source_column is not None:
        meta = meta.append_column(source_column, pa.array([], pa.string()))
    return dd.from_map(_read, planned, source_column=source_column, meta=_to_pandas(meta),
                       label=f"mdfkit-{table}", enforce_metadata=False)


def skipped(client: Any = None) -> List[dict]:
    """What the salvage reads of the cluster's workers skipped so far, one entry per split that
    skipped something: ``table``, ``database``, ``split`` (its index) and ``skipped``
    (``(file_id, page_id, slot, reason)`` each). ``client``: the current one by default."""
    if client is None:
        from distributed import get_client

        client = get_client()
    return [event for _, event in client.get_events("mdfkit-salvage")]
