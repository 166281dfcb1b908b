//! A transaction log file (`.ldf`): its file header page, its virtual log files (VLFs), and the
//! log blocks in each, read in LSN order.
//!
//! ```text
//!  file        [file header page, 8 KB][VLF][VLF]...[VLF]      the last VLF ends at the file's end
//!  VLF         [VLF header, 8 KB][block][block]...[blocks of an earlier pass, or zeros]
//!  VLF header  +0x00 u8   (a signature)
//!              +0x04 u32  sequence number (DBCC LOGINFO's FSeqNo; 0: never used)
//!              +0x10 u64  the VLF's size in bytes, its header included: the next VLF starts there
//!  block       as a backup's log stream holds it (see [`super::block`]); its LSN is the VLF's
//!              sequence number : its offset in the VLF in 512-byte sectors (0x10 for the first,
//!              right after the VLF header)
//! ```
//!
//! Sources: the first VLF at byte 8192, after the file header page (a file header page like a
//! data file's: Bob Ward's `bobsql` "Inside the transaction log" demos; `DBCC LOGINFO`'s
//! StartOffset 8192 in Paul Randal's and Kalen Delaney's posts); the VLF header's sequence number
//! at +0x04 and size at +0x10, each VLF following the previous one by its size, and a block's
//! byte offset being its VLF's start plus 512 times its LSN's block number (Eka Siswanto, "High
//! level view of log file" and "Structure of log block", SQL Server 2000; the size is read as
//! eight bytes, the source showing its low four); the VLF header being 8 KB, the first block
//! at 0x2000 in the VLF (a public forensic `.ldf` parser). The corpus holds no `.ldf`, and none
//! of its log backups crosses from one VLF to the next: this layout is the sources' alone, not
//! checked on a file SQL Server wrote. The blocks are the ones log backups copy, read by the
//! same code (their status, parity and saved sector bytes checked on `chains/`, see
//! [`super::block`]).
//!
//! DBCC LOGINFO's Status and Parity: no source places them in the VLF header, so they are not
//! read from it. The parity mdfkit gives a VLF is its first block's (every sector of the blocks
//! written in one pass over a VLF carries the same parity bits, flipped each pass: Randal,
//! "Inside the Storage Engine: More on the circular nature of the log"), and a VLF is used when
//! that block carries its sequence number.
//!
//! The end of the log in a VLF: a block is read when its header parses, its LSN is the VLF's
//! sequence number at the block's own position and it carries the parity of the VLF's first
//! block. The first that does not is where the VLF's log ends (zeros never written, or a block
//! of an earlier pass: another sequence number, the other parity), and so is a block whose later
//! sectors carry the other parity (a write torn at the end of the log). A block current by its
//! header whose slots do not fit, or that runs past its VLF, is an error naming the file and
//! byte offset. The VLF chain only moves forward (each VLF is at least its header and one sector),
//! so it cannot cycle; a size below that, not a whole number of sectors, or past the end of the
//! file is an error naming the file and the VLF's offset, as are two VLFs with one sequence number.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::backup::Lsn;
use crate::bytes::{read_u32, read_u64};
use crate::error::{Error, Result};
use crate::io::ByteSource;
use crate::page::{PageHeader, PageType, PAGE_SIZE};

use super::block::{BlockHeader, LogBlock, BLOCK_HEADER_SIZE, SECTOR};

/// Bytes of the file header page, before the first VLF.
pub const FILE_HEADER_SIZE: u64 = PAGE_SIZE as u64;
/// Bytes of a VLF's header, before its first block.
pub const VLF_HEADER_SIZE: u64 = 8192;
/// Where the VLF header keeps its sequence number.
const VLF_SEQUENCE_AT: usize = 0x04;
/// Where the VLF header keeps its size.
const VLF_SIZE_AT: usize = 0x10;
/// The VLF header's bytes read.
const VLF_FIELDS: usize = 0x18;

/// One virtual log file, as `DBCC LOGINFO` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualLogFile {
    /// Byte offset in the file (StartOffset).
    pub offset: u64,
    /// Size in bytes, its header included (FileSize).
    pub size: u64,
    /// Sequence number (FSeqNo); 0 for a VLF never used.
    pub sequence: u32,
    /// The parity bits (0x40 or 0x80) of its first block, when that block carries its sequence
    /// number; `None` for a VLF whose log is not there.
    pub parity: Option<u8>,
    /// The LSN of its first block (slot 0), when it has one.
    pub first_lsn: Option<Lsn>,
}

/// A transaction log file: its file id and VLFs, and its blocks in LSN order
/// ([`LogFile::blocks`]).
pub struct LogFile {
    path: PathBuf,
    source: Box<dyn ByteSource>,
    file_id: u16,
    vlfs: Vec<VirtualLogFile>,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile").field("path", &self.path).field("file_id", &self.file_id).finish_non_exhaustive()
    }
}

