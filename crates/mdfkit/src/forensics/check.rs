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
//!
//! The work and the report are bounded by what the source holds, not by what its pages claim: a
//! PFS interval whose PFS page the source cannot serve is one problem (a backup's file list can
//! claim terabytes it never copied), a page names its first 8 bad slots (`SLOT_PROBLEMS_NAMED`) and
//! counts the rest, IAM extents outside the files are counted per IAM page and never kept, and
//! every chain (IAM, leaf level) is walked once.

use std::collections::{HashMap, HashSet};

use crate::bytes::read_u16;
use crate::catalog::base::AllocationUnit;
use crate::database::Database;
use crate::error::Result;
use crate::page::allocation::{pfs_intervals, pfs_page_for, IamPage, PFS_INTERVAL};
use crate::page::compression_info::{CompressionInfo, PAGE_HAS_CI_STRUCTURE};
use crate::page::protection::{self, Verdict};
use crate::page::{Page, PageHeader, PageId, PageType, HEADER_SIZE, PAGE_SIZE};
use crate::record::cd::{CdRecord, CdRecordType};
use crate::record::{Record, RecordFormat, RecordType};
use crate::scan;
use crate::source::PageSource;
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
            let findings = task.check(source, &mut buf);
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
                        if tx.send((task.index, task.check(source, &mut buf))).is_err() {
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
    fn check(&self, source: &dyn PageSource, buf: &mut [u8]) -> TaskFindings {
        let mut problems = self.before.clone();
        let mut stats = CheckStats::default();
        for page in self.pages.clone() {
            let id = PageId::new(self.file_id, page);
            let allocation = self.pfs.get((page % PFS_INTERVAL) as usize).copied();
            // The file header, PFS, GAM and SGAM pages are always in use (pages 4 and 5 are
            // not: they are all zero in every corpus file); the PFS tells about the rest.
            let allocated = page < 4 || allocation.is_some_and(|b| b & 0x40 != 0);
            if !allocated {
                stats.pages_skipped_unallocated += 1;
                continue;
            }
            stats.pages_checked += 1;
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
        let pages_done = self.pages_not_held + u64::from(self.pages.end - self.pages.start);
        TaskFindings { problems, stats, pages_done }
    }
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

fn check_one_page(id: PageId, buf: &mut [u8], problems: &mut Vec<Problem>) {
    let mut report = |what: String| problems.push(Problem { page: Some(id), object: None, what });
    match protection::verify_and_restore(buf) {
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

/// Checks allocation and B-tree structure through the catalog.
pub fn check_catalog(db: &Database) -> Result<(Vec<Problem>, CheckStats)> {
    let mut problems = Vec::new();
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
    let mut extent_owner: HashMap<PageId, i64> = HashMap::new();
    for unit in &catalog.base().allocation_units {
        if unit.first_iam_page.is_null() {
            continue;
        }
        stats.allocation_units_checked += 1;
        let object = names
            .get(&unit.owner_id)
            .map(|(n, _)| format!("{n} (allocation unit {})", unit.id))
            .unwrap_or_else(|| format!("allocation unit {}", unit.id));
        let mut report =
            |page: Option<PageId>, what: String| problems.push(Problem { page, object: Some(object.clone()), what });
        let mut seen = HashSet::new();
        let mut next = unit.first_iam_page;
        while !next.is_null() {
            if !seen.insert(next) {
                report(Some(next), "IAM chain returns to this page: a cycle".into());
                break;
            }
            match reader.read(next).and_then(|p| Ok((IamPage::parse(&p)?, p.header().next_page))) {
                Ok((iam, following)) => {
                    // Extents outside the files are reported once per IAM page, never kept: the
                    // map of owners stays within the files' real size.
                    let (mut outside, mut first_outside) = (0, String::new());
                    for extent in &iam.extents {
                        match scan::check_in_file(reader, next, *extent) {
                            Ok(()) => {
                                if let Some(other) = extent_owner.insert(*extent, unit.id) {
                                    report(Some(*extent), format!("extent also owned by allocation unit {other}"));
                                }
                            }
                            Err(e) if outside == 0 => (outside, first_outside) = (1, e.message().to_string()),
                            Err(_) => outside += 1,
                        }
                    }
                    if outside > 0 {
                        report(Some(next), format!("{first_outside} ({outside} extents outside the files)"));
                    }
                    next = following;
                }
                Err(e) => {
                    report(Some(next), format!("IAM page unreadable: {}", e.message()));
                    break;
                }
            }
        }
        check_unit_pages(db, unit, &mut report);
        let is_clustered =
            catalog.table("sysrowsets").iter().any(|rs| rs.int("rowsetid") == unit.owner_id && rs.int("idminor") == 1);
        if unit.kind == 1 && is_clustered {
            check_leaf_chain(db, unit, &mut report);
        }
    }
    check_rows(db, &mut problems, &mut stats);
    check_nonclustered(db, &mut problems, &mut stats);
    Ok((problems, stats))
}

/// Problems named one by one for an index; more end its check.
const INDEX_PROBLEMS_NAMED: usize = 8;

/// Every nonclustered index is walked from its root (its records' columns as `index_rows` says,
/// CD or FixedVar): each level's page chain is the pages the level above points at,
/// in order, each once; every record parses and decodes; leaf keys never go backwards (where
/// their types order plainly, as [`check_rows`]); each leaf record's row locator is a row of the
/// table (a heap RID names a live record or forwarding stub of the table; a clustered key is a
/// row's key), and the table has as many rows as the index leaf records.
fn check_nonclustered(db: &Database, problems: &mut Vec<Problem>, stats: &mut CheckStats) {
    let catalog = db.catalog();
    for table in catalog.tables(false) {
        let indexes = catalog.indexes(table.object_id);
        // Each partition's rows, read once for all the table's indexes.
        let mut base: HashMap<i64, Result<(BaseRows, u64)>> = HashMap::new();
        for index in indexes.iter().filter(|i| i.index_type == 2 && !i.is_disabled) {
            let object = format!("{} index {}", table.qualified_name(), index.name);
            let rowsets = catalog.rows_where("sysrowsets", "idmajor", i64::from(table.object_id));
            for rs in rowsets.iter().filter(|r| r.int("idminor") == i64::from(index.index_id)) {
                if !matches!(rs.int("cmprlevel"), 0..=2) {
                    continue;
                }
                let Some(partition) =
                    table.partitions.iter().find(|p| i64::from(p.partition_number) == rs.int("numpart"))
                else {
                    continue;
                };
                let mut found = Vec::new();
                let mut report = |page: Option<PageId>, what: String| {
                    found.push(Problem { page, object: Some(object.clone()), what });
                    found.len() < INDEX_PROBLEMS_NAMED
                };
                match crate::index_rows::IndexRows::new(catalog, db.reader(), &table, index, rs.int("rowsetid")) {
                    Ok(rows) => {
                        let rows_of_table = base.entry(partition.partition_id).or_insert_with(|| {
                            let clustered = indexes.iter().find(|i| i.index_id == 1);
                            let key: Vec<String> = clustered
                                .map(|i| i.key_columns.iter().map(|(n, _)| n.clone()).collect())
                                .unwrap_or_default();
                            base_rows(db, &table, partition, &key)
                        });
                        match rows_of_table {
                            Ok((base, count)) => {
                                check_index_tree(db, &indexes, &rows, base.clone(), *count, &mut report, stats)
                            }
                            Err(e) => {
                                report(e.page(), format!("the table's rows cannot be read: {}", e.message()));
                            }
                        }
                    }
                    Err(e) => {
                        report(e.page(), e.message().to_string());
                    }
                }
                problems.extend(found);
            }
        }
    }
}

/// The table's rows as an index's row locators name them.
#[derive(Clone)]
enum BaseRows {
    /// A heap: its in-row allocation unit (RIDs are looked up on its pages).
    Heap(i64),
    /// A clustered table: each clustered key (its columns' spellings) and how many rows have it.
    Keys(HashMap<String, usize>),
}

/// [`check_nonclustered`] for one index partition over the table's rows (`base`, `base_rows` of
/// them); `report` returns false when enough was said.
fn check_index_tree(
    db: &Database,
    indexes: &[crate::catalog::model::IndexInfo],
    rows: &crate::index_rows::IndexRows,
    mut base: BaseRows,
    base_rows: u64,
    report: &mut impl FnMut(Option<PageId>, String) -> bool,
    stats: &mut CheckStats,
) {
    use crate::index_rows::IndexColumnRole;
    let reader = db.reader();
    let Some(unit) = db.catalog().base().in_row_unit(rows.rowset) else { return };
    if unit.root_page.is_null() {
        return;
    }
    let clustered_key: Vec<String> = indexes
        .iter()
        .find(|i| i.index_id == 1)
        .map(|i| i.key_columns.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
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
    let compare_keys = key_positions.len() == rows.index.key_columns.len();
    // Where each clustered key column is in a leaf record.
    let locator_positions: Vec<Option<usize>> = clustered_key
        .iter()
        .map(|name| leaf.columns().iter().position(|c| c.column.name.eq_ignore_ascii_case(name)))
        .collect();
    let rid_position = rows.roles.iter().position(|r| *r == IndexColumnRole::Rid);
    let mut expected = vec![unit.root_page];
    let mut level: Option<u8> = None;
    let mut seen = HashSet::new();
    let (mut leaf_records, mut previous) = (0u64, None::<Vec<KeyPart>>);
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
            let page = match reader.read(next) {
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
            if h.prev_page != prev {
                if !report(Some(next), format!("previous-page link is {}, the chain came from {prev}", h.prev_page)) {
                    return;
                }
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
            for slot in 0..h.slot_count {
                let bytes = match page.slot_bytes(slot) {
                    Ok(Some(b)) => b,
                    Ok(None) => continue,
                    Err(e) => {
                        if !report(Some(next), format!("slot {slot}: {}", e.message())) {
                            return;
                        }
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
                        if !report(Some(next), format!("slot {slot}: a {:?} record on an index page", r.record_type()))
                        {
                            return;
                        }
                        continue;
                    }
                    Err(e) => {
                        if !report(Some(next), format!("slot {slot}: {e}")) {
                            return;
                        }
                        continue;
                    }
                };
                if let Err(e) = rows.decoder(this_level).decode(&record, &mut values) {
                    if !report(Some(next), format!("slot {slot}: {e}")) {
                        return;
                    }
                    continue;
                }
                if this_level > 0 {
                    match record.cd().map_or_else(|| record.down_page(), |cd| cd.down_page()) {
                        Some(child) => children.push(child),
                        None => {
                            if !report(Some(next), format!("slot {slot}: a non-leaf index record with no child page")) {
                                return;
                            }
                        }
                    }
                    continue;
                }
                leaf_records += 1;
                stats.index_records_checked += 1;
                if compare_keys {
                    let key: Vec<KeyPart> = key_positions.iter().map(|&(i, d)| KeyPart::of(&values[i], d)).collect();
                    if previous.as_ref().is_some_and(|p| key < *p)
                        && !report(Some(next), format!("slot {slot}: index key lower than the record before it"))
                    {
                        return;
                    }
                    previous = Some(key);
                }
                let found = match (&mut base, rid_position) {
                    (BaseRows::Heap(heap), Some(i)) => match &values[i] {
                        Value::Binary(rid) => rid_names_a_row(db, *heap, rid),
                        _ => Err("the RID is not 8 bytes".into()),
                    },
                    (BaseRows::Keys(keys), _) => {
                        let key = locator_positions.iter().map(|p| p.map_or(String::new(), |i| values[i].to_string()));
                        let key = key.collect::<Vec<_>>().join("\u{1}");
                        match keys.get_mut(&key) {
                            Some(n) if *n > 0 => {
                                *n -= 1;
                                Ok(())
                            }
                            _ => Err(format!(
                                "no row of the table has the clustered key ({})",
                                key.replace('\u{1}', ", ")
                            )),
                        }
                    }
                    (BaseRows::Heap(_), None) => Err("no RID column".into()),
                };
                if let Err(why) = found {
                    if !report(Some(next), format!("slot {slot}: row locator not found: {why}")) {
                        return;
                    }
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
    let mut keys: HashMap<String, usize> = HashMap::new();
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
        *keys.entry(key.join("\u{1}")).or_default() += 1;
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

/// Every row of every table decodes: forwarding stubs lead to forwarded records, LOB and
/// row-overflow links resolve, values have their type's size. Along a clustered index's leaf
/// chain the keys never go backwards (checked where every key column has a type whose order is
/// plain: numbers, dates and times; strings follow their collation and GUIDs SQL Server's own byte
/// order, so those keys are not compared). The first problem of a table is reported (a damaged
/// structure tends to fail every row after it).
fn check_rows(db: &Database, problems: &mut Vec<Problem>, stats: &mut CheckStats) {
    let mut values = Vec::new();
    for table in db.catalog().tables(false) {
        let keys: Vec<(String, bool)> = if table.is_heap {
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
            let decoder = match db.row_decoder(&table, partition.partition_id, None) {
                Ok(d) => d,
                Err(e) if e.kind() == crate::ErrorKind::Unsupported => continue,
                Err(e) => {
                    problems.push(Problem {
                        page: e.page(),
                        object: Some(table.qualified_name()),
                        what: e.message().to_string(),
                    });
                    continue;
                }
            };
            // (position in the row, descending) of each key column, when all can be compared.
            let key_positions: Option<Vec<(usize, bool)>> = keys
                .iter()
                .map(|(name, desc)| {
                    let position = decoder.columns().iter().position(|c| &c.column.name == name)?;
                    plain_order(decoder.columns()[position].column.type_info.sql_type).then_some((position, *desc))
                })
                .collect();
            let key_positions = key_positions.filter(|k| !k.is_empty());
            let mut previous: Option<Vec<KeyPart>> = None;
            let mut out_of_order: Option<(PageId, u16)> = None;
            let result = db.scan(&table).partition_records(partition, |record, location| {
                decoder.decode(record, &mut values)?;
                stats.rows_checked += 1;
                if let Some(positions) = &key_positions {
                    let key: Vec<KeyPart> = positions.iter().map(|&(i, desc)| KeyPart::of(&values[i], desc)).collect();
                    if previous.as_ref().is_some_and(|p| key < *p) && out_of_order.is_none() {
                        out_of_order = Some((location.page, location.slot));
                    }
                    previous = Some(key);
                }
                Ok(scan::Flow::Continue)
            });
            match result {
                Ok(_) => {}
                // Features not decoded yet are no damage.
                Err(e) if e.kind() == crate::ErrorKind::Unsupported => {}
                Err(e) => problems.push(Problem {
                    page: e.page(),
                    object: Some(table.qualified_name()),
                    what: e.message().to_string(),
                }),
            }
            if let Some((page, slot)) = out_of_order {
                problems.push(Problem {
                    page: Some(page),
                    object: Some(table.qualified_name()),
                    what: format!("slot {slot}: clustered key lower than the row before it in the leaf chain"),
                });
            }
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

/// One key column's value, comparable; descending columns compare reversed. NULL sorts first.
#[derive(Debug, Clone, PartialEq)]
enum KeyPart {
    Null,
    Number(f64),
    Text(String),
    Reversed(Box<KeyPart>),
}

impl PartialOrd for KeyPart {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering::*;
        match (self, other) {
            (KeyPart::Reversed(a), KeyPart::Reversed(b)) => b.partial_cmp(a),
            (KeyPart::Null, KeyPart::Null) => Some(Equal),
            (KeyPart::Null, _) => Some(Less),
            (_, KeyPart::Null) => Some(Greater),
            (KeyPart::Number(a), KeyPart::Number(b)) => a.partial_cmp(b),
            (KeyPart::Text(a), KeyPart::Text(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

impl KeyPart {
    fn of(value: &crate::value::Value, descending: bool) -> Self {
        use crate::value::Value;
        let part = match value {
            Value::Null => KeyPart::Null,
            Value::Int(i) => KeyPart::Number(*i as f64),
            Value::DateTime { days, ticks } => KeyPart::Number(f64::from(*days) * 1e8 + f64::from(*ticks)),
            Value::Text(t) => t.parse::<f64>().map_or_else(|_| KeyPart::Text(t.clone()), KeyPart::Number),
            other => KeyPart::Text(other.to_string()),
        };
        if descending {
            KeyPart::Reversed(Box::new(part))
        } else {
            part
        }
    }
}

/// Every allocated page an allocation unit's IAM chain owns belongs to that unit.
fn check_unit_pages(db: &Database, unit: &AllocationUnit, report: &mut impl FnMut(Option<PageId>, String)) {
    let pages = match scan::heap_pages(db.reader(), unit) {
        Ok(p) => p,
        Err(e) => return report(e.page(), e.message().to_string()),
    };
    for id in pages {
        match db.reader().read(id) {
            // A page of an allocated extent may not be formatted yet (all zero).
            Ok(page) if page.header().belongs_to(unit.id) => {}
            Ok(page) => report(
                Some(id),
                format!(
                    "owned by this unit's IAM chain but its header names allocation unit {}",
                    page.header().allocation_unit_id()
                ),
            ),
            Err(e) if e.message().contains("page header says it is page 0:0") => {}
            Err(e) => report(Some(id), e.message().to_string()),
        }
    }
}

/// The leaf chain is acyclic and each page's previous link names the page before it.
fn check_leaf_chain(db: &Database, unit: &AllocationUnit, report: &mut impl FnMut(Option<PageId>, String)) {
    let reader = db.reader();
    let mut next = match scan::first_leaf(reader, unit) {
        Ok(p) => p,
        Err(e) => return report(e.page(), e.message().to_string()),
    };
    let mut previous = PageId::default();
    let mut seen = HashSet::new();
    while !next.is_null() {
        if !seen.insert(next) {
            return report(Some(next), "leaf chain returns to this page: a cycle".into());
        }
        match reader.read(next) {
            Ok(page) => {
                let h = page.header();
                if h.prev_page != previous {
                    report(
                        Some(next),
                        format!("previous-page link is {}, the chain came from {previous}", h.prev_page),
                    );
                }
                previous = next;
                next = h.next_page;
            }
            Err(e) => return report(Some(next), e.message().to_string()),
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
    fn key_parts_order_nulls_first_and_descending_columns_reversed() {
        use crate::value::Value;
        let k = |v: Value, d| KeyPart::of(&v, d);
        assert!(k(Value::Null, false) < k(Value::Int(-5), false));
        assert!(k(Value::Int(2), false) < k(Value::Int(10), false));
        assert!(k(Value::text("10.50"), false) > k(Value::text("9.99"), false), "decimals compare as numbers");
        assert!(k(Value::Int(10), true) < k(Value::Int(2), true));
        assert!(k(Value::Null, true) > k(Value::Int(2), true));
        assert!(
            vec![k(Value::Int(1), false), k(Value::Int(9), false)]
                < vec![k(Value::Int(2), false), k(Value::Int(0), false)]
        );
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
}
