//! Scans: every live row record of a partition, heap or clustered.
//!
//! - **Heaps** have no page chain that covers the table: the pages are those the allocation unit's
//!   IAM chain owns (single pages from mixed extents, then whole uniform extents), kept only where
//!   the PFS page says they are allocated and the page header says they are data pages of this
//!   allocation unit (extents hold unformatted or freed pages too). [`MappedPages`] hands those
//!   pages out one at a time, holding a bit a page (the check, and the walk of a heap's pages
//!   forward here); [`heap_pages`] lists them, 8 bytes a page (the walk backward, and the
//!   parallel scans and splits, which share them out by position). A forwarding stub is
//!   followed to its forwarded record, which is returned there, once; a forwarded record met on
//!   its own page is skipped, so no row is returned twice.
//! - **Clustered indexes** are read along the leaf level from the allocation unit's first page via
//!   next-page links; a link back to a page already read is reported as a cycle. Read backwards
//!   (a "last rows" view), the leaf level's last page is found by descending from the index's
//!   root page along the last child pointer of each level ([`descend_to_last_leaf`]): one page
//!   a level instead of every page the IAM chain maps.
//! - **Interior (index) records** of an uncompressed B-tree: status byte A (record type 3), the
//!   fixed-length key columns, then the child page's address (page 4 bytes + file 2 bytes), then
//!   the null bitmap and variable-length key columns when status bits 0x10 / 0x20 say so. The
//!   header's `pminlen` of an interior page counts the status byte, the fixed keys and the child
//!   pointer, so the child pointer is the 6 bytes before `pminlen` whatever the key's types
//!   (AdventureWorksLT 2012's interior pages: `06 a8020000 08020000 0100` is key 680, child
//!   1:520, pminlen 11; a 5-byte key page: pminlen 12 with the child at bytes 6..12).
//! - **Reads**: forward, a heap's pages that follow each other in a file are read as one run
//!   (up to 32 pages, [`crate::source::PageRun`]); along a leaf chain that lies in file order
//!   the reader reads ahead twice as far at each page (1, 2, 4 ... 32 pages), back to one page
//!   where the chain jumps. Pages read ahead are verified only when the walk takes them, and
//!   the chain's cycle check keeps a bitmap of the pages visited.
//! - Ghost records (deleted rows not yet cleaned up) are skipped and counted, or returned marked
//!   as ghosts when asked for (forensics).
//!
//! Sources: Paul Randal, "Inside the Storage Engine: IAM pages", "Anatomy of a record" (forwarding
//! stubs hold an 8-byte RID: page, file, slot) and "Ghost cleanup in depth"; checked on the corpus
//! (row counts of every table equal the catalog's).

use std::collections::{HashMap, HashSet, VecDeque};

use crate::bytes::read_u16;
use crate::error::{Error, Result};
use crate::page::allocation::{pfs_page_for, pfs_says_allocated, AllocationUnit, IamPage};
use crate::page::compression_info::{CompressionInfo, PAGE_HAS_CI_STRUCTURE};
use crate::page::{Page, PageId, PageType};
use crate::record::cd::CdRecord;
use crate::record::{Record, RecordFormat, RecordType};
use crate::source::{contiguous_pages, PageReader, PageRun, RUN_PAGES};

/// What a scan met besides the rows it returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Rows returned.
    pub rows: u64,
    /// Pages read.
    pub pages: u64,
    /// Ghost (deleted, not yet cleaned up) records passed over, or returned when asked for.
    pub ghost_records: u64,
    /// Heap rows read at their forwarded place through a forwarding stub.
    pub forwarded_rows: u64,
    /// What a salvage scan skipped (always empty otherwise: damage stops a normal scan).
    pub skipped: Vec<Skipped>,
}

/// A page or record a salvage scan could not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The page skipped, or holding the record skipped; `None` when the damage has no page.
    pub page: Option<PageId>,
    /// The slot of the record skipped; `None` for a whole page.
    pub slot: Option<u16>,
    /// What was wrong, as the error said it.
    pub reason: String,
}

impl Skipped {
    /// What a salvage scan records for an error it skipped.
    pub fn from_error(e: &Error) -> Self {
        Skipped { page: e.page(), slot: e.slot(), reason: e.message().to_string() }
    }
}

/// How a scan treats ghosts and damage, and which record format its pages hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanMode {
    /// FixedVar for uncompressed partitions, CD for ROW and PAGE compressed ones
    /// ([`RecordFormat::of_compression`]).
    pub format: RecordFormat,
    /// Return ghost (deleted, not yet cleaned up) records too, marked as such.
    pub include_ghosts: bool,
    /// Skip damaged pages and records (listed in [`ScanStats::skipped`]) instead of stopping.
    /// Pages are then taken from the IAM chains, so a damaged page does not hide the rest of a
    /// clustered index's leaf level.
    pub salvage: bool,
}

