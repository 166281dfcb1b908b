//! Conformance over the real corpus (`MDFKIT_CORPUS`, default `../shared/corpus` beside the
//! repository): every data file opens, its boot page agrees with `MANIFEST.tsv`, its user tables
//! agree with the expected-value files, and its schema and every sys view render.
//!
//! Without the corpus the test fails under CI and says loudly that it skipped elsewhere.

mod common;

use std::collections::HashMap;
use std::path::Path;

use mdfkit::catalog::views::VIEW_NAMES;
use mdfkit::scan::Flow;
use mdfkit::Database;

struct ManifestRow {
    file: String,
    kind: String,
    version: u16,
    name: String,
}

fn manifest(dir: &Path) -> Vec<ManifestRow> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).expect("read MANIFEST.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("MANIFEST lacks {name}"));
    let (file, kind, version, name) = (col("file"), col("kind"), col("dbi_version"), col("db_name"));
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .map(|f| ManifestRow {
            file: f[file].to_string(),
            kind: f[kind].to_string(),
            version: f[version].parse().unwrap_or(0),
            name: f[name].to_string(),
        })
        .collect()
}

/// (schema, table) → row count from every expected-value file about a data file.
fn expected_tables(dir: &Path) -> HashMap<String, Vec<(String, String, i64)>> {
    let mut out = HashMap::new();
    for sub in ["expected", "gt"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.to_string_lossy().ends_with(".expected.json") {
                continue;
            }
            let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Some(file) = json["corpus_file"].as_str() else {
                continue;
            };
            let tables = json["tables"].as_array().into_iter().flatten();
            let list = tables
                .map(|t| {
                    (
                        t["schema"].as_str().unwrap_or("dbo").to_string(),
                        t["name"].as_str().unwrap().to_string(),
                        t["row_count"].as_i64().unwrap_or(-1),
                    )
                })
                .collect();
            out.insert(file.to_string(), list);
        }
    }
    out
}

#[test]
fn every_corpus_data_file_opens_and_matches_its_ground_truth() {
    let Some(dir) = common::corpus_dir() else { return };
    let expected = expected_tables(&dir);
    let mut mismatches = Vec::new();
    let (mut files, mut tables, mut views, mut expected_checked) = (0, 0, 0, 0);
    for row in manifest(&dir).iter().filter(|r| r.kind == "mdf") {
        let path = dir.join(&row.file);
        let db = match Database::open(&[&path]) {
            Ok(db) => db,
            Err(e) => {
                mismatches.push(format!("{}: cannot open: {e}", row.file));
                continue;
            }
        };
        files += 1;
        let catalog = db.catalog();
        if catalog.boot.version != row.version {
            mismatches.push(format!("{}: version {} != manifest {}", row.file, catalog.boot.version, row.version));
        }
        if db.name() != row.name {
            mismatches.push(format!("{}: name {:?} != manifest {:?}", row.file, db.name(), row.name));
        }
        let user_tables = catalog.tables(false);
        if user_tables.iter().any(|t| t.schema == "sys") {
            mismatches.push(format!("{}: a sys-schema table is listed as a user table", row.file));
        }
        for (schema, name, rows) in expected.get(&row.file).into_iter().flatten() {
            expected_checked += 1;
            match user_tables.iter().find(|t| &t.schema == schema && &t.name == name) {
                None => mismatches.push(format!("{}: expected table {schema}.{name} not listed", row.file)),
                Some(t) if t.rows() != *rows => mismatches.push(format!(
                    "{}: {schema}.{name} catalog rows {} != expected {rows}",
                    row.file,
                    t.rows()
                )),
                Some(_) => {}
            }
        }
        for t in &user_tables {
            tables += 1;
            let sql = catalog.create_table_sql(t);
            let columns = catalog.columns(t.object_id);
            if columns.is_empty()
                || !sql.starts_with("CREATE TABLE")
                || !columns.iter().all(|c| sql.contains(&format!("[{}]", c.name)))
            {
                mismatches.push(format!("{}: schema of {} is incomplete", row.file, t.qualified_name()));
            }
        }
        for view in VIEW_NAMES {
            match catalog.view(view) {
                Ok(v) if v.rows.iter().all(|r| r.len() == v.columns.len()) => views += 1,
                Ok(_) => mismatches.push(format!("{}: {view} has ragged rows", row.file)),
                Err(e) => mismatches.push(format!("{}: {view}: {e}", row.file)),
            }
        }
        for view in ["sys.objects", "sys.columns", "sys.indexes", "sys.partitions", "sys.allocation_units"] {
            if catalog.view(view).map(|v| v.rows.is_empty()).unwrap_or(true) {
                mismatches.push(format!("{}: {view} is empty", row.file));
            }
        }
    }
    println!(
        "corpus: {files} files, {tables} tables, {views} views rendered, {expected_checked} expected tables compared, {} mismatches",
        mismatches.len()
    );
    assert!(files >= 31, "expected every corpus data file (31), opened {files}");
    assert!(expected_checked >= 24, "only {expected_checked} expected tables were compared");
    assert!(mismatches.is_empty(), "mismatches:\n{}", mismatches.join("\n"));
}

