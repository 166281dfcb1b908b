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
//! **Which records** (restore's redo pass, then its undo pass, as Paul Randal describes crash
//! and restore recovery in "Understanding Logging and Recovery in SQL Server", TechNet
//! Magazine, February 2009): every page record before the stop point is redone, whatever its
//! transaction (the stop point is the end of the log given, a time compared with each
//! LOP_COMMIT_XACT's end time: the first commit after it stops the log, or an LSN, or a mark's
//! commit). A rolled-back transaction's records are redone with the compensation records that
//! took them out (its LOP_ABORT_XACT comes before the stop point), leaving nothing to undo. The
//! transactions still open at the stop point (neither committed nor aborted by then) are then
//! undone: their page records, kept in memory while redo runs (at most
//! 256 MiB of them; a page whose records did not fit is refused), are taken
//! back out page by page, newest first ([`RedoPages::roll_back`]); that includes changes a
//! backup copied into its pages while the transaction ran (a page at or past the record's
//! LSN). A change logged after the stop point that a base page already holds cannot be taken
//! out (a restore never stops before the end of its full or differential backup): the page is
//! refused, naming the transaction.
//!
//! **A log file as the tail** ([`restore`] with an `.ldf`, [`plan_tail`]): after the backups,
//! the records of a transaction log file from the LSN where the backups' log ends on, as a
//! tail-log backup of the file and its restore would apply them; the file continues the
//! backups when it holds the record just before that LSN (or starts at it) and no VLF sequence
//! number is missing from there (each VLF SQL Server starts writing takes the next number: DBCC
//! LOGINFO's FSeqNo, Paul Randal's "Inside the Storage Engine: More on the circular nature of
//! the log"). A gap is named by its two LSNs and nothing past it is applied.
//!
//! **Undo** of each operation, on the page as redo left it (SQL Server's own undo writes
//! compensation records that do the same; we change the page in memory and leave its LSN):
//! - LOP_INSERT_ROWS: the row goes, as LOP_DELETE_ROWS redoes it (a heap's slot empties, an
//!   index page's later slots move down). The row is found in its slot, its bytes equal to the
//!   record's image; on an index page where a later change moved slots (another transaction's
//!   insert before it), as the one row of the page with those bytes.
//! - LOP_DELETE_ROWS: the record's image (the whole row: the image LOP_INSERT_ROWS would
//!   write) goes back into its slot, as LOP_INSERT_ROWS redoes it; on an index page only where
//!   no later change of the page stays (the slot could have moved: refused otherwise). With
//!   LCX_MARK_AS_GHOST: the ghost, found as an inserted row is (its bytes past the status byte
//!   equal to the image's), takes the image's status byte back.
//! - LOP_MODIFY_ROW, LOP_MODIFY_COLUMNS, LOP_MODIFY_HEADER, LOP_ROOT_CHANGE,
//!   LOP_SET_FREE_SPACE, LOP_FILE_HDR_MODIFY: the before image (old value) written where the
//!   after image (new value) is, compared as redo compares them.
//! - LOP_SET_BITS: the bits set to the other value (SQL Server logs bits it changes).
//! - LOP_FORMAT_PAGE: nothing: the page's allocation (PFS byte, IAM bits) is taken back by the
//!   transaction's own allocation records, so no read reaches it.
//! - Anything else (LOP_EXPUNGE_ROWS, a split's LOP_DELETE_SPLIT and its LOP_INSERT_ROWS of
//!   several rows, operations redo does not know): the page is refused, naming the
//!   operation, its LSN and the page. A split is a system transaction committed at once, so only
//!   a stop point inside it leaves it open.
//!
//! Whether a later change of the page stays comes from the page LSN chain: the page's LSN
//! after redo is the newest record's, and each record carries the page's LSN before it
//! (+0x24), so a record is the newest change left when the page LSN (then the previous page
//! LSN of each record undone after it) equals its own LSN.
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
//! [`crate::page`] draws it; offsets below are in the record, past the page-operation header
//! that [`super::record`] draws). The row operations:
//! - LOP_INSERT_ROWS: of its n images the first n - 2 are whole rows (SQL Server follows them
//!   with two more, empty on the corpus: its 277 single-row inserts carry 3 images; a record
//!   with fewer than 4 carries one row), going into consecutive slots from `slot`. Heap pages
//!   (LCX_HEAP) keep their slot numbers (row ids): the row takes an empty slot (offset 0) or the
//!   next new one. Index pages (other contexts) keep slots in key order: later slots move up by
//!   one. Several rows are a page split's moved rows, put on the new page in one record:
//!   `chains/cube-query-history/..._LOG_20170518_041831.trn` 18:118:6 puts 7 rows (9 images, each
//!   row 4-byte aligned after the lengths) into slots 0-6 of 1:165, the bytes the full backup
//!   holds there; 18:125:a, 18:141:12, 18:173:e carry 50, 113 and 7 rows (52, 115, 9 images).
//! - LOP_DELETE_SPLIT (a page split, on the page that split): `slot` the first row moved, +0x30
//!   6 the new page, +0x36 u16 how many rows moved (the page's last ones: the record is refused
//!   where `slot` + that count is not the page's slot count), +0x38 u16 their bytes with their
//!   slot entries. The rows leave the page (its slot count drops to `slot`), the rows kept are
//!   packed from the header on (each taken as running to the next row on the page, so nothing of
//!   them is lost) and the free count grows by +0x38. 18:118:7 on 1:57: slot 1, 7 rows to 1:165,
//!   4105 bytes = the 4091 bytes of the 7 rows of 18:118:6 + 7 slot entries; the same transaction
//!   (a system transaction named `SplitPage`, committed at once) allocates 1:165 in PFS 1:1
//!   (LOP_MODIFY_ROW), formats it with its links (LOP_FORMAT_PAGE below), moves the neighbours'
//!   links to it (LOP_MODIFY_HEADER of 1:57's next page, +16, and of 1:56's previous page, +8)
//!   and inserts its index row into the parent 1:142 (LOP_INSERT_ROWS, LCX_INDEX_INTERIOR), as
//!   Paul Randal lists a split's log records ("How expensive are page splits in terms of
//!   transaction log?").
//! - LOP_DELETE_ROWS: on a heap the slot's offset becomes 0 (an empty slot, as SQL Server leaves
//!   it); on an index page the slot is removed and later slots move down; with LCX_MARK_AS_GHOST
//!   the row is kept and its record type becomes a ghost (status bits 1-3 = 5 data, 6 index).
//! - LOP_MODIFY_ROW: images 0 and 1 are the bytes before and after at +0x38 (offset in the row);
//!   applied where the before image matches the page and the two are the same length. The same
//!   record changes allocation pages: on StopAt_1.trn, 13:a9:5 turns PFS byte 25 (page 21) from
//!   0x20 to 0x60 (allocated), 13:a9:9 writes 1:21 into the first single-page slot (row offset
//!   46) of the new IAM page 1:22. On PFS pages (LCX_PFS) the before image is not compared: the
//!   PFS byte a backup copies can differ from it at the same page LSN (RestoreTimeStripe.bak's
//!   PFS 1:1 at LSN 14:37:f has 0x30 for page 78, 14:98:4's before image says 0x14; its after
//!   image, 0x60, is what the records after it build on).
//! - LOP_MODIFY_COLUMNS: several same-length changes of one row. Image 0: a u16 pair per
//!   range (its offset in the row, twice: the pairs are equal on the corpus, a record whose pair
//!   differs is refused); image 1: a u16 length per range; images 2 and 3: not used by redo (a
//!   key of the row); then a before and an after image per range. StopAt_1.trn 13:a1:2 on 1:29:
//!   five ranges at 70, 134, 144, 160, 252 of lengths 1, 9, 16, 6, 1 (14 images).
//! - LOB and row-overflow pages (LCX_TEXT_MIX, LCX_TEXT_TREE: text pages, type 3 and 4): the
//!   same row operations, with a heap's slot rule, as their fragments are addressed by the
//!   page and slot of the links in LOB roots, internal nodes and row-overflow pointers (the
//!   links [`crate::lob`] follows): an insert takes the slot it names, a delete empties its
//!   slot, a LOP_MODIFY_ROW changes a fragment's bytes in place; LOP_FORMAT_PAGE builds an
//!   empty text page. No corpus log holds a record in these contexts: the rule is the links',
//!   proven on forged logs (a fragment changed; a value moved to a new fragment by an insert,
//!   the root's link changed and the old fragment deleted), and undone as a heap's rows are.
//! - LOP_EXPUNGE_ROWS (ghost cleanup): the ghost record in `slot` goes: on an index page later
//!   slots move down, on a heap the slot empties; the page's ghost count (+58) drops by one. A
//!   slot that does not hold a ghost is refused. StopAt_1.trn 13:ad:2: slot 3 of 1:95.
//!
//! The page and allocation operations (each layout read from StopAt_1.trn and
//! RestoreTimeStripe_1.trn, whose records for the first insert into an empty heap are the same;
//! the page layouts from [`crate::page`] and [`crate::page::allocation`]):
//! - LOP_FORMAT_PAGE: a page made new, its old bytes unused (so a page the backup did not copy
//!   is formatted from zeros; its previous LSN is 0:0:1). +0x30 u8 page type, +0x31 u8 type flag
//!   bits, +0x32 u8 level, +0x3a u16 pminlen, +0x44 6 an IAM page's start page; the allocation
//!   unit from +0x20/+0x2e; +0x34 6 the previous page and +0x3c 6 the next page of the page's
//!   level (header +8 and +16: a split's new page, 18:118:5 formats 1:165 with 1:57 and 1:56, the
//!   links the full backup's 1:165 carries). Every other byte of +0x30..+0x50 is zero on the
//!   corpus; a record where one is not is refused, its meaning unknown. The page
//!   is empty (96-byte header, no slots), except an IAM page: its header record (94 bytes:
//!   status 0, fixed end 94, the start page at 40) and its extent bitmap (7992 bytes: fixed end
//!   7992, zeros), 6 bytes free, as RestoreTimeClean2.bak copied the fresh IAM page 1:154.
//!   Types redone: data (1), index (2), text (3, 4) and IAM (10); other types are refused. 13:a9:7
//!   formats 1:22 as IAM (start page 1:0, pminlen 90), 13:a9:10 formats 1:21 as a data page
//!   (type flag bits 4, pminlen 16: the `dbo.steps` row that 13:a9:13 then inserts).
//! - LOP_ROOT_CHANGE (LCX_CLUSTERED, on a `sys.sysallocunits` page): +0x48 6 the new page id,
//!   +0x50 6 the old one, +0x58 u16 where the 6-byte column is in the row (27 pgfirst, 33
//!   pgroot, 39 pgfirstiam), `slot` the allocation unit's row; applied where the row holds the
//!   old page id. 13:a9:e sets pgfirstiam of slot 54 of 1:130 to 1:22, 13:a9:f and 13:a9:11
//!   pgfirst to 1:21 (the second from 1:21 to 1:21): as RestoreTimeClean2.bak shows a one-page
//!   heap's row (pgfirst the data page, pgroot 0:0, pgfirstiam the IAM page).
//! - LOP_SET_BITS: +0x30 u16 the first bit (from bit 0 of the record, its 4-byte header
//!   included), +0x32 u16 how many, +0x34 u16 the value (0 or 1). 13:ad:3 clears bit 795 of PFS
//!   1:1 = byte 99 (page 95) bit 3, the has-ghosts bit, after 13:ad:2 expunged page 95's ghost.
//! - LOP_SET_FREE_SPACE: one PFS byte: +0x30 u16 its offset in the row (4 + the page's place
//!   in the interval), +0x32 u8 the new byte, +0x33 u8 the old one (not compared, as for
//!   LOP_MODIFY_ROW on PFS pages). 13:a9:14: byte 25 (page 21) 0x60 -> 0x61 after the first row went in.
//! - LOP_MODIFY_HEADER: +0x38 u16 an offset in the page header, images 0 and 1 the bytes
//!   before and after. 13:ad:4: PFS 1:1's type flag bits (+2) 1 -> 0.
//! - LOP_FILE_HDR_MODIFY: the file header record (slot 0 of page 0): +0x38 u16 offset in the
//!   row, images 0 and 1 before and after (the whole 1070-byte record on the corpus: 13:a4:1
//!   writes the differential base LSN and GUID of StopAt.bak), image 2 (10 zero bytes) unused.
//!   Its previous page LSN is 0 and the page stays at LSN 0:0:1 (StopAt.bak's page 1:0 is at
//!   0:0:1): the LSN rule does not apply; the after image is written over the row (left alone
//!   where the row holds it already) and the page LSN is kept. The before image is not checked:
//!   the record a backup copies can differ from it (RestoreTimeStripe.bak's byte 400 is 0, 14:93:1's
//!   before image has 0x69 there and its after image 0).
//!
//! Rows are written at the page's free-data offset (header +30), which then moves past them;
//! the free count (+28) follows. Where a row does not fit there but would once the space of
//! rows deleted before the others is taken back, the page is first packed (its rows moved
//! together from the header on, slots kept), as SQL Server reorganizes a page: undoing a heap
//! delete whose slot a later insert of the same transaction took needs it. A changed page that was checksum protected gets its checksum
//! recomputed; a torn-page protected one is kept with its sector bits restored and the flag off.
//!
//! **Records that change nothing a read uses**, left out by name (and counted in the notes):
//! LOP_COUNT_DELTA (cached row and page counts in the catalog's rowsets), the differential and
//! minimally-logged change maps (LCX_DIFF_MAP, LCX_ML_MAP), the boot page's checkpoint fields
//! (LCX_BOOT_PAGE_CKPT). Records that are not page operations (LOP_* from 0x80) change no page
//! and are only read for their transaction: LOP_HOBT_DELTA (the in-memory row and page counts of
//! a HoBt, which a checkpoint writes to `sys.sysallocunits`' pcused/pcdata/pcreserved, columns no
//! read uses) and LOP_CREATE_ALLOCCHAIN (the in-memory allocation chain of a new allocation
//! unit, whose pages are logged on their own: the IAM page's LOP_FORMAT_PAGE and the
//! LOP_ROOT_CHANGE of its `sys.sysallocunits` row). **Every other page operation**, or one
//! whose fields are not as above, that reaches a page not already holding it makes that page
//! refused: a read of it fails, naming the page, the record's LSN and its operation. Pages no
//! read needs never stop anything.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::backup::chain::{BackupFiles, LogTail, RestorePlan};
use crate::backup::{BackupOrigin, FromBackup, Lsn};
use crate::bytes::read_u16;
use crate::error::{Error, ErrorKind, Result};
use crate::page::protection::page_checksum;
use crate::page::{PageId, PageType, FLAG_CHECKSUM, FLAG_TORN_PAGE, HEADER_SIZE, PAGE_SIZE};
use crate::source::{PageSource, SourceFile};

