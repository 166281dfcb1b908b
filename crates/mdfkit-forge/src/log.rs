//! Transaction log written by the forge: log records (begin, commit, row changes, page
//! formats and allocation bit changes), log blocks, a log file (`.ldf`) holding
//! them, and the log stream a log backup copies ([`crate::backup::log_backup`]). Written from
//! mdfkit's documentation of each structure (its `log::record`, `log::block` and `log::ldf`
//! modules), never by calling its code:
//!
//! ```text
//!  record  +0x02 u16 fixed length  +0x04 10 the transaction's previous LSN  +0x10 u32+u16
//!          transaction id  +0x16 u8 operation  +0x17 u8 context
//!          page operations (fixed length 0x3e): +0x18 u32 page, u16 file  +0x1e u16 slot
//!          +0x20 u32 allocation unit >> 16  +0x24 10 the page's LSN before  +0x2e u16 unit >> 48
//!          +0x30 u64 partition id  +0x38 u16 offset in row (row operations; see [`Change`]
//!          for LOP_FORMAT_PAGE and LOP_SET_BITS)
//!          LOP_BEGIN_XACT (fixed length 0x30): +0x28 u32 ticks, +0x2c u32 days; images: name, SID
//!          LOP_COMMIT_XACT (fixed length 0x20): +0x18 u32 ticks, +0x1c u32 days
//!          after the fixed part: u16 image count, u16 lengths, images (4-byte aligned)
//!  block   0x28-byte header (status, count, slot array offset, size, previous size, LSN),
//!          8-byte aligned records, slot array growing down, each sector's first byte saved
//!          at the end (sector k's at end - 1 - k) and replaced by the sector's status (parity
//!          0x40 on the first pass)
//!  .ldf    file header page, then VLFs: an 8 KB header (+0x04 sequence number, +0x10 size)
//!          and blocks where their LSNs place them (the first at sector 0x10)
//! ```
//!
//! Redo needs each row record's previous page LSN to be the LSN the page carries: the forge
//! writes every page at [`FORGED_PAGE_LSN`] and the writer follows each page's LSN from there.

use std::collections::HashMap;

use crate::page::FORGED_PAGE_LSN;

/// A log sequence number: VLF sequence, block (sector offset in the VLF), slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn {
    /// VLF sequence number.
    pub vlf: u32,
    /// The block's offset in its VLF, in 512-byte sectors.
    pub block: u32,
    /// The record's slot in its block (from 1).
    pub slot: u16,
}

impl Lsn {
    /// The 10-byte form records and page headers store.
    pub fn bytes(self) -> [u8; 10] {
        let mut b = [0u8; 10];
        b[..4].copy_from_slice(&self.vlf.to_le_bytes());
        b[4..8].copy_from_slice(&self.block.to_le_bytes());
        b[8..].copy_from_slice(&self.slot.to_le_bytes());
        b
    }
}

const SECTOR: usize = 512;
const BLOCK_HEADER: usize = 0x28;
/// Largest block written: the forge keeps blocks small so that a log spans many of them.
const MAX_BLOCK: usize = 8 * 1024;
/// Bytes of a VLF header; blocks start at this sector.
const VLF_HEADER: usize = 8192;
const FIRST_BLOCK_SECTOR: u32 = (VLF_HEADER / SECTOR) as u32;
/// Parity of every sector on the log's first pass over a VLF.
const PARITY: u8 = 0x40;

const LOP_FORMAT_PAGE: u8 = 0x01;
const LOP_INSERT_ROWS: u8 = 0x02;
const LOP_DELETE_ROWS: u8 = 0x03;
const LOP_MODIFY_ROW: u8 = 0x04;
const LOP_MODIFY_HEADER: u8 = 0x05;
const LOP_SET_BITS: u8 = 0x07;
const LOP_DELETE_SPLIT: u8 = 0x0b;
const LOP_BEGIN_XACT: u8 = 0x80;
const LOP_COMMIT_XACT: u8 = 0x81;
const LCX_NULL: u8 = 0x00;

