//! Salvage: past a damaged page, every row of every undamaged page comes back exactly as from the
//! clean file, and the damaged page is reported; without salvage the damage stops the read.

mod common;

use std::sync::Arc;

use mdfkit::scan::Flow;
use mdfkit::source::DataFiles;
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
