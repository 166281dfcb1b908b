//! One log record, a view over its bytes in a [`super::block::LogBlock`].
//!
//! ```text
//!  +0x00 u16  (0)
//!  +0x02 u16  fixed length: bytes of the fixed part, this header included
//!  +0x04 10   previous LSN of the transaction (u32 VLF, u32 block, u16 slot; zero for none)
//!  +0x0e u16  flags
//!  +0x10 6    transaction id: u32 low, u16 high (fn_dblog shows it high:low, `0000:00000287`)
//!  +0x16 u8   operation (LOP_*)         +0x17 u8 context (LCX_*)
//!  page operations (LOP_* below 0x80):
//!  +0x18 u32 page, u16 file  +0x1e u16 slot  +0x20 u32 the page's allocation unit, middle part
//!  +0x24 10 the page's previous LSN  +0x2e u16 the allocation unit, high part (the page
//!            header's m_objId and m_indexId: 29 and 256 on the pages of StopAt's dbo.steps,
//!            allocation unit 72057594039828480; 99 and 0 on allocation pages)
//!  +0x30 u64 partition id (the rowset: sys.partitions.partition_id; for allocation pages the
//!            id of their rowset, 99 << 16)      +0x38 u16 offset in row
//!  (each operation's own fields past +0x30: see [`super::redo`])
//!  LOP_BEGIN_XACT:  +0x28 u32 ticks (1/300 s) and +0x2c u32 days since 1900-01-01: begin time
//!  LOP_COMMIT_XACT: +0x18 u32 ticks and +0x1c u32 days: end time
//!  fixed length: u16 count of row images, their u16 lengths, padding to 4 bytes, then the images,
//!                each padded to 4 bytes (absent where the record ends with its fixed part:
//!                LOP_COUNT_DELTA, LOP_ROOT_CHANGE, LOP_HOBT_DELTA, LOP_BEGIN_CKPT, ...)
//!  LOP_BEGIN_XACT images: transaction name (UTF-16), user SID
//!  LOP_COUNT_DELTA (fixed length 0xd0, no images; page and slot: the system table row whose
//!  cached counts change): +0x30 u64 which counts, then from +0x50:
//!    0 or 3  sys.sysallocunits: 16-byte entries (i64 amount added, u32 offset in the row, u32
//!            size 8) up to an entry of zeros: offsets 45 pcused, 53 pcdata, 61 pcreserved
//!    1       sys.sysrowsets: +0x50 i64 amount, +0x58 u32 offset 31 (rcrows: the row count)
//!    2       sys.sysrscols:  +0x50 i64 amount, +0x60 u32 offset 20, +0x64 u32 size 8
//!            (rcmodified: the column's modification counter; +0x58 not known)
//! ```
//!
//! LOP_COUNT_DELTA was read from its 93 records in `chains/difftest/difftest-full.bak` and the
//! 134 of the cube-query-history log backup, 120 of `bak/ros1991-amigos.api__database.bak` and
//! 66 of `bak/dataplat-appveyor-lab__restoretimeclean.bak`: each kind's records are on pages of
//! that one system table (as `mdfkit page` names their owner), and the offsets are those of its
//! bigint count columns in the row (sysallocunits: pgfirst 27, pgroot 33, pgfirstiam 39 as
//! LOP_ROOT_CHANGE writes them, then pcused, pcdata, pcreserved; sysrowsets: rowsetid 4,
//! ownertype 12, idmajor 13, idminor 17, numpart 21, status 25, fgidfs 29, rcrows 31;
//! sysrscols: rsid 4, rscolid 12, hbcolid 16, rcmodified 20). A record whose kind or offsets
//! differ is listed undecoded.
//!
//! Sources: the header fields (fixed length, previous LSN, flags, transaction id, operation,
//! context, page, slot, partition, row-image count and lengths, the begin and end times)
//! as public forensic readers of the log decode them; the operation and context numbers are
//! SQL Server's own (`fn_dblog`'s Operation and Context, as published in public lists of
//! `LOP_*` / `LCX_*` values). Checked on the corpus: every record's row images end where the
//! next slot starts, the page ids of LCX_BOOT_PAGE_CKPT records are 1:9 (the boot page),
//! `stopat-later-logs/StopAt_21.trn`'s LOP_BEGIN_XACT at 19:204:1 names `dbatoolstest` and
//! begins at 2020-05-12 13:31:19.610, inside that log backup's start and finish; the inserts
//! into `dbo.steps` in RestoreTimeClean's log backups carry 72057594038845440, the
//! `partition_id` (not the allocation unit id, 72057594039762944) `sys.partitions` gives it.

