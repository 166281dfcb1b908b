//! Shared by the fuzz targets: how a fuzz input becomes a data file or a set of pages.
//!
//! **Sparse pages.** Inputs that stand for whole files list pages, not files: each entry is a
//! little-endian `u16` page number (taken modulo [`MAX_PAGES`]) followed by the page's 8192 bytes;
//! a short last entry is zero-padded. Pages not listed are zero. Seeds are the pages the reader
//! actually touches in corpus files (`crates/mdfkit/examples/fuzz_seeds.rs`), so a seed stays a few
//! hundred KB where the file is MBs.
//!
//! Pages flagged checksum-protected get their checksum recomputed, as a hostile file would: the
//! damage then reaches the parsers instead of stopping at the checksum (the `page` target covers
//! the checksum itself).

use std::collections::BTreeMap;
use std::path::PathBuf;

use mdfkit::error::Result;
use mdfkit::io::ByteSource;
use mdfkit::page::protection::page_checksum;
use mdfkit::page::{PageId, FLAG_CHECKSUM, PAGE_SIZE};
use mdfkit::source::{DataFiles, PageSource, SourceFile};

/// Largest file a fuzz input builds: 2048 pages (16 MB).
pub const MAX_PAGES: usize = 2048;
/// One sparse entry: page number + page.
pub const ENTRY: usize = 2 + PAGE_SIZE;

/// The pages of a sparse input, by page number (a later entry for the same page wins).
pub fn sparse_pages(data: &[u8]) -> BTreeMap<u32, Vec<u8>> {
    let mut pages = BTreeMap::new();
    for entry in data.chunks(ENTRY) {
        if entry.len() < 2 {
            break;
        }
        let number = u16::from_le_bytes([entry[0], entry[1]]) as usize % MAX_PAGES;
        let mut page = entry[2..].to_vec();
        page.resize(PAGE_SIZE, 0);
        fix_checksum(&mut page);
        pages.insert(number as u32, page);
    }
    pages
}

/// Recomputes the checksum of a page that says it has one.
pub fn fix_checksum(page: &mut [u8]) {
    if page.len() == PAGE_SIZE && u16::from_le_bytes([page[4], page[5]]) & FLAG_CHECKSUM != 0 {
        let checksum = page_checksum(page);
        page[60..64].copy_from_slice(&checksum.to_le_bytes());
    }
}

/// A whole data file from a sparse input, as long as its last page (at least 2 pages), served
/// page by page from the pages listed: the file's bytes are never built (a 2048-page input would
/// otherwise zero and copy 16 MB an input, more than the reader's work on it).
pub struct SparseFile {
    pages: BTreeMap<u32, Vec<u8>>,
    len: u64,
}

impl SparseFile {
    pub fn new(data: &[u8]) -> Self {
        let pages = sparse_pages(data);
        let count = pages.keys().next_back().map_or(2, |&last| (u64::from(last) + 1).max(2));
        SparseFile { pages, len: count * PAGE_SIZE as u64 }
    }
}

impl ByteSource for SparseFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > self.len) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let mut at = offset as usize;
        let mut done = 0;
        while done < buf.len() {
            let (page, within) = (at / PAGE_SIZE, at % PAGE_SIZE);
            let n = (PAGE_SIZE - within).min(buf.len() - done);
            match self.pages.get(&(page as u32)) {
                Some(bytes) => buf[done..done + n].copy_from_slice(&bytes[within..within + n]),
                None => buf[done..done + n].fill(0),
            }
            (at, done) = (at + n, done + n);
        }
        Ok(())
    }
}

/// The data files of a sparse input: one file, `fuzz.mdf`.
pub fn sparse_files(data: &[u8]) -> Result<DataFiles> {
    DataFiles::from_inputs(vec![(PathBuf::from("fuzz.mdf"), Box::new(SparseFile::new(data)))])
}

/// Pages in memory, all in file 1, served without any file header checks.
pub struct MemPages {
    pages: BTreeMap<u32, Vec<u8>>,
    files: Vec<SourceFile>,
}

impl MemPages {
    pub fn new(pages: BTreeMap<u32, Vec<u8>>) -> Self {
        let page_count = pages.keys().next_back().map_or(0, |&p| p + 1);
        MemPages { pages, files: vec![SourceFile { file_id: 1, location: PathBuf::from("fuzz.mdf"), page_count }] }
    }
}

impl PageSource for MemPages {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        match self.pages.get(&id.page).filter(|_| id.file == 1) {
            Some(page) => buf.copy_from_slice(page),
            None => buf.fill(0),
        }
        Ok(())
    }

    fn files(&self) -> &[SourceFile] {
        &self.files
    }
}