/// What a page operation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// LOP_INSERT_ROWS: the whole row goes into the slot.
    Insert(Vec<u8>),
    /// LOP_INSERT_ROWS of a page split: the rows moved to the new page, into consecutive
    /// slots from the slot (images: the rows, then two empty ones, as SQL Server writes them).
    InsertMoved(Vec<Vec<u8>>),
    /// LOP_DELETE_SPLIT: the page's last `count` rows, from the slot on, moved to `new_page`
    /// (fixed length 0x3c: +0x30 the new page id, +0x36 u16 count, +0x38 u16 the bytes moved,
    /// slot entries included).
    DeleteSplit {
        /// The page the rows went to.
        new_page: (u16, u32),
        /// How many rows moved.
        count: u16,
        /// Their bytes and slot entries.
        moved: u16,
    },
    /// LOP_MODIFY_HEADER: `before` replaced by `after` at `offset` in the page header (a
    /// split's page links: +8 previous page, +16 next page).
    ModifyHeader {
        /// Where in the header.
        offset: u16,
        /// The bytes there before.
        before: Vec<u8>,
        /// The bytes there after.
        after: Vec<u8>,
    },
    /// LOP_DELETE_ROWS: the row (its whole image) leaves the slot.
    Delete(Vec<u8>),
    /// LOP_MODIFY_ROW: `before` replaced by `after` (same length) at `offset` in the slot's
    /// record (a row, or an allocation page's PFS bytes or IAM bitmap).
    Modify {
        /// Where in the record the bytes are.
        offset: u16,
        /// The bytes there before.
        before: Vec<u8>,
        /// The bytes there after.
        after: Vec<u8>,
    },
    /// LOP_FORMAT_PAGE: the page made new and empty, of this type (1 data) and `pminlen`
    /// (fixed length 0x50: +0x30 type, +0x34 the previous page, +0x3a pminlen, +0x3c the next
    /// page, every other byte from +0x30 zero).
    Format {
        /// Page type.
        page_type: u8,
        /// The fixed part's end of the rows it will hold.
        pminlen: u16,
        /// The page before it in its level's chain ((0, 0): none).
        prev: (u16, u32),
        /// The page after it.
        next: (u16, u32),
    },
    /// LOP_SET_BITS: `count` bits of the slot's record from `first` (bit 0 being the first of
    /// its 4-byte record header) set to `value` (+0x30, +0x32, +0x34).
    SetBits {
        /// The first bit.
        first: u16,
        /// How many.
        count: u16,
        /// Set (true) or cleared.
        value: bool,
    },
}

/// Contexts (`LCX_*`) of the page operations the forge writes.
pub mod context {
    /// A heap's data page.
    pub const HEAP: u8 = 0x01;
    /// A clustered index's leaf (data) page.
    pub const CLUSTERED: u8 = 0x02;
    /// A non-leaf index page.
    pub const INDEX_INTERIOR: u8 = 0x04;
    /// A text page of LOB or row-overflow fragments.
    pub const TEXT_MIX: u8 = 0x05;
    /// A GAM page.
    pub const GAM: u8 = 0x08;
    /// An IAM page.
    pub const IAM: u8 = 0x0a;
    /// A PFS page.
    pub const PFS: u8 = 0x0b;
}

/// A page operation on one slot of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageChange {
    /// File id and page number.
    pub page: (u16, u32),
    /// The slot.
    pub slot: u16,
    /// The context ([`context`]).
    pub context: u8,
    /// The page's allocation unit (its header's object and index ids).
    pub unit: i64,
    /// The rowset (`sys.partitions.partition_id`) of a row operation.
    pub partition: u64,
    /// What happens.
    pub change: Change,
}

/// An open transaction: its id and its last record's LSN.
#[derive(Debug, Clone, Copy)]
pub struct Transaction {
    /// The 48-bit transaction id.
    pub id: u64,
    last: Lsn,
}

