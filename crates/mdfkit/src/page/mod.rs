//! Pages: the 8 KB unit of every SQL Server data file.
//!
//! ```text
//!  0                96                                              8192 - 2n      8192
//!  +----------------+-----------------------------------------------+---------------+
//!  | page header    | records, growing up ->          <- free space | slot array    |
//!  +----------------+-----------------------------------------------+---------------+
//!                                                         slot n-1 ... slot 1 slot 0
//! ```
//!
//! The header (96 bytes, little endian):
//!
//! | offset | size | field          | meaning                                                     |
//! |-------:|-----:|----------------|-------------------------------------------------------------|
//! | 0      | 1    | header version | 1                                                           |
//! | 1      | 1    | type           | [`PageType`]                                                |
//! | 2      | 1    | type flag bits |                                                             |
//! | 3      | 1    | level          | 0 for leaf / data pages, > 0 for B-tree interior pages      |
//! | 4      | 2    | flag bits      | 0x100 torn-page protected, 0x200 checksum protected         |
//! | 6      | 2    | index id       | allocation unit id, high part (`auid >> 48`)                |
//! | 8      | 6    | previous page  | page (4) + file (2); 0:0 = none                             |
//! | 14     | 2    | pminlen        | fixed-length part of the records                            |
//! | 16     | 6    | next page      | page (4) + file (2); 0:0 = none                             |
//! | 22     | 2    | slot count     |                                                             |
//! | 24     | 4    | object id      | allocation unit id, middle part (`(auid >> 16) & 0xffffffff`)|
//! | 28     | 2    | free count     | bytes free                                                  |
//! | 30     | 2    | free data      | offset of the first free byte                               |
//! | 32     | 6    | this page      | page (4) + file (2): the page's own address                 |
//! | 38     | 2    | reserved count |                                                             |
//! | 40     | 10   | LSN            | last change                                                 |
//! | 50     | 2    | xact reserved  |                                                             |
//! | 52     | 6    | xdes id        |                                                             |
//! | 58     | 2    | ghost records  |                                                             |
//! | 60     | 4    | torn bits      | the checksum, or the saved torn-page bits                   |
//!
//! Sources: Paul Randal, "Inside the Storage Engine: Anatomy of a page"; OrcaMDF's page header
//! reader; checked against every page type in the corpus files.
//!
//! The slot array at the end of the page holds one 2-byte record offset per slot, slot 0 in the
//! last two bytes. A page's own address is checked against where it was read from before any of
//! it is trusted ([`Page::new`]).
//!
//! A [`Page`] owns its 8 KB, or shares them with the run of contiguous pages a scan read in one
//! call (`crate::source::PageRun`): the page is then a view of its part of the run's buffer,
//! with no copy of its own.

pub mod allocation;
pub mod boot;
pub mod file_header;
pub mod protection;

use std::fmt;
use std::sync::Arc;

use crate::bytes::{read_u16, read_u32};
use crate::error::{Error, Result};
// The address and sizes every layer shares live below the error type, which names pages.
pub use crate::geometry::{PageId, HEADER_SIZE, PAGE_SIZE};
// The CI structure is read with the CD records it holds; its old path stays.
pub use crate::record::compression_info;

/// Page types as stored in header byte 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageType {
    /// Type 1: data records of a heap or a clustered index's leaf level.
    Data,
    /// Type 2: index records (nonclustered indexes, interior levels of clustered ones).
    Index,
    /// Type 3: LOB and row-overflow fragments of several values (text mix).
    TextMix,
    /// Type 4: the interior of a large LOB value's tree (text tree).
    TextTree,
    /// Type 7: intermediate sort results.
    Sort,
    /// Type 8: Global Allocation Map, one bit per extent, set while the extent is free.
    Gam,
    /// Type 9: Shared GAM, one bit per mixed extent with a free page.
    Sgam,
    /// Type 10: Index Allocation Map: the extents of one allocation unit in one GAM interval.
    Iam,
    /// Type 11: Page Free Space, one byte per page (allocated, how full, ghosts, IAM, mixed).
    Pfs,
    /// Type 13: the boot page, 1:9, the database's description of itself ([`boot`]).
    Boot,
    /// Type 15: the file header, page 0 of every file ([`file_header`]).
    FileHeader,
    /// Type 16: Differential Changed Map, extents changed since the last full backup.
    DiffMap,
    /// Type 17: Bulk Changed Map, extents changed by minimally logged operations.
    MlMap,
    /// A type byte not listed above, kept as read.
    Other(u8),
}

