//! Bounds-checked little-endian reads: every accessor returns `None` past the end of the slice,
//! so a length taken from the file can never cause a panic. And UTF-16LE text (nchar/nvarchar)
//! into UTF-8, as strings or as bytes a caller checks once for many values.

macro_rules! reader {
    ($name:ident, $ty:ty) => {
        #[inline]
        /// Reads a little-endian value at byte `at` of `b`; `None` when it runs past the end.
        pub fn $name(b: &[u8], at: usize) -> Option<$ty> {
            const N: usize = std::mem::size_of::<$ty>();
            let bytes = b.get(at..at.checked_add(N)?)?;
            Some(<$ty>::from_le_bytes(bytes.try_into().ok()?))
        }
    };
}

reader!(read_u16, u16);
reader!(read_u32, u32);
reader!(read_u64, u64);
reader!(read_i16, i16);
reader!(read_i32, i32);
reader!(read_i64, i64);

/// Decodes UTF-16LE, replacing unpaired surrogates with U+FFFD.
pub fn utf16le(b: &[u8]) -> String {
    let mut text = String::new();
    push_utf16le(b, &mut text);
    text
}

/// Appends the UTF-16LE text in `bytes` to `out`, as [`push_utf16le_utf8`] spells it. The
/// encoding goes through a buffer on the stack a chunk at a time, checked as UTF-8 once a chunk
/// (safe code has no other way into a string): short values, most of a CSV or JSON Lines
/// export's text, fill a single chunk.
pub fn push_utf16le(bytes: &[u8], out: &mut String) {
    const CHUNK_UNITS: usize = 64;
    let mut chunk = [0u8; 3 * CHUNK_UNITS];
    let mut rest = bytes;
    while rest.len() >= 2 {
        let mut take = rest.len().min(2 * CHUNK_UNITS) & !1;
        // A surrogate pair is never split between chunks: a high surrogate that ends a chunk
        // with more units after it waits for the next one.
        if rest.len() - take >= 2 && take > 2 && (0xd8..=0xdb).contains(&rest[take - 1]) {
            take -= 2;
        }
        let written = utf16le_to_utf8(&rest[..take], &mut chunk);
        push_utf8_chunk(out, &mut chunk, written);
        rest = &rest[take..];
    }
}

/// Appends the UTF-8 encoding of the UTF-16LE text in `bytes` to `out`: unpaired surrogates
/// read U+FFFD (as `char::decode_utf16` reads them), an odd last byte is ignored. The bytes are
/// UTF-8 by construction; a caller checks them once for many values (a scan's page of
/// nvarchar values) to take them as text.
pub fn push_utf16le_utf8(bytes: &[u8], out: &mut Utf8Writer) {
    let written = utf16le_to_utf8(bytes, out.spare(bytes.len() / 2 * 3));
    out.commit(written);
}

/// Appends the first `len` bytes of `chunk`, UTF-8 written by this crate's encoders, to `out`,
/// checked as safe code must check them (they never fail it). `simdutf8` checks 64 bytes and
/// more with SIMD but hands a shorter slice to the standard library's byte-by-byte check, which
/// runs slower than the encoding on non-ASCII text: a shorter value is checked padded with NULs
/// (ASCII) to 64 bytes, and only its own bytes appended.
pub fn push_utf8_chunk(out: &mut String, chunk: &mut [u8], len: usize) {
    const SIMD_BLOCK: usize = 64;
    let checked = len.max(SIMD_BLOCK).min(chunk.len());
    if let Some(padding) = chunk.get_mut(len..checked) {
        padding.fill(0);
    }
    let text = chunk.get(..checked).and_then(|c| simdutf8::basic::from_utf8(c).ok()).and_then(|t| t.get(..len));
    if let Some(text) = text {
        out.push_str(text);
    }
}

/// A buffer the encoders write UTF-8 into, reused from run to run: it keeps the bytes it has
/// grown to, so that room is zeroed once, not for every value written.
#[derive(Debug, Default)]
pub struct Utf8Writer {
    buffer: Vec<u8>,
    len: usize,
}

impl Utf8Writer {
    /// Forgets what was written (the room stays).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The bytes written since [`Self::clear`].
    #[inline]
    pub fn written(&self) -> &[u8] {
        self.buffer.get(..self.len).unwrap_or_default()
    }