/// A `datetime` as the log stores it: days since 1900-01-01 and ticks of 1/300 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogTime {
    /// Days since 1900-01-01.
    pub days: u32,
    /// 1/300 s since midnight.
    pub ticks: u32,
}

/// One VLF of a log: its sequence number and its blocks, each with its sector in the VLF.
type Vlf = (u32, Vec<(u32, Vec<u8>)>);

/// Writes log records into blocks and VLFs, in LSN order, from the first VLF `first_vlf`.
pub struct LogWriter {
    vlf_size: usize,
    vlf: u32,
    next_sector: u32,
    open: Vec<Vec<u8>>,
    previous_size: u16,
    /// The blocks of each VLF: (sequence, [(sector, bytes)]).
    vlfs: Vec<Vlf>,
    page_lsns: HashMap<(u16, u32), Lsn>,
    next_transaction: u64,
    records: usize,
}

impl LogWriter {
    /// A log whose first VLF has sequence number `first_vlf` (above [`FORGED_PAGE_LSN`]'s) and
    /// whose VLFs are `vlf_size` bytes (a multiple of 512, above 8 KB + the largest block).
    pub fn new(first_vlf: u32, vlf_size: usize) -> Self {
        assert!(
            first_vlf > FORGED_PAGE_LSN.vlf && vlf_size.is_multiple_of(SECTOR) && vlf_size >= VLF_HEADER + MAX_BLOCK
        );
        LogWriter {
            vlf_size,
            vlf: first_vlf,
            next_sector: FIRST_BLOCK_SECTOR,
            open: Vec::new(),
            previous_size: 0,
            vlfs: vec![(first_vlf, Vec::new())],
            page_lsns: HashMap::new(),
            next_transaction: 0x0287,
            records: 0,
        }
    }

    /// Whether the open block fits where it would be written: within the block size the forge
    /// keeps to and the rest of the VLF.
    fn open_block_fits(&self) -> bool {
        let size = block_size(&self.open);
        size <= MAX_BLOCK && self.next_sector as usize * SECTOR + size <= self.vlf_size
    }

    /// Places `record` (closing the open block, and moving to the next VLF, where it does not
    /// fit) and returns its LSN.
    fn push(&mut self, record: Vec<u8>) -> Lsn {
        self.open.push(record);
        if !self.open_block_fits() && self.open.len() > 1 {
            let record = self.open.pop().expect("just pushed");
            self.close_block();
            self.open.push(record);
        }
        if !self.open_block_fits() && self.next_sector > FIRST_BLOCK_SECTOR {
            self.vlf += 1;
            self.next_sector = FIRST_BLOCK_SECTOR;
            self.previous_size = 0;
            self.vlfs.push((self.vlf, Vec::new()));
        }
        self.records += 1;
        Lsn { vlf: self.vlf, block: self.next_sector, slot: self.open.len() as u16 }
    }

