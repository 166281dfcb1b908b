//! A physical consistency check in the spirit of `DBCC CHECKDB WITH PHYSICAL_ONLY`.
//!
//! Two passes:
//! 1. **Pages** ([`check_pages`]), which needs no catalog: every page the PFS pages mark allocated
//!    must pass its checksum or torn-page check, name its own address, have a slot array that fits
//!    and records that parse. Pages not marked allocated are skipped: files keep unformatted and
//!    freed pages (the corpus' Northwind has 50 junk pages past its last allocation). A PAGE
//!    compressed page's CI structure must parse (header, anchor record, dictionary within its
//!    size) and its records start after it; CD records (status bit 0 set) parse as CD records,
//!    on index pages as index records, each on a non-leaf page ending with its child page.
//! 2. **Allocation and structure** ([`check_catalog`]), when the catalog opens: each allocation
//!    unit's IAM chain is readable, no extent is owned by two units, every allocated page an IAM
//!    chain owns belongs to that unit (or is not formatted yet), each clustered index's leaf
//!    chain is acyclic with previous/next links that agree, and every row of every table reads
//!    back whole (forwarding stubs, LOB and row-overflow links, value sizes).
//!
//! Every problem is reported with its page and, where known, the object it belongs to.
//!
//! The page pass runs on several threads ([`check_pages_on`]): tasks of contiguous pages, read in
//! order, their findings put back in task order, so the report is the same for any thread count.
//! So does the catalog pass ([`check_catalog_on`]): each allocation unit's pages are read once, in
//! tasks of 64 pages (a heap's for their owner and rows together, a clustered index's along its
//! leaf chain, walked on one thread and handed on in chain order), its rows decoded by the scan's
//! own column decoders into Arrow batches (`table_scan::PageRows`) rather than built as values,
//! keys compared on the batches' columns (exact integers: unscaled decimals, days, time units;
//! text and binary columns verified without being spelled, `BatchBuilder::verifying`); so are
//! the keys of nonclustered indexes, a leaf page's records in one batch.
//!
//! A whole check ([`check_on`]) reads a page once where both passes need it: the catalog pass
//! checks, as the page pass would, every page it reads that the page pass checks, and the page
//! pass takes what it found there and reads only the others (system pages, pages of no unit).
//! LOB pages are still read twice: for their owner, and by the rows whose values they hold.
//!
//! The work and the report are bounded by what the source holds, not by what its pages claim: a
//! PFS interval whose PFS page the source cannot serve is one problem (a backup's file list can
//! claim terabytes it never copied), a page names its first 8 bad slots (`SLOT_PROBLEMS_NAMED`) and
//! counts the rest, IAM extents outside the files are counted per IAM page and never kept, and
//! every chain (IAM, leaf level) is walked once.
//!
//! What a check holds does not grow with the rows or with a unit's pages, only by bits a page of
//! the files (measured: the whole check of a forged 1 GB and 8 GB database peaks at 10 and 11 MB
//! on one thread, 14 and 16 MB on two; docs/PERFORMANCE.md, "Check memory"), about 1.1 bytes a
//! page in all (70 MB for a 500 GB file):
//! - which pages the page pass checks and which the catalog pass checked already: two bits a
//!   page (`CheckedPages`); the owner of each extent met so far: four bytes an extent, half a
//!   byte a page (`ExtentOwners`); for the unit being checked, the pages its leaf chain visited
//!   and read, one bit a page each (`PageSet`), and the pages its IAM chain maps, handed out one
//!   at a time with one bit a page of the stretches they lie in (`scan::MappedPages`: a list
//!   and a set of them took 12 MB of the 8 GB database's check);
//! - a constant, and one row decoder per partition of the catalog's tables: at most
//!   `2 × threads` tasks of 64 pages in flight and their Arrow batches, a PFS page per
//!   page-pass task in flight, four IAM pages and a PFS page for the unit being checked;
//! - the problems found (a page names at most 8 bad slots, an index at most 8 problems);
//! - for a clustered table with nonclustered indexes, while they are checked: each row's
//!   clustered key, spelled, with a count, up to `KEYS_NAMED_BYTES` (8 MiB) a partition (and a copy an
//!   index walk in flight), so that a row locator no row has is named; past it, only a 128-bit
//!   sum of the keys' hashes (`ClusteredKeys`), which an index's locators must add up to.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};

use crate::bytes::read_u16;
use crate::catalog::base::AllocationUnit;
use crate::catalog::model::{PartitionInfo, TableInfo};
use crate::columnar::BatchBuilder;
use crate::database::Database;
use crate::error::Result;
use crate::page::allocation::{pfs_intervals, pfs_page_for, IamPage, PFS_INTERVAL};
use crate::page::compression_info::{CompressionInfo, PAGE_HAS_CI_STRUCTURE};
use crate::page::protection::{self, Verdict};
use crate::page::{Page, PageHeader, PageId, PageType, HEADER_SIZE, PAGE_SIZE};
use crate::record::cd::{CdRecord, CdRecordType};
use crate::record::{Record, RecordFormat, RecordType};
use crate::rows::RowDecoder;
use crate::scan::{self, RowLocation, ScanMode, ScanStats};
use crate::scans::table_scan::PageRows;
use crate::source::{PageReader, PageSource};
use crate::value::Value;

/// Bit 0 of a record's first byte: the CD format (`record/cd.rs`).
const CD_FORMAT_BIT: u8 = 0x01;

/// Slots with problems named one by one on a page; more are counted in one problem.
const SLOT_PROBLEMS_NAMED: usize = 8;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The page concerned, when the problem is on a page.
    pub page: Option<PageId>,
    /// The table or catalog object concerned, when known.
    pub object: Option<String>,
    /// What is wrong, in words.
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = self.page {
            write!(f, "page {p}: ")?;
        }
        if let Some(o) = &self.object {
            write!(f, "{o}: ")?;
        }
        f.write_str(&self.what)
    }
}

/// What a check looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckStats {
    /// Pages read and verified.
    pub pages_checked: u64,
    /// Pages not read because the allocation maps say no object owns them.
    pub pages_skipped_unallocated: u64,
    /// Allocation units whose IAM chain and page chain were walked.
    pub allocation_units_checked: u64,
    /// Rows read back whole (every value, LOB and row-overflow links followed).
    pub rows_checked: u64,
    /// Leaf records of nonclustered indexes read back, their row locators followed.
    pub index_records_checked: u64,
}

/// Checks every allocated page of every file of `source` on this thread. `progress` is called
/// with the pages done so far. Same findings as [`check_pages_on`] with one thread.
pub fn check_pages(source: &dyn PageSource, progress: impl FnMut(u64)) -> (Vec<Problem>, CheckStats) {
    check_pages_on(source, 1, progress)
}

/// Checks every allocated page of every file of `source` on up to `threads` threads. `progress`
/// is called on this thread with the pages done so far.
///
/// The work is bounded by the pages the source holds, not by the page counts it claims: a PFS
/// interval whose PFS page the source cannot serve (a backup whose file list claims terabytes
/// more than it copied) is skipped whole, and a run of such intervals is one problem.
///
/// The pages are cut into tasks of contiguous pages (in file order); each thread
/// takes the next task, reads its pages in order and keeps its findings apart. The findings are
/// put back in task order after, so the report is the same, problem for problem and in the same
/// order, whatever the number of threads.
pub fn check_pages_on(
    source: &dyn PageSource,
    threads: usize,
    progress: impl FnMut(u64),
) -> (Vec<Problem>, CheckStats) {
    check_pages_after(source, threads, &CheckedPages::none(), progress)
}

/// [`check_pages_on`], the pages in `checked` taken as checked already, with what was found
/// (`progress` then counts only the other pages).
fn check_pages_after(
    source: &dyn PageSource,
    threads: usize,
    checked: &CheckedPages,
    mut progress: impl FnMut(u64),
) -> (Vec<Problem>, CheckStats) {
    let tasks = std::sync::Mutex::new(PageTasks::new(source));
    // (task index, its problems) of the tasks that found any, in the order they finished.
    let mut found: Vec<(usize, Vec<Problem>)> = Vec::new();
    let mut stats = CheckStats::default();
    let mut done = 0u64;
    if threads <= 1 {
        let mut buf = vec![0u8; PAGE_SIZE];
        while let Some(task) = next_task(&tasks) {
            let findings = task.check(source, checked, &mut buf);
            done += findings.pages_done;
            progress(done);
            keep(task.index, findings, &mut stats, &mut found);
        }
    } else {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..threads {
                let (tx, tasks) = (tx.clone(), &tasks);
                scope.spawn(move || {
                    let mut buf = vec![0u8; PAGE_SIZE];
                    while let Some(task) = next_task(tasks) {
                        if tx.send((task.index, task.check(source, checked, &mut buf))).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            for (index, findings) in rx {
                done += findings.pages_done;
                progress(done);
                keep(index, findings, &mut stats, &mut found);
            }
        });
    }
    found.sort_unstable_by_key(|(index, _)| *index);
    progress(done);
    (found.into_iter().flat_map(|(_, problems)| problems).collect(), stats)
}

/// Adds a task's counts to `stats` and keeps its problems, if any, under its index: memory grows
/// with the problems found, not with the size of the files.
fn keep(index: usize, findings: TaskFindings, stats: &mut CheckStats, found: &mut Vec<(usize, Vec<Problem>)>) {
    stats.pages_checked += findings.stats.pages_checked;
    stats.pages_skipped_unallocated += findings.stats.pages_skipped_unallocated;
    if !findings.problems.is_empty() {
        found.push((index, findings.problems));
    }
}

/// Pages one task of [`check_pages_on`] checks (1 MB): long enough that taking a task (a lock, a
/// message) costs nothing next to its reads, short enough that a small file still spreads over
/// the threads.
const PAGES_PER_CHECK_TASK: u32 = 128;

/// The next task, or `None` when there is none left (or a thread panicked holding the lock).
fn next_task(tasks: &std::sync::Mutex<PageTasks<'_>>) -> Option<PageTask> {
    tasks.lock().ok()?.next()
}

/// One task: the problems found before its pages (about the PFS page that maps them, or a run
/// of intervals not held), then pages `pages` of file `file_id`, with their interval's PFS bytes.
struct PageTask {
    index: usize,
    before: Vec<Problem>,
    pages_not_held: u64,
    file_id: u16,
    pages: std::ops::Range<u32>,
    pfs: std::sync::Arc<Vec<u8>>,
}

/// What one task found.
struct TaskFindings {
    problems: Vec<Problem>,
    stats: CheckStats,
    /// Pages looked at or skipped, for the progress count.
    pages_done: u64,
}

impl PageTask {
    /// Checks the task's pages, those in `checked` excepted (what was found there is taken).
    fn check(&self, source: &dyn PageSource, checked: &CheckedPages, buf: &mut [u8]) -> TaskFindings {
        let mut problems = self.before.clone();
        let mut stats = CheckStats::default();
        let mut taken = 0;
        for page in self.pages.clone() {
            let id = PageId::new(self.file_id, page);
            if !is_checked_in(page, &self.pfs) {
                stats.pages_skipped_unallocated += 1;
                continue;
            }
            stats.pages_checked += 1;
            if checked.take_findings(id, &mut problems) {
                taken += 1;
                continue;
            }
            if let Err(e) = source.read_raw(id, buf) {
                problems.push(Problem {
                    page: Some(id),
                    object: None,
                    what: format!("cannot be read: {}", e.message()),
                });
                continue;
            }
            check_one_page(id, buf, &mut problems);
        }
        let pages_done = self.pages_not_held + u64::from(self.pages.end - self.pages.start) - taken;
        TaskFindings { problems, stats, pages_done }
    }
}

/// Whether the page check looks at page `page` of a PFS interval whose PFS bytes are `pfs`: the
/// file header, PFS, GAM and SGAM pages are always in use (pages 4 and 5 are not: they are all
/// zero in every corpus file); the PFS tells about the rest.
fn is_checked_in(page: u32, pfs: &[u8]) -> bool {
    page < 4 || pfs.get((page % PFS_INTERVAL) as usize).is_some_and(|b| b & 0x40 != 0)
}

/// The tasks of a page check in file order, made one at a time under a lock: each PFS page is read
/// when its interval's first task is taken, so memory stays one PFS page per task in flight.
struct PageTasks<'a> {
    source: &'a dyn PageSource,
    file: usize,
    intervals: Option<Box<dyn Iterator<Item = std::ops::Range<u32>> + Send>>,
    /// The rest of the current interval and its PFS bytes.
    current: Option<(std::ops::Range<u32>, std::sync::Arc<Vec<u8>>)>,
    /// The first PFS page of a run of intervals the source does not hold, why, and the pages of
    /// the run.
    not_held: Option<(PageId, String, u64)>,
    next_index: usize,
}

impl<'a> PageTasks<'a> {
    fn new(source: &'a dyn PageSource) -> Self {
        PageTasks { source, file: 0, intervals: None, current: None, not_held: None, next_index: 0 }
    }

    fn task(
        &mut self,
        before: Vec<Problem>,
        pages_not_held: u64,
        pages: std::ops::Range<u32>,
        pfs: std::sync::Arc<Vec<u8>>,
    ) -> PageTask {
        let file_id = self.source.files()[self.file].file_id;
        self.next_index += 1;
        PageTask { index: self.next_index - 1, before, pages_not_held, file_id, pages, pfs }
    }
}

impl Iterator for PageTasks<'_> {
    type Item = PageTask;

    fn next(&mut self) -> Option<PageTask> {
        let mut before = Vec::new();
        let mut pages_not_held = 0;
        loop {
            if let Some((rest, pfs)) = self.current.take() {
                let end = rest.end.min(rest.start.saturating_add(PAGES_PER_CHECK_TASK));
                let pfs_again = pfs.clone();
                if end < rest.end {
                    self.current = Some((end..rest.end, pfs));
                }
                return Some(self.task(before, pages_not_held, rest.start..end, pfs_again));
            }
            let file = self.source.files().get(self.file)?;
            let intervals = self.intervals.get_or_insert_with(|| Box::new(pfs_intervals(file.page_count)));
            let Some(interval) = intervals.next() else {
                // The end of a file closes its run of intervals not held.
                report_not_held(self.not_held.take(), &mut before);
                let task = (!before.is_empty() || pages_not_held > 0)
                    .then(|| self.task(std::mem::take(&mut before), pages_not_held, 0..0, Default::default()));
                self.file += 1;
                self.intervals = None;
                match task {
                    Some(task) => return Some(task),
                    None => continue,
                }
            };
            let pfs_id = pfs_page_for(PageId::new(file.file_id, interval.start));
            match pfs_bytes(self.source, pfs_id, &mut before) {
                Ok(pfs) => {
                    report_not_held(self.not_held.take(), &mut before);
                    self.current = Some((interval, std::sync::Arc::new(pfs)));
                }
                Err(e) => {
                    let run = self.not_held.get_or_insert_with(|| (pfs_id, e.message().to_string(), 0));
                    let pages = u64::from(interval.end - interval.start);
                    run.2 += pages;
                    pages_not_held += pages;
                }
            }
        }
    }
}

