//! Page anatomy (`mdfkit page`, the studio's page and record views): any 8 KB taken apart, with a
//! declared row layout and without one; every field it reports must lie inside the page.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::anatomy::take_apart;
use mdfkit::page::protection::verify_and_restore;
use mdfkit::page::{PageHeader, PAGE_SIZE};
use mdfkit::rows::RowDecoder;
use mdfkit::source::PageReader;
use mdfkit::types::TypeInfo;
use mdfkit_fuzz::MemPages;

fuzz_target!(|data: &[u8]| {
    let mut raw = data.to_vec();
    raw.resize(PAGE_SIZE, 0);
    let verdict = verify_and_restore(&mut raw);
    let Ok(header) = PageHeader::parse(&raw) else { return };
    let reader = PageReader::new(Arc::new(MemPages::new(BTreeMap::new())));
    let declared: Vec<(String, TypeInfo)> = ["int", "varchar(20)", "bit", "decimal(10,2)", "nvarchar(max)", "datetime"]
        .iter()
        .enumerate()
        .filter_map(|(i, t)| TypeInfo::parse(t).map(|ty| (format!("c{i}"), ty)))
        .collect();
    let decoder = RowDecoder::from_declaration(reader, "fuzz", &declared).ok();
    for d in [None, decoder.as_ref()] {
        let a = take_apart(raw.clone().into_boxed_slice(), header.this_page, verdict, d);
        for r in &a.records {
            for f in &r.fields {
                assert!(f.offset + f.len <= PAGE_SIZE, "field {} past the page", f.name);
            }
            for c in &r.columns {
                assert!(c.span.is_none_or(|(o, l)| o + l <= PAGE_SIZE));
            }
        }
    }
});