    fn close_block(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.open);
        let block = write_block(&records, self.vlf, self.next_sector, self.previous_size);
        self.previous_size = block.len() as u16;
        let sector = self.next_sector;
        self.next_sector += (block.len() / SECTOR) as u32;
        self.vlfs.last_mut().expect("a VLF").1.push((sector, block));
    }

    /// LOP_BEGIN_XACT of a new transaction named `name`, begun at `time`.
    pub fn begin(&mut self, name: &str, time: LogTime) -> Transaction {
        let id = self.next_transaction;
        self.next_transaction += 1;
        let mut r = header(0x30, Lsn::default(), id, LOP_BEGIN_XACT, LCX_NULL);
        r[0x28..0x2c].copy_from_slice(&time.ticks.to_le_bytes());
        r[0x2c..0x30].copy_from_slice(&time.days.to_le_bytes());
        let name: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let sid = vec![0x01, 0x01, 0, 0, 0, 0, 0, 5, 0x12, 0, 0, 0];
        append_images(&mut r, &[&name, &sid]);
        let last = self.push(r);
        Transaction { id, last }
    }

    /// One page operation of `transaction`.
    pub fn change(&mut self, transaction: &mut Transaction, c: &PageChange) {
        let page_lsn = *self.page_lsns.get(&c.page).unwrap_or(&FORGED_PAGE_LSN);
        let (op, fixed, images): (u8, u16, Vec<&[u8]>) = match &c.change {
            Change::Insert(row) => (LOP_INSERT_ROWS, 0x3e, vec![row]),
            Change::InsertMoved(rows) => {
                (LOP_INSERT_ROWS, 0x3e, rows.iter().map(Vec::as_slice).chain([&[][..], &[][..]]).collect())
            }
            Change::DeleteSplit { .. } => (LOP_DELETE_SPLIT, 0x3c, vec![]),
            Change::ModifyHeader { before, after, .. } => (LOP_MODIFY_HEADER, 0x3e, vec![before, after]),
            Change::Delete(row) => (LOP_DELETE_ROWS, 0x3e, vec![row]),
            Change::Modify { before, after, .. } => (LOP_MODIFY_ROW, 0x3e, vec![before, after]),
            Change::Format { .. } => (LOP_FORMAT_PAGE, 0x50, vec![]),
            Change::SetBits { .. } => (LOP_SET_BITS, 0x3e, vec![]),
        };
        let mut r = header(fixed, transaction.last, transaction.id, op, c.context);
        r[0x18..0x1c].copy_from_slice(&c.page.1.to_le_bytes());
        r[0x1c..0x1e].copy_from_slice(&c.page.0.to_le_bytes());
        r[0x1e..0x20].copy_from_slice(&c.slot.to_le_bytes());
        r[0x20..0x24].copy_from_slice(&((c.unit >> 16) as u32).to_le_bytes());
        r[0x24..0x2e].copy_from_slice(&page_lsn.bytes());
        r[0x2e..0x30].copy_from_slice(&((c.unit >> 48) as u16).to_le_bytes());
        match &c.change {
            Change::Format { page_type, pminlen, prev, next } => {
                r[0x30] = *page_type;
                r[0x34..0x3a].copy_from_slice(&page_id_bytes(*prev));
                r[0x3a..0x3c].copy_from_slice(&pminlen.to_le_bytes());
                r[0x3c..0x42].copy_from_slice(&page_id_bytes(*next));
            }
            Change::DeleteSplit { new_page, count, moved } => {
                r[0x30..0x36].copy_from_slice(&page_id_bytes(*new_page));
                r[0x36..0x38].copy_from_slice(&count.to_le_bytes());
                r[0x38..0x3a].copy_from_slice(&moved.to_le_bytes());
            }
            Change::SetBits { first, count, value } => {
                r[0x30..0x32].copy_from_slice(&first.to_le_bytes());
                r[0x32..0x34].copy_from_slice(&count.to_le_bytes());
                r[0x34..0x36].copy_from_slice(&u16::from(*value).to_le_bytes());
            }
            Change::Insert(_)
            | Change::InsertMoved(_)
            | Change::Delete(_)
            | Change::Modify { .. }
            | Change::ModifyHeader { .. } => {
                let offset = match &c.change {
                    Change::Modify { offset, .. } | Change::ModifyHeader { offset, .. } => *offset,
                    _ => 0,
                };
                r[0x30..0x38].copy_from_slice(&c.partition.to_le_bytes());
                r[0x38..0x3a].copy_from_slice(&offset.to_le_bytes());
            }
        }
        append_images(&mut r, &images);
        let lsn = self.push(r);
        self.page_lsns.insert(c.page, lsn);
        transaction.last = lsn;
    }

    /// LOP_COMMIT_XACT of `transaction` at `time`; returns its LSN.
    pub fn commit(&mut self, transaction: Transaction, time: LogTime) -> Lsn {
        let mut r = header(0x20, transaction.last, transaction.id, LOP_COMMIT_XACT, LCX_NULL);
        r[0x18..0x1c].copy_from_slice(&time.ticks.to_le_bytes());
        r[0x1c..0x20].copy_from_slice(&time.days.to_le_bytes());
        self.push(r)
    }

    /// Where a log backup taken now would end (its last LSN: the next record's block, slot 1):
    /// the open block is closed, so that the log before and after this point is in blocks of
    /// its own ([`ForgedLog::stream_between`]).
    pub fn backup_point(&mut self) -> Lsn {
        self.close_block();
        Lsn { vlf: self.vlf, block: self.next_sector, slot: 1 }
    }

    /// Closes the log: its blocks, VLFs and LSN bounds.
    pub fn finish(mut self) -> ForgedLog {
        self.close_block();
        let first =
            self.vlfs.iter().flat_map(|(v, b)| b.first().map(|(s, _)| Lsn { vlf: *v, block: *s, slot: 1 })).next();
        ForgedLog {
            first_lsn: first.unwrap_or(Lsn { vlf: self.vlf, block: FIRST_BLOCK_SECTOR, slot: 1 }),
            end_lsn: Lsn { vlf: self.vlf, block: self.next_sector, slot: 1 },
            vlf_size: self.vlf_size,
            vlfs: self.vlfs,
            records: self.records,
        }
    }
}

