//! Damage to real files: deterministic random damage to copies of corpus files of different
//! versions, then `mdfkit check` (pages, then allocation and structure through the catalog).
//!
//! Kinds of damage: flipped bytes in an allocated page, a zeroed page, two pages swapped, the
//! tail cut off (at a page boundary and not), a page header overwritten with random bytes. For
//! each kind the detection rate is printed; detection is required where the format makes it
//! certain:
//! - on checksum-protected pages every flip that leaves the page's checksum wrong is found (a flip
//!   can also clear the checksum flag, or two flips can cancel in the checksum: no checksum can
//!   see those, they are counted apart);
//! - a zeroed, swapped or re-headed allocated page is found on every file (its header no longer
//!   names its own address);
//! - a truncated file is found (refused when not whole pages, else by the file header's size or
//!   the pages the catalog can no longer reach).
//!
//! No run may panic or take longer than [`RUN_LIMIT`] (a watchdog fails the test), and the
//! process's peak memory stays under [`MEMORY_CAP_MB`].
//!
//! A second test goes over every data file of the corpus (`MANIFEST.tsv`), one copy per kind of
//! the four a failing disk makes (flipped bytes, a zeroed page, two pages swapped, the tail cut
//! off), with the stricter promise a user recovering such a file relies on: the clean file
//! checks clean, every mutation that changed an allocated page is flagged (a flip on a page
//! without checksum is found only where the check reads it: those are counted, not required),
//! and a salvage scan of every table returns every row of every page the damage left alone,
//! exactly as the clean file has it.

mod common;

use common::Rng;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mdfkit::check::{check_on, check_pages};
use mdfkit::page::allocation::pfs_says_allocated;
use mdfkit::page::protection::page_checksum;
use mdfkit::page::{PageId, FLAG_CHECKSUM, PAGE_SIZE};
use mdfkit::scan::Flow;
use mdfkit::source::{DataFiles, PageReader, PageSource};
use mdfkit::Database;

/// One run (open + both checks of one damaged copy) must finish within this.
const RUN_LIMIT: Duration = Duration::from_secs(20);
/// Peak resident memory of the whole test process.
const MEMORY_CAP_MB: u64 = 1024;
/// Damaged copies per kind and file.
const COPIES: usize = 8;

/// Corpus files of different on-disk versions; Northwind uses torn-page detection, the others
/// checksums.
const FILES: &[&str] = &[
    "mdf/itsligo-sampledbs__pubs.mdf",                             // 655
    "mdf/itsligo-sampledbs__bookshop.mdf",                         // 661
    "mdf/xxxnemesis4xxx-sql_server__northwnd.mdf",                 // 661, torn-page
    "mdf/chakarview-sec-hu__app_data-ca68503d-database.mdf",       // 706
    "mdf/itonkic-chiropractic-center-app__69cf83f1-database1.mdf", // 782
    "mdf/gamf-vizualis-pr-wpf-efc-df-products__products.mdf",      // 852
    "mdf/adamhrth-wapp-assignment__educationdb.mdf",               // 904
    "mdf/nicklyb-wapp__educonnectdatabase.mdf",                    // 998
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    FlippedBytes,
    ZeroedPage,
    SwappedPages,
    TruncatedAtPage,
    TruncatedMidPage,
    RandomHeader,
}

const KINDS: [Kind; 6] = [
    Kind::FlippedBytes,
    Kind::ZeroedPage,
    Kind::SwappedPages,
    Kind::TruncatedAtPage,
    Kind::TruncatedMidPage,
    Kind::RandomHeader,
];

/// One damaged copy and what a check must find.
struct Damaged {
    bytes: Vec<u8>,
    /// Pages damaged (empty for truncation: the whole file is).
    pages: Vec<u32>,
    /// Whether a checksum must see it: every damaged page still claims a checksum that its bytes
    /// no longer give.
    checksum_visible: bool,
}

