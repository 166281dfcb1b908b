//! Which extent of which database file each 64 KB run of a backup's data stream is.
//!
//! Nothing in the data stream (MQDA) names its extents: it is a run of whole extents. What places
//! them is the format's own allocation maps, which the backup carries in that same stream.
//!
//! **The rule** (measured on every full backup of the corpus, see below): the main data stream of
//! a full backup holds, for each data file in turn, in increasing page order,
//! 1. every extent the file's GAM pages mark allocated (GAM bit 0; the GAM of each GAM interval
//!    is page 2 of the interval, then every 511,232 pages; its bitmap is slot 1 of the page,
//!    4 bytes of record header and 7,988 bytes = 63,904 extents, least significant bit first,
//!    bit set = extent free), and
//! 2. every extent that holds a PFS page (page 1, then every 8,088 pages), allocated or not,
//!
//! within the file's size (the backup's file list, which agrees with the file header page in every
//! corpus backup). After them SQL Server 2008 R2 may append extents that are not database pages
//! (page type 101, page id 0:0; 11 in the cube-query-history full backup, 5 in improvedk's), and
//! 2019+ backups add a second data block re-sending the extents of the boot page and the file
//! header (TRAPS.md 7). SGAM bits (mixed extents with a free page) do not change what is copied:
//! a mixed extent is copied whole, its free pages as they were last written.
//!
//! Evidence: the stream's extent count equals rule 1 + rule 2 and every extent whose pages carry
//! headers agrees with its place, in entrepot (30 extents), ankitkumar (47), restoretimeclean
//! (37), amigos.api (48), corewebapi (58 + 2 re-sent), the chains' full backups (difftest 23,
//! passwd 23, RestoreTimeClean 21, SimpleBacktest 23, sqltoolsservice FullBackup 43, StopAt 22,
//! cube-query-history 21 + 11 type-101 extents), the compressed sharepoint_config (218) and
//! TutorialDB (43), and incoming/ (aasmand 51, bazyliszek 57 + 2
//! re-sent, denissfloww 58, gueretamartin 58, ploysaintlouis 50, improvedk 328 + the PFS extents
//! 1:8088, 1:16176, 1:24264, which its GAM marks free, + 5 type-101 extents). Striped backups
//! (chinook, RestoreTimeStripe) spread the same extents over their stripes, each stripe's stream
//! an ordered subsequence (chinook stripe 1: 61 of the 122).
//!
//! **Differential backups** ([`ExtentMap::Dcm`]): the main data stream holds, per data file in
//! page order, exactly the extents the file's DCM pages mark changed (the DCM of each GAM
//! interval is page 6 of the interval, page type 16; its bitmap has the GAM's layout, slot 1 at
//! byte 190, 7,992 bytes, but a set bit means changed since the last full backup). No PFS extent
//! is added (every corpus DCM marks extent 0, which holds the file header, PFS, GAM, SGAM, DCM,
//! BCM and the boot page). Evidence: the stream's extent count equals the DCM's list and every
//! extent's page headers name it, in every differential of the corpus: difftest-diff1 and -diff2
//! (6 extents each: 1:0, 1:8, 1:16, 1:24, 1:48, 1:128), SimpleBackTest_1 and _2 (8: those plus
//! 1:72, 1:88), RestoreTimeClean2 (7: 1:152 instead), sqltoolsservice's DiffBackup (5: 1:0, 1:8,
//! 1:16, 1:64, 1:152), both cube-query-history differentials (4, then 12 type-101 extents that
//! are not pages, as in its full backup); the `every_corpus_differential_follows_its_dcm` test
//! re-checks that the locator places each of them with no note. The same alignment rules apply
//! (the DCM plays the GAM's part). A full backup's own DCM is not reset by the backup itself
//! (difftest-full's DCM marks the same six extents as its differentials'), so it says nothing
//! about a full's stream.
//!
//! **Headers are evidence, not addresses.** A page that is not in use keeps whatever was last
//! written at its place (sharepoint_config's extent 1:288 holds seven pages calling themselves
//! 1:7273..1:7279; improvedk's PFS extents hold random bytes after the PFS page), and a damaged
//! page can say anything. So the map places the extents, and a page header counts only as a
//! vote: a page whose header (version 1, a data file's id, a page inside the file) names a page
//! at its own position in an extent votes for that extent.
//!
//! How a main stream is aligned with the map (per file a cursor into its list of extents; the
//! "slack" is the stream's extent count, without the trailing extents of non-page blocks, minus
//! the map's; it is 0 in every corpus backup):
//! - an extent voted for as the next expected extent of a file is that extent;
//! - with slack > 0, an extent voted for (as the only or majority vote, 2 pages at least or every
//!   page with a header) that the map does not list, lying between the file's previous and next
//!   expected extents, was allocated after the GAM page was copied: it is taken, and the cursor
//!   stays;
//! - with slack < 0, an extent voted for that the map lists at most |slack| places ahead was
//!   copied after the ones before it were freed: the cursor jumps to it;
//! - otherwise the map decides: the extent is the current file's next expected one (the
//!   disagreeing headers are stale or damaged pages, which the page reader and `check` report),
//!   then the next file's;
//! - past the end of every map, an extent is taken only where its votes name an extent after the
//!   last one placed (the type-101 blocks have none and are skipped).
//!
//! **Placed by the maps alone** ([`locate_by_maps`]): a single stripe's main stream is first
//! placed without reading its headers. Each file's map pages are read where the maps before them
//! put their interval's first extent (file after file, interval after interval); when they are
//! the map pages they should be, and the stream holds exactly as many page extents as they list
//! (the extents past that count all blocks that are not pages), the stream is the maps' list and
//! the rules above would place every extent there too (slack 0). Otherwise every header is read
//! and the rules above apply. This spares a read of every page of the backup (the page headers):
//! every full backup of the corpus is placed so, and `backup_extent_census` checks on the pages
//! served that each extent's headers agree with its place as the votes would require.
//!
//! In a striped backup no stripe holds all the extents, so each stripe's stream is placed by its
//! votes, in order: of the extents voted for after the previous one, the nearest the map lists
//! (so stale pages naming an extent further on lose to the page naming the extent itself), else
//! a strong vote for one it does not list; an extent without votes is skipped. Re-sent extents
//! (data blocks after the first) are placed the same way, each on its own. A file whose GAM page
//! is not in the stream, fails its checksum or does not parse is placed by votes alone. Every
//! placement that did not follow the map is noted ([`Located::notes`]).
//!
//! Sources: Paul Randal, "Inside the Storage Engine: GAM, SGAM, PFS and other allocation maps"
//! (GAM/SGAM meaning, intervals; the DCM as the map of extents changed since the last full
//! backup); the bitmaps' place and length from the corpus' GAM and DCM pages (slot 1 at byte 190,
//! 7,992 bytes, in every corpus backup; the DCM at page 6, type 16, set bit = changed, from the
//! differentials above); the rule from the measurements above
//! (the `backup_extent_census` test in `tests/corpus_backups.rs` re-checks them on every run).

