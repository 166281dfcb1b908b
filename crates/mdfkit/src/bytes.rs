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
    let units = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    char::decode_utf16(units).map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
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
