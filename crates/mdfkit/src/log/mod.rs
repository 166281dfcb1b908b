//! The transaction log: log blocks ([`block`]) and log records ([`record`]), read from the log
//! portion of backups (the MQTL streams of full, differential and log backups, see
//! [`crate::backup`]).
//!
//! ```text
//!  log stream   [block][block]...[block][zeros to the end of the piece]
//!  block        [header 0x28][record][record]...[free][slot array][saved sector bytes]
//!  record       [header 0x18 | fixed part][count, lengths][row image]...[row image]
//!  LSN          vlf : block (512-byte sectors) : slot (1 = the block's first record)
//! ```
//!
//! A log backup holds the log from its first LSN to its last (`RESTORE HEADERONLY`): its first
//! block is copied whole, so its records before the first LSN belong to the previous backup and
//! [`BackupLog`] leaves them out, as it leaves out anything from the last LSN on. A full or
//! differential backup holds the log restore needs to make its fuzzy pages consistent, which may
//! start before the backup's first LSN (the oldest open transaction). A block header of zeros ends a piece's log
//! (the rest of the piece is zeros) unless a block with a later LSN follows it in the piece: then
//! the header was damaged, and reading fails naming the byte offset and the block that follows,
//! as for any other damaged block (stale blocks of an earlier LSN after the end do not count). Blocks are read one at a
//! time, in stream order; a stream only moves forward, so no chain in it can cycle.
//!
//! Transaction log files (`.ldf`: file header page, virtual log files, their blocks) are read in
//! [`ldf`], with the same blocks. Log records are listed ([`listing`]) and redone onto pages ([`redo`]); a
//! table's inserted and deleted rows are decoded in [`crate::log_changes`], which needs the
//! catalog of a [`crate::Database`] (this module stays below it: opening a chain redoes its log).

pub mod block;
pub mod ldf;
pub mod listing;
pub mod record;
pub mod redo;

use crate::backup::{BackupMedia, BackupSet, BackupType, LogPiece, Lsn};
use crate::error::{Error, Result};

pub use block::LogBlock;
pub use record::{Context, LogRecord, Operation, TransactionId};

/// The log blocks of one backup set, in stream order.
pub struct BackupLog<'a> {
    media: &'a BackupMedia,
    set: BackupSet,
    pieces: Vec<LogPiece>,
    piece: usize,
    at: u64,
    done: bool,
    /// The LSN of the last block read.
    last_block: Option<Lsn>,
}

impl<'a> BackupLog<'a> {
    /// The log of the set at `position`.
    pub fn new(media: &'a BackupMedia, position: u16) -> Result<Self> {
        let Some(set) = media.set(position).cloned() else {
            return Err(Error::not_found(format!("no backup set at position {position}")));
        };
        let pieces = media.log_pieces(position);
        Ok(BackupLog { media, set, pieces, piece: 0, at: 0, done: false, last_block: None })
    }

    /// The backup set whose log this is (its header: first and last LSN, dates).
    pub fn backup_set(&self) -> &BackupSet {
        &self.set
    }

    /// Whether a record belongs to this backup: before its last LSN, and for a log backup from
    /// its first LSN on.
    pub fn holds(&self, lsn: Lsn) -> bool {
        lsn < self.set.last_lsn && (self.set.backup_type != BackupType::Log || lsn >= self.set.first_lsn)
    }

    fn read_block(&mut self) -> Result<Option<LogBlock>> {
        while let Some(piece) = self.pieces.get(self.piece).copied() {
            if self.at + block::BLOCK_HEADER_SIZE as u64 > piece.len {
                self.piece += 1;
                self.at = 0;
                continue;
            }
            let path = self.media.stripe_path(&piece).to_path_buf();
            let mut header = [0u8; block::BLOCK_HEADER_SIZE];
            self.media.read_log(&piece, self.at, &mut header)?;
            let place = self.media.offsets_in(&piece);
            let fail = |at: u64, m: String| {
                Error::corrupt(format!("log block at byte {} of {place}: {m}", piece.offset + at)).in_file(&path)
            };
            let Some(h) = block::BlockHeader::parse(&header).map_err(|m| fail(self.at, m))? else {
                // The used part of this piece ends here, unless a later block follows: then this
                // header was zeroed (a damaged block), and the log cannot be read on.
                if let Some((next_at, next)) = self.later_block(&piece, self.at)? {
                    let read = match self.last_block {
                        Some(lsn) => format!("the block before it is at LSN {}", lsn_text(lsn)),
                        None => "it is the first".to_string(),
                    };
                    return Err(fail(
                        self.at,
                        format!(
                            "its header is zeros, as at the end of the log, but a block follows at byte {} \
                             (LSN {}): the block here is damaged ({read})",
                            piece.offset + next_at,
                            lsn_text(next)
                        ),
                    ));
                }
                self.piece += 1;
                self.at = 0;
                continue;
            };
            let mut raw = vec![0u8; usize::from(h.size)];
            self.media.read_log(&piece, self.at, &mut raw)?;
            let parsed = LogBlock::parse(&raw).map_err(|m| fail(self.at, format!("(LSN {}) {m}", lsn_text(h.lsn))))?;
            self.at += u64::from(h.size);
            self.last_block = Some(h.lsn);
            if let Some(block) = parsed {
                return Ok(Some(block));
            }
        }
        Ok(None)
    }

    /// The first block after `at` in `piece` (its offset in the piece and LSN) whose header
    /// reads and whose LSN is past the last block read: what a zeroed header hides. Older
    /// blocks (stale log left in the stream) do not count. Reads the rest of the piece once,
    /// a chunk at a time, looking at each sector's first byte.
    fn later_block(&self, piece: &LogPiece, at: u64) -> Result<Option<(u64, Lsn)>> {
        const CHUNK: usize = 64 * 1024;
        let sector = block::SECTOR as u64;
        let mut chunk = vec![0u8; CHUNK];
        let mut from = at + sector;
        while from + block::BLOCK_HEADER_SIZE as u64 <= piece.len {
            let len = (piece.len - from).min(CHUNK as u64) as usize;
            self.media.read_log(piece, from, &mut chunk[..len])?;
            for offset in (0..len).step_by(block::SECTOR) {
                let Some(header) = chunk.get(offset..offset + block::BLOCK_HEADER_SIZE) else { break };
                if let Ok(Some(h)) = block::BlockHeader::parse(header) {
                    if self.last_block.is_none_or(|last| h.lsn > last) {
                        return Ok(Some((from + offset as u64, h.lsn)));
                    }
                }
            }
            from += len as u64;
        }
        Ok(None)
    }
}

impl Iterator for BackupLog<'_> {
    type Item = Result<LogBlock>;

    fn next(&mut self) -> Option<Result<LogBlock>> {
        if self.done {
            return None;
        }
        match self.read_block() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Calls `each` for every record of `block`, in slot order; a record too short for its own
/// header is an error naming its LSN.
pub fn for_each_record(block: &LogBlock, mut each: impl FnMut(LogRecord<'_>) -> Result<()>) -> Result<()> {
    for slot in 1..=block.record_count() {
        let Some((lsn, bytes)) = block.record_bytes(slot) else { break };
        let record =
            LogRecord::parse(lsn, bytes).map_err(|m| Error::corrupt(format!("log record {}: {m}", lsn_text(lsn))))?;
        each(record)?;
    }
    Ok(())
}

/// An LSN as `fn_dblog` shows it: `00000019:0000008c:0001`.
pub fn lsn_text(lsn: Lsn) -> String {
    format!("{:08x}:{:08x}:{:04x}", lsn.vlf, lsn.block, lsn.slot)
}
