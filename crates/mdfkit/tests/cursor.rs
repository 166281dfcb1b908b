//! The keyset cursor (`TableScan::records_after`): paging through every table of the corpus a few
//! rows at a time, each page resumed from the position the last one ended at, returns exactly the
//! rows of one whole scan, in its order: no gap, no duplicate. Paged backwards from the end
//! (`TableScan::records_from` with `Direction::Backward`), the same rows come last first.

mod common;

use mdfkit::scan::{Direction, Flow, RowLocation, ScanPosition};
use mdfkit::Database;

const ROWS_PER_PAGE: u64 = 7;

fn paged(
    db: &Database,
    table: &mdfkit::catalog::model::TableInfo,
    ghosts: bool,
    direction: Direction,
) -> mdfkit::Result<Vec<RowLocation>> {
    let mut out = Vec::new();
    let mut after: Option<ScanPosition> = None;
    loop {
        let mut got = 0;
        db.scan(table).include_ghosts(ghosts).limit(Some(ROWS_PER_PAGE)).records_from(
            after,
            direction,
            |_, location, position| {
                out.push(location);
                after = Some(position);
                got += 1;
                Ok(Flow::Continue)
            },
        )?;
        if got < ROWS_PER_PAGE {
            return Ok(out);
        }
    }
}

#[test]
fn paging_by_position_returns_the_whole_scan() {
    let Some(dir) = common::corpus_dir() else { return };
    let (mut tables, mut rows, mut heaps) = (0, 0, 0);
    let files: Vec<_> = common::manifest(&dir.join("MANIFEST.tsv"))
        .into_iter()
        .filter(|r| r.kind == "mdf" || r.file.ends_with(".bak"))
        .map(|r| dir.join(r.file))
        .collect();
    for path in files {
        let Ok(db) = Database::open(&[&path]) else { continue };
        for table in db.catalog().tables(false) {
            for ghosts in [false, true] {
                let mut whole = Vec::new();
                let full = db.scan(&table).include_ghosts(ghosts).records(|_, location| {
                    whole.push(location);
                    Ok(Flow::Continue)
                });
                if full.is_err() {
                    continue; // refused or damaged: the cursor is refused alike, checked below
                }
                let by_pages = paged(&db, &table, ghosts, Direction::Forward)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), table.qualified_name()));
                assert_eq!(by_pages, whole, "{} {} ghosts={ghosts}", path.display(), table.qualified_name());
                let mut backwards = paged(&db, &table, ghosts, Direction::Backward)
                    .unwrap_or_else(|e| panic!("{} {} backwards: {e}", path.display(), table.qualified_name()));
                backwards.reverse();
                assert_eq!(backwards, whole, "{} {} ghosts={ghosts} backwards", path.display(), table.qualified_name());
                if !ghosts {
                    tables += 1;
                    rows += whole.len();
                    heaps += usize::from(table.is_heap && !whole.is_empty());
                }
            }
        }
    }
    println!("{tables} tables ({heaps} heaps with rows), {rows} rows paged {ROWS_PER_PAGE} at a time, both ways");
    assert!(tables > 200 && rows > 20_000 && heaps > 5, "{tables} tables, {rows} rows, {heaps} heaps");
}

#[test]
fn a_position_outside_the_table_is_refused_by_name() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("mdf/itsligo-sampledbs__pubs.mdf")]).unwrap();
    let authors = db.catalog().find_table("dbo.authors").unwrap();
    let titles = db.catalog().find_table("dbo.titles").unwrap();
    let mut first = None;
    db.scan(&titles)
        .limit(Some(1))
        .records_after(None, |_, _, p| {
            first = Some(p);
            Ok(Flow::Continue)
        })
        .unwrap();
    let err = db.scan(&authors).records_after(first, |_, _, _| Ok(Flow::Continue)).unwrap_err();
    assert!(err.to_string().contains("holds no row of the table") && err.to_string().contains("dbo.authors"), "{err}");
    assert_eq!("1:1776:7".parse::<ScanPosition>().unwrap().to_string(), "1:1776:7");
    assert!("1:1776".parse::<ScanPosition>().is_err() && "1:2:3:4".parse::<ScanPosition>().is_err());
}
