//! Page anatomy of ROW and PAGE compressed pages: forged tables (the forge writes CD records, CI
//! structures with anchors and dictionaries, from the format as documented, without the reader)
//! taken apart page by page. Every byte of every CD record and CI structure is one field's; each
//! column's value equals the scan's for the same slot, and the rows the anatomy decodes are the
//! forge's inputs.

mod common;

use std::collections::HashMap;

use mdfkit::anatomy::{read_database_page, PageAnatomy, Part, RecordAnatomy};
use mdfkit::page::PageType;
use mdfkit::record::RecordType;
use mdfkit::recovery::list_pages;
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::PageId;
use mdfkit_forge::{
    forge, live_rows_text, ColType, ColumnSpec, Compression, Gen, Layout, Nulls, Spec, TableSpec, Version,
};

fn col(name: &str, ty: ColType, gen: Gen, nulls: Nulls) -> ColumnSpec {
    ColumnSpec::new(name, ty, gen, nulls)
}

/// Types with a compressed form of their own, NULLs, empty values, long and off-row values.
fn typed(t: TableSpec) -> TableSpec {
    use ColType::*;
    let r = Gen::Random;
    t.column(col("small", SmallInt, r.clone(), Nulls::Never))
        .column(col("big", BigInt, r.clone(), Nulls::Random(0.2)))
        .column(col("flag", Bit, r.clone(), Nulls::Every(3)))
        .column(col("price", Decimal(18, 2), r.clone(), Nulls::Every(4)))
        .column(col("cash", Money, r.clone(), Nulls::Every(6)))
        .column(col("measure", Float, r.clone(), Nulls::Never))
        .column(col("day", Date, r.clone(), Nulls::Every(8)))
        .column(col("stamp", DateTime2(3), r.clone(), Nulls::Never))
        .column(col("code", Char(6), r.clone(), Nulls::Every(4)))
        .column(col("title", NVarChar(Some(60)), r.clone(), Nulls::Random(0.3)))
        .column(col("id", UniqueIdentifier, r.clone(), Nulls::Every(10)))
        .column(col("zero", Int, Gen::Range { lo: 0, hi: 0 }, Nulls::Every(4)))
        .column(col("long_text", VarChar(Some(400)), Gen::Length { min: 9, max: 400 }, Nulls::Every(7)))
        .column(col("body", NVarChar(None), Gen::Length { min: 0, max: 12_000 }, Nulls::Every(3)))
}

/// 40 columns: two short data clusters (a cluster array byte in each region).
fn wide(mut t: TableSpec) -> TableSpec {
    for i in 0..40 {
        let (ty, gen) = match i % 3 {
            0 => (ColType::Int, Gen::Random),
            1 => (ColType::VarChar(Some(20)), Gen::Length { min: 0, max: 20 }),
            _ => (ColType::VarBinary(Some(16)), Gen::Length { min: 0, max: 16 }),
        };
        t = t.column(col(&format!("c{i}"), ty, gen, Nulls::Every(i % 5 + 2)));
    }
    t
}

fn spec() -> Spec {
    let key = col("ItemID", ColType::Int, Gen::Sequence { start: -50, step: 3 }, Nulls::Never);
    let compressed = |mut t: TableSpec, compression: Compression, ci_every: Option<u64>| {
        t.compression = compression;
        t.page_ci_every = ci_every;
        t
    };
    let heap = |name: &str| {
        let mut t = typed(TableSpec::new("dbo", name, Layout::Heap, 150));
        t.ghost_every = Some(7);
        t.forward_every = Some(5);
        t
    };
    Spec::new("anatomy_cd", Version::V904, 23)
        .table(compressed(heap("RowHeap"), Compression::Row, None))
        .table(compressed(heap("PageHeap"), Compression::Page, Some(2)))
        .table(compressed(
            typed(TableSpec::new("dbo", "PageClustered", Layout::Clustered { key: 0 }, 200).column(key.clone())),
            Compression::Page,
            Some(1),
        ))
        .table(compressed(
            wide(TableSpec::new("dbo", "PageWide", Layout::Clustered { key: 0 }, 120).column(key)),
            Compression::Page,
            Some(1),
        ))
}