use std::collections::BTreeMap;

use crate::bytes::{read_u16, read_u32};
use crate::page::allocation::PFS_INTERVAL;
use crate::page::protection::{verify_and_restore, Verdict};
use crate::page::{PageId, PAGE_SIZE};

/// Pages per GAM interval.
pub const GAM_INTERVAL: u32 = 511_232;
/// Pages per extent.
const EXTENT: u32 = 8;
/// Length of the GAM/SGAM bitmap record (4-byte header + 7,988 bytes).
const MAP_RECORD: usize = 7992;

/// One extent-sized run of a data stream: where its first page is and what each page's header
/// says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamExtent {
    /// Byte offset of its first page in its stripe's (decompressed) MTF stream.
    pub offset: u64,
    /// Pages in it (8, fewer only at a stream's end).
    pub pages: u8,
    /// Per position: the page its header names (header version 1, non-zero file id), if any.
    pub named: [Option<PageId>; 8],
    /// Pages with a header of version 1 and file id 0: the blocks that are not database pages
    /// which 2008 R2 appends to a data stream (page type 101, page id 0:0).
    pub blocks: u8,
}

impl StreamExtent {
    /// Reads the page header prefixes (`headers[k]`: at least 38 bytes of page `k`, or fewer
    /// when missing).
    pub fn from_headers(offset: u64, headers: &[&[u8]]) -> Self {
        let mut named = [None; 8];
        let mut blocks = 0;
        for (k, h) in headers.iter().take(8).enumerate() {
            if let (Some(page), Some(file)) = (read_u32(h, 32), read_u16(h, 36)) {
                if h.first() == Some(&1) {
                    if file != 0 {
                        named[k] = Some(PageId::new(file, page));
                    } else {
                        blocks += 1;
                    }
                }
            }
        }
        StreamExtent { offset, pages: headers.len().min(8) as u8, named, blocks }
    }
}

/// One data stream of a backup set (the MQDA pieces of one MSDA block), in stream order.
#[derive(Debug, Clone)]
pub struct DataStream {
    /// Which stripe (backup file) the stream is in, by position in the stripes given.
    pub stripe: usize,
    /// The first data block of its stripe (later ones re-send extents).
    pub main: bool,
    /// The stream's extents, in stream order.
    pub extents: Vec<StreamExtent>,
}

/// An extent placed: its first page, and where its pages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The extent's first page.
    pub first: PageId,
    /// The stripe its bytes are in.
    pub stripe: usize,
    /// Byte offset of its first page in that stripe's MTF stream.
    pub offset: u64,
    /// Pages of the extent the stream holds (up to 8).
    pub pages: u8,
}

/// Where every extent of the streams went, in stream order (later copies of a page win).
#[derive(Debug, Clone, Default)]
pub struct Located {
    /// Every extent placed, in stream order.
    pub placed: Vec<Placed>,
    /// Placements that did not simply follow the map, and extents skipped, in words.
    pub notes: Vec<String>,
    /// First pages of the extents the maps list that no stream holds (in a striped backup with
    /// stripes missing: the extents in those stripes).
    pub missing: Vec<PageId>,
}

/// Which allocation map says what a backup set's data stream copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtentMap {
    /// A full backup: the allocated extents of the GAM pages (page 2 of each GAM interval, type 8,
    /// bit clear = allocated), plus the extents of PFS pages.
    Gam,
    /// A differential backup: the extents the DCM pages mark changed since the full backup (page 6
    /// of each GAM interval, type 16, bit set = changed).
    Dcm,
}

