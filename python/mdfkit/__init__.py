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
    >>> splits = t.splits(target_bytes=256 << 20)     # parts of the scan for other processes
    >>> mdfkit.read_split(splits[0]).read_all()       # (mdfkit.dask, mdfkit.spark use them)

Rows travel through the Arrow C stream interface: the Rust reader builds the Arrow buffers and
hands them over without copies or per-value Python objects, and long scans run with the GIL
released. Errors are raised as subclasses of :class:`mdfkit.Error`.
"""

from __future__ import annotations

from . import _native
from ._database import Database, open
from ._export import export
from ._split import Split, iter_split, read_split
from ._table import Table
from ._types import DatabaseInfo, ExportResult, FileInfo
from .errors import (
    CorruptPageError,
    Error,
    IoError,
    MissingFileError,
    NotADatabaseError,
    NotFoundError,
    UnsupportedFeatureError,
)

__version__: str = _native.__version__

__all__ = [
    "open",
    "export",
    "Database",
    "Table",
    "Split",
    "read_split",
    "iter_split",
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