impl std::ops::AddAssign for ScanStats {
    fn add_assign(&mut self, other: ScanStats) {
        self.rows += other.rows;
        self.pages += other.pages;
        self.ghost_records += other.ghost_records;
        self.forwarded_rows += other.forwarded_rows;
        self.skipped.extend(other.skipped);
    }
}

/// Whether a scan goes on after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next row.
    Continue,
    /// End the scan after this row.
    Stop,
}

/// Where a row was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLocation {
    /// The page holding the record.
    pub page: PageId,
    /// The record's slot on that page.
    pub slot: u16,
    /// A ghost record: deleted, not yet cleaned up (returned only when asked for).
    pub ghost: bool,
}

/// The data pages of a heap allocation unit, in allocation order: [`MappedPages`], listed.
///
/// Bounded by the files, not by what the IAM pages claim: a page is listed once however many IAM
/// pages map it, and every page mapped lies inside a file the source holds.
pub fn heap_pages(reader: &PageReader, unit: &AllocationUnit) -> Result<Vec<PageId>> {
    let mut pages = Vec::new();
    MappedPages::new(reader, unit)?.for_each(|id| pages.push(id));
    Ok(pages)
}

/// IAM pages [`MappedPages`] keeps from its first walk of a chain (8 KB each), so that a unit of
/// up to 16 GB (4 GB an IAM page) has its chain read once: most units have one IAM page.
const IAM_PAGES_KEPT: usize = 4;

/// The pages an allocation unit's IAM chain maps and their PFS pages mark allocated (each IAM
/// page's single pages from mixed extents, then the eight pages of each of its uniform
/// extents; a page once however many IAM pages map it), handed out one at a time instead of
/// listed, so that a unit of any size costs the same: the first `IAM_PAGES_KEPT` (4) IAM pages and
/// one PFS page, plus, while the pages are handed out, one bit a page of each 65,536-page
/// stretch of a file the chain maps pages in (a page is never handed out twice).
///
/// [`MappedPages::new`] walks the chain and reads the PFS pages before any page is handed out:
/// a damaged chain (a cycle, an IAM page that cannot be read or parsed, a page mapped outside
/// the files) or a PFS page that cannot be read fails there, with the error a list of the pages
/// gave, so [`MappedPages::for_each`] hands out every page or none. The chain's IAM pages are
/// read again there, past the first few (one more read of an IAM page per 4 GB of the unit).
pub struct MappedPages<'r> {
    reader: &'r PageReader,
    first_iam: PageId,
    /// IAM pages in the chain, as the first walk found them.
    iam_pages: usize,
    /// The chain's first IAM pages, as read.
    iam_kept: Vec<Page>,
    pfs: PfsPage,
    /// Pages mapped and allocated, a page mapped twice counted twice.
    at_most: usize,
}

impl<'r> MappedPages<'r> {
    /// Walks `unit`'s IAM chain and the PFS pages of the pages it maps: the chain is acyclic,
    /// every page it maps lies inside a file ([`check_in_file`]), every PFS page concerned reads.
    pub fn new(reader: &'r PageReader, unit: &AllocationUnit) -> Result<Self> {
        let mut mapped = MappedPages::none(reader);
        mapped.first_iam = unit.first_iam_page;
        let mut seen_iam = HashSet::new();
        let mut next = unit.first_iam_page;
        while !next.is_null() {
            if !seen_iam.insert(next) {
                return Err(Error::corrupt(format!("IAM chain returns to page {next}: a cycle")));
            }
            let page = reader.read(next)?;
            let iam = IamPage::parse(&page)?;
            for &id in iam.single_pages.iter().chain(&iam.extents) {
                check_in_file(reader, next, id)?;
            }
            mapped.iam_pages += 1;
            next = page.header().next_page;
            if mapped.iam_kept.len() < IAM_PAGES_KEPT {
                mapped.iam_kept.push(page);
            }
        }
        let (mut pfs, mut at_most) = (PfsPage::default(), 0);
        mapped.each_candidate(|id| {
            at_most += usize::from(pfs.allocated(reader, id)?);
            Ok(Flow::Continue)
        })?;
        (mapped.pfs, mapped.at_most) = (pfs, at_most);
        Ok(mapped)
    }

    /// No pages at all.
    pub fn none(reader: &'r PageReader) -> Self {
        MappedPages {
            reader,
            first_iam: PageId::default(),
            iam_pages: 0,
            iam_kept: Vec::new(),
            pfs: PfsPage::default(),
            at_most: 0,
        }
    }

    /// At least as many as the pages [`Self::for_each`] hands out (a page that several IAM pages
    /// map is counted for each).
    pub fn len_at_most(&self) -> usize {
        self.at_most
    }

    /// Calls `each` with each page, in IAM order.
    pub fn for_each(self, mut each: impl FnMut(PageId)) {
        // The walk in `new` read the same pages without an error: none is expected here, and a
        // source that fails now only ends the pages early.
        let _ = self.try_for_each(|id| {
            each(id);
            Ok(Flow::Continue)
        });
    }

