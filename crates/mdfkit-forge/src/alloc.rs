//! Space in the data files: extents handed out to allocation units (uniform extents, spread over
//! the files one extent at a time), single pages from mixed extents, and the per-page allocation
//! state the PFS, GAM and SGAM pages are written from (reader: `page/allocation.rs`).
//!
//! Fixed pages of every file: 0 file header, 1 PFS (then every 8,088 pages), 2 GAM and 3 SGAM
//! (then every 511,232 pages), 6 differential map, 7 bulk-change map (same interval); the primary
//! file also has the boot page 1:9 and the first page of sysallocunits at 1:20 (dbi_firstSysIndexes
//! from 706 on). Pages 4 and 5 stay unused, as in every corpus file.

use std::collections::VecDeque;

use crate::page::PageId;

pub const PFS_INTERVAL: u32 = 8088;
pub const GAM_INTERVAL: u32 = 511_232;
pub const BOOT_PAGE: PageId = PageId::new(1, 9);
pub const FIRST_SYS_INDEXES: PageId = PageId::new(1, 20);

/// PFS byte bits.
pub const PFS_ALLOCATED: u8 = 0x40;
pub const PFS_MIXED: u8 = 0x20;
pub const PFS_IAM: u8 = 0x10;
pub const PFS_GHOST: u8 = 0x08;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtentState {
    Free,
    Uniform,
    Mixed,
}

/// One data file's space.
#[derive(Debug)]
pub struct FileSpace {
    pub file_id: u16,
    /// One byte per page: the PFS byte.
    pub pfs: Vec<u8>,
    pub extents: Vec<ExtentState>,
    next_extent: u32,
    mixed_free: VecDeque<u32>,
}

/// Whether `page` is one of a file's fixed allocation pages.
pub fn is_fixed_page(file: u16, page: u32) -> bool {
    let g = page % GAM_INTERVAL;
    page == 0
        || page == 1
        || page.is_multiple_of(PFS_INTERVAL)
        || matches!(g, 2 | 3 | 6 | 7)
        || (file == 1 && (page == BOOT_PAGE.page || page == FIRST_SYS_INDEXES.page))
}

impl FileSpace {
    fn new(file_id: u16) -> Self {
        FileSpace { file_id, pfs: Vec::new(), extents: Vec::new(), next_extent: 0, mixed_free: VecDeque::new() }
    }

    fn ensure(&mut self, extent: u32) {
        let n = extent as usize + 1;
        if self.extents.len() < n {
            self.extents.resize(n, ExtentState::Free);
            self.pfs.resize(n * 8, 0);
        }
    }

    /// Extents holding fixed pages are mixed extents; their other pages serve as single pages.
    fn holds_fixed_pages(&self, extent: u32) -> bool {
        (extent * 8..extent * 8 + 8).any(|p| is_fixed_page(self.file_id, p))
    }

    fn take_extent(&mut self) -> u32 {
        loop {
            let e = self.next_extent;
            self.next_extent += 1;
            self.ensure(e);
            if self.holds_fixed_pages(e) {
                self.extents[e as usize] = ExtentState::Mixed;
                for p in e * 8..e * 8 + 8 {
                    if is_fixed_page(self.file_id, p) {
                        self.pfs[p as usize] = PFS_ALLOCATED;
                    } else {
                        self.mixed_free.push_back(p);
                    }
                }
                continue;
            }
            return e;
        }
    }

    /// A uniform extent: its first page.
    pub fn uniform_extent(&mut self) -> u32 {
        let e = self.take_extent();
        self.extents[e as usize] = ExtentState::Uniform;
        e * 8
    }

    /// A single page from a mixed extent.
    pub fn mixed_page(&mut self) -> u32 {
        if self.mixed_free.is_empty() {
            let e = self.take_extent();
            self.extents[e as usize] = ExtentState::Mixed;
            self.mixed_free.extend(e * 8..e * 8 + 8);
        }
        self.mixed_free.pop_front().unwrap_or(0)
    }

