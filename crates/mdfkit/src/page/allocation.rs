//! Allocation pages: GAM and SGAM pages (which extents are allocated, which are mixed with a free
//! page), IAM chains (which extents and pages an allocation unit owns) and PFS pages (how each
//! page is used).
//!
//! **GAM page** (type 8) at page 2 of each file and then every 511,232 pages (a GAM interval);
//! **SGAM page** (type 9) at page 3 and then every 511,232 pages. Both hold two records like an
//! IAM page: slot 0 a 94-byte header record, slot 1 the extent bitmap (4-byte record header, then
//! 7,988 bytes = 63,904 bits, least significant first) of the interval that starts at the GAM
//! interval's first page. A GAM bit is **set when the extent is free**; an SGAM bit is set when the
//! extent is a mixed extent with at least one free page.
//!
//! **IAM page** (type 10). Slot 0 holds the IAM header record; its fixed part (record offset 4):
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 4      | 4    | sequence number in the chain                                       |
//! | 40     | 6    | start page: the first page (and file) of the GAM interval mapped   |
//! | 46     | 8×6  | single-page slots: pages allocated from mixed extents (0:0 = none) |
//!
//! Slot 1 holds the extent bitmap: after a 4-byte record header, 7988 bytes = 63,904 bits, bit
//! `i` (least significant first) set when the extent starting at `start page + 8 i` belongs to the
//! allocation unit. The chain continues through the page header's next-page link, one IAM page per
//! GAM interval (511,232 pages = 4 GB) per file.
//!
//! **PFS page** (type 11) at page 1 of each file and then every 8,088 pages: slot 0 holds one byte
//! per page of its interval after a 4-byte record header. Bit 0x40 = allocated, 0x20 = mixed extent
//! page, 0x10 = IAM page, 0x08 = has ghost records, bits 0-2 = how full (0 empty, 1 up to 50 %,
//! 2 up to 80 %, 3 up to 95 %, 4 up to 100 %; meaningful for heap and LOB pages).
//!
//! Sources: Paul Randal, "Inside the Storage Engine: IAM pages, IAM chains, and allocation units"
//! and "GAM, SGAM, PFS and other allocation maps"; OrcaMDF's IAM header offsets; record lengths
//! (94 and 7992 bytes for IAM, GAM and SGAM slots 0 and 1, 8092 for PFS slot 0) checked on the
//! corpus files, whose GAM page 1:2 has its first extents' bits clear (allocated) and the rest
//! of the file's set (free), and whose PFS page 1:1 spells 0x44, 0x60, 0x64 and 0x70 for the
//! boot pages, mixed pages and IAM pages.

use crate::bytes::read_u16;
use crate::error::{Error, Result};
use crate::page::{Page, PageId, PageType};

/// An allocation unit: the id its pages carry in their headers, where its IAM chain and its
/// B-tree start, and its page counts; one row of sysallocunits
/// (`sys.system_internals_allocation_units`), read by the catalog and followed by page walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationUnit {
    /// auid: `sys.allocation_units.allocation_unit_id`, the id on its pages' headers.
    pub id: i64,
    /// 1 in-row data, 2 LOB data, 3 row-overflow data.
    pub kind: u8,
    /// ownerid: the rowset (partition) the unit belongs to.
    pub owner_id: i64,
    /// fgid: the filegroup the unit's pages are in.
    pub filegroup_id: i16,
    /// pgfirst: the first data page (the first leaf page of a B-tree); 0:0 when empty.
    pub first_page: PageId,
    /// pgroot: the root page of a B-tree.
    pub root_page: PageId,
    /// pgfirstiam: the first IAM page of the unit's IAM chain.
    pub first_iam_page: PageId,
    /// pcused: pages in use.
    pub used_pages: i64,
    /// pcdata: data pages in use.
    pub data_pages: i64,
    /// pcreserved: pages reserved.
    pub total_pages: i64,
}