    /// Calls `each` with each page, in IAM order, until it returns [`Flow::Stop`] or an error
    /// (returned, as is an error reading again a page `new` read).
    pub fn try_for_each(mut self, mut each: impl FnMut(PageId) -> Result<Flow>) -> Result<()> {
        let (reader, mut pfs, mut seen) = (self.reader, std::mem::take(&mut self.pfs), VisitedPages::default());
        self.each_candidate(|id| {
            if seen.insert(id) && pfs.allocated(reader, id)? {
                return each(id);
            }
            Ok(Flow::Continue)
        })
    }

    /// Calls `each` with every page the chain maps, a page mapped twice twice, until it returns
    /// [`Flow::Stop`]; the chain is the one `new` walked (no longer than it found it).
    fn each_candidate(&self, mut each: impl FnMut(PageId) -> Result<Flow>) -> Result<()> {
        let mut next = self.first_iam;
        for i in 0..self.iam_pages {
            let read;
            let page = match self.iam_kept.get(i) {
                Some(page) => page,
                None => {
                    read = self.reader.read(next)?;
                    &read
                }
            };
            let iam = IamPage::parse(page)?;
            let extents = iam.extents.iter().flat_map(|extent| {
                (0..8).filter_map(|i| extent.page.checked_add(i)).map(|page| PageId::new(extent.file, page))
            });
            for id in iam.single_pages.iter().copied().chain(extents) {
                if each(id)? == Flow::Stop {
                    return Ok(());
                }
            }
            next = page.header().next_page;
        }
        Ok(())
    }
}

/// The PFS page read last, for the pages of its interval that follow.
#[derive(Default)]
struct PfsPage(Option<Page>);

impl PfsPage {
    /// Whether page `id`'s PFS page marks it allocated.
    fn allocated(&mut self, reader: &PageReader, id: PageId) -> Result<bool> {
        let pfs_id = pfs_page_for(id);
        let pfs = match self.0.take() {
            Some(page) if page.id() == pfs_id => self.0.insert(page),
            _ => self.0.insert(reader.read(pfs_id)?),
        };
        pfs_says_allocated(pfs, id)
    }
}

/// A page (or extent) that IAM page `iam` maps must lie inside a file of the source.
pub fn check_in_file(reader: &PageReader, iam: PageId, mapped: PageId) -> Result<()> {
    let pages = reader.file_page_count(mapped)?;
    if mapped.page >= pages {
        return Err(Error::corrupt(format!(
            "IAM page maps page {mapped}, past the end of file {} ({pages} pages)",
            mapped.file
        ))
        .at_page(iam));
    }
    Ok(())
}

/// Calls `each` for every live row of the partition whose in-row allocation unit is `unit`.
pub fn for_each_row(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    mode: ScanMode,
    mut each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
) -> Result<ScanStats> {
    let mut stats = ScanStats::default();
    if mode.salvage {
        for id in salvage_pages(reader, unit, &mut stats) {
            let page = match reader.read(id) {
                Ok(p) => p,
                Err(e) => {
                    stats.skipped.push(Skipped::from_error(&e));
                    continue;
                }
            };
            if visit_page(reader, &page, is_heap, mode, &mut stats, &mut each)? == Flow::Stop {
                break;
            }
        }
        return Ok(stats);
    }
    for_each_page(reader, unit, is_heap, |page| visit_page(reader, page, is_heap, mode, &mut stats, &mut each))?;
    Ok(stats)
}

/// Where a scan stands: the page and slot it visited last. For a heap's forwarded row it is its
/// forwarding stub's address, not the row's: the order a scan visits slots in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScanPosition {
    /// The page the slot is on.
    pub page: PageId,
    /// The slot on the page, from 0.
    pub slot: u16,
}

impl std::fmt::Display for ScanPosition {
    /// `1:1776:7`: file, page, slot.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.page, self.slot)
    }
}

impl std::str::FromStr for ScanPosition {
    type Err = Error;

    /// Parses `1:1776:7` (file, page, slot).
    fn from_str(text: &str) -> Result<Self> {
        let bad = || Error::not_found(format!("position {text:?}: expected FILE:PAGE:SLOT, e.g. 1:1776:7"));
        let mut parts = text.trim().split(':').map(|p| p.trim().parse::<u32>().map_err(|_| bad()));
        let (Some(file), Some(page), Some(slot), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let (file, slot) = (u16::try_from(file?).map_err(|_| bad())?, u16::try_from(slot?).map_err(|_| bad())?);
        Ok(ScanPosition { page: PageId::new(file, page?), slot })
    }
}

/// Which way a cursor reads: the scan's own order, or back from its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The order a scan visits rows in (IAM order for a heap, key order for a clustered index).
    Forward,
    /// The reverse: a heap's IAM order backwards, a clustered index's leaf chain by previous-page
    /// links from its last page, each page's slots from the last.
    Backward,
}