use super::ldf::LogFile;
use super::record::{Context, LogRecord, Operation, TransactionId};
use super::{for_each_record, lsn_text, BackupLog};

/// Where the roll forward stops (in JSON, as a scan split carries it: `"End"`, `{"Time": {"days":
/// ..., "ticks": ...}}`, `{"Lsn": ...}`, `{"Mark": ...}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum StopPoint {
    /// The end of the log given.
    #[default]
    End,
    /// `STOPAT`: transactions committed at or before this `datetime` (days since 1900-01-01,
    /// ticks of 1/300 s, as SQL Server stores commit times).
    Time {
        /// Days since 1900-01-01.
        days: u32,
        /// 1/300 s since midnight.
        ticks: u32,
    },
    /// An LSN, as `STOPATMARK = 'lsn:N'` (`included`: the record at that LSN is rolled
    /// forward, and the transaction it commits with it) or `STOPBEFOREMARK = 'lsn:N'` (only the
    /// records before it); SQL Server's "Recover to a Log Sequence Number".
    Lsn {
        /// The LSN of the stop record.
        at: Lsn,
        /// Whether the record at `at` is rolled forward.
        included: bool,
    },
    /// `STOPATMARK` (`before`: `STOPBEFOREMARK`): up to the commit of the marked transaction
    /// `name`, included or not; with `after` (days, ticks), the first such mark that began at or
    /// after that time.
    Mark {
        /// The mark's name (`BEGIN TRANSACTION name WITH MARK`), compared exactly.
        name: String,
        /// Stop before the marked transaction rather than after it.
        before: bool,
        /// Only a mark that began at or after this `datetime` (days since 1900, ticks).
        after: Option<(u32, u32)>,
    },
    /// No log at all: the pages as the backups copied them (fuzzy, like a restore before its
    /// redo pass); what `mdfkit log` reads the catalog from to name tables.
    NoLog,
}

impl StopPoint {
    /// The stop point of RESTORE's options as text, each `None` when not given: `stopat` (a
    /// time), `stopatmark` or `stopbeforemark` (a mark's name, or `lsn:N` for an LSN as SQL
    /// Server takes it) with `after` (a time), or `stopatlsn` (an LSN in any spelling
    /// [`Lsn::parse_text`] reads, the record at it included). `None` when none is given; an
    /// error names the option that is wrong or does not go with the others.
    pub fn from_options(
        stopat: Option<&str>,
        stopatmark: Option<&str>,
        stopbeforemark: Option<&str>,
        after: Option<&str>,
        stopatlsn: Option<&str>,
    ) -> Result<Option<StopPoint>> {
        let bad = |message: String| Error::new(ErrorKind::NotFound, message);
        let lsn = |option: &str, text: &str| {
            Lsn::parse_text(text).ok_or_else(|| {
                bad(format!(
                    "{option} {text:?}: expected an LSN as 25000000016300001 (RESTORE), \
                     0x00000019:000000a3:0001 (fn_dump_dblog) or 25:163:1"
                ))
            })
        };
        let given = [stopat, stopatmark, stopbeforemark, stopatlsn].iter().filter(|o| o.is_some()).count();
        if given > 1 {
            return Err(bad("give one stop point: stopat, stopatmark, stopbeforemark or stopatlsn".to_string()));
        }
        let mark = stopatmark.map(|n| (n, false)).or(stopbeforemark.map(|n| (n, true)));
        if after.is_some() && mark.is_none_or(|(name, _)| name.starts_with("lsn:")) {
            return Err(bad("after goes with stopatmark or stopbeforemark naming a mark".to_string()));
        }
        if let Some(text) = stopat {
            return StopPoint::parse_time(text).map(Some).map_err(|e| bad(format!("stopat: {e}")));
        }
        if let Some(text) = stopatlsn {
            return Ok(Some(StopPoint::Lsn { at: lsn("stopatlsn", text)?, included: true }));
        }
        let Some((name, before)) = mark else { return Ok(None) };
        if name.starts_with("lsn:") {
            let option = if before { "stopbeforemark" } else { "stopatmark" };
            return Ok(Some(StopPoint::Lsn { at: lsn(option, name)?, included: !before }));
        }
        let after = match after.map(StopPoint::parse_time).transpose().map_err(|e| bad(format!("after: {e}")))? {
            Some(StopPoint::Time { days, ticks }) => Some((days, ticks)),
            _ => None,
        };
        Ok(Some(StopPoint::Mark { name: name.to_string(), before, after }))
    }

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
    /// Transactions rolled back (LOP_ABORT_XACT) before the stop point: their changes and the
    /// compensation records that took them back out are both redone, as restore's redo pass
    /// does, so nothing of them is left to undo.
    aborted: HashSet<TransactionId>,
    /// Records at or past this LSN are not applied (`None`: the whole log).
    stop_lsn: Option<Lsn>,
    /// The marked transaction a [`StopPoint::Mark`] names, once its LOP_BEGIN_XACT is seen.
    marked: Option<TransactionId>,
}

/// A LOP_BEGIN_XACT of a transaction begun `WITH MARK`: 0x04 in the u16 at +0x1e. Seen on
/// StopAt_21.trn and StopAt_23.trn: the begins of `dbatoolstest` carry it, the other named
/// transactions (`INSERT`, ...) do not; and only the commits of those two are longer, carrying
/// the mark's name. A reading of the bytes, not a documented field.
fn is_marked(record: &LogRecord<'_>) -> bool {
    record.bytes().get(0x1e).is_some_and(|b| b & 0x04 != 0)
}

/// The begin time of a LOP_BEGIN_XACT as (days since 1900-01-01, ticks).
fn begin_time_raw(record: &LogRecord<'_>) -> Option<(u32, u32)> {
    match record.time()? {
        crate::value::Value::DateTime { days, ticks } => Some((u32::try_from(days).ok()?, ticks)),
        _ => None,
    }
}

impl Commits {
    /// Feeds one record of the first pass, in LSN order.
    pub fn see(&mut self, stop: &StopPoint, record: &LogRecord<'_>) {
        if self.stop_lsn.is_some() {
            return;
        }
        if let StopPoint::Lsn { at, included } = stop {
            if record.lsn > *at || (record.lsn == *at && !included) {
                self.stop_lsn = Some(record.lsn);
                return;
            }
        }
        if let StopPoint::Mark { name, after, .. } = stop {
            if record.operation() == Operation::BEGIN_XACT
                && is_marked(record)
                && record.transaction_name().as_deref() == Some(name.as_str())
                && after.is_none_or(|after| begin_time_raw(record).is_some_and(|t| t >= after))
            {
                self.marked = Some(record.transaction_id());
            }
        }
        if record.operation() == Operation::ABORT_XACT {
            self.aborted.insert(record.transaction_id());
        }
        if record.operation() != Operation::COMMIT_XACT {
            return;
        }
        if let (StopPoint::Time { days, ticks }, Some(end)) = (stop, record.end_time_raw()) {
            if end > (*days, *ticks) {
                // The first commit after the stop time: it and everything after it stay out.
                self.stop_lsn = Some(record.lsn);
                return;
            }
        }
        if let StopPoint::Mark { before, .. } = stop {
            if self.marked == Some(record.transaction_id()) {
                // The mark is the marked transaction's commit: in with STOPATMARK, out with
                // STOPBEFOREMARK; nothing after it.
                self.stop_lsn = Some(record.lsn);
                if *before {
                    return;
                }
            }
        }
        self.committed.insert(record.transaction_id());
    }

    fn keeps(&self, record: &LogRecord<'_>) -> bool {
        self.keeps_transaction(record.transaction_id(), record.lsn)
    }

    /// Whether a record of `transaction` at `lsn` is in the database at the stop point: before
    /// it, and of a transaction committed by then (or of none).
    pub fn keeps_transaction(&self, transaction: TransactionId, lsn: Lsn) -> bool {
        self.redoes(lsn) && (transaction.0 == 0 || self.committed.contains(&transaction))
    }

    /// Whether a record at `lsn` comes before the stop point: the redo pass applies it,
    /// whatever its transaction.
    pub fn redoes(&self, lsn: Lsn) -> bool {
        self.stop_lsn.is_none_or(|stop| lsn < stop)
    }