impl AllocationUnit {
    /// The unit's kind as `sys.allocation_units.type_desc` spells it ([`unit_kind_name`]).
    pub fn kind_name(&self) -> &'static str {
        unit_kind_name(i64::from(self.kind))
    }
}

/// An allocation unit kind (sysallocunits.type) as `sys.allocation_units.type_desc` spells it:
/// 1 `IN_ROW_DATA`, 2 `LOB_DATA`, 3 `ROW_OVERFLOW_DATA`, anything else (0) `DROPPED`.
pub fn unit_kind_name(kind: i64) -> &'static str {
    match kind {
        1 => "IN_ROW_DATA",
        2 => "LOB_DATA",
        3 => "ROW_OVERFLOW_DATA",
        _ => "DROPPED",
    }
}

/// Pages covered by one PFS page.
pub const PFS_INTERVAL: u32 = 8088;
/// Pages covered by one GAM, SGAM or IAM page (63,904 extents of 8 pages).
pub const GAM_INTERVAL: u32 = 511_232;
/// Extents covered by one IAM page's bitmap.
const IAM_EXTENTS: usize = 63_904;
const PFS_ALLOCATED: u8 = 0x40;
const PFS_MIXED: u8 = 0x20;
const PFS_IAM: u8 = 0x10;
const PFS_GHOSTS: u8 = 0x08;
const PFS_FULLNESS: u8 = 0x07;
/// The flag bits a PFS byte spells after its fullness, in order.
const PFS_BIT_WORDS: [(u8, &str); 3] =
    [(PFS_MIXED, ", mixed extent"), (PFS_IAM, ", IAM page"), (PFS_GHOSTS, ", ghost records")];

/// The extent bitmap of a GAM, SGAM or IAM page: slot 1 after its 4-byte record header, as long
/// as the record says (at most 63,904 bits).
fn extent_bitmap_bytes(page: &Page) -> Result<&[u8]> {
    let record =
        page.slot_bytes(1)?.ok_or_else(|| Error::corrupt("allocation page has no extent bitmap").at_page(page.id()))?;
    let len = (read_u16(record, 2).unwrap_or(0) as usize).saturating_sub(4).min(IAM_EXTENTS / 8);
    record.get(4..4 + len).ok_or_else(|| {
        Error::corrupt(format!("extent bitmap claims {len} bytes, the page has fewer")).at_page(page.id())
    })
}

/// The extents whose bit is set in `bitmap` (least significant bit first), as runs of extent
/// numbers: taken a run of set bits at a time (`trailing_zeros`, then `trailing_ones`), so a word
/// all set or all clear is one step, not 64.
pub fn set_runs(bitmap: &[u8]) -> Vec<std::ops::Range<u32>> {
    let mut runs: Vec<std::ops::Range<u32>> = Vec::new();
    for (word_index, word) in bitmap.chunks(8).enumerate() {
        let mut bits = word.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
        let mut extent = word_index as u32 * 64;
        while bits != 0 {
            let clear = bits.trailing_zeros();
            bits >>= clear;
            let set = bits.trailing_ones();
            extent += clear;
            match runs.last_mut() {
                Some(run) if run.end == extent => run.end += set,
                _ => runs.push(extent..extent + set),
            }
            extent += set;
            bits = bits.checked_shr(set).unwrap_or(0);
        }
    }
    runs
}

/// What a GAM, SGAM or IAM page's extent bitmap says, as runs of extents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtentMap {
    /// The page type: GAM, SGAM or IAM.
    pub kind: PageType,
    /// The first page of the interval the bitmap maps (extent `i` starts at `start + 8 i`).
    pub start: PageId,
    /// Extents the bitmap has a bit for.
    pub extents: u32,
    /// Runs of extents whose bit is set: free (GAM), mixed with a free page (SGAM), owned (IAM).
    pub set: Vec<std::ops::Range<u32>>,
    /// An IAM page's single-page slots (pages from mixed extents; empty for GAM and SGAM).
    pub single_pages: Vec<PageId>,
}

