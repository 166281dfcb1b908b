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

/// The StopAt chain (full, four logs) restored just before the marked transaction
/// 'dbatoolstest' and at it: dbo.steps (a heap: rows matched whole) gains the rows the marked
/// transaction inserted and loses none. EXPECTED.json gives each restore's largest step: every
/// inserted row lies above the first's and the largest is the second's; the counts add up to each
/// side's scanned rows; the table counts name dbo.steps as differing.
#[test]
fn the_stopat_chain_compared_at_two_marks_differs_by_the_marked_inserts() {
    use mdfkit::compare::{compare_rows, compare_tables, Change};
    use mdfkit::log::redo::StopPoint;
    let Some(dir) = common::corpus_dir() else { return };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let case = expected["chains"].as_array().unwrap().iter().find(|c| c["database"] == "StopAt").unwrap();
    let max_step = |key: &str| case["expect"][key]["max_step"].as_i64().unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for folder in ["stopat", "stopat-later-logs"] {
        let mut f: Vec<_> =
            std::fs::read_dir(dir.join("chains").join(folder)).unwrap().map(|e| e.unwrap().path()).collect();
        f.sort();
        files.extend(f);
    }
    let mark = |before| StopPoint::Mark { name: "dbatoolstest".into(), before, after: None };
    let before = Database::open_until(&files, None, mark(true)).unwrap();
    let at = Database::open_until(&files, None, mark(false)).unwrap();

    let c = compare_rows(&before, &at, "dbo.steps", None, usize::MAX).unwrap();
    assert_eq!(c.key, c.columns, "a heap is matched by whole rows");
    assert_eq!((c.deleted, c.changed), (0, 0));
    let step = c.columns.iter().position(|n| n == "step").unwrap();
    let steps: Vec<i64> = c
        .rows
        .iter()
        .map(|r| {
            assert_eq!((r.change, r.before.is_none()), (Change::Inserted, true));
            r.after.as_ref().unwrap().1[step].as_i64().unwrap()
        })
        .collect();
    assert_eq!(steps.len() as u64, c.inserted);
    assert!(c.inserted > 0 && steps.iter().all(|&s| s > max_step("STOPBEFOREMARK 'dbatoolstest'")));
    assert_eq!(steps.iter().max().copied(), Some(max_step("STOPATMARK 'dbatoolstest'")));
    let scanned = |db: &Database| {
        let t = db.catalog().find_table("dbo.steps").unwrap();
        db.scan(&t).records(|_, _| Ok(mdfkit::scan::Flow::Continue)).unwrap().rows
    };
    assert_eq!(c.unchanged, scanned(&before));
    assert_eq!(c.unchanged + c.inserted, scanned(&at));

    // The other way round the same rows are deleted, read back by position with their values.
    let back = compare_rows(&at, &before, "dbo.steps", None, 5).unwrap();
    assert_eq!((back.deleted, back.inserted, back.rows.len() as u64), (c.inserted, 0, c.inserted.min(5)));
    assert!(back.rows.iter().all(|r| r.change == Change::Deleted
        && r.before.as_ref().unwrap().1[step].as_i64().unwrap() > max_step("STOPBEFOREMARK 'dbatoolstest'")));

    // Every page holding a row the marked transaction inserted differs between the two points.
    let differing: Vec<PageId> =
        mdfkit::compare::compare_pages(&before, &at, None, usize::MAX).pages.iter().map(|p| p.id).collect();
    for r in &c.rows {
        let page = r.after.as_ref().unwrap().0.page;
        assert!(differing.contains(&page), "{page} holds an inserted row but is not listed");
    }

    // The table counts are the rows each side holds (counted on the pages the log changed: the
    // catalog keeps the full backup's count on both), as the scans found them.
    let counts = compare_tables(&before, &at, false).unwrap();
    let steps_counts = counts.iter().find(|t| t.name == "dbo.steps").unwrap();
    println!("dbo.steps: {} rows inserted at the mark; counts {:?}", c.inserted, steps_counts);
    assert_eq!(steps_counts.rows, [Some(scanned(&before) as i64), Some(scanned(&at) as i64)]);
}