/// Whether the file at `path` is a transaction log (`.ldf`), by its first bytes.
pub fn is_log_file(path: &Path) -> Result<bool> {
    let source = crate::location::open(path)?;
    let head = crate::sniff::read_head(source.as_ref())
        .map_err(|e| Error::io(path, "cannot read the start of the file", e))?;
    Ok(crate::sniff::sniff(&head) == crate::sniff::FileFormat::TransactionLog)
}

impl LogFile {
    /// Opens the log file at `path` (or URL) and reads its VLF headers.
    pub fn open(path: &Path) -> Result<LogFile> {
        LogFile::from_source(crate::location::open(path)?, path)
    }

    /// Reads the VLF headers of the log file in `source`; `path` names it in errors.
    pub fn from_source(source: Box<dyn ByteSource>, path: &Path) -> Result<LogFile> {
        let fail = |at: u64, m: String| Error::corrupt(format!("transaction log, byte {at}: {m}")).in_file(path);
        let len = source.len();
        let mut head = vec![0u8; PAGE_SIZE];
        if source.read_at_most(&mut head, 0).map_err(|e| Error::io(path, "cannot read the file header page", e))?
            < PAGE_SIZE
        {
            return Err(fail(0, format!("the file is {len} bytes, shorter than its 8 KB file header page")));
        }
        let header = PageHeader::parse(&head).map_err(|e| e.in_file(path))?;
        let file_id = header.this_page.file;
        if header.page_type != PageType::FileHeader || header.this_page.page != 0 || file_id == 0 {
            return Err(Error::not_a_database(format!(
                "page 0 is a {} page at {}, not a log file's file header page",
                header.page_type.name(),
                header.this_page
            ))
            .in_file(path));
        }
        let mut vlfs: Vec<VirtualLogFile> = Vec::new();
        // The offset of the VLF of each sequence number read so far.
        let mut offsets: HashMap<u32, u64> = HashMap::new();
        let mut at = FILE_HEADER_SIZE;
        let smallest = VLF_HEADER_SIZE + SECTOR as u64;
        while at < len {
            if len - at < smallest {
                return Err(fail(at, format!("{} bytes after the last virtual log file, less than one", len - at)));
            }
            let mut fields = [0u8; VLF_FIELDS];
            source.read_exact_at(&mut fields, at).map_err(|e| Error::io(path, "cannot read a VLF header", e))?;
            let sequence = read_u32(&fields, VLF_SEQUENCE_AT).unwrap_or(0);
            let size = read_u64(&fields, VLF_SIZE_AT).unwrap_or(0);
            if size < smallest || !size.is_multiple_of(SECTOR as u64) {
                return Err(fail(
                    at,
                    format!(
                        "the virtual log file here says it is {size} bytes: a VLF is its {VLF_HEADER_SIZE}-byte \
                         header and whole {SECTOR}-byte sectors"
                    ),
                ));
            }
            if size > len - at {
                return Err(fail(
                    at,
                    format!(
                        "the virtual log file here says it is {size} bytes, past the end of the file ({len} bytes)"
                    ),
                ));
            }
            if let Some(twin) = (sequence != 0).then(|| offsets.insert(sequence, at)).flatten() {
                return Err(fail(
                    at,
                    format!("this virtual log file and the one at byte {twin} both say they are sequence {sequence}"),
                ));
            }
            let mut vlf = VirtualLogFile { offset: at, size, sequence, parity: None, first_lsn: None };
            if sequence != 0 {
                let first = current_header(source.as_ref(), &vlf, at + VLF_HEADER_SIZE)
                    .map_err(|e| Error::io(path, "cannot read a log block header", e))?;
                vlf.parity = first.map(|h| h.parity());
                vlf.first_lsn = first.map(|h| h.lsn);
            }
            vlfs.push(vlf);
            at += size;
        }
        Ok(LogFile { path: path.to_path_buf(), source, file_id, vlfs })
    }

    /// The file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The log file's file id (2 for a database's first log file), from its file header page.
    pub fn file_id(&self) -> u16 {
        self.file_id
    }

    /// The VLFs in file order.
    pub fn vlfs(&self) -> &[VirtualLogFile] {
        &self.vlfs
    }

    /// The LSN of the file's first block in LSN order, when any VLF holds log.
    pub fn first_lsn(&self) -> Option<Lsn> {
        self.vlfs.iter().filter_map(|v| v.first_lsn).min()
    }

    /// The blocks of every used VLF, in sequence number order, each up to the end of its log.
    pub fn blocks(&self) -> LogFileBlocks<'_> {
        let mut order: Vec<&VirtualLogFile> = self.vlfs.iter().filter(|v| v.first_lsn.is_some()).collect();
        order.sort_by_key(|v| v.sequence);
        let at = order.first().map_or(0, |v| v.offset + VLF_HEADER_SIZE);
        LogFileBlocks { file: self, order, vlf: 0, at, done: false }
    }
}

