"""Errors come out as the mdfkit exception hierarchy, with their context as attributes, from
opening, from the schema and from the middle of a stream; never as an interpreter crash."""

import os

import pytest

import mdfkit
from conftest import with_compression

PUBS = "mdf/itsligo-sampledbs__pubs.mdf"
ADVENTUREWORKS = "big/jdhj-edx__adventureworkslt2012_data.mdf"


def test_hierarchy():
    for cls in (
        mdfkit.NotADatabaseError,
        mdfkit.CorruptPageError,
        mdfkit.UnsupportedFeatureError,
        mdfkit.MissingFileError,
        mdfkit.NotFoundError,
        mdfkit.IoError,
    ):
        assert issubclass(cls, mdfkit.Error)
    assert issubclass(mdfkit.NotFoundError, LookupError)
    assert issubclass(mdfkit.IoError, OSError)


@pytest.mark.parametrize(
    "content",
    [b"hello, not a database\n", os.urandom(3 * 8192), bytes(4 * 8192)],
    ids=["text", "random-pages", "zero-pages"],
)
def test_opening_a_non_database_raises_not_a_database(tmp_path, content):
    path = tmp_path / "not-a-db.mdf"
    path.write_bytes(content)
    with pytest.raises(mdfkit.NotADatabaseError) as info:
        mdfkit.open(path)
    assert info.value.file == str(path)
    assert str(path) in str(info.value)


def test_a_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(mdfkit.IoError) as info:
        mdfkit.open(tmp_path / "nope.mdf")
    assert isinstance(info.value, OSError)


def test_no_files_at_all():
    with pytest.raises(ValueError):
        mdfkit.open([])


def test_unknown_table_and_column(corpus):
    db = mdfkit.open(corpus / PUBS)
    with pytest.raises(mdfkit.NotFoundError):
        db.table("dbo.no_such_table")
    with pytest.raises(KeyError if issubclass(mdfkit.NotFoundError, KeyError) else LookupError):
        db["no_such_table"]
    with pytest.raises(mdfkit.Error):
        db.table("titles").to_arrow(columns=["no_such_column"])
    with pytest.raises(mdfkit.NotFoundError):
        db.sys("sys.no_such_view")


def test_undecoded_storage_names_the_table_and_feature(corpus, tmp_path):
    db = mdfkit.open(corpus / PUBS)
    partitions = db.sys("sys.partitions").to_pylist()
    authors = db.table("dbo.authors")
    pid = next(p["partition_id"] for p in partitions if p["object_id"] == authors.object_id and p["index_id"] == 1)
    path = tmp_path / "compressed.mdf"
    path.write_bytes(with_compression((corpus / PUBS).read_bytes(), pid, 3))
    t = mdfkit.open(path).table("dbo.authors")
    for read in (t.to_arrow, lambda: next(t.iter_batches())):
        with pytest.raises(mdfkit.UnsupportedFeatureError) as info:
            read()
        assert info.value.table == "dbo.authors"
        assert "columnstore" in info.value.feature
    # The other tables still read.
    assert mdfkit.open(path).table("dbo.titles").to_arrow().num_rows == 18


def test_rows_not_in_the_format_of_a_compressed_partition_are_damage(corpus, tmp_path):
    """A catalog saying ROW compression over FixedVar pages: the first record is named as not in
    the CD format, never read as some other record type and skipped."""
    db = mdfkit.open(corpus / PUBS)
    authors = db.table("dbo.authors")
    partitions = db.sys("sys.partitions").to_pylist()
    pid = next(p["partition_id"] for p in partitions if p["object_id"] == authors.object_id and p["index_id"] == 1)
    path = tmp_path / "row.mdf"
    path.write_bytes(with_compression((corpus / PUBS).read_bytes(), pid, 1))
    with pytest.raises(mdfkit.CorruptPageError) as info:
        mdfkit.open(path).table("dbo.authors").to_arrow()
    assert "not in the CD format" in str(info.value) and "slot 0" in str(info.value)


def test_xml_columns_decode_to_text(corpus):
    t = mdfkit.open(corpus / ADVENTUREWORKS).table("SalesLT.ProductModel")
    assert t.schema.field("CatalogDescription").metadata[b"mdfkit.sql_type"] == b"xml"
    values = [v for v in t.to_arrow(columns=["CatalogDescription"]).column(0).to_pylist() if v is not None]
    assert len(values) == 6 and all("ProductDescription" in v for v in values)


def damaged_copies(corpus, tmp_path):
    """Copies of pubs with one byte of one page flipped, page by page (checksums then fail)."""
    data = (corpus / PUBS).read_bytes()
    path = tmp_path / "damaged.mdf"
    for page in range(16, len(data) // 8192):
        start = page * 8192
        if not any(data[start : start + 96]):
            continue  # never written: nothing reads it
        damaged = bytearray(data)
        damaged[start + 4000] ^= 0xFF
        path.write_bytes(damaged)
        yield page, path


def test_damaged_pages_raise_corrupt_page_with_their_address(corpus, tmp_path):
    """A damaged catalog page fails the open, a damaged data page fails the table's stream:
    both as CorruptPageError naming file 1 and the page."""
    at_open = in_stream = None
    for page, path in damaged_copies(corpus, tmp_path):
        try:
            db = mdfkit.open(path)
        except mdfkit.Error as e:
            assert isinstance(e, mdfkit.CorruptPageError), e
            assert (e.file_id, e.page_id) == (1, page), e
            at_open = at_open or page
            continue
        for t in db.tables:
            try:
                t.to_arrow()
            except mdfkit.Error as e:
                assert isinstance(e, mdfkit.CorruptPageError), e
                assert (e.file_id, e.page_id) == (1, page), e
                assert e.table == t.qualified_name
                with pytest.raises(mdfkit.CorruptPageError):
                    for _ in t.iter_batches(batch_size=1):
                        pass
                in_stream = page
                break
        if at_open and in_stream:
            break
    assert at_open and in_stream, (at_open, in_stream)


def test_a_truncated_file_never_crashes(corpus, tmp_path):
    data = (corpus / PUBS).read_bytes()
    path = tmp_path / "short.mdf"
    for size in (8192 * 2, 8192 * 10, 8192 * 40, len(data) // 2):
        path.write_bytes(data[:size])
        try:
            db = mdfkit.open(path)
            for t in db.tables:
                t.to_arrow()
        except mdfkit.Error:
            pass


def test_object_urls_are_refused_by_name_without_object_store_support():
    if mdfkit._native.object_stores:
        pytest.skip("this wheel reads object URLs (test_cloud.py)")
    with pytest.raises(mdfkit.NotFoundError) as caught:
        mdfkit.open("s3://bucket/shop.mdf")
    assert "s3://bucket/shop.mdf: this build of mdfkit has no `s3://` support" in str(caught.value)