/// Reports a run of PFS intervals the source does not hold: (first PFS page, why, pages).
fn report_not_held(run: Option<(PageId, String, u64)>, problems: &mut Vec<Problem>) {
    if let Some((first, why, pages)) = run {
        problems.push(Problem {
            page: Some(first),
            object: None,
            what: format!("PFS page cannot be read ({why}): the {pages} pages from here on were not checked"),
        });
    }
}

/// The PFS page's bytes (one per page of its interval); `Err` when the source cannot serve the
/// page at all. A PFS page that is there but damaged is reported, and its interval checked as
/// allocated.
fn pfs_bytes(source: &dyn PageSource, id: PageId, problems: &mut Vec<Problem>) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; PAGE_SIZE];
    source.read_raw(id, &mut buf)?;
    protection::verify_and_restore(&mut buf);
    let page = Page::new(buf.into_boxed_slice(), id).and_then(|p| {
        if p.header().page_type != PageType::Pfs {
            return Err(crate::Error::corrupt(format!("is a {} page, expected PFS", p.header().page_type.name())));
        }
        Ok(p.slot_bytes(0)?.map(|r| r.get(4..).unwrap_or_default().to_vec()).unwrap_or_default())
    });
    Ok(page.unwrap_or_else(|e| {
        problems.push(Problem {
            page: Some(id),
            object: None,
            what: format!("PFS page unreadable, its interval is checked as allocated: {}", e.message()),
        });
        vec![0x40; PFS_INTERVAL as usize]
    }))
}

/// The whole check of a database: what [`check_pages_on`] then [`check_catalog_on`] find, the
/// same problems in the same order and the same counts, with each page read once where both
/// passes need it. The catalog pass runs first and checks, as the page pass would, each page it
/// reads that the page pass checks (its table, index and LOB pages: most of a database); the
/// page pass then reads only the others and takes what was found on those. `progress` is called
/// with the pages done so far, of every page of the files, from any of the threads.
pub fn check_on(db: &Database, threads: usize, progress: &(dyn Fn(u64) + Sync)) -> Result<(Vec<Problem>, CheckStats)> {
    let source = db.reader().source();
    let checked = CheckedPages::new(source, progress);
    let (catalog_problems, catalog_stats) = check_catalog_after(db, threads, &checked)?;
    let before = checked.count.load(AtomicOrdering::Relaxed);
    let pages = check_pages_after(source, threads, &checked, |n| progress(before + n));
    Ok(joined(pages, (catalog_problems, catalog_stats)))
}

/// The report of [`check_pages_on`] followed by [`check_catalog_on`]: the page pass's problems
/// then the catalog pass's, the page pass's counts with the catalog pass's added.
pub fn joined(pages: (Vec<Problem>, CheckStats), catalog: (Vec<Problem>, CheckStats)) -> (Vec<Problem>, CheckStats) {
    let ((mut problems, mut stats), (catalog_problems, catalog_stats)) = (pages, catalog);
    problems.extend(catalog_problems);
    stats.allocation_units_checked += catalog_stats.allocation_units_checked;
    stats.rows_checked += catalog_stats.rows_checked;
    stats.index_records_checked += catalog_stats.index_records_checked;
    (problems, stats)
}

/// The progress of a check nobody follows.
fn no_progress(_: u64) {}

/// Pages checked between [`CheckedPages`] progress calls.
const PROGRESS_EVERY: u64 = 64;

/// The pages the page pass checks (allocated in their PFS, in an interval the source holds),
/// those of them the catalog pass checked already as it read them, and what it found there. Its
/// size is bounded by the files: two bits a page, and the problems found.
struct CheckedPages<'p> {
    /// File id → one bit per page the page pass checks.
    to_check: HashMap<u16, Vec<u64>>,
    /// File id → one bit per page checked already.
    checked: HashMap<u16, Vec<AtomicU64>>,
    /// The problems of the pages checked already that have any.
    found: std::sync::Mutex<HashMap<PageId, Vec<Problem>>>,
    /// Pages checked already.
    count: AtomicU64,
    progress: &'p (dyn Fn(u64) + Sync),
}

impl<'p> CheckedPages<'p> {
    /// Nothing to check on the way: the catalog pass reads pages as it always does.
    fn none() -> Self {
        CheckedPages {
            to_check: HashMap::new(),
            checked: HashMap::new(),
            found: Default::default(),
            count: AtomicU64::new(0),
            progress: &no_progress,
        }
    }

    /// The pages of `source` the page pass checks, each PFS page read once (as the page pass
    /// reads them: the same pages are checked).
    fn new(source: &dyn PageSource, progress: &'p (dyn Fn(u64) + Sync)) -> Self {
        let words = |f: &crate::source::SourceFile| (f.page_count as usize).div_ceil(64);
        let mut to_check: HashMap<u16, Vec<u64>> =
            source.files().iter().map(|f| (f.file_id, vec![0; words(f)])).collect();
        let checked = source.files().iter().map(|f| (f.file_id, (0..words(f)).map(|_| AtomicU64::new(0)).collect()));
        for task in PageTasks::new(source) {
            let Some(bits) = to_check.get_mut(&task.file_id) else { continue };
            for page in task.pages.clone().filter(|&page| is_checked_in(page, &task.pfs)) {
                if let Some(word) = bits.get_mut(page as usize / 64) {
                    *word |= 1 << (page % 64);
                }
            }
        }
        CheckedPages {
            to_check,
            checked: checked.collect(),
            found: Default::default(),
            count: AtomicU64::new(0),
            progress,
        }
    }

    /// Reads page `id` as `reader` does; a page the page pass checks, and nobody checked yet, is
    /// checked on the way, from the same bytes.
    fn read(&self, reader: &PageReader, id: PageId) -> Result<Page> {
        let (page, claimed) = self.read_claiming(id, || reader.read(id))?;
        if claimed {
            self.check_records(&page);
        }
        Ok(page)
    }

    /// Reads page `id` with `read`, having claimed it where the page pass checks it and nobody
    /// has yet: true when the caller then owes it [`Self::check_records`] (which another thread
    /// may run). A page that does not read whole (the source cannot serve it, its protection
    /// failed, its header names another page) goes back to the page pass, which reads it again
    /// and reports it.
    fn read_claiming(&self, id: PageId, read: impl FnOnce() -> Result<Page>) -> Result<(Page, bool)> {
        let claimed = self.claim(id);
        match read() {
            Ok(page) => Ok((page, claimed)),
            Err(e) => {
                if let Some((word, bit)) = self.bit(id).filter(|_| claimed) {
                    word.fetch_and(!bit, AtomicOrdering::Relaxed);
                }
                Err(e)
            }
        }
    }

    /// The page pass's check of a page [`Self::read_claiming`] read and claimed.
    fn check_records(&self, page: &Page) {
        let mut problems = Vec::new();
        check_page_layout(page.id(), page.bytes(), &mut problems);
        if !problems.is_empty() {
            if let Ok(mut found) = self.found.lock() {
                found.insert(page.id(), problems);
            }
        }
        let count = self.count.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        if count.is_multiple_of(PROGRESS_EVERY) {
            (self.progress)(count);
        }
    }

    /// Page `id`'s word and bit in `checked`.
    fn bit(&self, id: PageId) -> Option<(&AtomicU64, u64)> {
        let word = self.checked.get(&id.file)?.get(id.page as usize / 64)?;
        Some((word, 1 << (id.page % 64)))
    }

    /// True when the page pass checks page `id` and nobody has checked it yet: the caller does.
    fn claim(&self, id: PageId) -> bool {
        let word = self.to_check.get(&id.file).and_then(|bits| bits.get(id.page as usize / 64));
        word.is_some_and(|word| word & (1 << (id.page % 64)) != 0)
            && self.bit(id).is_some_and(|(word, bit)| word.fetch_or(bit, AtomicOrdering::Relaxed) & bit == 0)
    }

    /// True when page `id` was checked already; what was found there goes into `problems`.
    fn take_findings(&self, id: PageId, problems: &mut Vec<Problem>) -> bool {
        if self.bit(id).is_none_or(|(word, bit)| word.load(AtomicOrdering::Relaxed) & bit == 0) {
            return false;
        }
        if let Some(found) = self.found.lock().ok().and_then(|mut found| found.remove(&id)) {
            problems.extend(found);
        }
        true
    }
}

