//! Off-row values: LOB trees and row-overflow chains behind an in-row pointer or a text pointer.
//! Input: mode byte (bit 0: text pointer), pointer length, the pointer, then sparse pages of
//! file 1 (see `src/lib.rs`) served as they are (no file header needed). The pointer bytes are
//! also taken apart as a LOB record (`LobNode`, the studio's record view of a LOB chain).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::lob::{read_complex, read_text_pointer, LobNode};
use mdfkit::source::PageReader;
use mdfkit_fuzz::{sparse_pages, MemPages};

fuzz_target!(|data: &[u8]| {
    let [mode, len, rest @ ..] = data else { return };
    let Some((pointer, pages)) = rest.split_at_checked(*len as usize) else { return };
    let reader = PageReader::new(Arc::new(MemPages::new(sparse_pages(pages))));
    if let Ok(node) = LobNode::parse(pointer) {
        assert!(node.data.end <= pointer.len() && node.data.start <= node.data.end);
        let _ = node.links.iter().map(|l| l.target()).count();
    }
    let mut out = Vec::new();
    let _ = if mode & 1 == 1 {
        read_text_pointer(&reader, pointer, &mut out).map(drop)
    } else {
        read_complex(&reader, pointer, &mut out)
    };
});
