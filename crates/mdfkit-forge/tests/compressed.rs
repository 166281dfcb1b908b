//! ROW compressed tables written by the forge (CD records, from the format as documented) read
//! back as the values the forge generated: every type, NULLs, empty values and zeros, more than
//! 30 columns (short and long cluster arrays), long data, row-overflow and LOB pointers, ghosts
//! and forwarded records, columns added later; through records, Arrow batches on one and several
//! threads, and with ghosts included.

mod common;

use arrow_array::{Array, Int32Array};
use mdfkit::scan::Flow;
use mdfkit_forge::{live_rows, ColType, ColumnSpec, Compression, Gen, Layout, Nulls, Spec, TableSpec, Val, Version};

fn col(name: &str, ty: ColType, gen: Gen, nulls: Nulls) -> ColumnSpec {
    ColumnSpec::new(name, ty, gen, nulls)
}

/// Every type a compressed table stores in a documented form (smalldatetime's is not).
fn every_type(t: TableSpec) -> TableSpec {
    use ColType::*;
    let r = Gen::Random;
    t.column(col("tiny", TinyInt, r.clone(), Nulls::Every(5)))
        .column(col("small", SmallInt, r.clone(), Nulls::Never))
        .column(col("whole", Int, r.clone(), Nulls::Every(9)))
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
        .column(col("code", Char(6), r.clone(), Nulls::Every(4)))
        .column(col("label", VarChar(Some(50)), r.clone(), Nulls::Every(5)))
        .column(col("wide_code", NChar(4), r.clone(), Nulls::Never))
        .column(col("title", NVarChar(Some(60)), r.clone(), Nulls::Random(0.3)))
        .column(col("blob", Binary(5), r.clone(), Nulls::Every(6)))
        .column(col("bytes", VarBinary(Some(30)), r.clone(), Nulls::Never))
        .column(col("id", UniqueIdentifier, r.clone(), Nulls::Every(10)))
        // Zeros and empty values: the CD code "empty", no bytes.
        .column(col("zero", Int, Gen::Range { lo: 0, hi: 0 }, Nulls::Every(4)))
        .column(col("zero_money", Money, Gen::Range { lo: 0, hi: 0 }, Nulls::Never))
        .column(col("empty", VarChar(Some(10)), Gen::Length { min: 0, max: 0 }, Nulls::Every(3)))
        .column(col("empty_n", NVarChar(Some(10)), Gen::Length { min: 0, max: 0 }, Nulls::Never))
        // Longer than 8 bytes: the long data region; (max) values in row, as LOB roots and pointers.
        .column(col("long_text", VarChar(Some(400)), Gen::Length { min: 9, max: 400 }, Nulls::Every(7)))
        .column(col("notes", VarChar(None), Gen::Length { min: 0, max: 300 }, Nulls::Every(4)))
        .column(col("body", NVarChar(None), Gen::Length { min: 0, max: 20_000 }, Nulls::Every(3)))
        .column(col("image", VarBinary(None), Gen::Length { min: 7000, max: 90_000 }, Nulls::Every(5)))
}

/// 70 integer and text columns: three clusters of the short data region, two cluster-array bytes.
fn many_columns(mut t: TableSpec) -> TableSpec {
    for i in 0..70 {
        let (ty, gen) = match i % 3 {
            0 => (ColType::Int, Gen::Random),
            1 => (ColType::NVarChar(Some(20)), Gen::Length { min: 0, max: 20 }),
            _ => (ColType::VarBinary(Some(16)), Gen::Length { min: 0, max: 16 }),
        };
        t = t.column(col(&format!("c{i}"), ty, gen, Nulls::Every(i % 5 + 2)));
    }
    t
}

