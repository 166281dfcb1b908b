mod common;

use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};

fn col(name: &str, ty: ColType, gen: Gen, nulls: Nulls) -> ColumnSpec {
    ColumnSpec::new(name, ty, gen, nulls)
}

/// Every type the reader decodes, with NULL patterns.
fn all_types(t: TableSpec) -> TableSpec {
    use ColType::*;
    let r = Gen::Random;
    t.column(col("tiny", TinyInt, r.clone(), Nulls::Every(5)))
        .column(col("small", SmallInt, r.clone(), Nulls::Never))
        .column(col("big", BigInt, r.clone(), Nulls::Random(0.2)))
        .column(col("flag", Bit, r.clone(), Nulls::Every(3)))
        .column(col("flag2", Bit, r.clone(), Nulls::Never))
        .column(col("price", Decimal(18, 2), r.clone(), Nulls::Every(4)))
        .column(col("big_num", Numeric(38, 10), r.clone(), Nulls::Never))
        .column(col("tiny_num", Decimal(3, 3), r.clone(), Nulls::Never))
        .column(col("cash", Money, r.clone(), Nulls::Every(6)))
        .column(col("petty", SmallMoney, r.clone(), Nulls::Never))
        .column(col("ratio", Real, r.clone(), Nulls::Every(7)))
        .column(col("measure", Float, r.clone(), Nulls::Never))
        .column(col("day", Date, r.clone(), Nulls::Every(8)))
        .column(col("at0", Time(0), r.clone(), Nulls::Never))
        .column(col("at7", Time(7), r.clone(), Nulls::Every(9)))
        .column(col("stamp3", DateTime2(3), r.clone(), Nulls::Never))
        .column(col("stamp7", DateTime2(7), r.clone(), Nulls::Every(2)))
        .column(col("zoned", DateTimeOffset(5), r.clone(), Nulls::Never))
        .column(col("legacy", DateTime, r.clone(), Nulls::Every(3)))
        .column(col("coarse", SmallDateTime, r.clone(), Nulls::Never))
        .column(col("code", Char(6), r.clone(), Nulls::Every(4)))
        .column(col("label", VarChar(Some(50)), r.clone(), Nulls::Every(5)))
        .column(col("wide_code", NChar(4), r.clone(), Nulls::Never))
        .column(col("title", NVarChar(Some(60)), r.clone(), Nulls::Random(0.3)))
        .column(col("blob", Binary(5), r.clone(), Nulls::Every(6)))
        .column(col("bytes", VarBinary(Some(30)), r.clone(), Nulls::Never))
        .column(col("id", UniqueIdentifier, r.clone(), Nulls::Every(10)))
        .column(col("notes", VarChar(None), Gen::Length { min: 0, max: 300 }, Nulls::Every(4)))
        .column(col("body", NVarChar(None), Gen::Length { min: 0, max: 20_000 }, Nulls::Every(3)))
        .column(col("image", VarBinary(None), Gen::Length { min: 7000, max: 90_000 }, Nulls::Every(5)))
}

fn spec(version: Version) -> Spec {
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: -50, step: 3 }, Nulls::Never);
    let mut s = Spec::new("forge_all", version, 42);
    s.schemas.push("sales".into());
    s = s
        .table(all_types(TableSpec::new("dbo", "Clustered", Layout::Clustered { key: 0 }, 300).column(key.clone())))
        .table({
            let mut t = all_types(TableSpec::new("sales", "Heap", Layout::Heap, 250));
            t.ghost_every = Some(7);
            t.forward_every = Some(5);
            t
        })
        .table({
            // Rows too wide for a page: varchar(n) values go to row-overflow pages.
            let mut t = TableSpec::new("dbo", "Wide", Layout::Clustered { key: 0 }, 40).column(key);
            for i in 0..3 {
                t = t.column(col(
                    &format!("part{i}"),
                    ColType::VarChar(Some(5000)),
                    Gen::Length { min: 2000, max: 5000 },
                    Nulls::Every(4),
                ));
            }
            t.ghost_every = Some(6);
            t
        })
        .table(TableSpec::new("dbo", "Empty", Layout::Heap, 0).column(col(
            "x",
            ColType::Int,
            Gen::Random,
            Nulls::Never,
        )));
    s
}

#[test]
fn every_type_round_trips_in_2019_format() {
    common::assert_round_trip(&spec(Version::V904));
}

#[test]
fn every_type_round_trips_in_2016_format_over_three_files() {
    let mut s = spec(Version::V852);
    s.data_files = 3;
    common::assert_round_trip(&s);
}

#[test]
fn same_spec_same_bytes() {
    let s = spec(Version::V904);
    let a = mdfkit_forge::forge(&s).unwrap();
    let b = mdfkit_forge::forge(&s).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(x.bytes == y.bytes, "{} differs between two runs", x.name);
    }
}