/// pubs' instpubs.sql declares `titles.pub_id REFERENCES publishers(pub_id)` and
/// `titleauthor.au_id REFERENCES authors(au_id)`.
#[test]
fn pubs_foreign_keys_reference_the_declared_tables() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("mdf/itsligo-sampledbs__pubs.mdf")]).unwrap();
    let catalog = db.catalog();
    let id_of = |name: &str| i64::from(catalog.find_table(name).unwrap().object_id);
    let fks = catalog.view("sys.foreign_keys").unwrap();
    let col = |name: &str| fks.columns.iter().position(|c| c == name).unwrap();
    let references = |parent: &str| -> Vec<i64> {
        fks.rows
            .iter()
            .filter(|r| r[col("parent_object_id")].as_i64() == Some(id_of(parent)))
            .filter_map(|r| r[col("referenced_object_id")].as_i64())
            .collect()
    };
    assert_eq!(references("titles"), vec![id_of("publishers")]);
    assert!(references("titleauthor").contains(&id_of("authors")));
    assert!(references("titleauthor").contains(&id_of("titles")));
}

/// Every user table of every corpus data file scans to the row count its catalog records, and
/// every value of every row decodes.
#[test]
fn every_table_scans_to_its_catalog_row_count() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut mismatches = Vec::new();
    let (mut tables, mut rows, mut ghosts, mut forwarded) = (0, 0, 0, 0);
    let mut unsupported = Vec::new();
    for row in manifest(&dir).iter().filter(|r| r.kind == "mdf") {
        let db = Database::open(&[dir.join(&row.file)]).unwrap();
        for t in db.catalog().tables(false) {
            tables += 1;
            let decoders: Result<Vec<_>, _> =
                t.partitions.iter().map(|p| mdfkit::rows::RowDecoder::new(&db, &t, p.partition_id, None)).collect();
            let decoders = match decoders {
                Ok(d) => d,
                Err(e) => {
                    mismatches.push(format!("{}: {}", row.file, e));
                    continue;
                }
            };
            let mut values = Vec::new();
            // Every value of every row decodes (the decoder of the first partition serves all:
            // the corpus has no partitioned table).
            match db.for_each_row(&t, |record, _| {
                decoders[0].decode(record, &mut values)?;
                Ok(Flow::Continue)
            }) {
                Ok(stats) => {
                    rows += stats.rows;
                    ghosts += stats.ghost_records;
                    forwarded += stats.forwarded_rows;
                    if stats.rows as i64 != t.rows() {
                        mismatches.push(format!(
                            "{}: {} scanned {} rows, catalog says {}",
                            row.file,
                            t.qualified_name(),
                            stats.rows,
                            t.rows()
                        ));
                    }
                }
                Err(e) if e.kind() == mdfkit::ErrorKind::Unsupported => {
                    unsupported.push(format!("{}: {}", row.file, e))
                }
                Err(e) => mismatches.push(format!("{}: {}", row.file, e)),
            }
        }
    }
    println!(
        "scan: {tables} tables, {rows} rows, {ghosts} ghost records skipped, {forwarded} forwarded rows, {} mismatches",
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "mismatches:\n{}", mismatches.join("\n"));
    // Features not decoded yet are reported by name; this list shrinks as they land.
    println!("not supported yet: {unsupported:?}");
    assert!(unsupported.iter().all(|u| u.contains("type xml")), "unexpected unsupported features: {unsupported:?}");
    assert_eq!(unsupported.len(), 1, "AdventureWorksLT ProductModel.CatalogDescription is the corpus' only xml column");
}