fn check_one_page(id: PageId, buf: &mut [u8], problems: &mut Vec<Problem>) {
    let verdict = protection::verify_and_restore(buf);
    check_verified_page(id, verdict, buf, problems);
}

/// [`check_one_page`] once the page's protection gave `verdict` (torn bits restored in `buf`).
fn check_verified_page(id: PageId, verdict: Verdict, buf: &[u8], problems: &mut Vec<Problem>) {
    let mut report = |what: String| problems.push(Problem { page: Some(id), object: None, what });
    match verdict {
        Verdict::ChecksumMismatch { stored, computed } => {
            report(format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"));
            return;
        }
        Verdict::Torn { sector } => {
            report(format!("torn page: sector {sector} does not carry the page's stamp"));
            return;
        }
        _ => {}
    }
    check_page_layout(id, buf, problems);
}

/// [`check_verified_page`] past the page's protection: its header, slots and records.
fn check_page_layout(id: PageId, buf: &[u8], problems: &mut Vec<Problem>) {
    let mut report = |what: String| problems.push(Problem { page: Some(id), object: None, what });
    let header = match PageHeader::parse(buf) {
        Ok(h) => h,
        Err(e) => return report(e.message().to_string()),
    };
    if buf[0] != 1 {
        return report(format!("header version {} (expected 1): not a formatted page", buf[0]));
    }
    if header.this_page != id {
        return report(format!("page header says it is page {}", header.this_page));
    }
    let slots = header.slot_count as usize;
    let array_start = match PAGE_SIZE.checked_sub(2 * slots) {
        Some(s) if s >= HEADER_SIZE => s,
        _ => return report(format!("slot count {slots} does not fit in a page")),
    };
    if !matches!(header.page_type, PageType::Data | PageType::Index | PageType::TextMix | PageType::TextTree) {
        return;
    }
    if header.free_data as usize > array_start || (header.free_data as usize) < HEADER_SIZE && slots > 0 {
        report(format!("free data offset {} outside the record area {HEADER_SIZE}..{array_start}", header.free_data));
    }
    // A PAGE compressed page's CI structure comes before its records.
    let mut records_start = HEADER_SIZE;
    let mut page_ci = None;
    if header.page_type == PageType::Data && header.type_flag_bits & PAGE_HAS_CI_STRUCTURE != 0 {
        match CompressionInfo::parse(buf) {
            Ok(ci) => {
                records_start = ci.records_start();
                page_ci = Some(ci);
            }
            Err(e) => report(e.message().to_string()),
        }
    }
    // A page whose slot array is garbage is one damaged page, not thousands of problems: the
    // first few slots are named, the rest counted.
    let mut bad_slots = 0usize;
    let mut report_slot = |what: &dyn Fn() -> String| {
        bad_slots += 1;
        if bad_slots <= SLOT_PROBLEMS_NAMED {
            report(what());
        }
    };
    for slot in 0..slots {
        let offset = read_u16(buf, PAGE_SIZE - 2 * (slot + 1)).unwrap_or(0) as usize;
        if offset == 0 {
            continue;
        }
        if offset < records_start || offset >= array_start {
            report_slot(&|| {
                format!("slot {slot} points at {offset}, outside the record area {records_start}..{array_start}")
            });
            continue;
        }
        let record = &buf[offset..array_start];
        if header.page_type == PageType::Data {
            // Bit 0 of a FixedVar record's status byte is never set; it marks a CD record (the
            // rows of ROW and PAGE compressed tables), told apart here without the catalog.
            let compressed = record[0] & CD_FORMAT_BIT != 0;
            let kind =
                if compressed { RecordType::from_cd_header(record[0]) } else { RecordType::from_status(record[0]) };
            let parsed = match kind {
                RecordType::Primary | RecordType::Forwarded | RecordType::GhostData if compressed => {
                    match CdRecord::parse(record) {
                        // Not readable yet (a layout not confirmed): no damage.
                        Err(e) if e.kind() == crate::ErrorKind::Unsupported => Ok(()),
                        Err(e) => Err(e),
                        // Every anchor prefix and dictionary symbol within bounds.
                        Ok(cd) => (0..cd.column_count())
                            .filter_map(|i| {
                                let ci = page_ci.as_ref()?;
                                match ci.resolve(i, cd.value(i)?) {
                                    Err(e) if e.kind() != crate::ErrorKind::Unsupported => Some(e),
                                    _ => None,
                                }
                            })
                            .next()
                            .map_or(Ok(()), Err),
                    }
                }
                RecordType::Primary | RecordType::Forwarded | RecordType::GhostData => {
                    Record::parse(record).map(|_| ())
                }
                RecordType::ForwardingStub if record.len() >= 9 => Ok(()),
                RecordType::GhostVersion => Ok(()),
                other => Err(crate::Error::corrupt(format!("unexpected {other:?} record in a data page"))),
            };
            if let Err(e) = parsed {
                report_slot(&|| format!("slot {slot}: {}", e.message()));
            }
        } else if header.page_type == PageType::Index && record[0] & CD_FORMAT_BIT != 0 {
            // A compressed index's records are CD records; on a non-leaf page each one's last
            // column is its child page.
            let problem = match CdRecord::parse(record) {
                Err(e) if e.kind() == crate::ErrorKind::Unsupported => None,
                Err(e) => Some(e.message().to_string()),
                Ok(cd) if !matches!(cd.record_type(), CdRecordType::Index | CdRecordType::GhostIndex) => {
                    Some(format!("a {:?} CD record on an index page", cd.record_type()))
                }
                Ok(cd) if header.level > 0 => match cd.down_page() {
                    None => Some("index record without a child page (six bytes) as its last column".into()),
                    Some(child) if child.is_null() => Some("index record's child page is 0:0".into()),
                    Some(_) => None,
                },
                Ok(_) => None,
            };
            if let Some(problem) = problem {
                report_slot(&|| format!("slot {slot}: {problem}"));
            }
        }
    }
    if bad_slots > SLOT_PROBLEMS_NAMED {
        report(format!(
            "{} more slots with problems (the first {SLOT_PROBLEMS_NAMED} are listed)",
            bad_slots - SLOT_PROBLEMS_NAMED
        ));
    }
}

/// Checks allocation and B-tree structure through the catalog, on this thread. Same findings as
/// [`check_catalog_on`] with one thread.
pub fn check_catalog(db: &Database) -> Result<(Vec<Problem>, CheckStats)> {
    check_catalog_on(db, 1)
}

/// Checks allocation and B-tree structure through the catalog on up to `threads` threads.
///
/// Allocation units are taken in catalog order. Each one's IAM chain is walked on this thread
/// (IAM pages are few); then its pages are read once, in tasks of 64 pages on the threads: a
/// heap's pages for their owner and their rows; a clustered index's leaf chain, followed on one
/// thread, for its links, and its pages handed on in chain order for their rows and key order;
/// the unit's other pages for their owner. The tasks' findings are put back in task order, so
/// the report is the same, problem for problem and in the same order, whatever the number of
/// threads; at most `2 × threads` tasks are in flight, so memory does not grow with the files.
pub fn check_catalog_on(db: &Database, threads: usize) -> Result<(Vec<Problem>, CheckStats)> {
    check_catalog_after(db, threads, &CheckedPages::none())
}

/// [`check_catalog_on`], the pages it reads read through `checked`.
fn check_catalog_after(db: &Database, threads: usize, checked: &CheckedPages) -> Result<(Vec<Problem>, CheckStats)> {
    let threads = threads.max(1);
    let mut stats = CheckStats::default();
    let reader = db.reader();
    let catalog = db.catalog();
    // Rowset → (owner, index id) for every heap and index, so problems name their owner.
    let tables: HashMap<i64, String> =
        catalog.tables(true).into_iter().map(|t| (i64::from(t.object_id), t.qualified_name())).collect();
    let mut names: HashMap<i64, (String, i64)> = HashMap::new();
    for rs in catalog.table("sysrowsets").iter() {
        let (object, index) = (rs.int("idmajor"), rs.int("idminor"));
        let table = tables.get(&object).cloned().unwrap_or_else(|| format!("object {object}"));
        names.insert(rs.int("rowsetid"), (format!("{table} index {index}"), index));
    }
    let user_tables = catalog.tables(false);
    let mut row_checks = RowChecks::new(db, &user_tables);
    let mut problems = Vec::new();
    let units = &catalog.base().allocation_units;
    let mut extent_owners = ExtentOwners::new(reader);
    for (place, unit) in units.iter().enumerate() {
        if unit.first_iam_page.is_null() {
            continue;
        }
        stats.allocation_units_checked += 1;
        let object = names
            .get(&unit.owner_id)
            .map(|(n, _)| format!("{n} (allocation unit {})", unit.id))
            .unwrap_or_else(|| format!("allocation unit {}", unit.id));
        let mut found = UnitFindings { object: &object, iam: Vec::new(), pages: Vec::new(), chain: Vec::new() };
        check_iam_chain(reader, checked, (units, place), &mut extent_owners, &mut found);
        let clustered = unit.kind == 1 && names.get(&unit.owner_id).is_some_and(|(_, index)| *index == 1);
        let mut rows = row_checks.take(unit.id);
        let pages = scan::MappedPages::new(reader, unit).unwrap_or_else(|e| {
            found.pages.push(found.problem(e.page(), e.message().to_string()));
            // A heap's rows are found through the same pages.
            if let Some(rows) = rows.as_mut().filter(|r| r.table.is_heap) {
                rows.progress.fail(rows.table, e);
            }
            scan::MappedPages::none(reader)
        });
        let mut read = PageSet::new(reader);
        match rows {
            Some(mut rows) if rows.table.is_heap => {
                rows.check_heap(pages, threads, checked, &mut found, &mut stats);
                row_checks.done(rows);
            }
            Some(mut rows) => {
                let chain = clustered.then_some(&mut found);
                rows.check_leaf_chain(threads, checked, chain, &mut read, &mut stats);
                check_unit_pages(reader, checked, unit, pages, &read, threads, &mut found);
                row_checks.done(rows);
            }
            None => {
                if clustered {
                    walk_leaf_chain(reader, checked, unit, &mut found, &mut read, None);
                }
                check_unit_pages(reader, checked, unit, pages, &read, threads, &mut found);
            }
        }
        problems.extend(found.iam.into_iter().chain(found.pages).chain(found.chain));
    }
    problems.extend(row_checks.finish(threads, checked, &mut stats));
    check_nonclustered(db, threads, checked, &mut problems, &mut stats);
    Ok((problems, stats))
}

/// Rows an index page's batch is sized for up front (a page of 8-byte keys holds about 500).
const INDEX_BATCH_ROWS: usize = 512;

/// Problems named one by one for an index; more end its check.
const INDEX_PROBLEMS_NAMED: usize = 8;

/// Every nonclustered index is walked from its root (its records' columns as `index_rows` says,
/// CD or FixedVar): each level's page chain is the pages the level above points at,
/// in order, each once; every record parses and decodes; leaf keys never go backwards (where
/// their types order plainly, as [`RowCheck`]: each leaf page's records also go into an Arrow
/// batch whose key columns [`KeyPlan`] compares exactly); each leaf record's row locator is a row of the
/// table (a heap RID names a live record or forwarding stub of the table; a clustered key is a
/// row's key), and the table has as many rows as the index leaf records. The table's rows are
/// read once on this thread; its index trees are then walked on up to `threads` threads, one a
/// task, their problems put back in index order.
fn check_nonclustered(
    db: &Database,
    threads: usize,
    checked: &CheckedPages,
    problems: &mut Vec<Problem>,
    stats: &mut CheckStats,
) {
    let catalog = db.catalog();
    for table in catalog.tables(false) {
        let indexes = catalog.indexes(table.object_id);
        let clustered_key: Vec<String> = indexes
            .iter()
            .find(|i| i.index_id == 1)
            .map(|i| i.key_columns.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default();
        let rowsets = catalog.rows_where("sysrowsets", "idmajor", i64::from(table.object_id));
        // Each partition's rows, read once for all the table's indexes (on this thread), then
        // the index trees walked, one a task.
        let mut base: HashMap<i64, Result<(BaseRows, u64)>> = HashMap::new();
        let mut walks = Vec::new();
        for index in indexes.iter().filter(|i| i.index_type == 2 && !i.is_disabled) {
            let object = format!("{} index {}", table.qualified_name(), index.name);
            for rs in rowsets.iter().filter(|r| r.int("idminor") == i64::from(index.index_id)) {
                if !matches!(rs.int("cmprlevel"), 0..=2) {
                    continue;
                }
                let Some(partition) =
                    table.partitions.iter().find(|p| i64::from(p.partition_number) == rs.int("numpart"))
                else {
                    continue;
                };
                let rows = crate::index_rows::IndexRows::new(catalog, db.reader(), &table, index, rs.int("rowsetid"));
                if rows.is_ok() {
                    base.entry(partition.partition_id)
                        .or_insert_with(|| base_rows(db, &table, partition, &clustered_key));
                }
                walks.push((object.clone(), partition.partition_id, rows));
            }
        }
        let work = |(object, partition, rows): (String, i64, Result<crate::index_rows::IndexRows>)| {
            let mut found = Vec::new();
            let mut report = |page: Option<PageId>, what: String| {
                found.push(Problem { page, object: Some(object.clone()), what });
                found.len() < INDEX_PROBLEMS_NAMED
            };
            let mut walked = CheckStats::default();
            match (rows, base.get(&partition)) {
                (Ok(rows), Some(Ok(base))) => {
                    let pages = (db, checked);
                    check_index_tree(pages, &clustered_key, &rows, base.clone(), &mut report, &mut walked);
                }
                (Ok(_), Some(Err(e))) => {
                    report(e.page(), format!("the table's rows cannot be read: {}", e.message()));
                }
                (Ok(_), None) => {}
                (Err(e), _) => {
                    report(e.page(), e.message().to_string());
                }
            }
            (found, walked.index_records_checked)
        };
        let threads = threads_for(walks.len(), 1, threads);
        in_task_order(
            threads,
            move |send| walks.into_iter().for_each(send),
            work,
            |(found, records)| {
                problems.extend(found);
                stats.index_records_checked += records;
            },
        );
    }
}

/// The table's rows as an index's row locators name them.
#[derive(Clone)]
enum BaseRows {
    /// A heap: its in-row allocation unit (RIDs are looked up on its pages).
    Heap(i64),
    /// A clustered table: its rows' clustered keys.
    Keys(ClusteredKeys),
}

/// Most bytes of spelled clustered keys kept for a partition: a table's keys past it are only
/// summed. 8 MiB holds the keys of a few hundred thousand rows.
const KEYS_NAMED_BYTES: usize = 8 << 20;

/// Bytes a kept key costs besides its text: the map's entry (the string's header and the count)
/// and its share of the table's slack.
const KEY_ENTRY_BYTES: usize = 48;

/// The clustered keys of a table's rows (each key its columns' spellings joined by U+0001), as an
/// index's row locators must name them: the keys with their counts while they fit in a bound, so
/// that a locator no row has is named, and always the wrapping sum of their 128-bit hashes (a
/// multiset's digest: the same keys in any order give the same sum, a key missing, changed or
/// repeated changes it but with odds of 2^-128), which the locators an index holds must add up to.
#[derive(Clone, Default)]
struct ClusteredKeys {
    /// Each key and how many rows have it; `None` once the keys passed the bound.
    named: Option<HashMap<String, usize>>,
    /// Bytes the named keys take, as [`KEY_ENTRY_BYTES`] counts them.
    named_bytes: usize,
    digest: u128,
}

impl ClusteredKeys {
    /// No keys yet.
    fn new() -> Self {
        ClusteredKeys { named: Some(HashMap::new()), ..Self::default() }
    }

    /// Adds a row's key; past `bound` bytes the keys are no longer named.
    fn add(&mut self, key: String, bound: usize) {
        self.digest = self.digest.wrapping_add(key_hash(&key));
        let Some(named) = self.named.as_mut() else { return };
        self.named_bytes += key.len() + KEY_ENTRY_BYTES;
        if self.named_bytes > bound {
            self.named = None;
        } else {
            *named.entry(key).or_default() += 1;
        }
    }
}

/// A 128-bit hash of `key`: two differently seeded SipHash-1-3 (the standard library's, the same
/// for both sides of a comparison within a process).
fn key_hash(key: &str) -> u128 {
    let hash = |seed: u8| {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    u128::from(hash(0)) << 64 | u128::from(hash(1))
}

/// [`check_nonclustered`] for one index partition of a table of `db` (its pages read through
/// `checked`) over the table's rows (`base`, and how many there are; `clustered_key` names the
/// table's clustered key columns, none for a heap); `report` returns false when enough was said.
fn check_index_tree(
    (db, checked): (&Database, &CheckedPages),
    clustered_key: &[String],
    rows: &crate::index_rows::IndexRows,
    (mut base, base_rows): (BaseRows, u64),
    report: &mut impl FnMut(Option<PageId>, String) -> bool,
    stats: &mut CheckStats,
) {
    use crate::index_rows::IndexColumnRole;
    let reader = db.reader();
    let Some(unit) = db.catalog().base().in_row_unit(rows.rowset) else { return };
    if unit.root_page.is_null() {
        return;
    }
    let leaf = rows.decoder(0);
    // (position in the record, descending) of each key column whose order is plain.
    let key_positions: Vec<(usize, bool)> = rows
        .roles
        .iter()
        .enumerate()
        .filter_map(|(i, role)| match role {
            IndexColumnRole::Key(n) => {
                let descending = rows.index.key_columns.get(n - 1).is_some_and(|(_, d)| *d);
                plain_order(leaf.columns()[i].column.type_info.sql_type).then_some((i, descending))
            }
            _ => None,
        })
        .collect();
    // The key plan and a builder of each leaf page's batch, when every key column orders plainly.
    let mut keys = (key_positions.len() == rows.index.key_columns.len()).then(|| {
        (KeyPlan(key_positions), BatchBuilder::verifying(leaf, INDEX_BATCH_ROWS, crate::TimestampUnit::Microsecond))
    });
    // Where each clustered key column is in a leaf record.
    let locator_positions: Vec<Option<usize>> = clustered_key
        .iter()
        .map(|name| leaf.columns().iter().position(|c| c.column.name.eq_ignore_ascii_case(name)))
        .collect();
    let rid_position = rows.roles.iter().position(|r| *r == IndexColumnRole::Rid);
    let mut expected = vec![unit.root_page];
    let mut level: Option<u8> = None;
    let mut seen = HashSet::new();
    let (mut leaf_records, mut previous) = (0u64, None::<Vec<KeyCell>>);
    // The sum of the leaf records' locator hashes, for a table whose keys are not named.
    let mut locator_digest = 0u128;
    let mut values = Vec::new();
    while let Some(&first) = expected.first() {
        let mut children = Vec::new();
        let mut next = first;
        let mut chain = Vec::new();
        let mut prev = PageId::default();
        while !next.is_null() {
            if !seen.insert(next) {
                report(Some(next), "the index's page chain returns to this page: a cycle".into());
                return;
            }
            let page = match checked.read(reader, next) {
                Ok(p) => p,
                Err(e) => {
                    report(Some(next), e.message().to_string());
                    return;
                }
            };
            let h = *page.header();
            let this_level = *level.get_or_insert(h.level);
            if h.page_type != PageType::Index || h.level != this_level || !h.belongs_to(unit.id) {
                report(
                    Some(next),
                    format!(
                        "a {} page at level {} of allocation unit {}, not an index page at level {this_level} of the index's unit {}",
                        h.page_type.name(),
                        h.level,
                        h.allocation_unit_id(),
                        unit.id
                    ),
                );
                return;
            }
            if h.prev_page != prev
                && !report(Some(next), format!("previous-page link is {}, the chain came from {prev}", h.prev_page))
            {
                return;
            }
            let ci = if h.type_flag_bits & PAGE_HAS_CI_STRUCTURE != 0 {
                match CompressionInfo::parse(page.bytes()) {
                    Ok(ci) => Some(ci),
                    Err(e) => {
                        report(Some(next), e.message().to_string());
                        return;
                    }
                }
            } else {
                None
            };
            // What the page's records show, in slot order: told once the page's keys are
            // compared (on its batch), so that the report keeps that order.
            let mut events = Vec::new();
            let mut keys_lost = false;
            for slot in 0..h.slot_count {
                let bytes = match page.slot_bytes(slot) {
                    Ok(Some(b)) => b,
                    Ok(None) => continue,
                    Err(e) => {
                        events.push(IndexEvent::Problem(format!("slot {slot}: {}", e.message())));
                        continue;
                    }
                };
                let cd = match rows.format() {
                    RecordFormat::Cd => Some(CdRecord::parse(bytes)),
                    RecordFormat::FixedVar => None,
                };
                let parsed = match &cd {
                    Some(Ok(cd)) => Ok(Record::from_cd(cd, ci.as_ref())),
                    Some(Err(e)) => Err(e.message().to_string()),
                    None => Record::parse_index(bytes, h.pminlen).map_err(|e| e.message().to_string()),
                };
                let record = match parsed {
                    Ok(r) if r.record_type() == RecordType::GhostIndex => continue,
                    Ok(r) if r.record_type() == RecordType::Index => r,
                    Ok(r) => {
                        let what = format!("slot {slot}: a {:?} record on an index page", r.record_type());
                        events.push(IndexEvent::Problem(what));
                        continue;
                    }
                    Err(e) => {
                        events.push(IndexEvent::Problem(format!("slot {slot}: {e}")));
                        continue;
                    }
                };
                if let Err(e) = rows.decoder(this_level).decode(&record, &mut values) {
                    events.push(IndexEvent::Problem(format!("slot {slot}: {e}")));
                    continue;
                }
                if this_level > 0 {
                    match record.cd().map_or_else(|| record.down_page(), |cd| cd.down_page()) {
                        Some(child) => children.push(child),
                        None => events.push(IndexEvent::Problem(format!(
                            "slot {slot}: a non-leaf index record with no child page"
                        ))),
                    }
                    continue;
                }
                let row = match keys.as_mut() {
                    Some((_, batch)) if !keys_lost => {
                        let row = batch.len();
                        // A value the text path read and Arrow refuses: the page's keys are
                        // not compared (the builder holds part of the row).
                        keys_lost = batch.append(leaf, &record).is_err();
                        (!keys_lost).then_some(row)
                    }
                    _ => None,
                };
                events.push(IndexEvent::LeafRecord { slot, row });
                let found = match (&mut base, rid_position) {
                    (BaseRows::Heap(heap), Some(i)) => match &values[i] {
                        Value::Binary(rid) => rid_names_a_row(db, *heap, rid),
                        _ => Err("the RID is not 8 bytes".into()),
                    },
                    (BaseRows::Keys(keys), _) => {
                        let key = locator_positions.iter().map(|p| p.map_or(String::new(), |i| values[i].to_string()));
                        let key = key.collect::<Vec<_>>().join("\u{1}");
                        locator_digest = locator_digest.wrapping_add(key_hash(&key));
                        match keys.named.as_mut().map(|named| named.get_mut(&key)) {
                            None => Ok(()),
                            Some(Some(n)) if *n > 0 => {
                                *n -= 1;
                                Ok(())
                            }
                            Some(_) => Err(format!(
                                "no row of the table has the clustered key ({})",
                                key.replace('\u{1}', ", ")
                            )),
                        }
                    }
                    (BaseRows::Heap(_), None) => Err("no RID column".into()),
                };
                if let Err(why) = found {
                    events.push(IndexEvent::Problem(format!("slot {slot}: row locator not found: {why}")));
                }
            }
            // The leaf records' keys, on the page's batch, each compared with the one before it.
            let mut columns = None;
            if let Some((plan, batch)) = keys.as_mut().filter(|_| this_level == 0) {
                if keys_lost {
                    *batch = BatchBuilder::verifying(leaf, INDEX_BATCH_ROWS, crate::TimestampUnit::Microsecond);
                } else {
                    columns = batch.finish().ok().map(|batch| plan.columns(&batch));
                }
            }
            // Keys not compared on this page: the next page's first key has nothing to follow.
            if columns.is_none() {
                previous = None;
            }
            for event in events {
                let what = match event {
                    IndexEvent::Problem(what) => what,
                    IndexEvent::LeafRecord { slot, row } => {
                        leaf_records += 1;
                        stats.index_records_checked += 1;
                        let (Some(plan), Some(columns), Some(row)) =
                            (keys.as_ref().map(|(plan, _)| plan), columns.as_ref(), row)
                        else {
                            continue;
                        };
                        let key = KeyPlan::key(columns, row);
                        let lower = previous.as_ref().is_some_and(|p| plan.compare(&key, p) == Ordering::Less);
                        previous = Some(key);
                        if !lower {
                            continue;
                        }
                        format!("slot {slot}: index key lower than the record before it")
                    }
                };
                if !report(Some(next), what) {
                    return;
                }
            }
            chain.push(next);
            prev = next;
            next = h.next_page;
        }
        if chain != expected {
            let at = chain.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(chain.len().min(expected.len()));
            let what = format!(
                "level {}: the page chain holds {} pages, the level above points at {}; they differ from page {} on",
                level.unwrap_or(0),
                chain.len(),
                expected.len(),
                at + 1
            );
            report(chain.get(at).or(expected.get(at)).copied(), what);
            return;
        }
        match level {
            Some(0) | None => break,
            Some(l) => level = Some(l - 1),
        }
        expected = children;
    }
    if leaf_records != base_rows {
        report(None, format!("{leaf_records} leaf records for the table's {base_rows} rows"));
    } else if let BaseRows::Keys(ClusteredKeys { named: None, digest, .. }) = base {
        if locator_digest != digest {
            report(
                None,
                format!(
                    "the leaf records' row locators are not the table's clustered keys: some name no row, as many rows have none (the table's keys take more than the {} MiB the check keeps to name them)",
                    KEYS_NAMED_BYTES >> 20
                ),
            );
        }
    }
}

/// The table's rows as row locators name them, and how many there are.
fn base_rows(
    db: &Database,
    table: &crate::catalog::model::TableInfo,
    partition: &crate::catalog::model::PartitionInfo,
    clustered_key: &[String],
) -> Result<(BaseRows, u64)> {
    let mut count = 0u64;
    if table.is_heap {
        let unit = db.catalog().base().in_row_unit(partition.partition_id).map_or(0, |u| u.id);
        db.scan(table).partition_records(partition, |_, _| {
            count += 1;
            Ok(scan::Flow::Continue)
        })?;
        return Ok((BaseRows::Heap(unit), count));
    }
    let decoder = db.row_decoder(table, partition.partition_id, Some(clustered_key))?;
    let mut keys = ClusteredKeys::new();
    let mut values = Vec::new();
    db.scan(table).partition_records(partition, |record, _| {
        decoder.decode(record, &mut values)?;
        count += 1;
        // The decoder returns the key columns in table order: put them in key order.
        let key: Vec<String> = clustered_key
            .iter()
            .map(|name| {
                decoder
                    .columns()
                    .iter()
                    .position(|c| c.column.name.eq_ignore_ascii_case(name))
                    .map_or(String::new(), |i| values[i].to_string())
            })
            .collect();
        keys.add(key.join("\u{1}"), KEYS_NAMED_BYTES);
        Ok(scan::Flow::Continue)
    })?;
    Ok((BaseRows::Keys(keys), count))
}

/// Whether heap RID `rid` (page 4, file 2, slot 2) names a live record or forwarding stub of the
/// heap's allocation unit `unit`.
fn rid_names_a_row(db: &Database, unit: i64, rid: &[u8]) -> std::result::Result<(), String> {
    let (Some(page), Some(slot)) = (rid.get(..6).and_then(PageId::from_bytes), read_u16(rid, 6)) else {
        return Err(format!("RID of {} bytes", rid.len()));
    };
    let at = format!("RID {page} slot {slot}");
    let p = db.reader().read(page).map_err(|e| format!("{at}: {}", e.message()))?;
    if !p.header().belongs_to(unit) {
        return Err(format!(
            "{at}: the page belongs to allocation unit {}, not the table's",
            p.header().allocation_unit_id()
        ));
    }
    let bytes = p
        .slot_bytes(slot)
        .map_err(|e| format!("{at}: {}", e.message()))?
        .ok_or_else(|| format!("{at}: an empty slot"))?;
    let Some(&status) = bytes.first() else { return Err(format!("{at}: an empty record")) };
    let record_type =
        if status & CD_FORMAT_BIT != 0 { RecordType::from_cd_header(status) } else { RecordType::from_status(status) };
    match record_type {
        RecordType::Primary | RecordType::ForwardingStub => Ok(()),
        other => Err(format!("{at}: a {other:?} record")),
    }
}

/// What one record of an index page showed, told in slot order once the page's keys are
/// compared.
enum IndexEvent {
    /// A problem, in words.
    Problem(String),
    /// A leaf record read whole, and its row in the page's batch when its key is compared.
    LeafRecord { slot: u16, row: Option<usize> },
}

/// What the check of one allocation unit found, in report order: its IAM chain, its pages'
/// owners, its leaf chain; each problem names `object`.
struct UnitFindings<'a> {
    object: &'a str,
    iam: Vec<Problem>,
    pages: Vec<Problem>,
    chain: Vec<Problem>,
}

impl UnitFindings<'_> {
    fn problem(&self, page: Option<PageId>, what: String) -> Problem {
        Problem { page, object: Some(self.object.to_string()), what }
    }
}

/// The unit's IAM chain is readable and acyclic, its extents lie in the files and no other unit
/// owns them (`extent_owners`: the owner of every extent met so far). The unit is `units[place]`.
fn check_iam_chain(
    reader: &PageReader,
    checked: &CheckedPages,
    (units, place): (&[AllocationUnit], usize),
    extent_owners: &mut ExtentOwners,
    found: &mut UnitFindings,
) {
    let Some(unit) = units.get(place) else { return };
    let mut seen = HashSet::new();
    let mut next = unit.first_iam_page;
    while !next.is_null() {
        if !seen.insert(next) {
            found.iam.push(found.problem(Some(next), "IAM chain returns to this page: a cycle".into()));
            break;
        }
        match checked.read(reader, next).and_then(|p| Ok((IamPage::parse(&p)?, p.header().next_page))) {
            Ok((iam, following)) => {
                // Extents outside the files are reported once per IAM page, never kept: the map
                // of owners stays within the files' real size.
                let (mut outside, mut first_outside) = (0, String::new());
                for extent in &iam.extents {
                    match scan::check_in_file(reader, next, *extent) {
                        Ok(()) => {
                            if let Some(other) = extent_owners.insert(*extent, place).and_then(|o| units.get(o)) {
                                let what = format!("extent also owned by allocation unit {}", other.id);
                                found.iam.push(found.problem(Some(*extent), what));
                            }
                        }
                        Err(e) if outside == 0 => (outside, first_outside) = (1, e.message().to_string()),
                        Err(_) => outside += 1,
                    }
                }
                if outside > 0 {
                    let what = format!("{first_outside} ({outside} extents outside the files)");
                    found.iam.push(found.problem(Some(next), what));
                }
                next = following;
            }
            Err(e) => {
                found.iam.push(found.problem(Some(next), format!("IAM page unreadable: {}", e.message())));
                break;
            }
        }
    }
}

/// The allocation unit whose IAM chain maps each extent, of the chains walked so far, as the
/// unit's place in the catalog's list of units: four bytes an extent of the files (half a byte
/// a page; the vectors come zeroed from the system, so an extent no chain maps costs no memory
/// until its neighbours are met). An extent that does not start on a multiple of 8 pages (only
/// a damaged IAM page's start gives one) is kept apart, under its first page.
struct ExtentOwners {
    /// File id → for each extent of the file, its owner's place plus one; 0 for none.
    aligned: HashMap<u16, Vec<u32>>,
    unaligned: HashMap<PageId, usize>,
}

impl ExtentOwners {
    fn new(reader: &PageReader) -> Self {
        let files = reader.source().files().iter();
        let aligned = files.map(|f| (f.file_id, vec![0u32; (f.page_count as usize).div_ceil(8)])).collect();
        ExtentOwners { aligned, unaligned: HashMap::new() }
    }

    /// Records the unit at `place` as the owner of the extent starting at `first`; returns the
    /// place of the unit that owned it before, if one did.
    fn insert(&mut self, first: PageId, place: usize) -> Option<usize> {
        let slot = first
            .page
            .is_multiple_of(8)
            .then(|| self.aligned.get_mut(&first.file)?.get_mut(first.page as usize / 8))
            .flatten();
        // Places past u32::MAX - 1 (a catalog of four billion units) all read as the last one.
        let stored = u32::try_from(place + 1).unwrap_or(u32::MAX);
        match slot {
            Some(owner) => (std::mem::replace(owner, stored) as usize).checked_sub(1),
            None => self.unaligned.insert(first, place),
        }
    }
}

/// Pages one task of the catalog pass reads (512 KB), as a parallel scan's.
const PAGES_PER_CATALOG_TASK: usize = 64;

/// Threads for a piece of work of `pages` pages in tasks of `per_task`: one when it is a single
/// task (a thread would cost more than it saves; most catalog units are a page or two).
fn threads_for(pages: usize, per_task: usize, threads: usize) -> usize {
    if pages > per_task {
        threads
    } else {
        1
    }
}

/// Every allocated page an allocation unit's IAM chain owns (`pages`) belongs to that unit;
/// the pages in `read` were read and found the unit's already.
fn check_unit_pages(
    reader: &PageReader,
    checked: &CheckedPages,
    unit: &AllocationUnit,
    pages: scan::MappedPages,
    read: &PageSet,
    threads: usize,
    found: &mut UnitFindings,
) {
    let work = |task: Vec<PageId>| -> Vec<(PageId, String)> {
        let unread = task.iter().filter(|&&id| !read.contains(id));
        unread.filter_map(|&id| Some((id, owner_problem(&checked.read(reader, id), unit)?))).collect()
    };
    let mut problems = Vec::new();
    let per_task = PAGES_PER_CATALOG_TASK;
    in_task_order(threads_for(pages.len_at_most(), per_task, threads), each_task(pages, per_task), work, |task| {
        problems.extend(task)
    });
    for (id, what) in problems {
        found.pages.push(found.problem(Some(id), what));
    }
}

/// Hands over `pages` in tasks of `per_task` pages, as the IAM chain maps them.
fn each_task<'p>(
    pages: scan::MappedPages<'p>,
    per_task: usize,
) -> impl FnOnce(&mut dyn FnMut(Vec<PageId>)) + Send + 'p {
    let per_task = per_task.max(1);
    move |send| {
        let mut task = Vec::with_capacity(per_task);
        pages.for_each(|id| {
            task.push(id);
            if task.len() == per_task {
                send(std::mem::replace(&mut task, Vec::with_capacity(per_task)));
            }
        });
        if !task.is_empty() {
            send(task);
        }
    }
}