fn spec() -> Spec {
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: -50, step: 3 }, Nulls::Never);
    let row = |mut t: TableSpec| {
        t.compression = Compression::Row;
        t
    };
    Spec::new("forge_row", Version::V904, 17)
        .table(row(every_type(
            TableSpec::new("dbo", "Clustered", Layout::Clustered { key: 0 }, 300).column(key.clone()),
        )))
        .table(row({
            let mut t = every_type(TableSpec::new("dbo", "Heap", Layout::Heap, 250));
            t.ghost_every = Some(7);
            t.forward_every = Some(5);
            t
        }))
        .table(row(many_columns(TableSpec::new("dbo", "Many", Layout::Clustered { key: 0 }, 200).column(key.clone()))))
        .table(row({
            // Rows too wide for a page: varchar(n) values go to row-overflow pages.
            let mut t = TableSpec::new("dbo", "Wide", Layout::Clustered { key: 0 }, 40).column(key.clone());
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
        }))
        .table(row({
            let mut t = TableSpec::new("dbo", "Added", Layout::Heap, 90)
                .column(col("Old", ColType::VarChar(Some(20)), Gen::Random, Nulls::Every(3)))
                .column(col("Qty", ColType::Int, Gen::Random, Nulls::Never).with_default(Val::Int(7)))
                .column(col("Later", ColType::Date, Gen::Random, Nulls::Every(5)));
            t.added_after = Some((1, 40));
            t
        }))
}

#[test]
fn row_compressed_tables_round_trip() {
    common::assert_round_trip(&spec());
}

#[test]
fn row_compressed_tables_say_so_in_the_catalog() {
    let (db, _) = common::open(&spec());
    for t in db.catalog().tables(false) {
        assert_eq!(t.partitions[0].data_compression, 1, "{}", t.qualified_name());
        assert_eq!(t.compression_names(), ["ROW"]);
        assert!(!t.has_vardecimal, "compressed decimals are not the vardecimal storage format");
        let sql = db.catalog().create_table_sql(&t);
        assert!(sql.contains("\n) WITH (DATA_COMPRESSION = ROW);"), "{sql}");
    }
}