#[test]
fn versions_and_names_as_written() {
    for (version, number) in [(Version::V852, 852), (Version::V904, 904)] {
        let (db, _) = common::open(&spec(version));
        assert_eq!(db.catalog().boot.version, number);
        assert_eq!(db.name(), "forge_all");
        let names: Vec<String> = db.catalog().tables(false).iter().map(|t| t.qualified_name()).collect();
        assert_eq!(names, ["dbo.Clustered", "dbo.Empty", "dbo.Wide", "sales.Heap"]);
        let heap = db.catalog().find_table("sales.Heap").unwrap();
        assert!(heap.has_lob);
        assert!(db.catalog().find_table("dbo.Wide").unwrap().has_row_overflow);
    }
}

/// Every type SQL Server lets be sparse (all but text/ntext/image/timestamp and CLR types), as
/// sparse columns with NULL patterns; rows with no sparse value carry no sparse vector.
fn sparse_types(t: TableSpec) -> TableSpec {
    use ColType::*;
    let types = [
        TinyInt,
        SmallInt,
        Int,
        BigInt,
        Bit,
        Decimal(18, 2),
        Numeric(38, 10),
        Money,
        SmallMoney,
        Real,
        Float,
        Date,
        Time(0),
        Time(7),
        DateTime2(3),
        DateTimeOffset(5),
        DateTime,
        SmallDateTime,
        Char(6),
        VarChar(Some(50)),
        NChar(4),
        NVarChar(Some(60)),
        Binary(5),
        VarBinary(Some(30)),
        UniqueIdentifier,
    ];
    types.iter().enumerate().fold(t, |t, (i, &ty)| {
        let nulls = if i % 3 == 0 { Nulls::Random(0.9) } else { Nulls::Every(i as u64 % 4 + 2) };
        t.column(col(&format!("s{i}"), ty, Gen::Random, nulls).sparse())
    })
}

#[test]
fn sparse_columns_round_trip() {
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let note = col("Note", ColType::VarChar(Some(20)), Gen::Random, Nulls::Every(3));
    let spec = Spec::new("forge_sparse", Version::V904, 9)
        .table(sparse_types(TableSpec::new("dbo", "Clustered", Layout::Clustered { key: 0 }, 200).column(key)))
        .table({
            let mut t = sparse_types(TableSpec::new("dbo", "Heap", Layout::Heap, 150).column(note.clone()));
            t = t.column(note.clone());
            t.forward_every = Some(4);
            t.ghost_every = Some(5);
            t
        })
        .table(
            TableSpec::new("dbo", "AllNull", Layout::Heap, 20)
                .column(note)
                .column(col("Gone", ColType::Int, Gen::Random, Nulls::Always).sparse()),
        );
    common::assert_round_trip(&spec);
    let (db, _) = common::open(&spec);
    let columns = db.catalog().columns(db.catalog().find_table("dbo.Heap").unwrap().object_id);
    assert!(columns.iter().filter(|c| c.name.starts_with('s')).all(|c| c.is_sparse));
}

/// Columns added after rows were written: NOT NULL ones with stored defaults of several types,
/// a nullable one with a stored default (WITH VALUES), a nullable one without (old rows NULL).
#[test]
fn columns_added_later_read_their_stored_defaults() {
    use mdfkit_forge::Val;
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let added = |t: TableSpec| {
        t.column(col("Old", ColType::VarChar(Some(20)), Gen::Random, Nulls::Every(3)))
            .column(col("Qty", ColType::Int, Gen::Random, Nulls::Never).with_default(Val::Int(7)))
            .column(col("Done", ColType::Bit, Gen::Random, Nulls::Never).with_default(Val::Bit(true)))
            .column(col("Price", ColType::Decimal(9, 2), Gen::Random, Nulls::Never).with_default(Val::Scaled(1250)))
            .column(
                col("Tag", ColType::NVarChar(Some(10)), Gen::Random, Nulls::Never)
                    .with_default(Val::Text("new".into())),
            )
            .column(col("Maybe", ColType::BigInt, Gen::Random, Nulls::Every(2)).with_default(Val::Int(-3)))
            .column(col("Later", ColType::Date, Gen::Random, Nulls::Every(5)))
    };
    let spec = Spec::new("forge_added", Version::V904, 5)
        .table({
            let mut t = added(TableSpec::new("dbo", "Clustered", Layout::Clustered { key: 0 }, 120).column(key));
            t.added_after = Some((2, 50));
            t
        })
        .table({
            let mut t = added(TableSpec::new("dbo", "Heap", Layout::Heap, 90));
            t.added_after = Some((1, 40));
            t.forward_every = Some(6);
            t
        });
    common::assert_round_trip(&spec);
    let (db, _) = common::open(&spec);
    let table = db.catalog().find_table("dbo.Clustered").unwrap();
    let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
    let mut first = Vec::new();
    db.scan(&table)
        .records(|record, _| {
            decoder.decode(record, &mut first)?;
            Ok(mdfkit::scan::Flow::Stop)
        })
        .unwrap();
    let first: Vec<String> = first.iter().map(|v| v.to_string()).collect();
    assert_eq!(first[2..8].join(","), "7,1,12.50,new,-3,NULL", "a row older than the added columns");
}