/// Why a page an allocation unit's IAM chain owns is not the unit's, if it is not.
fn owner_problem(page: &Result<Page>, unit: &AllocationUnit) -> Option<String> {
    match page {
        Ok(page) if page.header().belongs_to(unit.id) => None,
        Ok(page) => Some(format!(
            "owned by this unit's IAM chain but its header names allocation unit {}",
            page.header().allocation_unit_id()
        )),
        // A page of an allocated extent may not be formatted yet (all zero).
        Err(e) if e.message().contains("page header says it is page 0:0") => None,
        Err(e) => Some(e.message().to_string()),
    }
}

/// Runs `work` on each task `produce` hands over, on `threads` threads, and passes the results
/// to `consume` on this thread in the order the tasks were produced. At most `2 × threads`
/// tasks are produced and not consumed yet, so memory stays bounded however long the producer
/// runs. With one thread, everything runs on this thread.
fn in_task_order<T: Send, R: Send>(
    threads: usize,
    produce: impl FnOnce(&mut dyn FnMut(T)) + Send,
    work: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R),
) {
    if threads <= 1 {
        produce(&mut |task| consume(work(task)));
        return;
    }
    let (task_tx, task_rx) = std::sync::mpsc::sync_channel::<(usize, T)>(threads);
    let task_rx = std::sync::Mutex::new(task_rx);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, R)>();
    // One credit per task produced and not consumed yet.
    let (credit_tx, credit_rx) = std::sync::mpsc::sync_channel::<()>(2 * threads);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut index = 0;
            produce(&mut |task| {
                if credit_tx.send(()).is_ok() && task_tx.send((index, task)).is_ok() {
                    index += 1;
                }
            });
        });
        for _ in 0..threads {
            let (task_rx, done_tx, work) = (&task_rx, done_tx.clone(), &work);
            scope.spawn(move || {
                while let Some((index, task)) = task_rx.lock().ok().and_then(|rx| rx.recv().ok()) {
                    if done_tx.send((index, work(task))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let mut waiting = std::collections::BTreeMap::new();
        let mut next = 0;
        for (index, result) in done_rx {
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&next) {
                consume(result);
                next += 1;
                let _ = credit_rx.recv();
            }
        }
    });
}

/// A set of pages: one bit per page of each file the source holds, so its size is bounded by
/// the files, whatever page numbers a damaged chain names (those outside the files are kept
/// apart, and a chain only gets there by reading them, which fails).
struct PageSet {
    bits: HashMap<u16, Vec<u64>>,
    outside: HashSet<PageId>,
}

impl PageSet {
    fn new(reader: &PageReader) -> Self {
        let files = reader.source().files().iter();
        let bits = files.map(|f| (f.file_id, vec![0u64; (f.page_count as usize).div_ceil(64)])).collect();
        PageSet { bits, outside: HashSet::new() }
    }

    fn contains(&self, id: PageId) -> bool {
        match self.bits.get(&id.file).and_then(|b| b.get(id.page as usize / 64)) {
            Some(word) => word & (1 << (id.page % 64)) != 0,
            None => self.outside.contains(&id),
        }
    }

    /// Adds `id`; false when it was there already.
    fn insert(&mut self, id: PageId) -> bool {
        match self.bits.get_mut(&id.file).and_then(|b| b.get_mut(id.page as usize / 64)) {
            Some(word) => {
                let bit = 1 << (id.page % 64);
                let new = *word & bit == 0;
                *word |= bit;
                new
            }
            None => self.outside.insert(id),
        }
    }
}

/// Leaf pages in chain order, then the problem that ended the scan of the chain there, if any.
#[derive(Default)]
struct LeafTask {
    pages: Vec<Page>,
    /// The pages (by index in `pages`) whose slots and records the page pass left to this
    /// task's thread ([`CheckedPages::read_claiming`]): checked on the walker's thread, they held
    /// a check on all cores to about 2 GB/s.
    records_to_check: Vec<usize>,
    then: Option<crate::Error>,
}

/// Walks a clustered index's leaf chain once: it is acyclic and each page's previous link names
/// the page before it (problems into `found.chain`). The pages read and found the unit's go into
/// `read`. With `rows`, the leaf pages go to it in chain order, in tasks, followed by the
/// problem that ends a scan of the rows (a cycle, a page that cannot be read or is not a leaf
/// data page of the unit); the chain is followed on past a page that is not a leaf page.
fn walk_leaf_chain(
    reader: &PageReader,
    checked: &CheckedPages,
    unit: &AllocationUnit,
    found: &mut UnitFindings,
    read: &mut PageSet,
    mut rows: Option<&mut dyn FnMut(LeafTask)>,
) {
    let mut task = LeafTask::default();
    let send = |task: &mut LeafTask, rows: &mut Option<&mut dyn FnMut(LeafTask)>| {
        if let Some(rows) = rows {
            if !task.pages.is_empty() || task.then.is_some() {
                rows(std::mem::take(task));
            }
        }
    };
    let mut next = match scan::first_leaf(reader, unit) {
        Ok(p) => p,
        Err(e) => {
            found.chain.push(found.problem(e.page(), e.message().to_string()));
            task.then = Some(e);
            return send(&mut task, &mut rows);
        }
    };
    let mut previous = PageId::default();
    let mut seen = PageSet::new(reader);
    while !next.is_null() {
        let id = next;
        if !seen.insert(id) {
            found.chain.push(found.problem(Some(id), "leaf chain returns to this page: a cycle".into()));
            task.then = Some(crate::Error::corrupt(format!("leaf page chain returns to page {id}: a cycle")));
            break;
        }
        let (page, check_owed) = match checked.read_claiming(id, || reader.read(id)) {
            Ok(read) => read,
            Err(e) => {
                found.chain.push(found.problem(Some(id), e.message().to_string()));
                task.then = Some(e);
                break;
            }
        };
        let h = page.header();
        if h.prev_page != previous {
            let what = format!("previous-page link is {}, the chain came from {previous}", h.prev_page);
            found.chain.push(found.problem(Some(id), what));
        }
        if h.belongs_to(unit.id) {
            read.insert(id);
        }
        (previous, next) = (id, h.next_page);
        let is_leaf = h.page_type == PageType::Data && h.level == 0 && h.belongs_to(unit.id);
        if check_owed && (rows.is_none() || !is_leaf) {
            checked.check_records(&page);
        }
        if rows.is_none() {
            continue;
        }
        if !is_leaf {
            task.then = Some(
                crate::Error::corrupt(format!(
                    "expected a leaf data page of allocation unit {}, found a {} page (level {}) of allocation unit {}",
                    unit.id,
                    h.page_type.name(),
                    h.level,
                    h.allocation_unit_id()
                ))
                .at_page(id),
            );
            send(&mut task, &mut rows);
            rows = None;
            continue;
        }
        if check_owed {
            task.records_to_check.push(task.pages.len());
        }
        task.pages.push(page);
        if task.pages.len() == PAGES_PER_CATALOG_TASK {
            send(&mut task, &mut rows);
        }
    }
    send(&mut task, &mut rows);
}

/// The row checks of the user tables' partitions, in table order, by in-row allocation unit.
struct RowChecks<'a> {
    checks: Vec<Option<RowCheck<'a>>>,
    /// In-row unit → index in `checks`.
    by_unit: HashMap<i64, usize>,
    /// The problems of each partition, once checked.
    found: Vec<Vec<Problem>>,
}

