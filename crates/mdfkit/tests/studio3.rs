//! The studio's "last rows" start: the last leaf page of a clustered index found by descending
//! from its root page ([`mdfkit::scan::descend_to_last_leaf`]) is the page the leaf level's page
//! chain ends at (the one leaf page of the unit with no next page, found by reading every page
//! the IAM chain maps), on every uncompressed clustered index of the corpus and on a forged
//! database; a child pointer that leads astray is an error naming the page holding it.

mod common;

use std::sync::Arc;

use mdfkit::page::protection::page_checksum;
use mdfkit::page::{PageId, PAGE_SIZE};
use mdfkit::scan::{descend_to_last_leaf, leaf_end_from_iam, Direction};
use mdfkit::source::DataFiles;
use mdfkit::Database;

#[test]
fn descending_from_the_root_finds_the_end_of_the_leaf_chain() {
    let Some(dir) = common::corpus_dir() else { return };
    let (mut descended, mut multi_level, mut not_started) = (0, 0, 0);
    for row in common::manifest(&dir.join("MANIFEST.tsv")).iter().filter(|r| r.kind == "mdf") {
        let db = Database::open(&[dir.join(&row.file)]).unwrap();
        for t in db.catalog().tables(true).iter().filter(|t| !t.is_heap) {
            for p in t.partitions.iter().filter(|p| p.data_compression == 0) {
                let unit = db.catalog().base().in_row_unit(p.partition_id).unwrap();
                if unit.first_iam_page.is_null() {
                    continue;
                }
                let chain_end = leaf_end_from_iam(db.reader(), unit, Direction::Backward)
                    .unwrap_or_else(|e| panic!("{}: {}: {e}", row.file, t.qualified_name()));
                match descend_to_last_leaf(db.reader(), unit)
                    .unwrap_or_else(|e| panic!("{}: {}: {e}", row.file, t.qualified_name()))
                {
                    Some(last) => {
                        assert_eq!(last, chain_end, "{}: {}", row.file, t.qualified_name());
                        descended += 1;
                        multi_level += usize::from(last != unit.root_page);
                    }
                    None => not_started += 1,
                }
            }
        }
    }
    println!(
        "last leaves: {descended} clustered indexes descended ({multi_level} of more than one level), \
         {not_started} with a recorded root that is not their root (IAM walk instead)"
    );
    assert!(descended > 700 && multi_level > 90, "{descended} descended, {multi_level} with interior levels");
}

/// The shop's forged dbo.Orders (5,000 rows): its clustered index has interior levels.
fn forged_shop() -> Vec<(String, Vec<u8>)> {
    mdfkit_forge::forge(&mdfkit_forge::samples::shop()).unwrap().into_iter().map(|f| (f.name, f.bytes)).collect()
}

fn open(files: Vec<(String, Vec<u8>)>) -> Database {
    Database::from_source(Arc::new(DataFiles::from_memory(files).unwrap())).unwrap()
}

#[test]
fn a_forged_index_descends_to_its_last_leaf_and_a_bad_child_is_named() {
    let files = forged_shop();
    let db = open(files.clone());
    let orders = db.catalog().find_table("dbo.Orders").unwrap();
    let unit = db.catalog().base().in_row_unit(orders.partitions[0].partition_id).unwrap().clone();
    let last = descend_to_last_leaf(db.reader(), &unit).unwrap().expect("the forged root is current");
    assert_ne!(last, unit.root_page, "5,000 rows fill more than one page");
    assert_eq!(last, leaf_end_from_iam(db.reader(), &unit, Direction::Backward).unwrap());

    // Point the root's last record at the root itself: a child that is not one level down.
    let root = db.reader().read(unit.root_page).unwrap();
    let last_slot = root.slot_count() - 1;
    let record_at = root.slot_offset(last_slot).unwrap();
    let pminlen = usize::from(root.header().pminlen);
    let mut bytes = root.bytes().to_vec();
    bytes[record_at + pminlen - 6..record_at + pminlen - 2].copy_from_slice(&unit.root_page.page.to_le_bytes());
    let sum = page_checksum(&bytes);
    bytes[60..64].copy_from_slice(&sum.to_le_bytes());
    let mut damaged = files;
    let at = unit.root_page.page as usize * PAGE_SIZE;
    damaged[0].1[at..at + PAGE_SIZE].copy_from_slice(&bytes);
    let db = open(damaged);
    let err = descend_to_last_leaf(db.reader(), &unit).unwrap_err();
    assert_eq!(err.page(), Some(unit.root_page), "{err}");
    assert!(err.to_string().contains(&format!("last child {}", unit.root_page)), "{err}");
    assert_ne!(unit.root_page, PageId::default());
}
