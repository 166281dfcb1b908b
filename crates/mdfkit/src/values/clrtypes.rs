//! The system CLR types: which one a column holds, and `hierarchyid` values to their text path.
//!
//! All CLR types share system type id 240; the concrete type is the column's user type id. The
//! system ones have fixed ids (read from `sys.types` of the corpus, e.g. AdventureWorksLT 2012):
//!
//! | user_type_id | type        | decoded by                              |
//! |-------------:|-------------|-----------------------------------------|
//! | 128          | hierarchyid | [`hierarchyid_text`] (this module)      |
//! | 129          | geometry    | [`crate::spatial`]                      |
//! | 130          | geography   | [`crate::spatial`]                      |
//! | > 256        | user CLR    | not decoded: their bytes stay binary    |
//!
//! # hierarchyid ([MS-SSCLRT] 2.2 by the spec's layout, not seen here; examples in 3.2)
//!
//! A path `/a/b.c/` is a list of levels, each level a list of integer labels. The value is a bit
//! string, most significant bit of each byte first, with one field triple per label and zero
//! padding to a whole byte; the root `/` is the empty value:
//!
//! ```text
//!  | L1 | O1 | F1 | L2 | O2 | F2 | ... | Ln | On | Fn | W (0-7 zero bits) |
//! ```
//! `L` is a prefix choosing a range of labels, `O` the offset from the range's start, `F` is 1
//! when the label ends its level (it is followed by `/`) and 0 when another label of the same
//! level follows (a `.`). A label followed by `.` is stored one greater than it is printed
//! (3.2 example 2: `/1/-2.18/` stores -1 with F = 0, printed -2).
//!
//! In the larger ranges the offset bits are not contiguous: fixed bits are interleaved (they
//! keep the byte order equal to the depth-first order). `x` below is an offset bit, most
//! significant first; `0`/`1` are fixed bits that must have that value:
//!
//! | L        | labels                               | after L (then F)                                   |
//! |----------|--------------------------------------|----------------------------------------------------|
//! | `000100` | -281479271682120 .. -4294971465      | `x{14} 0 x{21} 0 x{6} 0 xxx 0 x 1 xxx` (48 bits)   |
//! | `000101` | -4294971464 .. -4169                 | `x{19} 0 x{6} 0 xxx 0 x 1 xxx` (32 bits)           |
//! | `000110` | -4168 .. -73                         | `x{5} 0 xxx 0 x 1 xxx` (12 bits)                   |
//! | `0010`   | -72 .. -9                            | `xx 0 x 1 xxx` (6 bits)                            |
//! | `00111`  | -8 .. -1                             | `xxx`                                              |
//! | `01`     | 0 .. 3                               | `xx`                                               |
//! | `100`    | 4 .. 7                               | `xx`                                               |
//! | `101`    | 8 .. 15                              | `xxx`                                              |
//! | `110`    | 16 .. 79                             | `xx 0 x 1 xxx` (6 bits)                            |
//! | `1110`   | 80 .. 1103                           | `xxx 0 xxx 0 x 1 xxx` (10 bits)                    |
//! | `11110`  | 1104 .. 5199                         | `x{5} 0 xxx 0 x 1 xxx` (12 bits)                   |
//! | `111110` | 5200 .. 4294972495                   | `x{19} 0 x{6} 0 xxx 0 x 1 xxx` (32 bits)           |
//! | `111111` | 4294972496 .. 281479271683151        | `x{14} 0 x{21} 0 x{6} 0 xxx 0 x 1 xxx` (48 bits)   |
//!
//! Each range's size is 2^(offset bits), which the table's ends confirm. The decoding ends when
//! no bits are left, or when fewer than 8 are left and all are zero (the padding W).
//!
//! Sources: [MS-SSCLRT] "Microsoft SQL Server CLR Types Serialization Formats", 3.2 (the worked
//! examples `/1/` = `01011000` and `/1/-2.18/` = `01011001 11111011 00000101 01000000`, which fix
//! the field order, the F bit and the `.` rule); the interleaved fixed bits as listed by Adam
//! Milazzo, "How the SQL Server hierarchyid data type works (kind of)", and checked on the 3.2
//! example (`110 00 0 0 1 010 1` = 16 + 2 = 18). Values seen in AdventureWorks
//! (`HumanResources.Employee.OrganizationNode`: `0x58`, `0x5AC0`, `0x5AE158`, ...) decode to paths
//! with the levels that table lists.

use crate::error::{Error, Result};

