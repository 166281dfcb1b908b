//! Log streams (`mdfkit::log`): blocks (header, sector bytes put back, slot array) and every
//! record's fields and row images, as `mdfkit log` reads them; and the whole input as one record,
//! as a block's slot hands it over. Must never panic; every record lies inside its block and
//! every row image inside its record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::backup::Lsn;
use mdfkit::log::block::stream_blocks;
use mdfkit::log::LogRecord;

/// Reads every field of the record in `bytes`, as `mdfkit log` prints it.
fn read_record(lsn: Lsn, bytes: &[u8]) {
    let Ok(r) = LogRecord::parse(lsn, bytes) else { return };
    let _ = (r.previous_lsn(), r.flags(), r.transaction_id().to_string(), r.operation().name(), r.context().name());
    let _ = (r.page_id(), r.slot(), r.partition_id(), r.offset_in_row(), r.time().map(|t| t.to_string()));
    let _ = r.count_delta().map(|d| d.to_string());
    let _ = (r.transaction_name(), r.user_sid());
    if let Ok(images) = r.row_images() {
        let total: usize = images.map(<[u8]>::len).sum();
        assert!(total <= bytes.len());
    }
}

fuzz_target!(|data: &[u8]| {
    read_record(Lsn::default(), data);
    for block in stream_blocks(data) {
        let Ok(block) = block else { return };
        assert!(usize::from(block.header.size) <= data.len());
        for slot in 1..=block.record_count() {
            let (lsn, bytes) = block.record_bytes(slot).expect("every counted record has bytes");
            assert!(bytes.len() <= usize::from(block.header.size));
            read_record(lsn, bytes);
        }
    }
});
