//! ROW and PAGE compressed nonclustered indexes: forged tables (heaps and clustered, compressed
//! or not) with unique and non-unique indexes, included columns, trees of several levels. The
//! forge writes them from the format as documented, without the reader; here the reader walks
//! them: every leaf record's key and included values are the forge's inputs, every row locator
//! (heap RID, clustered key) leads to the row those values came from, `check` finds nothing, a
//! damaged record is named by page and slot, and the anatomy of every index page covers every
//! byte of its records with decoded columns. The uncompressed nonclustered indexes SQL Server
//! wrote in the corpus' pubs are read the same way: their values are their tables'.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use mdfkit::anatomy::{read_database_page, Part};
use mdfkit::catalog::model::IndexInfo;
use mdfkit::index_rows::{IndexColumnRole, IndexRows};
use mdfkit::record::cd::CdRecord;
use mdfkit::record::Record;
use mdfkit::value::Value;
use mdfkit::{Database, PageId, TableInfo};
use mdfkit_forge::{
    forge, live_rows_text, ColType, ColumnSpec, Compression, ForgedFile, Gen, IndexSpec, Layout, Nulls, Spec,
    TableSpec, Version,
};

fn col(name: &str, ty: ColType, gen: Gen, nulls: Nulls) -> ColumnSpec {
    ColumnSpec::new(name, ty, gen, nulls)
}

fn index(name: &str, keys: &[usize], include: &[usize], unique: bool, compression: Compression) -> IndexSpec {
    let mut ix = IndexSpec::new(name, keys, compression);
    ix.include = include.to_vec();
    ix.unique = unique;
    ix
}

/// At most `n` records a page: a tree of several levels from a few hundred rows.
fn deep(mut ix: IndexSpec, n: u16) -> IndexSpec {
    ix.rows_per_page = Some(n);
    ix
}

fn spec() -> Spec {
    use ColType::*;
    let mut heap = TableSpec::new("dbo", "RowHeap", Layout::Heap, 300)
        .column(col("grp", Int, Gen::Range { lo: 0, hi: 25 }, Nulls::Every(11)))
        .column(col("serial", BigInt, Gen::Sequence { start: 5000, step: -3 }, Nulls::Never))
        .column(col("note", VarChar(Some(30)), Gen::Length { min: 0, max: 30 }, Nulls::Every(4)))
        .column(col("amount", Decimal(12, 2), Gen::Random, Nulls::Every(5)))
        .column(col("pad", VarChar(Some(200)), Gen::Length { min: 150, max: 200 }, Nulls::Never))
        .index(index("IX_grp", &[0], &[2], false, Compression::Row))
        .index(deep(index("UX_serial", &[1], &[3], true, Compression::Page), 3));
    heap.compression = Compression::Row;
    heap.ghost_every = Some(7);
    heap.forward_every = Some(5);
    let mut clustered = TableSpec::new("dbo", "PageClustered", Layout::Clustered { key: 0 }, 400)
        .column(col("ItemID", Int, Gen::Sequence { start: -50, step: 3 }, Nulls::Never))
        .column(col("grp", SmallInt, Gen::Range { lo: -5, hi: 5 }, Nulls::Every(9)))
        .column(col("code", BigInt, Gen::Sequence { start: 10_000, step: -7 }, Nulls::Never))
        .column(col("title", NVarChar(Some(40)), Gen::Random, Nulls::Random(0.2)))
        .column(col("flag", Bit, Gen::Random, Nulls::Never))
        .index(deep(index("IX_grp", &[1], &[3, 4], false, Compression::Row), 4))
        .index(index("UX_code", &[2], &[3], true, Compression::Page))
        .index(index("IX_grp_item", &[1, 0], &[], false, Compression::Row));
    clustered.compression = Compression::Page;
    clustered.page_ci_every = Some(2);
    clustered.ghost_every = Some(13);
    // A plain table with a compressed index: DATA_COMPRESSION is an index's own.
    let plain = TableSpec::new("dbo", "PlainHeap", Layout::Heap, 120)
        .column(col("n", Int, Gen::Random, Nulls::Every(6)))
        .column(col("label", VarChar(Some(20)), Gen::Length { min: 1, max: 20 }, Nulls::Never))
        .index(deep(index("IX_n", &[0], &[1], false, Compression::Page), 5));
    Spec::new("cdindex", Version::V904, 41).table(heap).table(clustered).table(plain)
}