impl PageType {
    /// The type of header byte 1 (values from Paul Randal's "Anatomy of a page").
    pub fn from_byte(b: u8) -> Self {
        match b {
            1 => PageType::Data,
            2 => PageType::Index,
            3 => PageType::TextMix,
            4 => PageType::TextTree,
            7 => PageType::Sort,
            8 => PageType::Gam,
            9 => PageType::Sgam,
            10 => PageType::Iam,
            11 => PageType::Pfs,
            13 => PageType::Boot,
            15 => PageType::FileHeader,
            16 => PageType::DiffMap,
            17 => PageType::MlMap,
            other => PageType::Other(other),
        }
    }

    /// Lower-case name for messages (`data`, `IAM`, `text mix`).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            PageType::Data => "data".into(),
            PageType::Index => "index".into(),
            PageType::TextMix => "text mix".into(),
            PageType::TextTree => "text tree".into(),
            PageType::Sort => "sort".into(),
            PageType::Gam => "GAM".into(),
            PageType::Sgam => "SGAM".into(),
            PageType::Iam => "IAM".into(),
            PageType::Pfs => "PFS".into(),
            PageType::Boot => "boot".into(),
            PageType::FileHeader => "file header".into(),
            PageType::DiffMap => "differential map".into(),
            PageType::MlMap => "minimally logged map".into(),
            PageType::Other(b) => format!("unknown type {b}").into(),
        }
    }
}

/// Header flag: the page carries torn-page bits in the sector ends.
pub const FLAG_TORN_PAGE: u16 = 0x100;
/// Header flag: the page carries a checksum at offset 60.
pub const FLAG_CHECKSUM: u16 = 0x200;

/// The decoded 96-byte page header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Byte 0: always 1.
    pub header_version: u8,
    /// Byte 1.
    pub page_type: PageType,
    /// Byte 2: set on some index and allocation pages; not used here.
    pub type_flag_bits: u8,
    /// Byte 3: 0 on leaf and data pages, the B-tree level above the leaf on index pages.
    pub level: u8,
    /// Bytes 4-5: [`FLAG_TORN_PAGE`], [`FLAG_CHECKSUM`].
    pub flag_bits: u16,
    /// Bytes 8-13: the previous page at the same level (0:0 for none).
    pub prev_page: PageId,
    /// Bytes 14-15: size of the fixed-length part of the page's records.
    pub pminlen: u16,
    /// Bytes 16-21: the next page at the same level (0:0 for none).
    pub next_page: PageId,
    /// Bytes 22-23: entries in the slot array.
    pub slot_count: u16,
    /// Bytes 28-29: free bytes on the page.
    pub free_count: u16,
    /// Bytes 30-31: offset of the first byte after the last record.
    pub free_data: u16,
    /// Bytes 32-37: the page's own address, checked against where it was read.
    pub this_page: PageId,
    /// Bytes 58-59: ghost (deleted, not yet cleaned up) records on the page.
    pub ghost_record_count: u16,
    /// Bytes 60-63: the checksum, or the torn-page bits saved from the sector ends.
    pub torn_bits: u32,
    /// Allocation unit id split as stored: `index_id << 48 | object_id << 16`.
    obj_id: u32,
    index_id: u16,
}

impl PageHeader {
    /// Decodes a header from at least 96 bytes.
    pub fn parse(b: &[u8]) -> Result<Self> {
        if b.len() < HEADER_SIZE {
            return Err(Error::corrupt(format!("page header needs {HEADER_SIZE} bytes, got {}", b.len())));
        }
        // Lengths were checked above: the reads below cannot fail.
        let u16_at = |o| read_u16(b, o).unwrap_or(0);
        let u32_at = |o| read_u32(b, o).unwrap_or(0);
        let pid_at = |o: usize| PageId::from_bytes(&b[o..o + 6]).unwrap_or_default();
        Ok(PageHeader {
            header_version: b[0],
            page_type: PageType::from_byte(b[1]),
            type_flag_bits: b[2],
            level: b[3],
            flag_bits: u16_at(4),
            index_id: u16_at(6),
            prev_page: pid_at(8),
            pminlen: u16_at(14),
            next_page: pid_at(16),
            slot_count: u16_at(22),
            obj_id: u32_at(24),
            free_count: u16_at(28),
            free_data: u16_at(30),
            this_page: pid_at(32),
            ghost_record_count: u16_at(58),
            torn_bits: u32_at(60),
        })
    }

    /// The allocation unit the page belongs to (`sys.allocation_units.allocation_unit_id`).
    pub fn allocation_unit_id(&self) -> i64 {
        ((self.index_id as i64) << 48) | ((self.obj_id as i64) << 16)
    }