/// RestoreTimeClean (full, differential, logs) restored to STOPAT '2017-06-01 13:22:44' and to
/// its end: the rows the later transactions inserted are the difference, each after the
/// point-in-time restore's last `dt` and the last of them the whole chain's (EXPECTED.json, to
/// the second); nothing is deleted; the pages the table's IAM chain maps differ as its rows do.
#[test]
fn a_chain_compared_at_a_point_in_time_and_its_end_differs_by_the_later_inserts() {
    use mdfkit::compare::{compare_rows, compare_tables};
    use mdfkit::log::redo::StopPoint;
    let Some(dir) = common::corpus_dir() else { return };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let cases = expected["chains"].as_array().unwrap();
    let case = |stopat: bool| {
        cases.iter().find(|c| c["folder"] == "restoretimeclean" && c.get("stopat").is_some() == stopat).unwrap()
    };
    let mut files: Vec<_> =
        std::fs::read_dir(dir.join("chains/restoretimeclean")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let stop = StopPoint::parse_time(case(true)["stopat"].as_str().unwrap()).unwrap();
    let then = Database::open_until(&files, None, stop).unwrap();
    let end = Database::open_until(&files, None, StopPoint::End).unwrap();
    let c = compare_rows(&then, &end, "dbo.steps", None, usize::MAX).unwrap();
    let dt = c.columns.iter().position(|n| n == "dt").unwrap();
    let seconds: Vec<String> =
        c.rows.iter().map(|r| r.after.as_ref().unwrap().1[dt].to_string()[..19].to_string()).collect();
    assert!(c.inserted > 0 && (c.deleted, c.changed) == (0, 0), "{} {} {}", c.inserted, c.deleted, c.changed);
    assert_eq!(seconds.len() as u64, c.inserted);
    assert!(seconds.iter().all(|s| s.as_str() > case(true)["max_dt"].as_str().unwrap()), "{seconds:?}");
    assert_eq!(seconds.iter().max().map(String::as_str), case(false)["max_dt"].as_str());
    let counts = compare_tables(&then, &end, false).unwrap();
    let steps = counts.iter().find(|t| t.name == "dbo.steps").unwrap();
    println!("restoretimeclean dbo.steps: {} rows inserted after the STOPAT; {steps:?}", c.inserted);
    assert!(steps.pages[1] >= steps.pages[0]);
}

/// A forged clustered table (key: a sequence) in three states: the first `rows` rows, the same
/// with 10 rows more, and the same keys with other values (another seed). Matched by the key,
/// the forge's inputs say what differs: 10 inserted (keys rows+1..rows+10), or those 10 deleted
/// the other way round, or every row changed with its key kept.
#[test]
fn a_clustered_table_s_rows_are_matched_by_key() {
    use mdfkit::compare::{compare_rows, Change};
    use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
    let forged = |rows: u64, seed: u64| {
        let table = TableSpec::new("dbo", "T", Layout::Clustered { key: 0 }, rows)
            .column(ColumnSpec::new("ID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(ColumnSpec::new("Val", ColType::BigInt, Gen::Random, Nulls::Never));
        let spec = Spec::new("cmp", Version::V904, seed).table(table);
        open(mdfkit_forge::forge(&spec).unwrap().into_iter().map(|f| (f.name, f.bytes)).collect())
    };
    let (base, grown, reseeded) = (forged(1000, 1), forged(1010, 1), forged(1000, 2));

    let c = compare_rows(&base, &grown, "dbo.T", None, 100).unwrap();
    assert_eq!(c.key, ["ID"]);
    assert_eq!((c.inserted, c.deleted, c.changed, c.unchanged), (10, 0, 0, 1000));
    let mut ids: Vec<i64> = c.rows.iter().map(|r| r.after.as_ref().unwrap().1[0].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (1001..=1010).collect::<Vec<_>>());

    let back = compare_rows(&grown, &base, "dbo.T", None, 100).unwrap();
    assert_eq!((back.inserted, back.deleted, back.changed), (0, 10, 0));
    assert!(back
        .rows
        .iter()
        .all(|r| r.change == Change::Deleted
            && (1001..=1010).contains(&r.before.as_ref().unwrap().1[0].as_i64().unwrap())));

    let changed = compare_rows(&base, &reseeded, "dbo.T", None, 3).unwrap();
    assert_eq!((changed.inserted, changed.deleted, changed.changed), (0, 0, 1000));
    for r in &changed.rows {
        let (before, after) = (&r.before.as_ref().unwrap().1, &r.after.as_ref().unwrap().1);
        assert_eq!((r.change, &before[0]), (Change::Changed, &after[0]), "same key");
        assert_ne!(before[1], after[1]);
    }

    // Paged 7 at a time by the cursor of the last row listed, the 1,000 changed rows and then the
    // 10 deleted ones (the grown table against the reseeded one) come once each, no gap.
    let (mut keys, mut after, mut pages) = (Vec::new(), None, 0);
    loop {
        let page = compare_rows(&grown, &reseeded, "dbo.T", after, 7).unwrap();
        assert_eq!((page.changed, page.deleted, page.inserted), (1000, 10, 0));
        for r in &page.rows {
            let side = if r.change == Change::Deleted { &r.before } else { &r.after };
            keys.push((r.change, side.as_ref().unwrap().1[0].as_i64().unwrap()));
        }
        pages += 1;
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 1010usize.div_ceil(7));
    let changed_keys: Vec<i64> = keys.iter().filter(|(c, _)| *c == Change::Changed).map(|(_, k)| *k).collect();
    let mut deleted_keys: Vec<i64> = keys.iter().filter(|(c, _)| *c == Change::Deleted).map(|(_, k)| *k).collect();
    let mut sorted = changed_keys.clone();
    sorted.sort();
    assert_eq!(sorted, (1..=1000).collect::<Vec<_>>(), "every changed key once");
    deleted_keys.sort();
    assert_eq!(deleted_keys, (1001..=1010).collect::<Vec<_>>());
    assert_eq!(keys.len(), 1010);
    assert!("elsewhere:1:2:3".parse::<mdfkit::compare::After>().is_err());
}

/// Pages compared byte for byte: the forged shop against a copy with three pages changed where
/// this test changed them (one byte, a run of 100 bytes, a page zeroed) and a file cut short by
/// two pages lists exactly those five pages, with where the bytes first differ and how many; a
/// listing of one page at a time walks them in order; a database against itself lists none.
#[test]
fn pages_that_differ_are_the_pages_changed() {
    use mdfkit::compare::compare_pages;
    let original = forged_shop();
    let mut changed = original.clone();
    let mdf = &mut changed.iter_mut().find(|(name, _)| name.ends_with(".mdf")).unwrap().1;
    let pages = (mdf.len() / PAGE_SIZE) as u32;
    let at = |page: u32, offset: usize| page as usize * PAGE_SIZE + offset;
    // Three pages in use (a page header's first byte is 1) past the file's system pages.
    let used: Vec<u32> = (40..pages - 2).filter(|&p| mdf[at(p, 0)] == 1).take(3).collect();
    mdf[at(used[0], 500)] ^= 0xff;
    mdf[at(used[1], 200)..at(used[1], 300)].iter_mut().for_each(|b| *b = !*b);
    mdf[at(used[2], 0)..at(used[2] + 1, 0)].fill(0);
    mdf.truncate(at(pages - 2, 0));
    let (first, second) = (open(original), open(changed));

    let listed = compare_pages(&first, &second, None, usize::MAX);
    let ids: Vec<PageId> = listed.pages.iter().map(|p| p.id).collect();
    let expected: Vec<PageId> =
        [used[0], used[1], used[2], pages - 2, pages - 1].iter().map(|&p| PageId::new(1, p)).collect();
    assert_eq!(ids, expected);
    assert_eq!(listed.pages[0].bytes, Some((500, 1)));
    assert_eq!(listed.pages[1].bytes, Some((200, 100)));
    assert!(listed.pages[2].headers[0].is_some() && listed.pages[2].headers[1].is_none(), "zeroed: no header");
    assert_eq!(listed.pages[3].held, [true, false]);
    assert_eq!(listed.next, None);

    let (mut walked, mut after) = (Vec::new(), None);
    loop {
        let one = compare_pages(&first, &second, after, 1);
        walked.extend(one.pages.iter().map(|p| p.id));
        match one.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(walked, expected);
    assert!(compare_pages(&first, &first, None, 10).pages.is_empty());
}