/// Which system CLR type a column of system type 240 holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClrKind {
    /// `hierarchyid` (user type id 128): a path in a tree.
    HierarchyId,
    /// `geometry` (user type id 129): planar spatial data.
    Geometry,
    /// `geography` (user type id 130): spatial data on the earth's ellipsoid.
    Geography,
    /// A CLR type from a user assembly: left as bytes.
    User,
}

impl ClrKind {
    /// The kind of a CLR column from its `sys.columns.user_type_id`.
    pub fn from_user_type_id(user_type_id: i32) -> Self {
        match user_type_id {
            128 => ClrKind::HierarchyId,
            129 => ClrKind::Geometry,
            130 => ClrKind::Geography,
            _ => ClrKind::User,
        }
    }

    /// The `sys.columns.user_type_id` of the kind; `None` for user CLR types.
    pub fn user_type_id(self) -> Option<i32> {
        match self {
            ClrKind::HierarchyId => Some(128),
            ClrKind::Geometry => Some(129),
            ClrKind::Geography => Some(130),
            ClrKind::User => None,
        }
    }
}

/// One row of the label table: the prefix `L`, then the rest of the field as `x` (offset bit),
/// `0` / `1` (fixed bits); `F` follows. `first` is the smallest label of the range.
struct Pattern {
    prefix: &'static str,
    body: &'static str,
    first: i64,
}

const PATTERNS: [Pattern; 13] = [
    Pattern {
        prefix: "000100",
        body: "xxxxxxxxxxxxxx0xxxxxxxxxxxxxxxxxxxxx0xxxxxx0xxx0x1xxx",
        first: -281_479_271_682_120,
    },
    Pattern { prefix: "000101", body: "xxxxxxxxxxxxxxxxxxx0xxxxxx0xxx0x1xxx", first: -4_294_971_464 },
    Pattern { prefix: "000110", body: "xxxxx0xxx0x1xxx", first: -4168 },
    Pattern { prefix: "0010", body: "xx0x1xxx", first: -72 },
    Pattern { prefix: "00111", body: "xxx", first: -8 },
    Pattern { prefix: "01", body: "xx", first: 0 },
    Pattern { prefix: "100", body: "xx", first: 4 },
    Pattern { prefix: "101", body: "xxx", first: 8 },
    Pattern { prefix: "110", body: "xx0x1xxx", first: 16 },
    Pattern { prefix: "1110", body: "xxx0xxx0x1xxx", first: 80 },
    Pattern { prefix: "11110", body: "xxxxx0xxx0x1xxx", first: 1104 },
    Pattern { prefix: "111110", body: "xxxxxxxxxxxxxxxxxxx0xxxxxx0xxx0x1xxx", first: 5200 },
    Pattern { prefix: "111111", body: "xxxxxxxxxxxxxx0xxxxxxxxxxxxxxxxxxxxx0xxxxxx0xxx0x1xxx", first: 4_294_972_496 },
];

#[cfg(test)]
impl Pattern {
    fn offset_bits(&self) -> u32 {
        self.body.bytes().filter(|&b| b == b'x').count() as u32
    }

    /// The last label of the range.
    fn last(&self) -> i64 {
        self.first + (1i64 << self.offset_bits()) - 1
    }
}