/// The fields of `r` follow each other from its first byte to its last, none left undecoded.
fn assert_covered(what: &str, r: &RecordAnatomy, a: &PageAnatomy) {
    let mut at = r.offset;
    for f in a.record_fields(r) {
        assert_eq!(f.offset, at, "{what}: {} starts at {}, expected {at}", a.field_name(f), f.offset);
        assert_ne!(f.part, Part::Undecoded, "{what}: {} ({} bytes) left undecoded", a.field_name(f), f.len);
        at += f.len;
    }
    assert_eq!(at, r.offset + r.len, "{what}: the fields add up to the record");
    for (c, layout) in a.record_columns(r).iter().zip(&a.columns) {
        // A column's stored bytes are exactly one field's.
        if let Some((offset, len)) = c.span {
            assert!(
                a.record_fields(r).iter().any(|f| f.offset == offset && f.len == len),
                "{what}: column {}'s bytes {offset}+{len} are no field's",
                layout.name
            );
        }
    }
}

#[test]
fn compressed_pages_are_taken_apart_byte_by_byte_into_the_forges_rows() {
    let spec = spec();
    let files = forge(&spec).expect("forge");
    let source = std::sync::Arc::new(
        mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect()).unwrap(),
    );
    let db = mdfkit::Database::from_source(source.clone()).unwrap();
    let pages = list_pages(db.reader().source(), |s| s.page_type == PageType::Data);
    for (i, t) in spec.tables.iter().enumerate() {
        let name = t.qualified_name();
        let table = db.catalog().find_table(&name).unwrap();
        let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
        let mut scanned: HashMap<(PageId, u16), Vec<String>> = HashMap::new();
        let mut values = Vec::new();
        db.scan(&table)
            .records(|record, at| {
                decoder.decode(record, &mut values)?;
                scanned.insert((at.page, at.slot), values.iter().map(Value::to_string).collect());
                Ok(Flow::Continue)
            })
            .unwrap();
        let (mut rows, mut with_ci, mut entries, mut compared, mut stubs) = (Vec::new(), 0, 0, 0, 0);
        for s in &pages {
            let a = read_database_page(&db, s.id).unwrap();
            if a.owner.as_deref() != Some(name.as_str()) {
                continue;
            }
            assert!(a.error.is_none(), "{name} page {}: {:?}", s.id, a.error);
            if !a.compression_info.is_empty() {
                with_ci += 1;
                let size = a.compression_info.iter().map(|f| f.len).sum::<usize>();
                let mut at = 96;
                for f in &a.compression_info {
                    assert_eq!(f.offset, at, "{name} page {}: CI field {}", s.id, a.field_name(f));
                    assert_ne!(f.part, Part::Undecoded, "{name} page {}: CI bytes left undecoded", s.id);
                    at += f.len;
                }
                assert_eq!(a.records.iter().map(|r| r.offset).min(), Some(96 + size), "records follow the CI");
                entries +=
                    a.compression_info.iter().filter(|f| a.field_name(f).starts_with("dictionary entry ")).count();
            }
            for r in &a.records {
                let what = format!("{name} page {} slot {}", s.id, r.slot);
                assert!(r.error.is_none(), "{what}: {:?}", r.error);
                assert_covered(&what, r, &a);
                if r.record_type == Some(RecordType::ForwardingStub) {
                    stubs += 1;
                    continue;
                }
                assert_eq!(a.field_name(&a.record_fields(r)[0]), "header", "{what}: a CD record's header byte first");
                let codes = a.record_fields(r).iter().filter(|f| f.part == Part::CdArray).count();
                assert_eq!(codes, t.columns.len().div_ceil(2), "{what}: a CD array byte for every two columns");
                let row: Vec<String> = a
                    .record_columns(r)
                    .iter()
                    .map(|c| c.value.as_ref().map(Value::to_string).unwrap_or_else(|e| panic!("{what}: {e}")))
                    .collect();
                if let Some(scan) = scanned.get(&(s.id, r.slot)) {
                    assert_eq!(&row, scan, "{what}: the anatomy's values are the scan's");
                    compared += 1;
                }
                if r.record_type != Some(RecordType::GhostData) {
                    rows.push(row);
                }
            }
        }
        let mut expected: Vec<Vec<String>> = live_rows_text(&spec, i).collect();
        rows.sort();
        expected.sort();
        assert_eq!(rows.len(), expected.len(), "{name}: live rows taken apart");
        assert!(rows == expected, "{name}: the rows taken apart are the forge's");
        assert!(
            compared + stubs > 0 && compared >= expected.len() - stubs,
            "{name}: {compared} compared with the scan"
        );
        match t.compression {
            Compression::Page => assert!(with_ci > 0 && entries > 0, "{name}: {with_ci} CI pages, {entries} entries"),
            _ => assert_eq!(with_ci, 0, "{name}: a ROW compressed page has no CI structure"),
        }
        if t.forward_every.is_some() {
            assert!(stubs > 0, "{name}: forwarding stubs taken apart");
        }
    }
}