/// What the checks said about one copy.
#[derive(Debug, Default)]
struct Outcome {
    /// The file was refused as a data file, or the database did not open.
    refused: Option<String>,
    /// Pages named by a problem.
    flagged: Vec<PageId>,
    problems: usize,
}

fn has_checksum(page: &[u8]) -> bool {
    u16::from_le_bytes([page[4], page[5]]) & FLAG_CHECKSUM != 0
}

fn checksum_wrong(page: &[u8]) -> bool {
    has_checksum(page) && page_checksum(page) != u32::from_le_bytes(page[60..64].try_into().unwrap())
}

/// Pages of the clean file the PFS marks allocated (the only pages `check_pages` looks at).
fn allocated_pages(name: &str, bytes: &[u8]) -> Vec<u32> {
    let source = Arc::new(DataFiles::from_memory(vec![(name.to_string(), bytes.to_vec())]).unwrap());
    let count = source.files()[0].page_count;
    assert!(count < 8088, "{name}: more than one PFS interval; this test reads only the first");
    let pfs = PageReader::new(source).read(PageId::new(1, 1)).unwrap();
    (0..count).filter(|&p| p < 4 || pfs_says_allocated(&pfs, PageId::new(1, p)).unwrap()).collect()
}

fn damage(kind: Kind, clean: &[u8], allocated: &[u32], rng: &mut Rng) -> Damaged {
    let mut bytes = clean.to_vec();
    let page_range = |p: u32| p as usize * PAGE_SIZE..(p as usize + 1) * PAGE_SIZE;
    match kind {
        Kind::FlippedBytes => {
            let p = allocated[rng.below(allocated.len())];
            let page = &mut bytes[page_range(p)];
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(PAGE_SIZE);
                page[at] ^= 1 + rng.below(255) as u8;
            }
            let checksum_visible = checksum_wrong(page);
            Damaged { bytes, pages: vec![p], checksum_visible }
        }
        Kind::ZeroedPage => {
            let p = allocated[rng.below(allocated.len())];
            bytes[page_range(p)].fill(0);
            Damaged { bytes, pages: vec![p], checksum_visible: false }
        }
        Kind::SwappedPages => {
            let a = allocated[rng.below(allocated.len())];
            let mut b = allocated[rng.below(allocated.len())];
            while b == a || clean[page_range(a)] == clean[page_range(b)] {
                b = allocated[rng.below(allocated.len())];
            }
            let page_a = clean[page_range(a)].to_vec();
            bytes.copy_within(page_range(b), page_range(a).start);
            bytes[page_range(b)].copy_from_slice(&page_a);
            Damaged { bytes, pages: vec![a, b], checksum_visible: false }
        }
        Kind::TruncatedAtPage | Kind::TruncatedMidPage => {
            // Cut somewhere in the last three quarters of the allocated pages.
            let last = *allocated.last().unwrap() as usize;
            let mut keep = (last / 4 + rng.below(last - last / 4 + 1)) * PAGE_SIZE;
            if kind == Kind::TruncatedMidPage {
                keep += 1 + rng.below(PAGE_SIZE - 1);
            }
            bytes.truncate(keep);
            Damaged { bytes, pages: Vec::new(), checksum_visible: false }
        }
        Kind::RandomHeader => {
            let p = allocated[rng.below(allocated.len())];
            let page = &mut bytes[page_range(p)];
            for b in &mut page[..96] {
                *b = rng.next() as u8;
            }
            let checksum_visible = checksum_wrong(page);
            Damaged { bytes, pages: vec![p], checksum_visible }
        }
    }
}

