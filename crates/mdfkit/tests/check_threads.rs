//! The page check on several threads finds exactly what it finds on one, problem for problem and
//! in the same order, with the same counts: on every data file of the corpus as it is, with bytes
//! flipped across its pages, and with its PFS page's record out of reach as well (every page of the
//! interval is then checked as allocated, the junk pages past the last allocation included, so problems come
//! from most tasks). So does the catalog pass (allocation, chains, rows, key order), on every data
//! file as it is and with bytes flipped in half the pages holding its tables' rows, checksums left
//! wrong or recomputed (then rows fail to decode and keys go out of order instead). And the whole
//! check (`check_on`, each page read once for both passes) finds on those copies exactly what the
//! page pass then the catalog pass find, on one thread and on four, its progress reaching every
//! page of the file.

mod common;

use common::Rng;

use mdfkit::check::{check_catalog_on, check_on, check_pages_on, CheckStats, Problem};
use mdfkit::page::{FLAG_CHECKSUM, PAGE_SIZE};
use mdfkit::source::DataFiles;

fn check(name: &str, bytes: &[u8], threads: usize) -> (Vec<Problem>, CheckStats, u64) {
    let source = DataFiles::from_memory(vec![(name.to_string(), bytes.to_vec())]).unwrap();
    let mut last_progress = 0;
    let (problems, stats) = check_pages_on(&source, threads, |n| {
        assert!(n >= last_progress, "{name}: progress went back from {last_progress} to {n}");
        last_progress = n;
    });
    (problems, stats, last_progress)
}

/// A byte flipped in every fifth page from page 4 on (file header, PFS, GAM and SGAM spared).
fn flipped(clean: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = clean.to_vec();
    for page in (4..bytes.len() / PAGE_SIZE).step_by(5) {
        let at = page * PAGE_SIZE + 96 + rng.below(PAGE_SIZE - 96);
        bytes[at] ^= 1 << rng.below(8);
    }
    bytes
}

/// The corpus' data files (MANIFEST.tsv's `mdf` rows).
fn data_files(dir: &std::path::Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let files: Vec<String> = manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').collect::<Vec<_>>().get(..2).map(|f| (f[0].to_string(), f[1] == "mdf")))
        .filter_map(|(path, mdf)| mdf.then_some(path))
        .collect();
    assert!(files.len() >= 30, "MANIFEST.tsv lists {} data files", files.len());
    files
}

/// The pages holding rows of the user tables of a data file (`bytes`), in scan order.
fn row_pages(name: &str, bytes: &[u8]) -> Vec<usize> {
    let source = DataFiles::from_memory(vec![(name.to_string(), bytes.to_vec())]).unwrap();
    let db = mdfkit::Database::from_source(std::sync::Arc::new(source)).unwrap();
    let mut pages = Vec::new();
    for table in db.catalog().tables(false) {
        // Tables this version does not read are passed over; a clean file has no other error.
        let _ = db.scan(&table).records(|_, at| {
            if pages.last() != Some(&(at.page.page as usize)) {
                pages.push(at.page.page as usize);
            }
            Ok(mdfkit::scan::Flow::Continue)
        });
    }
    pages
}

/// A byte flipped past the header of every other page of `pages`; with `resum`, the checksum of
/// a checksummed page is computed again.
fn flipped_in(clean: &[u8], pages: &[usize], rng: &mut Rng, resum: bool) -> Vec<u8> {
    let mut bytes = clean.to_vec();
    for &page in pages.iter().step_by(2) {
        let page = &mut bytes[page * PAGE_SIZE..][..PAGE_SIZE];
        page[96 + rng.below(PAGE_SIZE - 96 - 64)] ^= 1 << rng.below(8);
        if resum && u16::from_le_bytes([page[4], page[5]]) & FLAG_CHECKSUM != 0 {
            let checksum = mdfkit::page::protection::page_checksum(page);
            page[60..64].copy_from_slice(&checksum.to_le_bytes());
        }
    }
    bytes
}