    /// Whether the page belongs to allocation unit `unit`. Data pages last written by SQL Server
    /// 2000 carry the table's object id and index id 0 instead; a database upgraded from 2000 gives
    /// such tables the allocation unit `index << 48 | object id << 16` (index 0 heap, 1 clustered),
    /// so those pages are recognised by their object id. (Seen in the corpus' Northwind, created by
    /// SQL Server 2000: every data page of its clustered tables.)
    pub fn belongs_to(&self, unit: i64) -> bool {
        if self.allocation_unit_id() == unit {
            return true;
        }
        let (unit_index, unit_object) = (unit >> 48, (unit >> 16) & 0xffff_ffff);
        self.index_id == 0 && matches!(unit_index, 0 | 1) && i64::from(self.obj_id) == unit_object && unit & 0xffff == 0
    }
}

/// A validated page: its header is decoded and its address checked.
#[derive(Clone)]
pub struct Page {
    bytes: PageBytes,
    header: PageHeader,
}

/// Where a page's 8 KB are.
#[derive(Clone)]
enum PageBytes {
    /// Its own buffer.
    Owned(Box<[u8]>),
    /// Bytes `start..start + PAGE_SIZE` of a run's buffer, shared with the run
    /// (`crate::source::PageRun`), which refills the buffer only once no page of it is held.
    InRun(Arc<[u8]>, usize),
}

impl std::ops::Deref for PageBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            PageBytes::Owned(bytes) => bytes,
            // `Page::in_run` checked that the range lies in the buffer.
            PageBytes::InRun(run, start) => &run[*start..*start + PAGE_SIZE],
        }
    }
}

impl fmt::Debug for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Page").field("header", &self.header).finish_non_exhaustive()
    }
}

/// The record offsets stored in a slot array (the page's last `2 * slot count` bytes), slot 0
/// first: the array runs backwards from the page's end, two bytes a slot. As stored, unchecked
/// (0: a deleted slot).
pub fn slot_offsets(slot_array: &[u8]) -> impl DoubleEndedIterator<Item = u16> + ExactSizeIterator + '_ {
    slot_array.rchunks_exact(2).map(|entry| u16::from_le_bytes([entry[0], entry[1]]))
}

impl Page {
    /// Wraps the bytes read from `expected`: the header must name that same address.
    pub fn new(bytes: Box<[u8]>, expected: PageId) -> Result<Self> {
        if bytes.len() != PAGE_SIZE {
            return Err(
                Error::corrupt(format!("page is {} bytes, expected {PAGE_SIZE}", bytes.len())).at_page(expected)
            );
        }
        Self::checked(PageBytes::Owned(bytes), expected)
    }

    /// [`Page::new`] for the page at bytes `start..start + PAGE_SIZE` of a run's buffer, shared
    /// rather than copied.
    pub(crate) fn in_run(run: Arc<[u8]>, start: usize, expected: PageId) -> Result<Self> {
        if start.checked_add(PAGE_SIZE).is_none_or(|end| end > run.len()) {
            return Err(Error::corrupt(format!(
                "page at byte {start} of a run of {} bytes does not fit in it",
                run.len()
            ))
            .at_page(expected));
        }
        Self::checked(PageBytes::InRun(run, start), expected)
    }

    /// The checks of [`Page::new`] on 8192 bytes.
    fn checked(bytes: PageBytes, expected: PageId) -> Result<Self> {
        let header = PageHeader::parse(&bytes).map_err(|e| e.at_page(expected))?;
        if header.this_page != expected {
            return Err(Error::corrupt(format!(
                "page header says it is page {} ({} page)",
                header.this_page,
                header.page_type.name()
            ))
            .at_page(expected));
        }
        // The slot array grows down from the page's end and never reaches into the header: a
        // larger count is damage, refused here once rather than by every slot asked for.
        if HEADER_SIZE + 2 * usize::from(header.slot_count) > PAGE_SIZE {
            return Err(
                Error::corrupt(format!("slot count {} does not fit in a page", header.slot_count)).at_page(expected)
            );
        }
        Ok(Page { bytes, header })
    }

    /// The page's address, as its header states it (equal to the one it was read from).
    pub fn id(&self) -> PageId {
        self.header.this_page
    }

    /// The decoded header.
    pub fn header(&self) -> &PageHeader {
        &self.header
    }

    /// The page's 8192 bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Entries in the slot array (deleted slots included).
    pub fn slot_count(&self) -> u16 {
        self.header.slot_count
    }

