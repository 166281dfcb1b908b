//! Scan splits over the real corpus (`MDFKIT_CORPUS`, default `../shared/corpus`): for every
//! readable user table of every data file and backup, at several target sizes, the splits (sent
//! through JSON and read from a database re-opened from the split alone) return the same rows as a
//! whole-table read: the same count, which is also the count SQL Server keeps in its catalog, the
//! same multiset of rows and the same hash per column. No page is named by two splits.
//!
//! Without the corpus the test fails under CI and says loudly that it skipped elsewhere.

mod common;

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use arrow_array::{Array, RecordBatch};
use mdfkit::scan::Flow;
use mdfkit::split::ScanSplit;
use mdfkit::Database;

/// 1 page, 8 pages (an extent), 64 pages, everything in one split.
const TARGETS: &[u64] = &[8192, 64 << 10, 512 << 10, u64::MAX];

/// What a set of rows adds up to, whatever their order: the count, each column's sum of value
/// hashes and the sorted hashes of whole rows.
#[derive(Debug, Default, PartialEq)]
struct Digest {
    rows: u64,
    columns: Vec<u64>,
    row_hashes: Vec<u64>,
}

impl Digest {
    fn add(&mut self, batch: &RecordBatch) {
        self.columns.resize(batch.num_columns(), 0);
        for row in 0..batch.num_rows() {
            let mut whole = DefaultHasher::new();
            for (c, column) in batch.columns().iter().enumerate() {
                // The Debug form of a one-value slice spells the value (or null) whatever the
                // array's type, offsets or buffers.
                let text = format!("{:?}", column.slice(row, 1));
                let mut one = DefaultHasher::new();
                text.hash(&mut one);
                self.columns[c] = self.columns[c].wrapping_add(one.finish());
                text.hash(&mut whole);
            }
            self.row_hashes.push(whole.finish());
        }
        self.rows += batch.num_rows() as u64;
    }

    fn finish(mut self, columns: usize) -> Self {
        self.columns.resize(columns, 0);
        self.row_hashes.sort_unstable();
        self
    }
}

fn sources(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for row in common::manifest(&dir.join("MANIFEST.tsv")) {
        if row.kind == "mdf" || row.kind == "bak" {
            files.push(row.file);
        }
    }
    files
}

#[derive(Default)]
struct Covered {
    tables: usize,
    heaps: usize,
    clustered: usize,
    with_lobs: usize,
    backups: usize,
    multi_split: usize,
    refused: Vec<String>,
}

