//! Decompression of Microsoft's "LZ77+Huffman" format (Xpress Huffman,
//! `COMPRESSION_FORMAT_XPRESS_HUFF`), as used inside compressed SQL Server backups.
//!
//! # Sources
//!
//! Everything here comes from [MS-XCA] "Xpress Compression Algorithm" (v10.0, April 2024):
//! section 2.1 (compression: alphabet, match symbols, the 4-bit length table, the bit writer
//! and where the extra length bytes go), section 2.2.4 (decompression: decoding-table
//! construction and its validity checks, the 32-bit bit register, block handling) and
//! section 3.2 (the two worked examples used by the tests below). Two details the spec's
//! pseudocode leaves implicit were settled from the encoder pseudocode of section 2.1.4.3
//! and cross-checked against public implementations (Samba's `lzxpress_huffman.c`):
//! where the next block starts in the input, and the 32-bit length escape.
//!
//! # Layout
//!
//! The compressed stream is a sequence of blocks. Each block produces (at least) 65,536 bytes
//! of output, except the last one, which produces whatever is left of the expected length:
//!
//! ```text
//! offset 0            256                                                 block end
//! +-------------------+--------------------------------------------------------+
//! | code length table | bit stream: 16-bit little-endian words, each read      |
//! | 256 bytes =       | most significant bit first; the extra length bytes of  |
//! | 512 x 4 bits      | long matches are interleaved between the words         |
//! +-------------------+--------------------------------------------------------+
//!                                            next block's table starts here --^
//!
//! table byte i:  bits 0-3 = code length of symbol 2i, bits 4-7 = symbol 2i+1
//!                (0 = symbol unused, 1..=15 = length of its Huffman code)
//! ```
//!
//! The code is canonical: symbols are sorted by (code length, symbol value) and given
//! consecutive codes, so a table of 2^15 entries indexed by the next 15 bits of the stream
//! decodes every symbol in one lookup (2.2.4). The lengths must describe a complete prefix
//! code, neither over- nor under-subscribed, else the data is invalid (2.2.4).
//!
//! # Symbols
//!
//! | symbol     | meaning                                                            |
//! |------------|--------------------------------------------------------------------|
//! | 0..=255    | literal byte                                                       |
//! | 256..=511  | match; `s = symbol - 256`, `s & 15` = length - 3 (15 = escape),     |
//! |            | `s >> 4` = `n`, the index of the highest set bit of the distance    |
//!
//! A match symbol is followed, in this order, by
//!
//! 1. the length escape, only when `s & 15 == 15`: one byte `b` read from the *byte*
//!    position of the input (not the bit stream). `b < 255` gives length `b + 18`;
//!    `b == 255` is followed by a little-endian u16 `v` and the length is `v + 3`; if `v`
//!    is 0 a little-endian u32 follows and gives `v` instead (the encoder of 2.1.4.3 writes
//!    this form for lengths of 65,539 and more; the decoder pseudocode of 2.2.4 omits it).
//!    A final `v < 15` is invalid (2.2.4).
//! 2. `n` raw bits from the bit stream: distance = `(1 << n) + bits` (1..=65,535).
//!
//! The match copies `length` bytes starting `distance` bytes back; the ranges may overlap
//! (`length > distance` repeats the pattern).
//!
//! # Bit stream rules (2.2.4)
//!
//! * A 32-bit register is loaded with the first two words of the block (first word in the
//!   high half). After every symbol and after every group of distance bits, if fewer than
//!   16 bits are left in it, exactly one more word is read from the current input position.
//!   Because the register runs up to two words ahead of the bits being decoded, the extra
//!   length bytes sit *after* those words in the input; the encoder reserves the two words
//!   ahead for exactly this reason (2.1.4.3).
//! * A block ends when the output has grown by 65,536 bytes since the block began, checked
//!   before each symbol: a match may run past the boundary, and the next block's 64 KiB
//!   then count from where that match ended. Matches may reach back into earlier blocks.
//! * The bits still in the register when a block ends are discarded; the next block's
//!   table starts at the input position right after the last word read.
//! * The encoder appends symbol 256 as an end marker. Symbol 256 is only an end marker
//!   once all expected output exists, so this decoder simply stops when `expected_len`
//!   bytes have been produced and ignores what follows (symbol 256 met earlier is an
//!   ordinary match of length 3, distance 1).
//!
//! # Robustness
//!
//! Input is untrusted: every read is bounds-checked, the output never exceeds
//! `expected_len` (which may be at most [`MAX_EXPECTED_LEN`]), and every loop iteration
//! either produces at least one output byte or fails, so decoding always terminates.
//!
//! [MS-XCA]: https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-xca/

use crate::error::{Error, ErrorKind, Result};