/// The corpus' real compressed tables (every `mdf/` file's, system tables included, and
/// improvedk's backup, the demo of a talk on row and page compression): each data page of theirs
/// taken apart as above, its values equal to the scan's. Says which it found.
#[test]
fn real_compressed_pages_are_taken_apart_as_the_scan_reads_them() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut files: Vec<_> = common::manifest(&dir.join("MANIFEST.tsv"))
        .into_iter()
        .filter(|r| r.kind == "mdf")
        .map(|r| dir.join(r.file))
        .collect();
    files.push(dir.join("incoming/bak/improvedk-improve.dk__data.bak"));
    let (mut tables_seen, mut pages_seen, mut records_seen) = (Vec::new(), 0, 0);
    for path in &files {
        let Ok(db) = mdfkit::Database::open(&[path]) else { continue };
        let units = &db.catalog().base().allocation_units;
        for table in db.catalog().tables(true) {
            for p in table.partitions.iter().filter(|p| p.data_compression > 0) {
                let Ok(decoder) = db.row_decoder(&table, p.partition_id, None) else { continue };
                let mut scanned: HashMap<(PageId, u16), Vec<String>> = HashMap::new();
                let mut values = Vec::new();
                let _ = db.scan(&table).partition_records(p, |record, at| {
                    decoder.decode(record, &mut values)?;
                    scanned.insert((at.page, at.slot), values.iter().map(Value::to_string).collect());
                    Ok(Flow::Continue)
                });
                let ids: Vec<i64> =
                    units.iter().filter(|u| u.owner_id == p.partition_id && u.kind == 1).map(|u| u.id).collect();
                let pages = list_pages(db.reader().source(), |s| {
                    s.page_type == PageType::Data && s.level == 0 && ids.contains(&s.allocation_unit_id)
                });
                tables_seen.push(format!("{} {}: {} pages", path.display(), table.qualified_name(), pages.len()));
                for s in pages.iter().take(200) {
                    let a = read_database_page(&db, s.id).unwrap();
                    pages_seen += 1;
                    for r in &a.records {
                        let what = format!("{} page {} slot {}", path.display(), s.id, r.slot);
                        assert!(r.error.is_none(), "{what}: {:?}", r.error);
                        assert_covered(&what, r, &a);
                        records_seen += 1;
                        if let Some(scan) = scanned.get(&(s.id, r.slot)) {
                            let row: Vec<String> = a
                                .record_columns(r)
                                .iter()
                                .map(|c| c.value.as_ref().map_or_else(|e| e.to_string(), Value::to_string))
                                .collect();
                            assert_eq!(&row, scan, "{what}");
                        }
                    }
                }
            }
        }
    }
    println!(
        "{} compressed tables or partitions in the corpus; {pages_seen} data pages, {records_seen} records taken apart",
        tables_seen.len()
    );
    for t in tables_seen.iter().filter(|t| !t.ends_with(": 0 pages")) {
        println!("  {t}");
    }
    if pages_seen == 0 {
        eprintln!(
            "\n*** NOTE: no compressed table of the corpus holds a data page: only forged pages were taken apart ***\n"
        );
    }
}

