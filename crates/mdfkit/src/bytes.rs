//! Bounds-checked little-endian reads: every accessor returns `None` past the end of the slice,
//! so a length taken from the file can never cause a panic.

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

/// Appends the UTF-16LE text in `bytes` to `out`: unpaired surrogates read U+FFFD (as
/// `char::decode_utf16` reads them), an odd last byte is ignored. This runs for every
/// nchar/nvarchar value of a scan or a text export: ASCII (most text) is narrowed four units at
/// a time into a buffer and appended a run at a time; other characters one by one.
pub fn push_utf16le(bytes: &[u8], out: &mut String) {
    const NOT_ASCII: u64 = 0xff80_ff80_ff80_ff80;
    out.reserve(bytes.len() / 2 * 3);
    let units = bytes.len() / 2;
    let unit = |i: usize| u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]);
    let mut ascii = [0u8; 64];
    let mut held = 0;
    let mut i = 0;
    while i < units {
        if held + 4 > ascii.len() {
            push_ascii(out, &ascii[..held]);
            held = 0;
        }
        if let Some(four) = bytes.get(2 * i..2 * i + 8) {
            let w = u64::from_le_bytes(four.try_into().unwrap_or_default());
            if w & NOT_ASCII == 0 {
                ascii[held..held + 4].copy_from_slice(&[w as u8, (w >> 16) as u8, (w >> 32) as u8, (w >> 48) as u8]);
                (held, i) = (held + 4, i + 4);
                continue;
            }
        }
        let u = unit(i);
        i += 1;
        if u < 0x80 {
            ascii[held] = u as u8;
            held += 1;
            continue;
        }
        push_ascii(out, &ascii[..held]);
        held = 0;
        let code = match u {
            0xd800..=0xdbff if i < units && (0xdc00..=0xdfff).contains(&unit(i)) => {
                i += 1;
                0x10000 + ((u32::from(u) - 0xd800) << 10) + (u32::from(unit(i - 1)) - 0xdc00)
            }
            _ => u32::from(u),
        };
        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    push_ascii(out, &ascii[..held]);
}

/// Appends bytes known to be ASCII to `out`: a short run (text between accented letters) a
/// byte at a time, where the string's UTF-8 check of the run would cost more than the run.
pub fn push_ascii(out: &mut String, ascii: &[u8]) {
    if ascii.len() < 16 {
        out.extend(ascii.iter().map(|&b| char::from(b)));
    } else {
        out.push_str(std::str::from_utf8(ascii).unwrap_or_default());
    }
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

    /// Long ASCII runs, every kind of unit and lone surrogates anywhere read as the standard
    /// library's UTF-16 decoder reads them.
    #[test]
    fn utf16_reads_as_the_standard_decoder_reads() {
        let kinds: [&[u16]; 6] =
            [&[0x41, 0x7a, 0x20], &[0x7f, 0x80, 0xe9], &[0x20ac, 0xfffd], &[0xd83d, 0xde00], &[0xd800], &[0xdc00]];
        let mut state = 0x2545_f491_u32;
        for case in 0..2000 {
            let mut units = Vec::new();
            while units.len() < case % 300 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let kind = kinds[state as usize % kinds.len()];
                // Mostly ASCII, in runs that cross the 64-unit buffer and the four-unit words.
                let repeat = if kind[0] < 0x80 { state as usize % 90 } else { 1 };
                for _ in 0..repeat {
                    units.extend_from_slice(kind);
                }
            }
            let mut bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
            let expected: String =
                char::decode_utf16(units.iter().copied()).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect();
            assert_eq!(utf16le(&bytes), expected, "case {case}");
            bytes.push(0x41);
            assert_eq!(utf16le(&bytes), expected, "odd last byte, case {case}");
        }
    }
}