/// A finished log: its blocks by VLF.
#[derive(Debug, Clone)]
pub struct ForgedLog {
    /// The LSN of its first record.
    pub first_lsn: Lsn,
    /// The LSN after its last record (the next block's first): a log backup's last LSN.
    pub end_lsn: Lsn,
    /// Records written.
    pub records: usize,
    vlf_size: usize,
    vlfs: Vec<Vlf>,
}

impl ForgedLog {
    /// The blocks one after the other, as a log backup's log stream holds them.
    pub fn stream(&self) -> Vec<u8> {
        self.vlfs.iter().flat_map(|(_, blocks)| blocks.iter().flat_map(|(_, b)| b.iter().copied())).collect()
    }

    /// The blocks from LSN `from` up to `to` (each a [`LogWriter::backup_point`] or the log's
    /// bounds), as the log backup of that range holds them.
    pub fn stream_between(&self, from: Lsn, to: Lsn) -> Vec<u8> {
        let inside =
            |vlf: u32, sector: u32| (from.vlf, from.block) <= (vlf, sector) && (vlf, sector) < (to.vlf, to.block);
        let blocks = self.vlfs.iter().flat_map(|(v, blocks)| blocks.iter().filter(move |(s, _)| inside(*v, *s)));
        blocks.flat_map(|(_, b)| b.iter().copied()).collect()
    }

    /// A log file (`.ldf`) of file id `file_id`: its file header page, one VLF per VLF of the
    /// log (in file order `order`, a permutation of their indexes, so that the sequence
    /// numbers need not follow the file order), then `unused` VLFs never written.
    pub fn ldf(&self, file_id: u16, order: &[usize], unused: usize) -> Vec<u8> {
        let mut out = vec![0u8; 8192];
        out[0] = 1;
        out[1] = 15; // file header page
        out[32..36].copy_from_slice(&0u32.to_le_bytes());
        out[36..38].copy_from_slice(&file_id.to_le_bytes());
        for &i in order {
            let (sequence, blocks) = &self.vlfs[i];
            let start = out.len();
            out.resize(start + self.vlf_size, 0);
            vlf_header(&mut out[start..], *sequence, self.vlf_size);
            for (sector, block) in blocks {
                let at = start + *sector as usize * SECTOR;
                out[at..at + block.len()].copy_from_slice(block);
            }
        }
        for _ in 0..unused {
            let start = out.len();
            out.resize(start + self.vlf_size, 0);
            vlf_header(&mut out[start..], 0, self.vlf_size);
        }
        out
    }

    /// How many VLFs the log spans.
    pub fn vlf_count(&self) -> usize {
        self.vlfs.len()
    }
}

/// A page id's 6-byte form: u32 page, u16 file.
pub fn page_id_bytes((file, page): (u16, u32)) -> [u8; 6] {
    let mut b = [0u8; 6];
    b[..4].copy_from_slice(&page.to_le_bytes());
    b[4..].copy_from_slice(&file.to_le_bytes());
    b
}

