"""Exporting tables to files or an object prefix: ``mdfkit.export`` and ``Database.export``. The
library's ``export_tables`` names the outputs (``SCHEMA.TABLE.EXT``) and runs the tables; this
module turns its per-table outcomes into ``ExportResult`` s and applies ``errors=``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Union

import pyarrow as pa

from ._portable import portable_batch, portable_schema
from ._types import ExportResult, PathLike, Paths

if TYPE_CHECKING:  # pragma: no cover
    from ._database import Database


def export_delta(db: "Database", out_dir: str, name: str, source_column: Optional[str]) -> ExportResult:
    """Appends table ``name`` to the Delta table ``OUT_DIR/SCHEMA.TABLE`` (created by the first
    export) in one commit, streaming the rows (bounded memory) with the ``deltalake`` package
    (delta-rs). Types are cast as :mod:`mdfkit._portable` says; a table that cannot be read is
    an ``ExportResult`` with its error, nothing committed."""
    from .errors import Error

    deltalake = _require_deltalake()
    started = time.monotonic()
    target = _output_path(out_dir, name.replace("/", "_"))
    counted = [0]
    try:
        table = db.table(name)
        target = _output_path(out_dir, table.qualified_name.replace("/", "_"))
        # Microseconds straight from the reader: Delta's unit, and every datetime2(7) year.
        schema = portable_schema(table.arrow_schema(timestamps="us"))
        if source_column is not None:
            schema = schema.append(pa.field(source_column, pa.string()))
        source = db.paths[0]

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in table.iter_batches(timestamps="us"):
                batch = portable_batch(batch, portable_schema(batch.schema))
                if source_column is not None:
                    batch = batch.append_column(pa.field(source_column, pa.string()),
                                                pa.array([source] * batch.num_rows, pa.string()))
                counted[0] += batch.num_rows
                yield batch

        reader = pa.RecordBatchReader.from_batches(schema, batches())
        deltalake.write_deltalake(os.fspath(target), reader, mode="append")
    except Error as exc:
        return ExportResult(name, target, 0, 0, time.monotonic() - started, exc)
    return ExportResult(table.qualified_name, target, counted[0], 0, time.monotonic() - started)


def _require_deltalake() -> Any:
    try:
        import deltalake
    except ImportError as exc:
        raise ImportError("format='delta' needs the deltalake package: pip install deltalake") from exc
    return deltalake


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
            gather them), written by the ``deltalake`` package (``pip install deltalake``), types
            as :mod:`mdfkit._portable` casts them. ``out_dir`` may be an object URL that
            ``deltalake`` opens (its own credentials, from the environment). The CLI's
            ``mdfkit export --format delta`` writes the same tables (types, ``mdfkit.sql_type``
            metadata) with mdfkit's own Delta writer, no package needed: each appends to the
            other's tables.
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
    if format == "delta":
        results = [export_delta(db, target, name, source_column) for name in (names or [t.qualified_name for t in db.tables])]
    else:
        if source_column is not None:
            raise ValueError("source_column is for format='delta'")
        done = db._native.export_tables(target, format, names, compression, threads, timestamps)
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
