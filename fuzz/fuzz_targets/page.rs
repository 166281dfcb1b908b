//! One page: header, protection (checksum / torn bits), slot array, records on it, the special
//! page parsers (IAM, GAM / SGAM / IAM bitmaps, boot, file header, PFS), and the page check of `mdfkit check`.
#![no_main]

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::page::allocation::{pfs_says_allocated, ExtentMap, IamPage, PfsMap};
use mdfkit::page::boot::BootPage;
use mdfkit::page::file_header::FileHeader;
use mdfkit::page::protection::{page_checksum, verify_and_restore};
use mdfkit::page::{Page, PageHeader, PageId, PAGE_SIZE};
use mdfkit::record::Record;
use mdfkit::source::PageReader;
use mdfkit_fuzz::{fix_checksum, MemPages};

/// Slots refused on one page before the rest are left: every refusal after the first few takes
/// the same path (as `mdfkit check` names the first few and counts the rest).
const SLOT_ERRORS_TRIED: usize = 8;

fn exercise(page: &Page) {
    // `slot_bytes` checks the slot's offset (`slot_offset`) first; two slots past the count too.
    let mut refused = 0;
    for slot in 0..page.slot_count().saturating_add(2) {
        match page.slot_bytes(slot) {
            Ok(Some(bytes)) => {
                if let Ok(record) = Record::parse(bytes) {
                    for i in 0..record.var_column_count() + 1 {
                        let _ = record.var(i);
                    }
                }
            }
            Ok(None) => {}
            Err(_) => {
                refused += 1;
                if refused == SLOT_ERRORS_TRIED {
                    break;
                }
            }
        }
    }
    let _ = IamPage::parse(page);
    if let Ok(map) = ExtentMap::parse(page) {
        assert!(map.extents <= 63_904 && map.set.iter().all(|r| r.start < r.end && r.end <= map.extents));
        let _ = map.set.iter().map(|r| map.pages(r)).count();
    }
    if let Ok(pfs) = PfsMap::parse(page) {
        assert!(pfs.bytes.len() <= 8088);
        // One pass over the runs: they tile the bytes, and each is spelled (into one buffer, as
        // `mdfkit page` writes them to its output).
        let (mut pages, mut spelled) = (0, String::new());
        for (first, last, byte) in pfs.runs() {
            pages += (last - first) as usize + 1;
            spelled.clear();
            let _ = write!(spelled, "{byte}");
        }
        assert_eq!(pages, pfs.bytes.len());
    }
    let _ = BootPage::parse(page).map(|b| (b.recovery_model(), b.page_verify()));
    let _ = FileHeader::parse(page);
    for p in [0, 1, 100, 8087, 9000] {
        let _ = pfs_says_allocated(page, PageId::new(page.id().file, p));
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = PageHeader::parse(data);
    let mut raw = data.to_vec();
    raw.resize(PAGE_SIZE, 0);
    raw.truncate(PAGE_SIZE);
    let _ = page_checksum(&raw);
    let mut restored = raw.clone();
    let _ = verify_and_restore(&mut restored);
    if let Ok(header) = PageHeader::parse(&restored) {
        let _ = header.allocation_unit_id();
        if let Ok(page) = Page::new(restored.into_boxed_slice(), header.this_page) {
            exercise(&page);
        }
    }
    // The same page through a reader (protection, address) and the page check, as page 1:2
    // (always checked) with a valid checksum. The parsers above do not depend on the page's
    // address: they are not run again on it.
    let mut fixed = raw;
    fixed[32..36].copy_from_slice(&2u32.to_le_bytes());
    fixed[36..38].copy_from_slice(&1u16.to_le_bytes());
    fix_checksum(&mut fixed);
    let source = Arc::new(MemPages::new(BTreeMap::from([(2, fixed)])));
    let _ = PageReader::new(source.clone()).read(PageId::new(1, 2));
    let _ = mdfkit::check::check_pages(source.as_ref(), |_| {});
});
