//! A PAGE compressed page's compression information structure: `CompressionInfo::parse` over a
//! page whose bytes from offset 96 on are the input, then its anchor record's values and its
//! dictionary's entries; then the records that follow it, each value resolved against the anchor
//! and the dictionary (`CompressionInfo::resolve`), and as one word where it takes at most 8
//! bytes (`PageColumn::word`, which must give resolve's bytes; `PageColumn::word_at`, reading it
//! through the record's `parse_cells` cell, must give the same).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::page::compression_info::{CompressionInfo, PageValue};
use mdfkit::record::cd::{CdRecord, CdValue};
use mdfkit::page::{HEADER_SIZE, PAGE_SIZE};

fuzz_target!(|data: &[u8]| {
    let mut page = vec![0u8; PAGE_SIZE];
    let n = data.len().min(PAGE_SIZE - HEADER_SIZE);
    page[HEADER_SIZE..HEADER_SIZE + n].copy_from_slice(&data[..n]);
    let Ok(ci) = CompressionInfo::parse(&page) else { return };
    assert!(ci.records_start() <= PAGE_SIZE);
    if let Some(anchor) = ci.anchor() {
        for i in 0..anchor.column_count() + 1 {
            let _ = anchor.value(i);
        }
    }
    let total: usize = ci.dictionary().iter().map(|e| e.len()).sum();
    assert!(total <= ci.size);
    // The bytes after the structure, read as records one after another.
    let mut at = ci.records_start();
    while let Ok(record) = CdRecord::parse(&page[at..]) {
        let mut cells = vec![None; record.column_count()];
        CdRecord::parse_cells(&page, at, usize::MAX, |i, cell| cells[i] = Some(cell)).expect("parse read it");
        for i in 0..record.column_count() {
            let Some(stored) = record.value(i) else { continue };
            let cell = cells[i].expect("a cell a column");
            assert_eq!(cell.value(&page), stored);
            assert_eq!(ci.column(i).word_at(&page, cell), ci.column(i).word(stored));
            if let Ok(PageValue::Prefixed { prefix, .. }) = ci.resolve(i, stored) {
                assert!(prefix.len() < 128);
            }
            if let Some((word, n)) = ci.column(i).word(stored) {
                let bytes = match ci.resolve(i, stored) {
                    Ok(PageValue::Stored(CdValue::Bytes(b))) => b.to_vec(),
                    Ok(PageValue::Prefixed { prefix, suffix }) => [prefix, suffix].concat(),
                    other => panic!("one word, yet resolve gives {other:?}"),
                };
                let read = bytes.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
                assert_eq!((word, n), (read, bytes.len()));
            }
            if let CdValue::Symbol(n) = stored {
                if usize::from(n) >= ci.dictionary().len() {
                    assert!(ci.resolve(i, stored).is_err(), "symbol {n} past the dictionary");
                }
            }
        }
        // A record is at least its header and column count: the walk moves on.
        at += record.bytes().len();
    }
});