impl ExtentMap {
    /// The map page's number within its GAM interval and its page type.
    fn page(self) -> (u32, u8) {
        match self {
            ExtentMap::Gam => (2, 8),
            ExtentMap::Dcm => (6, 16),
        }
    }
}

/// A data file's map: which extents a backup copies.
#[derive(Debug, Clone)]
struct FileMap {
    pages: u32,
    /// First pages of the extents copied, ascending; `None` when the map could not be read.
    extents: Option<Vec<u32>>,
    cursor: usize,
    /// Last extent placed from this file in the current stream.
    last: Option<u32>,
}

impl FileMap {
    fn next(&self) -> Option<u32> {
        self.extents.as_ref().and_then(|e| e.get(self.cursor).copied())
    }
    fn remaining(&self) -> usize {
        self.extents.as_ref().map_or(0, |e| e.len() - self.cursor.min(e.len()))
    }
    fn position(&self, first: u32) -> Option<usize> {
        self.extents.as_ref().and_then(|e| e.binary_search(&first).ok())
    }
}

/// The extents a GAM page marks allocated, within `pages` pages of the file, plus the extents of
/// its interval's PFS pages (`pages` 0: size unknown, PFS extents up to the last allocated
/// extent). `None` when the page holds no GAM bitmap record.
pub fn copied_extents(gam: &[u8], interval_start: u32, pages: u32) -> Option<Vec<u32>> {
    mapped_extents(ExtentMap::Gam, gam, interval_start, pages)
}

/// The extents a backup of the `map` kind copies, from that map's page of one GAM interval.
fn mapped_extents(map: ExtentMap, page: &[u8], interval_start: u32, pages: u32) -> Option<Vec<u32>> {
    if page.len() < PAGE_SIZE {
        return None;
    }
    // Slot 1's offset from the slot array at the end of the page.
    let at = read_u16(page, PAGE_SIZE - 4)? as usize;
    if at < 96 || at.checked_add(MAP_RECORD)? > PAGE_SIZE - 4 || read_u16(page, at + 2)? as usize != MAP_RECORD {
        return None;
    }
    let bitmap = &page[at + 4..at + MAP_RECORD];
    let interval_end = u64::from(interval_start) + u64::from(GAM_INTERVAL);
    let end = if pages == 0 { interval_end } else { u64::from(pages).min(interval_end) };
    let mut out = Vec::new();
    let mut first = u64::from(interval_start);
    let mut bit = 0usize;
    while first < end && bit < bitmap.len() * 8 {
        let set = bitmap[bit / 8] >> (bit % 8) & 1 == 1;
        let copied = match map {
            ExtentMap::Gam => {
                let holds_pfs = (first..first + u64::from(EXTENT))
                    .any(|p| p == 1 || (p > 0 && p.is_multiple_of(u64::from(PFS_INTERVAL))));
                !set || holds_pfs || first == u64::from(interval_start)
            }
            ExtentMap::Dcm => set,
        };
        if copied {
            out.push(first as u32);
        }
        first += u64::from(EXTENT);
        bit += 1;
    }
    if pages == 0 && map == ExtentMap::Gam {
        // Without a size, the last allocated extent ends the file.
        let last = (0..bitmap.len() * 8).rev().find(|&b| bitmap[b / 8] >> (b % 8) & 1 == 0).unwrap_or(0) as u64;
        out.retain(|&e| u64::from(e) <= u64::from(interval_start) + last * u64::from(EXTENT));
    }
    Some(out)
}

/// Votes of one stream extent: each extent named by a page at its own position, with its count,
/// most voted first (ties: lowest id). Only pages inside a known data file count when `files` is
/// not empty.
fn votes(e: &StreamExtent, files: &BTreeMap<u16, FileMap>) -> (Votes, u32) {
    let mut v = Votes { counts: [(PageId::new(0, 0), 0); EXTENT as usize], len: 0 };
    let mut headers = 0;
    for (k, named) in e.named.iter().enumerate().take(usize::from(e.pages)) {
        let Some(p) = named else { continue };
        headers += 1;
        if p.page % EXTENT != k as u32 {
            continue;
        }
        if !files.is_empty() && !files.get(&p.file).is_some_and(|f| f.pages == 0 || p.page < f.pages) {
            continue;
        }
        let base = PageId::new(p.file, p.page - k as u32);
        match v.counts[..v.len].iter_mut().find(|(b, _)| *b == base) {
            Some((_, n)) => *n += 1,
            None => {
                v.counts[v.len] = (base, 1);
                v.len += 1;
            }
        }
    }
    v.counts[..v.len].sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (v, headers)
}

/// The extents an extent's page headers vote for, most votes first: at most one per page, so
/// they live on the stack (this runs for every extent of a backup).
struct Votes {
    counts: [(PageId, u32); EXTENT as usize],
    len: usize,
}

impl std::ops::Deref for Votes {
    type Target = [(PageId, u32)];
    fn deref(&self) -> &Self::Target {
        &self.counts[..self.len]
    }
}