impl<'a> RowChecks<'a> {
    fn new(db: &'a Database, tables: &'a [TableInfo]) -> Self {
        let mut checks = RowChecks { checks: Vec::new(), by_unit: HashMap::new(), found: Vec::new() };
        for table in tables {
            let keys = if table.is_heap {
                Vec::new()
            } else {
                db.catalog()
                    .indexes(table.object_id)
                    .into_iter()
                    .find(|i| i.index_id == 1)
                    .map(|i| i.key_columns)
                    .unwrap_or_default()
            };
            for partition in &table.partitions {
                let check = db
                    .row_decoder(table, partition.partition_id, None)
                    .and_then(|decoder| Ok((db.scannable_unit(table, partition)?, decoder)));
                let mut progress = RowProgress::default();
                match check {
                    Ok((unit, decoder)) => {
                        checks.by_unit.insert(unit.id, checks.checks.len());
                        let keys = keys.clone();
                        checks.checks.push(Some(RowCheck { db, table, partition, unit, decoder, keys, progress }));
                        checks.found.push(Vec::new());
                    }
                    Err(e) => {
                        progress.fail(table, e);
                        checks.checks.push(None);
                        checks.found.push(progress.error.into_iter().collect());
                    }
                }
            }
        }
        checks
    }

    /// The row check of the partition whose in-row unit is `unit`, if not taken yet.
    fn take(&mut self, unit: i64) -> Option<RowCheck<'a>> {
        self.by_unit.get(&unit).and_then(|&i| self.checks[i].take())
    }

    /// Keeps what a check taken found.
    fn done(&mut self, check: RowCheck<'a>) {
        if let Some(&i) = self.by_unit.get(&check.unit.id) {
            self.found[i] = check.problems();
        }
    }

    /// Runs the checks not taken (their unit has no IAM chain: an empty partition), then returns
    /// every partition's problems in table order.
    fn finish(mut self, threads: usize, checked: &CheckedPages, stats: &mut CheckStats) -> Vec<Problem> {
        for i in 0..self.checks.len() {
            let Some(mut check) = self.checks[i].take() else { continue };
            let reader = check.db.reader();
            let mut found = UnitFindings { object: "", iam: Vec::new(), pages: Vec::new(), chain: Vec::new() };
            if check.table.is_heap {
                match scan::MappedPages::new(reader, check.unit) {
                    Ok(pages) => check.check_heap(pages, threads, checked, &mut found, stats),
                    Err(e) => check.progress.fail(check.table, e),
                }
            } else {
                check.check_leaf_chain(threads, checked, None, &mut PageSet::new(reader), stats);
            }
            self.found[i] = check.problems();
        }
        self.found.into_iter().flatten().collect()
    }
}