impl ExtentMap {
    /// Reads the bitmap of a GAM, SGAM or IAM page (any other type is refused).
    pub fn parse(page: &Page) -> Result<Self> {
        let kind = page.header().page_type;
        let (start, single_pages) = match kind {
            PageType::Gam | PageType::Sgam => {
                let id = page.id();
                (PageId::new(id.file, id.page / GAM_INTERVAL * GAM_INTERVAL), Vec::new())
            }
            PageType::Iam => {
                let (start, singles, _) = IamPage::header_record(page)?;
                (start, singles)
            }
            other => {
                return Err(Error::corrupt(format!("a {} page has no extent bitmap", other.name())).at_page(page.id()))
            }
        };
        let bitmap = extent_bitmap_bytes(page)?;
        Ok(ExtentMap { kind, start, extents: bitmap.len() as u32 * 8, set: set_runs(bitmap), single_pages })
    }

    /// What a set bit means for this kind of page.
    pub fn set_means(&self) -> &'static str {
        match self.kind {
            PageType::Gam => "free (not allocated)",
            PageType::Sgam => "mixed extent with a free page",
            _ => "owned by the allocation unit",
        }
    }

    /// The pages of extent run `run`: first and last page id (the last saturating at the
    /// largest page number).
    pub fn pages(&self, run: &std::ops::Range<u32>) -> (PageId, PageId) {
        let page = |extent: u32| self.start.page.saturating_add(extent.saturating_mul(8));
        (PageId::new(self.start.file, page(run.start)), PageId::new(self.start.file, page(run.end).saturating_sub(1)))
    }
}

/// One page's byte on a PFS page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfsByte(pub u8);

impl PfsByte {
    /// Allocated to an object.
    pub fn allocated(self) -> bool {
        self.0 & PFS_ALLOCATED != 0
    }
    /// Allocated from a mixed extent.
    pub fn mixed(self) -> bool {
        self.0 & PFS_MIXED != 0
    }
    /// An IAM page.
    pub fn iam(self) -> bool {
        self.0 & PFS_IAM != 0
    }
    /// Holds ghost records.
    pub fn ghosts(self) -> bool {
        self.0 & PFS_GHOSTS != 0
    }
    /// How full: `empty`, `1-50%`, `51-80%`, `81-95%`, `96-100%` (or `fullness N` for 5 to 7).
    pub fn fullness(self) -> std::borrow::Cow<'static, str> {
        match self.fullness_word() {
            Some(word) => word.into(),
            None => format!("fullness {}", self.0 & PFS_FULLNESS).into(),
        }
    }

    /// The fullness bits in words, `None` for the values 5 to 7 that have none.
    fn fullness_word(self) -> Option<&'static str> {
        ["empty", "1-50%", "51-80%", "81-95%", "96-100%"].get(usize::from(self.0 & PFS_FULLNESS)).copied()
    }

    /// The byte in words (what DBCC PAGE spells `ALLOCATED 50_PCT_FULL Mixed Ext IAM Pg`):
    /// `allocated, 1-50%, mixed extent, IAM page, ghost records`; its [`std::fmt::Display`]
    /// spelling, which writes the same words without a string of its own.
    pub fn describe(self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for PfsByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.allocated() { "allocated, " } else { "not allocated, " })?;
        match self.fullness_word() {
            Some(word) => f.write_str(word)?,
            None => write!(f, "fullness {}", self.0 & PFS_FULLNESS)?,
        }
        for (bit, word) in PFS_BIT_WORDS {
            if self.0 & bit != 0 {
                f.write_str(word)?;
            }
        }
        Ok(())
    }
}

/// A PFS page's bytes: one a page, page `i` being the interval's first page plus `i`.
pub struct PfsMap<'a> {
    /// The first page the PFS page covers.
    pub start: PageId,
    /// One byte a page.
    pub bytes: &'a [u8],
}