/// Places every extent of `streams`. `files`: each data file's id and size in pages (0 when
/// unknown); `map`: which allocation map lists the extents the set copies (full or differential
/// backup); `striped`: the set was written to several stripes; `read_page` reads the 8 KB page at
/// a byte offset of a stripe (for the map pages).
pub fn locate(
    streams: &[DataStream],
    files: &[(u16, u32)],
    map: ExtentMap,
    striped: bool,
    read_page: &mut dyn FnMut(usize, u64) -> Option<Vec<u8>>,
) -> Located {
    let mut maps: BTreeMap<u16, FileMap> =
        files.iter().map(|&(id, pages)| (id, FileMap { pages, extents: None, cursor: 0, last: None })).collect();
    let mut out = Located::default();
    read_maps(streams, &mut maps, map, read_page, &mut out.notes);
    for stream in streams.iter().filter(|s| s.main) {
        for m in maps.values_mut() {
            m.last = None;
        }
        if striped {
            place_by_votes(stream, &mut maps, true, &mut out);
        } else {
            place_by_map(stream, &mut maps, &mut out);
        }
    }
    for m in maps.values_mut() {
        m.last = None;
    }
    for stream in streams.iter().filter(|s| !s.main) {
        place_by_votes(stream, &mut maps, false, &mut out);
    }
    let placed: std::collections::BTreeSet<PageId> = out.placed.iter().map(|p| p.first).collect();
    for (id, m) in &maps {
        let Some(listed) = &m.extents else { continue };
        out.missing.extend(listed.iter().map(|&first| PageId::new(*id, first)).filter(|e| !placed.contains(e)));
    }
    if !striped {
        for (id, m) in &maps {
            if let (Some(e), true) = (&m.extents, m.remaining() > 0) {
                out.notes.push(format!(
                    "{} extent(s) of file {id} that its allocation map lists are not in the data stream (first: {})",
                    m.remaining(),
                    PageId::new(*id, e[m.cursor])
                ));
            }
        }
    }
    out
}

/// Finds each file's map pages (the GAM or DCM page in the first extent voted as the interval's
/// first) and reads which extents the backup copies.
fn read_maps(
    streams: &[DataStream],
    maps: &mut BTreeMap<u16, FileMap>,
    map: ExtentMap,
    read_page: &mut dyn FnMut(usize, u64) -> Option<Vec<u8>>,
    notes: &mut Vec<String>,
) {
    let (map_page, _) = map.page();
    let map_name = match map {
        ExtentMap::Gam => "GAM",
        ExtentMap::Dcm => "DCM",
    };
    // Interval starts voted for, first copy in stream order (main streams first).
    let mut starts: BTreeMap<PageId, (usize, u64)> = BTreeMap::new();
    let ordered = streams.iter().filter(|s| s.main).chain(streams.iter().filter(|s| !s.main));
    for s in ordered {
        for e in &s.extents {
            if u32::from(e.pages) <= map_page {
                continue;
            }
            for &(base, _) in votes(e, maps).0.iter() {
                if base.page % GAM_INTERVAL == 0 {
                    starts.entry(base).or_insert((s.stripe, e.offset + u64::from(map_page) * PAGE_SIZE as u64));
                }
            }
        }
    }
    'files: for (id, m) in maps.iter_mut() {
        let intervals = m.pages.div_ceil(GAM_INTERVAL).max(1);
        let mut all = Vec::new();
        for i in 0..intervals {
            let start = i * GAM_INTERVAL;
            let map_id = PageId::new(*id, start + map_page);
            let list = starts
                .get(&PageId::new(*id, start))
                .and_then(|&(stripe, at)| map_page_extents(map, read_page(stripe, at)?, map_id, start, m.pages));
            match list {
                Some(l) => all.extend(l),
                None => {
                    notes.push(format!(
                        "the {map_name} page {map_id} is not in the data stream or is unreadable: the extents of file {id} are placed by their page headers alone"
                    ));
                    continue 'files;
                }
            }
        }
        m.extents = Some(all);
    }
}

/// The extents a map page lists, when `page` is the map page `map_id` it should be (its type, its
/// own address), undamaged where it carries a checksum or torn-page bits.
fn map_page_extents(map: ExtentMap, mut page: Vec<u8>, map_id: PageId, start: u32, pages: u32) -> Option<Vec<u32>> {
    let verdict = verify_and_restore(&mut page);
    if matches!(verdict, Verdict::ChecksumMismatch { .. } | Verdict::Torn { .. }) {
        return None;
    }
    let named = PageId::new(read_u16(&page, 36)?, read_u32(&page, 32)?);
    (page.get(1) == Some(&map.page().1) && named == map_id).then(|| mapped_extents(map, &page, start, pages)).flatten()
}

