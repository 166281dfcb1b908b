//! What a file is, from its first bytes: the one home of the magic bytes.
//!
//! Every opener asks here before reading a file as anything: `Database::open` sends backups to
//! the backup reader and the rest to the data file reader, which refuses backups and logs by
//! name; the backup reader tells compressed backups from plain ones.
//!
//! | kind | first bytes |
//! |---|---|
//! | MTF backup | `TAPE`: the media header block of Microsoft Tape Format |
//! | compressed backup | `MSSQLBAK`: the compressed container (see `backup::mssqlbak`) |
//! | data file (`.mdf`, `.ndf`) | page 0 a file header page at its own address (file id, page 0), page 1 the file's first PFS page |
//! | transaction log (`.ldf`) | page 0 a file header page too, then log blocks where a data file has its PFS page |
//!
//! Sources: the corpus (every data file, log and backup of `../shared/corpus`), and the MTF 1.00a
//! specification for the `TAPE` block.

use crate::io::ByteSource;
use crate::page::{PageHeader, PageId, PageType, PAGE_SIZE};

/// The first bytes of an uncompressed backup: MTF's media header block type.
pub const MTF_MAGIC: &[u8; 4] = b"TAPE";
/// The first bytes of a compressed backup.
pub const COMPRESSED_BACKUP_MAGIC: &[u8; 8] = b"MSSQLBAK";
/// Bytes from the start of a file that tell every kind apart: a data file's first two pages.
pub const HEAD_BYTES: usize = 2 * PAGE_SIZE;

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// A data file (`.mdf`, `.ndf`), with the file id of its own pages.
    DataFile {
        /// The file id in its own pages' headers.
        file_id: u16,
    },
    /// A transaction log (`.ldf`).
    TransactionLog,
    /// An uncompressed backup (Microsoft Tape Format).
    Backup,
    /// A compressed backup.
    CompressedBackup,
    /// Anything else, or too short to tell.
    Other,
}

impl FileFormat {
    /// Either kind of backup.
    pub fn is_backup(self) -> bool {
        matches!(self, FileFormat::Backup | FileFormat::CompressedBackup)
    }
}

/// What `head`, a file's first bytes (up to [`HEAD_BYTES`]), says the file is.
pub fn sniff(head: &[u8]) -> FileFormat {
    if head.starts_with(MTF_MAGIC) {
        return FileFormat::Backup;
    }
    if head.starts_with(COMPRESSED_BACKUP_MAGIC) {
        return FileFormat::CompressedBackup;
    }
    let (Some(first), Some(second)) = (head.get(..PAGE_SIZE), head.get(PAGE_SIZE..HEAD_BYTES)) else {
        return FileFormat::Other;
    };
    let (Ok(first), Ok(second)) = (PageHeader::parse(first), PageHeader::parse(second)) else {
        return FileFormat::Other;
    };
    let file_id = first.this_page.file;
    if first.page_type != PageType::FileHeader || first.this_page.page != 0 || file_id == 0 {
        return FileFormat::Other;
    }
    if second.page_type == PageType::Pfs && second.this_page == PageId::new(file_id, 1) {
        FileFormat::DataFile { file_id }
    } else {
        FileFormat::TransactionLog
    }
}

/// The first bytes of `source` to [`sniff`]: [`HEAD_BYTES`], or fewer when it is shorter.
pub fn read_head(source: &dyn ByteSource) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0u8; HEAD_BYTES];
    let n = source.read_at_most(&mut head, 0)?;
    head.truncate(n);
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pages: page 0 of `page0_type` at (1, 0), page 1 of `page1_type` at (1, 1).
    fn head(page0_type: u8, page1_type: u8) -> Vec<u8> {
        let mut b = vec![0u8; HEAD_BYTES];
        for (page, page_type) in [(0usize, page0_type), (1, page1_type)] {
            let at = page * PAGE_SIZE;
            b[at] = 1;
            b[at + 1] = page_type;
            b[at + 32..at + 36].copy_from_slice(&(page as u32).to_le_bytes());
            b[at + 36..at + 38].copy_from_slice(&1u16.to_le_bytes());
        }
        b
    }

    #[test]
    fn tells_each_kind_apart() {
        assert_eq!(sniff(b"TAPE\0\0\0\0"), FileFormat::Backup);
        assert_eq!(sniff(b"MSSQLBAK\x02"), FileFormat::CompressedBackup);
        assert_eq!(sniff(&head(15, 11)), FileFormat::DataFile { file_id: 1 });
        assert_eq!(sniff(&head(15, 0)), FileFormat::TransactionLog);
        assert_eq!(sniff(&head(1, 11)), FileFormat::Other);
        assert_eq!(sniff(&head(15, 11)[..PAGE_SIZE]), FileFormat::Other, "too short to see page 1");
        assert_eq!(sniff(b"hello"), FileFormat::Other);
        assert!(FileFormat::CompressedBackup.is_backup() && !FileFormat::TransactionLog.is_backup());
    }
}