/// Calls `each` for every live row of the partition whose in-row allocation unit is `unit` that
/// a scan visits after `after` (from the start when `None`), with the position it visited: a
/// keyset cursor on the physical address, resumed without reading the rows before it. Damage
/// stops it (no salvage). `after` must be a page this scan visits: a heap page the unit's IAM
/// chain maps, or a leaf page of the clustered index (its page chain is followed from there).
pub fn for_each_row_after(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    mode: ScanMode,
    after: Option<ScanPosition>,
    each: impl FnMut(&Record, RowLocation, ScanPosition) -> Result<Flow>,
) -> Result<ScanStats> {
    for_each_row_from(reader, unit, is_heap, mode, after, Direction::Forward, each)
}

/// [`for_each_row_after`] in either direction: with [`Direction::Backward`], the rows a scan
/// visits before `from` (from the end when `None`), last first: the cursor of a "last 100 rows"
/// or "previous 100" view, which never reads the rows in front of it either.
pub fn for_each_row_from(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    mode: ScanMode,
    from: Option<ScanPosition>,
    direction: Direction,
    mut each: impl FnMut(&Record, RowLocation, ScanPosition) -> Result<Flow>,
) -> Result<ScanStats> {
    let mut stats = ScanStats::default();
    let mut found = from.is_none();
    let start = match (from, direction) {
        (Some(a), _) => Some(a.page),
        // An empty index has no last leaf: the walk from 0:0 reads nothing.
        (None, Direction::Backward) if !is_heap => Some(last_leaf(reader, unit, mode.format)?),
        (None, _) => None,
    };
    walk_pages(reader, unit, is_heap, start, direction, |page| {
        let count = u32::from(page.slot_count());
        // The slots still to visit on this page, in visiting order.
        let (low, high) = match from {
            Some(a) if a.page == page.id() => {
                found = true;
                match direction {
                    Direction::Forward => (u32::from(a.slot) + 1, count),
                    Direction::Backward => (0, u32::from(a.slot).min(count)),
                }
            }
            _ => (0, count),
        };
        stats.pages += 1;
        let ci = page_compression_info(page, mode.format)?;
        let mut visit = |slot: u32| {
            let slot = slot as u16;
            let position = ScanPosition { page: page.id(), slot };
            let mut with_position = |record: &Record, location: RowLocation| each(record, location, position);
            visit_slot(reader, page, ci.as_ref(), slot, is_heap, mode, &mut stats, &mut with_position)
        };
        let slots: Box<dyn Iterator<Item = u32>> = match direction {
            Direction::Forward => Box::new(low..high),
            Direction::Backward => Box::new((low..high).rev()),
        };
        for slot in slots {
            if visit(slot)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    })?;
    match from {
        Some(a) if !found => {
            Err(Error::not_found(format!("page {} is not a page a scan of allocation unit {} visits", a.page, unit.id)))
        }
        _ => Ok(stats),
    }
}

/// Calls `each` with the record a scan visits at `at` (none for an empty slot, a forwarded
/// record met on its own page, or a ghost unless `mode` includes them): a row page's one row,
/// read without a scan. The page must be a data page of `unit`.
pub fn visit_position(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    mode: ScanMode,
    at: ScanPosition,
    mut each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
) -> Result<()> {
    let page = reader.read(at.page)?;
    let h = page.header();
    if h.page_type != PageType::Data || h.level != 0 || !h.belongs_to(unit.id) {
        return Err(Error::not_found(format!("page {} holds no row of allocation unit {}", at.page, unit.id)));
    }
    if at.slot >= page.slot_count() {
        return Err(Error::not_found(format!("page {} has no slot {}", at.page, at.slot)));
    }
    let ci = page_compression_info(&page, mode.format)?;
    let mut stats = ScanStats::default();
    visit_slot(reader, &page, ci.as_ref(), at.slot, is_heap, mode, &mut stats, &mut each)?;
    Ok(())
}

/// Calls `each` for every data page of the partition whose in-row allocation unit is `unit`: a
/// heap's pages in IAM order, a clustered index's leaf level along its page chain.
pub fn for_each_page(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    each: impl FnMut(&Page) -> Result<Flow>,
) -> Result<()> {
    walk_pages(reader, unit, is_heap, None, Direction::Forward, each)
}

/// [`for_each_page`] from page `start` on in `direction` (a heap's pages before it in IAM
/// order are passed over unread; a clustered index's chain starts there), from the first or
/// last page when `None`.
fn walk_pages(
    reader: &PageReader,
    unit: &AllocationUnit,
    is_heap: bool,
    start: Option<PageId>,
    direction: Direction,
    mut each: impl FnMut(&Page) -> Result<Flow>,
) -> Result<()> {
    if is_heap && matches!(direction, Direction::Forward) {
        // The pages as the IAM chain hands them out, a run's worth looked ahead so that pages
        // that follow each other in a file are read as one run: a bit a page held, not a list.
        let (mut run, mut ahead) = (PageRun::new(), VecDeque::with_capacity(RUN_PAGES as usize));
        let mut visit = |ahead: &mut VecDeque<PageId>| -> Result<Flow> {
            let Some(&id) = ahead.front() else { return Ok(Flow::Stop) };
            let page = reader.read_in_run(&mut run, id, || contiguous_pages(ahead.make_contiguous()))?;
            ahead.pop_front();
            let h = page.header();
            // Extents also hold pages not (or no longer) formatted for this unit.
            if h.page_type != PageType::Data || !h.belongs_to(unit.id) {
                return Ok(Flow::Continue);
            }
            each(&page)
        };
        let (mut started, mut stopped) = (start.is_none(), false);
        MappedPages::new(reader, unit)?.try_for_each(|id| {
            started = started || Some(id) == start;
            if !started {
                return Ok(Flow::Continue);
            }
            ahead.push_back(id);
            if ahead.len() < RUN_PAGES as usize {
                return Ok(Flow::Continue);
            }
            let flow = visit(&mut ahead)?;
            stopped = flow == Flow::Stop;
            Ok(flow)
        })?;
        while !stopped && !ahead.is_empty() {
            stopped = visit(&mut ahead)? == Flow::Stop;
        }
    } else if is_heap {
        // Backward (a "last rows" view), from the list's end or from `start`.
        let pages = heap_pages(reader, unit)?;
        let end = match start {
            Some(s) => pages.iter().position(|&p| p == s).map_or(0, |i| i + 1),
            None => pages.len(),
        };
        for &id in pages[..end].iter().rev() {
            let page = reader.read(id)?;
            let h = page.header();
            // Extents also hold pages not (or no longer) formatted for this unit.
            if h.page_type != PageType::Data || !h.belongs_to(unit.id) {
                continue;
            }
            if each(&page)? == Flow::Stop {
                break;
            }
        }
    } else {
        let mut seen = VisitedPages::default();
        let mut next = match (start, direction) {
            (Some(start), _) => start,
            (None, Direction::Forward) => first_leaf(reader, unit)?,
            (None, Direction::Backward) => leaf_end_from_iam(reader, unit, Direction::Backward)?,
        };
        let (mut run, mut ahead, mut last) = (PageRun::new(), 1u32, PageId::new(0, 0));
        while !next.is_null() {
            if !seen.insert(next) {
                return Err(Error::corrupt(format!("leaf page chain returns to page {next}: a cycle")));
            }
            let page = match direction {
                // A leaf level built in key order lies in file order: while it does, read ahead
                // twice as far each time (up to a run), and one page again once it does not.
                Direction::Forward => {
                    let in_order = next.file == last.file && last.page.checked_add(1) == Some(next.page);
                    ahead = if in_order { ahead.saturating_mul(2).min(RUN_PAGES) } else { 1 };
                    last = next;
                    reader.read_in_run(&mut run, next, || ahead)?
                }
                Direction::Backward => reader.read(next)?,
            };
            let h = page.header();
            if h.page_type != PageType::Data || h.level != 0 || !h.belongs_to(unit.id) {
                return Err(Error::corrupt(format!(
                    "expected a leaf data page of allocation unit {}, found a {} page (level {}) of allocation unit {}",
                    unit.id,
                    h.page_type.name(),
                    h.level,
                    h.allocation_unit_id()
                ))
                .at_page(next));
            }
            if each(&page)? == Flow::Stop {
                break;
            }
            next = match direction {
                Direction::Forward => h.next_page,
                Direction::Backward => h.prev_page,
            };
        }
    }
    Ok(())
}

/// The pages a walk along a page chain has visited, to tell a cycle: a bitmap of 65,536 pages
/// (8 KB) for each stretch of a file the chain enters, so it grows with the pages visited, not
/// with the files' sizes.
#[derive(Default)]
struct VisitedPages {
    stretches: HashMap<(u16, u32), Box<[u64; 1024]>>,
}

impl VisitedPages {
    /// Marks `id` visited; false when it was already.
    fn insert(&mut self, id: PageId) -> bool {
        let bits = self.stretches.entry((id.file, id.page >> 16)).or_insert_with(|| Box::new([0; 1024]));
        let (word, bit) = (((id.page & 0xffff) >> 6) as usize, 1u64 << (id.page & 63));
        let new = bits[word] & bit == 0;
        bits[word] |= bit;
        new
    }
}

/// The data pages of a unit for a salvage scan: from the IAM chains, each page whose header is
/// readable and names a data page of the unit; the pages that cannot be read are recorded.
fn salvage_pages(reader: &PageReader, unit: &AllocationUnit, stats: &mut ScanStats) -> Vec<PageId> {
    let candidates = match heap_pages(reader, unit) {
        Ok(p) => p,
        Err(e) => {
            stats.skipped.push(Skipped::from_error(&e));
            return Vec::new();
        }
    };
    let mut pages = Vec::new();
    for id in candidates {
        match reader.read(id) {
            Ok(page) => {
                let h = page.header();
                if h.page_type == PageType::Data && h.level == 0 && h.belongs_to(unit.id) {
                    pages.push(id);
                }
            }
            // Unformatted pages of an allocated extent are not damage.
            Err(e) if e.message().contains("says it is page 0:0") => {}
            Err(e) => stats.skipped.push(Skipped::from_error(&e)),
        }
    }
    pages
}

/// Calls `each` for every live row on one data page (following forwarding stubs of heaps). In
/// salvage mode a record that cannot be read is recorded and skipped.
pub fn visit_page(
    reader: &PageReader,
    page: &Page,
    is_heap: bool,
    mode: ScanMode,
    stats: &mut ScanStats,
    each: &mut impl FnMut(&Record, RowLocation) -> Result<Flow>,
) -> Result<Flow> {
    stats.pages += 1;
    let ci = match page_compression_info(page, mode.format) {
        Ok(ci) => ci,
        // A salvage scan returns the rows it can read: the page is listed as skipped.
        Err(e) if mode.salvage => {
            stats.skipped.push(Skipped::from_error(&e));
            return Ok(Flow::Continue);
        }
        Err(e) => return Err(e),
    };
    for slot in 0..page.slot_count() {
        match visit_slot(reader, page, ci.as_ref(), slot, is_heap, mode, stats, each) {
            Ok(Flow::Stop) => return Ok(Flow::Stop),
            Ok(Flow::Continue) => {}
            Err(e) if mode.salvage && e.kind() == crate::error::ErrorKind::Corrupt => {
                stats.skipped.push(Skipped::from_error(&e.at_page(page.id()).at_slot(slot)));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Flow::Continue)
}

/// The CI structure of a PAGE compressed page whose records are read in `format`, parsed once
/// for all its records; `None` for pages without one.
pub fn page_compression_info(page: &Page, format: RecordFormat) -> Result<Option<CompressionInfo<'_>>> {
    if format == RecordFormat::Cd && page.header().type_flag_bits & PAGE_HAS_CI_STRUCTURE != 0 {
        return CompressionInfo::parse(page.bytes()).map(Some).map_err(|e| e.at_page(page.id()));
    }
    Ok(None)
}

/// Calls `f` with the record in `bytes`, parsed in `format` (a CD record against its page's CI
/// structure `ci`).
fn with_record<R>(
    bytes: &[u8],
    format: RecordFormat,
    ci: Option<&CompressionInfo>,
    f: impl FnOnce(&Record) -> Result<R>,
) -> Result<R> {
    match format {
        RecordFormat::FixedVar => f(&Record::parse(bytes)?),
        RecordFormat::Cd => {
            let cd = CdRecord::parse(bytes)?;
            f(&Record::from_cd(&cd, ci))
        }
    }
}

/// The record type of the record starting with `first`, read as `format` says.
fn record_type(first: u8, format: RecordFormat) -> RecordType {
    match format {
        RecordFormat::FixedVar => RecordType::from_status(first),
        RecordFormat::Cd => RecordType::from_cd_header(first),
    }
}

/// Calls `each` for the live row in one slot, if any (ghosts counted or passed, forwarding stubs
/// followed, forwarded records skipped where they are stored); `ci` is the page's CI structure
/// ([`page_compression_info`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn visit_slot(
    reader: &PageReader,
    page: &Page,
    ci: Option<&CompressionInfo>,
    slot: u16,
    is_heap: bool,
    mode: ScanMode,
    stats: &mut ScanStats,
    each: &mut impl FnMut(&Record, RowLocation) -> Result<Flow>,
) -> Result<Flow> {
    {
        let Some(bytes) = page.slot_bytes(slot)? else { return Ok(Flow::Continue) };
        let location = RowLocation { page: page.id(), slot, ghost: false };
        let at_slot = |e: Error| e.at_page(page.id()).at_slot(slot);
        let format = mode.format;
        // Every record of a compressed partition is a CD record, ghosts and forwarded ones too:
        // one without the format bit would otherwise pass for whatever type its bits spell.
        if format == RecordFormat::Cd && bytes[0] & crate::record::cd::HEADER_CD_FORMAT == 0 {
            return Err(at_slot(Error::corrupt(format!(
                "record header {:#04x} is not in the CD format (bit 0 clear) of its compressed partition",
                bytes[0]
            ))));
        }
        match record_type(bytes[0], format) {
            RecordType::Primary => {
                let flow = with_record(bytes, format, ci, |record| each(record, location)).map_err(at_slot)?;
                stats.rows += 1;
                return Ok(flow);
            }
            RecordType::GhostData if mode.include_ghosts => {
                let flow =
                    with_record(bytes, format, ci, |record| each(record, RowLocation { ghost: true, ..location }))
                        .map_err(at_slot)?;
                stats.ghost_records += 1;
                return Ok(flow);
            }
            RecordType::GhostData | RecordType::GhostVersion => stats.ghost_records += 1,
            // Returned through its stub.
            RecordType::Forwarded => {}
            RecordType::ForwardingStub if is_heap => {
                let target = forwarding_target(bytes).map_err(at_slot)?;
                let target_page = reader.read(target.page).map_err(at_slot)?;
                let target_bytes = target_page.slot_bytes(target.slot)?.ok_or_else(|| {
                    Error::corrupt(format!(
                        "forwarding stub points at empty slot {} of page {}",
                        target.slot, target.page
                    ))
                })?;
                if record_type(target_bytes[0], format) != RecordType::Forwarded {
                    return Err(at_slot(Error::corrupt(format!(
                        "forwarding stub points at page {} slot {}, which holds no forwarded record",
                        target.page, target.slot
                    ))));
                }
                let target_ci = page_compression_info(&target_page, format)?;
                let flow = with_record(target_bytes, format, target_ci.as_ref(), |record| each(record, target))
                    .map_err(|e| e.at_page(target.page).at_slot(target.slot))?;
                stats.rows += 1;
                stats.forwarded_rows += 1;
                return Ok(flow);
            }
            other => {
                return Err(at_slot(Error::corrupt(format!("unexpected {other:?} record in a data page"))));
            }
        }
    }
    Ok(Flow::Continue)
}

/// The first page of a clustered index's leaf level: the allocation unit's recorded first page
/// when it is a leaf page of the unit with no previous page, otherwise the leaf page with no
/// previous page among those the unit's IAM chain owns (sysallocunits' first page can be stale:
/// the corpus has one pointing at a page another table now owns).
pub fn first_leaf(reader: &PageReader, unit: &AllocationUnit) -> Result<PageId> {
    if unit.first_page.is_null() && unit.first_iam_page.is_null() {
        return Ok(PageId::default());
    }
    // A recorded first page that cannot be read (past the end of the file, not in a backup) is as
    // stale as one another unit owns.
    if let Ok(first) = reader.read(unit.first_page) {
        let h = first.header();
        if h.page_type == PageType::Data && h.level == 0 && h.prev_page.is_null() && h.belongs_to(unit.id) {
            return Ok(unit.first_page);
        }
    }
    leaf_head_from_iam(reader, unit)
}

/// The leaf page with no previous page among the allocated pages the unit's IAM chain owns.
pub fn leaf_head_from_iam(reader: &PageReader, unit: &AllocationUnit) -> Result<PageId> {
    leaf_end_from_iam(reader, unit, Direction::Forward)
}

/// The leaf page a scan in `direction` starts from, among the pages the unit's IAM chain owns:
/// the one with no previous page (forward) or no next page (backward). It reads every page the
/// unit owns (no index descent), once per call.
pub fn leaf_end_from_iam(reader: &PageReader, unit: &AllocationUnit, direction: Direction) -> Result<PageId> {
    let mut heads = Vec::new();
    MappedPages::new(reader, unit)?.try_for_each(|id| {
        let page = reader.read(id)?;
        let h = page.header();
        let end = match direction {
            Direction::Forward => h.prev_page,
            Direction::Backward => h.next_page,
        };
        if h.page_type == PageType::Data && h.level == 0 && h.belongs_to(unit.id) && end.is_null() {
            heads.push(id);
        }
        Ok(Flow::Continue)
    })?;
    match heads.as_slice() {
        [] => Ok(PageId::default()),
        [head] => Ok(*head),
        many => Err(Error::corrupt(format!(
            "the leaf level of allocation unit {} has {} {} pages ({})",
            unit.id,
            many.len(),
            if direction == Direction::Forward { "first" } else { "last" },
            many.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The last page of a clustered index's leaf level: by descending from the recorded root page
/// ([`descend_to_last_leaf`]), or among the pages the IAM chain maps where the recorded root is
/// not the root of this unit's B-tree (stale, like `pgfirst` can be) or its interior records
/// are compressed.
pub fn last_leaf(reader: &PageReader, unit: &AllocationUnit, format: RecordFormat) -> Result<PageId> {
    let descended = if format == RecordFormat::FixedVar { descend_to_last_leaf(reader, unit)? } else { None };
    match descended {
        Some(last) => Ok(last),
        None => leaf_end_from_iam(reader, unit, Direction::Backward),
    }
}

/// The last page of the leaf level of the B-tree whose in-row allocation unit is `unit`, found
/// by reading the recorded root page and following the child pointer of the last record of each
/// interior level (layout in the module documentation): one page a level.
///
/// `Ok(None)` when the descent cannot start: an empty unit, a recorded root that cannot be read
/// or is not a root page of this unit (a page of another unit, one with neighbours, or one the PFS
/// page marks free: the record is stale). Interior records must be uncompressed ([`last_leaf`] does not descend ROW / PAGE
/// compressed indexes, whose CD records keep the child pointer among their columns). Once started, each
/// child must be a page of the unit one level down with no next page (the last page of its
/// level); anything else is an error naming the page that points at it. The level falls by one
/// at every step, so the descent ends.
pub fn descend_to_last_leaf(reader: &PageReader, unit: &AllocationUnit) -> Result<Option<PageId>> {
    if unit.root_page.is_null() {
        return Ok(None);
    }
    let Ok(root) = reader.read(unit.root_page) else { return Ok(None) };
    let h = root.header();
    let is_tree_page = matches!((h.page_type, h.level), (PageType::Data, 0) | (PageType::Index, 1..));
    if !is_tree_page || !h.belongs_to(unit.id) || !h.prev_page.is_null() || !h.next_page.is_null() {
        return Ok(None);
    }
    // A freed page keeps its header, and so would pass for a root. (The corpus' other stale roots,
    // e.g. sys.syscolpars' 1:111 in every LocalDB file, are level-0 index pages: refused above.)
    let allocated = reader.read(pfs_page_for(root.id())).and_then(|pfs| pfs_says_allocated(&pfs, root.id()));
    if !matches!(allocated, Ok(true)) {
        return Ok(None);
    }
    let mut page = root;
    while page.header().level > 0 {
        let h = page.header();
        let bad = |why: String| Error::corrupt(format!("descending to the last leaf page: {why}")).at_page(page.id());
        let last_slot = h.slot_count.checked_sub(1).ok_or_else(|| bad("an interior page with no records".into()))?;
        let record = page.slot_bytes(last_slot)?.ok_or_else(|| bad(format!("its last slot {last_slot} is empty")))?;
        if RecordType::from_status(record[0]) != RecordType::Index {
            return Err(bad(format!("its last record (slot {last_slot}) is not an index record")).at_slot(last_slot));
        }
        let pointer = usize::from(h.pminlen)
            .checked_sub(6)
            .filter(|&at| at >= 1)
            .and_then(|at| record.get(at..at + 6))
            .ok_or_else(|| bad(format!("pminlen {} leaves no room for a child pointer", h.pminlen)))?;
        let child_id = PageId::from_bytes(pointer).unwrap_or_default();
        let child = reader.read(child_id).map_err(|e| bad(format!("its last child {child_id} cannot be read: {e}")))?;
        let c = child.header();
        let expected = if h.level == 1 { PageType::Data } else { PageType::Index };
        if c.page_type != expected || c.level + 1 != h.level || !c.belongs_to(unit.id) || !c.next_page.is_null() {
            return Err(bad(format!(
                "its last child {child_id} is a {} page at level {} of allocation unit {} with next page {}, \
                 not the last {} page at level {} of allocation unit {}",
                c.page_type.name(),
                c.level,
                c.allocation_unit_id(),
                c.next_page,
                expected.name(),
                h.level - 1,
                unit.id
            )));
        }
        page = child;
    }
    Ok(Some(page.id()))
}

/// The row a forwarding stub points to: status byte, then page (4), file (2), slot (2).
pub fn forwarding_target(stub: &[u8]) -> Result<RowLocation> {
    let rid = stub.get(1..9).ok_or_else(|| Error::corrupt("forwarding stub shorter than 9 bytes"))?;
    let page = PageId::from_bytes(&rid[..6]).unwrap_or_default();
    let slot = read_u16(rid, 6).unwrap_or(0);
    if page.is_null() {
        return Err(Error::corrupt("forwarding stub points at page 0:0"));
    }
    Ok(RowLocation { page, slot, ghost: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_visited_twice_is_told_in_any_file_and_stretch() {
        let mut seen = VisitedPages::default();
        let pages = [(1, 0), (1, 63), (1, 64), (1, 65_535), (1, 65_536), (3, 0), (1, u32::MAX)];
        for (file, page) in pages {
            assert!(seen.insert(PageId::new(file, page)), "{file}:{page} first");
        }
        for (file, page) in pages {
            assert!(!seen.insert(PageId::new(file, page)), "{file}:{page} again");
        }
        assert!(seen.insert(PageId::new(1, 1)));
        assert!(seen.insert(PageId::new(2, 63)));
        // One 8 KB bitmap for each stretch of 65,536 pages entered.
        assert_eq!(seen.stretches.len(), 5);
    }

    #[test]
    fn reads_the_rid_of_a_forwarding_stub() {
        let stub = [0x04, 0x9a, 0, 0, 0, 1, 0, 3, 0];
        assert_eq!(forwarding_target(&stub).unwrap(), RowLocation { page: PageId::new(1, 154), slot: 3, ghost: false });
        assert!(forwarding_target(&stub[..8]).is_err());
        assert!(forwarding_target(&[0x04, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }
}