/// Places a single-stripe backup set by its allocation maps alone, without reading the headers
/// of its main stream: only the map pages (each in the first extent of its GAM interval, at the
/// place the maps before it put that extent) and the headers of the extents past the maps' count,
/// which must all be blocks that are not pages. Re-sent extents (the streams after the main one)
/// are placed by their votes, as [`locate`] places them. `None` when anything does not fit (a map
/// page not where the maps say or unreadable, an interval's first extent not listed, the main
/// stream holding more or fewer page extents than the maps list, a file of unknown size): then
/// every header is read and voted on ([`locate`]). Where the maps account for every extent,
/// [`locate`] too places each extent where the map says (slack 0: a vote only confirms the next
/// expected extent), so the placement is the same; reading every header costs a read of every
/// page of the backup, which this spares (an 884 MB backup: 113,251 reads, 16.7 s from a cold
/// disk). The main stream's extents need not have their headers read; `read_headers` reads them
/// for one extent.
pub fn locate_by_maps(
    streams: &[DataStream],
    files: &[(u16, u32)],
    map: ExtentMap,
    read_page: &mut dyn FnMut(usize, u64) -> Option<Vec<u8>>,
    read_headers: &mut dyn FnMut(usize, &StreamExtent) -> Option<StreamExtent>,
) -> Option<Located> {
    let mut mains = streams.iter().filter(|s| s.main);
    let (Some(main), None) = (mains.next(), mains.next()) else { return None };
    let (map_page, _) = map.page();
    let mut maps = BTreeMap::new();
    let mut out = Located::default();
    for &(id, pages) in files {
        if pages == 0 {
            return None;
        }
        maps.insert(id, pages);
    }
    let mut lists = BTreeMap::new();
    for (&id, &pages) in &maps {
        let mut all = Vec::new();
        for start in (0..pages.div_ceil(GAM_INTERVAL)).map(|i| i * GAM_INTERVAL) {
            let at = out.placed.len();
            let e = main.extents.get(at)?;
            if u32::from(e.pages) <= map_page {
                return None;
            }
            let page = read_page(main.stripe, e.offset.checked_add(u64::from(map_page) * PAGE_SIZE as u64)?)?;
            let listed = map_page_extents(map, page, PageId::new(id, start + map_page), start, pages)?;
            if listed.first() != Some(&start) {
                return None;
            }
            for (k, &first) in listed.iter().enumerate() {
                push(&mut out, main.extents.get(at + k)?, main.stripe, PageId::new(id, first));
            }
            all.extend(listed);
        }
        lists.insert(id, all);
    }
    // Past the maps' count, only blocks that are not pages (the type-101 extents of 2008 R2).
    for e in &main.extents[out.placed.len()..] {
        let read = read_headers(main.stripe, e)?;
        if read.blocks < read.pages {
            return None;
        }
    }
    let mut file_maps: BTreeMap<u16, FileMap> = lists
        .into_iter()
        .map(|(id, extents)| {
            let pages = maps[&id];
            let cursor = extents.len();
            (id, FileMap { pages, extents: Some(extents), cursor, last: None })
        })
        .collect();
    for stream in streams.iter().filter(|s| !s.main) {
        place_by_votes(stream, &mut file_maps, false, &mut out);
    }
    Some(out)
}

/// The extent most voted for and its vote count, when it is strong enough to move an extent off
/// the map: 2 pages at least, or every page with a header.
fn strong(v: &[(PageId, u32)], headers: u32) -> Option<PageId> {
    let &(top, n) = v.first()?;
    let unique = v.get(1).is_none_or(|(_, m)| *m < n);
    (unique && (n >= 2 || n == headers)).then_some(top)
}

fn unlisted_note(extent: PageId) -> String {
    format!(
        "extent {extent} is in the data stream but not in its file's allocation map (allocated while the backup ran): placed by its page headers"
    )
}

fn push(out: &mut Located, e: &StreamExtent, stripe: usize, first: PageId) {
    out.placed.push(Placed { first, stripe, offset: e.offset, pages: e.pages });
}

/// A single-stripe main stream: the map places each extent (see the module documentation).
fn place_by_map(stream: &DataStream, maps: &mut BTreeMap<u16, FileMap>, out: &mut Located) {
    let mapped: usize = maps.values().filter_map(|m| m.extents.as_ref().map(|e| e.len() - m.cursor.min(e.len()))).sum();
    // Trailing blocks that are not pages do not count.
    let effective = stream.extents.iter().rposition(|e| e.blocks < e.pages).map_or(0, |i| i + 1);
    let mut slack = effective as i64 - mapped as i64;
    let mut current: Option<u16> = maps.iter().find(|(_, m)| m.remaining() > 0).map(|(id, _)| *id);
    for e in &stream.extents {
        let (v, headers) = votes(e, maps);
        // The next expected extent of some file, voted for.
        let expected = v.iter().find(|(b, _)| maps.get(&b.file).and_then(FileMap::next) == Some(b.page));
        if let Some((base, m)) = expected.and_then(|&(b, _)| Some((b, maps.get_mut(&b.file)?))) {
            m.cursor += 1;
            m.last = Some(base.page);
            current = Some(base.file);
            push(out, e, stream.stripe, base);
            continue;
        }
        if let Some((top, m)) = strong(&v, headers).and_then(|t| Some((t, maps.get_mut(&t.file)?))) {
            match (m.extents.is_some(), m.position(top.page), m.next()) {
                // Allocated after the map was copied: between the previous and the next expected.
                (true, None, next)
                    if slack > 0 && m.last.is_none_or(|l| l < top.page) && next.is_none_or(|n| top.page < n) =>
                {
                    slack -= 1;
                    m.last = Some(top.page);
                    out.notes.push(unlisted_note(top));
                    push(out, e, stream.stripe, top);
                    continue;
                }
                // Listed further on: the extents before it were freed while the backup ran.
                (true, Some(j), _) if slack < 0 && j > m.cursor && (j - m.cursor) as i64 <= -slack => {
                    let skipped = j - m.cursor;
                    slack += skipped as i64;
                    out.notes.push(format!(
                        "{skipped} extent(s) of file {} before {top} that its allocation map lists are not in the data stream (freed while the backup ran)",
                        top.file
                    ));
                    m.cursor = j + 1;
                    m.last = Some(top.page);
                    current = Some(top.file);
                    push(out, e, stream.stripe, top);
                    continue;
                }
                // A file whose map is unknown: its extents are placed by their headers.
                (false, _, _) if m.last.is_none_or(|l| l < top.page) => {
                    m.last = Some(top.page);
                    push(out, e, stream.stripe, top);
                    continue;
                }
                _ => {}
            }
        }
        // The map decides.
        if current.and_then(|f| maps.get(&f)).is_none_or(|m| m.remaining() == 0) {
            current = maps.iter().find(|(_, m)| m.remaining() > 0).map(|(id, _)| *id);
        }
        if let Some((f, m)) = current.and_then(|f| Some((f, maps.get_mut(&f)?))) {
            if let Some(page) = m.next() {
                let base = PageId::new(f, page);
                if let Some(&(named, _)) = v.first() {
                    out.notes.push(format!(
                        "extent {base} (placed by the allocation map) holds pages whose headers name {named}: stale or damaged pages"
                    ));
                }
                m.cursor += 1;
                m.last = Some(page);
                push(out, e, stream.stripe, base);
                continue;
            }
        }
        // Past every map: only a voted extent after the last one placed.
        place_voted(e, stream.stripe, &v, headers, maps, out);
    }
}