    /// Room for at least `n` more bytes, after those written.
    #[inline]
    pub fn spare(&mut self, n: usize) -> &mut [u8] {
        let needed = self.len.saturating_add(n);
        if self.buffer.len() < needed {
            self.buffer.resize(needed, 0);
        }
        &mut self.buffer[self.len..]
    }

    /// Takes the first `n` bytes of [`Self::spare`] as written.
    #[inline]
    pub fn commit(&mut self, n: usize) {
        self.len = self.len.saturating_add(n).min(self.buffer.len());
    }

    /// Appends bytes (ASCII text, copied as it is).
    #[inline]
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.spare(bytes.len())[..bytes.len()].copy_from_slice(bytes);
        self.commit(bytes.len());
    }

    /// A writer with room for `n` bytes already zeroed.
    #[inline]
    pub fn with_room(n: usize) -> Self {
        Utf8Writer { buffer: vec![0; n], len: 0 }
    }

    /// The bytes written.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The bytes the writer holds, written or not.
    #[inline]
    pub fn room(&self) -> usize {
        self.buffer.len()
    }

    /// Forgets what was written after the first `len` bytes.
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Appends one byte (an ASCII character).
    #[inline]
    pub fn push_byte(&mut self, byte: u8) {
        self.spare(1)[0] = byte;
        self.commit(1);
    }
}

impl std::fmt::Write for Utf8Writer {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_bytes(s.as_bytes());
        Ok(())
    }
}

/// Writes the UTF-8 of the UTF-16LE units in `src` (an odd last byte ignored) to the front of
/// `dst`, which must hold three bytes a unit (a unit is at most three UTF-8 bytes; a surrogate
/// pair, two units, four); returns the bytes written. Four units are read at a time: ASCII
/// (most text) narrowed with one 64-bit test of their high bits; four units all below U+0800
/// (ASCII mixed with accented Latin, Greek, Cyrillic, Hebrew: one or two bytes each) spelled
/// together in one 64-bit word, then stored two bytes a unit a unit's length apart; four
/// characters of three bytes each (CJK text) spelled at fixed places; any other four characters
/// of the Basic Multilingual Plane encoded one by one without a branch on their lengths; a
/// surrogate among them sends the four units one by one through the pairing rules.
fn utf16le_to_utf8(src: &[u8], dst: &mut [u8]) -> usize {
    const NOT_ASCII: u64 = 0xff80_ff80_ff80_ff80;
    const NOT_TWO_BYTES: u64 = 0xf800_f800_f800_f800;
    const LANE_LOW: u64 = 0x0001_0001_0001_0001;
    const LANE_HIGH: u64 = 0x8000_8000_8000_8000;
    // The classic zero-lane test, for 16-bit lanes.
    let has_zero_lane = |x: u64| x.wrapping_sub(LANE_LOW) & !x & LANE_HIGH != 0;
    let units = src.len() / 2;
    let unit = |i: usize| u16::from_le_bytes([src[2 * i], src[2 * i + 1]]);
    let (mut i, mut w) = (0, 0);
    while i < units {
        if let Some(four) = src.get(2 * i..2 * i + 8) {
            let v = u64::from_le_bytes(four.try_into().unwrap_or([0xff; 8]));
            if v & NOT_ASCII == 0 {
                // The four low bytes gathered into one 32-bit word: one store instead of four.
                let pairs = (v | v >> 8) & 0x0000_ffff_0000_ffff;
                dst[w..w + 4].copy_from_slice(&((pairs | pairs >> 16) as u32).to_le_bytes());
                (i, w) = (i + 4, w + 4);
                continue;
            }
            // Each lane's top five bits: zero below U+0800, 11011 in a surrogate.
            let top = v & NOT_TWO_BYTES;
            if top == 0 {
                // Lanes below U+0800, so no carry leaves a lane: bit 15 of a lane is set here
                // where the lane is U+0080 or above (two bytes).
                let long = v.wrapping_add(0x7f80_7f80_7f80_7f80) & LANE_HIGH;
                // Each lane's two-byte form, 110xxxxx then 10xxxxxx, and the ASCII lanes kept.
                let two = (v >> 6 & 0x001f_001f_001f_001f) | (v & 0x003f_003f_003f_003f) << 8 | 0x80c0_80c0_80c0_80c0;
                let two_mask = (long >> 15) * 0xffff;
                let spelled = (two & two_mask) | (v & !two_mask);
                let out = &mut dst[w..w + 8];
                let mut at = 0;
                for lane in 0..4 {
                    out[at..at + 2].copy_from_slice(&((spelled >> (16 * lane)) as u16).to_le_bytes());
                    at += 1 + (long >> (16 * lane + 15) & 1) as usize;
                }
                (i, w) = (i + 4, w + at);
                continue;
            }
            let no_surrogate = !has_zero_lane(top ^ 0xd800_d800_d800_d800);
            // Four lanes of U+0800 and above (CJK text): three bytes each, at fixed places.
            if no_surrogate && !has_zero_lane(top) {
                let three = |lane: u32| u64::from(three_bytes(u32::from((v >> (16 * lane)) as u16)));
                let out = &mut dst[w..w + 12];
                out[..6].copy_from_slice(&(three(0) | three(1) << 24).to_le_bytes()[..6]);
                out[6..].copy_from_slice(&(three(2) | three(3) << 24).to_le_bytes()[..6]);
                (i, w) = (i + 4, w + 12);
                continue;
            }
            if no_surrogate {
                for lane in 0..4 {
                    w += encode_bmp((v >> (16 * lane)) as u16, &mut dst[w..]);
                }
                i += 4;
                continue;
            }
        }
        let u = unit(i);
        i += 1;
        match u {
            // The last units of most values (fewer than four), and ASCII beside a surrogate.
            0..=0x7f => {
                dst[w] = u as u8;
                w += 1;
            }
            0xd800..=0xdbff if i < units && (0xdc00..=0xdfff).contains(&unit(i)) => {
                let c = 0x10000 + ((u32::from(u) - 0xd800) << 10) + (u32::from(unit(i)) - 0xdc00);
                i += 1;
                dst[w..w + 4].copy_from_slice(&[
                    0xf0 | (c >> 18) as u8,
                    0x80 | (c >> 12 & 0x3f) as u8,
                    0x80 | (c >> 6 & 0x3f) as u8,
                    0x80 | (c & 0x3f) as u8,
                ]);
                w += 4;
            }
            // An unpaired surrogate: U+FFFD.
            0xd800..=0xdfff => {
                dst[w..w + 3].copy_from_slice(&[0xef, 0xbf, 0xbd]);
                w += 3;
            }
            _ => w += encode_bmp(u, &mut dst[w..]),
        }
    }
    w
}

