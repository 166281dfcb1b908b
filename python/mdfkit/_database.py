"""``Database`` and ``mdfkit.open``: an open database (data files or a backup), its description,
tables, catalog views and a DuckDB connection over its tables."""

from __future__ import annotations

import json
import os
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa

from . import _native
from ._export import export
from ._table import Table, _require
from ._types import DatabaseInfo, FileInfo, Paths, _parse_datetime
from .errors import NotFoundError

if TYPE_CHECKING:  # pragma: no cover
    import duckdb


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
        'SQL Server 2019'
        >>> db.table("Orders").to_arrow().num_rows
        5000
    """

    def __init__(self, paths: Paths, **stop: Optional[str]) -> None:
        self.paths: Tuple[str, ...] = tuple(_paths(paths))
        self._native = _native.NativeDatabase(list(self.paths), **stop)

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
            has_vardecimal=d["has_vardecimal"],
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
            5000
            >>> db.table("eventlog").qualified_name
            'sales.EventLog'
        """
        schema, table = self._native.resolve(name)
        for t in self.all_tables():
            if t.schema_name == schema and t.name == table:
                return t
        raise NotFoundError(f"no table named {name}")

    def __getitem__(self, name: str) -> Table:
        return self.table(name)

    def page(self, page_id: str) -> Dict[str, Any]:
        """Page ``FILE:PAGE`` taken apart, as ``mdfkit page --format json`` prints it: the
        header's fields (offset, length, name, value, meaning), the checksum verdict, each
        record's parts and column values (a compressed record's CD codes, clusters and long
        data too), a PAGE compressed page's ``compression_info`` (header, anchor record,
        dictionary), the slot array, and an allocation page's bitmap.

        Example::

            >>> page = db.page("1:1")
            >>> page["type"], page["allocation"]["kind"], page["allocation"]["pages"]
            ('PFS', 'PFS', 8088)
        """
        return json.loads(self._native.page(page_id))

    def sys(self, view: str) -> pa.Table:
        """A catalog view (``sys.columns``, ``sys.indexes``, ...) or system base table
        (``sys.sysschobjs``) as a :class:`pyarrow.Table`. Integer columns are int64, everything
        else is SQL Server's spelling of the value.

        Example::

            >>> columns = db.sys("sys.columns").to_pandas()
            >>> list(columns[columns.object_id == db.table("dbo.Orders").object_id].name)
            ['OrderID', 'CustomerID', 'OrderDate', 'ShippedAt', 'PickTime', 'Status', 'Lines', 'Total', 'Tip', 'Notes']
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
            >>> con.sql("select count(*) from Orders join Customers using (CustomerID)").fetchall()
            [(5000,)]
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

    #: Writes tables to ``out_dir``: :func:`mdfkit.export` with this database as ``source``
    #: (one definition, so the two cannot drift apart).
    export = export


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open(  # noqa: A001 - mirrors the builtin on purpose
    paths: Paths,
    *,
    stopat: Optional[str] = None,
    stopatmark: Optional[str] = None,
    stopbeforemark: Optional[str] = None,
    after: Optional[str] = None,
    stopatlsn: Optional[str] = None,
) -> Database:
    """Opens a SQL Server database from its files, without SQL Server.

    Args:
        paths: the ``.mdf`` (one path), the ``.mdf`` and its ``.ndf`` files (a list, any order:
            files are matched by the ids in their own headers), or a backup ``.bak`` (or the
            stripes of one backup set), or a restore chain: full, differential and log backups
            (``.trn``) in any order, read as ``RESTORE ... WITH RECOVERY`` would leave them.
        stopat: with backups, roll the log forward only up to this time
            (``"2017-06-01 13:22:44"``, as ``RESTORE ... WITH STOPAT``): transactions committed
            by then are read, the others are not.
        stopatmark: up to the commit of the transaction begun ``WITH MARK`` of this name,
            included; ``"lsn:25000000016300001"`` stops at the log record of that LSN, included.
        stopbeforemark: as ``stopatmark``, that transaction (or log record) not included.
        after: with ``stopatmark`` / ``stopbeforemark``, the first mark of that name begun at or
            after this time.
        stopatlsn: up to the log record at this LSN, included: ``"25000000016300001"`` as
            ``RESTORE HEADERONLY`` prints it, ``"0x00000019:000000a3:0001"`` as
            ``fn_dump_dblog`` prints it, or ``"25:163:1"``.

    Returns:
        A :class:`Database`.

    Raises:
        NotADatabaseError: a file is not a data file or backup (or belongs to another database).
        ValueError: a stop point that cannot be read, or more than one.
        NotFoundError: a stop point with data files instead of backups, or a mark not in the log.
        MissingFileError: the primary ``.mdf`` was not given.
        CorruptPageError: a page the catalog needs is damaged.
        IoError: a file cannot be read.

    Example::

        >>> import mdfkit
        >>> db = mdfkit.open("shop.mdf")               # or ["data.mdf", "data2.ndf"], or "backup.bak"
        >>> db.info.product
        'SQL Server 2019'
        >>> [(t.qualified_name, t.rows) for t in db.tables][:2]
        [('dbo.Customers', 2000), ('dbo.Orders', 5000)]
        >>> db.table("dbo.Products").to_pandas().shape
        (500, 10)
    """
    return Database(
        paths,
        stopat=stopat,
        stopatmark=stopatmark,
        stopbeforemark=stopbeforemark,
        after=after,
        stopatlsn=stopatlsn,
    )