/// The largest `expected_len` accepted: 1 GiB.
pub const MAX_EXPECTED_LEN: usize = 1 << 30;

/// Output bytes per block (2.1, 2.2.4).
const BLOCK_OUTPUT: usize = 1 << 16;
/// Size of the code length table at the start of each block.
const LENGTH_TABLE_BYTES: usize = 256;
/// Longest code length that fits in a nibble.
const MAX_CODE_LEN: u32 = 15;
/// Entries of the one-level decoding table: one per 15-bit prefix.
const DECODE_ENTRIES: usize = 1 << MAX_CODE_LEN;

/// Decompresses one LZ77+Huffman stream, appending exactly `expected_len` bytes to `output`.
///
/// On error `output` may hold part of the data; its bytes before the call are untouched.
/// Matches can only refer to bytes produced by this call.
pub fn decompress_huffman(input: &[u8], output: &mut Vec<u8>, expected_len: usize) -> Result<()> {
    Decompressor::new().decompress(input, output, expected_len)
}

/// A reusable decompressor: keeps its 64 KiB decoding table between calls, which helps when
/// a caller decompresses many small streams.
pub struct Decompressor {
    /// `symbol | code_len << 9`, indexed by the next 15 bits of the stream.
    table: Box<[u16; DECODE_ENTRIES]>,
}

impl Default for Decompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Decompressor {
    /// A decompressor with its decoding table allocated.
    pub fn new() -> Self {
        Decompressor { table: Box::new([0; DECODE_ENTRIES]) }
    }

    /// Same as [`decompress_huffman`], reusing this decompressor's table.
    pub fn decompress(&mut self, input: &[u8], output: &mut Vec<u8>, expected_len: usize) -> Result<()> {
        if expected_len > MAX_EXPECTED_LEN {
            return Err(Error::corrupt(format!(
                "LZ77+Huffman: expected decompressed size {expected_len} exceeds the limit of \
                 {MAX_EXPECTED_LEN} bytes"
            )));
        }
        if output.try_reserve(expected_len).is_err() {
            return Err(Error::new(
                ErrorKind::Io,
                format!("LZ77+Huffman: cannot allocate {expected_len} bytes for the output"),
            ));
        }
        let base = output.len();
        let end = base + expected_len;
        let mut block_at = 0usize;
        let mut block_no = 0usize;
        while output.len() < end {
            let lengths = input.get(block_at..).and_then(|rest| rest.get(..LENGTH_TABLE_BYTES)).ok_or_else(|| {
                Error::corrupt(format!(
                    "LZ77+Huffman block {block_no}: expected a 256-byte code length table \
                         at input offset {block_at}, but the input is {} bytes ({} of \
                         {expected_len} bytes decompressed)",
                    input.len(),
                    output.len() - base
                ))
            })?;
            self.build_table(lengths).map_err(|why| {
                Error::corrupt(format!(
                    "LZ77+Huffman block {block_no}: the code length table at input offset \
                     {block_at} {why}"
                ))
            })?;
            let block_end = end.min(output.len() + BLOCK_OUTPUT);
            let mut bits = BitReader::new(input, block_at + LENGTH_TABLE_BYTES);
            self.decode_block(&mut bits, output, base, block_end, end).map_err(|why| {
                Error::corrupt(format!(
                    "LZ77+Huffman block {block_no} (at input offset {block_at}), near input \
                         offset {}: {why} ({} of {expected_len} bytes decompressed)",
                    bits.pos,
                    output.len() - base
                ))
            })?;
            block_at = bits.pos;
            block_no += 1;
        }
        Ok(())
    }

    /// Builds the decoding table from the 512 packed code lengths (2.2.4): symbols in order of
    /// (length, value) each take `2^(15 - length)` consecutive entries, which must fill the
    /// table exactly.
    fn build_table(&mut self, packed: &[u8]) -> std::result::Result<(), String> {
        let mut count = [0usize; MAX_CODE_LEN as usize + 1];
        for &b in packed {
            count[usize::from(b & 15)] += 1;
            count[usize::from(b >> 4)] += 1;
        }
        // Where each length's run of entries starts.
        let mut next = [0usize; MAX_CODE_LEN as usize + 2];
        let mut filled = 0usize;
        for len in 1..=MAX_CODE_LEN as usize {
            next[len] = filled;
            filled += count[len] << (MAX_CODE_LEN as usize - len);
        }
        if count[0] == 2 * packed.len() {
            return Err("gives every symbol length 0 (no symbols)".into());
        }
        if filled > DECODE_ENTRIES {
            return Err(format!(
                "is over-subscribed: the code lengths need {filled} of {DECODE_ENTRIES} 15-bit \
                 prefixes"
            ));
        }
        if filled < DECODE_ENTRIES {
            return Err(format!(
                "is incomplete: the code lengths cover only {filled} of {DECODE_ENTRIES} 15-bit \
                 prefixes"
            ));
        }
        for (i, &b) in packed.iter().enumerate() {
            for (symbol, len) in [(2 * i, usize::from(b & 15)), (2 * i + 1, usize::from(b >> 4))] {
                if len == 0 {
                    continue;
                }
                let span = 1usize << (MAX_CODE_LEN as usize - len);
                let start = next[len];
                next[len] += span;
                // Symbols are visited in increasing value, so within one length the runs come
                // out in canonical order. The totals were checked above, so this is in bounds.
                if let Some(run) = self.table.get_mut(start..start + span) {
                    run.fill((symbol as u16) | ((len as u16) << 9));
                }
            }
        }
        Ok(())
    }

