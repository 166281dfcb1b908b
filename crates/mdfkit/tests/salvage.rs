//! Salvage: past a damaged page, every row of every undamaged page comes back exactly as from the
//! clean file, and the damaged page is reported; without salvage the damage stops the read.

mod common;

use std::sync::Arc;

use mdfkit::scan::Flow;
use mdfkit::source::DataFiles;
use mdfkit::split::ScanSplit;
use mdfkit::{Database, PageId};

fn rows_by_page(db: &Database, table: &str, salvage: bool) -> mdfkit::Result<(Vec<(PageId, String)>, usize)> {
    let t = db.catalog().find_table(table).unwrap();
    let mut rows = Vec::new();
    let mut skipped = 0;
    for p in &t.partitions {
        let decoder = db.row_decoder(&t, p.partition_id, None)?;
        let mut values = Vec::new();
        let stats = db.scan(&t).salvage(salvage).partition_records(p, |record, location| {
            decoder.decode(record, &mut values)?;
            rows.push((location.page, values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")));
            Ok(Flow::Continue)
        })?;
        skipped += stats.skipped.len();
    }
    Ok((rows, skipped))
}

#[test]
fn salvage_returns_every_row_of_every_undamaged_page() {
    let Some(dir) = common::corpus_dir() else { return };
    let file = dir.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let clean = Database::open(&[&file]).unwrap();
    for table in ["SalesLT.Customer", "dbo.BuildVersion", "SalesLT.ProductDescription"] {
        let (clean_rows, _) = rows_by_page(&clean, table, false).unwrap();
        let mut pages: Vec<PageId> = clean_rows.iter().map(|(p, _)| *p).collect();
        pages.dedup();
        let damaged_page = pages[pages.len() / 2];
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[damaged_page.page as usize * 8192 + 4000] ^= 0x5a;
        let source = DataFiles::from_memory(vec![("damaged.mdf".into(), bytes)]).unwrap();
        let db = Database::from_source(Arc::new(source)).unwrap();

        let err = rows_by_page(&db, table, false).unwrap_err();
        assert!(err.to_string().contains(&format!("page {damaged_page}")), "{err}");

        let (salvaged, skipped) = rows_by_page(&db, table, true).unwrap();
        assert_eq!(skipped, 1, "{table}");
        let mut expected: Vec<&String> =
            clean_rows.iter().filter(|(p, _)| *p != damaged_page).map(|(_, r)| r).collect();
        let mut got: Vec<&String> = salvaged.iter().map(|(_, r)| r).collect();
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "{table}");
    }
}

/// Splits planned with salvage skip a damaged page on the worker that reads it and name it in
/// that split's statistics; every other row comes back once. Planned without, the split holding
/// the page fails naming it.
#[test]
fn salvage_splits_skip_the_damaged_page_and_name_it() {
    let Some(dir) = common::corpus_dir() else { return };
    let file = dir.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let table = "SalesLT.Customer";
    let (clean_rows, _) = rows_by_page(&Database::open(&[&file]).unwrap(), table, false).unwrap();
    let mut pages: Vec<PageId> = clean_rows.iter().map(|(p, _)| *p).collect();
    pages.dedup();
    let damaged_page = pages[pages.len() / 2];
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[damaged_page.page as usize * 8192 + 4000] ^= 0x5a;
    let damaged = std::env::temp_dir().join(format!("mdfkit-salvage-split-{}.mdf", std::process::id()));
    std::fs::write(&damaged, bytes).unwrap();
    let db = Database::open(&[&damaged]).unwrap();
    let t = db.catalog().find_table(table).unwrap();

    let planned = db.scan(&t).salvage(true).splits(&[&damaged], None, 16 << 10).unwrap();
    assert!(planned.len() > 1, "{} splits", planned.len());
    let (mut rows, mut skipped) = (0, Vec::new());
    for split in &planned {
        let split = ScanSplit::from_json(&split.to_json()).unwrap();
        assert!(split.salvage);
        let stats = split
            .read(&split.open().unwrap(), 100, |batch| {
                rows += batch.num_rows();
                Ok(Flow::Continue)
            })
            .unwrap();
        skipped.extend(stats.skipped.iter().map(|s| s.page));
    }
    assert_eq!(skipped, [Some(damaged_page)]);
    assert_eq!(rows, clean_rows.iter().filter(|(p, _)| *p != damaged_page).count());

    let errors: Vec<String> = db
        .scan(&t)
        .splits(&[&damaged], None, 16 << 10)
        .unwrap()
        .iter()
        .filter_map(|split| split.read(&db, 100, |_| Ok(Flow::Continue)).err().map(|e| e.to_string()))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&format!("page {damaged_page}")) && errors[0].contains(table), "{}", errors[0]);
    std::fs::remove_file(&damaged).unwrap();
}