/// Places an extent by its votes, among the extents after the last one placed of their file: the
/// one nearest in its file's map among those the map lists (a stripe's stream is an ordered
/// subsequence of the map, so a stale page naming an extent further on loses to a nearer one),
/// else one the map does not list if the vote is strong (allocated while the backup ran).
/// Returns whether it was placed.
fn place_voted(
    e: &StreamExtent,
    stripe: usize,
    v: &[(PageId, u32)],
    headers: u32,
    maps: &mut BTreeMap<u16, FileMap>,
    out: &mut Located,
) -> bool {
    let after = |b: &PageId| maps.get(&b.file).map_or(maps.is_empty(), |m| m.last.is_none_or(|l| l < b.page));
    let listed = v
        .iter()
        .enumerate()
        .filter(|(_, (b, _))| after(b))
        .filter_map(|(rank, (b, _))| match maps.get(&b.file) {
            None => Some(((0, rank), *b)),
            Some(m) if m.extents.is_none() => Some(((0, rank), *b)),
            Some(m) => m.position(b.page).map(|j| ((j, rank), *b)),
        })
        .min()
        .map(|(_, b)| b);
    let unlisted = || strong(v, headers).filter(|b| after(b));
    match listed.or_else(unlisted) {
        Some(base) => {
            if let Some(m) = maps.get_mut(&base.file) {
                m.last = Some(base.page);
                match m.position(base.page) {
                    Some(j) => m.cursor = m.cursor.max(j + 1),
                    None if m.extents.is_some() => out.notes.push(unlisted_note(base)),
                    None => {}
                }
            }
            push(out, e, stripe, base);
            true
        }
        None => {
            if headers > 0 {
                out.notes.push(format!(
                    "the extent at byte {} of the data stream{} names no extent that fits its place: skipped",
                    e.offset,
                    if stripe > 0 { format!(" of stripe {}", stripe + 1) } else { String::new() }
                ));
            }
            false
        }
    }
}

/// A stream whose extents are placed by their votes alone (stripes, re-sent extents).
fn place_by_votes(stream: &DataStream, maps: &mut BTreeMap<u16, FileMap>, ordered: bool, out: &mut Located) {
    for e in &stream.extents {
        let (v, headers) = votes(e, maps);
        if !ordered {
            for m in maps.values_mut() {
                m.last = None;
            }
        }
        place_voted(e, stream.stripe, &v, headers, maps, out);
    }
}