/// Bits of a byte string, most significant bit first.
struct Bits<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn len(&self) -> usize {
        self.bytes.len() * 8
    }

    fn remaining(&self) -> usize {
        self.len() - self.pos
    }

    fn bit(&self, at: usize) -> Option<bool> {
        let byte = self.bytes.get(at / 8)?;
        Some(byte >> (7 - at % 8) & 1 == 1)
    }

    fn next(&mut self) -> Option<bool> {
        let b = self.bit(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn starts_with(&self, prefix: &str) -> bool {
        prefix.bytes().enumerate().all(|(i, p)| self.bit(self.pos + i) == Some(p == b'1'))
    }

    fn rest_is_zero(&self) -> bool {
        (self.pos..self.len()).all(|i| self.bit(i) == Some(false))
    }
}

/// The labels of a hierarchyid value, level by level. The empty value is the root (no levels).
pub fn hierarchyid_levels(bytes: &[u8]) -> Result<Vec<Vec<i64>>> {
    let bad =
        |what: &str, bit: usize| Error::corrupt(format!("hierarchyid value 0x{}: {what} at bit {bit}", hex(bytes)));
    let mut bits = Bits { bytes, pos: 0 };
    let mut levels = Vec::new();
    let mut level = Vec::new();
    // Every label takes at least 5 bits, so the loop ends within len / 5 rounds.
    loop {
        if bits.remaining() == 0 || (bits.remaining() < 8 && bits.rest_is_zero()) {
            break;
        }
        let start = bits.pos;
        let pattern =
            PATTERNS.iter().find(|p| bits.starts_with(p.prefix)).ok_or_else(|| bad("no label range", start))?;
        bits.pos += pattern.prefix.len();
        let mut offset = 0i64;
        for b in pattern.body.bytes() {
            let at = bits.pos;
            let bit = bits.next().ok_or_else(|| bad("label cut short", at))?;
            match b {
                b'x' => offset = offset << 1 | i64::from(bit),
                fixed => {
                    if bit != (fixed == b'1') {
                        return Err(bad("fixed bit has the wrong value", at));
                    }
                }
            }
        }
        let at = bits.pos;
        let ends_level = bits.next().ok_or_else(|| bad("label without its F bit", at))?;
        let label = pattern.first + offset;
        if ends_level {
            level.push(label);
            levels.push(std::mem::take(&mut level));
        } else {
            level.push(label - 1);
        }
    }
    if !level.is_empty() {
        return Err(bad("last level not ended", bits.pos));
    }
    Ok(levels)
}

/// The text SQL Server's `ToString()` gives a hierarchyid: `/`, `/1/`, `/1/-2.18/`.
pub fn hierarchyid_text(bytes: &[u8]) -> Result<String> {
    let levels = hierarchyid_levels(bytes)?;
    let mut out = String::from("/");
    for level in levels {
        for (i, label) in level.iter().enumerate() {
            if i > 0 {
                out.push('.');
            }
            out.push_str(&label.to_string());
        }
        out.push('/');
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    const MAX: usize = 32;
    let mut s: String = bytes.iter().take(MAX).map(|b| format!("{b:02X}")).collect();
    if bytes.len() > MAX {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Test-only encoder: the inverse of [`hierarchyid_levels`].
    pub fn encode(levels: &[Vec<i64>]) -> Vec<u8> {
        let mut bits: Vec<bool> = Vec::new();
        for level in levels {
            for (i, &label) in level.iter().enumerate() {
                let last = i + 1 == level.len();
                let stored = if last { label } else { label + 1 };
                let p = PATTERNS.iter().find(|p| (p.first..=p.last()).contains(&stored)).expect("label in range");
                bits.extend(p.prefix.bytes().map(|b| b == b'1'));
                let offset = stored - p.first;
                let mut n = p.offset_bits();
                for b in p.body.bytes() {
                    if b == b'x' {
                        n -= 1;
                        bits.push(offset >> n & 1 == 1);
                    } else {
                        bits.push(b == b'1');
                    }
                }
                bits.push(last);
            }
        }
        let mut out = vec![0u8; bits.len().div_ceil(8)];
        for (i, b) in bits.iter().enumerate() {
            if *b {
                out[i / 8] |= 0x80 >> (i % 8);
            }
        }
        out
    }

    fn from_bits(s: &str) -> Vec<u8> {
        let bits: Vec<u8> = s.bytes().filter(|b| *b != b' ').collect();
        bits.chunks(8).map(|c| c.iter().fold(0u8, |acc, b| acc << 1 | (b - b'0'))).collect()
    }

    #[test]
    fn clr_kinds_from_user_type_ids() {
        assert_eq!(ClrKind::from_user_type_id(128), ClrKind::HierarchyId);
        assert_eq!(ClrKind::from_user_type_id(129), ClrKind::Geometry);
        assert_eq!(ClrKind::from_user_type_id(130), ClrKind::Geography);
        assert_eq!(ClrKind::from_user_type_id(257), ClrKind::User);
        for k in [ClrKind::HierarchyId, ClrKind::Geometry, ClrKind::Geography] {
            assert_eq!(ClrKind::from_user_type_id(k.user_type_id().unwrap()), k);
        }
    }

    #[test]
    fn pattern_ranges_meet_without_gaps() {
        let mut sorted: Vec<&Pattern> = PATTERNS.iter().collect();
        sorted.sort_by_key(|p| p.first);
        for w in sorted.windows(2) {
            assert_eq!(w[0].last() + 1, w[1].first, "{} then {}", w[0].prefix, w[1].prefix);
        }
        assert_eq!(sorted[0].first, -281_479_271_682_120);
        assert_eq!(sorted[12].last(), 281_479_271_683_151);
        assert_eq!(PATTERNS.iter().find(|p| p.prefix == "111110").unwrap().last(), 4_294_972_495);
        // No prefix is a prefix of another (the first match is the only match).
        for a in &PATTERNS {
            for b in &PATTERNS {
                assert!(std::ptr::eq(a, b) || !b.prefix.starts_with(a.prefix));
            }
        }
    }

    #[test]
    fn spec_examples_3_2() {
        // The root is the empty value.
        assert_eq!(hierarchyid_text(&[]).unwrap(), "/");
        // Example 1: /1/ is 01011000.
        let one = from_bits("01011000");
        assert_eq!(one, [0x58]);
        assert_eq!(hierarchyid_text(&one).unwrap(), "/1/");
        // Example 2: /1/-2.18/.
        let ex2 = from_bits("01011001 11111011 00000101 01000000");
        assert_eq!(hierarchyid_text(&ex2).unwrap(), "/1/-2.18/");
        assert_eq!(hierarchyid_levels(&ex2).unwrap(), vec![vec![1], vec![-2, 18]]);
        assert_eq!(encode(&[vec![1], vec![-2, 18]]), ex2);
        assert_eq!(encode(&[vec![1]]), one);
    }

    #[test]
    fn adventureworks_organization_nodes() {
        // (value, OrganizationLevel) pairs of AdventureWorks HumanResources.Employee.
        let cases: [(&[u8], &str, usize); 8] = [
            (&[], "/", 0),
            (&[0x58], "/1/", 1),
            (&[0x5A, 0xC0], "/1/1/", 2),
            (&[0x5A, 0xD6], "/1/1/1/", 3),
            (&[0x5A, 0xDA], "/1/1/2/", 3),
            (&[0x5A, 0xE1], "/1/1/4/", 3),
            (&[0x5A, 0xE1, 0x58], "/1/1/4/1/", 4),
            (&[0x68], "/2/", 1),
        ];
        for (bytes, path, level) in cases {
            assert_eq!(hierarchyid_text(bytes).unwrap(), path);
            assert_eq!(hierarchyid_levels(bytes).unwrap().len(), level);
        }
    }

    #[test]
    fn range_edges_round_trip() {
        for p in &PATTERNS {
            for label in [p.first, p.last(), p.first + (p.last() - p.first) / 2] {
                let levels = vec![vec![label]];
                let bytes = encode(&levels);
                assert_eq!(hierarchyid_levels(&bytes).unwrap(), levels, "{}", p.prefix);
                assert_eq!(hierarchyid_text(&bytes).unwrap(), format!("/{label}/"));
            }
        }
    }

    /// xorshift64*: deterministic random numbers without a dependency.
    pub struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        pub fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_label(rng: &mut Rng) -> i64 {
        // Pick a range first so that every range is exercised, then a label in it; keep one
        // below the top so that `label + 1` (a label followed by `.`) still fits.
        let p = &PATTERNS[rng.below(PATTERNS.len() as u64) as usize];
        let span = (p.last() - p.first) as u64;
        (p.first + rng.below(span) as i64).min(281_479_271_683_150)
    }

    #[test]
    fn random_paths_round_trip() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..5000 {
            let depth = rng.below(8) as usize;
            let levels: Vec<Vec<i64>> =
                (0..depth).map(|_| (0..1 + rng.below(4)).map(|_| random_label(&mut rng)).collect()).collect();
            let bytes = encode(&levels);
            assert_eq!(hierarchyid_levels(&bytes).unwrap(), levels, "{bytes:02X?}");
            let text = hierarchyid_text(&bytes).unwrap();
            let expected: String = std::iter::once("/".to_string())
                .chain(
                    levels
                        .iter()
                        .map(|l| format!("{}/", l.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("."))),
                )
                .collect();
            assert_eq!(text, expected);
        }
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        // 0000 is no range; a label cut short; a level not ended (F = 0 last).
        assert!(hierarchyid_text(&[0x00, 0x01]).is_err());
        assert!(hierarchyid_text(&[0xFC]).is_err());
        assert!(hierarchyid_text(&from_bits("01010000")).is_err());
        // A wrong fixed bit: 110 00 [1] 0 1 ... instead of 0.
        assert!(hierarchyid_text(&from_bits("11000100 10100000")).is_err());
        let mut rng = Rng(42);
        for _ in 0..20_000 {
            let len = rng.below(24) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = hierarchyid_text(&bytes);
        }
    }
}