fn open(files: Vec<ForgedFile>) -> Database {
    let source =
        mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect()).unwrap();
    Database::from_source(Arc::new(source)).unwrap()
}

/// The index named `name` of `table` and its one partition's records.
fn index_rows(db: &Database, table: &TableInfo, name: &str) -> (IndexInfo, IndexRows) {
    let index = db.catalog().indexes(table.object_id).into_iter().find(|i| i.name == name).unwrap();
    let rowset = db
        .catalog()
        .rows_where("sysrowsets", "idmajor", i64::from(table.object_id))
        .into_iter()
        .find(|r| r.int("idminor") == i64::from(index.index_id))
        .unwrap()
        .int("rowsetid");
    let rows = IndexRows::new(db.catalog(), db.reader(), table, &index, rowset).unwrap();
    (index, rows)
}

/// One leaf record: where it is and its values in record order.
struct LeafRecord {
    page: PageId,
    slot: u16,
    values: Vec<Value>,
}

/// The leaf records of an index in key order (down the first child of each level from the
/// root, then along the leaf chain), and the root's level.
fn leaf_records(db: &Database, rows: &IndexRows) -> (Vec<LeafRecord>, u8) {
    walk_leaves(db, rows, true)
}

/// [`leaf_records`] of an uncompressed index (FixedVar records).
fn leaf_records_fixed(db: &Database, rows: &IndexRows) -> (Vec<LeafRecord>, u8) {
    walk_leaves(db, rows, false)
}

fn walk_leaves(db: &Database, rows: &IndexRows, cd: bool) -> (Vec<LeafRecord>, u8) {
    let unit = db.catalog().base().in_row_unit(rows.rowset).unwrap();
    let mut page = db.reader().read(unit.root_page).unwrap();
    let root_level = page.header().level;
    while page.header().level > 0 {
        let bytes = page.slot_bytes(0).unwrap().unwrap();
        let child = if cd {
            CdRecord::parse(bytes).unwrap().down_page()
        } else {
            Record::parse_index(bytes, page.header().pminlen).unwrap().down_page()
        };
        page = db.reader().read(child.unwrap()).unwrap();
    }
    let mut out = Vec::new();
    loop {
        for slot in 0..page.header().slot_count {
            let bytes = page.slot_bytes(slot).unwrap().unwrap();
            let mut values = Vec::new();
            if cd {
                let cd = CdRecord::parse(bytes).unwrap();
                rows.decoder(0).decode(&Record::from_cd(&cd, None), &mut values).unwrap();
            } else {
                let record = Record::parse_index(bytes, page.header().pminlen).unwrap();
                rows.decoder(0).decode(&record, &mut values).unwrap();
            }
            out.push(LeafRecord { page: page.id(), slot, values });
        }
        let next = page.header().next_page;
        if next.is_null() {
            return (out, root_level);
        }
        page = db.reader().read(next).unwrap();
    }
}

/// The table's row at heap RID `rid`, forwarding stubs followed, decoded whole.
fn row_at_rid(db: &Database, table: &TableInfo, rid: &[u8]) -> Vec<Value> {
    let mut page = db.reader().read(PageId::from_bytes(&rid[..6]).unwrap()).unwrap();
    let mut slot = u16::from_le_bytes([rid[6], rid[7]]);
    let compressed = table.partitions[0].data_compression > 0;
    let is_stub = |b: &[u8]| if compressed { (b[0] >> 2) & 7 == 2 } else { (b[0] >> 1) & 7 == 2 };
    let bytes = page.slot_bytes(slot).unwrap().unwrap().to_vec();
    if is_stub(&bytes) {
        let target = mdfkit::scan::forwarding_target(&bytes).unwrap();
        page = db.reader().read(target.page).unwrap();
        slot = target.slot;
    }
    let bytes = page.slot_bytes(slot).unwrap().unwrap();
    let decoder = db.row_decoder(table, table.partitions[0].partition_id, None).unwrap();
    let mut values = Vec::new();
    if compressed {
        let cd = CdRecord::parse(bytes).unwrap();
        decoder.decode(&Record::from_cd(&cd, None), &mut values).unwrap();
    } else {
        decoder.decode(&Record::parse(bytes).unwrap(), &mut values).unwrap();
    }
    values
}