    /// Whether `transaction` is still open at the stop point (neither committed nor rolled
    /// back by then): recovery undoes its changes.
    pub fn rolls_back(&self, transaction: TransactionId) -> bool {
        transaction.0 != 0 && !self.committed.contains(&transaction) && !self.aborted.contains(&transaction)
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
    /// Page records of the transactions open at the stop point, in LSN order, for undo.
    held: Vec<HeldRecord>,
    /// Bytes of `held`, at most `hold_limit` ([`UNDO_HOLD_LIMIT`]).
    held_bytes: usize,
    hold_limit: usize,
    /// Pages with a record to undo that `held` had no room for: the first such record's LSN.
    not_held: HashMap<PageId, Lsn>,
    undone: usize,
    notes: Vec<String>,
    /// The base's backup set and the plan it was read by, when it comes from a restore chain.
    origin: Option<BackupOrigin>,
}

/// A record of a transaction open at the stop point, kept for undo.
struct HeldRecord {
    lsn: Lsn,
    page: PageId,
    bytes: Box<[u8]>,
}

/// The most log bytes kept for undo (the records of the transactions open at the stop point):
/// the pages that further records of theirs change are refused instead.
const UNDO_HOLD_LIMIT: usize = 256 << 20;

/// How the notes a reader must be told begin ([`RedoPages::warn`]).
pub const WARNING: &str = "warning: ";

impl RedoPages {
    /// No change yet: every page is the base's.
    pub fn new(base: Arc<dyn PageSource>) -> Self {
        let notes = base.notes().to_vec();
        RedoPages {
            base,
            changed: HashMap::new(),
            refused: HashMap::new(),
            reached: Lsn::default(),
            left_out: HashMap::new(),
            applied: 0,
            held: Vec::new(),
            held_bytes: 0,
            hold_limit: UNDO_HOLD_LIMIT,
            not_held: HashMap::new(),
            undone: 0,
            notes,
            origin: None,
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

    /// Records undone by [`RedoPages::roll_back`].
    pub fn undone(&self) -> usize {
        self.undone
    }

    /// Adds a line to the notes the source gives.
    pub fn note(&mut self, line: String) {
        self.notes.push(line);
    }

    /// Adds a note a reader must be told, starting `warning: `: the database read may differ
    /// from what a restore would give (front ends show these lines).
    pub fn warn(&mut self, line: String) {
        self.notes.push(format!("{WARNING}{line}"));
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
        let redone = commits.redoes(record.lsn);
        let open = redone && commits.rolls_back(record.transaction_id());
        let formats = op == Operation::FORMAT_PAGE;
        // A page made new forgets why it was refused.
        if self.refused.contains_key(&page_id) && !(formats && redone) {
            return;
        }
        // Taken out of the changed pages (no copy), put back where the record leaves it alone.
        let held = self.changed.remove(&page_id);
        let was_changed = held.is_some();
        let mut page = match held.map_or_else(|| self.base_copy(page_id), Ok) {
            Ok(p) => p,
            // A page the backup did not copy (its extent was free then): formatting needs
            // nothing of it.
            Err(_) if formats => vec![0u8; PAGE_SIZE].into_boxed_slice(),
            // A page the base lacks: reading it fails in the base's own words.
            Err(_) => return,
        };
        if op == Operation::FILE_HDR_MODIFY {
            self.apply_file_header(redone, was_changed, page_id, page, record);
            if open {
                self.hold(page_id, record);
            }
            return;
        }
        let page_lsn = Lsn::parse(&page, 40).unwrap_or_default();
        if page_lsn >= record.lsn {
            if !redone && record.transaction_id().0 != 0 {
                self.refuse(
                    page_id,
                    record,
                    format!(
                        "holds the change of transaction {} (LSN {}, {}) logged after the stop point, which a restore cannot take back out",
                        record.transaction_id(),
                        lsn_text(record.lsn),
                        op.name()
                    ),
                );
                return;
            }
            if was_changed {
                self.changed.insert(page_id, page);
            }
            // The backup copied the page with the change in it: undone below if still open.
            if open {
                self.hold(page_id, record);
            }
            return;
        }
        if !redone {
            if was_changed {
                self.changed.insert(page_id, page);
            }
            return;
        }
        let Some(previous) = record.previous_page_lsn() else {
            self.refuse(page_id, record, format!("{} at LSN {} is too short", op.name(), lsn_text(record.lsn)));
            return;
        };
        if previous != page_lsn && !formats {
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
        match change(&mut page, page_id, record, Direction::Redo) {
            Ok(()) => {
                page[40..50].copy_from_slice(&lsn_bytes(record.lsn));
                self.keep_changed(page_id, page);
                self.applied += 1;
                if open {
                    self.hold(page_id, record);
                }
            }
            Err(why) => self.refuse_unredone(page_id, record, &why),
        }
    }

    /// Keeps a record of a transaction open at the stop point for [`RedoPages::roll_back`].
    fn hold(&mut self, page: PageId, record: &LogRecord<'_>) {
        if self.held_bytes + record.length() > self.hold_limit {
            self.not_held.entry(page).or_insert(record.lsn);
            return;
        }
        self.held_bytes += record.length();
        self.held.push(HeldRecord { lsn: record.lsn, page, bytes: record.bytes().into() });
    }

    /// Recovery's undo pass: the changes of the transactions open at the stop point taken back
    /// out of the pages, newest first, page by page (see the module documentation). A page
    /// one of them cannot be taken out of is refused, naming the operation and its LSN.
    pub fn roll_back(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        for (page, lsn) in std::mem::take(&mut self.not_held) {
            self.refused.insert(
                page,
                Refusal {
                    lsn,
                    why: format!(
                        "holds changes of transactions open at the stop point past the {} bytes of log kept to undo them",
                        self.hold_limit
                    ),
                },
            );
            self.changed.remove(&page);
        }
        // Each page's records, newest first; whether nothing else changed the page after each.
        let mut by_page: HashMap<PageId, Vec<&HeldRecord>> = HashMap::new();
        for h in held.iter().rev() {
            by_page.entry(h.page).or_default().push(h);
        }
        for (page_id, records) in by_page {
            if self.refused.contains_key(&page_id) {
                continue;
            }
            let mut page = match self.changed.remove(&page_id).map_or_else(|| self.base_copy(page_id), Ok) {
                Ok(p) => p,
                Err(_) => continue,
            };
            let mut newer_lsn = Lsn::parse(&page, 40).unwrap_or_default();
            let mut untouched = true;
            let mut failed = None;
            for h in records {
                let Ok(record) = LogRecord::parse(h.lsn, &h.bytes) else { continue };
                // Every change of the page after this record is one just undone: its slots are
                // as the record left them.
                untouched = untouched && newer_lsn == h.lsn;
                newer_lsn = record.previous_page_lsn().unwrap_or_default();
                let undone = if record.operation() == Operation::FILE_HDR_MODIFY {
                    file_header_images(&mut page, &record, Direction::Undo).map(|_| ())
                } else {
                    undo(&mut page, page_id, &record, untouched)
                };
                if let Err(why) = undone {
                    failed = Some((record.lsn, record.operation().name(), why));
                    break;
                }
                self.undone += 1;
            }
            match failed {
                Some((lsn, op, why)) => {
                    let why = format!(
                        "cannot be rolled back to the stop point: {op} at LSN {} of a transaction open there {why}",
                        lsn_text(lsn)
                    );
                    self.refused.insert(page_id, Refusal { lsn, why });
                }
                None => {
                    seal(&mut page);
                    self.changed.insert(page_id, page);
                }
            }
        }
    }

    /// LOP_FILE_HDR_MODIFY: by its images, not by the page LSN, which the file header page
    /// does not carry forward (see the module documentation).
    fn apply_file_header(
        &mut self,
        kept: bool,
        was_changed: bool,
        page_id: PageId,
        mut page: Box<[u8]>,
        record: &LogRecord<'_>,
    ) {
        match file_header_images(&mut page, record, Direction::Redo) {
            Ok(true) if kept => {
                self.keep_changed(page_id, page);
                self.applied += 1;
            }
            Err(why) if kept => self.refuse_unredone(page_id, record, &why),
            // Left out, or already holding the change: the page as it was.
            _ if was_changed => {
                self.changed.insert(page_id, page);
            }
            _ => {}
        }
    }

    fn keep_changed(&mut self, page_id: PageId, mut page: Box<[u8]>) {
        seal(&mut page);
        self.refused.remove(&page_id);
        self.changed.insert(page_id, page);
    }

    fn refuse_unredone(&mut self, page_id: PageId, record: &LogRecord<'_>, why: &str) {
        let op = record.operation().name();
        self.refuse(page_id, record, format!("cannot be rolled forward: {op} at LSN {} {why}", lsn_text(record.lsn)));
    }

    fn refuse(&mut self, page: PageId, record: &LogRecord<'_>, why: String) {
        self.changed.remove(&page);
        self.refused.insert(page, Refusal { lsn: record.lsn, why });
    }

    /// A base page in a copy to change: sector bits of a torn-page protected page restored
    /// first.
    fn base_copy(&self, id: PageId) -> Result<Box<[u8]>> {
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
        if self.undone > 0 {
            line.push_str(&format!(", {} record(s) of transactions open at the stop point undone", self.undone));
        }
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
/// without a gap, then the records of `tail` (a transaction log file, `.ldf`) from where they
/// end, as a tail-log backup and its restore would ([`plan_tail`]), up to `stop`, committed
/// transactions only.
///
/// A log backup (or the tail) that cannot be read past some block (damaged: a torn or stale
/// sector, a slot outside its block) fails the restore, naming the file, the block's byte offset
/// and LSN, and the last LSN read, as RESTORE LOG fails on a damaged backup (unless the stop
/// point comes before the damage: nothing past it is needed). With `salvage` the roll forward
/// stops there instead, like a restore to the last good LSN, and a warning says what was kept;
/// `salvage` also reads a striped backup with stripes missing
/// ([`BackupFiles::into_pages_salvaging`]). The log portion of the full or differential backup
/// itself (the log written while it ran) is read up to where it can be and a warning says so,
/// salvage or not: a few corpus backups have blocks our log reader does not understand, and
/// they read as before this portion was applied.
pub fn restore(
    files: &BackupFiles,
    tail: Option<&LogFile>,
    position: Option<u16>,
    salvage: bool,
    stop: StopPoint,
) -> Result<RedoPages> {
    let (pages, mut plan) = files.read_noted(position, salvage)?;
    let data = plan.differential.as_ref().unwrap_or(&plan.full);
    let mut sets = vec![data];
    let mut gap = None;
    for l in &plan.logs {
        if plan.after_gap(l).is_some() {
            gap = plan.log_gaps.first().map(|(at, _)| (*at, l));
            break;
        }
        sets.push(l);
    }
    let follows = plan.log_end();
    let new_tail = |file: &LogFile| LogTail {
        file: file.path().to_path_buf(),
        follows,
        first_lsn: None,
        last_lsn: None,
        records_after: 0,
        gap: None,
    };
    // Both passes read the same records: up to the first that cannot be read, if any (with the
    // index of the backup it is in, the tail's being `sets.len()`); `seen` is what each pass
    // found of the tail.
    let each_record =
        |each: &mut dyn FnMut(&LogRecord<'_>), seen: &mut Option<LogTail>| -> std::result::Result<(), (usize, Error)> {
            for (index, set) in sets.iter().enumerate() {
                let read = |each: &mut dyn FnMut(&LogRecord<'_>)| -> Result<()> {
                    let media = files
                        .media_of(set)
                        .ok_or_else(|| Error::not_found("the restore plan names a backup that was not given"))?;
                    let held = BackupLog::new(media, set.set.position)?;
                    for block in BackupLog::new(media, set.set.position)? {
                        let block = block.map_err(|e| e.in_file(&set.files[0]))?;
                        for_each_record(&block, |r| {
                            if held.holds(r.lsn) {
                                each(&r);
                            }
                            Ok(())
                        })
                        .map_err(|e| e.in_file(&set.files[0]))?;
                    }
                    Ok(())
                };
                read(each).map_err(|e| (index, e))?;
            }
            let Some(file) = tail else { return Ok(()) };
            let found = seen.insert(new_tail(file));
            for_each_tail_record(file, found, each).map_err(|e| (sets.len(), e))
        };
    let mut commits = Commits::default();
    let mut last = Lsn::default();
    let mut last_commit = None;
    let mut seen = None;
    let unreadable = if stop == StopPoint::NoLog {
        None
    } else {
        each_record(
            &mut |r| {
                last = r.lsn;
                commits.see(&stop, r);
                if r.operation() == Operation::COMMIT_XACT && commits.keeps(r) {
                    last_commit = Some((r.lsn, r.time().map(|t| t.to_string()).unwrap_or_default()));
                }
            },
            &mut seen,
        )
        .err()
    };
    plan.tail = seen;
    let mut redo = RedoPages::new(Arc::new(pages));
    redo.origin = redo.base.backup_set().map(|set| BackupOrigin {
        set: set.clone(),
        plan: Some(plan.clone()),
        placement: redo.base.page_placement().cloned(),
    });
    if stop == StopPoint::NoLog {
        redo.note("the log is not rolled forward: the pages as the backups copied them".to_string());
        return Ok(redo);
    }
    if let Some((_, e)) = unreadable.as_ref().filter(|_| commits.stopped()) {
        // The stop point comes before the damage: nothing after it is needed.
        redo.note(format!("the log given cannot be read past the stop point ({e}): not needed"));
    } else if let Some((index, e)) = &unreadable {
        // Like a restore whose log ends early: what was read is applied (the second pass stops
        // at the same record), committed transactions only, and the reader is told what.
        let from =
            if last.is_zero() { "from its first block".to_string() } else { format!("past LSN {}", lsn_text(last)) };
        let kept = match &last_commit {
            Some((lsn, time)) => format!("the last transaction kept committed at {time}, LSN {}", lsn_text(*lsn)),
            None => "no transaction of the log kept".to_string(),
        };
        if *index > 0 && !salvage {
            let message = format!(
                "{}; the log given reads up to LSN {} ({kept}): --salvage rolls forward up to there",
                e.message(),
                lsn_text(last)
            );
            let refused = Error::new(e.kind(), message);
            return Err(match e.file() {
                Some(file) => refused.in_file(file),
                None => refused,
            });
        }
        redo.warn(format!(
            "the log cannot be read {from} ({e}): rolled forward up to there only ({kept}); changes logged after it are missing"
        ));
    }
    let _ = each_record(&mut |r| redo.apply(&commits, r), &mut None);
    redo.roll_back();
    let tail_continues = plan.tail.as_ref().is_some_and(|t| t.gap.is_none() && t.records_after > 0);
    if let Some((at, next)) = gap.filter(|_| !tail_continues) {
        redo.note(format!(
            "log backups end at LSN {at}, the next given ({}) starts at LSN {}: rolled forward up to LSN {at} only",
            next.name(),
            next.set.first_lsn
        ));
    }
    if let Some(tail) = &plan.tail {
        redo.note(tail.describe());
    }
    if stop != StopPoint::End && !commits.stopped() {
        if let StopPoint::Mark { name, .. } = &stop {
            return Err(Error::not_found(format!(
                "no mark {name:?} (a transaction begun WITH MARK) is in the log given{}",
                if unreadable.is_some() { " as far as it can be read" } else { "" }
            )));
        }
        redo.note(format!("the stop point {stop:?} lies past the end of the log given: rolled forward to its end"));
    }
    Ok(redo.finish())
}

/// Which records of a transaction log file (`.ldf`) given after a restore chain's backups a
/// restore of its tail would redo: those from where the backups' log ends
/// ([`RestorePlan::log_end`]) on, provided the file's log reaches back to there and no virtual
/// log file is missing on the way; otherwise the gap is named and nothing past it is applied.
///
/// The continuity rule: the file's records in LSN order (VLFs in sequence order, see
/// [`super::ldf`]) continue the backups when the first record at or past the backups' end LSN
/// comes right after a record before it (the file holds the log the last backup copied, as a
/// log file does until its VLFs are reused), or is that LSN itself; and, from there, when each
/// record's VLF sequence number is its predecessor's or the next one (SQL Server numbers each
/// VLF it starts writing with the next sequence number: a sequence number missing in between is
/// a VLF the file no longer holds, reused or in another log file). A log file holds no backup
/// set, so whether it is the same database's is known only by these LSNs: a record whose page
/// is at another LSN than it expects refuses its page, as in any chain.
pub fn plan_tail(plan: &RestorePlan, file: &LogFile) -> Result<LogTail> {
    let mut tail = LogTail {
        file: file.path().to_path_buf(),
        follows: plan.log_end(),
        first_lsn: None,
        last_lsn: None,
        records_after: 0,
        gap: None,
    };
    for_each_tail_record(file, &mut tail, &mut |_| {})?;
    Ok(tail)
}

/// Reads the records of `file` in LSN order, noting each in `tail` ([`follow_tail`]) and
/// calling `each` for those the tail applies.
fn for_each_tail_record(file: &LogFile, tail: &mut LogTail, each: &mut dyn FnMut(&LogRecord<'_>)) -> Result<()> {
    for block in file.blocks() {
        for_each_record(&block?, |r| {
            if follow_tail(tail, r.lsn) {
                each(&r);
            }
            Ok(())
        })
        .map_err(|e| e.in_file(file.path()))?;
    }
    Ok(())
}

/// Notes the next record of a log file in `tail` (see [`plan_tail`] for the rule); whether it
/// is one the tail applies.
fn follow_tail(tail: &mut LogTail, lsn: Lsn) -> bool {
    let previous = tail.last_lsn.replace(lsn);
    tail.first_lsn.get_or_insert(lsn);
    if lsn < tail.follows || tail.gap.is_some() {
        return false;
    }
    let continues = match previous {
        None => lsn == tail.follows,
        Some(p) => lsn.vlf <= p.vlf + 1,
    };
    if !continues {
        tail.gap = Some((previous.map_or(tail.follows, |p| p.max(tail.follows)), lsn));
        return false;
    }
    tail.records_after += 1;
    true
}

/// Why a record is left out without refusing its page: it changes nothing mdfkit reads.
fn change_nothing_read(op: Operation, context: Context) -> Option<&'static str> {
    match (op, context) {
        (Operation::COUNT_DELTA, _) => Some("LOP_COUNT_DELTA (cached row counts)"),
        (_, Context::DIFF_MAP) => Some("LCX_DIFF_MAP (differential change map)"),
        (_, Context::ML_MAP) => Some("LCX_ML_MAP (minimally logged change map)"),
        (_, Context::BOOT_PAGE_CKPT) => Some("LCX_BOOT_PAGE_CKPT (checkpoint fields of the boot page)"),
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

/// Which way a record goes: redo applies its change, undo takes it back out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Redo,
    Undo,
}

impl Direction {
    /// A change's (from, to) images in this direction.
    fn order<'a>(self, before: &'a [u8], after: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        match self {
            Direction::Redo => (before, after),
            Direction::Undo => (after, before),
        }
    }
}

/// Applies one record to `page` (8192 bytes), or says why it cannot; the byte-for-byte
/// changes (modify, root change, free space, header) also take themselves back out with
/// [`Direction::Undo`] (see [`undo`] for the others).
fn change(
    page: &mut [u8],
    page_id: PageId,
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<(), String> {
    let slot = record.slot().ok_or("has no slot")?;
    let mut images = record.row_images()?;
    let heap = keeps_slots(record.context());
    let mut before_after = || -> std::result::Result<(&[u8], &[u8]), String> {
        let before = images.next().ok_or("carries no before image")?;
        Ok(direction.order(before, images.next().ok_or("carries no after image")?))
    };
    match record.operation() {
        Operation::INSERT_ROWS => insert_rows(page, slot, record, heap),
        Operation::DELETE_SPLIT if direction == Direction::Redo => delete_split(page, slot, record),
        Operation::DELETE_ROWS if record.context() == Context::MARK_AS_GHOST => mark_ghost(page, slot),
        Operation::DELETE_ROWS => delete_row(page, slot, heap),
        Operation::MODIFY_ROW => {
            let (from, to) = before_after()?;
            let offset = usize::from(record.offset_in_row().ok_or("has no offset in the row")?);
            modify_row(page, slot, offset, from, to, record.context() != Context::PFS)
        }
        Operation::MODIFY_COLUMNS => modify_columns(page, slot, record, direction),
        Operation::EXPUNGE_ROWS => expunge_row(page, slot, heap),
        Operation::FORMAT_PAGE => format_page(page, page_id, record),
        Operation::ROOT_CHANGE => root_change(page, slot, record, direction),
        Operation::SET_BITS => set_bits(page, slot, record, direction),
        Operation::SET_FREE_SPACE => set_free_space(page, slot, record, direction),
        Operation::MODIFY_HEADER => {
            let (from, to) = before_after()?;
            let offset = usize::from(record.offset_in_row().ok_or("has no offset in the header")?);
            modify_header(page, offset, from, to)
        }
        _ => Err("is not supported by redo".to_string()),
    }
}

/// Whether the pages of `context` keep each row in its slot (a heap's rows by their row id, LOB
/// and row-overflow fragments by the page and slot their links name) rather than in key order.
fn keeps_slots(context: Context) -> bool {
    matches!(context, Context::HEAP | Context::TEXT_MIX | Context::TEXT_TREE)
}

/// Takes one record of a transaction open at the stop point back out of `page`, which holds
/// it and the changes after it that stay. `untouched`: every change of the page after this
/// record has been undone already, so its slots are where the record left them.
fn undo(page: &mut [u8], page_id: PageId, record: &LogRecord<'_>, untouched: bool) -> std::result::Result<(), String> {
    let slot = record.slot().ok_or("has no slot")?;
    let heap = keeps_slots(record.context());
    let row = || record.row_images()?.next().ok_or_else(|| "carries no row".to_string());
    match record.operation() {
        Operation::INSERT_ROWS if inserted_row_count(record)? > 1 => {
            Err("moved rows of a page split onto the page, which undo does not take back".to_string())
        }
        Operation::INSERT_ROWS => remove_inserted(page, slot, row()?, heap),
        Operation::DELETE_SPLIT => {
            Err("took a split's moved rows off the page, which undo does not put back".to_string())
        }
        Operation::DELETE_ROWS if record.context() == Context::MARK_AS_GHOST => unmark_ghost(page, slot, row()?, heap),
        // A row put back by its slot: on an index page only where no later change moved slots.
        Operation::DELETE_ROWS if heap || untouched => insert_row(page, slot, row()?, heap),
        Operation::DELETE_ROWS => {
            Err(format!("removed slot {slot} of an index page changed since, whose slots may have moved"))
        }
        // The page stays as formatted: its allocation (PFS, IAM) is taken back by the
        // transaction's own allocation records, so no read reaches it.
        Operation::FORMAT_PAGE => Ok(()),
        Operation::EXPUNGE_ROWS => Err("removed a ghost, which undo does not put back".to_string()),
        _ => change(page, page_id, record, Direction::Undo),
    }
}

/// Undo of LOP_INSERT_ROWS: the row the record inserted goes. Found in its slot, or (on an
/// index page changed since, where slots move) as the one row of the page with its bytes.
fn remove_inserted(page: &mut [u8], slot: u16, row: &[u8], heap: bool) -> std::result::Result<(), String> {
    let slot = match row_is(page, slot, row) {
        true => slot,
        false if heap => return Err(format!("finds other bytes than the row it inserted in slot {slot}")),
        false => unique_slot(page, |at| page.get(at..at + row.len()) == Some(row)).ok_or_else(|| {
            format!("finds the row it inserted in slot {slot} nowhere on the page, or more than once")
        })?,
    };
    delete_row(page, slot, heap)
}

/// Undo of a LOP_DELETE_ROWS that made a row a ghost: the ghost becomes the row again (its
/// record type back, its other bytes as the image holds them), found as [`remove_inserted`]
/// finds a row.
fn unmark_ghost(page: &mut [u8], slot: u16, row: &[u8], heap: bool) -> std::result::Result<(), String> {
    let Some((&status, rest)) = row.split_first() else { return Err("carries an empty row".to_string()) };
    let ghost_of =
        |at: usize| page.get(at + 1..at + row.len()) == Some(rest) && GHOST_TYPES[..2].contains(&((page[at] >> 1) & 7));
    let slot = match row_at(page, slot) {
        Ok(at) if ghost_of(at) => slot,
        _ if heap => return Err(format!("finds no ghost of the row it deleted in slot {slot}")),
        _ => unique_slot(page, ghost_of).ok_or_else(|| {
            format!("finds the ghost of the row it deleted in slot {slot} nowhere on the page, or more than once")
        })?,
    };
    let at = row_at(page, slot)?;
    page[at] = status;
    Ok(())
}

/// Whether slot `slot` holds `row`'s bytes.
fn row_is(page: &[u8], slot: u16, row: &[u8]) -> bool {
    row_at(page, slot).is_ok_and(|at| page.get(at..at + row.len()) == Some(row))
}

/// The one slot whose row (at its offset) `matches`; `None` for none or several.
fn unique_slot(page: &[u8], matches: impl Fn(usize) -> bool) -> Option<u16> {
    let count = layout(page).ok()?.slot_count;
    let mut found = (0..count as u16).filter(|&s| row_at(page, s).is_ok_and(&matches));
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A field of the record's fixed part (an operation's own, past the common page-operation
/// header), `None` where the fixed part ends before it.
fn fixed_field<'r>(record: &LogRecord<'r>, at: usize, len: usize) -> Option<&'r [u8]> {
    (at + len <= usize::from(record.fixed_length())).then(|| record.bytes().get(at..at + len))?
}

fn fixed_u16(record: &LogRecord<'_>, at: usize) -> std::result::Result<usize, String> {
    fixed_field(record, at, 2)
        .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
        .ok_or_else(|| format!("is too short for its field at +{at:#x}"))
}

/// LOP_FORMAT_PAGE: see the module documentation for the fields.
fn format_page(page: &mut [u8], id: PageId, record: &LogRecord<'_>) -> std::result::Result<(), String> {
    let fields = fixed_field(record, 0x30, 0x20).ok_or("is too short for the page it formats")?;
    let (page_type, type_flags, level) = (fields[0], fields[1], fields[2]);
    let known = |at: usize| matches!(at, 0..=2 | 0x04..=0x11 | 0x14..=0x19);
    if let Some(at) = (0..fields.len()).find(|&at| fields[at] != 0 && !known(at)) {
        return Err(format!("carries a format field not understood (+{:#x} = {:#04x})", 0x30 + at, fields[at]));
    }
    let object = fixed_field(record, 0x20, 4).ok_or("has no allocation unit")?;
    let index = fixed_field(record, 0x2e, 2).ok_or("has no allocation unit")?;
    let (object, index) = (object.to_vec(), index.to_vec());
    let iam = match PageType::from_byte(page_type) {
        PageType::Data | PageType::Index | PageType::TextMix | PageType::TextTree => false,
        PageType::Iam => true,
        _ => return Err(format!("formats a page of type {page_type}, which redo does not build")),
    };
    page.fill(0);
    page[0] = 1;
    page[1] = page_type;
    page[2] = type_flags;
    page[3] = level;
    page[6..8].copy_from_slice(&index);
    page[14..16].copy_from_slice(&fields[0x0a..0x0c]);
    // The page's neighbours in its level's chain: a split's new page is linked at once.
    page[8..14].copy_from_slice(&fields[0x04..0x0a]);
    page[16..22].copy_from_slice(&fields[0x0c..0x12]);
    page[24..28].copy_from_slice(&object);
    page[32..36].copy_from_slice(&id.page.to_le_bytes());
    page[36..38].copy_from_slice(&id.file.to_le_bytes());
    set_u16(page, 30, HEADER_SIZE);
    set_u16(page, 28, PAGE_SIZE - HEADER_SIZE);
    if iam {
        // The header record (the start page at 40), then the extent bitmap, both zeroed.
        let mut at = HEADER_SIZE;
        for (slot, len) in [IAM_HEADER_RECORD, IAM_BITMAP_RECORD].into_iter().enumerate() {
            set_u16(page, at + 2, len);
            set_u16(page, slot_entry(slot), at);
            at += len;
        }
        page[HEADER_SIZE + 40..HEADER_SIZE + 46].copy_from_slice(&fields[0x14..0x1a]);
        set_u16(page, 22, 2);
        set_u16(page, 30, at);
        set_u16(page, 28, PAGE_SIZE - at - 4);
    }
    Ok(())
}

/// Lengths of an IAM page's two records ([`crate::page::allocation`]).
const IAM_HEADER_RECORD: usize = 94;
const IAM_BITMAP_RECORD: usize = 7992;

/// LOP_ROOT_CHANGE: one 6-byte page id of a `sys.sysallocunits` row, from the old to the new.
fn root_change(
    page: &mut [u8],
    slot: u16,
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<(), String> {
    let new = fixed_field(record, 0x48, 6).ok_or("has no new page id")?;
    let old = fixed_field(record, 0x50, 6).ok_or("has no old page id")?;
    let offset = fixed_u16(record, 0x58)?;
    let (from, to) = direction.order(old, new);
    modify_row(page, slot, offset, from, to, true)
}

/// LOP_SET_BITS: `count` bits of a record from `first`, set to `value` (undo: to the other
/// value, the one they had: SQL Server logs a change of bits, not bits set to what they were).
fn set_bits(
    page: &mut [u8],
    slot: u16,
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<(), String> {
    let (first, count, value) = (fixed_u16(record, 0x30)?, fixed_u16(record, 0x32)?, fixed_u16(record, 0x34)?);
    if value > 1 {
        return Err(format!("sets bits to {value}, not 0 or 1"));
    }
    let value = if direction == Direction::Undo { 1 - value } else { value };
    let (at, end) = row_bounds(page, slot)?;
    if at + (first + count).div_ceil(8) > end {
        return Err(format!("changes bits {first}..{} past the end of slot {slot}", first + count));
    }
    for bit in first..first + count {
        let byte = &mut page[at + bit / 8];
        let mask = 1u8 << (bit % 8);
        *byte = if value == 1 { *byte | mask } else { *byte & !mask };
    }
    Ok(())
}

/// LOP_SET_FREE_SPACE: one byte of a PFS record, from the old value to the new.
fn set_free_space(
    page: &mut [u8],
    slot: u16,
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<(), String> {
    let offset = fixed_u16(record, 0x30)?;
    let values = fixed_field(record, 0x32, 2).ok_or("has no PFS byte")?;
    let (from, to) = direction.order(&values[1..2], &values[0..1]);
    modify_row(page, slot, offset, from, to, false)
}

/// LOP_MODIFY_HEADER: bytes of the page header, where they hold the before image.
fn modify_header(page: &mut [u8], offset: usize, before: &[u8], after: &[u8]) -> std::result::Result<(), String> {
    let end = offset + before.len();
    if before.len() != after.len() || end > HEADER_SIZE || (offset < 50 && end > 40) {
        return Err(format!(
            "changes {} header bytes at {offset} into {} (outside the header, or its LSN)",
            before.len(),
            after.len()
        ));
    }
    if page[offset..end] != *before {
        return Err(format!("finds other bytes than its before image at offset {offset} of the page header"));
    }
    page[offset..end].copy_from_slice(after);
    Ok(())
}

/// LOP_MODIFY_COLUMNS: ranges of one row, each from its before image to its after image.
fn modify_columns(
    page: &mut [u8],
    slot: u16,
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<(), String> {
    let mut images = record.row_images()?;
    let offsets = images.next().ok_or("carries no column offsets")?;
    // Images 1 (the ranges' lengths: the before and after images give them too), 2 and 3.
    let mut images = images.skip(3);
    for pair in offsets.chunks(4) {
        let [a0, a1, b0, b1] = pair else { return Err("carries a column offset cut short".to_string()) };
        let (offset, other) = (u16::from_le_bytes([*a0, *a1]), u16::from_le_bytes([*b0, *b1]));
        if offset != other {
            return Err(format!("moves a column from offset {offset} to {other} of the row"));
        }
        let before = images.next().ok_or("carries fewer before images than columns")?;
        let after = images.next().ok_or("carries fewer after images than columns")?;
        let (from, to) = direction.order(before, after);
        modify_row(page, slot, usize::from(offset), from, to, true)?;
    }
    Ok(())
}

/// LOP_FILE_HDR_MODIFY: the after image (undo: the before image) written over the row;
/// `Ok(false)` where the row already holds it.
fn file_header_images(
    page: &mut [u8],
    record: &LogRecord<'_>,
    direction: Direction,
) -> std::result::Result<bool, String> {
    let mut images = record.row_images()?;
    let before = images.next().ok_or("carries no before image")?;
    let after = images.next().ok_or("carries no after image")?;
    let (before, after) = direction.order(before, after);
    let offset = usize::from(record.offset_in_row().ok_or("has no offset in the row")?);
    let (at, end) = row_bounds(page, 0)?;
    let (from, to) = (at + offset, at + offset + after.len());
    if before.len() != after.len() || to > end {
        return Err(format!(
            "changes {} bytes at offset {offset} of the file header record into {}",
            before.len(),
            after.len()
        ));
    }
    if page[from..to] == *after {
        return Ok(false);
    }
    page[from..to].copy_from_slice(after);
    Ok(true)
}

struct Layout {
    slot_count: usize,
    free_data: usize,
}

fn layout(page: &[u8]) -> std::result::Result<Layout, String> {
    let slot_count = usize::from(read_u16(page, 22).ok_or("page too short")?);
    let free_data = usize::from(read_u16(page, 30).ok_or("page too short")?);
    // A slot array longer than the page (up to 65,535 entries) is damage, not a subtraction.
    let slots_end = PAGE_SIZE.saturating_sub(2 * slot_count);
    if page.len() != PAGE_SIZE || free_data < HEADER_SIZE || free_data > slots_end {
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

/// How many rows a LOP_INSERT_ROWS carries: of its n images, the first n - 2 (SQL Server
/// follows the rows with two more images, empty on the corpus); one where it has fewer than 4.
fn inserted_row_count(record: &LogRecord<'_>) -> std::result::Result<usize, String> {
    Ok(record.row_images()?.count().saturating_sub(2).max(1))
}

/// LOP_INSERT_ROWS: its rows into consecutive slots from `slot` (a split's moved rows: all of
/// them, into the new page).
fn insert_rows(page: &mut [u8], slot: u16, record: &LogRecord<'_>, heap: bool) -> std::result::Result<(), String> {
    let rows = inserted_row_count(record)?;
    let mut images = record.row_images()?;
    for k in 0..rows {
        let row = images.next().ok_or("carries no row")?;
        let at = u16::try_from(usize::from(slot) + k).map_err(|_| "puts rows past slot 65535".to_string())?;
        insert_row(page, at, row, heap)?;
    }
    Ok(())
}

/// LOP_DELETE_SPLIT: the rows a split moved (`count` of them, the page's last slots from
/// `slot`) leave the old page, whose remaining rows are packed together so the space is
/// usable; the page's free count grows by the bytes the record says were moved.
fn delete_split(page: &mut [u8], slot: u16, record: &LogRecord<'_>) -> std::result::Result<(), String> {
    let (count, moved) = (fixed_u16(record, 0x36)?, fixed_u16(record, 0x38)?);
    let l = layout(page)?;
    let slot = usize::from(slot);
    if slot + count != l.slot_count {
        return Err(format!(
            "moves {count} rows from slot {slot}, but the page has {} slots: a split moves the last ones",
            l.slot_count
        ));
    }
    pack_rows(page, slot)?;
    set_u16(page, 22, slot);
    add_free_count(page, moved as isize);
    Ok(())
}

/// Keeps the rows of slots `0..keep` only, packed from the header on in their order on the
/// page. A row's bytes are taken as running up to the next row (of any slot) or the free-data
/// offset, so nothing of a kept row is lost whatever its format (the space of a row deleted
/// before the first kept one, or of a slot not kept, is what packing wins back).
fn pack_rows(page: &mut [u8], keep: usize) -> std::result::Result<(), String> {
    let l = layout(page)?;
    let mut rows: Vec<(usize, usize)> = Vec::with_capacity(l.slot_count);
    for slot in 0..l.slot_count {
        let offset = usize::from(read_u16(page, slot_entry(slot)).unwrap_or(0));
        if offset == 0 {
            continue; // an empty heap slot
        }
        if offset < HEADER_SIZE || offset >= l.free_data {
            return Err(format!("finds slot {slot} at +{offset}, outside the rows (+96..+{})", l.free_data));
        }
        rows.push((offset, slot));
    }
    rows.sort_unstable();
    let old = page[..l.free_data].to_vec();
    let mut at = HEADER_SIZE;
    for (k, &(offset, slot)) in rows.iter().enumerate() {
        if slot >= keep {
            continue;
        }
        let end = rows.get(k + 1).map_or(l.free_data, |next| next.0);
        page[at..at + end - offset].copy_from_slice(&old[offset..end]);
        set_u16(page, slot_entry(slot), at);
        at += end - offset;
    }
    for slot in keep..l.slot_count {
        set_u16(page, slot_entry(slot), 0);
    }
    page[at..l.free_data].fill(0);
    set_u16(page, 30, at);
    Ok(())
}

fn insert_row(page: &mut [u8], slot: u16, row: &[u8], heap: bool) -> std::result::Result<(), String> {
    let l = layout(page)?;
    let slot = usize::from(slot);
    let reuse = heap && slot < l.slot_count && read_u16(page, slot_entry(slot)) == Some(0);
    if slot > l.slot_count || (heap && slot < l.slot_count && !reuse) {
        return Err(format!("puts a row in slot {slot} of a page with {} slots in use there", l.slot_count));
    }
    let new_count = if reuse { l.slot_count } else { l.slot_count + 1 };
    let fits = |l: &Layout| l.free_data + row.len() <= PAGE_SIZE - 2 * new_count;
    let l = if fits(&l) {
        l
    } else {
        // The page reorganized, as SQL Server does when a row does not fit after the last one
        // but the space of rows deleted before it would hold it.
        pack_rows(page, l.slot_count)?;
        let packed = layout(page)?;
        if !fits(&packed) {
            return Err(format!("puts {} bytes where the page has room for fewer", row.len()));
        }
        packed
    };
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

/// Where the row in `slot` starts, and the end of the record area it lies in.
fn row_bounds(page: &[u8], slot: u16) -> std::result::Result<(usize, usize), String> {
    Ok((row_at(page, slot)?, layout(page)?.free_data))
}

/// Record types (status bits 1-3) of ghosts: data, index, version.
const GHOST_TYPES: [u8; 3] = [5, 6, 7];

fn expunge_row(page: &mut [u8], slot: u16, heap: bool) -> std::result::Result<(), String> {
    let at = row_at(page, slot)?;
    let record_type = (page[at] >> 1) & 7;
    if !GHOST_TYPES.contains(&record_type) {
        return Err(format!("removes slot {slot}, which holds a record of type {record_type}, not a ghost"));
    }
    delete_row(page, slot, heap)?;
    let ghosts = usize::from(read_u16(page, 58).unwrap_or(0));
    set_u16(page, 58, ghosts.saturating_sub(1));
    Ok(())
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

/// Bytes of a row replaced by the after image; with `compare`, only where they hold the before
/// image.
fn modify_row(
    page: &mut [u8],
    slot: u16,
    offset: usize,
    before: &[u8],
    after: &[u8],
    compare: bool,
) -> std::result::Result<(), String> {
    let at = row_at(page, slot)? + offset;
    let free_data = layout(page)?.free_data;
    if before.len() != after.len() {
        return Err(format!("changes the row's length ({} bytes to {})", before.len(), after.len()));
    }
    if at + before.len() > free_data || (compare && page[at..at + before.len()] != *before) {
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

    /// The base's run, with the pages redo changed laid over it; a run holding a page redo
    /// refused fails (its pages are then read one by one).
    fn read_raw_run(&self, first: PageId, count: u32, buf: &mut [u8]) -> Result<()> {
        self.base.read_raw_run(first, count, buf)?;
        let run = crate::source::run_bytes(first, count, buf)?;
        for (page, bytes) in (first.page..).zip(run.chunks_exact_mut(PAGE_SIZE)) {
            let id = PageId::new(first.file, page);
            if self.refused.contains_key(&id) || self.changed.contains_key(&id) {
                self.read_raw(id, bytes)?;
            }
        }
        Ok(())
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

    fn changed_pages(&self) -> Vec<PageId> {
        self.changed.keys().copied().collect()
    }

    fn origin(&self) -> Option<&(dyn Any + Send + Sync)> {
        match &self.origin {
            Some(origin) => Some(origin),
            None => self.base.origin(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::tests::forge_record;
    use std::path::PathBuf;

    const PAGE: PageId = PageId { file: 1, page: 153 };
    const BASE_LSN: Lsn = Lsn { vlf: 25, block: 0xbd, slot: 2 };
    const NEXT_LSN: Lsn = Lsn { vlf: 25, block: 0xbe, slot: 2 };

    /// One page in memory, the base of a redo.
    struct OnePage(Vec<u8>, Vec<SourceFile>);

    impl PageSource for OnePage {
        fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
            if id != PAGE {
                return Err(Error::not_found(format!("no page {id}")));
            }
            buf[..PAGE_SIZE].copy_from_slice(&self.0);
            Ok(())
        }
        fn files(&self) -> &[SourceFile] {
            &self.1
        }
    }

    /// A data page at `lsn` holding `rows` in slots 0, 1, ... (an empty row: an empty slot).
    fn page(rows: &[&[u8]], lsn: Lsn, flags: u16) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        p[0] = 1;
        p[1] = 1;
        p[4..6].copy_from_slice(&flags.to_le_bytes());
        p[22..24].copy_from_slice(&(rows.len() as u16).to_le_bytes());
        p[32..36].copy_from_slice(&PAGE.page.to_le_bytes());
        p[36..38].copy_from_slice(&PAGE.file.to_le_bytes());
        p[40..50].copy_from_slice(&lsn_bytes(lsn));
        let mut at = HEADER_SIZE;
        for (slot, row) in rows.iter().enumerate() {
            let offset = if row.is_empty() { 0 } else { at };
            p[at..at + row.len()].copy_from_slice(row);
            at += row.len();
            p[slot_entry(slot)..slot_entry(slot) + 2].copy_from_slice(&(offset as u16).to_le_bytes());
        }
        p[30..32].copy_from_slice(&(at as u16).to_le_bytes());
        let free = PAGE_SIZE - at - 2 * rows.len();
        p[28..30].copy_from_slice(&(free as u16).to_le_bytes());
        if flags & FLAG_CHECKSUM != 0 {
            let sum = page_checksum(&p);
            p[60..64].copy_from_slice(&sum.to_le_bytes());
        }
        p
    }

    /// A page operation on [`PAGE`] at `lsn`, changing it from `previous`.
    fn op(op: u8, context: u8, xact: u64, slot: u16, previous: Lsn, offset: u16, images: &[&[u8]]) -> Vec<u8> {
        let fields = [
            (0x18, &PAGE.page.to_le_bytes()[..]),
            (0x1c, &PAGE.file.to_le_bytes()[..]),
            (0x1e, &slot.to_le_bytes()[..]),
            (0x24, &lsn_bytes(previous)[..]),
            (0x38, &offset.to_le_bytes()[..]),
        ];
        forge_record(op, context, xact, &fields, 0x3c, images)
    }

    /// A LOP_COMMIT_XACT of `xact` at 2017-06-01 `hh:mm:ss`.
    fn commit(xact: u64, hh: u32, mm: u32, ss: u32) -> Vec<u8> {
        let ticks = ((hh * 60 + mm) * 60 + ss) * 300;
        forge_record(
            0x81,
            0,
            xact,
            &[(0x18, &ticks.to_le_bytes()[..]), (0x1c, &42_885u32.to_le_bytes()[..])],
            0x20,
            &[],
        )
    }

    /// Redoes `records` (bytes, LSN) onto `base` up to `stop`; returns the redo and the page
    /// read back (or the error reading it).
    fn run(base: Vec<u8>, records: &[(Lsn, Vec<u8>)], stop: StopPoint) -> (RedoPages, Result<Vec<u8>>) {
        let files = vec![SourceFile { file_id: 1, location: PathBuf::from("t.mdf"), page_count: 200 }];
        let parsed: Vec<LogRecord<'_>> = records.iter().map(|(lsn, b)| LogRecord::parse(*lsn, b).unwrap()).collect();
        let mut commits = Commits::default();
        parsed.iter().for_each(|r| commits.see(&stop, r));
        let mut redo = RedoPages::new(Arc::new(OnePage(base, files)));
        parsed.iter().for_each(|r| redo.apply(&commits, r));
        redo.roll_back();
        let mut buf = vec![0u8; PAGE_SIZE];
        let read = redo.read_raw(PAGE, &mut buf).map(|()| buf);
        // A run of the page reads what the page read alone does.
        let mut run = vec![0u8; PAGE_SIZE];
        let in_run = redo.read_raw_run(PAGE, 1, &mut run).map(|()| run);
        assert_eq!(in_run.as_ref().map_err(Error::to_string), read.as_ref().map_err(Error::to_string));
        (redo, read)
    }

    fn slot_row(p: &[u8], slot: usize, len: usize) -> Option<&[u8]> {
        let offset = usize::from(read_u16(p, slot_entry(slot)).unwrap());
        (offset != 0).then(|| &p[offset..offset + len])
    }

    const LSN_A: Lsn = Lsn { vlf: 25, block: 0xbe, slot: 3 };

    #[test]
    fn insert_appends_a_heap_row_and_moves_the_page_lsn() {
        let base = page(&[b"row-0", b"row-1"], BASE_LSN, FLAG_CHECKSUM);
        let records =
            [(NEXT_LSN, op(0x02, Context::HEAP.0, 7, 2, BASE_LSN, 0, &[b"row-2"])), (LSN_A, commit(7, 13, 0, 0))];
        let (redo, read) = run(base, &records, StopPoint::End);
        let p = read.unwrap();
        assert_eq!(read_u16(&p, 22), Some(3));
        assert_eq!(slot_row(&p, 0, 5), Some(&b"row-0"[..]));
        assert_eq!(slot_row(&p, 2, 5), Some(&b"row-2"[..]));
        assert_eq!(read_u16(&p, 30), Some(96 + 15));
        assert_eq!(read_u16(&p, 28), Some((PAGE_SIZE - 96 - 15 - 6) as u16));
        assert_eq!(Lsn::parse(&p, 40), Some(NEXT_LSN));
        assert_eq!(crate::bytes::read_u32(&p, 60), Some(page_checksum(&p)));
        assert_eq!((redo.applied(), redo.changed_pages()), (1, 1));
    }

    #[test]
    fn heap_insert_takes_an_empty_slot_and_index_insert_moves_later_slots_up() {
        let heap = page(&[b"row-0", b"", b"row-2"], BASE_LSN, 0);
        let records = [(NEXT_LSN, op(0x02, Context::HEAP.0, 0, 1, BASE_LSN, 0, &[b"new-1"]))];
        let p = run(heap, &records, StopPoint::End).1.unwrap();
        assert_eq!(read_u16(&p, 22), Some(3));
        assert_eq!(slot_row(&p, 1, 5), Some(&b"new-1"[..]));
        assert_eq!(slot_row(&p, 2, 5), Some(&b"row-2"[..]));
        // LCX_INDEX_LEAF (0x02): slots stay in key order.
        let index = page(&[b"key-b", b"key-c"], BASE_LSN, 0);
        let records = [(NEXT_LSN, op(0x02, 0x02, 0, 0, BASE_LSN, 0, &[b"key-a"]))];
        let p = run(index, &records, StopPoint::End).1.unwrap();
        let rows: Vec<_> = (0..3).map(|s| slot_row(&p, s, 5).unwrap()).collect();
        assert_eq!(rows, [&b"key-a"[..], b"key-b", b"key-c"]);
    }

    #[test]
    fn deletes_empty_a_heap_slot_remove_an_index_slot_or_mark_a_ghost() {
        let rows: [&[u8]; 3] = [b"\x10row0", b"\x10row1", b"\x10row2"];
        let delete = |context: u8| {
            let records = [(NEXT_LSN, op(0x03, context, 0, 1, BASE_LSN, 0, &[rows[1]]))];
            run(page(&rows, BASE_LSN, 0), &records, StopPoint::End).1.unwrap()
        };
        let heap = delete(Context::HEAP.0);
        assert_eq!((read_u16(&heap, 22), slot_row(&heap, 1, 5)), (Some(3), None));
        assert_eq!(slot_row(&heap, 2, 5), Some(rows[2]));
        let index = delete(0x02);
        assert_eq!(read_u16(&index, 22), Some(2));
        assert_eq!(slot_row(&index, 1, 5), Some(rows[2]));
        let ghost = delete(Context::MARK_AS_GHOST.0);
        // Status byte 0x10 (primary record) becomes 0x1a: record type 5, a ghost data record.
        assert_eq!(slot_row(&ghost, 1, 5), Some(&b"\x1arow1"[..]));
    }

    #[test]
    fn modify_row_replaces_its_before_image_and_refuses_other_bytes() {
        let base = page(&[b"abcdefgh"], BASE_LSN, 0);
        let records = [(NEXT_LSN, op(0x04, Context::HEAP.0, 0, 0, BASE_LSN, 2, &[b"cde", b"XYZ"]))];
        let p = run(base.clone(), &records, StopPoint::End).1.unwrap();
        assert_eq!(slot_row(&p, 0, 8), Some(&b"abXYZfgh"[..]));
        let records = [(NEXT_LSN, op(0x04, Context::HEAP.0, 0, 0, BASE_LSN, 2, &[b"zzz", b"XYZ"]))];
        let e = run(base, &records, StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("LOP_MODIFY_ROW") && e.contains("other bytes than its before image"), "{e}");
    }

    #[test]
    fn a_page_at_another_lsn_is_refused_and_one_past_the_record_is_left_alone() {
        let gap = Lsn { vlf: 25, block: 0xb0, slot: 1 };
        let records = [(NEXT_LSN, op(0x02, Context::HEAP.0, 0, 1, gap, 0, &[b"row-1"]))];
        let e = run(page(&[b"row-0"], BASE_LSN, 0), &records, StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("page 1:153 is at LSN 00000019:000000bd:0002") && e.contains("were not given"), "{e}");
        // The backup copied the page after this change: redo skips it.
        let base = page(&[b"row-0", b"row-1"], NEXT_LSN, 0);
        let p = run(base.clone(), &records, StopPoint::End).1.unwrap();
        assert_eq!(p, base);
    }

    #[test]
    fn uncommitted_and_late_transactions_stay_out() {
        let base = page(&[b"row-0"], BASE_LSN, 0);
        let insert = op(0x02, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[b"row-1"]);
        // The rows a page holds, slot by slot (`None`: an empty slot).
        let rows = |p: Vec<u8>| -> Vec<Option<Vec<u8>>> {
            (0..usize::from(read_u16(&p, 22).unwrap())).map(|s| slot_row(&p, s, 5).map(<[u8]>::to_vec)).collect()
        };
        let without = vec![Some(b"row-0".to_vec())];
        // Redone, then undone: the heap's new slot stays, empty.
        let undone = vec![Some(b"row-0".to_vec()), None];
        let with = vec![Some(b"row-0".to_vec()), Some(b"row-1".to_vec())];
        // Never committed.
        assert_eq!(rows(run(base.clone(), &[(NEXT_LSN, insert.clone())], StopPoint::End).1.unwrap()), undone);
        // Committed at 13:22:45, after the stop time.
        let records = [(NEXT_LSN, insert.clone()), (LSN_A, commit(9, 13, 22, 45))];
        let stop = StopPoint::parse_time("2017-06-01 13:22:44").unwrap();
        assert_eq!(rows(run(base.clone(), &records, stop).1.unwrap()), undone);
        let stop = StopPoint::parse_time("2017-06-01 13:22:45").unwrap();
        assert_eq!(rows(run(base.clone(), &records, stop).1.unwrap()), with);
        // Before the record's LSN: not even redone.
        let stop = StopPoint::Lsn { at: NEXT_LSN, included: false };
        assert_eq!(rows(run(base.clone(), &records, stop).1.unwrap()), without);
        // At the commit's LSN, included: the transaction is in; not included: out.
        let stop = StopPoint::Lsn { at: LSN_A, included: true };
        assert_eq!(rows(run(base.clone(), &records, stop).1.unwrap()), with);
        let stop = StopPoint::Lsn { at: LSN_A, included: false };
        assert_eq!(rows(run(base.clone(), &records, stop).1.unwrap()), undone);
        // The backup holds the uncommitted change: undone, the heap slot left empty.
        let holding = page(&[b"row-0", b"row-1"], NEXT_LSN, 0);
        let (redo, read) = run(holding, &[(NEXT_LSN, insert.clone())], StopPoint::End);
        let p = read.unwrap();
        assert_eq!((read_u16(&p, 22), slot_row(&p, 0, 5), slot_row(&p, 1, 5)), (Some(2), Some(&b"row-0"[..]), None));
        assert_eq!((redo.applied(), redo.undone()), (0, 1));
        // The backup holds a change logged after the stop point: refused, naming it.
        let holding = page(&[b"row-0", b"row-1"], NEXT_LSN, 0);
        let stop = StopPoint::Lsn { at: NEXT_LSN, included: false };
        let e = run(holding, &records, stop).1.unwrap_err().to_string();
        assert!(e.contains("transaction 0000:00000009") && e.contains("after the stop point"), "{e}");
    }

    const LSN_B: Lsn = Lsn { vlf: 25, block: 0xbf, slot: 2 };
    const LSN_C: Lsn = Lsn { vlf: 25, block: 0xc0, slot: 2 };

    #[test]
    fn an_open_transaction_is_redone_then_undone_under_the_changes_that_stay() {
        // Transaction 9 inserts slot 1 and stays open; transaction 7 inserts slot 2 after it,
        // from the LSN 9's insert left, and commits: 7's row stays, 9's goes.
        let records = [
            (NEXT_LSN, op(0x02, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[b"open!"])),
            (LSN_A, op(0x02, Context::HEAP.0, 7, 2, NEXT_LSN, 0, &[b"kept!"])),
            (LSN_B, commit(7, 13, 0, 0)),
        ];
        let (redo, read) = run(page(&[b"row-0"], BASE_LSN, FLAG_CHECKSUM), &records, StopPoint::End);
        let p = read.unwrap();
        assert_eq!(read_u16(&p, 22), Some(3));
        assert_eq!((slot_row(&p, 1, 5), slot_row(&p, 2, 5)), (None, Some(&b"kept!"[..])));
        assert_eq!(crate::bytes::read_u32(&p, 60), Some(page_checksum(&p)));
        assert_eq!((redo.applied(), redo.undone()), (2, 1));
        assert!(redo
            .finish()
            .notes()
            .iter()
            .any(|n| n.contains("1 record(s) of transactions open at the stop point undone")));
        // A stop point inside transaction 7 (its insert included, its commit not): both undone.
        let stop = StopPoint::Lsn { at: LSN_A, included: true };
        let p = run(page(&[b"row-0"], BASE_LSN, 0), &records, stop).1.unwrap();
        assert_eq!((read_u16(&p, 22), slot_row(&p, 1, 5), slot_row(&p, 2, 5)), (Some(3), None, None));
    }

    #[test]
    fn undo_puts_deleted_rows_back_and_before_images_in_place() {
        let rows: [&[u8]; 3] = [b"\x10row0", b"\x10row1", b"\x10row2"];
        let records = [
            // A heap delete of slot 1, then a change of slot 0 and a ghost of slot 2.
            (NEXT_LSN, op(0x03, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[rows[1]])),
            (LSN_A, op(0x04, Context::HEAP.0, 9, 0, NEXT_LSN, 1, &[b"row", b"ROW"])),
            (LSN_B, op(0x03, Context::MARK_AS_GHOST.0, 9, 2, LSN_A, 0, &[rows[2]])),
        ];
        let base = page(&rows, BASE_LSN, 0);
        let (redo, read) = run(base.clone(), &records, StopPoint::End);
        let p = read.unwrap();
        assert_eq!(redo.undone(), 3);
        for (slot, row) in rows.iter().enumerate() {
            assert_eq!(slot_row(&p, slot, 5), Some(*row), "slot {slot}");
        }
        // Column ranges go back to their before images.
        let row: &[u8] = b"\x10\x00abcdefghijklmnop";
        let images: [&[u8]; 8] = [&[3, 0, 3, 0, 10, 0, 10, 0], &[1, 0, 2, 0], b"key", b"k", b"b", b"B", b"ij", b"IJ"];
        let mut record = page_op(0x06, 0x02, (BASE_LSN, 0), &[], 0x3e, &images);
        record[0x10] = 9;
        let p = run(page(&[row], BASE_LSN, 0), &[(NEXT_LSN, record)], StopPoint::End).1.unwrap();
        assert_eq!(slot_row(&p, 0, row.len()), Some(row));
    }

    #[test]
    fn undo_on_an_index_page_finds_rows_by_their_bytes_once_slots_have_moved() {
        // LCX_INDEX_LEAF (0x02): open transaction 9 inserts key-c, then committed 7 inserts
        // key-a before it (key-c moves from slot 1 to 2).
        let records = [
            (NEXT_LSN, op(0x02, 0x02, 9, 1, BASE_LSN, 0, &[b"key-c"])),
            (LSN_A, op(0x02, 0x02, 7, 0, NEXT_LSN, 0, &[b"key-a"])),
            (LSN_B, commit(7, 13, 0, 0)),
        ];
        let p = run(page(&[b"key-b"], BASE_LSN, 0), &records, StopPoint::End).1.unwrap();
        assert_eq!(read_u16(&p, 22), Some(2));
        assert_eq!((slot_row(&p, 0, 5), slot_row(&p, 1, 5)), (Some(&b"key-a"[..]), Some(&b"key-b"[..])));
        // An index delete under a later change: where the row goes back is not known, refused
        // naming the operation, its LSN and the page.
        let records = [
            (NEXT_LSN, op(0x03, 0x02, 9, 0, BASE_LSN, 0, &[b"key-b"])),
            (LSN_A, op(0x02, 0x02, 7, 0, NEXT_LSN, 0, &[b"key-a"])),
            (LSN_B, commit(7, 13, 0, 0)),
        ];
        let e = run(page(&[b"key-b"], BASE_LSN, 0), &records, StopPoint::End).1.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = e.to_string();
        assert!(e.contains("page 1:153") && e.contains("LOP_DELETE_ROWS at LSN 00000019:000000be:0002"), "{e}");
        // Alone on the page, the same delete goes back into its slot.
        let p = run(page(&[b"key-b"], BASE_LSN, 0), &records[..1], StopPoint::End).1.unwrap();
        assert_eq!((read_u16(&p, 22), slot_row(&p, 0, 5)), (Some(1), Some(&b"key-b"[..])));
    }

    #[test]
    fn records_to_undo_past_the_memory_kept_refuse_their_pages() {
        let files = vec![SourceFile { file_id: 1, location: PathBuf::from("t.mdf"), page_count: 200 }];
        let bytes = op(0x02, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[b"open!"]);
        let insert = LogRecord::parse(NEXT_LSN, &bytes).unwrap();
        let mut commits = Commits::default();
        commits.see(&StopPoint::End, &insert);
        let mut redo = RedoPages::new(Arc::new(OnePage(page(&[b"row-0"], BASE_LSN, 0), files)));
        redo.hold_limit = insert.length() - 1;
        redo.apply(&commits, &insert);
        redo.roll_back();
        let e = redo.read_raw(PAGE, &mut vec![0u8; PAGE_SIZE]).unwrap_err().to_string();
        assert_eq!(redo.read_raw_run(PAGE, 1, &mut vec![0u8; PAGE_SIZE]).unwrap_err().to_string(), e);
        assert!(e.contains("page 1:153") && e.contains("past the") && e.contains("00000019:000000be:0002"), "{e}");
    }

    #[test]
    fn garbled_records_of_open_transactions_never_panic_undo() {
        // Records of every operation undo takes back, of open transaction 9, garbled byte by
        // byte (a fixed xorshift sequence): redo then undo refuse or apply, never panic.
        let images: [&[u8]; 8] = [&[3, 0, 3, 0, 10, 0, 10, 0], &[1, 0, 2, 0], b"key", b"k", b"b", b"B", b"ij", b"IJ"];
        let sound = [
            op(0x02, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[b"\x10row1"]),
            op(0x03, 0x02, 9, 0, NEXT_LSN, 0, &[b"\x10row0"]),
            op(0x03, Context::MARK_AS_GHOST.0, 9, 0, LSN_A, 0, &[b"\x10row0"]),
            op(0x04, Context::HEAP.0, 9, 0, LSN_B, 1, &[b"row", b"ROW"]),
            page_op(0x06, 0x02, (BASE_LSN, 0), &[], 0x3e, &images),
            format(1, 4, 16, None),
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let lsns = [
            NEXT_LSN,
            LSN_A,
            LSN_B,
            LSN_C,
            Lsn { vlf: 25, block: 0xc1, slot: 2 },
            Lsn { vlf: 25, block: 0xc2, slot: 2 },
        ];
        for _ in 0..3000 {
            let mut records: Vec<(Lsn, Vec<u8>)> = lsns.iter().copied().zip(sound.iter().cloned()).collect();
            for _ in 0..1 + next() % 4 {
                let (_, bytes) = &mut records[(next() % 6) as usize];
                let at = (next() as usize) % bytes.len();
                bytes[at] ^= 1 << (next() % 8);
                bytes[0x10] = 9;
            }
            let records: Vec<(Lsn, Vec<u8>)> =
                records.into_iter().filter(|(lsn, b)| LogRecord::parse(*lsn, b).is_ok()).collect();
            let base = page(&[b"\x10row0", b"\x10row9"], BASE_LSN, FLAG_CHECKSUM);
            let (_, read) = run(base, &records, StopPoint::End);
            assert!(read.is_err() || read.is_ok_and(|p| p.len() == PAGE_SIZE));
        }
    }

    #[test]
    fn a_rolled_back_transaction_is_redone_with_its_compensation() {
        // Transaction 9 inserts slot 1, rolls back (the delete that compensates it), aborts.
        let mut abort = commit(9, 13, 0, 0);
        abort[0x16] = 0x82;
        let records = [
            (NEXT_LSN, op(0x02, Context::HEAP.0, 9, 1, BASE_LSN, 0, &[b"gone!"])),
            (LSN_A, op(0x03, Context::HEAP.0, 9, 1, NEXT_LSN, 0, &[b"gone!"])),
            (LSN_B, abort),
            (LSN_C, op(0x02, Context::HEAP.0, 0, 2, LSN_A, 0, &[b"sys-2"])),
        ];
        let (redo, read) = run(page(&[b"row-0"], BASE_LSN, 0), &records, StopPoint::End);
        let p = read.unwrap();
        assert_eq!((slot_row(&p, 1, 5), slot_row(&p, 2, 5)), (None, Some(&b"sys-2"[..])));
        assert_eq!((redo.applied(), redo.undone()), (3, 0));
    }

    #[test]
    fn other_operations_refuse_the_page_and_count_deltas_are_left_out() {
        let base = page(&[b"row-0"], BASE_LSN, 0);
        let records = [(NEXT_LSN, op(0x12, 0x02, 0, 0, BASE_LSN, 0, &[]))];
        let (redo, read) = run(base.clone(), &records, StopPoint::End);
        assert_eq!(read.unwrap(), base);
        assert!(redo.finish().notes().iter().any(|n| n.contains("1 LOP_COUNT_DELTA")));
        // An operation redo does not know (0x0e): the page is refused naming it.
        let records = [(NEXT_LSN, op(0x0e, 0x02, 0, 0, BASE_LSN, 0, &[]))];
        let e = run(base, &records, StopPoint::End).1.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("at LSN 00000019:000000be:0002 is not supported by redo"), "{e}");
    }

    /// LOB pages (LCX_TEXT_MIX, LCX_TEXT_TREE) keep their slots as a heap does: LOB links
    /// address fragments by page and slot, so a delete empties its slot and an insert takes the
    /// slot it names, the other fragments staying where their links point.
    #[test]
    fn lob_pages_keep_their_slots() {
        let base = page(&[b"lob-0", b"lob-1", b"lob-2"], BASE_LSN, 0);
        for context in [Context::TEXT_MIX.0, Context::TEXT_TREE.0] {
            let records = [
                (NEXT_LSN, op(0x03, context, 0, 1, BASE_LSN, 0, &[b"lob-1"])),
                (LSN_A, op(0x02, context, 0, 3, NEXT_LSN, 0, &[b"lob-3"])),
                (LSN_B, op(0x04, context, 0, 2, LSN_A, 4, &[b"2", b"X"])),
            ];
            let p = run(base.clone(), &records, StopPoint::End).1.unwrap();
            assert_eq!(read_u16(&p, 22), Some(4));
            assert_eq!(read_u16(&p, slot_entry(1)), Some(0), "the deleted fragment's slot is empty");
            assert_eq!(slot_row(&p, 0, 5), Some(&b"lob-0"[..]));
            assert_eq!(slot_row(&p, 2, 5), Some(&b"lob-X"[..]));
            assert_eq!(slot_row(&p, 3, 5), Some(&b"lob-3"[..]));
        }
    }

    /// A page-operation record on [`PAGE`] with the operation's own fields from +0x30 on.
    fn page_op(
        op: u8,
        context: u8,
        (previous, slot): (Lsn, u16),
        fields: &[(usize, &[u8])],
        fixed: usize,
        images: &[&[u8]],
    ) -> Vec<u8> {
        let mut all: Vec<(usize, &[u8])> = vec![];
        let page = PAGE.page.to_le_bytes();
        let file = PAGE.file.to_le_bytes();
        let slot = slot.to_le_bytes();
        let previous = lsn_bytes(previous);
        // The page's allocation unit: m_objId 29, m_indexId 256 (StopAt's dbo.steps).
        let (object, index) = (29u32.to_le_bytes(), 256u16.to_le_bytes());
        all.extend([(0x18, &page[..]), (0x1c, &file[..]), (0x1e, &slot[..]), (0x20, &object[..])]);
        all.extend([(0x24, &previous[..]), (0x2e, &index[..])]);
        all.extend_from_slice(fields);
        forge_record(op, context, 0, &all, fixed, images)
    }

    /// LOP_FORMAT_PAGE of [`PAGE`] as `page_type` (fields as 13:a9:7 and 13:a9:10 of
    /// StopAt_1.trn lay them out).
    fn format(page_type: u8, type_flags: u8, pminlen: u16, start: Option<PageId>) -> Vec<u8> {
        let pminlen = pminlen.to_le_bytes();
        let mut start_page = [0u8; 6];
        if let Some(s) = start {
            start_page[..4].copy_from_slice(&s.page.to_le_bytes());
            start_page[4..].copy_from_slice(&s.file.to_le_bytes());
        }
        let fields = [(0x30, &[page_type, type_flags, 0][..]), (0x3a, &pminlen[..]), (0x44, &start_page[..])];
        page_op(0x01, Context::HEAP.0, (Lsn { vlf: 0, block: 0, slot: 1 }, 0xffff), &fields, 0x50, &[])
    }

    #[test]
    fn format_page_builds_an_empty_data_page_or_a_fresh_iam_page() {
        // Over an old page at an earlier LSN, whatever it held.
        let old = page(&[b"stale row"], BASE_LSN, 0);
        let p = run(old, &[(NEXT_LSN, format(1, 4, 16, None))], StopPoint::End).1.unwrap();
        assert_eq!((p[0], p[1], p[2], p[3]), (1, 1, 4, 0));
        assert_eq!((read_u16(&p, 6), read_u16(&p, 14), read_u16(&p, 22)), (Some(256), Some(16), Some(0)));
        assert_eq!(crate::bytes::read_u32(&p, 24), Some(29));
        assert_eq!((read_u16(&p, 28), read_u16(&p, 30)), (Some(8096), Some(96)));
        assert_eq!((crate::bytes::read_u32(&p, 32), read_u16(&p, 36)), (Some(153), Some(1)));
        assert_eq!(Lsn::parse(&p, 40), Some(NEXT_LSN));
        assert!(p[96..].iter().all(|b| *b == 0));
        // An IAM page: its header record (the start page at 40) and its extent bitmap, as
        // crate::page::allocation reads them.
        let iam = format(10, 0, 90, Some(PageId::new(1, 0)));
        let p = run(page(&[], BASE_LSN, 0), &[(NEXT_LSN, iam)], StopPoint::End).1.unwrap();
        let read = crate::page::Page::new(p.clone().into_boxed_slice(), PAGE).unwrap();
        let decoded = crate::page::allocation::IamPage::parse(&read).unwrap();
        assert_eq!(decoded.start, PageId::new(1, 0));
        assert!(decoded.single_pages.is_empty() && decoded.extents.is_empty());
        assert_eq!((read_u16(&p, 22), read_u16(&p, 28), read_u16(&p, 30)), (Some(2), Some(6), Some(8182)));
    }

    #[test]
    fn format_page_refuses_fields_it_does_not_know_and_types_it_does_not_build() {
        let mut unknown = format(1, 4, 16, None);
        unknown[0x43] = 7;
        let e = run(page(&[], BASE_LSN, 0), &[(NEXT_LSN, unknown)], StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("format field not understood (+0x43 = 0x07)"), "{e}");
        let pfs = format(11, 0, 0, None);
        let e = run(page(&[], BASE_LSN, 0), &[(NEXT_LSN, pfs)], StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("formats a page of type 11"), "{e}");
    }

    fn id_bytes(id: PageId) -> [u8; 6] {
        let mut b = [0u8; 6];
        b[..4].copy_from_slice(&id.page.to_le_bytes());
        b[4..].copy_from_slice(&id.file.to_le_bytes());
        b
    }

    /// A page split as 18:118 of the 2008 chain logs it: the new page formatted with its links
    /// (+0x34 previous, +0x3c next), the moved rows inserted in one record (rows, then two empty
    /// images), and LOP_DELETE_SPLIT taking the last rows off the old page.
    #[test]
    fn a_split_formats_the_new_page_with_its_links_and_moves_the_last_rows() {
        let (prev, next) = (PageId::new(1, 57), PageId::new(1, 56));
        let mut linked = format(1, 4, 17, None);
        linked[0x34..0x3a].copy_from_slice(&id_bytes(prev));
        linked[0x3c..0x42].copy_from_slice(&id_bytes(next));
        let rows: Vec<Vec<u8>> = (0..3u8).map(|k| vec![0x30, 0, 8, 0, k, k, k, k, 3, 0, 0]).collect();
        let images: Vec<&[u8]> = rows.iter().map(Vec::as_slice).chain([&[][..], &[][..]]).collect();
        let moved = op(0x02, 2, 0, 0, NEXT_LSN, 0, &images);
        let after = Lsn { slot: 3, ..NEXT_LSN };
        let p = run(page(&[], BASE_LSN, 0), &[(NEXT_LSN, linked), (after, moved)], StopPoint::End).1.unwrap();
        assert_eq!((PageId::from_bytes(&p[8..14]), PageId::from_bytes(&p[16..22])), (Some(prev), Some(next)));
        assert_eq!(read_u16(&p, 22), Some(3));
        for (slot, row) in rows.iter().enumerate() {
            assert_eq!(slot_row(&p, slot, row.len()), Some(&row[..]), "slot {slot}");
        }

        // The old page: five rows, the last three moved (33 bytes + 3 slot entries).
        let kept: Vec<Vec<u8>> = (7..9u8).map(|k| vec![0x30, 0, 8, 0, k, k, k, k, 3, 0, 0, k]).collect();
        let all: Vec<&[u8]> = kept.iter().chain(&rows).map(Vec::as_slice).collect();
        let old = page(&all, BASE_LSN, 0);
        let split = |slot: u16, count: u16| {
            let new_page = id_bytes(PageId::new(1, 165));
            let fields = [(0x30, &new_page[..]), (0x36, &count.to_le_bytes()[..]), (0x38, &39u16.to_le_bytes()[..])];
            page_op(0x0b, 2, (BASE_LSN, slot), &fields, 0x3c, &[])
        };
        let p = run(old.clone(), &[(NEXT_LSN, split(2, 3))], StopPoint::End).1.unwrap();
        assert_eq!(read_u16(&p, 22), Some(2));
        assert_eq!((slot_row(&p, 0, 12), slot_row(&p, 1, 12)), (Some(&kept[0][..]), Some(&kept[1][..])));
        assert_eq!(read_u16(&p, 30), Some(HEADER_SIZE as u16 + 24), "the kept rows packed");
        assert_eq!(read_u16(&p, 28), read_u16(&old, 28).map(|f| f + 39));
        let e = run(old, &[(NEXT_LSN, split(1, 3))], StopPoint::End).1.unwrap_err().to_string();
        assert!(
            e.contains("LOP_DELETE_SPLIT") && e.contains("moves 3 rows from slot 1, but the page has 5 slots"),
            "{e}"
        );
    }

    /// A sys.sysallocunits row: 73 fixed bytes, pgfirst at 27, pgroot at 33, pgfirstiam at 39.
    fn allocunit_row() -> Vec<u8> {
        let mut row = vec![0u8; 77];
        row[0] = 0x10;
        row[2] = 73;
        row
    }

    #[test]
    fn root_change_sets_a_page_id_of_an_allocation_unit_from_its_old_value() {
        let row = allocunit_row();
        let change = |previous: Lsn, new: PageId, old: PageId, column: u16| {
            let id = |p: PageId| {
                let mut b = [0u8; 6];
                b[..4].copy_from_slice(&p.page.to_le_bytes());
                b[4..].copy_from_slice(&p.file.to_le_bytes());
                b
            };
            let (new, old, column) = (id(new), id(old), column.to_le_bytes());
            page_op(0x13, 0x02, (previous, 0), &[(0x48, &new[..]), (0x50, &old[..]), (0x58, &column[..])], 0x60, &[])
        };
        let none = PageId::new(0, 0);
        let records = [
            (NEXT_LSN, change(BASE_LSN, PageId::new(1, 22), none, 39)),
            (LSN_A, change(NEXT_LSN, PageId::new(1, 21), none, 27)),
        ];
        let p = run(page(&[&row], BASE_LSN, 0), &records, StopPoint::End).1.unwrap();
        assert_eq!(&p[96 + 27..96 + 45], &[21, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 22, 0, 0, 0, 1, 0]);
        // A row whose column is not the old value: refused.
        let records = [(NEXT_LSN, change(BASE_LSN, PageId::new(1, 22), PageId::new(1, 5), 39))];
        let e = run(page(&[&row], BASE_LSN, 0), &records, StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("LOP_ROOT_CHANGE") && e.contains("other bytes than its before image at offset 39"), "{e}");
    }

    /// A PFS record: 4-byte header, then one byte per page.
    fn pfs_row(bytes: &[(usize, u8)]) -> Vec<u8> {
        let mut row = vec![0u8; 4 + 64];
        row[2..4].copy_from_slice(&68u16.to_le_bytes());
        for (page, b) in bytes {
            row[4 + page] = *b;
        }
        row
    }

    #[test]
    fn pfs_changes_set_bits_free_space_and_header_bytes() {
        // Page 5 has ghosts (0x08) and is allocated (0x40); page 9 is a mixed page (0x20).
        let row = pfs_row(&[(5, 0x48), (9, 0x20)]);
        let mut base = page(&[&row], BASE_LSN, 0);
        base[2] = 1;
        let ghost_bit = (8 * (4 + 5) + 3u16).to_le_bytes();
        let set_bits = page_op(
            0x07,
            Context::PFS.0,
            (BASE_LSN, 0),
            &[(0x30, &ghost_bit[..]), (0x32, &[1, 0, 0, 0][..])],
            0x36,
            &[],
        );
        let free_space = page_op(0x0a, Context::PFS.0, (NEXT_LSN, 0), &[(0x30, &[13, 0, 0x61, 0x60][..])], 0x34, &[]);
        let header = page_op(0x05, Context::PFS.0, (LSN_A, 0), &[(0x38, &[2, 0][..])], 0x3e, &[&[1], &[0]]);
        let after_a = Lsn { vlf: 25, block: 0xbf, slot: 1 };
        let records = [(NEXT_LSN, set_bits), (LSN_A, free_space), (after_a, header)];
        let p = run(base, &records, StopPoint::End).1.unwrap();
        // The ghost bit went; page 9's byte took the new free-space value (the old one is not
        // compared: 0x20 on the page, 0x60 in the record); the type flag bits 1 -> 0.
        assert_eq!((p[96 + 4 + 5], p[96 + 4 + 9], p[2]), (0x40, 0x61, 0));
    }

    #[test]
    fn modify_columns_changes_each_range_and_expunge_removes_a_ghost() {
        let row: &[u8] = b"\x10\x00abcdefghijklmnop";
        // Ranges at 3 (1 byte) and 10 (2 bytes): offsets twice, lengths, two unused images, then
        // before and after of each.
        let images: [&[u8]; 8] = [&[3, 0, 3, 0, 10, 0, 10, 0], &[1, 0, 2, 0], b"key", b"k", b"b", b"B", b"ij", b"IJ"];
        let record = page_op(0x06, 0x02, (BASE_LSN, 0), &[], 0x3e, &images);
        let p = run(page(&[row], BASE_LSN, 0), &[(NEXT_LSN, record)], StopPoint::End).1.unwrap();
        assert_eq!(slot_row(&p, 0, row.len()), Some(&b"\x10\x00aBcdefghIJklmnop"[..]));
        // Expunge of slot 1, a ghost index record (type 6): it goes, slot 2 moves down.
        let rows: [&[u8]; 3] = [b"\x06row0", b"\x0crow1", b"\x06row2"];
        let mut base = page(&rows, BASE_LSN, 0);
        base[58] = 1;
        let expunge = page_op(0x0d, 0x03, (BASE_LSN, 1), &[], 0x3e, &[]);
        let p = run(base.clone(), &[(NEXT_LSN, expunge)], StopPoint::End).1.unwrap();
        assert_eq!((read_u16(&p, 22), read_u16(&p, 58)), (Some(2), Some(0)));
        assert_eq!(slot_row(&p, 1, 5), Some(rows[2]));
        // Slot 0 holds an index record, not a ghost: refused.
        let expunge = page_op(0x0d, 0x03, (BASE_LSN, 0), &[], 0x3e, &[]);
        let e = run(base, &[(NEXT_LSN, expunge)], StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("LOP_EXPUNGE_ROWS") && e.contains("record of type 3, not a ghost"), "{e}");
    }

    #[test]
    fn a_slot_count_past_the_page_is_damage_not_a_panic() {
        // 5,000 slots need 10,000 bytes of slot array: more than the page (found by fuzzing).
        let mut base = page(&[b"0123456789"], BASE_LSN, 0);
        base[22..24].copy_from_slice(&5000u16.to_le_bytes());
        let records = [(NEXT_LSN, op(0x04, Context::HEAP.0, 0, 0, BASE_LSN, 0, &[b"0", b"X"]))];
        let e = run(base, &records, StopPoint::End).1.unwrap_err().to_string();
        assert!(e.contains("damaged page (slot count 5000"), "{e}");
    }

    #[test]
    fn file_header_changes_write_their_after_image_and_keep_the_page_lsn() {
        let file_header = Lsn { vlf: 0, block: 0, slot: 1 };
        let base = page(&[b"0123456789"], file_header, 0);
        // The before image differs from the page at byte 1 (as a backup's copy may): not checked.
        let images: [&[u8]; 3] = [b"0X23456789", b"01234abcde", &[0u8; 10]];
        let record = page_op(0x10, 0x11, (Lsn::default(), 0), &[(0x38, &[0, 0][..])], 0x3e, &images);
        let (redo, read) = run(base, &[(NEXT_LSN, record.clone())], StopPoint::End);
        let p = read.unwrap();
        assert_eq!(slot_row(&p, 0, 10), Some(&b"01234abcde"[..]));
        assert_eq!(Lsn::parse(&p, 40), Some(file_header));
        assert_eq!(redo.applied(), 1);
        // Twice: the second finds its after image there and changes nothing.
        let (redo, read) = run(p.clone(), &[(NEXT_LSN, record)], StopPoint::End);
        assert_eq!((read.unwrap(), redo.applied(), redo.changed_pages()), (p, 0, 0));
    }

    #[test]
    fn a_stop_time_is_a_datetime() {
        // 2017-06-01 is 42,885 days after 1900-01-01 (117 years, 29 of them leap, then 151
        // days of 2017); 13:22:44 is 48,164 s, 300 ticks each.
        assert_eq!(
            StopPoint::parse_time("2017-06-01 13:22:44").unwrap(),
            StopPoint::Time { days: 42_885, ticks: 14_449_200 }
        );
        assert_eq!(
            StopPoint::parse_time("2017-06-01T13:22:44.010").unwrap(),
            StopPoint::Time { days: 42_885, ticks: 14_449_203 }
        );
        for bad in ["yesterday", "2017-13-01 00:00:00", "2017-06-01 24:00:00", "2017-06-01 12:00:00.x"] {
            assert!(StopPoint::parse_time(bad).is_err(), "{bad}");
        }
    }
}
