//! Transaction log files (`mdfkit::log::ldf`): the input is what follows the file header page
//! (page 0 of file 2, built here): VLF headers, and the log blocks in each VLF. Must never panic;
//! the VLFs read tile the file from the end of its header page, and the blocks come in strictly
//! increasing LSN order (so the walk cannot loop), each record inside its block.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mdfkit::log::ldf::{LogFile, FILE_HEADER_SIZE};
use mdfkit::log::LogRecord;
use mdfkit::page::PAGE_SIZE;

fuzz_target!(|data: &[u8]| {
    let mut file = vec![0u8; PAGE_SIZE];
    file[1] = 15; // a file header page, at page 0 of file 2
    file[36] = 2;
    file.extend_from_slice(data);
    let len = file.len() as u64;
    let Ok(log) = LogFile::from_source(Box::new(file), Path::new("fuzz.ldf")) else { return };
    let mut end = FILE_HEADER_SIZE;
    for vlf in log.vlfs() {
        assert_eq!(vlf.offset, end);
        end += vlf.size;
    }
    assert_eq!(end, len);
    let mut last = None;
    for block in log.blocks() {
        let Ok(block) = block else { return };
        assert!(last < Some(block.header.lsn), "blocks out of LSN order");
        last = Some(block.header.lsn);
        for slot in 1..=block.record_count() {
            let (lsn, bytes) = block.record_bytes(slot).expect("every counted record has bytes");
            if let Ok(r) = LogRecord::parse(lsn, bytes) {
                let _ = (r.operation().name(), r.page_id(), r.transaction_name());
            }
        }
    }
});
