"""Type stubs of the native core (``mdfkit._native``); use the ``mdfkit`` package instead."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str
object_stores: bool
"""Whether this build reads object URLs (``s3://``, ``az://``, signed ``https://`` links)."""

class ArrowSchema:
    def __arrow_c_schema__(self) -> object: ...

class Stream:
    """A one-shot stream of record batches (Arrow PyCapsule interface)."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def take_error(self) -> Optional[BaseException]: ...
    def skipped(self) -> List[Tuple[Optional[int], Optional[int], Optional[int], str]]: ...

class NativeDatabase:
    def __init__(
        self,
        paths: Sequence[Union[str, PathLike[str]]],
        stopat: Optional[str] = None,
        stopatmark: Optional[str] = None,
        stopbeforemark: Optional[str] = None,
        after: Optional[str] = None,
        stopatlsn: Optional[str] = None,
    ) -> None: ...
    def info(self) -> Dict[str, Any]: ...
    def tables(self, system: bool = False) -> List[Dict[str, Any]]: ...
    def resolve(self, name: str) -> Tuple[str, str]: ...
    def ddl(self, table: str) -> str: ...
    def schema(
        self, table: str, columns: Optional[List[str]] = None, timestamps: str = "ns", delta_types: bool = False
    ) -> ArrowSchema: ...
    def scan(
        self,
        table: str,
        columns: Optional[List[str]] = None,
        limit: Optional[int] = None,
        batch_size: int = 65536,
        timestamps: str = "ns",
    ) -> Stream: ...
    def splits(
        self,
        table: str,
        sources: List[str],
        target_bytes: int,
        columns: Optional[List[str]] = None,
        timestamps: str = "ns",
        salvage: bool = False,
    ) -> List[str]: ...
    def page(self, id: str) -> str: ...
    def view(self, name: str) -> Stream: ...
    def export(
        self,
        table: str,
        format: str,
        path: Union[str, PathLike[str]],
        columns: Optional[List[str]] = None,
        compression: str = "zstd",
        threads: Optional[int] = None,
        timestamps: str = "ns",
    ) -> Dict[str, Any]: ...
    def export_tables(
        self,
        out: Union[str, PathLike[str]],
        format: str,
        tables: Optional[List[str]] = None,
        compression: str = "zstd",
        threads: Optional[int] = None,
        timestamps: str = "ns",
        source_column: Optional[Tuple[str, str]] = None,
    ) -> List[Dict[str, Any]]: ...

def read_split(split: str, batch_size: int = 65536, delta_types: bool = False) -> Stream: ...
