//! A data record: `Record::parse` and every accessor, at every offset and length; the same bytes
//! as an index record (`Record::parse_index`, its page's pminlen from the input's last two bytes),
//! its child page too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::catalog::rowset::parse_sysrscols_row;
use mdfkit::record::Record;

/// Every accessor of `record`; its values lie inside its bytes.
fn read_all(record: &Record) {
    let _ = (record.record_type(), record.bytes(), record.column_count(), record.down_page());
    for i in 0..record.var_column_count() + 2 {
        if let Ok(Some(v)) = record.var(i) {
            assert!(v.bytes.len() <= record.bytes().len());
        }
    }
    for bit in 0..record.column_count() + 9 {
        let _ = record.is_null(bit);
    }
    for offset in [0, 1, 3, 4, 5, 8, 100, usize::MAX - 1, usize::MAX] {
        for len in [0, 1, 2, 4, 6, 8, 16, usize::MAX] {
            if let Some(b) = record.fixed(offset, len) {
                assert_eq!(b.len(), len);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some((bytes, pminlen)) = data.split_last_chunk::<2>() {
        if let Ok(index) = Record::parse_index(bytes, u16::from_le_bytes(*pminlen)) {
            assert!(index.fixed_end() <= index.bytes().len());
            read_all(&index);
        }
    }
    let Ok(record) = Record::parse(data) else { return };
    read_all(&record);
    let _ = parse_sysrscols_row(&record);
});
