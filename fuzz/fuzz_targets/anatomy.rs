//! Page anatomy (`mdfkit page`, the studio's page and record views): any 8 KB taken apart, with a
//! declared row layout and without one; every field it reports must lie inside the page. Pages
//! whose type flag bit 0x80 is set have their CI structure taken apart (header, anchor record,
//! dictionary), and records whose first byte has bit 0x01 set are taken apart as CD records.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::anatomy::{take_apart, PageAnatomy};
use mdfkit::page::protection::verify_and_restore;
use mdfkit::page::{PageHeader, PAGE_SIZE};
use mdfkit::rows::RowDecoder;
use mdfkit::source::PageReader;
use mdfkit::types::TypeInfo;
use mdfkit_fuzz::MemPages;

thread_local! {
    /// The declared layout, built once: a user's `mdfkit page` builds its decoder once a page too,
    /// and the fuzzer should spend its time on the page.
    static DECODER: Option<RowDecoder> = {
        let reader = PageReader::new(Arc::new(MemPages::new(BTreeMap::new())));
        let declared: Vec<(String, TypeInfo)> = ["int", "varchar(20)", "bit", "decimal(10,2)", "nvarchar(max)", "datetime"]
            .iter()
            .enumerate()
            .filter_map(|(i, t)| TypeInfo::parse(t).map(|ty| (format!("c{i}"), ty)))
            .collect();
        RowDecoder::from_declaration(reader, "fuzz", &declared).ok()
    };
}

/// Every field lies inside the page; the header's (when `spell_header`: both passes take the same
/// header apart) and the first record's fields are spelled (as `mdfkit page` spells them), the
/// rest are not: a user asking for a page pays for its text, the fuzzer's time goes to taking
/// pages apart.
///
/// The records' fields and columns are checked in the page's two lists they are ranges of, each
/// entry once, whether a record's range reaches it or not: no range check a record, and no entry
/// left out.
fn assert_inside(a: &PageAnatomy, spell_header: bool) {
    for f in &a.fields {
        assert!(f.offset + f.len <= PAGE_SIZE, "field {:?} past the page", f.name);
    }
    for c in &a.column_values {
        assert!(c.span.is_none_or(|(o, l)| o + l <= PAGE_SIZE));
    }
    let mut end = 96;
    for f in &a.compression_info {
        assert_eq!(f.offset, end, "CI fields follow each other");
        end += f.len;
        let _ = (a.field_name(f), a.field_value(f, None));
    }
    assert!(end <= PAGE_SIZE);
    let first = a.records.first();
    let fields = a
        .header_fields
        .iter()
        .filter(|_| spell_header)
        .map(|f| (f, None))
        .chain(first.into_iter().flat_map(|r| a.record_fields(r).iter().map(move |f| (f, Some(r)))));
    for (f, r) in fields {
        let _ = (a.field_name(f), a.field_value(f, r));
    }
}

fuzz_target!(|data: &[u8]| {
    let mut raw = data.to_vec();
    raw.resize(PAGE_SIZE, 0);
    let verdict = verify_and_restore(&mut raw);
    let Ok(header) = PageHeader::parse(&raw) else { return };
    // Without a layout, then the same bytes with one.
    let bare = take_apart(raw.into_boxed_slice(), header.this_page, verdict, None);
    assert_inside(&bare, true);
    DECODER.with(|decoder| {
        let decoded = take_apart(bare.bytes, header.this_page, verdict, decoder.as_ref());
        assert_inside(&decoded, false);
    });
});