/// The header of the block at `at` when it is current in `vlf`: it parses, carries the VLF's
/// sequence number at its own position, with the VLF's parity (once known). `None` ends the VLF's log.
fn current_header(source: &dyn ByteSource, vlf: &VirtualLogFile, at: u64) -> std::io::Result<Option<BlockHeader>> {
    if at + BLOCK_HEADER_SIZE as u64 > vlf.offset + vlf.size {
        return Ok(None);
    }
    let mut raw = [0u8; BLOCK_HEADER_SIZE];
    source.read_exact_at(&mut raw, at)?;
    let Ok(Some(h)) = BlockHeader::parse(&raw) else { return Ok(None) };
    let position = (at - vlf.offset) / SECTOR as u64;
    let current = h.lsn.vlf == vlf.sequence
        && u64::from(h.lsn.block) == position
        && vlf.parity.is_none_or(|parity| parity == h.parity());
    Ok(current.then_some(h))
}

/// The blocks of a [`LogFile`] in LSN order ([`LogFile::blocks`]).
pub struct LogFileBlocks<'a> {
    file: &'a LogFile,
    order: Vec<&'a VirtualLogFile>,
    vlf: usize,
    at: u64,
    done: bool,
}

impl LogFileBlocks<'_> {
    fn read_block(&mut self) -> Result<Option<LogBlock>> {
        let path = self.file.path.as_path();
        while let Some(vlf) = self.order.get(self.vlf).copied() {
            let header = current_header(self.file.source.as_ref(), vlf, self.at)
                .map_err(|e| Error::io(path, "cannot read a log block header", e))?;
            let Some(h) = header else {
                self.next_vlf();
                continue;
            };
            let fail = |m: String| {
                Error::corrupt(format!(
                    "transaction log, log block at byte {} (LSN {}, in the VLF at byte {}): {m}",
                    self.at,
                    super::lsn_text(h.lsn),
                    vlf.offset
                ))
                .in_file(path)
            };
            let size = u64::from(h.size);
            if self.at + size > vlf.offset + vlf.size {
                return Err(fail(format!("the block is {size} bytes, past the end of its VLF")));
            }
            let mut raw = vec![0u8; usize::from(h.size)];
            self.file
                .source
                .read_exact_at(&mut raw, self.at)
                .map_err(|e| Error::io(path, "cannot read a log block", e))?;
            if h.stale_sector(&raw).is_some() {
                // A write torn at the end of the log: the log of this VLF ends before it.
                self.next_vlf();
                continue;
            }
            let block = LogBlock::parse(&raw).map_err(fail)?;
            self.at += size;
            if let Some(block) = block {
                return Ok(Some(block));
            }
        }
        Ok(None)
    }

    fn next_vlf(&mut self) {
        self.vlf += 1;
        self.at = self.order.get(self.vlf).map_or(0, |v| v.offset + VLF_HEADER_SIZE);
    }
}

