//! Allocation pages: IAM chains (which extents and pages an allocation unit owns) and PFS pages
//! (whether each page is allocated).
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
//! page, 0x10 = IAM page, 0x08 = has ghost records, bits 0-2 = how full.
//!
//! Sources: Paul Randal, "Inside the Storage Engine: IAM pages, IAM chains, and allocation units"
//! and "GAM, SGAM, PFS and other allocation maps"; OrcaMDF's IAM header offsets; record lengths
//! (94 and 7992 bytes for IAM slots 0 and 1, 8092 for PFS slot 0) checked on the corpus files.

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

/// Pages covered by one PFS page.
pub const PFS_INTERVAL: u32 = 8088;
/// Extents covered by one IAM page's bitmap.
const IAM_EXTENTS: usize = 63_904;
const PFS_ALLOCATED: u8 = 0x40;

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
        let header =
            page.slot_bytes(0)?.ok_or_else(|| Error::corrupt("IAM page has no header record").at_page(page.id()))?;
        let bitmap_record =
            page.slot_bytes(1)?.ok_or_else(|| Error::corrupt("IAM page has no extent bitmap").at_page(page.id()))?;
        let short = || Error::corrupt("IAM header record is shorter than 94 bytes").at_page(page.id());
        let fixed = header.get(..94).ok_or_else(short)?;
        let sequence = u32::from_le_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
        let start = PageId::from_bytes(&fixed[40..46]).ok_or_else(short)?;
        let single_pages =
            fixed[46..94].chunks_exact(6).filter_map(PageId::from_bytes).filter(|p| !p.is_null()).collect();
        let bitmap_len = (read_u16(bitmap_record, 2).unwrap_or(0) as usize).saturating_sub(4).min(IAM_EXTENTS / 8);
        let bitmap = bitmap_record.get(4..4 + bitmap_len).ok_or_else(|| {
            Error::corrupt(format!("IAM extent bitmap claims {bitmap_len} bytes, the page has fewer"))
                .at_page(page.id())
        })?;
        let mut extents = Vec::new();
        // Most of a small table's bitmap is zero: it is skipped a word at a time.
        for (word_index, word) in bitmap.chunks(8).enumerate() {
            let mut bits = word.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let extent = (word_index * 64 + bit) as u32;
                let first = start.page.checked_add(extent * 8).ok_or_else(|| {
                    Error::corrupt(format!("IAM extent {extent} lies past the largest page id")).at_page(page.id())
                })?;
                extents.push(PageId::new(start.file, first));
            }
        }
        Ok(IamPage { sequence, start, single_pages, extents })
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
    if pfs.header().page_type != PageType::Pfs {
        return Err(Error::corrupt(format!("expected a PFS page, found a {} page", pfs.header().page_type.name()))
            .at_page(pfs.id()));
    }
    let record = pfs.slot_bytes(0)?.ok_or_else(|| Error::corrupt("PFS page has no record").at_page(pfs.id()))?;
    let index = (page.page % PFS_INTERVAL) as usize;
    let byte = record
        .get(4 + index)
        .ok_or_else(|| Error::corrupt(format!("PFS record too short for page {page}")).at_page(pfs.id()))?;
    Ok(byte & PFS_ALLOCATED != 0)
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