/// A PAGE and a ROW compressed clustered index deep enough for two levels above its leaves: the
/// forge writes their index records in the CD format (the key, then the child page). Walked
/// from the root through the anatomy, every index record's child page is the next page of the
/// leaf chain (or of the level below) in order, and its key is the compressed form of the first
/// key of that page; `check` finds nothing, and names an index record that lost its child page.
#[test]
fn compressed_index_levels_hold_the_forges_keys_and_child_pages() {
    let deep = |name: &str, compression: Compression| {
        let mut t = TableSpec::new("dbo", name, Layout::Clustered { key: 0 }, 1300)
            .column(col("ItemID", ColType::Int, Gen::Sequence { start: 1000, step: 7 }, Nulls::Never))
            .column(col("pad", ColType::VarChar(Some(3800)), Gen::Length { min: 3500, max: 3800 }, Nulls::Never));
        t.compression = compression;
        t.page_ci_every = Some(3);
        t
    };
    let spec = Spec::new("deep_cd", Version::V904, 5)
        .table(deep("DeepPage", Compression::Page))
        .table(deep("DeepRow", Compression::Row));
    let files = forge(&spec).expect("forge");
    let open = |files: &[mdfkit_forge::ForgedFile]| {
        let source = std::sync::Arc::new(
            mdfkit::source::DataFiles::from_memory(files.iter().map(|f| (f.name.clone(), f.bytes.clone())).collect())
                .unwrap(),
        );
        (mdfkit::Database::from_source(source.clone()).unwrap(), source)
    };
    let (db, source) = open(&files);
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
    let mut damage_at = None;
    for t in &spec.tables {
        let name = t.qualified_name();
        let table = db.catalog().find_table(&name).unwrap();
        let unit = db
            .catalog()
            .base()
            .allocation_units
            .iter()
            .find(|u| u.owner_id == table.partitions[0].partition_id && u.kind == 1)
            .unwrap()
            .clone();
        // The leaf chain, and each leaf page's first key.
        let (mut leaves, mut first_keys, mut first_ids) = (Vec::new(), HashMap::new(), HashMap::new());
        let mut next = unit.first_page;
        while !next.is_null() {
            let a = read_database_page(&db, next).unwrap();
            let key = a.record_columns(&a.records[0])[0].value.clone().unwrap();
            let Value::Int(key) = key else { panic!("{name} {next}: key {key:?}") };
            let Some(mdfkit_forge::cd::CdCell::Bytes(stored)) =
                mdfkit_forge::cd::compress(&mdfkit_forge::Val::Int(key), ColType::Int)
            else {
                panic!("{key} has a compressed form")
            };
            first_keys.insert(next, stored);
            first_ids.insert(next, key);
            leaves.push(next);
            next = a.header.unwrap().next_page;
        }
        let root = read_database_page(&db, unit.root_page).unwrap();
        let levels = root.header.unwrap().level;
        assert!(levels >= 2, "{name}: root at level {levels}, {} leaf pages", leaves.len());
        let mut pages = vec![unit.root_page];
        for level in (1..=levels).rev() {
            let mut below = Vec::new();
            for &id in &pages {
                let a = read_database_page(&db, id).unwrap();
                let h = a.header.unwrap();
                assert_eq!((h.page_type, h.level), (PageType::Index, level), "{name} {id}");
                for r in &a.records {
                    let what = format!("{name} index page {id} slot {}", r.slot);
                    assert!(r.error.is_none(), "{what}: {:?}", r.error);
                    assert_eq!(r.record_type, Some(RecordType::Index), "{what}");
                    assert_covered(&what, r, &a);
                    let down = a.record_fields(r).iter().find(|f| a.field_name(f) == "down page").expect("a down page");
                    let mdfkit::anatomy::FieldValue::Page(child) = down.value else { panic!("{what}") };
                    // The key, named and decoded as the clustered key column.
                    let key = a.record_fields(r).iter().find(|f| a.field_name(f) == "ItemID").expect("a key");
                    if let Some(id) = first_ids.get(&child) {
                        assert_eq!(
                            a.record_columns(r)[0].value,
                            Ok(Value::Int(*id)),
                            "{what}: the key of child {child}"
                        );
                    }
                    let key_bytes = a.bytes[key.offset..key.offset + key.len].to_vec();
                    // The child's first key: a leaf's first row, or the first record of an index page.
                    let want = match first_keys.get(&child) {
                        Some(k) => k.clone(),
                        None => {
                            let c = read_database_page(&db, child).unwrap();
                            let f =
                                c.record_fields(&c.records[0]).iter().find(|f| c.field_name(f) == "ItemID").unwrap();
                            c.bytes[f.offset..f.offset + f.len].to_vec()
                        }
                    };
                    assert_eq!(key_bytes, want, "{what}: the key of child {child}");
                    below.push(child);
                    damage_at.get_or_insert((id, down.offset - r.offset, r.offset));
                }
            }
            pages = below;
        }
        assert_eq!(pages, leaves, "{name}: the index reaches every leaf once, in chain order");
    }
    // An index record whose child page lost its six-byte code: a problem on its page and slot.
    let (page, _, record) = damage_at.unwrap();
    let mut damaged = files.clone();
    let file = damaged.iter_mut().find(|f| f.name.ends_with(".mdf")).unwrap();
    let at = page.page as usize * 8192;
    let bytes = &mut file.bytes[at..at + 8192];
    // The CD array's byte of columns 1 and 2: the child page's code 7 becomes 8 (seven bytes).
    bytes[record + 2] = (bytes[record + 2] & 0x0f) | 0x80;
    if u16::from_le_bytes([bytes[4], bytes[5]]) & 0x200 != 0 {
        let sum = mdfkit::page::protection::page_checksum(bytes);
        bytes[60..64].copy_from_slice(&sum.to_le_bytes());
    }
    let (_, source) = open(&damaged);
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert!(problems.iter().any(|p| p.page == Some(page) && p.what.contains("without a child page")), "{problems:?}");
}
