//! Full backups of forged data files, laid out the way SQL Server writes an uncompressed one
//! (Microsoft Tape Format; see mdfkit's `backup` module for each block and field):
//!
//! ```text
//! TAPE (512-byte physical blocks, 1024-byte logical blocks), SFMB,
//! SSET, VOLB, MSCI (MQCI: one SFIN record per file), MSDA (MQDA: 2 bytes, then the extents;
//! an empty last MQDA), SFMB, ESET, ESET, SFMB
//! ```
//!
//! The data stream holds what a full backup copies ([`copied_extents`]): per data file in file id
//! order, the extents its GAM pages mark allocated and the extents holding a PFS page, in page
//! order. [`backup_of_extents`] takes any list instead, so tests can write streams whose map and
//! extents disagree.

use crate::log::Lsn;
use crate::ForgedFile;

const PAGE: usize = 8192;
const LOGICAL_BLOCK: usize = 1024;
const PHYSICAL_BLOCK: usize = 512;
const GAM_INTERVAL: usize = 511_232;
const PFS_INTERVAL: usize = 8088;

/// The extents (file id, first page) a full backup of `files` copies, in stream order: read from
/// each file's own GAM pages (slot 1: bit set = extent free), plus the extents of PFS pages.
pub fn copied_extents(files: &[ForgedFile]) -> Vec<(u16, u32)> {
    let mut ids: Vec<&ForgedFile> = files.iter().collect();
    ids.sort_by_key(|f| f.file_id);
    let mut out = Vec::new();
    for f in ids {
        let pages = f.bytes.len() / PAGE;
        for first in (0..pages).step_by(8) {
            let interval = first / GAM_INTERVAL * GAM_INTERVAL;
            let gam = &f.bytes[(interval + 2) * PAGE..(interval + 3) * PAGE];
            let slot1 = u16::from_le_bytes([gam[PAGE - 4], gam[PAGE - 3]]) as usize;
            let bit = (first - interval) / 8;
            let free = gam[slot1 + 4 + bit / 8] >> (bit % 8) & 1 == 1;
            let holds_pfs = (first..first + 8).any(|p| p == 1 || (p > 0 && p % PFS_INTERVAL == 0));
            if !free || holds_pfs {
                out.push((f.file_id, first as u32));
            }
        }
    }
    out
}

/// A full backup of `files` holding the extents SQL Server would copy.
pub fn full_backup(files: &[ForgedFile]) -> Vec<u8> {
    backup_of_extents(files, &copied_extents(files), &[])
}

/// [`full_backup`] with a SCIN record in its configuration stream (from [`SetHeader::scin`]):
/// its LSNs place it in a restore chain.
pub fn full_backup_with_header(files: &[ForgedFile], header: &SetHeader) -> Vec<u8> {
    write_full(files, &copied_extents(files), &[], Some(header.scin(b'D')))
}

/// A full backup whose data stream holds `extents` (file id, first page; each read from its
/// file, or zeros past its end), followed by `extra` raw 64 KB extents (e.g. blocks that are not
/// pages).
pub fn backup_of_extents(files: &[ForgedFile], extents: &[(u16, u32)], extra: &[Vec<u8>]) -> Vec<u8> {
    write_full(files, extents, extra, None)
}

/// What a backup set's SCIN record says (mdfkit's `backup::header::SetInfo` documents each
/// field): the database, and the LSNs a restore chain is planned by.
#[derive(Debug, Clone)]
pub struct SetHeader {
    /// The database's name.
    pub database: String,
    /// The on-disk format version (the boot page's `dbi_version`).
    pub dbi_version: u16,
    /// The first LSN the backup holds.
    pub first_lsn: Lsn,
    /// The LSN after the last one it holds.
    pub last_lsn: Lsn,
    /// The checkpoint LSN it started from.
    pub checkpoint_lsn: Lsn,
    /// The checkpoint LSN of the full backup it follows (its own for a full backup).
    pub database_backup_lsn: Lsn,
}

impl SetHeader {
    /// The SCIN record of a set of type `letter` (`D` full, `L` log).
    pub fn scin(&self, letter: u8) -> Vec<u8> {
        const NAME_AT: usize = 288;
        let name: Vec<u8> = self.database.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let mut r = vec![0u8; NAME_AT];
        r[..4].copy_from_slice(b"SCIN");
        r[24..26].copy_from_slice(&4000u16.to_le_bytes());
        r[27] = 15;
        for (at, lsn) in
            [(32, self.first_lsn), (42, self.last_lsn), (52, self.checkpoint_lsn), (62, self.database_backup_lsn)]
        {
            r[at..at + 10].copy_from_slice(&lsn.bytes());
        }
        r[87] = letter;
        r[91] = 150;
        r[94..96].copy_from_slice(&self.dbi_version.to_le_bytes());
        r[104..106].copy_from_slice(&(name.len() as u16).to_le_bytes());
        r[106..108].copy_from_slice(&(NAME_AT as u16).to_le_bytes());
        r.extend(name);
        let len = r.len() as u32;
        r[4..8].copy_from_slice(&len.to_le_bytes());
        r
    }
}

