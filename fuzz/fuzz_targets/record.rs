//! A data record: `Record::parse` and every accessor, at every offset and length; the same bytes
//! as an index record (`Record::parse_index`, its page's pminlen from the input's last two bytes),
//! its child page too; `Record::primary_parts` (the column-at-a-time scans' check) agreeing with
//! `parse` on every primary record and refusing every other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::catalog::rowset::parse_sysrscols_row;
use mdfkit::record::{Record, RecordType};

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
    let parsed = Record::parse(data).ok();
    let primary = parsed.filter(|r| r.record_type() == RecordType::Primary);
    match (Record::primary_parts(data), primary) {
        (Some(parts), Some(record)) => {
            let sizes = (usize::from(parts.fixed_end), usize::from(parts.column_count), usize::from(parts.len));
            assert_eq!(sizes, (record.fixed_end(), record.column_count(), record.bytes().len()));
            for i in 0..record.var_column_count() + 2 {
                let by_parts = parts.var(data, i).map(|v| v.map(|s| (&data[s.start..s.end], s.complex)));
                assert_eq!(by_parts, record.var(i).ok().map(|v| v.map(|f| (f.bytes, f.complex))));
            }
        }
        (None, None) => {}
        // Only a record too long for any page is read by `parse` alone.
        (None, Some(_)) => assert!(data.len() > usize::from(u16::MAX)),
        (Some(_), None) => panic!("primary_parts read a record parse does not read as primary"),
    }
    let Some(record) = parsed else { return };
    read_all(&record);
    let _ = parse_sysrscols_row(&record);
});