#[test]
fn the_catalog_pass_finds_the_same_on_one_thread_and_on_four() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut rng = Rng(0xca7a_1065);
    let (mut damaged_problems, mut opened, mut keys_out_of_order) = (0, 0, 0);
    for file in data_files(&dir) {
        let clean = std::fs::read(dir.join(&file)).unwrap();
        let pages = row_pages(&file, &clean);
        let flipped = flipped_in(&clean, &pages, &mut rng, false);
        let resummed = flipped_in(&clean, &pages, &mut rng, true);
        for (what, bytes) in [("clean", clean), ("flipped", flipped), ("flipped, checksums recomputed", resummed)] {
            let source = DataFiles::from_memory(vec![(file.clone(), bytes)]).unwrap();
            // A flip in a catalog page can keep the catalog from opening: nothing to compare.
            let Ok(db) = mdfkit::Database::from_source(std::sync::Arc::new(source)) else { continue };
            opened += 1;
            let one = check_catalog_on(&db, 1).map_err(|e| e.to_string());
            let four = check_catalog_on(&db, 4).map_err(|e| e.to_string());
            assert_eq!(one, four, "{file} ({what}): catalog pass on 1 thread and on 4");
            let (mut passes, mut pass_stats) = check_pages_on(db.reader().source(), 1, |_| {});
            if let Ok((catalog, catalog_stats)) = &one {
                passes.extend(catalog.iter().cloned());
                pass_stats.allocation_units_checked = catalog_stats.allocation_units_checked;
                pass_stats.rows_checked = catalog_stats.rows_checked;
                pass_stats.index_records_checked = catalog_stats.index_records_checked;
            }
            let pages: u64 = db.reader().source().files().iter().map(|f| u64::from(f.page_count)).sum();
            for threads in [1, 4] {
                let progress = std::sync::atomic::AtomicU64::new(0);
                let whole = check_on(&db, threads, &|n| {
                    progress.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
                });
                let whole = whole.map_err(|e| e.to_string());
                let expected = one.clone().map(|_| (passes.clone(), pass_stats));
                assert_eq!(whole, expected, "{file} ({what}): the whole check on {threads} threads and the two passes");
                assert_eq!(progress.into_inner(), pages, "{file} ({what}): progress ends at every page");
            }
            let problems = one.map(|(p, _)| p).unwrap_or_default();
            if what == "clean" {
                assert!(problems.is_empty(), "{file}: {problems:?}");
            } else {
                damaged_problems += problems.len();
                keys_out_of_order += problems.iter().filter(|p| p.what.contains("clustered key lower")).count();
            }
        }
    }
    eprintln!(
        "catalog pass: {opened} copies opened, {damaged_problems} problems in the damaged ones \
         ({keys_out_of_order} keys out of order), the same on 1 thread and on 4"
    );
    assert!(opened >= 60, "only {opened} copies opened");
    assert!(damaged_problems > 100, "the damaged copies gave only {damaged_problems} problems");
}

#[test]
fn one_thread_and_four_find_the_same_problems_in_the_same_order() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = data_files(&dir);
    let mut rng = Rng(0x5eed_c4ec);
    let mut damaged_problems = 0;
    for file in &files {
        let clean = std::fs::read(dir.join(file)).unwrap();
        let pages = (clean.len() / PAGE_SIZE) as u64;
        let mut no_pfs = flipped(&clean, &mut rng);
        no_pfs[2 * PAGE_SIZE - 2..2 * PAGE_SIZE].copy_from_slice(&9000u16.to_le_bytes());
        for (what, bytes) in
            [("clean", clean.clone()), ("flipped", flipped(&clean, &mut rng)), ("PFS slot out of the page", no_pfs)]
        {
            let one = check(file, &bytes, 1);
            let four = check(file, &bytes, 4);
            assert_eq!(one.0, four.0, "{file} ({what}): problems on 1 thread and on 4");
            assert_eq!(one.1, four.1, "{file} ({what}): counts on 1 thread and on 4");
            assert_eq!(one.1.pages_checked + one.1.pages_skipped_unallocated, pages, "{file} ({what}): pages counted");
            assert_eq!((one.2, four.2), (pages, pages), "{file} ({what}): progress ends at every page");
            if what == "PFS slot out of the page" {
                assert!(
                    one.0.first().is_some_and(|p| p.what.starts_with("PFS page unreadable")),
                    "{file}: the damaged PFS page is reported first: {:?}",
                    one.0.first()
                );
            }
            if what != "clean" {
                damaged_problems += one.0.len();
            }
        }
    }
    eprintln!("{damaged_problems} problems in the damaged copies, the same on 1 thread and on 4");
    assert!(damaged_problems > 1000, "the damaged copies gave only {damaged_problems} problems");
}