/// A log backup: its SCIN record (type `L`), then the log stream (whole log blocks, as
/// [`crate::log::ForgedLog::stream`] gives them) in one MSTL block's MQTL stream.
pub fn log_backup(header: &SetHeader, log_stream: &[u8]) -> Vec<u8> {
    let mut w = MtfWriter::new(PHYSICAL_BLOCK);
    w.start_set(sset());
    w.block(b"MSCI", &[(*b"MQCI", 0, header.scin(b'L'))]);
    let mut mqtl = vec![0u8; 2];
    mqtl.extend_from_slice(log_stream);
    w.block(b"MSTL", &[(*b"MQTL", 0, mqtl)]);
    w.end_set();
    w.out
}

/// The SSET block of a forged set.
fn sset() -> Vec<u8> {
    let mut sset = block_header(b"SSET", 128, 0);
    sset.resize(128, 0);
    sset[52..56].copy_from_slice(&4u32.to_le_bytes());
    sset[100..116].copy_from_slice(b"forged backupset");
    sset
}

fn write_full(files: &[ForgedFile], extents: &[(u16, u32)], extra: &[Vec<u8>], scin: Option<Vec<u8>>) -> Vec<u8> {
    let mut w = MtfWriter::new(PHYSICAL_BLOCK);
    w.start_set(sset());
    let mut mqci = scin.unwrap_or_default();
    for f in files {
        let logical = f.name.split('.').next().unwrap_or(&f.name);
        mqci.extend(sfin(f.file_id, 1, f.bytes.len() as u64, logical, &format!("C:\\DATA\\{}", f.name)));
    }
    w.block(b"MSCI", &[(*b"MQCI", 0, mqci)]);
    let mut data = Vec::new();
    for &(file, first) in extents {
        let bytes = files.iter().find(|f| f.file_id == file).map_or(&[][..], |f| &f.bytes[..]);
        for k in 0..8 {
            let at = (first as usize + k) * PAGE;
            match bytes.get(at..at + PAGE) {
                Some(p) => data.extend_from_slice(p),
                None => data.resize(data.len() + PAGE, 0),
            }
        }
    }
    for e in extra {
        data.extend_from_slice(e);
    }
    w.data(data);
    w.end_set();
    w.out
}

/// `backup` made stripe `number` of `count` of a striped backup: its TAPE block rewritten with a
/// RAID stream (media set id: 16 bytes of `media_set`; family count at 20, family number at 24)
/// before its pad, as each file of a striped backup carries one (see mdfkit's `backup::header`).
pub fn as_stripe(mut backup: Vec<u8>, media_set: u8, number: u16, count: u16) -> Vec<u8> {
    let mut raid = vec![0u8; 32];
    raid[..16].fill(media_set);
    raid[20..22].copy_from_slice(&count.to_le_bytes());
    raid[24..26].copy_from_slice(&number.to_le_bytes());
    let mut tape = block_header(b"TAPE", 96, 0);
    tape.resize(96, 0);
    tape[52..56].copy_from_slice(&(u32::from(number) * 7).to_le_bytes());
    tape[84..86].copy_from_slice(&(LOGICAL_BLOCK as u16).to_le_bytes());
    tape.extend(stream_header(b"RAID", 0, 32));
    tape.extend(raid);
    tape.resize(tape.len().div_ceil(4) * 4, 0);
    tape.extend(stream_header(b"SPAD", 0, (LOGICAL_BLOCK - tape.len() - 22) as u64));
    tape.resize(LOGICAL_BLOCK, 0);
    backup.splice(..LOGICAL_BLOCK.min(backup.len()), tape);
    backup
}

/// Writes MTF blocks the way SQL Server lays them out: a TAPE block padded to the logical block
/// (1024 bytes), soft filemarks of one physical block, every block of a set at SSET offset +
/// logical address x 1024.
pub struct MtfWriter {
    pub out: Vec<u8>,
    /// Offset of the current set's SSET block (0: outside a set).
    pub sset: usize,
    pub physical: usize,
}

impl MtfWriter {
    /// TAPE (logical block size 1024 at offset 84), padded, then a soft filemark.
    pub fn new(physical: usize) -> Self {
        let mut w = MtfWriter { out: Vec::new(), sset: 0, physical };
        let mut tape = block_header(b"TAPE", 96, 0);
        tape.resize(96, 0);
        tape[84..86].copy_from_slice(&(LOGICAL_BLOCK as u16).to_le_bytes());
        w.out.extend(tape);
        w.pad_to(physical.max(LOGICAL_BLOCK));
        w.sfmb();
        w
    }

    /// Starts a set with `sset` (an SSET block's bytes: its header checksum is written here),
    /// then a VOLB block.
    pub fn start_set(&mut self, mut sset: Vec<u8>) {
        self.sset = self.out.len();
        let c = xor16(&sset[..50]);
        sset[50..52].copy_from_slice(&c.to_le_bytes());
        self.out.extend(sset);
        self.pad_to(LOGICAL_BLOCK);
        self.block(b"VOLB", &[]);
    }

