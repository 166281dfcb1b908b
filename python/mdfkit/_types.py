"""What the package hands back that is not a table: a database's description (``DatabaseInfo``,
``FileInfo``) and what an export did (``ExportResult``), as frozen dataclasses; and the path
types the API takes."""

from __future__ import annotations

import datetime as _datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

from .errors import Error

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]


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
