//! One log block: the unit SQL Server writes the transaction log in (512 bytes to 60 KB).
//!
//! ```text
//!  +0x00 u8   status: parity 0x40 or 0x80 (flips each time the log wraps over the VLF),
//!             | 0x10 on the block's first sector, | 0x08 on its last
//!  +0x01 u8   (0)
//!  +0x02 u16  records in the block
//!  +0x04 u16  offset of the slot array's entry 0 (0: the header); record k's offset is the u16
//!             at this offset - 2k (the array grows down), k from 1 to the record count
//!  +0x06 u16  block size in bytes (a multiple of 512)
//!  +0x08 u16  (3 in every corpus block)
//!  +0x0a u16  size of the previous block
//!  +0x0c u32  LSN of the block: VLF sequence number ...
//!  +0x10 u32  ... and block offset in 512-byte sectors; a record's LSN is vlf:block:slot
//!  +0x14 u32  (1)      +0x18 u32 (varies: a checksum?)      +0x1c..0x28 zero
//!  +0x28      log records, 8-byte aligned, each where its slot entry says
//!   ...       free space, the slot array (u16 offsets, entry 0 = 0 for the header)
//!  end - N    the original first byte of each of the block's N sectors, whose first byte is
//!             overwritten by the status byte, in reverse order: sector k's (0 < k < N) at
//!             end - 1 - k (sector N-1's at end - N), and 0x04 in the last byte
//! ```
//!
//! Sources: the slot array, LSN fields and the 0x40/0x80 sector parity as described by Paul
//! Randal ("log block", "parity bits") and Remus Rusanu; `rsleedbx/mssqlbak-tests`
//! `docs/spec/09_REDO_UNDO.md` (status bytes 0x50/0x40, the VLF sequence and block offset at
//! +0x0c/+0x10, sector bytes overwritten). Every other position and the place of the saved
//! sector bytes were found on the corpus bytes (the log portions of the 2008 R2-2019 backups in
//! `chains/` and `bak/`): with the saved bytes put back, every record's own lengths end exactly
//! where the next slot starts. The order of the saved bytes shows only in blocks of four
//! sectors or more whose saved bytes differ: of the 91 such blocks of the corpus, two
//! (`chains/cube-query-history/..._LOG_20170518_041831.trn` at LSN 18:118, 13 sectors, and one of
//! 96 sectors in `bak/xxxnemesis4xxx-sql_server__entrepot.bak`) have records whose lengths fit
//! only with the reverse order; in the first, the bytes it puts back are those of the rows of
//! page 1:165 that its LOP_INSERT_ROWS logs, as the full backup holds them (sectors 1, 2, 4
//! and 8: 0xed, 0x00, 0x07, 0x4c), where the forward order (sector k at end - N + k) gave
//! records that ran past their slots. With it the log portions of three corpus backups that
//! stopped early (aasmand-clinicproject, denissfloww-bd, entrepot) read whole.

use crate::backup::Lsn;
use crate::bytes::{read_u16, read_u32};

/// Bytes of the block header; records start here.
pub const BLOCK_HEADER_SIZE: usize = 0x28;
/// Sector size of the log.
pub const SECTOR: usize = 512;
/// Largest log block SQL Server writes.
pub const MAX_BLOCK_SIZE: usize = 60 * 1024;
/// Status bit of a block's first sector.
const FIRST_SECTOR: u8 = 0x10;
/// Status bit of a block's last sector.
const LAST_SECTOR: u8 = 0x08;
/// The two parity values a sector's status byte carries.
const PARITY_BITS: u8 = 0xc0;

/// What a block header says, before the block itself is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// +0x00: the first sector's status byte (parity 0x40 or 0x80, 0x10 first sector, 0x08 last).
    pub status: u8,
    /// +0x02: records in the block.
    pub slots: u16,
    /// +0x04: offset of the slot array's entry 0; record k's offset is 2k bytes below it.
    pub slot_array: u16,
    /// +0x06: the block's size in bytes, a multiple of 512.
    pub size: u16,
    /// +0x0a: the size of the block before it.
    pub previous_size: u16,
    /// The block's LSN (slot 0).
    pub lsn: Lsn,
}

impl BlockHeader {
    /// `Ok(None)` for an all-zero header (the unused end of a log stream).
    pub fn parse(h: &[u8]) -> Result<Option<BlockHeader>, String> {
        let Some(h) = h.get(..BLOCK_HEADER_SIZE) else {
            return Err(format!("{} bytes left, a log block header needs {BLOCK_HEADER_SIZE}", h.len()));
        };
        if h.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let field = |at| read_u16(h, at).unwrap_or(0);
        let header = BlockHeader {
            status: h[0],
            slots: field(2),
            slot_array: field(4),
            size: field(6),
            previous_size: field(10),
            lsn: Lsn { vlf: read_u32(h, 12).unwrap_or(0), block: read_u32(h, 16).unwrap_or(0), slot: 0 },
        };
        let size = usize::from(header.size);
        if header.status & FIRST_SECTOR == 0 || header.status & PARITY_BITS == 0 {
            return Err(format!(
                "status byte {:#04x} is not a block's first sector (0x50 or 0x90 with bits)",
                header.status
            ));
        }
        if size == 0 || !size.is_multiple_of(SECTOR) || size > MAX_BLOCK_SIZE {
            return Err(format!("block size {size} is not a multiple of {SECTOR} up to {MAX_BLOCK_SIZE}"));
        }
        let slots = usize::from(header.slots);
        let array = usize::from(header.slot_array);
        let sectors = size / SECTOR;
        // The array's lowest entry must sit above the header and the saved sector bytes below it.
        if array + 2 > size - sectors || array < BLOCK_HEADER_SIZE + 2 * slots {
            return Err(format!("{slots} slots with the slot array at +{array} do not fit a {size}-byte block"));
        }
        Ok(Some(header))
    }