use crate::backup::Lsn;
use crate::bytes::{read_u16, read_u32, read_u64, utf16le};
use crate::page::PageId;
use crate::value::Value;

/// What a LOP_COUNT_DELTA changes: cached counts in a row of a system table (the record's page
/// and slot), each column with the amount added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountDelta {
    /// The system base table: `sys.sysallocunits` (page counts of an allocation unit),
    /// `sys.sysrowsets` (a partition's row count), `sys.sysrscols` (a column's modification
    /// counter).
    pub table: &'static str,
    /// Each count changed: its column and the amount added.
    pub deltas: Vec<(&'static str, i64)>,
}

impl std::fmt::Display for CountDelta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.table)?;
        for (k, (column, amount)) in self.deltas.iter().enumerate() {
            write!(f, "{} {column} {amount:+}", if k == 0 { "" } else { "," })?;
        }
        Ok(())
    }
}

/// Bytes of the header common to every record.
pub const RECORD_HEADER_SIZE: usize = 0x18;

/// An operation (`LOP_*`) by SQL Server's own number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Operation(pub u8);

impl Operation {
    /// `LOP_FORMAT_PAGE`: a page (re)initialised, its header written.
    pub const FORMAT_PAGE: Operation = Operation(0x01);
    /// `LOP_INSERT_ROWS`: a record inserted at a slot (its image is the record).
    pub const INSERT_ROWS: Operation = Operation(0x02);
    /// `LOP_DELETE_ROWS`: a record deleted or made a ghost (its image is the record).
    pub const DELETE_ROWS: Operation = Operation(0x03);
    /// `LOP_MODIFY_ROW`: bytes of a record replaced at an offset (before and after images).
    pub const MODIFY_ROW: Operation = Operation(0x04);
    /// `LOP_MODIFY_HEADER`: bytes of a page header replaced (before and after images).
    pub const MODIFY_HEADER: Operation = Operation(0x05);
    /// `LOP_MODIFY_COLUMNS`: several ranges of a record replaced.
    pub const MODIFY_COLUMNS: Operation = Operation(0x06);
    /// `LOP_SET_BITS`: bits of an allocation page's record set or cleared.
    pub const SET_BITS: Operation = Operation(0x07);
    /// `LOP_SET_FREE_SPACE`: one page's byte in a PFS page changed.
    pub const SET_FREE_SPACE: Operation = Operation(0x0a);
    /// `LOP_DELETE_SPLIT`: the rows a page split moved to the new page taken off the old one.
    pub const DELETE_SPLIT: Operation = Operation(0x0b);
    /// `LOP_EXPUNGE_ROWS`: a ghost record removed (ghost cleanup).
    pub const EXPUNGE_ROWS: Operation = Operation(0x0d);
    /// `LOP_FILE_HDR_MODIFY`: the file header record (page 0 of a file) changed.
    pub const FILE_HDR_MODIFY: Operation = Operation(0x10);
    /// `LOP_COUNT_DELTA`: cached row and page counts of a rowset changed.
    pub const COUNT_DELTA: Operation = Operation(0x12);
    /// `LOP_ROOT_CHANGE`: a page address of an allocation unit (first, root, first IAM page)
    /// changed in `sys.sysallocunits`.
    pub const ROOT_CHANGE: Operation = Operation(0x13);
    /// `LOP_BEGIN_XACT`: a transaction begins (its name, begin time and user SID).
    pub const BEGIN_XACT: Operation = Operation(0x80);
    /// `LOP_COMMIT_XACT`: a transaction commits (its end time).
    pub const COMMIT_XACT: Operation = Operation(0x81);
    /// `LOP_ABORT_XACT`: a transaction rolled back.
    pub const ABORT_XACT: Operation = Operation(0x82);