/// The vardecimal storage format: decimal and numeric columns of every precision band, stored as
/// variable-length columns, beside fixed and variable ones; a heap with forwarded and ghost rows.
#[test]
fn vardecimal_columns_round_trip() {
    use ColType::*;
    let decimals = |t: TableSpec| {
        let r = Gen::Random;
        t.column(col("small", Decimal(5, 2), r.clone(), Nulls::Every(4)))
            .column(col("whole", Numeric(9, 0), r.clone(), Nulls::Never))
            .column(col("tiny", Decimal(3, 3), r.clone(), Nulls::Every(3)))
            .column(col("label", VarChar(Some(20)), r.clone(), Nulls::Every(5)))
            .column(col("mid", Decimal(19, 7), r.clone(), Nulls::Never))
            .column(col("wide", Numeric(28, 10), r.clone(), Nulls::Random(0.2)))
            .column(col("max", Decimal(38, 0), r.clone(), Nulls::Never))
            .column(col("fine", Decimal(38, 38), r.clone(), Nulls::Every(6)))
    };
    let key = col("ItemID", Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let spec = Spec::new("forge_vardecimal", Version::V904, 11)
        .table({
            let mut t = decimals(TableSpec::new("dbo", "Clustered", Layout::Clustered { key: 0 }, 200).column(key));
            t.vardecimal = true;
            t
        })
        .table({
            let mut t = decimals(TableSpec::new("dbo", "Heap", Layout::Heap, 150));
            t.vardecimal = true;
            t.forward_every = Some(4);
            t.ghost_every = Some(5);
            t
        });
    common::assert_round_trip(&spec);
    // The Arrow path (row by row for vardecimal columns) holds the same decimals.
    let (db, _) = common::open(&spec);
    for (i, t) in spec.tables.iter().enumerate() {
        let table = db.catalog().find_table(&t.qualified_name()).unwrap();
        let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
        assert!(table.has_vardecimal, "{}: listed as vardecimal", t.qualified_name());
        let listed = table.listing_row();
        let flag = mdfkit::catalog::model::TableInfo::LISTING_COLUMNS.iter().position(|c| *c == "vardecimal").unwrap();
        assert_eq!(listed[flag].to_string(), mdfkit::value::Value::bit(true).to_string());
        let stored_variable = decoder.columns().iter().filter(|c| c.is_vardecimal()).count();
        assert_eq!(stored_variable, 7, "{}: every decimal is a variable-length column", t.qualified_name());
        let mut got: Vec<Vec<String>> = Vec::new();
        db.scan(&table)
            .batches(|batch| {
                for row in 0..batch.num_rows() {
                    got.push(
                        (0..batch.num_columns())
                            .filter_map(|c| batch.column(c).as_any().downcast_ref::<arrow_array::Decimal128Array>())
                            .map(|d| (d, arrow_array::Array::is_null(d, row)))
                            .map(|(d, null)| if null { "NULL".to_string() } else { d.value_as_string(row) })
                            .collect(),
                    );
                }
                Ok(mdfkit::scan::Flow::Continue)
            })
            .unwrap();
        let mut expected: Vec<Vec<String>> = mdfkit_forge::live_rows(&spec, i)
            .map(|row| {
                row.iter()
                    .zip(&t.columns)
                    .filter(|(_, c)| c.ty.is_decimal())
                    .map(|(v, c)| v.as_ref().map_or("NULL".to_string(), |v| v.sql_text(c.ty)))
                    .collect()
            })
            .collect();
        got.sort();
        expected.sort();
        assert_eq!(got.len(), t.rows as usize);
        assert_eq!(got, expected, "{}", t.qualified_name());
    }
}

#[test]
fn the_shop_sample_round_trips() {
    common::assert_round_trip(&mdfkit_forge::samples::shop());
}

/// LOB values of 0 bytes to several MB: in-row (up to 8,000 bytes), one LOB page, the five
/// links an in-row root holds (8,040 bytes each), then INTERNAL nodes of up to 500 links: one
/// full node, a second one begun, three nodes.
#[test]
fn lobs_from_empty_to_several_megabytes_round_trip() {
    use ColType::*;
    let mut spec = Spec::new("lobs", Version::V904, 17);
    let lengths = [0, 1, 8_000, 8_001, 8_041, 40_200, 40_201, 4_020_000, 4_020_001, 9_000_000];
    for (i, &n) in lengths.iter().enumerate() {
        spec = spec.table(
            TableSpec::new("dbo", &format!("Bytes{i}"), Layout::Heap, 2)
                .column(col("id", Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
                .column(col("data", VarBinary(None), Gen::Length { min: n, max: n }, Nulls::Never)),
        );
    }
    // Text in characters: nvarchar's two bytes each cross the same limits at half the length.
    for (i, &n) in [0, 4_000, 4_001, 20_100, 20_101, 2_010_001].iter().enumerate() {
        spec = spec.table(
            TableSpec::new("dbo", &format!("Text{i}"), Layout::Clustered { key: 0 }, 2)
                .column(col("id", Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
                .column(col("wide", NVarChar(None), Gen::Length { min: n, max: n }, Nulls::Never))
                .column(col("narrow", VarChar(None), Gen::Length { min: 2 * n, max: 2 * n }, Nulls::Never)),
        );
    }
    common::assert_round_trip(&spec);
}

/// datetime2(7) at both ends of its range (0001-01-01 and the 9999-12-31 sentinel) and
/// datetimeoffset(7) over every year read as microsecond timestamps on request (the forge's
/// values, the 100 ns digit dropped), and are refused by name, naming the option, in the
/// default exact nanoseconds.
#[test]
fn timestamps_outside_nanoseconds_read_in_microseconds_on_request() {
    use arrow_array::{Array, Int32Array, StructArray, TimestampMicrosecondArray};
    use mdfkit::scan::Flow;
    use mdfkit::TimestampUnit;
    use mdfkit_forge::Val;
    const LAST_DAY: i64 = 3_652_058; // 9999-12-31, in days since 0001-01-01
    const DAYS_0001_TO_1970: i64 = 719_162;
    let key = col("id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let table = TableSpec::new("dbo", "Far", Layout::Clustered { key: 0 }, 40)
        .column(key)
        .column(col("first", ColType::DateTime2(7), Gen::Range { lo: 0, hi: 0 }, Nulls::Every(3)))
        .column(col("last", ColType::DateTime2(7), Gen::Range { lo: LAST_DAY, hi: LAST_DAY }, Nulls::Never))
        .column(col("zoned", ColType::DateTimeOffset(7), Gen::Random, Nulls::Every(4)));
    let s = Spec::new("forge_far", Version::V904, 7).table(table);
    let (db, _) = common::open(&s);
    let t = db.catalog().find_table("dbo.Far").unwrap();

    let refused = db.scan(&t).batches(|_| Ok(Flow::Continue)).unwrap_err();
    assert_eq!(refused.kind(), mdfkit::ErrorKind::Unsupported, "{refused}");
    assert!(refused.to_string().contains("--timestamps us"), "{refused}");

    let micros = |days: i64, units: u64| (days - DAYS_0001_TO_1970) * 86_400_000_000 + (units / 10) as i64;
    let expected: Vec<Vec<Option<i64>>> = mdfkit_forge::live_rows(&s, 0)
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Some(Val::Int(id)) => Some(*id),
                    Some(Val::DateTime2 { days, units } | Val::DateTimeOffset { days, units, .. }) => {
                        Some(micros(*days, *units))
                    }
                    None => None,
                    Some(other) => panic!("unexpected forge value {other:?}"),
                })
                .collect()
        })
        .collect();
    let mut got: Vec<Vec<Option<i64>>> = Vec::new();
    db.scan(&t)
        .timestamps(TimestampUnit::Microsecond)
        .batches(|b| {
            let ids = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            let first = b.column(1).as_any().downcast_ref::<TimestampMicrosecondArray>().unwrap();
            let last = b.column(2).as_any().downcast_ref::<TimestampMicrosecondArray>().unwrap();
            let zoned = b.column(3).as_any().downcast_ref::<StructArray>().unwrap();
            let utc = zoned.column(0).as_any().downcast_ref::<TimestampMicrosecondArray>().unwrap();
            for r in 0..b.num_rows() {
                let ts = |a: &TimestampMicrosecondArray, valid: bool| valid.then(|| a.value(r));
                got.push(vec![
                    Some(i64::from(ids.value(r))),
                    ts(first, first.is_valid(r)),
                    ts(last, last.is_valid(r)),
                    ts(utc, zoned.is_valid(r)),
                ]);
            }
            Ok(Flow::Continue)
        })
        .unwrap();
    assert_eq!(got, expected);
    // The ends of the range, as a calendar gives them: 0001-01-01 and 9999-12-31 at midnight.
    assert!(got.iter().any(|row| row[1].is_some_and(|us| us < -62_135_596_800_000_000 + 86_400_000_000)));
    assert!(got.iter().all(|row| row[2].is_some_and(|us| us >= 253_402_214_400_000_000)));
}