/// Every row of one partition of a user table reads back whole: forwarding stubs lead to
/// forwarded records, LOB and row-overflow links resolve, values have their type's size (each
/// value read by the scan's own column decoders, into Arrow batches, as an export reads it).
/// Along a clustered index's leaf chain the keys never go backwards (checked where every key
/// column has a type whose order is plain: numbers, dates and times; strings follow their
/// collation and GUIDs SQL Server's own byte order, so those keys are not compared). The first
/// problem of the partition is reported (a damaged structure tends to fail every row after it).
struct RowCheck<'a> {
    db: &'a Database,
    table: &'a TableInfo,
    partition: &'a PartitionInfo,
    unit: &'a AllocationUnit,
    decoder: RowDecoder,
    /// The clustered key's columns (name, descending).
    keys: Vec<(String, bool)>,
    progress: RowProgress,
}

/// How far a partition's row check got, its tasks taken in order.
#[derive(Default)]
struct RowProgress {
    /// The scan ended (at a problem, reported unless it is a feature not decoded yet).
    ended: bool,
    error: Option<Problem>,
    /// The key of the last row read, and the first place (page, live row on it) where a key is
    /// lower than the one before it.
    last_key: Option<Vec<KeyCell>>,
    out_of_order: Option<(PageId, usize)>,
}