    /// `LOP_INSERT_ROWS`, ..., or `LOP_0xNN` for a number without a public name.
    pub fn name(self) -> String {
        match OPERATIONS.iter().find(|(n, _)| *n == self.0) {
            Some((_, name)) => format!("LOP_{name}"),
            None => format!("LOP_{:#04x}", self.0),
        }
    }

    /// The operation a `LOP_...` name (or a bare number) stands for.
    pub fn from_name(name: &str) -> Option<Operation> {
        let bare = name.trim().to_ascii_uppercase();
        let bare = bare.strip_prefix("LOP_").unwrap_or(&bare);
        if let Some(hex) = bare.strip_prefix("0X") {
            return u8::from_str_radix(hex, 16).ok().map(Operation);
        }
        OPERATIONS.iter().find(|(_, n)| *n == bare).map(|(v, _)| Operation(*v))
    }

    /// Operations on one page: they carry a page id, slot and partition id.
    pub fn is_page_operation(self) -> bool {
        self.0 < 0x80
    }
}

/// A context (`LCX_*`) by SQL Server's own number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Context(pub u8);

impl Context {
    /// `LCX_HEAP`: a heap's data page.
    pub const HEAP: Context = Context(0x01);
    /// `LCX_TEXT_MIX`: a LOB page holding fragments of several values.
    pub const TEXT_MIX: Context = Context(0x05);
    /// `LCX_TEXT_TREE`: an interior page of a large LOB value's tree.
    pub const TEXT_TREE: Context = Context(0x06);
    /// `LCX_PFS`: a PFS page.
    pub const PFS: Context = Context(0x0b);
    /// `LCX_MARK_AS_GHOST`: a record marked as a ghost rather than removed.
    pub const MARK_AS_GHOST: Context = Context(0x13);
    /// `LCX_BOOT_PAGE_CKPT`: the checkpoint fields of the boot page.
    pub const BOOT_PAGE_CKPT: Context = Context(0x17);
    /// `LCX_DIFF_MAP`: a differential change map page.
    pub const DIFF_MAP: Context = Context(0x18);
    /// `LCX_ML_MAP`: a minimally logged change map page.
    pub const ML_MAP: Context = Context(0x19);

    /// `LCX_HEAP`, ..., or `LCX_0xNN` for a number without a public name.
    pub fn name(self) -> String {
        match CONTEXTS.iter().find(|(n, _)| *n == self.0) {
            Some((_, name)) => format!("LCX_{name}"),
            None => format!("LCX_{:#04x}", self.0),
        }
    }
}

const OPERATIONS: &[(u8, &str)] = &[
    (0x00, "NULL"),
    (0x01, "FORMAT_PAGE"),
    (0x02, "INSERT_ROWS"),
    (0x03, "DELETE_ROWS"),
    (0x04, "MODIFY_ROW"),
    (0x05, "MODIFY_HEADER"),
    (0x06, "MODIFY_COLUMNS"),
    (0x07, "SET_BITS"),
    (0x0a, "SET_FREE_SPACE"),
    (0x0b, "DELETE_SPLIT"),
    (0x0c, "UNDO_DELETE_SPLIT"),
    (0x0d, "EXPUNGE_ROWS"),
    (0x10, "FILE_HDR_MODIFY"),
    (0x11, "CLEAR_GAM_BITS"),
    (0x12, "COUNT_DELTA"),
    (0x13, "ROOT_CHANGE"),
    (0x14, "COMPRESSION_INFO"),
    (0x15, "ENCRYPT_PAGE"),
    (0x16, "INSYSXACT"),
    (0x7e, "REMOVE_VERSION_INFO"),
    (0x80, "BEGIN_XACT"),
    (0x81, "COMMIT_XACT"),
    (0x82, "ABORT_XACT"),
    (0x83, "PREP_XACT"),
    (0x84, "MARK_SAVEPOINT"),
    (0x85, "FORGET_XACT"),
    (0x86, "CREATE_FILE"),
    (0x87, "DROP_FILE"),
    (0x89, "HOBT_DDL"),
    (0x8a, "IDENT_NEWVAL"),
    (0x8b, "IDENT_SENTVAL"),
    (0x8c, "HOBT_DELTA"),
    (0x8d, "LOCK_XACT"),
    (0x8e, "CREATE_STREAMFILE"),
    (0x8f, "MIGRATE_LOCKS"),
    (0x90, "DROP_STREAMFILE"),
    (0x91, "FS_DOWNLEVEL_OP"),
    (0x92, "MODIFY_STREAMFILE_HDR"),
    (0x94, "BP_DBVER"),
    (0x95, "COPY_VERSION_INFO"),
    (0x96, "BEGIN_CKPT"),
    (0x98, "XACT_CKPT"),
    (0x99, "END_CKPT"),
    (0x9a, "BUF_WRITE"),
    (0xa0, "BEGIN_RECOVERY"),
    (0xa1, "END_RECOVERY"),
    (0xad, "CREATE_INDEX"),
    (0xae, "DROP_INDEX"),
    (0xb0, "CREATE_ALLOCCHAIN"),
    (0xc8, "REPL_COMMAND"),
    (0xc9, "BEGIN_UPDATE"),
    (0xca, "END_UPDATE"),
    (0xcb, "TEXT_POINTER"),
    (0xcc, "TEXT_INFO_BEGIN"),
    (0xcd, "TEXT_INFO_END"),
    (0xce, "REPL_NOOP"),
    (0xcf, "TEXT_VALUE"),
    (0xd3, "SHRINK_NOOP"),
    (0xd6, "BULK_EXT_ALLOCATION"),
    (0xd7, "SECURITY_OP"),
    (0xdc, "RANGE_INSERT"),
    (0xdd, "INVALIDATE_CACHE"),
];

