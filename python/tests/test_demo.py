"""The Python API over the sample database `mdfkit demo` writes (mdfkit-forge's shop): values
checked against the text `mdfkit cat` prints, SQL Server's spelling of each stored value."""

import csv
import datetime
import io
import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mdfkit
from conftest import corpus_files, optional, CORPUS


@pytest.fixture(scope="module")
def shop(tmp_path_factory, mdfkit_bin) -> Path:
    """shop.mdf, written by `mdfkit demo`."""
    folder = tmp_path_factory.mktemp("demo")
    subprocess.run([mdfkit_bin, "demo", "--dir", str(folder)], check=True, capture_output=True)
    return folder / "shop.mdf"


def cli_csv(mdfkit_bin, *args) -> list:
    """The rows (dicts) of an `mdfkit ... --format csv` command."""
    run = subprocess.run([mdfkit_bin, *args, "--format", "csv"], check=True, capture_output=True, text=True)
    return list(csv.DictReader(io.StringIO(run.stdout)))


def parse_datetime2_us(text: str) -> datetime.datetime:
    """`YYYY-MM-DD hh:mm:ss.fffffff` (datetime2(7)) with its seventh digit (100 ns) dropped."""
    return datetime.datetime.strptime(text[:26], "%Y-%m-%d %H:%M:%S.%f")


def time7_ns(text: str) -> int:
    """`hh:mm:ss.fffffff` (time(7)) as nanoseconds since midnight."""
    hms, fraction = text.split(".")
    h, m, s = (int(p) for p in hms.split(":"))
    return ((h * 60 + m) * 60 + s) * 1_000_000_000 + int(fraction) * 100


def test_datetime2_7_of_every_year_reads_in_microseconds(shop, mdfkit_bin, tmp_path):
    # sales.EventLog.At: datetime2(7) over the years 0001-9999.
    expected = sorted(parse_datetime2_us(r["At"]) for r in cli_csv(mdfkit_bin, "cat", str(shop), "sales.EventLog"))
    assert any(d.year < 1677 for d in expected) and any(d.year > 2262 for d in expected)
    t = mdfkit.open(shop).table("sales.EventLog")
    with pytest.raises(mdfkit.UnsupportedFeatureError, match='timestamps="us"'):
        t.to_arrow(columns=["At"])
    assert t.arrow_schema(timestamps="us").field("At").type == pa.timestamp("us")
    assert sorted(t.to_arrow(columns=["At"], timestamps="us").column("At").to_pylist()) == expected
    batches = list(t.iter_batches(batch_size=500, columns=["At"], timestamps="us"))
    assert sorted(v for b in batches for v in b.column(0).to_pylist()) == expected
    stats = t.export(tmp_path / "events.parquet", columns=["At"], timestamps="us")
    assert stats.rows == len(expected)
    assert sorted(pq.read_table(tmp_path / "events.parquet").column("At").to_pylist()) == expected
    with pytest.raises(ValueError, match="timestamps"):
        t.to_arrow(timestamps="ms")
    polars = optional("polars")
    frame = t.to_polars(columns=["At"], timestamps="us")
    assert frame.schema["At"] == polars.Datetime("us") and sorted(frame["At"].to_list()) == expected
    # Delta Lake holds microseconds: the export reads them so, every year included.
    deltalake = optional("deltalake")
    (result,) = mdfkit.export(shop, tmp_path / "lake", format="delta", tables=["sales.EventLog"])
    assert result.error is None and result.rows == len(expected)
    lake = deltalake.DeltaTable(str(tmp_path / "lake" / "sales.EventLog")).to_pyarrow_table()
    assert sorted(lake.column("At").to_pylist()) == expected


def test_time7_reads_into_pandas_exactly(shop, mdfkit_bin):
    optional("pandas")
    # dbo.Orders.PickTime: time(7), 100 ns digits that datetime.time cannot hold.
    rows = cli_csv(mdfkit_bin, "cat", str(shop), "dbo.Orders", "--columns", "OrderID,PickTime")
    expected = {int(r["OrderID"]): time7_ns(r["PickTime"]) for r in rows}
    assert any(ns % 1000 for ns in expected.values())
    df = mdfkit.open(shop).table("dbo.Orders").to_pandas(columns=["OrderID", "PickTime"])
    assert str(df["PickTime"].dtype) == "timedelta64[ns]"
    got = {int(i): int(td.value) for i, td in zip(df["OrderID"], df["PickTime"])}
    assert got == expected


def vardecimal_flags(mdfkit_bin, path: Path) -> dict:
    return {r["table"]: r["vardecimal"] == "1" for r in cli_csv(mdfkit_bin, "tables", str(path))}


@pytest.mark.parametrize("name", ["demo"] + corpus_files("mdf"))
def test_vardecimal_flag_as_mdfkit_tables_lists_it(name, shop, mdfkit_bin):
    path = shop if name == "demo" else CORPUS / name
    expected = vardecimal_flags(mdfkit_bin, path)
    got = {t.qualified_name: t.has_vardecimal for t in mdfkit.open(path).tables}
    assert got == expected


@pytest.mark.parametrize("page_id", ["1:0", "1:1", "1:2", "1:3", "1:9", "data", "IAM", "text mix"])
def test_page_anatomy_equals_the_cli_json(shop, mdfkit_bin, page_id):
    """`Database.page` gives the fields `mdfkit page --format json` prints: the file header, the
    PFS, GAM, SGAM and boot pages, and the first data, IAM and LOB pages `mdfkit pages` lists."""
    if not page_id[0].isdigit():
        listed = json.loads(subprocess.run([mdfkit_bin, "pages", str(shop), "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
        page_id = next(p["page"] for p in listed if p["type"] == page_id)
    cli = subprocess.run([mdfkit_bin, "page", str(shop), page_id, "--format", "json"], check=True,
                         capture_output=True, text=True)
    got = mdfkit.open(shop).page(page_id)
    assert got == json.loads(cli.stdout)
    assert got["page"] == page_id and got["header"], got