impl RowProgress {
    /// The scan of `table` ends at `e`.
    fn fail(&mut self, table: &TableInfo, e: crate::Error) {
        if self.ended {
            return;
        }
        self.ended = true;
        // Features not decoded yet are no damage.
        if e.kind() != crate::ErrorKind::Unsupported {
            self.error =
                Some(Problem { page: e.page(), object: Some(table.qualified_name()), what: e.message().into() });
        }
    }

    /// Takes the next task's rows: counted, their keys compared with the rows before them,
    /// unless the scan ended before.
    fn take(&mut self, table: &TableInfo, task: TaskRows, plan: Option<&KeyPlan>, stats: &mut CheckStats) {
        if self.ended {
            return;
        }
        stats.rows_checked += task.rows;
        if let (Some(plan), Some((first, at))) = (plan, &task.keys.first) {
            if self.out_of_order.is_none()
                && self.last_key.as_ref().is_some_and(|last| plan.compare(first, last) == Ordering::Less)
            {
                self.out_of_order = Some(*at);
            }
        }
        self.out_of_order = self.out_of_order.or(task.keys.out_of_order);
        self.last_key = task.keys.last.or(self.last_key.take());
        if let Some(e) = task.error {
            self.fail(table, e);
        }
    }
}

impl RowCheck<'_> {
    /// A heap's pages (`pages`, IAM order), each read once: its owner (into `found.pages`), then
    /// its rows.
    fn check_heap(
        &mut self,
        pages: scan::MappedPages,
        threads: usize,
        checked: &CheckedPages,
        found: &mut UnitFindings,
        stats: &mut CheckStats,
    ) {
        let per_task = self.heap_task_pages();
        let capacity = self.task_capacity(per_task);
        let RowCheck { db, table, partition, unit, decoder, progress, .. } = self;
        let (reader, unit, table) = (db.reader(), *unit, *table);
        let Some(rows) = page_rows(db, table, partition, decoder, progress) else { return };
        let work = |task: Vec<PageId>| {
            let mut decoder = TaskDecoder::new(&rows, None, capacity);
            let mut owners = Vec::new();
            for id in task {
                let page = checked.read(reader, id);
                if let Some(what) = owner_problem(&page, unit) {
                    owners.push((id, what));
                }
                match page {
                    // Extents also hold pages not (or no longer) formatted for this unit.
                    Ok(page) if page.header().page_type != PageType::Data || !page.header().belongs_to(unit.id) => {}
                    Ok(page) => decoder.add(std::slice::from_ref(&page), 0),
                    Err(e) => decoder.fail(e),
                }
            }
            (owners, decoder.finish())
        };
        let mut owners = Vec::new();
        let threads = threads_for(pages.len_at_most(), per_task, threads);
        in_task_order(threads, each_task(pages, per_task), work, |(task_owners, task)| {
            owners.extend(task_owners);
            progress.take(table, task, None, stats);
        });
        for (id, what) in owners {
            found.pages.push(found.problem(Some(id), what));
        }
    }

    /// A clustered index's leaf chain, walked once ([`walk_leaf_chain`]; its problems into
    /// `chain` when given), its pages' rows read and their keys compared in chain order.
    fn check_leaf_chain(
        &mut self,
        threads: usize,
        checked: &CheckedPages,
        chain: Option<&mut UnitFindings>,
        read: &mut PageSet,
        stats: &mut CheckStats,
    ) {
        let capacity = self.task_capacity(PAGES_PER_CATALOG_TASK);
        let RowCheck { db, table, partition, unit, decoder, keys, progress } = self;
        let (reader, unit, table) = (db.reader(), *unit, *table);
        let mut quiet = UnitFindings { object: "", iam: Vec::new(), pages: Vec::new(), chain: Vec::new() };
        let chain = chain.unwrap_or(&mut quiet);
        let plan = KeyPlan::of(decoder, keys);
        let Some(rows) = page_rows(db, table, partition, decoder, progress) else {
            return walk_leaf_chain(reader, checked, unit, chain, read, None);
        };
        let work = |task: LeafTask| {
            for &at in &task.records_to_check {
                checked.check_records(&task.pages[at]);
            }
            let mut decoder = TaskDecoder::new(&rows, plan.as_ref(), capacity);
            for at in 0..task.pages.len() {
                decoder.add(&task.pages, at);
            }
            if let Some(e) = task.then {
                decoder.fail(e);
            }
            decoder.finish()
        };
        let threads = threads_for(usize::try_from(unit.used_pages).unwrap_or(0), PAGES_PER_CATALOG_TASK, threads);
        let produce = |send: &mut dyn FnMut(LeafTask)| walk_leaf_chain(reader, checked, unit, chain, read, Some(send));
        in_task_order(threads, produce, work, |task| progress.take(table, task, plan.as_ref(), stats));
    }

    /// In-row pages one task of a heap's check reads: fewer than [`PAGES_PER_CATALOG_TASK`] where
    /// its rows hold LOB or row-overflow values in other units (the catalog's page counts say how
    /// many pages a task's rows then reach), so that the work spreads over the threads: 187
    /// pages whose rows hold 44,672 LOB pages were three tasks, the last on one thread alone.
    fn heap_task_pages(&self) -> usize {
        let in_row = u128::try_from(self.unit.used_pages.max(1)).unwrap_or(1);
        let all = u128::try_from(self.partition.used_pages).unwrap_or(0).max(in_row);
        let pages = PAGES_PER_CATALOG_TASK as u128 * in_row / all;
        usize::try_from(pages).unwrap_or(PAGES_PER_CATALOG_TASK).clamp(1, PAGES_PER_CATALOG_TASK)
    }

    /// Rows one task's batch is sized for up front: the catalog's rows per page times a task's pages.
    fn task_capacity(&self, per_task: usize) -> usize {
        let rows = usize::try_from(self.partition.rows.max(0)).unwrap_or(0);
        let pages = usize::try_from(self.unit.data_pages.max(1)).unwrap_or(1);
        (rows / pages + 1).saturating_mul(per_task).min(BATCH_ROWS)
    }

    /// The partition's problems: the one that ended its scan, then the first key out of order.
    fn problems(mut self) -> Vec<Problem> {
        let mut problems: Vec<Problem> = self.progress.error.take().into_iter().collect();
        if let Some((page, row)) = self.progress.out_of_order {
            let slot = self.slot_of(page, row).map_or_else(|| format!("row {row}"), |s| format!("slot {s}"));
            problems.push(Problem {
                page: Some(page),
                object: Some(self.table.qualified_name()),
                what: format!("{slot}: clustered key lower than the row before it in the leaf chain"),
            });
        }
        problems
    }

    /// The slot of the `row`th live row on leaf page `page` (read again: only the one page with a
    /// key out of order is).
    fn slot_of(&self, page: PageId, row: usize) -> Option<u16> {
        let reader = self.db.reader();
        let page = reader.read(page).ok()?;
        let format = Database::record_format(self.table, self.partition).ok()?;
        let live = ScanMode { include_ghosts: false, salvage: false, format };
        let (mut seen, mut slot) = (0, None);
        let mut find = |_: &Record, location: RowLocation| {
            seen += 1;
            if seen > row {
                slot = Some(location.slot);
                return Ok(scan::Flow::Stop);
            }
            Ok(scan::Flow::Continue)
        };
        scan::visit_page(reader, &page, false, live, &mut ScanStats::default(), &mut find).ok()?;
        slot
    }
}

/// How a partition's pages go into batches; `None` (its scan ended) when its record format is
/// not read.
fn page_rows<'d>(
    db: &'d Database,
    table: &TableInfo,
    partition: &PartitionInfo,
    decoder: &'d RowDecoder,
    progress: &mut RowProgress,
) -> Option<PageRows<'d>> {
    match PageRows::new(db, table, partition, decoder) {
        Ok(rows) => Some(rows),
        Err(e) => {
            progress.fail(table, e);
            None
        }
    }
}

/// Rows per batch at most while checking (as a scan's default batch).
const BATCH_ROWS: usize = 65_536;

/// What one task of a row check found.
struct TaskRows {
    rows: u64,
    /// The problem that ended the task's rows.
    error: Option<crate::Error>,
    keys: TaskKeys,
}

/// Decodes one task's pages into batches (the rows then dropped) and compares their keys.
struct TaskDecoder<'r> {
    rows: &'r PageRows<'r>,
    plan: Option<&'r KeyPlan>,
    capacity: usize,
    batch: BatchBuilder,
    stats: ScanStats,
    whole_row: Vec<crate::Value>,
    /// The pages whose rows are in the batch being built, and how many each gave.
    in_batch: Vec<(PageId, usize)>,
    keys: TaskKeys,
    error: Option<crate::Error>,
}

impl<'r> TaskDecoder<'r> {
    fn new(rows: &'r PageRows<'r>, plan: Option<&'r KeyPlan>, capacity: usize) -> Self {
        TaskDecoder {
            rows,
            plan,
            capacity,
            batch: BatchBuilder::verifying(rows.decoder(), capacity, crate::TimestampUnit::Microsecond),
            stats: ScanStats::default(),
            whole_row: Vec::new(),
            in_batch: Vec::new(),
            keys: TaskKeys::default(),
            error: None,
        }
    }

    /// Appends the rows of `pages[at]`, unless the task's rows ended before. `pages[..at]` ends
    /// with the pages whose rows are in the batch (a clustered index's: their keys are still
    /// compared when `pages[at]` fails).
    fn add(&mut self, pages: &[Page], at: usize) {
        if self.error.is_some() {
            return;
        }
        let page = &pages[at];
        let before = self.batch.len();
        match self.rows.append(page, &mut self.batch, &mut self.stats, &mut self.whole_row) {
            Ok(()) => {
                self.in_batch.push((page.id(), self.batch.len() - before));
                if self.batch.is_full(BATCH_ROWS) {
                    self.flush();
                }
            }
            Err(e) => {
                self.error = Some(e.at_page(page.id()));
                // The builder holds part of the failed page: it is built again without it.
                self.batch =
                    BatchBuilder::verifying(self.rows.decoder(), self.capacity, crate::TimestampUnit::Microsecond);
                if self.plan.is_some() && at >= self.in_batch.len() {
                    for page in &pages[at - self.in_batch.len()..at] {
                        let _ = self.rows.append(page, &mut self.batch, &mut ScanStats::default(), &mut self.whole_row);
                    }
                    self.flush();
                }
            }
        }
    }

    /// The task's rows end at `e`.
    fn fail(&mut self, e: crate::Error) {
        if self.error.is_none() {
            self.flush();
            self.error = Some(e);
        }
    }

    /// Finishes the batch: its values are checked whole (a value Arrow refuses is a problem),
    /// and its keys compared.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            self.in_batch.clear();
            return;
        }
        match self.batch.finish() {
            Ok(batch) => {
                if let Some(plan) = self.plan {
                    self.keys.add(plan, &batch, &self.in_batch);
                }
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self.in_batch.clear();
    }

    fn finish(mut self) -> TaskRows {
        if self.error.is_none() {
            self.flush();
        }
        TaskRows { rows: self.stats.rows, error: self.error, keys: self.keys }
    }
}

/// The clustered key columns a row check compares: (position in the decoder's columns, descending).
struct KeyPlan(Vec<(usize, bool)>);

impl KeyPlan {
    /// The plan for `keys` (name, descending), when every key column has a plain order.
    fn of(decoder: &RowDecoder, keys: &[(String, bool)]) -> Option<Self> {
        let positions: Option<Vec<(usize, bool)>> = keys
            .iter()
            .map(|(name, desc)| {
                let position = decoder.columns().iter().position(|c| &c.column.name == name)?;
                plain_order(decoder.columns()[position].column.type_info.sql_type).then_some((position, *desc))
            })
            .collect();
        positions.filter(|k| !k.is_empty()).map(KeyPlan)
    }