const CONTEXTS: &[(u8, &str)] = &[
    (0x00, "NULL"),
    (0x01, "HEAP"),
    (0x02, "CLUSTERED"),
    (0x03, "INDEX_LEAF"),
    (0x04, "INDEX_INTERIOR"),
    (0x05, "TEXT_MIX"),
    (0x06, "TEXT_TREE"),
    (0x07, "DIAGNOSTICS"),
    (0x08, "GAM"),
    (0x09, "SGAM"),
    (0x0a, "IAM"),
    (0x0b, "PFS"),
    (0x0c, "IDENTITY_VALUE"),
    (0x0d, "OBJECT_ID"),
    (0x0e, "NONSYS_SPLIT"),
    (0x11, "FILE_HEADER"),
    (0x12, "SCHEMA_VERSION"),
    (0x13, "MARK_AS_GHOST"),
    (0x14, "BOOT_PAGE"),
    (0x15, "SYSCONFIG_PAGE"),
    (0x17, "BOOT_PAGE_CKPT"),
    (0x18, "DIFF_MAP"),
    (0x19, "ML_MAP"),
    (0x1a, "REMOVE_VERSION_INFO"),
    (0x1b, "DBCC_FORMATTED"),
    (0x1c, "UNLINKED_REORG_PAGE"),
    (0x1d, "BULK_OPERATION_PAGE"),
    (0x1e, "TRACKED_XDES"),
    (0x1f, "ENCRYPT_UNALLOC_PAGE"),
    (0x20, "SORT_PAGE"),
];

/// A transaction id, 48 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransactionId(pub u64);

impl std::fmt::Display for TransactionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04x}:{:08x}", self.0 >> 32, self.0 & 0xffff_ffff)
    }
}

impl std::str::FromStr for TransactionId {
    type Err = String;
    /// `0000:00000287` as fn_dblog writes it, or the low part alone (`287`), in hex.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("transaction id {s:?}: expected HHHH:LLLLLLLL in hex, as fn_dblog shows it");
        let (high, low) = s.trim().split_once(':').unwrap_or(("0", s.trim()));
        let high = u64::from_str_radix(high, 16).map_err(|_| bad())?;
        let low = u64::from_str_radix(low, 16).map_err(|_| bad())?;
        if high > 0xffff || low > 0xffff_ffff {
            return Err(bad());
        }
        Ok(TransactionId(high << 32 | low))
    }
}

/// A log record: its LSN and its bytes (up to the next record; padding included).
#[derive(Debug, Clone, Copy)]
pub struct LogRecord<'a> {
    /// The record's LSN: its block's VLF sequence and block offset, and its slot in the block.
    pub lsn: Lsn,
    bytes: &'a [u8],
}