    /// The offset of the record in `slot`, checked to lie between the header and the slot array.
    pub fn slot_offset(&self, slot: u16) -> Result<usize> {
        let slots = self.header.slot_count as usize;
        // `Page::new` checked that the slot array fits.
        let array_start = PAGE_SIZE - 2 * slots;
        if slot as usize >= slots {
            return Err(Error::corrupt(format!("slot {slot} beyond slot count {slots}")).at_page(self.id()));
        }
        let at = PAGE_SIZE - 2 * (slot as usize + 1);
        let offset = read_u16(&self.bytes, at).unwrap_or(0) as usize;
        if offset < HEADER_SIZE || offset >= array_start {
            return Err(Error::corrupt(format!(
                "slot points at offset {offset}, outside the record area {HEADER_SIZE}..{array_start}"
            ))
            .at_page(self.id())
            .at_slot(slot));
        }
        Ok(offset)
    }

    /// The bytes from the record in `slot` up to the slot array: the record's own header says
    /// how many of them it uses. An offset of 0 marks a deleted slot: `Ok(None)`.
    pub fn slot_bytes(&self, slot: u16) -> Result<Option<&[u8]>> {
        Ok(self.live_slot_offset(slot)?.map(|offset| &self.record_area()[offset..]))
    }

    /// [`Self::slot_offset`], `Ok(None)` for a deleted slot (offset 0): where
    /// [`Self::slot_bytes`] starts in [`Self::record_area`].
    #[inline]
    pub fn live_slot_offset(&self, slot: u16) -> Result<Option<usize>> {
        if slot < self.header.slot_count {
            // One read for the common case; `slot_offset` words the error.
            let at = PAGE_SIZE - 2 * (usize::from(slot) + 1);
            let array_start = PAGE_SIZE - 2 * usize::from(self.header.slot_count);
            match read_u16(&self.bytes, at).map(usize::from) {
                Some(0) => return Ok(None),
                Some(offset) if (HEADER_SIZE..array_start).contains(&offset) => return Ok(Some(offset)),
                _ => {}
            }
        }
        self.slot_offset(slot).map(Some)
    }

    /// The page's record area ([`Self::record_area`]) and the raw offsets in its slot array, slot
    /// 0 first (the array runs backwards from the page's end), from one look at the page's
    /// bytes: a scan walking every slot reads each entry with no other check. Offsets are as
    /// stored (0: a deleted slot); [`Self::live_slot_offset`] checks them.
    pub fn record_area_and_slots(&self) -> (&[u8], impl DoubleEndedIterator<Item = u16> + ExactSizeIterator + '_) {
        // `Page::new` checked that the slot array fits.
        let (area, array) = self.bytes.split_at(PAGE_SIZE - 2 * self.header.slot_count as usize);
        (area, slot_offsets(array))
    }