#[test]
fn every_leaf_record_holds_the_forges_values_and_leads_to_their_row() {
    let spec = spec();
    let db = open(forge(&spec).unwrap());
    for (t, table_spec) in spec.tables.iter().enumerate() {
        let table = db.catalog().find_table(&table_spec.qualified_name()).unwrap();
        let forged: Vec<Vec<String>> = live_rows_text(&spec, t).collect();
        let column_of = |name: &str| table_spec.columns.iter().position(|c| c.name == name).unwrap();
        for ix in &table_spec.indexes {
            let what = format!("{} index {}", table_spec.qualified_name(), ix.name);
            let (info, rows) = index_rows(&db, &table, &ix.name);
            assert_eq!(info.index_type, 2, "{what}");
            assert_eq!(info.is_unique, ix.unique, "{what}");
            let (leaves, root_level) = leaf_records(&db, &rows);
            if ix.rows_per_page.is_some() {
                assert!(root_level >= 2, "{what}: root at level {root_level}");
            }
            assert_eq!(leaves.len(), forged.len(), "{what}: one leaf record a live row");
            // Record column → table column; the key and included ones are the spec's.
            let names: Vec<String> = rows.decoder(0).columns().iter().map(|c| c.column.name.clone()).collect();
            let keys: Vec<usize> =
                ix.keys.iter().map(|&k| names.iter().position(|n| *n == table_spec.columns[k].name).unwrap()).collect();
            for (n, &k) in keys.iter().enumerate() {
                assert_eq!(rows.roles[k], IndexColumnRole::Key(n + 1), "{what}");
            }
            let carried: Vec<usize> = ix.keys.iter().chain(&ix.include).copied().collect();
            // Keys never go backwards (NULL first), and each record's values are its row's.
            let key_of = |r: &LeafRecord| -> Vec<Option<i64>> { keys.iter().map(|&k| r.values[k].as_i64()).collect() };
            for pair in leaves.windows(2) {
                assert!(
                    key_of(&pair[0]) <= key_of(&pair[1]),
                    "{what}: keys out of order at {} slot {}",
                    pair[1].page,
                    pair[1].slot
                );
                if ix.unique {
                    assert_ne!(key_of(&pair[0]), key_of(&pair[1]), "{what}: a unique key twice");
                }
            }
            let mut expected: Vec<Vec<String>> =
                forged.iter().map(|row| carried.iter().map(|&c| row[c].clone()).collect()).collect();
            let mut found = Vec::new();
            for r in &leaves {
                let values: Vec<String> = carried
                    .iter()
                    .map(|&c| {
                        r.values[names.iter().position(|n| *n == table_spec.columns[c].name).unwrap()].to_string()
                    })
                    .collect();
                // The row locator leads to the row these values came from.
                let row: Vec<String> = match table_spec.layout {
                    Layout::Heap => {
                        let rid = rows.roles.iter().position(|r| *r == IndexColumnRole::Rid).unwrap();
                        let Value::Binary(rid) = &r.values[rid] else {
                            panic!("{what}: the RID is {:?}", r.values[rid])
                        };
                        row_at_rid(&db, &table, rid).iter().map(|v| v.to_string()).collect()
                    }
                    Layout::Clustered { key } => {
                        let at = names.iter().position(|n| *n == table_spec.columns[key].name).unwrap();
                        let id = r.values[at].to_string();
                        forged
                            .iter()
                            .find(|row| row[key] == id)
                            .unwrap_or_else(|| panic!("{what}: no row {id}"))
                            .clone()
                    }
                };
                let from_row: Vec<String> =
                    carried.iter().map(|&c| row[column_of(&table_spec.columns[c].name)].clone()).collect();
                assert_eq!(values, from_row, "{what}: {} slot {} and the row its locator names", r.page, r.slot);
                found.push(values);
            }
            expected.sort();
            found.sort();
            assert_eq!(found, expected, "{what}: the leaf records' values are the forge's rows'");
        }
    }
}

#[test]
fn check_walks_compressed_indexes_clean() {
    let spec = spec();
    let db = open(forge(&spec).unwrap());
    let (problems, stats) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    let records: u64 = spec
        .tables
        .iter()
        .enumerate()
        .map(|(t, s)| live_rows_text(&spec, t).count() as u64 * s.indexes.len() as u64)
        .sum();
    assert_eq!(stats.index_records_checked, records);
}