impl<'a> PfsMap<'a> {
    /// Reads a PFS page (any other type is refused); the bytes are those its record holds.
    pub fn parse(pfs: &'a Page) -> Result<Self> {
        if pfs.header().page_type != PageType::Pfs {
            return Err(Error::corrupt(format!("expected a PFS page, found a {} page", pfs.header().page_type.name()))
                .at_page(pfs.id()));
        }
        let record = pfs.slot_bytes(0)?.ok_or_else(|| Error::corrupt("PFS page has no record").at_page(pfs.id()))?;
        // As long as the record says (8,092 bytes on every corpus PFS page), at most an interval.
        let len = (read_u16(record, 2).unwrap_or(0) as usize).saturating_sub(4).min(PFS_INTERVAL as usize);
        let bytes = record.get(4..(4 + len).min(record.len())).unwrap_or_default();
        let id = pfs.id();
        Ok(PfsMap { start: PageId::new(id.file, id.page / PFS_INTERVAL * PFS_INTERVAL), bytes })
    }

    /// The byte of `page`, when this PFS page covers it.
    pub fn get(&self, page: PageId) -> Option<PfsByte> {
        if page.file != self.start.file {
            return None;
        }
        let index = page.page.checked_sub(self.start.page)? as usize;
        self.bytes.get(index).map(|&b| PfsByte(b))
    }

    /// Runs of consecutive pages holding the same byte: (first page number, last, byte), made as
    /// they are asked for (a damaged page has thousands); a run is measured eight bytes at a time.
    pub fn runs(&self) -> impl Iterator<Item = (u32, u32, PfsByte)> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            let rest = self.bytes.get(at..).filter(|r| !r.is_empty())?;
            let byte = rest[0];
            let word = u64::from_ne_bytes([byte; 8]);
            let mut len = 1;
            while let Some(eight) = rest.get(len..len + 8) {
                if u64::from_ne_bytes(eight.try_into().unwrap_or_default()) != word {
                    break;
                }
                len += 8;
            }
            while rest.get(len) == Some(&byte) {
                len += 1;
            }
            let first = self.start.page.saturating_add(at as u32);
            // A page number saturates at the largest: its bytes join no run after it.
            let len = len.min((u32::MAX - first) as usize + 1);
            at += len;
            Some((first, first + (len - 1) as u32, PfsByte(byte)))
        })
    }
}

/// What one IAM page says its allocation unit owns in its interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IamPage {
    /// Position of the page in its IAM chain, from 0.
    pub sequence: u32,
    /// First page of the GAM interval (511,232 pages) the page maps.
    pub start: PageId,
    /// Pages from mixed extents.
    pub single_pages: Vec<PageId>,
    /// First pages of the uniform extents, ascending.
    pub extents: Vec<PageId>,
}

impl IamPage {
    /// Decodes an IAM page: its header record (sequence, interval start, single pages) and its
    /// extent bitmap.
    pub fn parse(page: &Page) -> Result<Self> {
        if page.header().page_type != PageType::Iam {
            return Err(Error::corrupt(format!(
                "expected an IAM page, found a {} page",
                page.header().page_type.name()
            ))
            .at_page(page.id()));
        }
        let (start, single_pages, sequence) = Self::header_record(page)?;
        let mut extents = Vec::new();
        for run in set_runs(extent_bitmap_bytes(page)?) {
            for extent in run {
                let first = start.page.checked_add(extent * 8).ok_or_else(|| {
                    Error::corrupt(format!("IAM extent {extent} lies past the largest page id")).at_page(page.id())
                })?;
                extents.push(PageId::new(start.file, first));
            }
        }
        Ok(IamPage { sequence, start, single_pages, extents })
    }