    /// The page's bytes up to its slot array, in which every record lies.
    pub fn record_area(&self) -> &[u8] {
        // `Page::new` checked that the slot array fits.
        &self.bytes[..PAGE_SIZE - 2 * self.header.slot_count as usize]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a page with the given header fields and records (placed after the header).
    pub(crate) fn build_page(id: PageId, page_type: u8, records: &[&[u8]]) -> Vec<u8> {
        let mut b = vec![0u8; PAGE_SIZE];
        b[0] = 1;
        b[1] = page_type;
        b[32..36].copy_from_slice(&id.page.to_le_bytes());
        b[36..38].copy_from_slice(&id.file.to_le_bytes());
        b[22..24].copy_from_slice(&(records.len() as u16).to_le_bytes());
        let mut at = HEADER_SIZE;
        for (i, r) in records.iter().enumerate() {
            b[at..at + r.len()].copy_from_slice(r);
            let slot = PAGE_SIZE - 2 * (i + 1);
            b[slot..slot + 2].copy_from_slice(&(at as u16).to_le_bytes());
            at += r.len();
        }
        b[30..32].copy_from_slice(&(at as u16).to_le_bytes());
        b
    }

    /// Builds a page of `records` and one slot more, pointing at the record area's last 20
    /// bytes, which hold the first 20 bytes of `cut` (at least 20 long): a record cut off by
    /// the slot array.
    pub(crate) fn build_page_with_cut_record(id: PageId, records: &[&[u8]], cut: &[u8]) -> Vec<u8> {
        let mut refs = records.to_vec();
        refs.push(&[]);
        let mut page = build_page(id, 1, &refs);
        let area_end = PAGE_SIZE - 2 * refs.len();
        let cut_at = area_end - 20;
        page[cut_at..area_end].copy_from_slice(&cut[..20]);
        page[area_end..area_end + 2].copy_from_slice(&(cut_at as u16).to_le_bytes());
        page
    }

    #[test]
    fn decodes_header_fields() {
        let mut b = build_page(PageId::new(1, 153), 1, &[b"abcd"]);
        b[3] = 2;
        b[4..6].copy_from_slice(&0x0200u16.to_le_bytes());
        b[6..8].copy_from_slice(&256u16.to_le_bytes());
        b[24..28].copy_from_slice(&114u32.to_le_bytes());
        b[16..22].copy_from_slice(&[0x9a, 0, 0, 0, 1, 0]);
        let page = Page::new(b.into_boxed_slice(), PageId::new(1, 153)).unwrap();
        let h = page.header();
        assert_eq!(h.page_type, PageType::Data);
        assert_eq!(h.level, 2);
        assert_eq!(h.flag_bits, FLAG_CHECKSUM);
        assert_eq!(h.next_page, PageId::new(1, 154));
        assert_eq!(h.allocation_unit_id(), 72057594045399040);
        assert!(h.belongs_to(72057594045399040));
        assert!(!h.belongs_to(72057594045399040 + (1 << 16)));
        assert_eq!(page.slot_bytes(0).unwrap().unwrap()[..4], *b"abcd");
    }

    #[test]
    fn live_slot_offsets_locate_slot_bytes_in_the_record_area() {
        let mut b = build_page(PageId::new(1, 9), 1, &[b"abcd", b"ef", b"g"]);
        b[PAGE_SIZE - 4..PAGE_SIZE - 2].copy_from_slice(&0u16.to_le_bytes()); // slot 1 deleted
        let page = Page::new(b.into_boxed_slice(), PageId::new(1, 9)).unwrap();
        assert_eq!(page.record_area().len(), PAGE_SIZE - 6, "up to the three slots' array");
        assert_eq!(page.live_slot_offset(0).unwrap(), Some(HEADER_SIZE));
        assert_eq!(page.live_slot_offset(1).unwrap(), None, "a deleted slot");
        assert_eq!(page.live_slot_offset(2).unwrap(), Some(HEADER_SIZE + 6));
        assert!(page.live_slot_offset(3).is_err(), "past the slot count");
        let at = page.live_slot_offset(2).unwrap().unwrap();
        assert_eq!(page.slot_bytes(2).unwrap().unwrap(), &page.record_area()[at..]);
        assert_eq!(page.slot_bytes(1).unwrap(), None);
    }

    #[test]
    fn recognises_pages_last_written_by_sql_server_2000() {
        let mut b = build_page(PageId::new(1, 100), 1, &[]);
        b[24..28].copy_from_slice(&2041058307u32.to_le_bytes());
        let page = Page::new(b.into_boxed_slice(), PageId::new(1, 100)).unwrap();
        let upgraded_clustered = (1i64 << 48) | (2041058307i64 << 16);
        assert!(page.header().belongs_to(upgraded_clustered));
        assert!(!page.header().belongs_to((2i64 << 48) | (2041058307i64 << 16)));
        assert!(!page.header().belongs_to((1i64 << 48) | (2041058308i64 << 16)));
    }

    #[test]
    fn rejects_a_page_that_claims_another_address() {
        let b = build_page(PageId::new(1, 7), 1, &[]);
        let err = Page::new(b.into_boxed_slice(), PageId::new(1, 8)).unwrap_err();
        assert_eq!(err.to_string(), "page 1:8: page header says it is page 1:7 (data page)");
    }

    #[test]
    fn rejects_slots_outside_the_record_area() {
        let mut b = build_page(PageId::new(1, 1), 1, &[b"x"]);
        b[PAGE_SIZE - 2..].copy_from_slice(&8191u16.to_le_bytes());
        let page = Page::new(b.into_boxed_slice(), PageId::new(1, 1)).unwrap();
        assert!(page.slot_bytes(0).is_err());
        assert!(page.slot_bytes(1).is_err());
    }

    #[test]
    fn rejects_a_slot_count_whose_array_reaches_into_the_header() {
        // 4048 slots end exactly at the header; one more would overlap it.
        for (slots, fits) in [(4048u16, true), (4049, false), (u16::MAX, false)] {
            let mut b = build_page(PageId::new(1, 1), 1, &[]);
            b[22..24].copy_from_slice(&slots.to_le_bytes());
            match Page::new(b.into_boxed_slice(), PageId::new(1, 1)) {
                Ok(page) => assert!(fits && page.slot_count() == slots, "{slots} slots accepted"),
                Err(e) => {
                    assert!(!fits, "{slots} slots refused: {e}");
                    assert_eq!(e.to_string(), format!("page 1:1: slot count {slots} does not fit in a page"));
                }
            }
        }
    }
}