impl Iterator for LogFileBlocks<'_> {
    type Item = Result<LogBlock>;

    fn next(&mut self) -> Option<Result<LogBlock>> {
        if self.done {
            return None;
        }
        let read = self.read_block();
        self.done = !matches!(read, Ok(Some(_)));
        read.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::super::block::tests::forge_block_with_parity;
    use super::*;

    /// A log file built from the layout above: file header page (file id 2), then one VLF per
    /// `(size, sequence, blocks)`, each block written at its LSN's position.
    fn forge_log(vlfs: &[(u64, u32, Vec<Vec<u8>>)]) -> Vec<u8> {
        let mut b = vec![0u8; PAGE_SIZE];
        b[0] = 1;
        b[1] = 15; // file header page
        b[32..36].copy_from_slice(&0u32.to_le_bytes());
        b[36..38].copy_from_slice(&2u16.to_le_bytes());
        for (size, sequence, blocks) in vlfs {
            let start = b.len();
            b.resize(start + *size as usize, 0);
            b[start] = 0xab;
            b[start + 4..start + 8].copy_from_slice(&sequence.to_le_bytes());
            b[start + 16..start + 24].copy_from_slice(&size.to_le_bytes());
            for block in blocks {
                let sector = u32::from_le_bytes(block[16..20].try_into().unwrap()) as usize;
                let at = start + sector * SECTOR;
                b[at..at + block.len()].copy_from_slice(block);
            }
        }
        b
    }

    fn open(bytes: Vec<u8>) -> Result<LogFile> {
        LogFile::from_source(Box::new(bytes), Path::new("forged.ldf"))
    }

    fn lsns(file: &LogFile) -> Vec<(u32, u32)> {
        file.blocks().map(|b| b.map(|b| (b.header.lsn.vlf, b.header.lsn.block))).collect::<Result<_>>().unwrap()
    }

    const VLF: u64 = 64 * 1024;

    #[test]
    fn vlfs_and_blocks_are_read_in_sequence_order_up_to_the_stale_blocks() {
        let rec = |n: u8| vec![n; 40];
        // VLF 1 (sequence 31): two blocks, then a block of its previous pass (sequence 27, other parity).
        let vlf1 = vec![
            forge_block_with_parity(0x80, 1, (31, 0x10), &[rec(1)]),
            forge_block_with_parity(0x80, 2, (31, 0x11), &[rec(2), rec(3)]),
            forge_block_with_parity(0x40, 1, (27, 0x13), &[rec(4)]),
        ];
        // VLF 2 (sequence 30, written before VLF 1): one block, then zeros.
        let vlf2 = vec![forge_block_with_parity(0x40, 1, (30, 0x10), &[rec(5)])];
        let bytes = forge_log(&[(VLF, 31, vlf1), (VLF, 30, vlf2), (VLF, 0, vec![])]);
        let file = open(bytes.clone()).unwrap();
        assert_eq!(file.file_id(), 2);
        let vlfs = file.vlfs();
        assert_eq!(vlfs.len(), 3);
        assert_eq!((vlfs[0].offset, vlfs[0].size, vlfs[0].sequence, vlfs[0].parity), (8192, VLF, 31, Some(0x80)));
        assert_eq!((vlfs[1].offset, vlfs[1].sequence, vlfs[1].parity), (8192 + VLF, 30, Some(0x40)));
        assert_eq!((vlfs[2].sequence, vlfs[2].parity, vlfs[2].first_lsn), (0, None, None));
        assert_eq!(file.first_lsn(), Some(Lsn { vlf: 30, block: 0x10, slot: 0 }));
        assert_eq!(lsns(&file), [(30, 0x10), (31, 0x10), (31, 0x11)]);
        let records: usize = file.blocks().map(|b| b.unwrap().record_count()).sum();
        assert_eq!(records, 4);
    }

    #[test]
    fn a_torn_block_ends_the_vlf_and_a_lying_block_is_named() {
        let good = forge_block_with_parity(0x40, 1, (9, 0x10), &[vec![1; 40]]);
        let mut torn = forge_block_with_parity(0x40, 2, (9, 0x11), &[vec![2; 600]]);
        torn[SECTOR] ^= 0xc0; // its second sector still from the other pass
        let file = open(forge_log(&[(VLF, 9, vec![good.clone(), torn])])).unwrap();
        assert_eq!(lsns(&file), [(9, 0x10)]);

        let mut lying = forge_block_with_parity(0x40, 1, (9, 0x11), &[vec![2; 40]]);
        let array = usize::from(u16::from_le_bytes([lying[4], lying[5]]));
        lying[array - 2..array].copy_from_slice(&0x3000u16.to_le_bytes());
        let file = open(forge_log(&[(VLF, 9, vec![good, lying])])).unwrap();
        let err = file.blocks().find_map(Result::err).unwrap();
        let text = err.to_string();
        assert!(text.contains("forged.ldf") && text.contains(&format!("byte {}", 8192 + 0x11 * 512)), "{text}");
        assert!(text.contains("slot 1"), "{text}");
    }

    #[test]
    fn a_broken_vlf_chain_is_named_by_offset() {
        let at_second = 8192 + VLF;
        let mut bytes = forge_log(&[(VLF, 5, vec![]), (VLF, 6, vec![])]);
        let size_at = at_second as usize + VLF_SIZE_AT;
        bytes[size_at..size_at + 8].copy_from_slice(&0u64.to_le_bytes());
        let text = open(bytes.clone()).unwrap_err().to_string();
        assert!(text.contains(&format!("byte {at_second}")) && text.contains("says it is 0 bytes"), "{text}");
        bytes[size_at..size_at + 8].copy_from_slice(&(2 * VLF).to_le_bytes());
        let text = open(bytes.clone()).unwrap_err().to_string();
        assert!(text.contains("past the end of the file"), "{text}");
        bytes[size_at..size_at + 8].copy_from_slice(&VLF.to_le_bytes());
        bytes[at_second as usize + VLF_SEQUENCE_AT] = 5;
        let text = open(bytes.clone()).unwrap_err().to_string();
        assert!(text.contains("both say they are sequence 5"), "{text}");
        bytes.truncate(bytes.len() - 100);
        assert!(open(bytes).unwrap_err().to_string().contains("past the end of the file"));
        let data_file_head = vec![0u8; 4 * PAGE_SIZE];
        assert!(open(data_file_head).unwrap_err().to_string().contains("not a log file's file header page"));
        assert!(open(vec![0u8; 100]).unwrap_err().to_string().contains("shorter than its 8 KB"));
    }
}
