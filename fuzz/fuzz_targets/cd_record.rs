//! A CD (compressed) record: `CdRecord::parse`, every column's value, and each value decoded as
//! the compressed storage form of several types (integers, datetime, vardecimal, SCSU text).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::compressed::cd_record::{CdRecord, CdValue};
use mdfkit::compressed::values::decode_compressed;
use mdfkit::types::TypeInfo;

const TYPES: [&str; 9] =
    ["int", "bigint", "datetime", "decimal(38,10)", "nvarchar(40)", "nchar(10)", "float", "datetime2(7)", "bit"];

fuzz_target!(|data: &[u8]| {
    let Ok(record) = CdRecord::parse(data) else { return };
    assert!(record.bytes().len() <= data.len());
    let _ = (record.record_type(), record.back_pointer());
    let types: Vec<TypeInfo> = TYPES.iter().filter_map(|t| TypeInfo::parse(t)).collect();
    for i in 0..record.column_count() + 2 {
        let Some(value) = record.value(i) else { continue };
        if let CdValue::Bytes(b) | CdValue::Complex(b) = value {
            assert!(b.len() <= record.bytes().len());
        }
        for ty in &types {
            let _ = decode_compressed(ty, value, &|b| Ok(String::from_utf8_lossy(b).into_owned()));
        }
    }
});