    /// Slot 0: the interval start, the single-page slots and the sequence number.
    fn header_record(page: &Page) -> Result<(PageId, Vec<PageId>, u32)> {
        let header =
            page.slot_bytes(0)?.ok_or_else(|| Error::corrupt("IAM page has no header record").at_page(page.id()))?;
        let short = || Error::corrupt("IAM header record is shorter than 94 bytes").at_page(page.id());
        let fixed = header.get(..94).ok_or_else(short)?;
        let sequence = u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
        let start = PageId::from_bytes(&fixed[40..46]).ok_or_else(short)?;
        let single_pages =
            fixed[46..94].chunks_exact(6).filter_map(PageId::from_bytes).filter(|p| !p.is_null()).collect();
        Ok((start, single_pages, sequence))
    }
}

/// The PFS page that covers `page`.
pub fn pfs_page_for(page: PageId) -> PageId {
    let interval_start = page.page / PFS_INTERVAL * PFS_INTERVAL;
    PageId::new(page.file, interval_start.max(1))
}

/// The page ranges of a file of `page_count` pages that one PFS page each covers, in order.
pub fn pfs_intervals(page_count: u32) -> impl Iterator<Item = std::ops::Range<u32>> {
    (0..page_count.div_ceil(PFS_INTERVAL)).map(move |i| {
        let start = i * PFS_INTERVAL;
        start..start.saturating_add(PFS_INTERVAL).min(page_count)
    })
}