    /// Decodes symbols until `output` reaches `block_end`. A match may run past `block_end`
    /// but never past `end`; it may reach back to `base`, the start of this stream's output.
    fn decode_block(
        &self,
        bits: &mut BitReader<'_>,
        output: &mut Vec<u8>,
        base: usize,
        block_end: usize,
        end: usize,
    ) -> std::result::Result<(), String> {
        bits.load_word();
        bits.load_word();
        while output.len() < block_end {
            let entry = self.table[bits.peek15()];
            let len = u32::from(entry >> 9);
            let symbol = entry & 511;
            if len > bits.count {
                return Err(format!(
                    "the input ends inside a Huffman code (expected a {len}-bit code, {} bits \
                     left)",
                    bits.count
                ));
            }
            bits.consume(len);
            bits.refill();
            if symbol < 256 {
                output.push(symbol as u8);
                continue;
            }
            let symbol = symbol - 256;
            let distance_bits = u32::from(symbol >> 4);
            let mut length = u64::from(symbol & 15);
            if length == 15 {
                let b = bits.read_byte()?;
                if b < 255 {
                    length = u64::from(b) + 15;
                } else {
                    let mut v = u64::from(bits.read_u16()?);
                    if v == 0 {
                        v = u64::from(bits.read_u32()?);
                    }
                    if v < 15 {
                        return Err(format!("expected an extended match length of at least 15, found {v}"));
                    }
                    length = v;
                }
            }
            length += 3;
            let extra = bits.read_bits(distance_bits)?;
            bits.refill();
            let distance = (1usize << distance_bits) | extra as usize;
            let produced = output.len() - base;
            if distance > produced {
                return Err(format!(
                    "a match reaches {distance} bytes back, but only {produced} bytes have been \
                     decompressed"
                ));
            }
            let room = end - output.len();
            if length > room as u64 {
                return Err(format!("a match of {length} bytes overruns the expected size ({room} bytes left)"));
            }
            copy_match(output, distance, length as usize);
        }
        Ok(())
    }
}

/// Appends `length` bytes copied from `distance` bytes back, with the byte-at-a-time meaning
/// for overlapping ranges. `distance` must be between 1 and `output.len()`.
fn copy_match(output: &mut Vec<u8>, distance: usize, length: usize) {
    let start = output.len() - distance;
    let mut left = length;
    // The bytes from `start` on repeat with period `distance`; copying a prefix of that run
    // to an offset that is a multiple of `distance` keeps the period, so the run can double
    // each step instead of growing a byte at a time.
    while left > 0 {
        let n = left.min(output.len() - start);
        output.extend_from_within(start..start + n);
        left -= n;
    }
}

/// The 32-bit bit register of 2.2.4, reading 16-bit little-endian words most significant
/// bit first, plus the byte reads for extended match lengths.
struct BitReader<'a> {
    input: &'a [u8],
    /// Next unread input byte.
    pos: usize,
    /// Unconsumed bits, left-aligned; the bits below `count` are zero.
    buf: u32,
    /// Number of valid bits in `buf`.
    count: u32,
    /// A word was due but the input had run out: later byte reads would be misplaced.
    exhausted: bool,
}

impl<'a> BitReader<'a> {
    fn new(input: &'a [u8], pos: usize) -> Self {
        BitReader { input, pos, buf: 0, count: 0, exhausted: false }
    }

    /// Reads one word into the register; needs `count <= 16`. At the end of the input the
    /// register is left short, and decoding fails only if those missing bits are needed.
    fn load_word(&mut self) {
        if self.count > 16 {
            return;
        }
        match crate::bytes::read_u16(self.input, self.pos) {
            Some(w) => {
                self.buf |= u32::from(w) << (16 - self.count);
                self.count += 16;
                self.pos += 2;
            }
            None => self.exhausted = true,
        }
    }

    /// Keeps at least 16 bits in the register, reading at most one word (2.2.4).
    #[inline]
    fn refill(&mut self) {
        if self.count < 16 {
            self.load_word();
        }
    }

