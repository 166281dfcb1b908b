//! Redo and undo (`mdfkit::log::redo`): arbitrary log records applied onto an arbitrary page,
//! those of transactions left open rolled back. Input: the
//! page (8192 bytes, every page id reads it), then records, each a u16 length and its bytes.
//! Must never panic; a page read back is 8192 bytes or an error naming why.
#![no_main]

use std::path::PathBuf;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::backup::Lsn;
use mdfkit::log::redo::{Commits, RedoPages, StopPoint};
use mdfkit::log::LogRecord;
use mdfkit::source::{PageSource, SourceFile};
use mdfkit::PageId;

const PAGE_SIZE: usize = 8192;

struct AnyPage(Vec<u8>, Vec<SourceFile>);

impl PageSource for AnyPage {
    fn read_raw(&self, _id: PageId, buf: &mut [u8]) -> mdfkit::Result<()> {
        buf[..PAGE_SIZE].copy_from_slice(&self.0);
        Ok(())
    }
    fn files(&self) -> &[SourceFile] {
        &self.1
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((page, mut rest)) = data.split_at_checked(PAGE_SIZE) else { return };
    let mut records = Vec::new();
    while let Some((len, tail)) = rest.split_at_checked(2) {
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let Some((bytes, tail)) = tail.split_at_checked(len.min(tail.len())) else { break };
        records.push(bytes);
        rest = tail;
    }
    // LSNs rise record by record, as in a log stream.
    let parsed: Vec<LogRecord<'_>> = records
        .iter()
        .enumerate()
        .filter_map(|(i, b)| LogRecord::parse(Lsn { vlf: 1, block: 1 + i as u32, slot: 1 }, b).ok())
        .collect();
    let files = vec![SourceFile { file_id: 1, location: PathBuf::from("fuzz.mdf"), page_count: u32::MAX }];
    for stop in [StopPoint::End, StopPoint::Time { days: 42_885, ticks: 14_449_200 }] {
        let mut commits = Commits::default();
        parsed.iter().for_each(|r| commits.see(&stop, r));
        let mut redo = RedoPages::new(Arc::new(AnyPage(page.to_vec(), files.clone())));
        parsed.iter().for_each(|r| redo.apply(&commits, r));
        redo.roll_back();
        let mut buf = vec![0u8; PAGE_SIZE];
        for r in &parsed {
            if let Some(id) = r.page_id() {
                let _ = redo.read_raw(id, &mut buf);
            }
        }
        let _ = redo.finish();
    }
});