    /// Compares two keys, column by column, descending columns reversed.
    fn compare(&self, a: &[KeyCell], b: &[KeyCell]) -> Ordering {
        for ((x, y), (_, descending)) in a.iter().zip(b).zip(&self.0) {
            let order = x.partial_cmp(y).unwrap_or(Ordering::Equal);
            let order = if *descending { order.reverse() } else { order };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }

    /// The key columns of `batch` as cells, one vector per column (each column's type matched
    /// once, not once a row).
    fn columns(&self, batch: &RecordBatch) -> Vec<Vec<KeyCell>> {
        self.0.iter().map(|&(i, _)| KeyCell::column(batch.column(i).as_ref())).collect()
    }

    /// Row `row`'s key in `columns`.
    fn key(columns: &[Vec<KeyCell>], row: usize) -> Vec<KeyCell> {
        columns.iter().map(|cells| cells[row]).collect()
    }

    /// Compares rows `a` and `b` of `columns` without building their keys.
    fn compare_rows(&self, columns: &[Vec<KeyCell>], a: usize, b: usize) -> Ordering {
        for (cells, (_, descending)) in columns.iter().zip(&self.0) {
            let order = cells[a].partial_cmp(&cells[b]).unwrap_or(Ordering::Equal);
            let order = if *descending { order.reverse() } else { order };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

/// The keys of one task's rows: the first (with its page), the last, and the first place (page,
/// live row on it) where a key is lower than the one before it in the task.
#[derive(Default)]
struct TaskKeys {
    first: Option<(Vec<KeyCell>, (PageId, usize))>,
    last: Option<Vec<KeyCell>>,
    out_of_order: Option<(PageId, usize)>,
}

impl TaskKeys {
    /// Adds a batch of the task's rows, which came from `pages` (page, rows) in order.
    fn add(&mut self, plan: &KeyPlan, batch: &RecordBatch, pages: &[(PageId, usize)]) {
        // Past the task's first key out of order, nothing more of it counts.
        if self.out_of_order.is_some() || batch.num_rows() == 0 {
            return;
        }
        let columns = plan.columns(batch);
        let mut row = 0;
        for &(page, rows) in pages {
            for on_page in 0..rows {
                if self.out_of_order.is_some() {
                    break;
                }
                let lower = if row + on_page == 0 {
                    match &self.last {
                        Some(last) => plan.compare(&KeyPlan::key(&columns, 0), last) == Ordering::Less,
                        None => {
                            self.first = Some((KeyPlan::key(&columns, 0), (page, 0)));
                            false
                        }
                    }
                } else {
                    plan.compare_rows(&columns, row + on_page, row + on_page - 1) == Ordering::Less
                };
                if lower {
                    self.out_of_order = Some((page, on_page));
                }
            }
            row += rows;
        }
        if row > 0 {
            self.last = Some(KeyPlan::key(&columns, row - 1));
        }
    }
}

/// Types whose values order the same way as their numbers or text spellings.
fn plain_order(t: crate::types::SqlType) -> bool {
    use crate::types::SqlType::*;
    matches!(
        t,
        Bit | TinyInt
            | SmallInt
            | Int
            | BigInt
            | Decimal
            | Numeric
            | Money
            | SmallMoney
            | Real
            | Float
            | Date
            | Time
            | DateTime
            | SmallDateTime
            | DateTime2
    )
}

/// One key column's value, comparable: NULL first, then the column's numbers (integers, the
/// unscaled decimals of one scale, days, time and timestamp units) or floats.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum KeyCell {
    Null,
    Number(i128),
    Float(f64),
}

impl KeyCell {
    /// The values of `array` (an Arrow column of a [`plain_order`] type).
    fn column(array: &dyn Array) -> Vec<Self> {
        use arrow_array::types::*;
        use arrow_schema::{DataType as T, TimeUnit as U};
        fn numbers<P: arrow_array::ArrowPrimitiveType>(array: &dyn Array) -> Vec<KeyCell>
        where
            P::Native: Into<i128>,
        {
            array.as_primitive::<P>().iter().map(|v| v.map_or(KeyCell::Null, |v| KeyCell::Number(v.into()))).collect()
        }
        fn floats<P: arrow_array::ArrowPrimitiveType>(array: &dyn Array) -> Vec<KeyCell>
        where
            P::Native: Into<f64>,
        {
            array.as_primitive::<P>().iter().map(|v| v.map_or(KeyCell::Null, |v| KeyCell::Float(v.into()))).collect()
        }
        match array.data_type() {
            T::Boolean => {
                array.as_boolean().iter().map(|v| v.map_or(KeyCell::Null, |v| KeyCell::Number(v.into()))).collect()
            }
            T::UInt8 => numbers::<UInt8Type>(array),
            T::Int16 => numbers::<Int16Type>(array),
            T::Int32 => numbers::<Int32Type>(array),
            T::Int64 => numbers::<Int64Type>(array),
            T::Decimal128(..) => numbers::<Decimal128Type>(array),
            T::Date32 => numbers::<Date32Type>(array),
            T::Time64(U::Nanosecond) => numbers::<Time64NanosecondType>(array),
            T::Time64(_) => numbers::<Time64MicrosecondType>(array),
            T::Timestamp(U::Second, _) => numbers::<TimestampSecondType>(array),
            T::Timestamp(U::Millisecond, _) => numbers::<TimestampMillisecondType>(array),
            T::Timestamp(U::Microsecond, _) => numbers::<TimestampMicrosecondType>(array),
            T::Timestamp(U::Nanosecond, _) => numbers::<TimestampNanosecondType>(array),
            T::Float32 => floats::<Float32Type>(array),
            T::Float64 => floats::<Float64Type>(array),
            // Not a plain order: every value compares equal.
            _ => vec![KeyCell::Null; array.len()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::tests::build_page;
    use crate::record::tests::build_record;

    fn problems_of(mut page: Vec<u8>, id: PageId) -> Vec<String> {
        let mut problems = Vec::new();
        check_one_page(id, &mut page, &mut problems);
        problems.into_iter().map(|p| p.what).collect()
    }

    #[test]
    fn keys_order_nulls_first_and_descending_columns_reversed() {
        use KeyCell::{Float, Null, Number};
        let ascending = KeyPlan(vec![(0, false), (1, false)]);
        let descending = KeyPlan(vec![(0, true)]);
        assert_eq!(ascending.compare(&[Null, Null], &[Number(-5), Null]), Ordering::Less);
        assert_eq!(ascending.compare(&[Number(2), Number(9)], &[Number(10), Number(0)]), Ordering::Less);
        assert_eq!(ascending.compare(&[Number(2), Number(9)], &[Number(2), Number(1)]), Ordering::Greater);
        assert_eq!(ascending.compare(&[Float(-0.5), Null], &[Float(0.25), Null]), Ordering::Less);
        assert_eq!(descending.compare(&[Number(10)], &[Number(2)]), Ordering::Less);
        assert_eq!(descending.compare(&[Null], &[Number(2)]), Ordering::Greater);
    }

    #[test]
    fn key_cells_read_each_plain_type_in_its_order() {
        use arrow_array::{Date32Array, Decimal128Array, Int64Array, TimestampMillisecondArray};
        let ints = Int64Array::from(vec![Some(-3), None, Some(i64::MAX)]);
        assert_eq!(KeyCell::column(&ints), [KeyCell::Number(-3), KeyCell::Null, KeyCell::Number(i64::MAX.into())]);
        let money = Decimal128Array::from(vec![105_000, 99_900]).with_precision_and_scale(19, 4).unwrap();
        let money = KeyCell::column(&money);
        assert!(money[0] > money[1], "10.5 after 9.99");
        let days = KeyCell::column(&Date32Array::from(vec![-719_162, 0]));
        assert!(days[0] < days[1], "0001-01-01 before 1970-01-01");
        let times = KeyCell::column(&TimestampMillisecondArray::from(vec![1_000, 999]));
        assert!(times[0] > times[1]);
    }

    #[test]
    fn a_sound_page_has_no_problem() {
        let id = PageId::new(1, 200);
        let record = build_record(&[1, 0, 0, 0], 1, &[], &[b"abc"]);
        assert!(problems_of(build_page(id, 1, &[&record]), id).is_empty());
    }

    #[test]
    fn a_garbage_slot_array_names_a_few_slots_and_counts_the_rest() {
        let id = PageId::new(1, 200);
        let mut page = build_page(id, 1, &[]);
        page[22..24].copy_from_slice(&100u16.to_le_bytes());
        for slot in 0..100 {
            page[PAGE_SIZE - 2 * (slot + 1)..PAGE_SIZE - 2 * slot].copy_from_slice(&9000u16.to_le_bytes());
        }
        let problems = problems_of(page, id);
        assert_eq!(problems.len(), SLOT_PROBLEMS_NAMED + 1, "{problems:?}");
        assert!(problems[0].starts_with("slot 0 points at 9000"), "{problems:?}");
        assert!(problems[SLOT_PROBLEMS_NAMED - 1].starts_with("slot 7 points at 9000"), "{problems:?}");
        assert_eq!(problems[SLOT_PROBLEMS_NAMED], "92 more slots with problems (the first 8 are listed)");
    }

    #[test]
    fn names_each_kind_of_damage() {
        let id = PageId::new(1, 200);
        let record = build_record(&[1, 0, 0, 0], 1, &[], &[b"abc"]);
        let page = build_page(id, 1, &[&record]);
        assert!(problems_of(page.clone(), PageId::new(1, 201))[0].contains("says it is page 1:200"));
        let mut bad_slot = page.clone();
        bad_slot[PAGE_SIZE - 2..].copy_from_slice(&9000u16.to_le_bytes());
        assert!(problems_of(bad_slot, id)[0].contains("slot 0 points at 9000"));
        let mut bad_record = page.clone();
        bad_record[HEADER_SIZE + 2..HEADER_SIZE + 4].copy_from_slice(&9000u16.to_le_bytes());
        assert!(problems_of(bad_record, id)[0].starts_with("slot 0:"));
        let mut bad_sum = page;
        bad_sum[4..6].copy_from_slice(&crate::page::FLAG_CHECKSUM.to_le_bytes());
        assert!(problems_of(bad_sum, id)[0].contains("checksum mismatch"));
    }

    #[test]
    fn clustered_keys_past_the_bound_are_summed_in_any_order() {
        let keys: Vec<String> = (0..100).map(|i| format!("{i}\u{1}k{}", i % 7)).collect();
        let (mut named, mut summed) = (ClusteredKeys::new(), ClusteredKeys::new());
        for key in &keys {
            named.add(key.clone(), usize::MAX);
            summed.add(key.clone(), 10 * (KEY_ENTRY_BYTES + 8));
        }
        assert_eq!(named.named.as_ref().map(HashMap::len), Some(100));
        assert_eq!(named.named.as_ref().and_then(|n| n.get("7\u{1}k0")), Some(&1));
        assert!(summed.named.is_none(), "past the bound the keys are not named");
        assert_eq!(named.digest, summed.digest);
        let sum = |keys: &[&str]| keys.iter().fold(0u128, |d, k| d.wrapping_add(key_hash(k)));
        let mut locators: Vec<&str> = keys.iter().map(String::as_str).rev().collect();
        assert_eq!(sum(&locators), summed.digest, "the same keys in another order");
        locators[3] = "1000\u{1}k6";
        assert_ne!(sum(&locators), summed.digest, "a locator no row has");
        locators[3] = locators[4];
        assert_ne!(sum(&locators), summed.digest, "one row's key twice, another's missing");
        assert_ne!(key_hash("1\u{1}2"), key_hash("12"), "the separator counts");
    }
}