/// The same rows through Arrow batches, on one thread and on four, as through records.
#[test]
fn batches_hold_the_generated_values() {
    let mut spec = spec();
    // Arrow keeps datetime2(7) as nanoseconds since 1970: random years 0001-9999 do not fit
    // (columnar.rs overflows on them, compressed or not: reported to the lead, not changed here).
    for t in &mut spec.tables {
        t.columns.retain(|c| c.ty != ColType::DateTime2(7));
    }
    let (db, _) = common::open(&spec);
    for (i, t) in spec.tables.iter().enumerate() {
        let table = db.catalog().find_table(&t.qualified_name()).unwrap();
        let expected = live_rows(&spec, i).count();
        for threads in [1, 4] {
            let mut rows = 0;
            db.scan(&table)
                .threads(threads)
                .batch_size(64)
                .batches(|batch| {
                    rows += batch.num_rows();
                    Ok(Flow::Continue)
                })
                .unwrap_or_else(|e| panic!("{}: {e}", t.qualified_name()));
            assert_eq!(rows, expected, "{} on {threads} threads", t.qualified_name());
        }
        // An int column's values (key order, or as a multiset for heaps) equal the generated ones.
        let Some(k) = t.columns.iter().position(|c| c.ty == ColType::Int) else { continue };
        let mut got: Vec<Option<i32>> = Vec::new();
        db.scan(&table)
            .batches(|batch| {
                let index = batch.schema().index_of(&t.columns[k].name).unwrap();
                let ints = batch.column(index).as_any().downcast_ref::<Int32Array>().unwrap();
                got.extend(ints.iter());
                Ok(Flow::Continue)
            })
            .unwrap();
        let mut want: Vec<Option<i32>> = live_rows(&spec, i)
            .map(|row| match &row[k] {
                Some(Val::Int(v)) => Some(*v as i32),
                None => None,
                other => panic!("{other:?}"),
            })
            .collect();
        if t.layout == Layout::Heap {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{}.{}", t.qualified_name(), t.columns[k].name);
    }
}

/// Arrow batches of compressed pages decoded column by column (`mdfkit::cd_pages`, which every
/// table here takes) equal the row-by-row path's, every type, on one thread and on four: ROW
/// compressed tables (ghosts, forwarded rows, row-overflow and LOB values, a column added later,
/// 70 columns) and PAGE compressed ones with no CI structure, with one on every page and on every
/// third page (anchor prefixes and dictionary symbols).
#[test]
fn batches_by_column_equal_the_row_by_row_path() {
    for mut spec in [spec(), page_spec(None), page_spec(Some(1)), page_spec(Some(3))] {
        // Random datetime2(7) years do not fit Arrow's nanoseconds (see above).
        for t in &mut spec.tables {
            t.columns.retain(|c| c.ty != ColType::DateTime2(7));
        }
        let (db, _) = common::open(&spec);
        for (i, t) in spec.tables.iter().enumerate() {
            let name = t.qualified_name();
            let table = db.catalog().find_table(&name).unwrap();
            let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
            assert!(mdfkit::cd_pages::CdLayout::of(&decoder).is_some(), "{name} takes the column path");
            let mut rows = mdfkit::columnar::BatchBuilder::new(&decoder, 64, mdfkit::TimestampUnit::Nanosecond);
            db.scan(&table)
                .records(|record, _| {
                    rows.append(&decoder, record)?;
                    Ok(Flow::Continue)
                })
                .unwrap();
            let expected = rows.finish().unwrap();
            assert_eq!(expected.num_rows(), live_rows(&spec, i).count(), "{name}");
            for threads in [1, 4] {
                let mut at = 0;
                db.scan(&table)
                    .threads(threads)
                    .batch_size(50)
                    .batches(|batch| {
                        assert_eq!(
                            batch,
                            expected.slice(at, batch.num_rows()),
                            "{name}: rows from {at}, {threads} threads"
                        );
                        at += batch.num_rows();
                        Ok(Flow::Continue)
                    })
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(at, expected.num_rows(), "{name} on {threads} threads");
            }
        }
    }
}

/// Ghost records of a compressed heap come back when asked for, marked as ghosts.
#[test]
fn ghosts_of_a_compressed_heap_are_returned_when_asked_for() {
    let spec = spec();
    let (db, _) = common::open(&spec);
    let table = db.catalog().find_table("dbo.Heap").unwrap();
    let (mut live, mut ghosts) = (0, 0);
    db.scan(&table)
        .include_ghosts(true)
        .records(|_, location| {
            if location.ghost {
                ghosts += 1;
            } else {
                live += 1;
            }
            Ok(Flow::Continue)
        })
        .unwrap();
    assert_eq!(live, 250);
    // Every 7th generated row is a ghost: 250 live rows take 291 generated, 41 of them ghosts.
    assert_eq!(ghosts, 41);
}

/// PAGE compressed tables: every record in the CD format; `ci_every` data pages also start with
/// a CI structure (anchor record and dictionary), their values stored against it.
fn page_spec(ci_every: Option<u64>) -> Spec {
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let mut t = every_type(TableSpec::new("dbo", "Paged", Layout::Clustered { key: 0 }, 300).column(key));
    t.compression = Compression::Page;
    t.page_ci_every = ci_every;
    Spec::new("forge_page", Version::V904, 23).table(t)
}

fn open_bytes(files: Vec<mdfkit_forge::ForgedFile>) -> (mdfkit::Database, std::sync::Arc<mdfkit::source::DataFiles>) {
    let source = std::sync::Arc::new(
        mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect()).unwrap(),
    );
    (mdfkit::Database::from_source(source.clone()).unwrap(), source)
}

/// The forged data pages that start with a CI structure (header type bit 0x80): their numbers.
fn pages_with_ci(file: &[u8]) -> Vec<usize> {
    (0..file.len() / 8192).filter(|&p| file[p * 8192 + 1] == 1 && file[p * 8192 + 2] & 0x80 != 0).collect()
}

#[test]
fn page_compressed_pages_without_a_ci_structure_read_as_row_compressed() {
    let spec = page_spec(None);
    common::assert_round_trip(&spec);
    let (db, _) = common::open(&spec);
    let t = db.catalog().find_table("dbo.Paged").unwrap();
    assert_eq!(t.compression_names(), ["PAGE"]);
    assert!(db.catalog().create_table_sql(&t).contains(") WITH (DATA_COMPRESSION = PAGE);"));
}