/// Opens and checks one copy the way `mdfkit check` does.
fn check(name: &str, bytes: Vec<u8>) -> Outcome {
    let mut outcome = Outcome::default();
    let source = match DataFiles::from_memory(vec![(name.to_string(), bytes)]) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            outcome.refused = Some(e.to_string());
            return outcome;
        }
    };
    let mut add = |problems: &[mdfkit::check::Problem]| {
        outcome.problems += problems.len();
        outcome.flagged.extend(problems.iter().filter_map(|p| p.page));
    };
    match Database::from_source(source.clone()) {
        Ok(db) => match check_on(&db, 1, &|_| {}) {
            Ok((problems, _)) => add(&problems),
            Err(e) => {
                add(&check_pages(source.as_ref(), |_| {}).0);
                outcome.refused = Some(e.to_string());
            }
        },
        Err(e) => {
            add(&check_pages(source.as_ref(), |_| {}).0);
            outcome.refused = Some(e.to_string());
        }
    }
    outcome
}

/// Runs `check` on its own thread; fails the test if it panics or outlives [`RUN_LIMIT`].
fn watched(name: &str, what: &str, bytes: Vec<u8>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let owned = name.to_string();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(check(&owned, bytes));
    });
    match rx.recv_timeout(RUN_LIMIT) {
        Ok(outcome) => {
            worker.join().unwrap();
            outcome
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let panic = worker.join().err().and_then(|p| {
                p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            });
            panic!("{name} ({what}): check panicked: {panic:?}")
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name} ({what}): check still running after {RUN_LIMIT:?}"),
    }
}

/// The file name and bytes of corpus file `file`, which must check clean.
fn read_clean<'a>(dir: &std::path::Path, file: &'a str) -> (&'a str, Vec<u8>) {
    let clean = std::fs::read(dir.join(file)).unwrap();
    let name = file.rsplit('/').next().unwrap();
    let baseline = watched(name, "clean", clean.clone());
    assert!(
        baseline.refused.is_none() && baseline.problems == 0,
        "{name}: the clean file does not check clean: {baseline:?}"
    );
    (name, clean)
}

/// Peak resident set size of this process, in MB (Linux; `None` elsewhere).
fn peak_memory_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb / 1024)
}

#[derive(Default)]
struct Tally {
    runs: usize,
    detected: usize,
    /// Runs a checksum must catch, and how many of those were caught.
    checksum_visible: usize,
    checksum_caught: usize,
    missed: Vec<String>,
}

#[test]
fn damaged_corpus_files_are_flagged_without_panics_hangs_or_memory_blowup() {
    let Some(dir) = common::corpus_dir() else { return };
    let started = Instant::now();
    let mut rng = Rng(0x5eed_da7a_9e37_79b9);
    let mut tallies: BTreeMap<Kind, Tally> = BTreeMap::new();
    for file in FILES {
        let (name, clean) = read_clean(&dir, file);
        let allocated = allocated_pages(name, &clean);
        for kind in KINDS {
            for copy in 0..COPIES {
                let damaged = damage(kind, &clean, &allocated, &mut rng);
                let what = format!("{kind:?} #{copy} of pages {:?}", damaged.pages);
                let outcome = watched(name, &what, damaged.bytes);
                let detected = match kind {
                    // Any finding: the file as a whole is damaged.
                    Kind::TruncatedAtPage | Kind::TruncatedMidPage => outcome.refused.is_some() || outcome.problems > 0,
                    // A damaged page must be named, or the file refused because of it.
                    _ => {
                        damaged.pages.iter().all(|p| outcome.flagged.contains(&PageId::new(1, *p)))
                            || outcome.refused.is_some() && damaged.pages.iter().any(|&p| p < 2)
                    }
                };
                let tally = tallies.entry(kind).or_default();
                tally.runs += 1;
                tally.detected += usize::from(detected);
                if damaged.checksum_visible {
                    tally.checksum_visible += 1;
                    tally.checksum_caught += usize::from(detected);
                }
                if !detected {
                    tally.missed.push(format!("{name} {what}: {outcome:?}"));
                }
            }
        }
        if let Some(mb) = peak_memory_mb() {
            assert!(mb < MEMORY_CAP_MB, "peak memory {mb} MB after {name}, over the {MEMORY_CAP_MB} MB cap");
        }
    }
    println!("damage detection ({} files, {COPIES} copies per kind and file):", FILES.len());
    for (kind, t) in &tallies {
        println!(
            "  {:<17} {:>3}/{:<3} detected ({:.0}%); caught by checksum where it must be: {}/{}",
            format!("{kind:?}"),
            t.detected,
            t.runs,
            100.0 * t.detected as f64 / t.runs as f64,
            t.checksum_caught,
            t.checksum_visible
        );
        for m in &t.missed {
            println!("    missed: {m}");
        }
    }
    println!("peak memory {:?} MB, {:.1} s", peak_memory_mb(), started.elapsed().as_secs_f64());
    for (kind, t) in &tallies {
        assert_eq!(t.checksum_caught, t.checksum_visible, "{kind:?}: a page with a wrong checksum went unreported");
        if *kind != Kind::FlippedBytes {
            assert!(t.missed.is_empty(), "{kind:?}: not every damaged copy was flagged: {:#?}", t.missed);
        }
    }
    // Flips on the torn-page file are found only where they touch a sector's stamp bits.
    let flips = &tallies[&Kind::FlippedBytes];
    assert!(flips.detected * 100 >= flips.runs * 80, "flipped bytes: only {}/{} detected", flips.detected, flips.runs);
    assert!(flips.checksum_visible * 100 >= flips.runs * 70, "too few flips reached checksum-protected pages");
}

