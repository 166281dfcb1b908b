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
/// `char::decode_utf16` reads them), an odd last byte is ignored. One pass, no iterator adapters:
/// this runs for every nchar/nvarchar value of a scan or a text export.
pub fn push_utf16le(bytes: &[u8], out: &mut String) {
    out.reserve(bytes.len() / 2 * 3);
    let mut units = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).peekable();
    while let Some(unit) = units.next() {
        let code = match unit {
            0..=0x7f => {
                out.push(char::from(unit as u8));
                continue;
            }
            0xd800..=0xdbff => match units.peek() {
                Some(&low @ 0xdc00..=0xdfff) => {
                    units.next();
                    0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00)
                }
                _ => 0xfffd,
            },
            0xdc00..=0xdfff => 0xfffd,
            _ => u32::from(unit),
        };
        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
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
}
