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


def export_database(
    db: "Database",
    out_dir: PathLike,
    format: str,
    tables: Optional[Iterable[str]],
    errors: str,
    compression: str,
    threads: Optional[int],
) -> List[ExportResult]:
    """:meth:`Database.export`'s work (see :func:`export`)."""
    if errors not in ("raise", "skip"):
        raise ValueError("errors must be 'raise' or 'skip'")
    names = None if tables is None else list([tables] if isinstance(tables, str) else tables)
    target = os.fspath(out_dir)
    done = db._native.export_tables(target, format, names, compression, threads)
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
    from ._database import Database  # imported here: the database module imports this one

    db = source if isinstance(source, Database) else Database(source)
    return db.export(out_dir, format, tables, errors, compression, threads)