/// Whether the PFS page `pfs` marks `page` as allocated.
pub fn pfs_says_allocated(pfs: &Page, page: PageId) -> Result<bool> {
    let map = PfsMap::parse(pfs)?;
    let byte = map
        .get(page)
        .ok_or_else(|| Error::corrupt(format!("PFS record too short for page {page}")).at_page(pfs.id()))?;
    Ok(byte.allocated())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::tests::build_page;

    fn iam_page(start: PageId, singles: &[PageId], extents: &[u32]) -> Page {
        let mut header = vec![0u8; 94];
        header[2..4].copy_from_slice(&94u16.to_le_bytes());
        header[4..8].copy_from_slice(&3u32.to_le_bytes());
        header[40..44].copy_from_slice(&start.page.to_le_bytes());
        header[44..46].copy_from_slice(&start.file.to_le_bytes());
        for (i, p) in singles.iter().enumerate() {
            header[46 + 6 * i..50 + 6 * i].copy_from_slice(&p.page.to_le_bytes());
            header[50 + 6 * i..52 + 6 * i].copy_from_slice(&p.file.to_le_bytes());
        }
        let mut bitmap = vec![0u8; 7992];
        bitmap[2..4].copy_from_slice(&7992u16.to_le_bytes());
        for &e in extents {
            bitmap[4 + e as usize / 8] |= 1 << (e % 8);
        }
        let id = PageId::new(1, 77);
        Page::new(build_page(id, 10, &[&header, &bitmap]).into_boxed_slice(), id).unwrap()
    }

    #[test]
    fn pfs_intervals_cover_every_page_once_up_to_the_largest_page_count() {
        let ranges: Vec<_> = pfs_intervals(20_000).collect();
        assert_eq!(ranges, vec![0..8088, 8088..16_176, 16_176..20_000]);
        assert_eq!(pfs_intervals(8088).collect::<Vec<_>>(), vec![0..8088]);
        assert_eq!(pfs_intervals(0).count(), 0);
        let last = pfs_intervals(u32::MAX).last().unwrap();
        assert_eq!((last.start % PFS_INTERVAL, last.end), (0, u32::MAX));
        assert_eq!(pfs_intervals(u32::MAX).count(), 531_030, "531,029 whole intervals and a partial one");
    }

    #[test]
    fn lists_single_pages_and_extents() {
        let iam = IamPage::parse(&iam_page(PageId::new(1, 0), &[PageId::new(1, 90), PageId::new(1, 93)], &[0, 13, 9]))
            .unwrap();
        assert_eq!(iam.sequence, 3);
        assert_eq!(iam.single_pages, vec![PageId::new(1, 90), PageId::new(1, 93)]);
        assert_eq!(iam.extents, vec![PageId::new(1, 0), PageId::new(1, 72), PageId::new(1, 104)]);
        let second_interval = IamPage::parse(&iam_page(PageId::new(3, 511_232), &[], &[1])).unwrap();
        assert_eq!(second_interval.extents, vec![PageId::new(3, 511_240)]);
    }

    /// A GAM or SGAM page (`page_type` 8 or 9) at `id` whose bitmap has `set` bits set.
    fn gam_page(id: PageId, page_type: u8, set: &[u32]) -> Page {
        let mut header = vec![0u8; 94];
        header[2..4].copy_from_slice(&94u16.to_le_bytes());
        let mut bitmap = vec![0u8; 7992];
        bitmap[2..4].copy_from_slice(&7992u16.to_le_bytes());
        for &e in set {
            bitmap[4 + e as usize / 8] |= 1 << (e % 8);
        }
        Page::new(build_page(id, page_type, &[&header, &bitmap]).into_boxed_slice(), id).unwrap()
    }

    #[test]
    fn gam_and_sgam_bitmaps_read_as_runs_of_extents_from_their_interval() {
        // A GAM page of the second interval: extents 4 and 5 free, then 64 to 66 (across a word).
        let gam = ExtentMap::parse(&gam_page(PageId::new(1, GAM_INTERVAL + 2), 8, &[4, 5, 64, 65, 66])).unwrap();
        assert_eq!((gam.kind, gam.start, gam.extents), (PageType::Gam, PageId::new(1, GAM_INTERVAL), 63_904));
        assert_eq!(gam.set, vec![4..6, 64..67]);
        assert_eq!(gam.set_means(), "free (not allocated)");
        assert_eq!(gam.pages(&gam.set[0]), (PageId::new(1, GAM_INTERVAL + 32), PageId::new(1, GAM_INTERVAL + 47)));
        let sgam = ExtentMap::parse(&gam_page(PageId::new(1, 3), 9, &[38])).unwrap();
        assert_eq!((sgam.start, sgam.set.len(), sgam.set.first()), (PageId::new(1, 0), 1, Some(&(38..39))));
        assert_eq!(sgam.set_means(), "mixed extent with a free page");
        // An IAM page maps from its header's start page and lists its single pages.
        let iam = ExtentMap::parse(&iam_page(PageId::new(1, 0), &[PageId::new(1, 90)], &[13, 9, 10])).unwrap();
        assert_eq!((iam.set, iam.single_pages), (vec![9..11, 13..14], vec![PageId::new(1, 90)]));
        let data = Page::new(build_page(PageId::new(1, 9), 1, &[b"abcd"]).into_boxed_slice(), PageId::new(1, 9));
        assert!(ExtentMap::parse(&data.unwrap()).is_err());
        // A bitmap record claiming more bytes than an interval has maps one interval, no more.
        let mut long = gam_page(PageId::new(1, 2), 8, &[]).bytes().to_vec();
        long[96 + 94 + 2..96 + 94 + 4].copy_from_slice(&60_000u16.to_le_bytes());
        let long = Page::new(long.into_boxed_slice(), PageId::new(1, 2)).unwrap();
        assert_eq!(ExtentMap::parse(&long).unwrap().extents, 63_904);
    }

    #[test]
    fn pfs_bytes_read_as_words_and_runs() {
        // The corpus' PFS page 1:1 starts 0x44 0x44 0x00 0x60 0x64 0x70.
        let mut record = vec![0u8, 0, 0, 0, 0x44, 0x44, 0x00, 0x60, 0x64, 0x70, 0x0a];
        let len = record.len() as u16;
        record[2..4].copy_from_slice(&len.to_le_bytes());
        let id = PageId::new(1, 1);
        let page = Page::new(build_page(id, 11, &[&record]).into_boxed_slice(), id).unwrap();
        let pfs = PfsMap::parse(&page).unwrap();
        assert_eq!(pfs.start, PageId::new(1, 0));
        assert_eq!(pfs.get(PageId::new(1, 0)).unwrap().describe(), "allocated, 96-100%");
        assert_eq!(pfs.get(PageId::new(1, 2)).unwrap().describe(), "not allocated, empty");
        assert_eq!(pfs.get(PageId::new(1, 5)).unwrap().describe(), "allocated, empty, mixed extent, IAM page");
        assert_eq!(pfs.get(PageId::new(1, 6)).unwrap().describe(), "not allocated, 51-80%, ghost records");
        assert_eq!(pfs.get(PageId::new(1, 7)), None, "past the record");
        assert_eq!(pfs.get(PageId::new(2, 0)), None, "another file");
        let runs: Vec<(u32, u32, u8)> = pfs.runs().map(|(a, b, p)| (a, b, p.0)).collect();
        assert_eq!(runs, vec![(0, 1, 0x44), (2, 2, 0), (3, 3, 0x60), (4, 4, 0x64), (5, 5, 0x70), (6, 6, 0x0a)]);
        assert!(pfs_says_allocated(&page, PageId::new(1, 1)).unwrap());
        assert!(!pfs_says_allocated(&page, PageId::new(1, 2)).unwrap());
        assert!(PfsMap::parse(&gam_page(PageId::new(1, 2), 8, &[])).is_err());
        // A PFS page near the largest page id (found by fuzzing): its runs end there, no overflow.
        let top = PfsMap { start: PageId::new(1, u32::MAX - 1), bytes: &[0x44, 0x44, 0x44, 0x44] };
        let runs: Vec<(u32, u32)> = top.runs().map(|(a, b, _)| (a, b)).collect();
        assert_eq!(runs, vec![(u32::MAX - 1, u32::MAX), (u32::MAX, u32::MAX), (u32::MAX, u32::MAX)]);
    }

    #[test]
    fn runs_span_words_and_whole_words() {
        // Bits set: 0-2, 63-64 (across the first word's end), all of the third word (128-191),
        // 200, and the last bit of a short tail word (bit 7 of byte 26: extent 215).
        let mut bitmap = vec![0u8; 27];
        bitmap[0] = 0b0000_0111;
        bitmap[7] = 0x80;
        bitmap[8] = 0x01;
        bitmap[16..24].fill(0xff);
        bitmap[25] = 0x01;
        bitmap[26] = 0x80;
        assert_eq!(set_runs(&bitmap), vec![0..3, 63..65, 128..192, 200..201, 215..216]);
        assert_eq!(set_runs(&[0xff; 24]), vec![0..192], "whole words join one run");
        assert!(set_runs(&[0; 16]).is_empty());

        // PFS runs longer than a word, ending inside and at a word's edge, and a last short run.
        let mut bytes = vec![0x44u8; 21];
        bytes.extend([0x60; 8]);
        bytes.extend([0x64, 0x70, 0x70]);
        let pfs = PfsMap { start: PageId::new(1, 8088), bytes: &bytes };
        let runs: Vec<(u32, u32, u8)> = pfs.runs().map(|(a, b, p)| (a, b, p.0)).collect();
        assert_eq!(runs, vec![(8088, 8108, 0x44), (8109, 8116, 0x60), (8117, 8117, 0x64), (8118, 8119, 0x70)]);
    }

    #[test]
    fn finds_the_covering_pfs_page() {
        assert_eq!(pfs_page_for(PageId::new(1, 5)), PageId::new(1, 1));
        assert_eq!(pfs_page_for(PageId::new(1, 8088)), PageId::new(1, 8088));
        assert_eq!(pfs_page_for(PageId::new(2, 20_000)), PageId::new(2, 16_176));
    }

    #[test]
    fn rejects_an_iam_page_without_its_records() {
        let id = PageId::new(1, 5);
        let page = Page::new(build_page(id, 10, &[b"abcd"]).into_boxed_slice(), id).unwrap();
        assert!(IamPage::parse(&page).is_err());
    }
}