impl<'a> LogRecord<'a> {
    /// A record over `bytes`; `Err` when they are too short for the common header or the
    /// fixed length it gives.
    pub fn parse(lsn: Lsn, bytes: &'a [u8]) -> Result<LogRecord<'a>, String> {
        if bytes.len() < RECORD_HEADER_SIZE {
            return Err(format!("{} bytes, a log record header needs {RECORD_HEADER_SIZE}", bytes.len()));
        }
        let record = LogRecord { lsn, bytes };
        let fixed = usize::from(record.fixed_length());
        if fixed < RECORD_HEADER_SIZE || fixed > bytes.len() {
            return Err(format!("fixed length {fixed} is outside {RECORD_HEADER_SIZE}..{}", bytes.len()));
        }
        Ok(record)
    }

    /// Bytes the record takes in its block, up to the next record (alignment included).
    pub fn length(&self) -> usize {
        self.bytes.len()
    }

    /// +0x02: bytes of the fixed part, the common header included.
    pub fn fixed_length(&self) -> u16 {
        read_u16(self.bytes, 2).unwrap_or(0)
    }

    /// +0x04: the LSN of the transaction's previous record (zero for none).
    pub fn previous_lsn(&self) -> Lsn {
        Lsn::parse(self.bytes, 4).unwrap_or_default()
    }

    /// +0x0e: the record's flags (their meaning is not known yet; shown as stored).
    pub fn flags(&self) -> u16 {
        read_u16(self.bytes, 0x0e).unwrap_or(0)
    }

    /// +0x10: the transaction id (u32 low, u16 high).
    pub fn transaction_id(&self) -> TransactionId {
        let low = u64::from(read_u32(self.bytes, 0x10).unwrap_or(0));
        let high = u64::from(read_u16(self.bytes, 0x14).unwrap_or(0));
        TransactionId(high << 32 | low)
    }

    /// +0x16: the operation (`LOP_*`).
    pub fn operation(&self) -> Operation {
        Operation(self.bytes[0x16])
    }

    /// +0x17: the context (`LCX_*`).
    pub fn context(&self) -> Context {
        Context(self.bytes[0x17])
    }

    /// A page field of a page operation, where the fixed part holds it.
    fn page_field<T>(&self, end: usize, read: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
        (self.operation().is_page_operation() && end <= usize::from(self.fixed_length())).then(|| read(self.bytes))?
    }

    /// +0x18 (u32 page) and +0x1c (u16 file): the page a page operation changes.
    pub fn page_id(&self) -> Option<PageId> {
        self.page_field(0x1e, |b| Some(PageId::new(read_u16(b, 0x1c)?, read_u32(b, 0x18)?)))
    }

    /// +0x1e: the slot a page operation changes.
    pub fn slot(&self) -> Option<u16> {
        self.page_field(0x20, |b| read_u16(b, 0x1e))
    }

    /// The rowset (`sys.partitions.partition_id`) the page belongs to: +0x30, but +0x38 for
    /// LOP_ROOT_CHANGE (the rowset whose `sys.sysallocunits` row it changes: StopAt_1.trn's
    /// 13:a9:e carries 72057594038779904, the ownerid of the row it changes) and none for
    /// LOP_FORMAT_PAGE and LOP_FILE_HDR_MODIFY, whose +0x30 holds other fields (see
    /// [`super::redo`]).
    pub fn partition_id(&self) -> Option<u64> {
        match self.operation() {
            Operation::ROOT_CHANGE => self.page_field(0x40, |b| read_u64(b, 0x38)),
            // LOP_COUNT_DELTA's +0x30 says which counts it changes.
            Operation::FORMAT_PAGE | Operation::FILE_HDR_MODIFY | Operation::COUNT_DELTA => None,
            _ => self.page_field(0x38, |b| read_u64(b, 0x30)),
        }
    }

    /// A LOP_COUNT_DELTA decoded (see the module documentation); `None` for another record or
    /// one whose fields are not as the corpus shows them.
    pub fn count_delta(&self) -> Option<CountDelta> {
        if self.operation() != Operation::COUNT_DELTA {
            return None;
        }
        let fixed = usize::from(self.fixed_length());
        let field = |at: usize, len: usize| (at + len <= fixed).then(|| self.bytes.get(at..at + len)).flatten();
        let i64_at = |at: usize| field(at, 8).map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()));
        let u32_at = |at: usize| field(at, 4).and_then(|b| read_u32(b, 0));
        let one = |table: &'static str, column: &'static str, offset_at: usize, offset: u32| {
            (u32_at(offset_at)? == offset).then_some(())?;
            Some(CountDelta { table, deltas: vec![(column, i64_at(0x50)?)] })
        };
        match read_u64(self.bytes, 0x30)? {
            0 | 3 => {
                let mut deltas = Vec::new();
                for at in (0x50..fixed).step_by(16) {
                    let (amount, offset, size) = (i64_at(at)?, u32_at(at + 8)?, u32_at(at + 12)?);
                    if (amount, offset, size) == (0, 0, 0) {
                        break;
                    }
                    let column = match (offset, size) {
                        (45, 8) => "pcused",
                        (53, 8) => "pcdata",
                        (61, 8) => "pcreserved",
                        _ => return None,
                    };
                    deltas.push((column, amount));
                }
                Some(CountDelta { table: "sys.sysallocunits", deltas })
            }
            1 => one("sys.sysrowsets", "rcrows", 0x58, 31),
            2 => one("sys.sysrscols", "rcmodified", 0x60, 20),
            _ => None,
        }
    }

    /// +0x38: where in the record a page operation's change starts.
    pub fn offset_in_row(&self) -> Option<u16> {
        self.page_field(0x3a, |b| read_u16(b, 0x38))
    }

    /// The record's bytes, as the log block holds them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The LSN the page carried before this change (+0x24): redo applies the record only to a
    /// page at exactly that LSN.
    pub fn previous_page_lsn(&self) -> Option<Lsn> {
        self.page_field(0x2e, |b| Lsn::parse(b, 0x24))
    }

    /// The end time of a LOP_COMMIT_XACT / LOP_ABORT_XACT as SQL Server stores a `datetime`:
    /// (days since 1900-01-01, ticks of 1/300 s), for exact comparison with a stop time.
    pub fn end_time_raw(&self) -> Option<(u32, u32)> {
        matches!(self.operation(), Operation::COMMIT_XACT | Operation::ABORT_XACT)
            .then(|| Some((read_u32(self.bytes, 0x1c)?, read_u32(self.bytes, 0x18)?)))?
    }

    /// Begin time of a LOP_BEGIN_XACT, end time of a LOP_COMMIT_XACT / LOP_ABORT_XACT.
    pub fn time(&self) -> Option<Value> {
        let at = match self.operation() {
            Operation::BEGIN_XACT => 0x28,
            Operation::COMMIT_XACT | Operation::ABORT_XACT => 0x18,
            _ => return None,
        };
        if at + 8 > usize::from(self.fixed_length()) {
            return None;
        }
        let ticks = read_u32(self.bytes, at)?;
        let days = read_u32(self.bytes, at + 4)? as i32;
        Some(Value::DateTime { days, ticks })
    }

    /// The row images (row log contents) after the fixed part. `Ok(empty)` when the record
    /// ends with its fixed part; `Err` when their lengths run past the record.
    pub fn row_images(&self) -> Result<RowImages<'a>, String> {
        let fixed = usize::from(self.fixed_length());
        let empty = RowImages { bytes: &[], lengths: &[], at: 0, index: 0 };
        if fixed + 2 > self.bytes.len() {
            return Ok(empty);
        }
        let count = usize::from(read_u16(self.bytes, fixed).unwrap_or(0));
        let lengths_end = fixed + 2 + 2 * count;
        let Some(lengths) = self.bytes.get(fixed + 2..lengths_end) else {
            return Err(format!("{count} row images: their lengths run past the record's {} bytes", self.bytes.len()));
        };
        let first = lengths_end.div_ceil(4) * 4;
        let total: usize =
            lengths.chunks_exact(2).map(|l| usize::from(u16::from_le_bytes([l[0], l[1]])).div_ceil(4) * 4).sum();
        if first + total > self.bytes.len() {
            return Err(format!(
                "{count} row images of {total} bytes from +{first} run past the record's {} bytes",
                self.bytes.len()
            ));
        }
        Ok(RowImages { bytes: self.bytes, lengths, at: first, index: 0 })
    }

    /// The transaction name of a LOP_BEGIN_XACT (its first row image).
    pub fn transaction_name(&self) -> Option<String> {
        (self.operation() == Operation::BEGIN_XACT).then(|| self.row_images().ok()?.next().map(utf16le))?
    }

    /// The user SID of a LOP_BEGIN_XACT (its second row image), as `0x0105...`.
    pub fn user_sid(&self) -> Option<String> {
        if self.operation() != Operation::BEGIN_XACT {
            return None;
        }
        let sid = self.row_images().ok()?.nth(1)?;
        Some(format!("0x{}", sid.iter().map(|b| format!("{b:02X}")).collect::<String>()))
    }
}