fn vlf_header(vlf: &mut [u8], sequence: u32, size: usize) {
    vlf[0] = 0xab;
    vlf[4..8].copy_from_slice(&sequence.to_le_bytes());
    vlf[16..24].copy_from_slice(&(size as u64).to_le_bytes());
}

/// The common header of a record with a `fixed`-byte fixed part.
fn header(fixed: u16, previous: Lsn, transaction: u64, op: u8, context: u8) -> Vec<u8> {
    let mut r = vec![0u8; usize::from(fixed)];
    r[2..4].copy_from_slice(&fixed.to_le_bytes());
    r[4..14].copy_from_slice(&previous.bytes());
    r[0x10..0x14].copy_from_slice(&(transaction as u32).to_le_bytes());
    r[0x14..0x16].copy_from_slice(&((transaction >> 32) as u16).to_le_bytes());
    r[0x16] = op;
    r[0x17] = context;
    r
}

/// The image count, lengths and images after a record's fixed part.
fn append_images(r: &mut Vec<u8>, images: &[&[u8]]) {
    r.extend_from_slice(&(images.len() as u16).to_le_bytes());
    for image in images {
        r.extend_from_slice(&(image.len() as u16).to_le_bytes());
    }
    for image in images {
        r.resize(r.len().div_ceil(4) * 4, 0);
        r.extend_from_slice(image);
    }
    r.resize(r.len().div_ceil(4) * 4, 0);
}

/// Where each record starts (8-byte aligned from the header) and where the last ends.
fn record_starts(records: &[Vec<u8>]) -> (Vec<usize>, usize) {
    let mut at = BLOCK_HEADER;
    let mut starts = Vec::with_capacity(records.len());
    for r in records {
        at = at.div_ceil(8) * 8;
        starts.push(at);
        at += r.len();
    }
    (starts, at)
}

/// The size of the block holding `records`: the fewest sectors that hold the header, the
/// records, the slot array (entry 0 and one a record) and one saved byte a sector.
fn block_size(records: &[Vec<u8>]) -> usize {
    let (_, end) = record_starts(records);
    let mut sectors = 1;
    while end + 2 * (records.len() + 1) + sectors > sectors * SECTOR {
        sectors += 1;
    }
    sectors * SECTOR
}

/// One block of `records` at `sector` of VLF `vlf`.
fn write_block(records: &[Vec<u8>], vlf: u32, sector: u32, previous_size: u16) -> Vec<u8> {
    let size = block_size(records);
    let sectors = size / SECTOR;
    let mut b = vec![0u8; size];
    let (starts, _) = record_starts(records);
    let array = size - sectors - 2;
    b[2..4].copy_from_slice(&(records.len() as u16).to_le_bytes());
    b[4..6].copy_from_slice(&(array as u16).to_le_bytes());
    b[6..8].copy_from_slice(&(size as u16).to_le_bytes());
    b[8..10].copy_from_slice(&3u16.to_le_bytes());
    b[10..12].copy_from_slice(&previous_size.to_le_bytes());
    b[12..16].copy_from_slice(&vlf.to_le_bytes());
    b[16..20].copy_from_slice(&sector.to_le_bytes());
    b[20..24].copy_from_slice(&1u32.to_le_bytes());
    for (k, (r, &start)) in records.iter().zip(&starts).enumerate() {
        b[start..start + r.len()].copy_from_slice(r);
        let entry = array - 2 * (k + 1);
        b[entry..entry + 2].copy_from_slice(&(start as u16).to_le_bytes());
    }
    // Each later sector's first byte is kept at the end, in reverse order (sector k's at
    // end - 1 - k), and the sector's status takes its place.
    for k in 1..sectors {
        b[size - 1 - k] = b[k * SECTOR];
        b[k * SECTOR] = PARITY | if k == sectors - 1 { 0x08 } else { 0 };
    }
    b[size - 1] = 0x04;
    b[0] = PARITY | 0x10 | if sectors == 1 { 0x08 } else { 0 };
    b
}
