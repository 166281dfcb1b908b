//! Redo: log records applied onto pages in memory, the way `RESTORE ... WITH RECOVERY` rolls a
//! database forward to a stop point, without writing anything.
//!
//! ```text
//!  base pages (full [+ differential])      log records, LSN order, up to the stop point
//!        |                                        |
//!        v                                        v
//!  RedoPages: page id -> changed copy (only pages the log changes) | refused page (why, LSN)
//! ```
//!
//! **Which records**: those of transactions committed at or before the stop point (the stop
//! point is the end of the log given, a time compared with each LOP_COMMIT_XACT's end time, or an
//! LSN). A transaction still open at the stop point, or rolled back, has its records left out:
//! for row operations that is redo followed by undo. Where a base page already holds a change of
//! such a transaction (a backup copies pages while transactions run), leaving the record out
//! would keep an uncommitted change: that page is refused, naming the transaction, rather than
//! served (undo onto pages is not implemented).
//!
//! **On which page state** (write-ahead logging's rule, as restore's redo pass applies it): a
//! page-operation record (LOP_* below 0x80; +0x18 page id, +0x24 the page's LSN before the
//! change) is applied only to a page whose header LSN (page +40) equals that previous LSN; a page
//! whose LSN is already at or past the record's holds the change (skipped); any other LSN is a
//! gap in the log given, and the page is refused. After applying, the page's LSN is the record's.
//! Checked on the corpus: the ten LOP_INSERT_ROWS of `RestoreTimeClean2_1.trn` into heap page
//! 1:153 each carry the LSN the page had after the one before, the first one the LSN
//! `RestoreTimeClean2.bak` holds the page at.
//!
//! **Operations redone** (row images as [`super::record`] reads them; page layout as
//! [`crate::page`] draws it):
//! - LOP_INSERT_ROWS: image 0 is the whole row, `slot` where it goes. Heap pages (LCX_HEAP) keep
//!   their slot numbers (row ids): the row takes an empty slot (offset 0) or the next new one.
//!   Index pages (other contexts) keep slots in key order: later slots move up by one.
//! - LOP_DELETE_ROWS: on a heap the slot's offset becomes 0 (an empty slot, as SQL Server leaves
//!   it); on an index page the slot is removed and later slots move down; with LCX_MARK_AS_GHOST
//!   the row is kept and its record type becomes a ghost (status bits 1-3 = 5 data, 6 index).
//! - LOP_MODIFY_ROW: images 0 and 1 are the bytes before and after at +0x38 (offset in the row);
//!   applied where the before image matches the page and the two are the same length.
//!
//! Rows are written at the page's free-data offset (header +30), which then moves past them;
//! the free count (+28) follows. A changed page that was checksum protected gets its checksum
//! recomputed; a torn-page protected one is kept with its sector bits restored and the flag off.
//!
//! **Records that change nothing a read uses**, left out by name (and counted in the notes):
//! LOP_COUNT_DELTA (cached row and page counts in the catalog's rowsets), the differential and
//! minimally-logged change maps (LCX_DIFF_MAP, LCX_ML_MAP), the boot page's checkpoint fields
//! (LCX_BOOT_PAGE_CKPT). **Every other page operation** (LOP_FORMAT_PAGE, allocation bits,
//! page splits, ...) that reaches a page not already holding it makes that page refused: a read
//! of it fails, naming the page, the record's LSN and its operation. Pages no read needs never
//! stop anything.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::backup::chain::BackupFiles;
use crate::backup::{BackupSet, Lsn};
use crate::bytes::read_u16;
use crate::error::{Error, ErrorKind, Result};
use crate::page::protection::page_checksum;
use crate::page::{PageId, FLAG_CHECKSUM, FLAG_TORN_PAGE, HEADER_SIZE, PAGE_SIZE};
use crate::source::{PageSource, SourceFile};

use super::record::{Context, LogRecord, Operation, TransactionId};
use super::{for_each_record, lsn_text, BackupLog};

/// Where the roll forward stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopPoint {
    /// The end of the log given.
    #[default]
    End,
    /// `STOPAT`: transactions committed at or before this `datetime` (days since 1900-01-01,
    /// ticks of 1/300 s, as SQL Server stores commit times).
    Time { days: u32, ticks: u32 },
    /// `STOPATLSN`: records before this LSN.
    Lsn(Lsn),
}