    pub fn set_pfs(&mut self, page: u32, byte: u8) {
        self.ensure(page / 8);
        self.pfs[page as usize] = byte;
    }

    /// Pages in use up to the last extent handed out.
    pub fn extent_count(&self) -> u32 {
        self.next_extent
    }

    /// Whether a mixed extent still has unallocated pages (its SGAM bit).
    pub fn mixed_has_free(&self, extent: u32) -> bool {
        (extent * 8..extent * 8 + 8).any(|p| self.pfs.get(p as usize).is_some_and(|b| b & PFS_ALLOCATED == 0))
    }
}

/// Every data file's space.
#[derive(Debug)]
pub struct Space {
    pub files: Vec<FileSpace>,
    round_robin: usize,
}

impl Space {
    pub fn new(file_ids: &[u16]) -> Self {
        let mut files: Vec<FileSpace> = file_ids.iter().map(|&f| FileSpace::new(f)).collect();
        for f in &mut files {
            // The first extent (file header, PFS, GAM, SGAM, maps) of every file.
            f.take_extent();
            f.mixed_free.clear();
            if f.file_id == 1 {
                // Extents 1 and 2: boot page and sysallocunits' first page, then mixed pages.
                f.take_extent();
                f.take_extent();
            }
        }
        Space { files, round_robin: 0 }
    }

    pub fn file(&mut self, file_id: u16) -> &mut FileSpace {
        self.files.iter_mut().find(|f| f.file_id == file_id).expect("a file of the database")
    }

    /// A uniform extent in the next file in turn (proportional fill).
    pub fn uniform_extent(&mut self) -> PageId {
        let i = self.round_robin % self.files.len();
        self.round_robin += 1;
        let f = &mut self.files[i];
        PageId::new(f.file_id, f.uniform_extent())
    }

    pub fn set_pfs(&mut self, id: PageId, byte: u8) {
        self.file(id.file).set_pfs(id.page, byte);
    }

    pub fn pfs(&mut self, id: PageId) -> u8 {
        let f = self.file(id.file);
        f.pfs.get(id.page as usize).copied().unwrap_or(0)
    }
}

/// The pages an allocation unit owns.
#[derive(Debug, Default, Clone)]
pub struct UnitPages {
    /// Pages from mixed extents (at most 8: the IAM page's single-page slots).
    pub singles: Vec<PageId>,
    /// First pages of uniform extents.
    pub extents: Vec<PageId>,
    /// Next page in the last extent.
    cursor: Option<(PageId, u32)>,
    /// Take the first 8 pages from mixed extents (system tables; user tables of 2016+ databases
    /// get uniform extents from the start).
    pub mixed_first: bool,
    /// Pages handed out (IAM pages excepted).
    pub pages: u64,
    pub iam_pages: Vec<PageId>,
}

impl UnitPages {
    pub fn new(mixed_first: bool) -> Self {
        UnitPages { mixed_first, ..Default::default() }
    }

    /// The next page for the unit, in file `prefer_file` for single pages.
    pub fn next_page(&mut self, space: &mut Space) -> PageId {
        self.pages += 1;
        if self.mixed_first && self.singles.len() < 8 && self.extents.is_empty() {
            let id = PageId::new(1, space.file(1).mixed_page());
            self.singles.push(id);
            return id;
        }
        if let Some((first, used)) = self.cursor {
            if used < 8 {
                self.cursor = Some((first, used + 1));
                return PageId::new(first.file, first.page + used);
            }
        }
        let first = space.uniform_extent();
        self.extents.push(first);
        self.cursor = Some((first, 1));
        first
    }

    /// Pages reserved: whole extents, single pages and IAM pages.
    pub fn reserved(&self) -> u64 {
        self.extents.len() as u64 * 8 + self.singles.len() as u64 + self.iam_pages.len() as u64
    }
}
