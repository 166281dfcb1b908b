//! [MS-XCA] LZ77+Huffman decompression. Input: expected output length (bytes 0..3, little
//! endian; byte 3 halves its range 0 to 7 times: at most 192 KiB down to 1.5 KiB), then the
//! compressed stream.
//!
//! The largest range covers what a compressed backup asks for (a piece decompresses to at most
//! 255 x 512 bytes) and three 64 KiB blocks, so block boundaries and matches reaching back across
//! them are tried. The work of one input grows with the output asked for (a short input may
//! legitimately expand to all of it), so most inputs ask for a few KB: many more inputs a second,
//! and no path the large sizes reach is lost.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::xpress::Decompressor;

fuzz_target!(|data: &[u8]| {
    let Some((len, input)) = data.split_first_chunk::<4>() else { return };
    let limit = (3usize << 16) >> (len[3] & 7);
    let expected = u32::from_le_bytes([len[0], len[1], len[2], 0]) as usize % (limit + 1);
    // A fresh decompressor (what `decompress_huffman` is), then the same one again: its table
    // from the first call must not change the second answer.
    let mut d = Decompressor::new();
    let mut first = vec![7u8; 3];
    let first_ok = d.decompress(input, &mut first, expected).is_ok();
    if first_ok {
        assert_eq!(first.len(), 3 + expected);
    }
    assert_eq!(&first[..3], &[7, 7, 7], "bytes before the call were touched");
    let mut second = vec![7u8; 3];
    let second_ok = d.decompress(input, &mut second, expected).is_ok();
    assert_eq!(first_ok, second_ok);
    if first_ok {
        assert_eq!(first, second);
    }
});