    #[inline]
    fn peek15(&self) -> usize {
        (self.buf >> (32 - MAX_CODE_LEN)) as usize
    }

    /// Drops `n <= count` bits (`n <= 15`).
    #[inline]
    fn consume(&mut self, n: u32) {
        self.buf <<= n;
        self.count -= n;
    }

    /// Reads `n <= 15` raw bits.
    fn read_bits(&mut self, n: u32) -> std::result::Result<u32, String> {
        if n == 0 {
            return Ok(0);
        }
        if n > self.count {
            return Err(format!("the input ends inside a match distance (expected {n} bits, {} left)", self.count));
        }
        let v = self.buf >> (32 - n);
        self.consume(n);
        Ok(v)
    }

    fn read_bytes<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        let bytes =
            self.input.get(self.pos..).and_then(|rest| rest.get(..N)).filter(|_| !self.exhausted).ok_or_else(|| {
                format!("the input ends where a match length needs {N} more byte(s) at offset {}", self.pos)
            })?;
        self.pos += N;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn read_byte(&mut self) -> std::result::Result<u8, String> {
        Ok(self.read_bytes::<1>()?[0])
    }

    fn read_u16(&mut self) -> std::result::Result<u16, String> {
        Ok(u16::from_le_bytes(self.read_bytes()?))
    }