    /// The parity bits every sector of this block carries (0x40 or 0x80).
    pub fn parity(&self) -> u8 {
        self.status & PARITY_BITS
    }

    /// The first sector of the block in `raw` (its bytes from the header on) that carries the
    /// other parity: a sector left from an earlier pass over the log, where this block's write
    /// did not reach (a torn write, or a stale block read as current). `None` when all agree.
    pub fn stale_sector(&self, raw: &[u8]) -> Option<usize> {
        let sectors = usize::from(self.size) / SECTOR;
        (1..sectors).find(|k| raw.get(k * SECTOR).is_none_or(|status| status & PARITY_BITS != self.parity()))
    }
}

/// A log block with its sectors' first bytes put back, and its slot array read.
#[derive(Debug, Clone)]
pub struct LogBlock {
    /// The block header, as read before the sectors' bytes were put back.
    pub header: BlockHeader,
    bytes: Vec<u8>,
    /// Offsets of the records (slot 1 onwards) and where each ends (the next record, or the
    /// slot array for the last).
    records: Vec<(u16, u16)>,
}

impl LogBlock {
    /// Reads a block from its bytes (at least the header's size of them).
    pub fn parse(raw: &[u8]) -> Result<Option<LogBlock>, String> {
        let Some(header) = BlockHeader::parse(raw)? else { return Ok(None) };
        let size = usize::from(header.size);
        let Some(raw) = raw.get(..size) else {
            return Err(format!("the block is {size} bytes but only {} are there", raw.len()));
        };
        let mut bytes = raw.to_vec();
        let sectors = size / SECTOR;
        if let Some(k) = header.stale_sector(raw) {
            return Err(format!(
                "sector {k} has status {:#04x}, the block's first {:#04x}: a torn or stale block",
                raw[k * SECTOR],
                header.status
            ));
        }
        for k in 1..sectors {
            let status = bytes[k * SECTOR];
            if (status & LAST_SECTOR != 0) != (k == sectors - 1) {
                return Err(format!("sector {k} of {sectors} has status {status:#04x}: the last-sector bit is wrong"));
            }
            bytes[k * SECTOR] = raw[size - 1 - k];
        }
        let array = usize::from(header.slot_array);
        let slots = usize::from(header.slots);
        let array_bottom = array - 2 * slots;
        let mut records = Vec::with_capacity(slots);
        let mut previous_end = BLOCK_HEADER_SIZE;
        for slot in 1..=slots {
            let start = usize::from(read_u16(&bytes, array - 2 * slot).unwrap_or(0));
            let end = if slot < slots {
                usize::from(read_u16(&bytes, array - 2 * (slot + 1)).unwrap_or(0))
            } else {
                array_bottom
            };
            if start < previous_end || end <= start || end > array_bottom {
                return Err(format!(
                    "slot {slot} says its record is at +{start} to +{end}, outside +{previous_end}..+{array_bottom}"
                ));
            }
            records.push((start as u16, end as u16));
            previous_end = end;
        }
        Ok(Some(LogBlock { header, bytes, records }))
    }

    /// Number of records (slots after the header's).
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// The bytes of record `slot` (from 1) up to the next record or the slot array, and its LSN.
    pub fn record_bytes(&self, slot: usize) -> Option<(Lsn, &[u8])> {
        let (start, end) = *self.records.get(slot.checked_sub(1)?)?;
        let lsn = Lsn { slot: u16::try_from(slot).ok()?, ..self.header.lsn };
        Some((lsn, &self.bytes[usize::from(start)..usize::from(end)]))
    }
}