/// The locator's promise, checked on a scenario built from `data` (the fuzz target
/// `backup_extents` and a unit test run it): a file of 8 to 71 extents whose GAM marks the
/// extents the data's bits say, a data stream holding exactly those (each page's header naming
/// itself), then page headers outside the map's extent replaced by whatever the data says (other
/// pages, other files, none). Every page whose header was left alone must be placed at its own
/// address, and nothing may panic. When the data asks for it, an extent the map does not list is
/// added to the stream too (allocated while the backup ran); then only the absence of a panic is
/// checked.
#[doc(hidden)]
pub fn self_check(data: &[u8]) -> Result<(), String> {
    let Some((&size, rest)) = data.split_first() else { return Ok(()) };
    let extents = 8 + u32::from(size % 64);
    let pages = extents * EXTENT + u32::from(size >> 6);
    let (bits, rest) = rest.split_at(rest.len().min(9));
    let allocated = |e: u32| e == 0 || bits.get(e as usize / 8).is_some_and(|b| b >> (e % 8) & 1 == 1);
    let mut gam = vec![0u8; PAGE_SIZE];
    gam[0] = 1;
    gam[1] = 8;
    gam[32..36].copy_from_slice(&2u32.to_le_bytes());
    gam[36..38].copy_from_slice(&1u16.to_le_bytes());
    gam[192..194].copy_from_slice(&(MAP_RECORD as u16).to_le_bytes());
    gam[194..190 + MAP_RECORD].fill(0xff);
    for e in (0..extents).filter(|&e| allocated(e)) {
        gam[194 + e as usize / 8] &= !(1 << (e % 8));
    }
    gam[PAGE_SIZE - 4..PAGE_SIZE - 2].copy_from_slice(&190u16.to_le_bytes());
    let mut stream: Vec<(u32, StreamExtent)> = (0..extents)
        .filter(|&e| allocated(e))
        .enumerate()
        .map(|(i, e)| {
            let mut named = [None; 8];
            for (k, n) in named.iter_mut().enumerate() {
                *n = Some(PageId::new(1, e * EXTENT + k as u32));
            }
            (e * EXTENT, StreamExtent { offset: i as u64 * 8 * PAGE_SIZE as u64, pages: 8, named, blocks: 0 })
        })
        .collect();
    let mut damaged = vec![[false; 8]; stream.len()];
    let (extra, mutations) = rest.split_first().map_or((0, rest), |(&x, r)| (x, r));
    for m in mutations.chunks_exact(7) {
        let i = 1 + usize::from(m[0]) % (stream.len().max(2) - 1);
        let k = usize::from(m[1] % 8);
        let Some((_, e)) = stream.get_mut(i) else { continue };
        let page = u32::from_le_bytes([m[3], m[4], m[5], m[6]]);
        e.named[k] = match m[2] % 4 {
            0 => None,
            1 => Some(PageId::new(1, page % (pages + 16))),
            2 => Some(PageId::new(1, (page % (pages / EXTENT)) * EXTENT + k as u32)),
            _ => Some(PageId::new(u16::from(m[2]), page)),
        };
        damaged[i][k] = true;
    }
    // An unlisted extent placed in the stream where it belongs.
    let unlisted = (extra & 0x80 != 0).then(|| u32::from(extra & 0x7f) % extents).filter(|&e| !allocated(e));
    if let Some(e) = unlisted {
        let at = stream.iter().position(|(first, _)| *first > e * EXTENT).unwrap_or(stream.len());
        let mut named = [None; 8];
        for (k, n) in named.iter_mut().enumerate() {
            *n = Some(PageId::new(1, e * EXTENT + k as u32));
        }
        stream.insert(at, (e * EXTENT, StreamExtent { offset: 0, pages: 8, named, blocks: 0 }));
        damaged.insert(at, [false; 8]);
        for (i, (_, s)) in stream.iter_mut().enumerate() {
            s.offset = i as u64 * 8 * PAGE_SIZE as u64;
        }
    }
    let streams = [DataStream { stripe: 0, main: true, extents: stream.iter().map(|(_, e)| e.clone()).collect() }];
    let located = locate(&streams, &[(1, pages)], ExtentMap::Gam, false, &mut |_, offset| {
        (offset == 2 * PAGE_SIZE as u64).then(|| gam.clone())
    });
    // Where each page of file 1 was placed (the stream holds no other file's pages).
    let mut at: Vec<Option<u64>> = vec![None; pages as usize + EXTENT as usize];
    for p in located.placed.iter().filter(|p| p.first.file == 1) {
        for k in 0..u32::from(p.pages) {
            if let Some(slot) = at.get_mut((p.first.page + k) as usize) {
                *slot = Some(p.offset + u64::from(k) * PAGE_SIZE as u64);
            }
        }
    }
    if unlisted.is_some() {
        return Ok(());
    }
    for (i, (first, e)) in stream.iter().enumerate() {
        for k in (0..8).filter(|&k| !damaged[i][k]) {
            let id = PageId::new(1, first + k as u32);
            let want = e.offset + k as u64 * PAGE_SIZE as u64;
            let placed = at.get(id.page as usize).copied().flatten();
            if placed != Some(want) {
                return Err(format!(
                    "undamaged page {id} (stream extent {i}) placed at {placed:?}, not {want}; notes {:?}",
                    located.notes
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A GAM page of `interval_start` with the extents `allocated` (indexes in the interval).
    pub(crate) fn gam_page(file: u16, interval_start: u32, allocated: &[u32]) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        p[0] = 1;
        p[1] = 8;
        p[32..36].copy_from_slice(&(interval_start + 2).to_le_bytes());
        p[36..38].copy_from_slice(&file.to_le_bytes());
        p[22..24].copy_from_slice(&2u16.to_le_bytes());
        p[96..98].copy_from_slice(&[0, 0]);
        p[98..100].copy_from_slice(&94u16.to_le_bytes());
        p[190..192].copy_from_slice(&[0, 0]);
        p[192..194].copy_from_slice(&(MAP_RECORD as u16).to_le_bytes());
        p[194..190 + MAP_RECORD].fill(0xff);
        for &e in allocated {
            p[194 + e as usize / 8] &= !(1 << (e % 8));
        }
        p[PAGE_SIZE - 2..].copy_from_slice(&96u16.to_le_bytes());
        p[PAGE_SIZE - 4..PAGE_SIZE - 2].copy_from_slice(&190u16.to_le_bytes());
        p
    }

    /// A DCM page of `interval_start` with the extents `changed` (indexes in the interval).
    pub(crate) fn dcm_page(file: u16, interval_start: u32, changed: &[u32]) -> Vec<u8> {
        let mut p = gam_page(file, interval_start, &[]);
        p[1] = 16;
        p[32..36].copy_from_slice(&(interval_start + 6).to_le_bytes());
        p[194..190 + MAP_RECORD].fill(0);
        for &e in changed {
            p[194 + e as usize / 8] |= 1 << (e % 8);
        }
        p
    }

    #[test]
    fn a_dcm_lists_the_changed_extents_only() {
        let dcm = dcm_page(1, 0, &[0, 3, 1011]);
        assert_eq!(mapped_extents(ExtentMap::Dcm, &dcm, 0, 64).unwrap(), vec![0, 24]);
        // No PFS extent is added (1:8088 is extent 1011 and listed because it changed).
        assert_eq!(mapped_extents(ExtentMap::Dcm, &dcm, 0, 9000).unwrap(), vec![0, 24, 8088]);
        assert_eq!(mapped_extents(ExtentMap::Dcm, &dcm_page(1, 0, &[0]), 0, 9000).unwrap(), vec![0]);
    }

    #[test]
    fn copied_extents_are_the_allocated_ones_and_those_of_pfs_pages() {
        let gam = gam_page(1, 0, &[0, 1, 5]);
        assert_eq!(copied_extents(&gam, 0, 64).unwrap(), vec![0, 8, 40]);
        // Past 8,088 pages: the PFS page's extent is copied though the GAM marks it free.
        assert_eq!(copied_extents(&gam, 0, 8200).unwrap(), vec![0, 8, 40, 8088]);
        // The file's size bounds the list.
        assert_eq!(copied_extents(&gam, 0, 16).unwrap(), vec![0, 8]);
        let mut broken = gam.clone();
        broken[192] = 0;
        assert_eq!(copied_extents(&broken, 0, 64), None);
        assert_eq!(copied_extents(&gam[..100], 0, 64), None);
    }

    /// A GAM page that fails its checksum is not trusted: the file is placed by votes.
    #[test]
    fn a_damaged_gam_page_is_not_trusted() {
        let mut gam = gam_page(1, 0, &[0, 2]);
        gam[4..6].copy_from_slice(&0x0200u16.to_le_bytes()); // checksum-protected, checksum 0
        let extent = |first: u32| StreamExtent {
            offset: u64::from(first) * PAGE_SIZE as u64,
            pages: 8,
            named: std::array::from_fn(|k| Some(PageId::new(1, first + k as u32))),
            blocks: 0,
        };
        let streams = [DataStream { stripe: 0, main: true, extents: vec![extent(0), extent(8), extent(16)] }];
        let located = locate(&streams, &[(1, 64)], ExtentMap::Gam, false, &mut |_, _| Some(gam.clone()));
        let firsts: Vec<u32> = located.placed.iter().map(|p| p.first.page).collect();
        assert_eq!(firsts, [0, 8, 16]);
        assert!(
            located.notes[0].contains("GAM page 1:2 is not in the data stream or is unreadable"),
            "{:?}",
            located.notes
        );
        // Intact, the same page places extent 1:8 as allocated while the backup ran.
        let gam = gam_page(1, 0, &[0, 2]);
        let located = locate(&streams, &[(1, 64)], ExtentMap::Gam, false, &mut |_, _| Some(gam.clone()));
        assert_eq!(located.placed.len(), 3);
        assert!(located.notes[0].contains("extent 1:8 is in the data stream but not in"), "{:?}", located.notes);
    }

    /// Without a file list there is no map to read: extents go where their pages say (a later
    /// copy of an extent wins, as for re-sent extents).
    #[test]
    fn without_a_file_list_extents_are_placed_by_votes() {
        let extent = |file: u16, first: u32| StreamExtent {
            offset: u64::from(first) * PAGE_SIZE as u64,
            pages: 8,
            named: std::array::from_fn(|k| Some(PageId::new(file, first + k as u32))),
            blocks: 0,
        };
        let streams = [DataStream {
            stripe: 0,
            main: true,
            extents: vec![extent(1, 0), extent(3, 8), extent(1, 8), extent(1, 0)],
        }];
        let located = locate(&streams, &[], ExtentMap::Gam, false, &mut |_, _| None);
        let firsts: Vec<PageId> = located.placed.iter().map(|p| p.first).collect();
        assert_eq!(firsts, [PageId::new(1, 0), PageId::new(3, 8), PageId::new(1, 8), PageId::new(1, 0)]);
    }

    /// The fuzz target's property on a fixed sequence of inputs.
    #[test]
    fn damaged_headers_never_lose_an_undamaged_page() {
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        for n in 0..3000 {
            let len = 1 + (n % 200);
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed >> 12;
                    seed ^= seed << 25;
                    seed ^= seed >> 27;
                    (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
                })
                .collect();
            if let Err(e) = self_check(&data) {
                panic!("input {data:?}: {e}");
            }
        }
    }
}