/// The corpus' data files (kind `mdf` in `MANIFEST.tsv`), by path in the corpus.
fn corpus_data_files(dir: &std::path::Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').collect::<Vec<_>>().get(..2).map(|f| (f[0], f[1])))
        .filter(|(_, kind)| *kind == "mdf")
        .map(|(path, _)| path.to_string())
        .collect()
}

/// Every row of every user table as (page, slot) → the row spelled out; with `salvage`, damaged
/// pages and records are skipped instead of ending the scan.
fn rows_by_location(db: &Database, salvage: bool) -> BTreeMap<(PageId, u16), String> {
    let mut rows = BTreeMap::new();
    for table in db.catalog().tables(false) {
        for partition in &table.partitions {
            let Ok(decoder) = db.row_decoder(&table, partition.partition_id, None) else { continue };
            let mut values = Vec::new();
            let name = table.qualified_name();
            let _ = db.scan(&table).salvage(salvage).partition_records(partition, |record, at| {
                if decoder.decode(record, &mut values).is_ok() {
                    let row = values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|");
                    rows.insert((at.page, at.slot), format!("{name}: {row}"));
                }
                Ok(Flow::Continue)
            });
        }
    }
    rows
}

/// The four kinds of damage a failing disk makes.
const DISK_KINDS: [Kind; 4] = [Kind::FlippedBytes, Kind::ZeroedPage, Kind::SwappedPages, Kind::TruncatedAtPage];