/// The blocks of a log stream held in memory, from its start until a zero header; an error
/// names the byte offset of the block it is in (what the fuzz target and the seeds use).
pub fn stream_blocks(stream: &[u8]) -> impl Iterator<Item = Result<LogBlock, String>> + '_ {
    let mut at = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done || at + BLOCK_HEADER_SIZE > stream.len() {
            return None;
        }
        let result = LogBlock::parse(&stream[at..]).map_err(|m| format!("log block at byte {at}: {m}"));
        match result {
            Ok(Some(block)) => {
                // Every block is at least one sector: the walk always moves forward.
                at += usize::from(block.header.size);
                Some(Ok(block))
            }
            Ok(None) => {
                done = true;
                None
            }
            Err(m) => {
                done = true;
                Some(Err(m))
            }
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A block of `sectors` sectors with records of the given lengths, the way the corpus
    /// shows SQL Server writes them (independent of the parser above).
    pub(crate) fn forge_block(sectors: usize, lsn: (u32, u32), records: &[Vec<u8>]) -> Vec<u8> {
        forge_block_with_parity(0x40, sectors, lsn, records)
    }

    /// [`forge_block`] with every sector's status carrying `parity` (0x40 or 0x80).
    pub(crate) fn forge_block_with_parity(parity: u8, sectors: usize, lsn: (u32, u32), records: &[Vec<u8>]) -> Vec<u8> {
        let size = sectors * SECTOR;
        let mut b = vec![0u8; size];
        let slots = records.len();
        let array = size - sectors - 2 - 8;
        b[2..4].copy_from_slice(&(slots as u16).to_le_bytes());
        b[4..6].copy_from_slice(&(array as u16).to_le_bytes());
        b[6..8].copy_from_slice(&(size as u16).to_le_bytes());
        b[8] = 3;
        b[12..16].copy_from_slice(&lsn.0.to_le_bytes());
        b[16..20].copy_from_slice(&lsn.1.to_le_bytes());
        let mut at = BLOCK_HEADER_SIZE;
        for (i, r) in records.iter().enumerate() {
            b[at..at + r.len()].copy_from_slice(r);
            let entry = array - 2 * (i + 1);
            b[entry..entry + 2].copy_from_slice(&(at as u16).to_le_bytes());
            at += r.len().div_ceil(8) * 8;
        }
        // Save each sector's first byte and stamp the status byte over it.
        for k in 1..sectors {
            b[size - 1 - k] = b[k * SECTOR];
            b[k * SECTOR] = parity | if k == sectors - 1 { 0x08 } else { 0 };
        }
        b[size - 1] = 4;
        b[0] = parity | 0x10 | if sectors == 1 { 0x08 } else { 0 };
        b
    }

    #[test]
    fn sector_bytes_are_put_back_and_slots_give_lsns() {
        let mut long = vec![0xabu8; 600];
        long[512 - BLOCK_HEADER_SIZE - 48] = 0x77; // lands on sector 1's first byte
        let records = vec![vec![1u8; 48], long.clone(), vec![9u8; 16]];
        let raw = forge_block(3, (25, 140), &records);
        assert_eq!(raw[SECTOR], 0x40);
        let block = LogBlock::parse(&raw).unwrap().unwrap();
        assert_eq!(block.record_count(), 3);
        let (lsn, bytes) = block.record_bytes(2).unwrap();
        assert_eq!(lsn, Lsn { vlf: 25, block: 140, slot: 2 });
        assert_eq!(&bytes[..600], &long[..]);
        assert_eq!(block.record_bytes(1).unwrap().1.len(), 48);
        assert!(block.record_bytes(0).is_none());
        assert!(block.record_bytes(4).is_none());
    }

    #[test]
    fn saved_sector_bytes_are_in_reverse_order() {
        // One record over six sectors, a different byte on each sector's first byte.
        let mut long = vec![0u8; 5 * SECTOR];
        for k in 1..6 {
            long[k * SECTOR - BLOCK_HEADER_SIZE] = 0x10 + k as u8;
        }
        let raw = forge_block(6, (24, 280), std::slice::from_ref(&long));
        let size = raw.len();
        let saved: Vec<u8> = (1..6).map(|k| raw[size - 1 - k]).collect();
        assert_eq!(saved, [0x11, 0x12, 0x13, 0x14, 0x15], "sector k's byte at end - 1 - k");
        let block = LogBlock::parse(&raw).unwrap().unwrap();
        assert_eq!(&block.record_bytes(1).unwrap().1[..long.len()], &long[..]);
    }

    #[test]
    fn zero_header_ends_the_log_and_bad_blocks_are_named() {
        assert!(LogBlock::parse(&[0u8; 512]).unwrap().is_none());
        let good = forge_block(2, (1, 2), &[vec![5u8; 40]]);
        let mut torn = good.clone();
        torn[SECTOR] = 0x88; // the other parity: a stale sector
        assert!(LogBlock::parse(&torn).unwrap_err().contains("torn or stale"));
        let mut lying = good.clone();
        let array = usize::from(read_u16(&good, 4).unwrap());
        lying[array - 2..array].copy_from_slice(&0x3000u16.to_le_bytes());
        assert!(LogBlock::parse(&good).unwrap().unwrap().record_bytes(1).unwrap().1.len() >= 40);
        assert!(LogBlock::parse(&lying).unwrap_err().contains("slot 1"));
        assert!(LogBlock::parse(&good[..600]).unwrap_err().contains("only 600"));
        let mut huge = good;
        huge[6..8].copy_from_slice(&0xfe00u16.to_le_bytes());
        assert!(LogBlock::parse(&huge).unwrap_err().contains("block size"));
    }
}