#[test]
fn pages_with_a_ci_structure_read_every_row_and_are_checked() {
    let spec = page_spec(Some(3));
    let files = mdfkit_forge::forge(&spec).unwrap();
    let ci_pages = pages_with_ci(&files[0].bytes);
    assert!(ci_pages.len() >= 3, "{ci_pages:?}");
    // Anchor records and dictionaries (header 0x06) that the records' values use.
    assert!(ci_pages.iter().all(|&p| files[0].bytes[p * 8192 + 96] == 0x06), "{ci_pages:?}");
    common::assert_round_trip(&spec);
    let (db, source) = open_bytes(files.clone());

    // The CI structures are sound.
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
    let (problems, _) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(problems.is_empty(), "{problems:?}");

    // A dictionary emptied under its records: their symbols point past it, damage named by page
    // and slot (the page's first row, whose values make the dictionary, uses it), skipped by
    // salvage.
    let mut emptied = files.clone();
    let p = ci_pages[0];
    let page = &mut emptied[0].bytes[p * 8192..(p + 1) * 8192];
    let dictionary_at = 96 + usize::from(u16::from_le_bytes([page[96 + 3], page[96 + 4]]));
    page[dictionary_at..dictionary_at + 2].copy_from_slice(&0u16.to_le_bytes());
    mdfkit_forge::page::seal(page);
    let (db, source) = open_bytes(emptied);
    let table = db.catalog().find_table("dbo.Paged").unwrap();
    let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
    let mut values = Vec::new();
    let err = db
        .scan(&table)
        .records(|record, _| {
            decoder.decode(record, &mut values)?;
            Ok(Flow::Continue)
        })
        .unwrap_err();
    assert_eq!(err.kind(), mdfkit::ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("past the page's 0 dictionary entries"), "{err}");
    assert_eq!(err.page().map(|id| id.page as usize), Some(p), "{err}");
    assert_eq!(err.slot(), Some(0), "{err}");
    // The same damage through Arrow batches, column by column (`cd_pages`): named by page and
    // slot too, whichever column meets it first (microsecond timestamps: the random datetime2
    // values span every year).
    let err =
        db.scan(&table).timestamps(mdfkit::TimestampUnit::Microsecond).batches(|_| Ok(Flow::Continue)).unwrap_err();
    assert_eq!(err.kind(), mdfkit::ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("past the page's 0 dictionary entries"), "{err}");
    assert_eq!(err.page().map(|id| id.page as usize), Some(p), "{err}");
    assert!(err.slot().is_some(), "{err}");
    let mut salvaged = 0;
    let stats = db
        .scan(&table)
        .salvage(true)
        .records(|record, _| {
            decoder.decode(record, &mut values)?;
            salvaged += 1;
            Ok(Flow::Continue)
        })
        .unwrap();
    assert!(!stats.skipped.is_empty() && salvaged + stats.skipped.len() == 300, "{salvaged} {:?}", stats.skipped);
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert!(
        !problems.is_empty() && problems.iter().all(|q| q.page.map(|id| id.page as usize) == Some(p)),
        "{problems:?}"
    );
    assert!(problems[0].what.contains("slot 0: column"), "{problems:?}");

    // A CI structure claiming more bytes than the page holds is a damaged page.
    let mut damaged = files;
    let p = ci_pages[0];
    let page = &mut damaged[0].bytes[p * 8192..(p + 1) * 8192];
    page[96 + 3..96 + 5].copy_from_slice(&9000u16.to_le_bytes());
    mdfkit_forge::page::seal(page);
    let (_, source) = open_bytes(damaged);
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].page.map(|id| id.page as usize), Some(p));
    assert!(problems[0].what.contains("compression information structure"), "{problems:?}");
}

/// The demo's readings table three times: each copy reads back the generated rows (the same
/// rows: one table's values), the catalog names each copy's compression, and the compressed
/// copies take fewer pages.
#[test]
fn the_demo_holds_one_table_uncompressed_row_and_page_compressed() {
    let spec = mdfkit_forge::samples::demo();
    common::assert_round_trip(&spec);
    let index = |name: &str| spec.tables.iter().position(|t| t.qualified_name() == name).unwrap();
    let plain: Vec<_> = live_rows(&spec, index("sales.Readings")).collect();
    let (db, _) = common::open(&spec);
    let readings = db.catalog().find_table("sales.Readings").unwrap();
    assert_eq!(readings.compression_names(), ["NONE"]);
    for (name, compression) in [("sales.ReadingsRow", "ROW"), ("sales.ReadingsPage", "PAGE")] {
        assert!(live_rows(&spec, index(name)).eq(plain.iter().cloned()), "{name}: the same generated rows");
        let table = db.catalog().find_table(name).unwrap();
        assert_eq!(table.compression_names(), [compression]);
        assert!(table.used_pages() < readings.used_pages(), "{name}: {} pages", table.used_pages());
    }
}
