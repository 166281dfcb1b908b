//! [MS-XCA] LZ77+Huffman decompression. Input: expected output length (u32, little endian,
//! taken modulo 192 KiB + 1), then the compressed stream.
//!
//! The length range covers what a compressed backup asks for (a piece decompresses to at most
//! 255 x 512 bytes) and three 64 KiB blocks, so both block boundaries and matches reaching back
//! across them are tried. The work of one input grows with the output asked for (a short input
//! may legitimately expand to the whole of it): a 1 MiB range cost five times more per input for
//! no path a smaller one misses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::xpress::{decompress_huffman, Decompressor};

fuzz_target!(|data: &[u8]| {
    let Some((len, input)) = data.split_first_chunk::<4>() else { return };
    let expected = u32::from_le_bytes(*len) as usize % ((3 << 16) + 1);
    let mut out = vec![7u8; 3];
    if decompress_huffman(input, &mut out, expected).is_ok() {
        assert_eq!(out.len(), 3 + expected);
    }
    assert_eq!(&out[..3], &[7, 7, 7], "bytes before the call were touched");
    // A reused decompressor must give the same answer as a fresh one.
    let mut d = Decompressor::new();
    let mut again = vec![7u8; 3];
    let first = d.decompress(input, &mut again, expected).is_ok();
    let mut third = vec![7u8; 3];
    let second = d.decompress(input, &mut third, expected).is_ok();
    assert_eq!(first, second);
    if first {
        assert_eq!(again, third);
    }
});