    fn read_u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.read_bytes()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decompress(input: &[u8], expected_len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        decompress_huffman(input, &mut out, expected_len)?;
        assert_eq!(out.len(), expected_len);
        Ok(out)
    }

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace().map(|h| u8::from_str_radix(h, 16).unwrap()).collect()
    }

    /// A code length table with the given (byte offset, byte) pairs, all else zero.
    fn length_table(nonzero: &[(usize, u8)]) -> Vec<u8> {
        let mut t = vec![0u8; 256];
        for &(at, b) in nonzero {
            t[at] = b;
        }
        t
    }

    /// [MS-XCA] 3.2, first example: the alphabet as 26 literals plus the end marker.
    fn spec_alphabet() -> Vec<u8> {
        let mut v = vec![0u8; 48];
        v.extend(hex("50 55 55 55 55 55 55 55 55 55 55 45 44 04"));
        v.resize(128, 0);
        v.push(0x04);
        v.resize(256, 0);
        v.extend(hex("d8 52 3e d7 94 11 5b e9 19 5f f9 d6 7c df 8d 04 00 00 00 00"));
        v
    }

    /// [MS-XCA] 3.2, second example: "abc" and a match of length 297 at distance 3, whose
    /// length needs the `ff` + u16 escape.
    fn spec_abc() -> Vec<u8> {
        let mut v = length_table(&[(48, 0x30), (49, 0x23), (128, 0x02), (143, 0x20)]);
        v.extend(hex("a8 dc 00 00 ff 26 01"));
        v
    }

    #[test]
    fn spec_example_alphabet() {
        let input = spec_alphabet();
        assert_eq!(input.len(), 276);
        assert_eq!(decompress(&input, 26).unwrap(), b"abcdefghijklmnopqrstuvwxyz");
    }

    #[test]
    fn spec_example_long_match() {
        let out = decompress(&spec_abc(), 300).unwrap();
        assert_eq!(out, b"abc".repeat(100));
        // The same stream asked for more than it holds, or cut short, fails.
        assert!(decompress(&spec_abc(), 301).is_err());
        assert!(decompress(&spec_abc()[..262], 300).is_err());
    }

    #[test]
    fn appends_to_existing_output_without_reading_it() {
        let mut out = b"prefix".to_vec();
        decompress_huffman(&spec_alphabet(), &mut out, 26).unwrap();
        assert_eq!(out, b"prefixabcdefghijklmnopqrstuvwxyz");
        let mut out = b"xyz".to_vec();
        decompress_huffman(&spec_abc(), &mut out, 300).unwrap();
        assert_eq!(&out[3..], b"abc".repeat(100).as_slice());
    }

    /// A block built without the test encoder: every symbol has a 9-bit code (table bytes
    /// 0x99), so symbol `s` is written as `s` in 9 bits; the bits are padded to whole words
    /// plus one more zero word, the word the decoder has read ahead.
    fn nine_bit_block(symbols: &[u16]) -> Vec<u8> {
        let mut bits: Vec<bool> = symbols.iter().flat_map(|&s| (0..9).rev().map(move |i| (s >> i) & 1 == 1)).collect();
        bits.resize(bits.len().div_ceil(16) * 16 + 16, false);
        let mut block = vec![0x99u8; 256];
        for word in bits.chunks(16) {
            let w = word.iter().fold(0u16, |acc, &b| (acc << 1) | u16::from(b));
            block.extend(w.to_le_bytes());
        }
        block
    }

    #[test]
    fn second_block_starts_after_the_words_read_ahead() {
        // 65,536 literals fill the first block exactly (589,824 bits = 36,864 words, plus
        // the zero word read ahead); the second block's first symbol is 256, a match of
        // length 3 at distance 1 reaching back into the first block.
        let first: Vec<u16> = (0..65_536u32).map(|i| (i % 256) as u16).collect();
        let mut input = nine_bit_block(&first);
        assert_eq!(input.len(), 256 + 2 * 36_865);
        input.extend(nine_bit_block(&[256, u16::from(b'!'), 256]));
        let out = decompress(&input, 65_540).unwrap();
        assert!(out[..65_536].iter().enumerate().all(|(i, &b)| b == i as u8));
        assert_eq!(&out[65_536..], b"\xff\xff\xff!");
    }

    #[test]
    fn zero_expected_length_reads_nothing() {
        assert_eq!(decompress(&[], 0).unwrap(), b"");
        assert!(decompress(&[], 1).is_err());
    }

    #[test]
    fn every_prefix_of_the_spec_examples_fails_or_is_complete() {
        for input in [spec_alphabet(), spec_abc()] {
            let expected_len = if input.len() == 276 { 26 } else { 300 };
            for cut in 0..input.len() {
                let r = decompress(&input[..cut], expected_len);
                // 26 literals take 126 bits, i.e. 8 words after the table; the abc stream
                // needs its two words and the three length bytes after the two words read
                // ahead (256 + 4 + 3 bytes).
                let needed = if expected_len == 26 { 256 + 16 } else { 256 + 7 };
                assert_eq!(r.is_ok(), cut >= needed, "cut at {cut}");
            }
        }
    }

    #[test]
    fn rejects_bad_code_length_tables() {
        // All zero.
        let mut input = vec![0u8; 300];
        let e = decompress(&input, 10).unwrap_err();
        assert!(e.message().contains("no symbols"), "{e}");
        // Over-subscribed: three symbols of length 1.
        input[0] = 0x11;
        input[1] = 0x01;
        let e = decompress(&input, 10).unwrap_err();
        assert!(e.message().contains("over-subscribed"), "{e}");
        assert!(e.message().contains("input offset 0"), "{e}");
        // Incomplete: a single symbol of length 1.
        input[0] = 0x01;
        input[1] = 0;
        let e = decompress(&input, 10).unwrap_err();
        assert!(e.message().contains("incomplete"), "{e}");
        // Complete, but one length too short: the abc example with 'a' at length 1.
        let mut abc = spec_abc();
        abc[48] = 0x10;
        assert!(decompress(&abc, 300).is_err());
    }

    #[test]
    fn rejects_oversized_expected_length() {
        let e = decompress(&spec_alphabet(), MAX_EXPECTED_LEN + 1).unwrap_err();
        assert!(e.message().contains("exceeds"), "{e}");
    }

    // ---- A test-only encoder ----------------------------------------------------------

    #[derive(Clone, Copy, Debug)]
    enum Token {
        Literal(u8),
        Match { length: usize, distance: usize },
    }

    fn high_bit(d: usize) -> usize {
        (usize::BITS - 1 - d.leading_zeros()) as usize
    }

    fn symbol_of(t: Token) -> usize {
        match t {
            Token::Literal(b) => b as usize,
            Token::Match { length, distance } => 256 + (length - 3).min(15) + 16 * high_bit(distance),
        }
    }

    /// The reference meaning of a token list: byte-at-a-time copies.
    fn expand(tokens: &[Token]) -> Vec<u8> {
        let mut out = Vec::new();
        for &t in tokens {
            match t {
                Token::Literal(b) => out.push(b),
                Token::Match { length, distance } => {
                    for _ in 0..length {
                        out.push(out[out.len() - distance]);
                    }
                }
            }
        }
        out
    }

    /// Length-limited Huffman code lengths: plain Huffman, with the frequencies flattened
    /// until no code is longer than 15 bits. Always at least two symbols, so the code is
    /// complete.
    fn code_lengths(freq: &[u64; 512]) -> [u8; 512] {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut freq = *freq;
        if freq.iter().filter(|&&f| f > 0).count() < 2 {
            let spare = if freq[0] == 0 { 0 } else { 1 };
            freq[spare] = 1;
        }
        loop {
            let mut parent: Vec<usize> = vec![usize::MAX; 512];
            let mut heap = BinaryHeap::new();
            for (s, &f) in freq.iter().enumerate() {
                if f > 0 {
                    heap.push(Reverse((f, s)));
                }
            }
            let mut next = 512;
            while heap.len() > 1 {
                let Reverse((fa, a)) = heap.pop().unwrap();
                let Reverse((fb, b)) = heap.pop().unwrap();
                parent.push(usize::MAX);
                parent[a] = next;
                parent[b] = next;
                heap.push(Reverse((fa + fb, next)));
                next += 1;
            }
            let mut lengths = [0u8; 512];
            let mut ok = true;
            for s in 0..512 {
                if freq[s] == 0 {
                    continue;
                }
                let mut depth = 0;
                let mut n = s;
                while parent[n] != usize::MAX {
                    n = parent[n];
                    depth += 1;
                }
                ok &= depth <= 15;
                lengths[s] = depth.min(15) as u8;
            }
            if ok {
                return lengths;
            }
            for f in freq.iter_mut().filter(|f| **f > 0) {
                *f = (*f >> 1) | 1;
            }
        }
    }

    /// Canonical codes from lengths: sorted by (length, symbol), consecutive values.
    fn canonical_codes(lengths: &[u8; 512]) -> [u16; 512] {
        let mut order: Vec<usize> = (0..512).filter(|&s| lengths[s] > 0).collect();
        order.sort_by_key(|&s| (lengths[s], s));
        let mut codes = [0u16; 512];
        let mut code = 0u32;
        let mut prev_len = 0u8;
        for s in order {
            code <<= lengths[s] - prev_len;
            prev_len = lengths[s];
            codes[s] = code as u16;
            code += 1;
        }
        codes
    }

    /// The bit writer of [MS-XCA] 2.1.4.3, in its own words: the word being filled and the
    /// one after it have reserved places in the output; extra bytes go after both.
    struct BitWriter {
        out: Vec<u8>,
        slot: usize,
        next_slot: usize,
        word: u16,
        used: u32,
    }

    impl BitWriter {
        fn start_block(out: Vec<u8>, lengths: &[u8; 512]) -> BitWriter {
            let mut out = out;
            for pair in lengths.chunks(2) {
                out.push(pair[0] | (pair[1] << 4));
            }
            let slot = out.len();
            out.extend([0; 4]);
            BitWriter { out, slot, next_slot: slot + 2, word: 0, used: 0 }
        }

        fn bits(&mut self, n: u32, value: u32) {
            for i in (0..n).rev() {
                if self.used == 16 {
                    self.out[self.slot..self.slot + 2].copy_from_slice(&self.word.to_le_bytes());
                    self.slot = self.next_slot;
                    self.next_slot = self.out.len();
                    self.out.extend([0; 2]);
                    self.word = 0;
                    self.used = 0;
                }
                self.word = (self.word << 1) | ((value >> i) & 1) as u16;
                self.used += 1;
            }
        }

        fn bytes(&mut self, b: &[u8]) {
            self.out.extend_from_slice(b);
        }

        /// Writes the last partial word; the reserved word after it stays zero.
        fn finish(mut self) -> Vec<u8> {
            let w = self.word << (16 - self.used);
            self.out[self.slot..self.slot + 2].copy_from_slice(&w.to_le_bytes());
            self.out
        }
    }

    /// Encodes tokens into blocks of (at least) 64 KiB of output each, with the end marker
    /// after the last token. Returns the stream and its decompressed size.
    fn encode(tokens: &[Token]) -> (Vec<u8>, usize) {
        encode_with(tokens, None)
    }

    /// [`encode`], optionally with fixed code lengths for every block.
    fn encode_with(tokens: &[Token], fixed: Option<&[u8; 512]>) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut total = 0usize;
        let mut rest = tokens;
        while !rest.is_empty() {
            let mut n = 0;
            let mut produced = 0;
            while n < rest.len() && produced < BLOCK_OUTPUT {
                produced += match rest[n] {
                    Token::Literal(_) => 1,
                    Token::Match { length, .. } => length,
                };
                n += 1;
            }
            let (block, tail) = rest.split_at(n);
            rest = tail;
            total += produced;
            let mut freq = [0u64; 512];
            for &t in block {
                freq[symbol_of(t)] += 1;
            }
            freq[256] += 1;
            let lengths = fixed.copied().unwrap_or_else(|| code_lengths(&freq));
            let codes = canonical_codes(&lengths);
            let mut w = BitWriter::start_block(out, &lengths);
            for &t in block {
                let s = symbol_of(t);
                w.bits(u32::from(lengths[s]), u32::from(codes[s]));
                if let Token::Match { length, distance } = t {
                    let l = length - 3;
                    if l >= 15 {
                        if l - 15 < 255 {
                            w.bytes(&[(l - 15) as u8]);
                        } else if l < 65536 {
                            w.bytes(&[255]);
                            w.bytes(&(l as u16).to_le_bytes());
                        } else {
                            w.bytes(&[255, 0, 0]);
                            w.bytes(&(l as u32).to_le_bytes());
                        }
                    }
                    let hb = high_bit(distance);
                    w.bits(hb as u32, (distance - (1 << hb)) as u32);
                }
            }
            if rest.is_empty() {
                w.bits(u32::from(lengths[256]), u32::from(codes[256]));
            }
            out = w.finish();
        }
        (out, total)
    }

    /// Greedy LZ77 with a one-entry hash table, matches of any length.
    fn lz77(data: &[u8]) -> Vec<Token> {
        let mut head = vec![usize::MAX; 1 << 16];
        let mut tokens = Vec::new();
        let mut i = 0;
        let hash = |p: usize| {
            let v = u32::from(data[p]) | u32::from(data[p + 1]) << 8 | u32::from(data[p + 2]) << 16;
            (v.wrapping_mul(0x9E37_79B1) >> 16) as usize
        };
        while i < data.len() {
            if i + 3 <= data.len() {
                let h = hash(i);
                let cand = head[h];
                head[h] = i;
                if cand != usize::MAX && i - cand <= 65535 {
                    let mut len = 0;
                    while i + len < data.len() && data[cand + len] == data[i + len] {
                        len += 1;
                    }
                    if len >= 3 {
                        tokens.push(Token::Match { length: len, distance: i - cand });
                        for p in i + 1..(i + len).min(data.len().saturating_sub(2)) {
                            head[hash(p)] = p;
                        }
                        i += len;
                        continue;
                    }
                }
            }
            tokens.push(Token::Literal(data[i]));
            i += 1;
        }
        tokens
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Random tokens: literals from a skewed alphabet, matches of every length class and
    /// every distance class, including the u16 and u32 length escapes.
    fn random_tokens(rng: &mut Rng, min_output: usize) -> Vec<Token> {
        let mut tokens = Vec::new();
        let mut produced = 0usize;
        while produced < min_output {
            if produced == 0 || rng.below(3) == 0 {
                tokens.push(Token::Literal((rng.below(16) * rng.below(16)) as u8));
                produced += 1;
                continue;
            }
            let length = match rng.below(20) {
                0 => 273 + rng.below(3000),                            // u16 escape
                1 => 18 + rng.below(255),                              // one-byte escape
                2 if rng.below(10) == 0 => 65_539 + rng.below(70_000), // u32 escape
                _ => 3 + rng.below(15),                                // fits in the symbol
            };
            let max_distance = produced.min(65535);
            let distance = 1 + (rng.below(max_distance) >> rng.below(16));
            tokens.push(Token::Match { length, distance });
            produced += length;
        }
        tokens
    }

    #[test]
    fn encoder_reproduces_the_spec_examples() {
        // Given the spec's code lengths, the encoder reproduces both worked examples bit for
        // bit, which checks the encoder before it is used to check the decoder.
        let unpack = |table: &[u8]| {
            let mut lengths = [0u8; 512];
            for (i, b) in table[..256].iter().enumerate() {
                lengths[2 * i] = b & 15;
                lengths[2 * i + 1] = b >> 4;
            }
            lengths
        };
        let alphabet: Vec<Token> = (b'a'..=b'z').map(Token::Literal).collect();
        let fixed = unpack(&spec_alphabet());
        assert_eq!(encode_with(&alphabet, Some(&fixed)).0, spec_alphabet());
        let abc = [
            Token::Literal(b'a'),
            Token::Literal(b'b'),
            Token::Literal(b'c'),
            Token::Match { length: 297, distance: 3 },
        ];
        assert_eq!(encode_with(&abc, Some(&unpack(&spec_abc()))).0, spec_abc());
        // Our own Huffman construction happens to pick the same lengths for this one.
        assert_eq!(encode(&abc).0, spec_abc());
    }

    #[test]
    fn round_trips_random_token_streams() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for round in 0..40 {
            let size = match round % 4 {
                0 => 1 + rng.below(100),
                1 => 60_000 + rng.below(10_000),
                _ => 100_000 + rng.below(300_000),
            };
            let tokens = random_tokens(&mut rng, size);
            let expected = expand(&tokens);
            let (stream, total) = encode(&tokens);
            assert_eq!(total, expected.len());
            let out = decompress(&stream, total).unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert!(out == expected, "round {round}: output differs");
        }
    }

    #[test]
    fn matches_crossing_block_boundaries_and_every_length_escape() {
        let mut tokens: Vec<Token> = (0..=255u8).map(Token::Literal).collect();
        // Literals up to just before the 64 KiB boundary, then a match across it.
        for i in 0..65_000usize {
            tokens.push(Token::Literal((i % 251) as u8));
        }
        tokens.push(Token::Match { length: 1000, distance: 300 });
        // The next block counts 64 KiB from where that match ended; a long u32-escaped
        // match now spans more than a whole block, then the shortest and longest lengths
        // of each escape form.
        tokens.push(Token::Match { length: 200_000, distance: 65_535 });
        for length in [17, 18, 272, 273, 65_538, 65_539] {
            tokens.push(Token::Literal(7));
            tokens.push(Token::Match { length, distance: 1 });
        }
        let expected = expand(&tokens);
        let (stream, total) = encode(&tokens);
        assert_eq!(decompress(&stream, total).unwrap(), expected);
    }

    #[test]
    fn symbol_256_before_the_end_is_a_match() {
        // Symbol 256 = match of length 3 at distance 1.
        let tokens = [Token::Literal(b'A'), Token::Match { length: 3, distance: 1 }, Token::Literal(b'B')];
        let (stream, total) = encode(&tokens);
        assert_eq!(decompress(&stream, total).unwrap(), b"AAAAB");
    }

    #[test]
    fn decodes_a_megabyte_of_compressible_data() {
        // Text-like data: words from a small vocabulary, so there are plenty of matches.
        let words = [
            "select", "from", "where", "order", "by", "group", "table", "index", "page", "row", "slot", "backup",
            "log", "data", "file", "sys", "object", "column", "null", "key",
        ];
        let mut rng = Rng(42);
        let mut data = Vec::new();
        while data.len() < 1 << 20 {
            data.extend_from_slice(words[rng.below(words.len())].as_bytes());
            data.push(if rng.below(8) == 0 { b'\n' } else { b' ' });
            if rng.below(50) == 0 {
                data.extend((0..rng.below(40)).map(|_| rng.next() as u8));
            }
        }
        let tokens = lz77(&data);
        assert!(tokens.len() < data.len() / 2, "the test data should compress");
        let (stream, total) = encode(&tokens);
        assert_eq!(total, data.len());
        assert!(stream.len() < data.len() / 2);
        let mut d = Decompressor::new();
        let mut out = Vec::new();
        d.decompress(&stream, &mut out, data.len()).unwrap();
        assert!(out == data);
        // The decompressor is reusable.
        out.clear();
        d.decompress(&spec_abc(), &mut out, 300).unwrap();
        assert_eq!(out, b"abc".repeat(100));
    }

    #[test]
    fn rejects_matches_before_the_start_of_the_output() {
        for (tokens, reach) in [
            (vec![Token::Literal(b'a'), Token::Match { length: 5, distance: 2 }], "2 bytes back, but only 1"),
            (vec![Token::Match { length: 3, distance: 1 }], "1 bytes back, but only 0"),
        ] {
            let (stream, total) = encode(&tokens);
            let e = decompress(&stream, total).unwrap_err();
            assert!(e.message().contains(reach), "{e}");
        }
    }

    #[test]
    fn rejects_matches_past_the_expected_length() {
        let e = decompress(&spec_abc(), 299).unwrap_err();
        assert!(e.message().contains("overruns"), "{e}");
    }

    #[test]
    fn rejects_short_extended_lengths() {
        // The abc example's u16 length 0x0126 replaced by 14.
        let mut input = spec_abc();
        let n = input.len();
        input[n - 2..].copy_from_slice(&14u16.to_le_bytes());
        let e = decompress(&input, 300).unwrap_err();
        assert!(e.message().contains("at least 15"), "{e}");
    }

    #[test]
    fn truncated_streams_fail_without_panicking() {
        let mut rng = Rng(7);
        let tokens = random_tokens(&mut rng, 150_000);
        let (stream, total) = encode(&tokens);
        let expected = expand(&tokens);
        // Cut anywhere before the last few words: must fail. (The last words may hold only
        // the end marker and padding, which this decoder does not need.)
        let mut cut = 0;
        while cut < stream.len() - 8 {
            assert!(decompress(&stream[..cut], total).is_err(), "cut at {cut}");
            cut += 1 + rng.below(997);
        }
        for cut in stream.len() - 8..=stream.len() {
            if let Ok(out) = decompress(&stream[..cut], total) {
                assert!(out == expected);
            }
        }
    }

    #[test]
    fn corrupted_streams_never_panic() {
        let mut rng = Rng(99);
        let tokens = random_tokens(&mut rng, 140_000);
        let (stream, total) = encode(&tokens);
        for _ in 0..300 {
            let mut bad = stream.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(bad.len());
                bad[i] ^= 1 << rng.below(8);
            }
            let _ = decompress(&bad, total);
            let _ = decompress(&bad, rng.below(total * 2));
        }
        // Random bytes, some with a valid table in front.
        for round in 0..300 {
            let mut junk: Vec<u8> = (0..rng.below(2000)).map(|_| rng.next() as u8).collect();
            if round % 2 == 0 && junk.len() > 256 {
                junk[..256].copy_from_slice(&[0x99; 256]); // 512 symbols of 9 bits
            }
            let _ = decompress(&junk, rng.below(100_000));
        }
    }
}