    /// An MSDA block whose data stream holds `payload` after the 2-byte prefix, then the empty
    /// last piece. Returns the block's offset.
    pub fn data(&mut self, payload: Vec<u8>) -> usize {
        let mut stream = vec![0u8; 2];
        stream.extend(payload);
        self.block(b"MSDA", &[(*b"MQDA", 0x2, stream), (*b"MQDA", 0x6, Vec::new())])
    }

    /// Ends the current set the way SQL Server does.
    pub fn end_set(&mut self) {
        self.sfmb();
        self.block(b"ESET", &[(*b"TSMP", 0, vec![1, 2, 3])]);
        self.block(b"ESET", &[]);
        self.sfmb();
        self.sset = 0;
    }

    pub fn sfmb(&mut self) {
        let start = self.out.len();
        self.out.extend(block_header(b"SFMB", self.physical as u16, 0));
        self.out.resize(start + self.physical, 0);
    }

    /// A SPAD stream ending the block at the next multiple of `to` from the SSET.
    pub fn pad_to(&mut self, to: usize) {
        let here = self.out.len().div_ceil(4) * 4;
        self.out.resize(here, 0);
        let base = self.sset;
        let mut end = base + (here + 22 - base).div_ceil(to) * to;
        if end - here < 22 {
            end += to;
        }
        self.out.extend(stream_header(b"SPAD", 0, (end - here - 22) as u64));
        self.out.resize(end, 0);
    }

    /// A block with `streams` (id, media-format attributes, data), padded to the logical block.
    /// Returns its offset.
    pub fn block(&mut self, kind: &[u8; 4], streams: &[([u8; 4], u16, Vec<u8>)]) -> usize {
        let start = self.out.len();
        let address = if self.sset == 0 || kind == b"ESET" { 0 } else { (start - self.sset) / LOGICAL_BLOCK };
        let mut header = block_header(kind, 60, address as u64);
        header.resize(60, 0);
        self.out.extend(header);
        for (id, attributes, data) in streams {
            let here = self.out.len().div_ceil(4) * 4;
            self.out.resize(here, 0);
            self.out.extend(stream_header(id, *attributes, data.len() as u64));
            self.out.extend(data);
        }
        self.pad_to(LOGICAL_BLOCK);
        start
    }
}

/// XOR of the little-endian u16 words of `b` (MTF header checksums).
pub fn xor16(b: &[u8]) -> u16 {
    b.chunks_exact(2).fold(0, |acc, w| acc ^ u16::from_le_bytes([w[0], w[1]]))
}

/// A 52-byte MTF block header with its checksum.
pub fn block_header(kind: &[u8; 4], first_stream: u16, logical_address: u64) -> Vec<u8> {
    let mut b = vec![0u8; 52];
    b[..4].copy_from_slice(kind);
    b[8..10].copy_from_slice(&first_stream.to_le_bytes());
    b[10] = 14;
    b[11] = 1;
    b[20..28].copy_from_slice(&logical_address.to_le_bytes());
    let c = xor16(&b[..50]);
    b[50..52].copy_from_slice(&c.to_le_bytes());
    b
}

/// A 22-byte MTF stream header with its checksum.
pub fn stream_header(id: &[u8; 4], media_attributes: u16, length: u64) -> Vec<u8> {
    let mut b = vec![0u8; 22];
    b[..4].copy_from_slice(id);
    b[6..8].copy_from_slice(&media_attributes.to_le_bytes());
    b[8..16].copy_from_slice(&length.to_le_bytes());
    let c = xor16(&b[..20]);
    b[20..22].copy_from_slice(&c.to_le_bytes());
    b
}

/// A file list record (SFIN): file id, type (1 data, 2 log), size in bytes, names.
pub fn sfin(file_id: u16, kind: u32, size: u64, logical: &str, physical: &str) -> Vec<u8> {
    let utf16 = |s: &str| s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect::<Vec<u8>>();
    let (logical, physical) = (utf16(logical), utf16(physical));
    let mut r = vec![0u8; 64];
    r[..4].copy_from_slice(b"SFIN");
    r[16..20].copy_from_slice(&(PAGE as u32).to_le_bytes());
    r[20..24].copy_from_slice(&u32::from(file_id).to_le_bytes());
    r[28..32].copy_from_slice(&kind.to_le_bytes());
    r[36..40].copy_from_slice(&u32::from(kind == 1).to_le_bytes());
    r[40..48].copy_from_slice(&size.to_le_bytes());
    r[48..50].copy_from_slice(&(logical.len() as u16).to_le_bytes());
    r[50..52].copy_from_slice(&64u16.to_le_bytes());
    r[52..54].copy_from_slice(&(physical.len() as u16).to_le_bytes());
    r[54..56].copy_from_slice(&((64 + logical.len()) as u16).to_le_bytes());
    r.extend(logical);
    r.extend(physical);
    let len = r.len() as u32;
    r[4..8].copy_from_slice(&len.to_le_bytes());
    r
}
