//! Ready-made specs: the demo's shop database.

use crate::spec::{ColType::*, ColumnSpec, Compression, Gen, Layout, Nulls, Spec, TableSpec, Version};

fn col(name: &str, ty: crate::ColType, gen: Gen, nulls: Nulls) -> ColumnSpec {
    ColumnSpec::new(name, ty, gen, nulls)
}

fn choice(words: &[&str]) -> Gen {
    Gen::Choice(words.iter().map(|w| w.to_string()).collect())
}

/// A small shop: customers, products (with LOB-sized photos and descriptions), orders (clustered)
/// and an event log (a heap with ghost and forwarded records), about 10,000 rows using every type
/// mdfkit decodes.
pub fn shop() -> Spec {
    let seq = |start| Gen::Sequence { start, step: 1 };
    let mut s = Spec::new("shop", Version::V904, 2024);
    s.schemas.push("sales".into());
    s.table(
        TableSpec::new("dbo", "Customers", Layout::Clustered { key: 0 }, 2_000)
            .column(col("CustomerID", Int, seq(1), Nulls::Never))
            .column(col("Name", NVarChar(Some(60)), Gen::Length { min: 5, max: 40 }, Nulls::Never))
            .column(col("Email", VarChar(Some(80)), Gen::Length { min: 10, max: 60 }, Nulls::Every(9)))
            .column(col("Country", Char(2), choice(&["FR", "DE", "US", "JP", "BR", "NZ"]), Nulls::Never))
            .column(col("Joined", Date, Gen::Random, Nulls::Never))
            .column(col("IsActive", Bit, Gen::Random, Nulls::Never))
            .column(col("CreditLimit", Money, Gen::Range { lo: 0, hi: 100_000_000 }, Nulls::Every(5)))
            .column(col("Token", UniqueIdentifier, Gen::Random, Nulls::Never)),
    )
    .table(
        TableSpec::new("dbo", "Products", Layout::Clustered { key: 0 }, 500)
            .column(col("ProductID", Int, seq(1), Nulls::Never))
            .column(col("Name", NVarChar(Some(80)), Gen::Length { min: 3, max: 50 }, Nulls::Never))
            .column(col("Price", Decimal(10, 2), Gen::Range { lo: 99, hi: 999_999 }, Nulls::Never))
            .column(col("Weight", Real, Gen::Random, Nulls::Every(7)))
            .column(col("Rating", Float, Gen::Random, Nulls::Every(4)))
            .column(col("Code", Binary(4), Gen::Random, Nulls::Never))
            .column(col("Added", DateTime, Gen::Random, Nulls::Never))
            .column(col("Discontinued", SmallDateTime, Gen::Random, Nulls::Random(0.8)))
            .column(col("Description", NVarChar(None), Gen::Length { min: 0, max: 12_000 }, Nulls::Every(3)))
            .column(col("Photo", VarBinary(None), Gen::Length { min: 100, max: 60_000 }, Nulls::Every(2))),
    )
    .table(
        TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 5_000)
            .column(col("OrderID", BigInt, seq(100_000), Nulls::Never))
            .column(col("CustomerID", Int, Gen::Range { lo: 1, hi: 2_000 }, Nulls::Never))
            .column(col("OrderDate", DateTime2(3), Gen::Random, Nulls::Never))
            .column(col("ShippedAt", DateTimeOffset(0), Gen::Random, Nulls::Every(6)))
            .column(col("PickTime", Time(7), Gen::Random, Nulls::Never))
            .column(col("Status", TinyInt, Gen::Range { lo: 0, hi: 5 }, Nulls::Never))
            .column(col("Lines", SmallInt, Gen::Range { lo: 1, hi: 40 }, Nulls::Never))
            .column(col("Total", Numeric(12, 2), Gen::Range { lo: 100, hi: 9_999_999 }, Nulls::Never))
            .column(col("Tip", SmallMoney, Gen::Range { lo: 0, hi: 500_000 }, Nulls::Every(3)))
            .column(col("Notes", VarChar(None), Gen::Length { min: 0, max: 200 }, Nulls::Random(0.7))),
    )
    .table({
        let mut t = TableSpec::new("sales", "EventLog", Layout::Heap, 3_000)
            .column(col("At", DateTime2(7), Gen::Random, Nulls::Never))
            .column(col("Level", VarChar(Some(10)), choice(&["INFO", "WARN", "ERROR", "DEBUG"]), Nulls::Never))
            .column(col("Message", NVarChar(Some(200)), Gen::Length { min: 10, max: 120 }, Nulls::Never))
            .column(col("Payload", VarBinary(Some(200)), Gen::Random, Nulls::Every(4)));
        t.ghost_every = Some(10);
        t.forward_every = Some(25);
        t
    })
}

/// The demo's database (`mdfkit demo`): the [`shop`], and one table of readings three times,
/// holding the same rows: `sales.Readings` uncompressed, `sales.ReadingsRow` ROW compressed and
/// `sales.ReadingsPage` PAGE compressed (a CI structure, anchor record and dictionary, on every
/// page), so that the sample shows what compression saves and that every copy reads the same.
pub fn demo() -> Spec {
    let readings = |name: &str, compression: Compression| {
        let mut t = TableSpec::new("sales", name, Layout::Clustered { key: 0 }, 20_000)
            .column(col("ReadingID", BigInt, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(col("SensorID", Int, Gen::Range { lo: 1, hi: 200 }, Nulls::Never))
            .column(col("TakenOn", Date, Gen::Random, Nulls::Never))
            .column(col("Celsius", Decimal(6, 2), Gen::Range { lo: -4_000, hi: 6_000 }, Nulls::Every(40)))
            .column(col(
                "Site",
                VarChar(Some(20)),
                choice(&["Lyon", "Berlin", "Austin", "Osaka", "Recife"]),
                Nulls::Never,
            ))
            .column(col("Ok", Bit, Gen::Random, Nulls::Never));
        t.compression = compression;
        if compression == Compression::Page {
            t.page_ci_every = Some(1);
        }
        t.values_of = Some("sales.Readings".into());
        t
    };
    shop()
        .table(readings("Readings", Compression::None))
        .table(readings("ReadingsRow", Compression::Row))
        .table(readings("ReadingsPage", Compression::Page))
}
