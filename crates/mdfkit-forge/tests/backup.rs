//! Full backups of forged databases (`mdfkit_forge::backup`), read by mdfkit with no restore:
//! every table reads as from the data files, whatever the stale, zeroed or damaged pages in the
//! data stream; a damaged allocated page is reported by `check`, stops only the table that holds
//! it, and `--salvage` reads the rest of that table.

use std::sync::Arc;

use mdfkit::backup::chain::BackupFiles;
use mdfkit::backup::BackupPages;
use mdfkit::scan::Flow;
use mdfkit::source::PageSource;
use mdfkit::{Database, PageId};
use mdfkit_forge::backup::{as_stripe, backup_of_extents, copied_extents, full_backup};
use mdfkit_forge::{forge, live_rows, ColType, ColumnSpec, ForgedFile, Gen, Layout, Nulls, Spec, TableSpec, Version};

const PAGE: usize = 8192;

fn spec() -> Spec {
    let key = || ColumnSpec::new("id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let text =
        || ColumnSpec::new("label", ColType::NVarChar(Some(200)), Gen::Length { min: 20, max: 200 }, Nulls::Every(7));
    Spec::new("bakdamage", Version::V904, 7)
        .table(TableSpec::new("dbo", "Alpha", Layout::Clustered { key: 0 }, 300).column(key()).column(text()))
        .table(TableSpec::new("dbo", "Beta", Layout::Heap, 4000).column(key()).column(text()))
        .table(TableSpec::new("dbo", "Gamma", Layout::Clustered { key: 0 }, 200).column(key()).column(text()))
}

/// Every row of `table`, as text, with its page; and the number of pages skipped.
fn rows(db: &Database, table: &str, salvage: bool) -> mdfkit::Result<(Vec<(PageId, String)>, usize)> {
    let t = db.catalog().find_table(table).unwrap();
    let mut out = Vec::new();
    let mut skipped = 0;
    for p in &t.partitions {
        let decoder = db.row_decoder(&t, p.partition_id, None)?;
        let mut values = Vec::new();
        let stats = db.scan(&t).salvage(salvage).partition_records(p, |record, at| {
            decoder.decode(record, &mut values)?;
            out.push((at.page, values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")));
            Ok(Flow::Continue)
        })?;
        skipped += stats.skipped.len();
    }
    Ok((out, skipped))
}

/// The generated rows of table `i`, as text, sorted.
fn expected(spec: &Spec, i: usize) -> Vec<String> {
    let t = &spec.tables[i];
    let mut rows: Vec<String> = live_rows(spec, i)
        .map(|row| {
            row.iter()
                .zip(&t.columns)
                .map(|(v, c)| v.as_ref().map_or("NULL".to_string(), |v| v.sql_text(c.ty)))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    rows.sort();
    rows
}

fn sorted(rows: &[(PageId, String)]) -> Vec<String> {
    let mut r: Vec<String> = rows.iter().map(|(_, r)| r.clone()).collect();
    r.sort();
    r
}

fn open(bytes: Vec<u8>) -> (Database, Arc<BackupPages>) {
    let pages = Arc::new(BackupPages::from_bytes("forged.bak", bytes).expect("backup opens"));
    (Database::from_source(pages.clone()).expect("catalog opens"), pages)
}

/// Every table equals the generator's rows and the catalog's count.
fn assert_exact(spec: &Spec, db: &Database, except: Option<&str>) {
    for (i, t) in spec.tables.iter().enumerate() {
        let name = t.qualified_name();
        if except == Some(name.as_str()) {
            continue;
        }
        let table = db.catalog().find_table(&name).unwrap();
        assert_eq!(table.rows(), t.rows as i64, "{name}: catalog row count");
        let (got, _) = rows(db, &name, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sorted(&got), expected(spec, i), "{name}");
    }
}

/// The PFS allocation byte of a page of file 1 (all forged files here are below 8,088 pages).
fn pfs_byte(file: &ForgedFile, page: u32) -> u8 {
    file.bytes[PAGE + 96 + 4 + page as usize]
}

#[test]
fn a_full_backup_reads_like_its_data_files() {
    let spec = spec();
    let files = forge(&spec).unwrap();
    let (db, pages) = open(full_backup(&files));
    assert!(pages.notes().is_empty(), "{:?}", pages.notes());
    assert_exact(&spec, &db, None);
    let (problems, _) = mdfkit::check::check_pages(pages.as_ref(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
}

/// Unused pages of copied extents hold stale copies of other pages (headers naming other
/// pages at other positions) or zeros; junk blocks follow the extents. Nothing changes.
#[test]
fn stale_and_zeroed_unused_pages_change_nothing() {
    let spec = spec();
    let mut files = forge(&spec).unwrap();
    let extents = copied_extents(&files);
    let file = &files[0];
    let unused: Vec<u32> = extents
        .iter()
        .filter(|(f, _)| *f == 1)
        .flat_map(|&(_, first)| first..first + 8)
        .filter(|&p| p >= 8 && (p as usize) < file.bytes.len() / PAGE && pfs_byte(file, p) & 0x40 == 0)
        .collect();
    assert!(unused.len() >= 4, "the forged file has unused pages in its copied extents: {unused:?}");
    let donor = 16 * PAGE;
    for (n, &p) in unused.iter().enumerate() {
        let at = p as usize * PAGE;
        if n % 2 == 0 {
            // A stale copy of some other page, header and all.
            let copy = files[0].bytes[donor + (n % 8) * PAGE..donor + (n % 8 + 1) * PAGE].to_vec();
            files[0].bytes[at..at + PAGE].copy_from_slice(&copy);
        } else {
            files[0].bytes[at..at + PAGE].fill(0);
        }
    }
    let mut log_blocks = vec![0u8; 8 * PAGE];
    for k in 0..8 {
        log_blocks[k * PAGE] = 1;
        log_blocks[k * PAGE + 1] = 101;
    }
    let (db, pages) = open(backup_of_extents(&files, &extents, &[log_blocks]));
    assert_exact(&spec, &db, None);
    let (problems, _) = mdfkit::check::check_pages(pages.as_ref(), |_| {});
    assert!(problems.is_empty(), "stale unused pages are not damage: {problems:?}");
}

/// An allocated data page of dbo.Beta with a garbled header (a valid checksum over it: the
/// header is what is wrong), in the middle of the table.
#[test]
fn a_damaged_page_stops_only_its_table_and_salvage_reads_the_rest() {
    let spec = spec();
    let mut files = forge(&spec).unwrap();
    let clean = Database::from_source(Arc::new(
        mdfkit::source::DataFiles::from_memory(files.iter().map(|f| (f.name.clone(), f.bytes.clone())).collect())
            .unwrap(),
    ))
    .unwrap();
    let (beta, _) = rows(&clean, "dbo.Beta", false).unwrap();
    let mut beta_pages: Vec<PageId> = beta.iter().map(|(p, _)| *p).collect();
    beta_pages.dedup();
    assert!(beta_pages.len() >= 10, "{}", beta_pages.len());
    let damaged = beta_pages[beta_pages.len() / 2];
    let at = damaged.page as usize * PAGE;
    let page = &mut files[0].bytes[at..at + PAGE];
    page[32..36].copy_from_slice(&4_264_431_066u32.to_le_bytes());
    page[36..38].copy_from_slice(&37_950u16.to_le_bytes());
    mdfkit_forge::page::seal(page);

    let (db, pages) = open(full_backup(&files));
    assert!(pages.notes().is_empty(), "one page does not move its extent: {:?}", pages.notes());
    assert_exact(&spec, &db, Some("dbo.Beta"));

    let e = rows(&db, "dbo.Beta", false).unwrap_err();
    assert!(e.to_string().contains(&format!("page {damaged}")), "{e}");

    let (salvaged, skipped) = rows(&db, "dbo.Beta", true).unwrap();
    assert_eq!(skipped, 1);
    let want: Vec<(PageId, String)> = beta.into_iter().filter(|(p, _)| *p != damaged).collect();
    assert_eq!(sorted(&salvaged), sorted(&want));

    let (problems, _) = mdfkit::check::check_pages(pages.as_ref(), |_| {});
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].page, Some(damaged));
    assert!(problems[0].what.contains("37950:4264431066"), "{}", problems[0]);
}

/// The GAM page copied into the stream predates an extent (allocated while the backup ran): the
/// stream holds one extent more than the map lists, placed by its headers.
#[test]
fn an_extent_missing_from_the_copied_map_is_still_read() {
    let spec = spec();
    let mut files = forge(&spec).unwrap();
    let extents = copied_extents(&files);
    // The last uniform extent of file 1, marked free in the GAM copy.
    let &(_, first) = extents.iter().rev().find(|(f, p)| *f == 1 && *p >= 64).unwrap();
    let gam = &mut files[0].bytes[2 * PAGE..3 * PAGE];
    let slot1 = u16::from_le_bytes([gam[PAGE - 4], gam[PAGE - 3]]) as usize;
    let bit = first as usize / 8;
    gam[slot1 + 4 + bit / 8] |= 1 << (bit % 8);
    mdfkit_forge::page::seal(gam);
    let (db, pages) = open(backup_of_extents(&files, &extents, &[]));
    assert!(
        pages.notes().iter().any(|n| n.contains(&format!("extent 1:{first} is in the data stream but not in"))),
        "{:?}",
        pages.notes()
    );
    assert_exact(&spec, &db, None);
}

/// Stripe 1 of a two-stripe backup, read for salvage without stripe 2, which holds one extent
/// whose eight pages are all dbo.Beta's (a heap): Beta's rows on every other page come back
/// exact, its eight missing pages are skipped, and every other table is whole.
#[test]
fn one_stripe_of_two_is_read_for_salvage() {
    let spec = spec();
    let files = forge(&spec).unwrap();
    let (db, _) = open(full_backup(&files));
    let (beta, _) = rows(&db, "dbo.Beta", false).unwrap();
    assert_eq!(sorted(&beta), expected(&spec, 1));
    let mut pages_by_extent: std::collections::BTreeMap<u32, std::collections::BTreeSet<u32>> = Default::default();
    for (page, _) in &beta {
        pages_by_extent.entry(page.page / 8 * 8).or_default().insert(page.page);
    }
    let missing = *pages_by_extent.iter().find(|(_, pages)| pages.len() == 8).expect("a uniform extent of dbo.Beta").0;
    let given: Vec<(u16, u32)> = copied_extents(&files).into_iter().filter(|&e| e != (1, missing)).collect();
    let stripe = as_stripe(backup_of_extents(&files, &given, &[]), 9, 1, 2);
    let refused = BackupFiles::from_bytes(vec![("stripe1.bak".into(), stripe.clone())]).unwrap().into_pages(None);
    assert!(refused.is_err());
    let (pages, _) =
        BackupFiles::from_bytes(vec![("stripe1.bak".into(), stripe)]).unwrap().into_pages_salvaging(None).unwrap();
    assert_eq!(pages.missing_extents(), [PageId::new(1, missing)]);
    let db = Database::from_source(Arc::new(pages)).unwrap();
    let (got, skipped) = rows(&db, "dbo.Beta", true).unwrap();
    let present: Vec<(PageId, String)> = beta.iter().filter(|(p, _)| p.page / 8 * 8 != missing).cloned().collect();
    assert!(present.len() < beta.len());
    assert_eq!(sorted(&got), sorted(&present));
    assert_eq!(skipped, 8);
    assert_exact(&spec, &db, Some("dbo.Beta"));
}
