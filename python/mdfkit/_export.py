"""Exporting tables to files or an object prefix: ``mdfkit.export`` and ``Database.export``. The
library's ``export_tables`` names the outputs (``SCHEMA.TABLE.EXT``) and runs the tables; this
module turns its per-table outcomes into ``ExportResult`` s and applies ``errors=``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Optional, Union

from ._types import ExportResult, PathLike, Paths

if TYPE_CHECKING:  # pragma: no cover
    from ._database import Database


def _output_path(out_dir: str, name: str) -> Union[Path, str]:
    """Where output ``name`` went: a path in a folder, or ``PREFIX/NAME`` for an object URL."""
    if "://" in out_dir:
        return out_dir.rstrip("/") + "/" + name
    return Path(out_dir) / name


def export(
    source: Union[Paths, Database],
    out_dir: PathLike,
    format: str = "parquet",
    tables: Optional[Iterable[str]] = None,
    errors: str = "raise",
    compression: str = "zstd",
    threads: Optional[int] = None,
    source_column: Optional[str] = None,
    timestamps: str = "ns",
) -> List[ExportResult]:
    """Exports tables to files in ``out_dir``, one per table: ``schema.name.parquet``.

    Args:
        source: the database's files (as for :func:`open`) or an open :class:`Database`.
        out_dir: the folder to write to (created if needed); with the object-store build
            (``mdfkit._native.object_stores``), an ``s3://bucket/prefix`` or ``az://`` prefix.
        format: ``"parquet"`` (zstd, exact types, SQL types in field metadata), ``"arrow"``
            (Arrow IPC stream, ``.arrows``), ``"csv"`` or ``"jsonl"`` (SQL Server's spellings), or
            ``"delta"``: each table appended to the Delta Lake table ``out_dir/schema.name`` in one
            commit (created by the first export; export many databases into one ``out_dir`` to
            gather them), with per-file statistics (bounds, null counts) that let readers skip
            files, written by mdfkit's own Delta writer as ``mdfkit export --format delta`` writes
            it (no package needed). Types Delta lacks are cast to the nearest it has: tinyint to
            smallint, uniqueidentifier and rowversion to binary, time to a string, timestamps to
            microseconds (``timestamps`` does not apply). ``out_dir`` may be an object URL
            (object-store build): credentials and endpoint from the environment
            (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``AZURE_STORAGE_ACCOUNT_NAME``, ...), the
            names the ``deltalake`` package reads too.
        tables: names of the tables to write; all user tables when ``None``.
        errors: ``"raise"``: write every table that can be written, then raise the first
            error (its ``results`` attribute lists what was done); ``"skip"``: return the failures
            in the results (``ExportResult.error``).
        compression: Parquet's: ``"zstd"`` (level 1), ``"zstd:LEVEL"`` (1-22), ``"snappy"`` or
            ``"lz4"`` (faster, larger files), ``"none"``.
        threads: decoding (and formatting) threads, all cores by default. With more than one,
            rows come in page allocation order; ``threads=1`` keeps clustered tables in key order.
        source_column: (delta) the name of a column naming each row's database (its first file).
        timestamps: (parquet, arrow) the unit of datetime2(7) and datetimeoffset(7): ``"ns"``
            (exact, years 1677 to 2262 only: a table with other values fails, naming this option)
            or ``"us"`` (every year 0001-9999; the 100 ns digit dropped).

    Returns:
        One :class:`ExportResult` per table.

    Example::

        >>> results = mdfkit.export("shop.mdf", "out/", format="parquet", tables=["dbo.Orders"])
        >>> results[0].rows, results[0].path.as_posix()
        (5000, 'out/dbo.Orders.parquet')
    """
    from ._database import Database  # imported here: the database module imports this one

    db = source if isinstance(source, Database) else Database(source)
    if errors not in ("raise", "skip"):
        raise ValueError("errors must be 'raise' or 'skip'")
    names = None if tables is None else list([tables] if isinstance(tables, str) else tables)
    target = os.fspath(out_dir)
    source = None
    if source_column is not None:
        if format != "delta":
            raise ValueError("source_column is for format='delta'")
        source = (source_column, db.paths[0])
    done = db._native.export_tables(target, format, names, compression, threads, timestamps, source)
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
