//! A data record: `Record::parse` and every accessor, at every offset and length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::catalog::rowset::parse_sysrscols_row;
use mdfkit::record::Record;

fuzz_target!(|data: &[u8]| {
    let Ok(record) = Record::parse(data) else { return };
    let _ = (record.record_type(), record.bytes(), record.column_count());
    for i in 0..record.var_column_count() + 2 {
        if let Ok(Some(v)) = record.var(i) {
            assert!(v.bytes.len() <= record.bytes().len());
        }
    }
    for bit in 0..record.column_count() + 9 {
        let _ = record.is_null(bit);
    }
    for offset in [0, 3, 4, 5, 8, 100, usize::MAX - 1, usize::MAX] {
        for len in [0, 1, 2, 4, 8, 16, usize::MAX] {
            if let Some(b) = record.fixed(offset, len) {
                assert_eq!(b.len(), len);
            }
        }
    }
    let _ = parse_sysrscols_row(&record);
});