#[test]
fn splits_of_every_corpus_table_return_each_row_exactly_once() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut covered = Covered::default();
    let mut failures = Vec::new();
    for file in sources(&dir) {
        let path = dir.join(&file);
        let db = match Database::open(&[&path]) {
            Ok(db) => db,
            Err(e) => {
                covered.refused.push(format!("{file}: {e}"));
                continue;
            }
        };
        let is_backup = mdfkit::database::is_backup(&path);
        let mut reopened: Option<Database> = None;
        for table in db.catalog().tables(false) {
            let name = format!("{file} {}", table.qualified_name());
            let schema_width = match db.scan(&table).schema() {
                Ok(schema) => schema.fields().len(),
                Err(e) => {
                    covered.refused.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let mut whole = Digest::default();
            if let Err(e) = db.scan(&table).batches(|b| {
                whole.add(&b);
                Ok(Flow::Continue)
            }) {
                covered.refused.push(format!("{name}: {e}"));
                continue;
            }
            let whole = whole.finish(schema_width);
            if whole.rows != table.rows() as u64 {
                failures.push(format!("{name}: whole read {} rows, catalog {}", whole.rows, table.rows()));
            }
            for &target in TARGETS {
                let splits = db.scan(&table).splits(&[&path], None, target).expect("plan splits");
                let mut pages_seen = HashSet::new();
                let mut parts = Digest::default();
                for split in &splits {
                    let split = ScanSplit::from_json(&split.to_json()).unwrap();
                    assert_eq!(split.count, splits.len());
                    for &(file_id, first, count) in &split.pages {
                        for page in first..first + count {
                            assert!(pages_seen.insert((file_id, page)), "{name}: page {file_id}:{page} in two splits");
                        }
                    }
                    let db = match &reopened {
                        Some(db) => db,
                        None => reopened.insert(split.open().expect("re-open the split's source")),
                    };
                    split
                        .read(db, 1000, |b| {
                            assert_eq!(b.num_columns(), schema_width);
                            parts.add(&b);
                            Ok(Flow::Continue)
                        })
                        .unwrap_or_else(|e| panic!("{name}: split {} of {}: {e}", split.index, split.count));
                }
                let parts = parts.finish(schema_width);
                if parts != whole {
                    failures.push(format!(
                        "{name}, {target} B splits ({}): {} rows, columns {:?} != whole read {} rows, columns {:?}",
                        splits.len(),
                        parts.rows,
                        parts.columns,
                        whole.rows,
                        whole.columns
                    ));
                }
                if target == TARGETS[0] && splits.len() > 1 {
                    covered.multi_split += 1;
                }
            }
            covered.tables += 1;
            covered.backups += usize::from(is_backup);
            if table.is_heap {
                covered.heaps += 1;
            } else {
                covered.clustered += 1;
            }
            covered.with_lobs += usize::from(table.has_lob || table.has_row_overflow);
        }
    }
    eprintln!(
        "splits: {} tables ({} heaps, {} clustered, {} with LOB or row-overflow data, {} in backups, {} cut in \
         several splits); not read by this version: {:#?}",
        covered.tables,
        covered.heaps,
        covered.clustered,
        covered.with_lobs,
        covered.backups,
        covered.multi_split,
        covered.refused
    );
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    // The corpus holds all of these; a change that hid them from the test would show here.
    assert!(covered.heaps > 0 && covered.clustered > 0 && covered.with_lobs > 0 && covered.backups > 0);
    assert!(covered.multi_split > 10, "only {} tables span several one-page splits", covered.multi_split);
}

/// A split is untrusted input: runs past the end of a file, another table's allocation unit or a
/// table that is not there are refused by name, never read.
#[test]
fn a_split_that_does_not_fit_its_database_is_refused_by_name() {
    let Some(dir) = common::corpus_dir() else { return };
    let path = dir.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let db = Database::open(&[&path]).unwrap();
    let table = db.catalog().find_table("SalesLT.Customer").unwrap();
    let split = db.scan(&table).splits(&[&path], None, u64::MAX).unwrap().remove(0);
    let read = |split: &ScanSplit| split.read(&db, 100, |_| Ok(Flow::Continue)).map(|s| s.rows);
    assert_eq!(read(&split).unwrap(), table.rows() as u64);

    let pages = db.reader().file_page_count(mdfkit::PageId::new(1, 0)).unwrap();
    let mut past_the_end = split.clone();
    past_the_end.pages.push((1, pages - 2, 3));
    let e = read(&past_the_end).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "SalesLT.Customer: split pages 1:{} and 2 after it lie past the end of file 1 ({pages} pages)",
            pages - 2
        )
    );
    let mut every_page = split.clone();
    every_page.pages = vec![(1, 0, u32::MAX)];
    assert!(read(&every_page).unwrap_err().to_string().contains("lie past the end of file 1"));

    let other = db.catalog().find_table("SalesLT.Address").unwrap();
    let mut wrong_unit = split.clone();
    wrong_unit.allocation_unit = db.scan(&other).splits(&[&path], None, u64::MAX).unwrap()[0].allocation_unit;
    let e = read(&wrong_unit).unwrap_err();
    assert!(
        e.to_string().starts_with("SalesLT.Customer: not the table the split was planned on: allocation unit"),
        "{e}"
    );

    let mut gone = split.clone();
    gone.table = "dbo.NoSuchTable".into();
    assert_eq!(read(&gone).unwrap_err().to_string(), "no table dbo.NoSuchTable in AdventureWorksLT2012");

    let mut renamed = split;
    renamed.database = "Another".into();
    let e = renamed.open().err().expect("another database name is refused");
    assert!(
        e.to_string().ends_with("holds database \"AdventureWorksLT2012\", the split was planned on \"Another\""),
        "{e}"
    );
}