/// Page `id` of the forged file set, changed by `damage` and sealed again (a valid checksum:
/// the damage is in the record, not the page's protection).
fn damage(files: &mut [ForgedFile], id: PageId, damage: impl FnOnce(&mut [u8])) {
    let file = files.iter_mut().find(|f| f.file_id == id.file).unwrap();
    let at = id.page as usize * 8192;
    let page = &mut file.bytes[at..at + 8192];
    damage(page);
    mdfkit_forge::page::seal(page);
}

/// The page offset of slot `slot`'s record.
fn slot_offset(page: &[u8], slot: u16) -> usize {
    let s = 8192 - 2 * (usize::from(slot) + 1);
    usize::from(u16::from_le_bytes([page[s], page[s + 1]]))
}

#[test]
fn a_damaged_index_record_is_named_by_page_and_slot() {
    let spec = spec();
    let db = open(forge(&spec).unwrap());
    let table = db.catalog().find_table("dbo.RowHeap").unwrap();
    let (_, rows) = index_rows(&db, &table, "IX_grp");
    let (leaves, _) = leaf_records(&db, &rows);
    let (bad_cd, bad_rid) = (&leaves[5], &leaves[40]);
    let rid = rows.roles.iter().position(|r| *r == IndexColumnRole::Rid).unwrap();
    drop(db);
    let mut files = forge(&spec).unwrap();
    // CD code 13, never written, for the record's first column.
    damage(&mut files, bad_cd.page, |p| {
        let at = slot_offset(p, bad_cd.slot) + 2;
        p[at] = (p[at] & 0xf0) | 0x0d;
    });
    // A RID naming a page of the table's index instead of the table: the locator leads nowhere.
    let Value::Binary(original) = &bad_rid.values[rid] else { panic!() };
    let elsewhere = bad_rid.page;
    damage(&mut files, bad_rid.page, |p| {
        let at = slot_offset(p, bad_rid.slot);
        let record = &mut p[at..at + 64];
        // The RID's stored (compressed) bytes start with the page number's low byte.
        let found = record.windows(4).position(|w| w == &original[..4]).expect("the RID's page bytes");
        record[found..found + 4].copy_from_slice(&elsewhere.page.to_le_bytes());
    });
    let db = open(files);
    let (problems, _) = mdfkit::check::check_catalog(&db).unwrap();
    let named = |page: PageId, slot: u16, what: &str| {
        problems.iter().any(|p| {
            p.page == Some(page)
                && p.what.starts_with(&format!("slot {slot}: "))
                && p.what.contains(what)
                && p.object.as_deref() == Some("dbo.RowHeap index IX_grp")
        })
    };
    assert!(named(bad_cd.page, bad_cd.slot, ""), "{problems:#?}");
    assert!(named(bad_rid.page, bad_rid.slot, "row locator not found"), "{problems:#?}");
}

/// Two neighbouring leaf records of a bigint index swapped on their page (their slot entries
/// exchanged): keys past 2^53 and one apart, equal as doubles, are compared exactly and the
/// reversal is named, and nothing else is.
#[test]
fn index_keys_out_of_order_are_found_past_the_precision_of_doubles() {
    let table = TableSpec::new("dbo", "Big", Layout::Heap, 300)
        .column(col("big", ColType::BigInt, Gen::Sequence { start: 1 << 60, step: 1 }, Nulls::Never))
        .index(index("IX_big", &[0], &[], true, Compression::Row));
    let spec = Spec::new("bigkeys", Version::V904, 7).table(table);
    let db = open(forge(&spec).unwrap());
    let table = db.catalog().find_table("dbo.Big").unwrap();
    let (_, rows) = index_rows(&db, &table, "IX_big");
    let (leaves, _) = leaf_records(&db, &rows);
    let at = leaves.windows(2).position(|w| w[0].page == w[1].page && w[0].slot > 0).unwrap();
    let (first, second) = (&leaves[at], &leaves[at + 1]);
    let (Value::Int(a), Value::Int(b)) = (&first.values[0], &second.values[0]) else { panic!("{:?}", first.values) };
    assert_eq!((*b - *a, *a as f64), (1, *b as f64), "one apart, equal as doubles");
    drop(db);
    let mut files = forge(&spec).unwrap();
    damage(&mut files, first.page, |p| {
        let entry = |slot: u16| 8192 - 2 * (usize::from(slot) + 1);
        let (x, y) = (entry(first.slot), entry(second.slot));
        let (one, other) = ([p[x], p[x + 1]], [p[y], p[y + 1]]);
        p[x..x + 2].copy_from_slice(&other);
        p[y..y + 2].copy_from_slice(&one);
    });
    let db = open(files);
    let (problems, _) = mdfkit::check::check_catalog(&db).unwrap();
    let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    let expected = format!(
        "page {}: dbo.Big index IX_big: slot {}: index key lower than the record before it",
        first.page, second.slot
    );
    assert_eq!(problems, [expected]);
}

