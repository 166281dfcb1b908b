//! A CD (compressed) record: `CdRecord::parse`, every column's value (one walk, `values_into`,
//! giving what `value` gives column by column; `parse_cells`, whose 4-byte cells locate the same
//! values on the page, the record placed on a page of 8 KB), and each value decoded as
//! the compressed storage form of one of several types (integers, datetime, vardecimal, SCSU
//! text, ...), the type taking turns by column.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mdfkit::page::PAGE_SIZE;
use mdfkit::record::cd::{CdRecord, CdValue};
use mdfkit::compressed::values::decode_compressed;
use mdfkit::types::TypeInfo;

const TYPES: [&str; 9] =
    ["int", "bigint", "datetime", "decimal(38,10)", "nvarchar(40)", "nchar(10)", "float", "datetime2(7)", "bit"];

/// Parsed once: `TypeInfo::parse` looks names up among every type id.
fn types() -> &'static [TypeInfo] {
    static TYPE_INFOS: OnceLock<Vec<TypeInfo>> = OnceLock::new();
    TYPE_INFOS.get_or_init(|| TYPES.iter().filter_map(|t| TypeInfo::parse(t)).collect())
}

fuzz_target!(|data: &[u8]| {
    let Ok(record) = CdRecord::parse(data) else { return };
    assert!(record.bytes().len() <= data.len());
    let _ = (record.record_type(), record.back_pointer());
    let mut walked = Vec::new();
    record.values_into(usize::MAX, &mut walked);
    assert_eq!(walked.len(), record.column_count());
    assert!(walked.iter().enumerate().all(|(i, v)| record.value(i) == Some(*v)));
    if data.len() <= PAGE_SIZE - 96 {
        // The record where a page's records start, the bytes after it as they are.
        let mut page = vec![0u8; 96];
        page.extend_from_slice(data);
        let mut cells = vec![None; record.column_count()];
        let on_page = CdRecord::parse_cells(&page, 96, usize::MAX, |i, cell| cells[i] = Some(cell)).unwrap();
        assert_eq!(on_page.bytes(), record.bytes());
        assert!(cells.iter().zip(&walked).all(|(cell, v)| cell.map(|c| c.value(&page)) == Some(*v)));
    }
    let types = types();
    for i in 0..record.column_count() + 2 {
        let Some(value) = record.value(i) else { continue };
        if let CdValue::Bytes(b) | CdValue::Complex(b) = value {
            assert!(b.len() <= record.bytes().len());
        }
        // One type a column, taking turns: every type meets every kind of value across inputs.
        let ty = &types[(i + usize::from(data.first().copied().unwrap_or(0))) % types.len()];
        let _ = decode_compressed(ty, value, &|b| Ok(String::from_utf8_lossy(b).into_owned()));
    }
});