/// Writes the UTF-8 of `u`, a character of the Basic Multilingual Plane that is no surrogate, to
/// the front of `dst` (three bytes of room); returns its length. All three forms are worked out
/// and the right one picked (conditional moves, not branches: mixed text would mispredict them).
#[inline(always)]
fn encode_bmp(u: u16, dst: &mut [u8]) -> usize {
    let c = u32::from(u);
    let two = 0x80c0 | c >> 6 | (c & 0x3f) << 8;
    let three = three_bytes(c);
    let (bytes, len) = match c {
        0..=0x7f => (c, 1),
        0x80..=0x7ff => (two, 2),
        _ => (three, 3),
    };
    dst[..3].copy_from_slice(&bytes.to_le_bytes()[..3]);
    len
}

/// The three UTF-8 bytes of `c`, a character from U+0800 on in the Basic Multilingual Plane, in
/// the low three bytes (little endian): 1110xxxx, then 10xxxxxx twice.
#[inline(always)]
fn three_bytes(c: u32) -> u32 {
    0x0080_80e0 | c >> 12 | (c >> 6 & 0x3f) << 8 | (c & 0x3f) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end() {
        let b = [1, 2, 3, 4];
        assert_eq!(read_u16(&b, 2), Some(0x0403));
        assert_eq!(read_u16(&b, 3), None);
        assert_eq!(read_u32(&b, usize::MAX), None);
        assert_eq!(read_i16(&[0xff, 0xff], 0), Some(-1));
    }

    #[test]
    fn decodes_utf16_with_surrogate_pairs() {
        let s = "a€😀";
        let b: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        assert_eq!(utf16le(&b), s);
        assert_eq!(utf16le(&[0x00, 0xd8]), "\u{fffd}");
    }

    /// What the standard library's UTF-16 decoder reads in `units`, unpaired surrogates U+FFFD.
    fn reference(units: &[u16]) -> String {
        char::decode_utf16(units.iter().copied()).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
    }

    /// Long ASCII runs, every kind of unit (each UTF-8 length and the edges between them,
    /// surrogate pairs, lone high and low surrogates) and an odd last byte read as the standard
    /// library's UTF-16 decoder reads them: as a string (chunks of 64 units) and as bytes
    /// appended to a buffer that already holds text (its room reused from case to case).
    #[test]
    fn utf16_reads_as_the_standard_decoder_reads() {
        let kinds: [&[u16]; 14] = [
            &[0x41, 0x7a, 0x20],
            &[0x7f, 0x80, 0xe9],
            &[0x3b1, 0x416, 0x7ff],
            &[0x800, 0x4e2d, 0xd7ff],
            &[0xe000, 0x20ac, 0xfffd, 0xffff],
            &[0xd83d, 0xde00],
            &[0xdbff, 0xdfff],
            &[0xd800],
            &[0xdbff],
            &[0xdc00],
            &[0xdfff],
            &[0x3b1],
            &[0x4e2d],
            &[0xd800, 0xd800, 0xdc00],
        ];
        let mut state = 0x2545_f491_u32;
        let mut writer = Utf8Writer::default();
        for case in 0..4000 {
            let mut units = Vec::new();
            while units.len() < case % 300 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let kind = kinds[state as usize % kinds.len()];
                // Runs of one kind, crossing the 64-unit chunks and the four-unit words.
                let repeat = if kind[0] < 0x80 { state as usize % 90 } else { 1 + (state >> 8) as usize % 6 };
                for _ in 0..repeat {
                    units.extend_from_slice(kind);
                }
            }
            let mut bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
            let expected = reference(&units);
            assert_eq!(utf16le(&bytes), expected, "case {case}");
            writer.clear();
            writer.push_bytes(&b"prefix"[..case % 7]);
            push_utf16le_utf8(&bytes, &mut writer);
            assert_eq!(writer.written(), [&b"prefix"[..case % 7], expected.as_bytes()].concat(), "case {case}");
            bytes.push(0x41);
            assert_eq!(utf16le(&bytes), expected, "odd last byte, case {case}");
            writer.clear();
            push_utf16le_utf8(&bytes, &mut writer);
            assert_eq!(writer.written(), expected.as_bytes(), "odd last byte, case {case}");
        }
    }

    /// Every four-unit word of the units at the edges of each way a word is spelled (ASCII, two
    /// bytes, three bytes, surrogates high and low), one to three ASCII units before it so that
    /// it is read from every lane, reads as the standard decoder reads it.
    #[test]
    fn utf16_words_of_every_kind_read_as_the_standard_decoder_reads() {
        let edges = [0x00, 0x41, 0x7f, 0x80, 0xe9, 0x3b1, 0x7ff, 0x800, 0x4e2d, 0xd7ff, 0xd800, 0xdc00, 0xe000, 0xffff];
        let mut writer = Utf8Writer::default();
        for word in 0..edges.len().pow(4) {
            let four = [0, 1, 2, 3].map(|lane| edges[word / edges.len().pow(lane) % edges.len()]);
            for before in 0..4 {
                let units: Vec<u16> = std::iter::repeat_n(0x61, before).chain(four).chain([0x7a, 0x3b1]).collect();
                let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
                writer.clear();
                push_utf16le_utf8(&bytes, &mut writer);
                assert_eq!(writer.written(), reference(&units).as_bytes(), "{units:x?}");
            }
        }
    }

    /// A surrogate pair, or a lone high surrogate, at every place around the end of the string
    /// path's 64-unit chunks reads as the standard decoder reads it.
    #[test]
    fn utf16_chunks_never_split_a_pair() {
        for before in 0..140 {
            for tail in [&[0xd83d, 0xde00][..], &[0xd83d, 0x41], &[0xd83d], &[0xde00, 0xd83d, 0xde00]] {
                let units: Vec<u16> = std::iter::repeat_n(0x3b1, before).chain(tail.iter().copied()).collect();
                let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
                assert_eq!(utf16le(&bytes), reference(&units), "{before} units before {tail:x?}");
            }
        }
    }

    /// The writer's room is kept between runs; what was written is only what was committed.
    #[test]
    fn utf8_writer_keeps_its_room() {
        let mut writer = Utf8Writer::default();
        writer.push_bytes(b"long text to make room");
        writer.clear();
        assert_eq!(writer.written(), b"");
        writer.push_bytes(b"ab");
        assert!(writer.spare(3).len() >= 20);
        writer.commit(usize::MAX);
        assert_eq!(writer.written().len(), 22, "a commit past the room stops at its end");
    }
}