impl StopPoint {
    /// `YYYY-MM-DD HH:MM:SS[.fff]` (or with a `T`) as a [`StopPoint::Time`].
    pub fn parse_time(text: &str) -> Result<StopPoint> {
        let bad = || Error::new(ErrorKind::NotFound, format!("stop time {text:?}: expected YYYY-MM-DD HH:MM:SS[.fff]"));
        let t = text.trim();
        let (date, time) = t.split_once([' ', 'T']).unwrap_or((t, "00:00:00"));
        let d: Vec<&str> = date.split('-').collect();
        let (whole, fraction) = time.split_once('.').unwrap_or((time, ""));
        let h: Vec<&str> = whole.split(':').collect();
        if d.len() != 3 || !(2..=3).contains(&h.len()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<i64>().map_err(|_| bad());
        let (year, month, day) = (num(d[0])?, num(d[1])?, num(d[2])?);
        let (hour, minute) = (num(h[0])?, num(h[1])?);
        let second = if h.len() == 3 { num(h[2])? } else { 0 };
        if !(1900..=9999).contains(&year)
            || !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return Err(bad());
        }
        let millis = format!("{fraction:0<3}").get(..3).map_or(Ok(0), num)?;
        let days = days_from_civil(year, month, day) - days_from_civil(1900, 1, 1);
        // A datetime's ticks are 1/300 s; a time between two ticks stops at the earlier one.
        let ticks = ((hour * 3600 + minute * 60 + second) * 1000 + millis) * 300 / 1000;
        Ok(StopPoint::Time { days: days as u32, ticks: ticks as u32 })
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The transactions a stop point keeps, found in a first pass over the log: those whose
/// LOP_COMMIT_XACT comes at or before the stop point, and the LSN past which nothing is applied.
#[derive(Debug, Default)]
pub struct Commits {
    committed: HashSet<TransactionId>,
    /// Records at or past this LSN are not applied (`None`: the whole log).
    stop_lsn: Option<Lsn>,
}

impl Commits {
    /// Feeds one record of the first pass, in LSN order.
    pub fn see(&mut self, stop: StopPoint, record: &LogRecord<'_>) {
        if self.stop_lsn.is_some() {
            return;
        }
        if let StopPoint::Lsn(at) = stop {
            if record.lsn >= at {
                self.stop_lsn = Some(at);
                return;
            }
        }
        if record.operation() != Operation::COMMIT_XACT {
            return;
        }
        if let (StopPoint::Time { days, ticks }, Some(end)) = (stop, record.end_time_raw()) {
            if end > (days, ticks) {
                // The first commit after the stop time: it and everything after it stay out.
                self.stop_lsn = Some(record.lsn);
                return;
            }
        }
        self.committed.insert(record.transaction_id());
    }

    fn keeps(&self, record: &LogRecord<'_>) -> bool {
        self.stop_lsn.is_none_or(|stop| record.lsn < stop)
            && (record.transaction_id().0 == 0 || self.committed.contains(&record.transaction_id()))
    }

    /// Whether the stop point fell inside the log seen.
    pub fn stopped(&self) -> bool {
        self.stop_lsn.is_some()
    }
}

/// A page the log makes unreadable, and why.
#[derive(Debug, Clone)]
struct Refusal {
    lsn: Lsn,
    why: String,
}

/// The base pages with the log's changes applied; see the module documentation.
pub struct RedoPages {
    base: Arc<dyn PageSource>,
    changed: HashMap<PageId, Box<[u8]>>,
    refused: HashMap<PageId, Refusal>,
    /// Records seen past the base's pages: for de-duplicating overlapping log portions.
    reached: Lsn,
    left_out: HashMap<&'static str, usize>,
    applied: usize,
    notes: Vec<String>,
}

impl RedoPages {
    pub fn new(base: Arc<dyn PageSource>) -> Self {
        let notes = base.notes().to_vec();
        RedoPages {
            base,
            changed: HashMap::new(),
            refused: HashMap::new(),
            reached: Lsn::default(),
            left_out: HashMap::new(),
            applied: 0,
            notes,
        }
    }

    /// Pages the log changed (held in memory).
    pub fn changed_pages(&self) -> usize {
        self.changed.len()
    }

    /// Records applied to pages.
    pub fn applied(&self) -> usize {
        self.applied
    }

    /// Adds a line to the notes the source gives.
    pub fn note(&mut self, line: String) {
        self.notes.push(line);
    }

    /// Applies one record of the second pass (records come in LSN order; a record at or before
    /// one already seen, from an overlapping log portion, is skipped). Never fails: a record
    /// that cannot be applied refuses its page.
    pub fn apply(&mut self, commits: &Commits, record: &LogRecord<'_>) {
        if record.lsn <= self.reached {
            return;
        }
        self.reached = record.lsn;
        let op = record.operation();
        let Some(page_id) = record.page_id().filter(|_| op.is_page_operation()) else { return };
        if let Some(reason) = change_nothing_read(op, record.context()) {
            *self.left_out.entry(reason).or_default() += 1;
            return;
        }
        if self.refused.contains_key(&page_id) {
            return;
        }
        let mut page = match self.page_copy(page_id) {
            Ok(p) => p,
            // A page the base lacks: reading it fails in the base's own words.
            Err(_) => return,
        };
        let page_lsn = Lsn::parse(&page, 40).unwrap_or_default();
        let kept = commits.keeps(record);
        if page_lsn >= record.lsn {
            if !kept && record.transaction_id().0 != 0 {
                self.refuse(
                    page_id,
                    record,
                    format!(
                        "holds the change of transaction {} (LSN {}, {}) that is not committed at the stop point, and undo onto pages is not supported",
                        record.transaction_id(),
                        lsn_text(record.lsn),
                        op.name()
                    ),
                );
            }
            return;
        }
        if !kept {
            return;
        }
        let Some(previous) = record.previous_page_lsn() else {
            self.refuse(page_id, record, format!("{} at LSN {} is too short", op.name(), lsn_text(record.lsn)));
            return;
        };
        if previous != page_lsn {
            self.refuse(
                page_id,
                record,
                format!(
                    "is at LSN {}, but {} at LSN {} changes it from LSN {}: log records in between were not given",
                    lsn_text(page_lsn),
                    op.name(),
                    lsn_text(record.lsn),
                    lsn_text(previous)
                ),
            );
            return;
        }
        match redo(&mut page, record) {
            Ok(()) => {
                page[40..50].copy_from_slice(&lsn_bytes(record.lsn));
                seal(&mut page);
                self.changed.insert(page_id, page);
                self.applied += 1;
            }
            Err(why) => self.refuse(
                page_id,
                record,
                format!("cannot be rolled forward: {} at LSN {} {why}", op.name(), lsn_text(record.lsn)),
            ),
        }
    }

    fn refuse(&mut self, page: PageId, record: &LogRecord<'_>, why: String) {
        self.changed.remove(&page);
        self.refused.insert(page, Refusal { lsn: record.lsn, why });
    }

    /// The page as the log has left it so far, in a copy to change: sector bits of a torn-page
    /// protected page restored first.
    fn page_copy(&self, id: PageId) -> Result<Box<[u8]>> {
        if let Some(p) = self.changed.get(&id) {
            return Ok(p.clone());
        }
        let mut buf = vec![0u8; PAGE_SIZE].into_boxed_slice();
        self.base.read_raw(id, &mut buf)?;
        crate::page::protection::verify_and_restore(&mut buf);
        Ok(buf)
    }

    /// What was left out, for the notes: `N LOP_COUNT_DELTA records (cached counts)`.
    pub fn finish(mut self) -> Self {
        let mut left: Vec<(&str, usize)> = self.left_out.iter().map(|(k, v)| (*k, *v)).collect();
        left.sort();
        let mut line = format!("log: {} record(s) redone onto {} page(s)", self.applied, self.changed.len());
        if !left.is_empty() {
            let parts: Vec<String> = left.iter().map(|(why, n)| format!("{n} {why}")).collect();
            line.push_str(&format!("; not applied, as no read uses what they change: {}", parts.join(", ")));
        }
        if !self.refused.is_empty() {
            line.push_str(&format!("; {} page(s) cannot be read at the stop point", self.refused.len()));
        }
        self.notes.push(line);
        self
    }
}

/// The database a restore of `files` leaves: the plan's full (and differential) pages rolled
/// forward with the log portion of the last of them and the log backups after it that follow
/// without a gap, up to `stop`, committed transactions only. `salvage`: see
/// [`BackupFiles::into_pages_salvaging`].
pub fn restore(files: &BackupFiles, position: Option<u16>, salvage: bool, stop: StopPoint) -> Result<RedoPages> {
    let (pages, plan) = files.read_noted(position, salvage)?;
    let data = plan.differential.as_ref().unwrap_or(&plan.full);
    let mut sets = vec![data];
    let mut reached = data.set.last_lsn;
    let mut gap = None;
    for l in &plan.logs {
        if l.set.first_lsn > reached {
            gap = Some((reached, l));
            break;
        }
        reached = reached.max(l.set.last_lsn);
        sets.push(l);
    }
    let each_record = |each: &mut dyn FnMut(&LogRecord<'_>)| -> Result<()> {
        for set in &sets {
            let media = files
                .media_of(set)
                .ok_or_else(|| Error::not_found("the restore plan names a backup that was not given"))?;
            let log = BackupLog::new(media, set.set.position)?;
            let held = BackupLog::new(media, set.set.position)?;
            for block in log {
                let block = block.map_err(|e| e.in_file(&set.files[0]))?;
                for_each_record(&block, |r| {
                    if held.holds(r.lsn) {
                        each(&r);
                    }
                    Ok(())
                })
                .map_err(|e| e.in_file(&set.files[0]))?;
            }
        }
        Ok(())
    };
    let mut commits = Commits::default();
    each_record(&mut |r| commits.see(stop, r))?;
    let mut redo = RedoPages::new(Arc::new(pages));
    each_record(&mut |r| redo.apply(&commits, r))?;
    if let Some((at, next)) = gap {
        redo.note(format!(
            "log backups end at LSN {at}, the next given ({}) starts at LSN {}: rolled forward up to LSN {at} only",
            next.name(),
            next.set.first_lsn
        ));
    }
    if stop != StopPoint::End && !commits.stopped() {
        redo.note(format!("the stop point {stop:?} lies past the end of the log given: rolled forward to its end"));
    }
    Ok(redo.finish())
}

/// Why a record is left out without refusing its page: it changes nothing mdfkit reads.
fn change_nothing_read(op: Operation, context: Context) -> Option<&'static str> {
    match (op.0, context.0) {
        (0x12, _) => Some("LOP_COUNT_DELTA (cached row counts)"),
        (_, 0x18) => Some("LCX_DIFF_MAP (differential change map)"),
        (_, 0x19) => Some("LCX_ML_MAP (minimally logged change map)"),
        (_, 0x17) => Some("LCX_BOOT_PAGE_CKPT (checkpoint fields of the boot page)"),
        _ => None,
    }
}

fn lsn_bytes(lsn: Lsn) -> [u8; 10] {
    let mut b = [0u8; 10];
    b[..4].copy_from_slice(&lsn.vlf.to_le_bytes());
    b[4..8].copy_from_slice(&lsn.block.to_le_bytes());
    b[8..].copy_from_slice(&lsn.slot.to_le_bytes());
    b
}

/// A changed page's protection: a new checksum where it had one; torn-page bits were restored
/// when the page was copied, so the flag goes.
fn seal(page: &mut [u8]) {
    let flags = read_u16(page, 4).unwrap_or(0);
    if flags & FLAG_TORN_PAGE != 0 {
        page[4..6].copy_from_slice(&(flags & !FLAG_TORN_PAGE).to_le_bytes());
    }
    if flags & FLAG_CHECKSUM != 0 {
        let sum = page_checksum(page);
        page[60..64].copy_from_slice(&sum.to_le_bytes());
    }
}

const LCX_HEAP: u8 = 0x01;
const LCX_MARK_AS_GHOST: u8 = 0x13;

/// Applies one record to `page` (8192 bytes), or says why it cannot.
fn redo(page: &mut [u8], record: &LogRecord<'_>) -> std::result::Result<(), String> {
    let slot = record.slot().ok_or("has no slot")?;
    let mut images = record.row_images()?;
    let heap = record.context().0 == LCX_HEAP;
    match record.operation() {
        Operation::INSERT_ROWS => insert_row(page, slot, images.next().ok_or("carries no row")?, heap),
        Operation::DELETE_ROWS if record.context().0 == LCX_MARK_AS_GHOST => mark_ghost(page, slot),
        Operation::DELETE_ROWS => delete_row(page, slot, heap),
        Operation::MODIFY_ROW => {
            let before = images.next().ok_or("carries no before image")?;
            let after = images.next().ok_or("carries no after image")?;
            let offset = usize::from(record.offset_in_row().ok_or("has no offset in the row")?);
            modify_row(page, slot, offset, before, after)
        }
        _ => Err("is not supported by redo".to_string()),
    }
}

struct Layout {
    slot_count: usize,
    free_data: usize,
}

fn layout(page: &[u8]) -> std::result::Result<Layout, String> {
    let slot_count = usize::from(read_u16(page, 22).ok_or("page too short")?);
    let free_data = usize::from(read_u16(page, 30).ok_or("page too short")?);
    if page.len() != PAGE_SIZE || free_data < HEADER_SIZE || free_data > PAGE_SIZE - 2 * slot_count {
        return Err(format!("finds a damaged page (slot count {slot_count}, free data at {free_data})"));
    }
    Ok(Layout { slot_count, free_data })
}

fn slot_entry(slot: usize) -> usize {
    PAGE_SIZE - 2 * (slot + 1)
}

fn set_u16(page: &mut [u8], at: usize, v: usize) {
    page[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
}

fn add_free_count(page: &mut [u8], delta: isize) {
    let free = read_u16(page, 28).unwrap_or(0) as isize;
    set_u16(page, 28, (free + delta).clamp(0, PAGE_SIZE as isize) as usize);
}

fn insert_row(page: &mut [u8], slot: u16, row: &[u8], heap: bool) -> std::result::Result<(), String> {
    let l = layout(page)?;
    let slot = usize::from(slot);
    let reuse = heap && slot < l.slot_count && read_u16(page, slot_entry(slot)) == Some(0);
    if slot > l.slot_count || (heap && slot < l.slot_count && !reuse) {
        return Err(format!("puts a row in slot {slot} of a page with {} slots in use there", l.slot_count));
    }
    let new_count = if reuse { l.slot_count } else { l.slot_count + 1 };
    if l.free_data + row.len() > PAGE_SIZE - 2 * new_count {
        return Err(format!("puts {} bytes where the page has room for fewer", row.len()));
    }
    page[l.free_data..l.free_data + row.len()].copy_from_slice(row);
    if !reuse {
        // Slots at and after `slot` move up one: their entries move one place towards the start.
        let from = PAGE_SIZE - 2 * l.slot_count;
        page.copy_within(from..PAGE_SIZE - 2 * slot, from - 2);
        set_u16(page, 22, new_count);
    }
    set_u16(page, slot_entry(slot), l.free_data);
    set_u16(page, 30, l.free_data + row.len());
    add_free_count(page, -((row.len() + if reuse { 0 } else { 2 }) as isize));
    Ok(())
}

fn delete_row(page: &mut [u8], slot: u16, heap: bool) -> std::result::Result<(), String> {
    let l = layout(page)?;
    let slot = usize::from(slot);
    if slot >= l.slot_count {
        return Err(format!("deletes slot {slot} of a page with {} slots", l.slot_count));
    }
    if heap {
        set_u16(page, slot_entry(slot), 0);
        return Ok(());
    }
    // Later slots move down one: their entries move one place towards the end.
    let from = PAGE_SIZE - 2 * l.slot_count;
    page.copy_within(from..slot_entry(slot), from + 2);
    page[from..from + 2].fill(0);
    set_u16(page, 22, l.slot_count - 1);
    add_free_count(page, 2);
    Ok(())
}

/// The row a slot points at, as an offset checked to lie in the record area.
fn row_at(page: &[u8], slot: u16) -> std::result::Result<usize, String> {
    let l = layout(page)?;
    let slot = usize::from(slot);
    let offset = usize::from(read_u16(page, slot_entry(slot.min(l.slot_count))).unwrap_or(0));
    if slot >= l.slot_count || offset < HEADER_SIZE || offset >= l.free_data {
        return Err(format!("finds no row in slot {slot}"));
    }
    Ok(offset)
}

fn mark_ghost(page: &mut [u8], slot: u16) -> std::result::Result<(), String> {
    let at = row_at(page, slot)?;
    // Status bits 1-3: 0 primary data record -> 5 ghost data, 3 index record -> 6 ghost index.
    let ghost = match (page[at] >> 1) & 7 {
        0 => 5,
        3 => 6,
        other => return Err(format!("marks a record of type {other} as a ghost")),
    };
    page[at] = (page[at] & !0x0e) | (ghost << 1);
    Ok(())
}

fn modify_row(
    page: &mut [u8],
    slot: u16,
    offset: usize,
    before: &[u8],
    after: &[u8],
) -> std::result::Result<(), String> {
    let at = row_at(page, slot)? + offset;
    let free_data = layout(page)?.free_data;
    if before.len() != after.len() {
        return Err(format!("changes the row's length ({} bytes to {})", before.len(), after.len()));
    }
    if at + before.len() > free_data || page[at..at + before.len()] != *before {
        return Err(format!("finds other bytes than its before image at offset {offset} of slot {slot}"));
    }
    page[at..at + after.len()].copy_from_slice(after);
    Ok(())
}

impl PageSource for RedoPages {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        if let Some(r) = self.refused.get(&id) {
            return Err(Error::new(ErrorKind::Unsupported, format!("page {id} {} (LSN {})", r.why, lsn_text(r.lsn)))
                .at_page(id));
        }
        match self.changed.get(&id) {
            Some(p) => {
                buf[..PAGE_SIZE].copy_from_slice(p);
                Ok(())
            }
            None => self.base.read_raw(id, buf),
        }
    }

    fn files(&self) -> &[SourceFile] {
        self.base.files()
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }

    fn parts_not_given(&self) -> &[String] {
        self.base.parts_not_given()
    }

    fn backup_set(&self) -> Option<&BackupSet> {
        self.base.backup_set()
    }
}
