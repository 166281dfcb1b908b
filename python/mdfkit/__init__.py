"""Read Microsoft SQL Server data files (.mdf/.ndf) and backups (.bak) without SQL Server.

Tables come out as Arrow data (pyarrow, pandas, polars, DuckDB) straight from the bytes on disk.
The examples read ``shop.mdf``, the sample database ``mdfkit demo`` writes::

    >>> import mdfkit
    >>> db = mdfkit.open("shop.mdf")                 # or ["a.mdf", "b.ndf"], or "backup.bak"
    >>> db.info.product, db.info.collation
    ('SQL Server 2019', 'SQL_Latin1_General_CP1_CI_AS')
    >>> [t.qualified_name for t in db.tables]
    ['dbo.Customers', 'dbo.Orders', 'dbo.Products', 'sales.EventLog', 'sales.Readings', 'sales.ReadingsPage', 'sales.ReadingsRow']
    >>> t = db.table("dbo.Orders")
    >>> t.schema.field("Total").metadata              # the declared SQL type of each column
    {b'mdfkit.sql_type': b'numeric(12,2)'}
    >>> t.to_arrow(columns=["OrderID", "Total"], limit=10).num_rows   # a pyarrow.Table
    10
    >>> len(db.table("dbo.Customers").to_pandas())    # needs mdfkit[pandas]
    2000
    >>> sum(batch.num_rows for batch in t.iter_batches(batch_size=1000))   # bounded memory
    5000
    >>> db.sys("sys.objects").num_rows > 0            # any catalog view, as a pyarrow.Table
    True
    >>> con = db.duckdb()                             # needs mdfkit[duckdb]
    >>> con.sql("select count(*) from dbo.Orders").fetchall()
    [(5000,)]
    >>> [r.rows for r in mdfkit.export("shop.mdf", "out/", format="parquet", tables=["Customers", "Orders"])]
    [2000, 5000]
    >>> splits = t.splits(target_bytes=256 << 20)     # parts of the scan for other processes
    >>> mdfkit.read_split(splits[0]).read_all().num_rows   # (mdfkit.dask, mdfkit.spark use them)
    5000

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
    SalvageWarning,
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
    "SalvageWarning",
]
