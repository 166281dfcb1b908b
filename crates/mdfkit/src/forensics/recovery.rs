//! Schema-less recovery: when the catalog itself is damaged, find a table's pages by the
//! allocation unit id in their headers and decode their records with a layout the user declares
//! ([`crate::rows::RowDecoder::from_declaration`]).
//!
//! Nothing here needs the catalog: pages are read straight from the page source, each checked on
//! its own (protection, address), and unreadable ones are reported rather than stopping the work.

use crate::error::Result;
use crate::page::allocation::{pfs_intervals, pfs_page_for};
use crate::page::protection::{self, Verdict};
use crate::page::{Page, PageHeader, PageId, PageType, PAGE_SIZE};
use crate::rows::RowDecoder;
use crate::scan::{self, Flow, RowLocation, ScanMode, ScanStats, Skipped};
use crate::source::{PageReader, PageSource};
use crate::value::Value;

/// One page's header, as `mdfkit pages` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSummary {
    /// The page's address.
    pub id: PageId,
    /// Header byte 1.
    pub page_type: PageType,
    /// Header byte 3: 0 on leaf and data pages.
    pub level: u8,
    /// The allocation unit the header names ([`PageHeader::allocation_unit_id`]).
    pub allocation_unit_id: i64,
    /// Entries in the slot array.
    pub slots: u16,
    /// Free bytes (header bytes 28-29).
    pub free_bytes: u16,
    /// The previous page at the same level (0:0 for none).
    pub prev: PageId,
    /// The next page at the same level (0:0 for none).
    pub next: PageId,
    /// `ok`, `unprotected`, `checksum mismatch`, `torn`, or why the header is unusable.
    pub status: String,
}

/// Reads every page's header (formatted pages only), keeping those `keep` accepts.
pub fn list_pages(source: &dyn PageSource, mut keep: impl FnMut(&PageSummary) -> bool) -> Vec<PageSummary> {
    let mut out = Vec::new();
    let (mut buf, mut probe) = (vec![0u8; PAGE_SIZE], vec![0u8; PAGE_SIZE]);
    for file in source.files() {
        // An interval whose PFS page the source cannot serve (a backup whose file list claims
        // more pages than it copied) is skipped whole: the work stays bounded by what is there.
        let held = pfs_intervals(file.page_count).filter(|interval| {
            source.read_raw(pfs_page_for(PageId::new(file.file_id, interval.start)), &mut probe).is_ok()
        });
        for page in held.flatten() {
            let id = PageId::new(file.file_id, page);
            if source.read_raw(id, &mut buf).is_err() || buf[0] != 1 {
                continue;
            }
            let status = match protection::verify_and_restore(&mut buf) {
                Verdict::ChecksumOk | Verdict::TornBitsRestored => "ok".to_string(),
                Verdict::Unprotected => "unprotected".to_string(),
                Verdict::ChecksumMismatch { .. } => "checksum mismatch".to_string(),
                Verdict::Torn { sector } => format!("torn (sector {sector})"),
            };
            let Ok(h) = PageHeader::parse(&buf) else { continue };
            if h.this_page != id {
                continue;
            }
            let summary = PageSummary {
                id,
                page_type: h.page_type,
                level: h.level,
                allocation_unit_id: h.allocation_unit_id(),
                slots: h.slot_count,
                free_bytes: h.free_count,
                prev: h.prev_page,
                next: h.next_page,
                status,
            };
            if keep(&summary) {
                out.push(summary);
            }
        }
    }
    out
}

/// Decodes the primary records of `pages` with `decoder`, skipping (and listing) what cannot be
/// read; ghost records are passed too when `include_ghosts`.
pub fn decode_pages(
    reader: &PageReader,
    decoder: &RowDecoder,
    pages: &[PageId],
    include_ghosts: bool,
    mut each: impl FnMut(&[Value], RowLocation) -> Result<Flow>,
) -> Result<ScanStats> {
    let mut stats = ScanStats::default();
    let mode = ScanMode { include_ghosts, salvage: true, ..ScanMode::default() };
    let mut values = Vec::new();
    for &id in pages {
        let page: Page = match reader.read(id) {
            Ok(p) => p,
            Err(e) => {
                stats.skipped.push(Skipped::from_error(&e));
                continue;
            }
        };
        let mut row = |record: &crate::record::Record, location: RowLocation| {
            decoder.decode(record, &mut values)?;
            each(&values, location)
        };
        // Heap rules (forwarding stubs followed) serve clustered leaf pages too.
        if scan::visit_page(reader, &page, true, mode, &mut stats, &mut row)? == Flow::Stop {
            break;
        }
    }
    Ok(stats)
}