#[test]
fn anatomy_decodes_every_index_record_into_its_columns() {
    let spec = spec();
    let db = open(forge(&spec).unwrap());
    for table_spec in &spec.tables {
        let table = db.catalog().find_table(&table_spec.qualified_name()).unwrap();
        for ix in &table_spec.indexes {
            let what = format!("{} index {}", table_spec.qualified_name(), ix.name);
            let (_, rows) = index_rows(&db, &table, &ix.name);
            let unit = db.catalog().base().in_row_unit(rows.rowset).unwrap();
            let keys: Vec<&str> = ix.keys.iter().map(|&k| table_spec.columns[k].name.as_str()).collect();
            assert_anatomy_covers(&db, &what, unit.root_page, &keys);
        }
    }
}

/// Every page of the index under `root`, taken apart: owned by `what`, its columns led by the
/// `keys`, every byte of each record one field's (none undecoded), every column decoded, each
/// non-leaf record's child page followed to the leaf level.
fn assert_anatomy_covers(db: &Database, what: &str, root: PageId, keys: &[&str]) {
    let mut pages = vec![root];
    let mut levels = HashMap::new();
    while let Some(id) = pages.pop() {
        let a = read_database_page(db, id).unwrap();
        assert_eq!(a.error, None, "{what}: page {id}");
        let (table, index) = what.split_once(" index ").expect("`TABLE index NAME`");
        assert_eq!(a.owner.as_deref(), Some(table), "{what}: page {id}");
        assert_eq!(a.owner_unit.as_ref().map(|o| o.index_name.as_str()), Some(index), "{what}: page {id}");
        let level = a.header.unwrap().level;
        *levels.entry(level).or_insert(0) += 1;
        let names: Vec<&str> = a.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(&names[..keys.len()], keys, "{what}: page {id} columns");
        for r in &a.records {
            // Every byte of the record is one field's, none left undecoded.
            let mut at = r.offset;
            for f in a.record_fields(r) {
                assert_eq!(f.offset, at, "{what}: page {id} slot {}", r.slot);
                assert_ne!(f.part, Part::Undecoded, "{what}: page {id} slot {}", r.slot);
                at += f.len;
            }
            assert_eq!(at, r.offset + r.len, "{what}: page {id} slot {}", r.slot);
            assert_eq!(a.record_columns(r).len(), names.len(), "{what}: page {id} slot {}", r.slot);
            for (c, name) in a.record_columns(r).iter().zip(&names) {
                assert!(c.value.is_ok(), "{what}: page {id} slot {} column {name}: {:?}", r.slot, c.value);
            }
            if level > 0 {
                let down = a.record_fields(r).iter().find(|f| a.field_name(f) == "down page");
                let child = match down.map(|f| &f.value) {
                    Some(mdfkit::anatomy::FieldValue::Page(p)) => *p,
                    other => panic!("{what}: page {id} slot {}: down page {other:?}", r.slot),
                };
                pages.push(child);
            }
        }
    }
    assert!(levels.contains_key(&0), "{what}: {levels:?}");
}

