"""Which databases a distributed read covers: one database (a path, a URL, or the list of one
database's files), or many (a glob or a list of them), each planned into splits where it is
opened. Shared by :mod:`mdfkit.dask` and :mod:`mdfkit.spark`."""

from __future__ import annotations

import glob
import os
from typing import List, Optional, Sequence, Union

from ._database import Database
from ._split import Split
from .errors import NotFoundError

Databases = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]", Sequence[str]]]]


def databases(paths_or_urls: Databases) -> List[List[str]]:
    """Each database's files. A string is one database, or a glob of local files (one database
    each); a list holds databases: a path or URL each, or a list of one database's files."""
    items = [paths_or_urls] if isinstance(paths_or_urls, (str, os.PathLike)) else list(paths_or_urls)
    out: List[List[str]] = []
    for item in items:
        if isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if "://" not in path and glob.has_magic(path):
                matches = sorted(glob.glob(path))
                if not matches:
                    raise FileNotFoundError(f"no file matches {path}")
                out.extend([m] for m in matches)
            else:
                out.append([path])
        else:
            out.append([os.fspath(p) for p in item])
    if not out:
        raise ValueError("give at least one database")
    return out


def plan(files: List[str], table: str, target_bytes: int, columns: Optional[List[str]], timestamps: str = "ns",
         salvage: bool = False) -> List[Split]:
    """The splits of ``table`` in the database of ``files`` (opened here: on a worker when an
    engine runs this as a task)."""
    with Database(files) as db:
        try:
            found = db.table(table)
        except NotFoundError as exc:
            raise NotFoundError(f"{', '.join(files)}: {exc}") from None
        return found.splits(target_bytes=target_bytes, columns=columns, timestamps=timestamps, salvage=salvage)
