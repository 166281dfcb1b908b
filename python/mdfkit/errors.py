"""The exception hierarchy: one class per library error kind, with the error's context (file,
page, slot, table, column) as attributes. The native module raises these classes, looking them up
by name on the ``mdfkit`` package."""

from __future__ import annotations

from typing import Any, Optional


class Error(Exception):
    """Base class of every mdfkit error.

    The message is one line naming the file, table, page and slot involved, e.g.
    ``shop.mdf: dbo.Orders: page 1:153 slot 4: record is 12 bytes, its header needs at least 4``.
    The pieces are also attributes (``None`` when unknown).

    Attributes:
        kind: the library's error kind (``"NotADatabase"``, ``"Corrupt"``, ``"Unsupported"``,
            ``"MissingFile"``, ``"NotFound"``, ``"Io"``).
        message: the message without its context.
        file: the file involved.
        file_id: the file id of the page involved (``1`` for the .mdf).
        page_id: the page number within that file.
        slot: the slot of the record on that page.
        table: the table (or catalog object) being read, ``schema.name``.
        column: the column, when the problem is one column's.
        feature: for :class:`UnsupportedFeatureError`, what is not supported.
    """

    kind: Optional[str] = None
    message: Optional[str] = None
    file: Optional[str] = None
    file_id: Optional[int] = None
    page_id: Optional[int] = None
    slot: Optional[int] = None
    table: Optional[str] = None
    column: Optional[str] = None
    feature: Optional[str] = None


class NotADatabaseError(Error):
    """The input is not a SQL Server data file or backup (a log file, random bytes, files of two
    different databases, ...)."""


class CorruptPageError(Error):
    """A structure in the file is damaged: ``file_id`` and ``page_id`` say where
    (``DBCC PAGE`` style ``file_id:page_id``)."""


class UnsupportedFeatureError(Error):
    """The data is valid but uses something mdfkit does not decode yet: ``table`` names the table
    and ``feature`` says what, e.g. ``uses COLUMNSTORE compression (a columnstore index)``."""


class MissingFileError(Error):
    """A file the database needs was not given (e.g. the primary .mdf)."""


class NotFoundError(Error, LookupError):
    """No table, column or view by that name."""


class IoError(Error, OSError):
    """Reading or writing a file failed at the operating-system level."""


class SalvageWarning(UserWarning):
    """A salvage read (``salvage=True``) skipped damaged pages or records: the message names
    them; ``skipped`` holds ``(file_id, page_id, slot, reason)`` each."""

    def __init__(self, message: str, skipped: list) -> None:
        super().__init__(message)
        self.skipped = skipped


def _stream_error(stream: Any, exc: BaseException) -> BaseException:
    """The mdfkit exception behind an Arrow error raised while reading ``stream``."""
    error = stream.take_error()
    return error if error is not None else exc
