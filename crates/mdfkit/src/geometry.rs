//! Where a page is and how big it is: the page address ([`PageId`], `file:page`, and its 6-byte
//! on-disk form) and the page geometry that turns addresses into byte offsets (8192-byte pages,
//! a 96-byte header; the layout is drawn in [`crate::page`]).
//!
//! These facts sit below every other module, the error type included (an error names the page it
//! is about), and are re-exported where readers look for them: `page::PageId`, `page::PAGE_SIZE`.
//!
//! Sources: Paul Randal, "Inside the Storage Engine: Anatomy of a page" (8 KB pages, 96-byte
//! header, page pointers as page number then file id); checked against every corpus file.

use std::fmt;

use crate::bytes::{read_u16, read_u32};

/// Size of every page.
pub const PAGE_SIZE: usize = 8192;
/// Size of the page header.
pub const HEADER_SIZE: usize = 96;

/// A page address: file id and page number within that file, shown as `file:page` like DBCC does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PageId {
    /// The file id (`sys.database_files.file_id`): 1 is the primary data file, 2 the first log.
    pub file: u16,
    /// The page number within the file: its byte offset divided by 8192.
    pub page: u32,
}

impl PageId {
    /// The page `file:page`.
    pub const fn new(file: u16, page: u32) -> Self {
        PageId { file, page }
    }

    /// Reads the 6-byte on-disk pointer: page number (4 bytes) then file id (2 bytes).
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        Some(PageId { page: read_u32(b, 0)?, file: read_u16(b, 4)? })
    }

    /// The null pointer `0:0` marks "no page" (no next page, empty table).
    pub fn is_null(self) -> bool {
        self.file == 0 && self.page == 0
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.page)
    }
}