/// pubs' nonclustered indexes, written by SQL Server (uncompressed, FixedVar index records): on
/// heaps (`roysched.titleidind`, the RID as key), on clustered tables (`titles.titleind`,
/// `titleauthor`'s two), with a non-unique clustered key and its uniquifier
/// (`employee.PK_emp_id`). Each leaf record's key values are a row's of the table, every row is
/// in each index once, and `check` finds every locator.
#[test]
fn pubs_nonclustered_indexes_hold_their_tables_values() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("mdf/itsligo-sampledbs__pubs.mdf")]).unwrap();
    let mut indexes = 0;
    for table in db.catalog().tables(false) {
        let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None).unwrap();
        let mut table_rows = Vec::new();
        db.scan(&table)
            .records(|record, _| {
                let mut values = Vec::new();
                decoder.decode(record, &mut values)?;
                table_rows.push(values);
                Ok(mdfkit::scan::Flow::Continue)
            })
            .unwrap();
        for index in db.catalog().indexes(table.object_id).into_iter().filter(|i| i.index_type == 2) {
            let what = format!("{} index {}", table.qualified_name(), index.name);
            let (_, rows) = index_rows(&db, &table, &index.name);
            let (leaves, _) = leaf_records_fixed(&db, &rows);
            // Each leaf record's key columns, and the same columns of each row of the table.
            let names: Vec<String> = rows.decoder(0).columns().iter().map(|c| c.column.name.clone()).collect();
            let keys: Vec<(usize, usize)> = index
                .key_columns
                .iter()
                .map(|(k, _)| {
                    let in_record = names.iter().position(|n| n == k).unwrap();
                    let in_table = decoder.column_names().iter().position(|n| n == k).unwrap();
                    (in_record, in_table)
                })
                .collect();
            let mut found: Vec<Vec<String>> =
                leaves.iter().map(|r| keys.iter().map(|&(i, _)| r.values[i].to_string()).collect()).collect();
            let mut expected: Vec<Vec<String>> =
                table_rows.iter().map(|row| keys.iter().map(|&(_, i)| row[i].to_string()).collect()).collect();
            found.sort();
            expected.sort();
            assert_eq!(found, expected, "{what}");
            indexes += 1;
        }
    }
    assert!(indexes >= 4, "pubs has nonclustered indexes on titles, titleauthor, roysched, employee");
    // The file's own rowset orders employee_ind's key (its sysrscols ordkey): lname, fname, minit.
    let employee = db.catalog().find_table("dbo.employee").unwrap();
    let clustered = db.catalog().indexes(employee.object_id).into_iter().find(|i| i.index_id == 1).unwrap();
    let layout = &db.catalog().base().layouts[&employee.partitions[0].partition_id];
    let mut by_ordinal: Vec<(i16, i32)> = layout
        .columns
        .iter()
        .filter(|c| c.key_ordinal > 0 && !c.is_uniquifier())
        .map(|c| (c.key_ordinal, c.rowset_column_id))
        .collect();
    by_ordinal.sort();
    let columns = db.catalog().columns(employee.object_id);
    let name_of = |id: i32| columns.iter().find(|c| c.column_id == id).unwrap().name.clone();
    let ordered: Vec<String> = by_ordinal.iter().map(|&(_, id)| name_of(id)).collect();
    let declared: Vec<String> = clustered.key_columns.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(declared, ordered);
    assert_eq!(declared, ["lname", "fname", "minit"]);
    let (problems, stats) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(stats.index_records_checked > 0);
    // The anatomy of each of their pages: every byte of each record one field's, every column
    // decoded.
    for table in db.catalog().tables(false) {
        for index in db.catalog().indexes(table.object_id).into_iter().filter(|i| i.index_type == 2) {
            let what = format!("{} index {}", table.qualified_name(), index.name);
            let (_, rows) = index_rows(&db, &table, &index.name);
            let unit = db.catalog().base().in_row_unit(rows.rowset).unwrap();
            assert_anatomy_covers(
                &db,
                &what,
                unit.root_page,
                &index.key_columns.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            );
        }
    }
}

/// sharepoint_config's full backup (SQL Server 2008 R2): nonclustered indexes whose rowsets give
/// their columns null bits, in records without a null bitmap (`PK_Classes`' non-leaf records:
/// status 0x06, a uniqueidentifier key, the child page). Every index checks clean, its records
/// decoded, and the anatomy of each index page covers every byte.
#[test]
fn sharepoint_indexes_without_null_bitmaps_check_clean() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("bak/dataplat-appveyor-lab__sharepoint_config.bak")]).unwrap();
    let (problems, stats) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    // Each index holds one leaf record a row (the check counts them against the tables' rows).
    let mut expected = 0;
    for table in db.catalog().tables(false) {
        let nonclustered = db.catalog().indexes(table.object_id).into_iter().filter(|i| i.index_type == 2).count();
        expected += nonclustered as u64 * table.rows() as u64;
    }
    assert_eq!(stats.index_records_checked, expected);
    let classes = db.catalog().find_table("dbo.Classes").unwrap();
    let (index, rows) = index_rows(&db, &classes, "PK_Classes");
    let unit = db.catalog().base().in_row_unit(rows.rowset).unwrap();
    let keys: Vec<&str> = index.key_columns.iter().map(|(k, _)| k.as_str()).collect();
    assert_anatomy_covers(&db, "dbo.Classes index PK_Classes", unit.root_page, &keys);
}