#[test]
fn every_corpus_data_file_damaged_is_flagged_and_salvage_returns_every_undamaged_row() {
    let Some(dir) = common::corpus_dir() else { return };
    let started = Instant::now();
    let mut rng = Rng(0xd15c_fa11_5eed_0001);
    let files = corpus_data_files(&dir);
    assert!(files.len() >= 30, "only {} data files in the corpus manifest", files.len());
    let (mut runs, mut unchanged, mut salvage_checked, mut unseen_flips) = (0, 0, 0, Vec::new());
    let mut files_with_rows = 0;
    let mut missed = Vec::new();
    for file in &files {
        let (name, clean) = read_clean(&dir, file);
        let clean_db =
            Database::from_source(Arc::new(DataFiles::from_memory(vec![(name.to_string(), clean.clone())]).unwrap()))
                .unwrap();
        let clean_rows = rows_by_location(&clean_db, false);
        let allocated = allocated_pages(name, &clean);
        // A zeroed page and a swap hit pages holding user rows (where a file has two): the rows
        // around them are what salvage must keep.
        let mut user_row_pages: Vec<u32> = clean_rows.keys().map(|(at, _)| at.page).collect();
        user_row_pages.dedup();
        files_with_rows += usize::from(user_row_pages.len() >= 2);
        for kind in DISK_KINDS {
            let targets = match kind {
                Kind::ZeroedPage | Kind::SwappedPages if user_row_pages.len() >= 2 => &user_row_pages,
                _ => &allocated,
            };
            let damaged = damage(kind, &clean, targets, &mut rng);
            let changed: Vec<u32> = damaged
                .pages
                .iter()
                .copied()
                .filter(|&p| {
                    let range = p as usize * PAGE_SIZE..(p as usize + 1) * PAGE_SIZE;
                    damaged.bytes.get(range.clone()) != clean.get(range)
                })
                .collect();
            if kind != Kind::TruncatedAtPage && changed.is_empty() {
                unchanged += 1;
                continue;
            }
            runs += 1;
            let what = format!("{kind:?} of pages {changed:?}");
            let bytes = damaged.bytes.clone();
            let outcome = watched(name, &what, damaged.bytes);
            let flagged = match kind {
                Kind::TruncatedAtPage => outcome.refused.is_some() || outcome.problems > 0,
                _ => {
                    changed.iter().all(|p| outcome.flagged.contains(&PageId::new(1, *p)))
                        || outcome.refused.is_some() && changed.iter().any(|&p| p < 2)
                }
            };
            let protected = changed.iter().all(|&p| has_checksum(&clean[p as usize * PAGE_SIZE..][..PAGE_SIZE]));
            if !flagged && kind == Kind::FlippedBytes && !protected {
                unseen_flips.push(format!("{name} {what}"));
            } else if !flagged {
                missed.push(format!("{name} {what}: {outcome:?}"));
            }
            // Salvage: every row of every page the damage left alone comes back as it was.
            if kind == Kind::TruncatedAtPage || outcome.refused.is_some() {
                continue;
            }
            let Ok(source) = DataFiles::from_memory(vec![(name.to_string(), bytes)]) else { continue };
            let Ok(db) = Database::from_source(Arc::new(source)) else { continue };
            let salvaged = rows_by_location(&db, true);
            let lost: Vec<&String> = clean_rows
                .iter()
                .filter(|((page, _), _)| !changed.contains(&page.page))
                .filter(|(at, row)| salvaged.get(at) != Some(row))
                .map(|(_, row)| row)
                .collect();
            // Damage to the catalog or an IAM page can hide a whole table: only damage to user
            // rows' pages (or to pages holding none) is held to returning every other row.
            let hit_user_rows = changed.iter().any(|&p| clean_rows.keys().any(|(at, _)| at.page == p));
            let hit_structure = changed.iter().any(|&p| {
                let page = &clean[p as usize * PAGE_SIZE..][..PAGE_SIZE];
                page[1] != 1 || u32::from_le_bytes(page[24..28].try_into().unwrap()) < 100
            });
            if hit_structure && !hit_user_rows {
                continue;
            }
            salvage_checked += 1;
            assert!(
                lost.is_empty(),
                "{name} {what}: salvage lost {} rows of undamaged pages, first {:?}",
                lost.len(),
                &lost[..lost.len().min(3)]
            );
        }
    }
    println!(
        "{} data files: {runs} damaged copies ({unchanged} mutations changed nothing), {} flagged, \
         {} flips on unprotected pages unseen, salvage checked on {salvage_checked}, {:.1} s",
        files.len(),
        runs - missed.len() - unseen_flips.len(),
        unseen_flips.len(),
        started.elapsed().as_secs_f64()
    );
    for flip in &unseen_flips {
        println!("  unseen (no checksum): {flip}");
    }
    assert!(missed.is_empty(), "damage not flagged: {missed:#?}");
    assert!(
        salvage_checked >= 2 * files_with_rows,
        "salvage checked on {salvage_checked} damaged copies, fewer than two for each of the {files_with_rows} files with rows"
    );
}