/// The listed rows of every expected-value file about a data file are reproduced exactly (as a
/// set: heaps return rows in allocation order). Values are compared in the spellings the corpus
/// README gives; datetimes without milliseconds in the expected file are compared without them.
#[test]
fn expected_rows_are_reproduced_exactly() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for sub in ["expected", "gt"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else { continue };
        for entry in entries.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".expected.json")) {
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
            let Some(file) = json["corpus_file"].as_str() else { continue };
            let db = Database::open(&[dir.join(file)]).unwrap();
            for table in json["tables"].as_array().unwrap() {
                let Some(expected_rows) = table["rows"].as_array().filter(|r| !r.is_empty()) else { continue };
                let name = format!("{}.{}", table["schema"].as_str().unwrap(), table["name"].as_str().unwrap());
                // Columns the script made non-deterministic (getdate()) have no expected value.
                let unknown: Vec<&str> = table["columns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["unknown"].as_bool() == Some(true))
                    .filter_map(|c| c["name"].as_str())
                    .collect();
                match read_rows(&db, &name) {
                    Ok(ours) => {
                        for expected in expected_rows {
                            checked += 1;
                            let found = ours.iter().any(|row| {
                                expected
                                    .as_object()
                                    .unwrap()
                                    .iter()
                                    .filter(|(col, _)| !unknown.contains(&col.as_str()))
                                    .all(|(col, want)| {
                                        let got = row.iter().find(|(c, _)| c == col).and_then(|(_, v)| v.clone());
                                        same_value(want, got.as_deref())
                                    })
                            });
                            if !found {
                                mismatches.push(format!("{file}: {name}: row not found: {expected}"));
                            }
                        }
                    }
                    Err(e) => mismatches.push(format!("{file}: {name}: {e}")),
                }
            }
        }
    }
    println!("expected rows: {checked} checked, {} mismatches", mismatches.len());
    for m in mismatches.iter().take(10) {
        println!("  {}", m.chars().take(300).collect::<String>());
    }
    assert!(checked > 200, "too few expected rows found: {checked}");
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}

fn read_rows(db: &Database, name: &str) -> mdfkit::Result<Vec<Vec<(String, Option<String>)>>> {
    let table = db.catalog().find_table(name).ok_or_else(|| mdfkit::Error::not_found(name.to_string()))?;
    let mut rows = Vec::new();
    for partition in &table.partitions {
        let decoder = mdfkit::rows::RowDecoder::new(db, &table, partition.partition_id, None)?;
        let names: Vec<String> = decoder.columns().iter().map(|c| c.column.name.clone()).collect();
        let mut values = Vec::new();
        db.for_each_row_in_partition(&table, partition, |record, _| {
            decoder.decode(record, &mut values)?;
            rows.push(
                names.iter().cloned().zip(values.iter().map(|v| (!v.is_null()).then(|| v.to_string()))).collect(),
            );
            Ok(Flow::Continue)
        })?;
    }
    Ok(rows)
}

fn same_value(want: &serde_json::Value, got: Option<&str>) -> bool {
    match (want.as_str(), got) {
        (None, None) => want.is_null(),
        (Some(w), Some(g)) => w == g || (w.len() == 19 && g.len() == 23 && g.starts_with(w) && g.ends_with(".000")),
        _ => false,
    }
}

/// The first leaf page found through the IAM chain is the one sysallocunits records, wherever that
/// record is current (a leaf page of the unit, first in its chain). Some files carry stale first
/// pages (e.g. `sys.sysbinobjs` of 0xhamzacakmak…database1.mdf points at a page sysrscols now
/// owns); those are counted and must be found through the IAM chain instead.
#[test]
fn the_iam_chain_finds_the_recorded_first_leaf() {
    let Some(dir) = common::corpus_dir() else { return };
    let (mut checked, mut stale) = (0, 0);
    for row in manifest(&dir).iter().filter(|r| r.kind == "mdf") {
        let db = Database::open(&[dir.join(&row.file)]).unwrap();
        for t in db.catalog().tables(true).iter().filter(|t| !t.is_heap) {
            for p in &t.partitions {
                let unit = db.catalog().base().in_row_unit(p.partition_id).unwrap();
                if unit.first_iam_page.is_null() {
                    continue;
                }
                let from_iam = mdfkit::scan::leaf_head_from_iam(db.reader(), unit)
                    .unwrap_or_else(|e| panic!("{}: {}: {e}", row.file, t.qualified_name()));
                let first = mdfkit::scan::first_leaf(db.reader(), unit).unwrap();
                assert_eq!(from_iam, first, "{}: {}", row.file, t.qualified_name());
                if first != unit.first_page {
                    stale += 1;
                }
                checked += 1;
            }
        }
    }
    println!("first leaves: {checked} clustered indexes, {stale} with a stale first page in sysallocunits");
    assert!(checked > 900, "only {checked} clustered indexes checked");
    assert!(stale > 0, "the corpus' stale first pages were not seen");
}