/// The row images of a record, in order.
#[derive(Debug, Clone)]
pub struct RowImages<'a> {
    bytes: &'a [u8],
    lengths: &'a [u8],
    at: usize,
    index: usize,
}

impl<'a> Iterator for RowImages<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let l = self.lengths.get(2 * self.index..2 * self.index + 2)?;
        let len = usize::from(u16::from_le_bytes([l[0], l[1]]));
        self.index += 1;
        let image = self.bytes.get(self.at..self.at + len)?;
        self.at += len.div_ceil(4) * 4;
        Some(image)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record as SQL Server lays it out (see the drawing), built field by field.
    pub(crate) fn forge_record(
        op: u8,
        context: u8,
        xact: u64,
        fixed: &[(usize, &[u8])],
        fixed_len: usize,
        images: &[&[u8]],
    ) -> Vec<u8> {
        let mut r = vec![0u8; fixed_len];
        r[2..4].copy_from_slice(&(fixed_len as u16).to_le_bytes());
        r[0x10..0x14].copy_from_slice(&((xact & 0xffff_ffff) as u32).to_le_bytes());
        r[0x14..0x16].copy_from_slice(&((xact >> 32) as u16).to_le_bytes());
        r[0x16] = op;
        r[0x17] = context;
        for (at, bytes) in fixed {
            r[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        r.extend_from_slice(&(images.len() as u16).to_le_bytes());
        for i in images {
            r.extend_from_slice(&(i.len() as u16).to_le_bytes());
        }
        while !r.len().is_multiple_of(4) {
            r.push(0);
        }
        for i in images {
            r.extend_from_slice(i);
            while !r.len().is_multiple_of(4) {
                r.push(0);
            }
        }
        r
    }

    /// LOP_COUNT_DELTA records laid out as difftest-full.bak's 18:44:a (sysallocunits row
    /// 1:16 slot 7), 18:44:5 (sysrowsets 1:18 slot 54) and 18:44:2f (sysrscols 1:48 slot 11).
    #[test]
    fn count_deltas_name_their_table_and_columns() {
        let le = |v: u64| v.to_le_bytes();
        let (one, two, three, kind2) = (le(1), le(2), le(3), le(2));
        let pair = |offset: u32, size: u32| ((size as u64) << 32 | u64::from(offset)).to_le_bytes();
        let (p53, p45, p61) = (pair(53, 8), pair(45, 8), pair(61, 8));
        let units = forge_record(
            0x12,
            2,
            0,
            &[(0x30, &le(0)), (0x50, &one), (0x58, &p53), (0x60, &two), (0x68, &p45), (0x70, &two), (0x78, &p61)],
            0xd0,
            &[],
        );
        let lsn = Lsn { vlf: 24, block: 0x44, slot: 10 };
        let r = LogRecord::parse(lsn, &units).unwrap();
        assert_eq!(r.partition_id(), None, "+0x30 says which counts, not a partition");
        let d = r.count_delta().unwrap();
        assert_eq!(d.to_string(), "sys.sysallocunits pcdata +1, pcused +2, pcreserved +2");
        let (rows, at31) = (le(135), pair(31, 0));
        let rowsets = forge_record(0x12, 2, 0, &[(0x30, &one), (0x50, &rows), (0x58, &at31)], 0xd0, &[]);
        let d = LogRecord::parse(lsn, &rowsets).unwrap().count_delta().unwrap();
        assert_eq!((d.table, d.deltas), ("sys.sysrowsets", vec![("rcrows", 135)]));
        let (column, at20) = (le(0xe), pair(20, 8));
        let rscols =
            forge_record(0x12, 2, 0, &[(0x30, &kind2), (0x50, &one), (0x58, &column), (0x60, &at20)], 0xd0, &[]);
        let d = LogRecord::parse(lsn, &rscols).unwrap().count_delta().unwrap();
        assert_eq!(d.to_string(), "sys.sysrscols rcmodified +1");
        // Another offset, another kind: not decoded.
        let other = forge_record(0x12, 2, 0, &[(0x30, &one), (0x50, &rows), (0x58, &pair(33, 0))], 0xd0, &[]);
        assert_eq!(LogRecord::parse(lsn, &other).unwrap().count_delta(), None);
        let other = forge_record(0x12, 2, 0, &[(0x30, &le(9)), (0x50, &three)], 0xd0, &[]);
        assert_eq!(LogRecord::parse(lsn, &other).unwrap().count_delta(), None);
    }

    #[test]
    fn begin_xact_gives_name_time_and_sid() {
        let name: Vec<u8> = "dbatoolstest".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let sid = [1u8, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0];
        // 2020-05-12 is 43,961 days after 1900-01-01; 13:31:19.610 is 14,603,883 ticks of 1/300 s.
        let time = [(0x28, &14_603_883u32.to_le_bytes()[..]), (0x2c, &43_961u32.to_le_bytes()[..])];
        let bytes = forge_record(0x80, 0, 0x0001_0000_0220, &time, 64, &[&name, &sid]);
        let lsn = Lsn { vlf: 19, block: 204, slot: 1 };
        let r = LogRecord::parse(lsn, &bytes).unwrap();
        assert_eq!(r.operation().name(), "LOP_BEGIN_XACT");
        assert_eq!(r.transaction_id().to_string(), "0001:00000220");
        assert_eq!(r.transaction_name().as_deref(), Some("dbatoolstest"));
        assert_eq!(r.user_sid().as_deref(), Some("0x010500000000000515000000"));
        assert_eq!(r.time().unwrap().to_string(), "2020-05-12 13:31:19.610");
        assert!(r.page_id().is_none());
        assert_eq!(r.length(), bytes.len());
    }

    #[test]
    fn insert_rows_gives_page_slot_partition_and_images() {
        let fields = [
            (0x18, &153u32.to_le_bytes()[..]),
            (0x1c, &1u16.to_le_bytes()[..]),
            (0x1e, &7u16.to_le_bytes()[..]),
            (0x30, &72_057_594_038_845_440u64.to_le_bytes()[..]),
        ];
        let row = [0x10u8, 0, 0x13, 0, 1, 2, 3];
        let bytes = forge_record(0x02, 0x01, 0x288, &fields, 62, &[&row, &[], &[9u8; 5]]);
        let r = LogRecord::parse(Lsn::default(), &bytes).unwrap();
        assert_eq!(r.operation(), Operation::INSERT_ROWS);
        assert_eq!(r.context().name(), "LCX_HEAP");
        assert_eq!(r.page_id(), Some(PageId::new(1, 153)));
        assert_eq!(r.slot(), Some(7));
        assert_eq!(r.partition_id(), Some(72_057_594_038_845_440));
        let images: Vec<&[u8]> = r.row_images().unwrap().collect();
        assert_eq!(images, vec![&row[..], &[][..], &[9u8; 5][..]]);
        // Lengths that run past the record are an error, never a short read.
        let mut lying = bytes.clone();
        lying[64..66].copy_from_slice(&900u16.to_le_bytes());
        assert!(LogRecord::parse(Lsn::default(), &lying).unwrap().row_images().unwrap_err().contains("run past"));
        assert!(LogRecord::parse(Lsn::default(), &bytes[..20]).is_err());
    }

    #[test]
    fn names_and_ids_round_trip() {
        assert_eq!(Operation::from_name("lop_delete_rows"), Some(Operation::DELETE_ROWS));
        assert_eq!(Operation::from_name("LOP_0x99").map(Operation::name).as_deref(), Some("LOP_END_CKPT"));
        assert_eq!(Operation(0xfe).name(), "LOP_0xfe");
        assert_eq!(Context(0x17).name(), "LCX_BOOT_PAGE_CKPT");
        assert_eq!("0000:00000287".parse::<TransactionId>().unwrap(), TransactionId(0x287));
        assert!("zz".parse::<TransactionId>().is_err());
    }
}
