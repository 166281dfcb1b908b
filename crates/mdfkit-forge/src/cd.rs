//! ROW compressed records (the CD format), written from the format as Microsoft ("Row Compression
//! Implementation") and Dmitri Korotkevitch ("Pro SQL Server Internals", ch. 4) describe it; the
//! reader's `record/cd.rs` and `compressed/values.rs` document the same layout.
//!
//! ```text
//!  header | column count | CD array (4 bits a column, low nibble first) | short cluster array |
//!  short data (values of 1-8 bytes, in column order) | long data region (header bit 0x20)
//!
//!  long data region: flags (0x01 two-byte offsets, 0x02 complex values) | count (2) |
//!                    end offsets (2 each, from the first value; 0x8000 complex) |
//!                    long cluster array | values
//! ```
//!
//! Header: 0x01 (CD format) | record type << 2 (0 primary, 2 forwarding stub, 3 ghost data,
//! 4 forwarded, 6 index) | 0x20 (long data region present).
//!
//! The non-leaf index records of a compressed index are CD records too ([`index_record`]): record
//! type 6, the key columns, then one more column holding the child page's address (page 4, file
//! 2 bytes) as six bytes of short data (CD code 7). Source: danny-sg/internals-viewer
//! (`CdRecordLoader.cs`: a six-byte short column past the index's columns is the down page
//! pointer; `CdIndexRecord.cs`). CD codes: 0 NULL, 1 empty, 2-9 one to eight
//! bytes of short data, 10 long data, 11 bit 1. Each full cluster of 30 columns has a byte in the
//! short cluster array (its short data's length) and one in the long cluster array (its long
//! values' count); the last cluster has none.
//!
//! Values ([`compress`]): integers, money, datetime in the fewest big-endian bytes with the top
//! bit flipped (0 as no bytes); decimal as vardecimal; real/float without their low-order zero
//! bytes; date and time types without their high-order zero bytes; char/binary/nchar without
//! trailing spaces / zero bytes; nchar and nvarchar(n) in SCSU when that is shorter (always an odd
//! length, padded with SC0 = 0x10), else UTF-16LE; bit in the CD code; the rest as stored.

use crate::page::PageId;
use crate::record::Kind;
use crate::spec::ColType;
use crate::value::{encode_vardecimal, Val};

/// Columns a cluster of the short (and long) data region holds.
const CLUSTER: usize = 30;
const LONG_REGION: u8 = 0x20;
const COMPLEX: u16 = 0x8000;
/// Longest value kept in the short data region.
const SHORT_MAX: usize = 8;

/// One column's stored form in a compressed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CdCell {
    Null,
    TrueBit,
    /// The compressed bytes (none: the CD code "empty").
    Bytes(Vec<u8>),
    /// An off-row pointer or in-row LOB root, kept in the long data region flagged complex.
    Complex(Vec<u8>),
    /// Entry `n` of the page's dictionary (PAGE compression): code 12, one byte of short data.
    Symbol(u8),
}

/// The compressed storage form of `value` in a column of type `ty`; `None` for smalldatetime,
/// whose compressed form is not documented.
pub fn compress(value: &Val, ty: ColType) -> Option<CdCell> {
    use ColType::*;
    let mut plain = Vec::new();
    Some(CdCell::Bytes(match (value, ty) {
        (Val::Bit(true), _) => return Some(CdCell::TrueBit),
        (Val::Bit(false), _) => Vec::new(),
        (Val::Int(v), TinyInt) => {
            if *v == 0 {
                Vec::new()
            } else {
                vec![*v as u8]
            }
        }
        (Val::Int(v), SmallInt | Int | BigInt) => integer(*v),
        (Val::Scaled(v), Money | SmallMoney) => integer(*v as i64),
        (Val::Scaled(v), Decimal(..) | Numeric(..)) => {
            encode_vardecimal(*v, ty.scale(), &mut plain);
            plain
        }
        (Val::DateTime { days, ticks }, DateTime) => integer(i64::from(*days) << 32 | i64::from(*ticks)),
        (Val::Real(_) | Val::Float(_), _) => {
            value.encode(ty, &mut plain);
            let zeros = plain.iter().take_while(|b| **b == 0).count();
            plain.split_off(zeros)
        }
        (Val::Date(_) | Val::Time(_) | Val::DateTime2 { .. } | Val::DateTimeOffset { .. }, _) => {
            value.encode(ty, &mut plain);
            trim_end(plain, 0)
        }
        (Val::Text(_), Char(_)) => {
            value.encode(ty, &mut plain);
            trim_end(plain, b' ')
        }
        (Val::Bytes(_), Binary(_)) => {
            value.encode(ty, &mut plain);
            trim_end(plain, 0)
        }
        (Val::Text(s), NChar(_)) => unicode(s.trim_end_matches(' ')),
        (Val::Text(s), NVarChar(Some(_))) => unicode(s),
        (_, SmallDateTime) => return None,
        _ => {
            value.encode(ty, &mut plain);
            plain
        }
    }))
}

/// A nonzero integer in the fewest bytes that hold it signed, big endian, top bit flipped.
fn integer(v: i64) -> Vec<u8> {
    if v == 0 {
        return Vec::new();
    }
    let n = (1..=8).find(|&n| n == 8 || (-(1i64 << (8 * n - 1))..(1i64 << (8 * n - 1))).contains(&v)).unwrap_or(8);
    let mut b = v.to_be_bytes()[8 - n..].to_vec();
    b[0] ^= 0x80;
    b
}

fn trim_end(mut b: Vec<u8>, pad: u8) -> Vec<u8> {
    while b.last() == Some(&pad) {
        b.pop();
    }
    b
}

/// Unicode compression: SCSU in single-byte mode with the initial windows (ASCII as itself,
/// U+0080-U+00FF through dynamic window 0 at U+0080, anything else quoted with SQU), made odd by
/// a trailing SC0; UTF-16LE where that is not shorter.
pub fn unicode(s: &str) -> Vec<u8> {
    let utf16: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let mut scsu = Vec::new();
    for unit in s.encode_utf16() {
        match unit {
            0x00 | 0x09 | 0x0A | 0x0D | 0x20..=0x7F => scsu.push(unit as u8),
            0x80..=0xFF => scsu.push(unit as u8),
            _ => {
                scsu.push(0x0E);
                scsu.extend_from_slice(&unit.to_be_bytes());
            }
        }
    }
    if scsu.len() % 2 == 0 {
        scsu.push(0x10);
    }
    if scsu.len() < utf16.len() {
        scsu
    } else {
        utf16
    }
}

/// A column's CD code and where its bytes go.
fn code(cell: &CdCell) -> u8 {
    match cell {
        CdCell::Null => 0,
        CdCell::Bytes(b) if b.is_empty() => 1,
        CdCell::Bytes(b) if b.len() <= SHORT_MAX => 1 + b.len() as u8,
        CdCell::Bytes(_) | CdCell::Complex(_) => 10,
        CdCell::TrueBit => 11,
        CdCell::Symbol(_) => 12,
    }
}

/// Writes a CD record of `cells` (physical column order) into `out` (cleared first).
pub fn encode(cells: &[CdCell], kind: Kind, out: &mut Vec<u8>) {
    let type_bits = match kind {
        Kind::Primary => 0,
        Kind::Ghost => 3,
        Kind::Forwarded { .. } => 4,
    };
    let back = match kind {
        Kind::Forwarded { stub, slot } => Some(back_pointer(stub, slot)),
        _ => None,
    };
    encode_typed(cells, type_bits, back, out);
}

/// An index record of a compressed index: record type 6, the columns' cells; on a non-leaf page
/// the child page's address follows them as a column of six bytes.
pub fn index_record(columns: &[CdCell], child: Option<PageId>) -> Vec<u8> {
    let mut cells = columns.to_vec();
    if let Some(child) = child {
        cells.push(CdCell::Bytes(child.bytes().to_vec()));
    }
    let mut out = Vec::new();
    encode_typed(&cells, 6, None, &mut out);
    out
}

/// [`encode`] with record type `type_bits` and a forwarded record's back pointer `back`.
fn encode_typed(cells: &[CdCell], type_bits: u8, back: Option<Vec<u8>>, out: &mut Vec<u8>) {
    out.clear();
    let mut long: Vec<(&[u8], bool)> = cells
        .iter()
        .filter_map(|c| match c {
            CdCell::Bytes(b) if b.len() > SHORT_MAX => Some((b.as_slice(), false)),
            CdCell::Complex(b) => Some((b.as_slice(), true)),
            _ => None,
        })
        .collect();
    if let Some(b) = &back {
        long.push((b, true));
    }
    out.push(0x01 | type_bits << 2 | if long.is_empty() { 0 } else { LONG_REGION });
    out.push(cells.len() as u8);
    for pair in cells.chunks(2) {
        out.push(code(&pair[0]) | pair.get(1).map_or(0, |c| code(c) << 4));
    }
    let full_clusters = cells.len().saturating_sub(1) / CLUSTER;
    let short_of = |cluster: &[CdCell]| -> Vec<u8> {
        cluster
            .iter()
            .filter_map(|c| match c {
                CdCell::Bytes(b) if b.len() <= SHORT_MAX => Some(b.as_slice()),
                CdCell::Symbol(n) => Some(std::slice::from_ref(n)),
                _ => None,
            })
            .flatten()
            .copied()
            .collect()
    };
    let clusters: Vec<Vec<u8>> = cells.chunks(CLUSTER).map(short_of).collect();
    out.extend(clusters.iter().take(full_clusters).map(|c| c.len() as u8));
    for c in &clusters {
        out.extend_from_slice(c);
    }
    if long.is_empty() {
        return;
    }
    let complex = long.iter().any(|(_, c)| *c);
    out.push(0x01 | if complex { 0x02 } else { 0 });
    out.extend_from_slice(&(long.len() as u16).to_le_bytes());
    let mut end = 0usize;
    for (b, complex) in &long {
        end += b.len();
        out.extend_from_slice(&(end as u16 | if *complex { COMPLEX } else { 0 }).to_le_bytes());
    }
    for cluster in cells.chunks(CLUSTER).take(full_clusters) {
        out.push(cluster.iter().filter(|c| code(c) == 10).count() as u8);
    }
    for (b, _) in &long {
        out.extend_from_slice(b);
    }
}

/// A forwarded record's back pointer to its stub: 0x0400, then page, file, slot.
fn back_pointer(stub: PageId, slot: u16) -> Vec<u8> {
    let mut b = vec![0x00, 0x04];
    b.extend_from_slice(&stub.bytes());
    b.extend_from_slice(&slot.to_le_bytes());
    b
}

/// The CI structure of a PAGE compressed page whose values use no prefix and no dictionary: header
/// 0x02 (anchor record, no dictionary), modification count 0, the structure's size, then an anchor
/// record whose `columns` columns are all NULL (no column has a prefix). Layout as documented by
/// danny-sg/internals-viewer (`CompressionInfoLoader.cs`) and rsleedbx/mssqlbak-tests
/// (`04_ROWSTORE_COMPRESSED.md` §3.6).
pub fn compression_info(columns: usize) -> Vec<u8> {
    let mut anchor = Vec::new();
    encode(&vec![CdCell::Null; columns], Kind::Primary, &mut anchor);
    let mut ci = vec![0x02, 0, 0];
    ci.extend_from_slice(&((5 + anchor.len()) as u16).to_le_bytes());
    ci.extend_from_slice(&anchor);
    ci
}

/// The anchor record and dictionary of a PAGE compressed page, and the rule its records' values
/// are stored by: a column whose anchor value A is not NULL (empty included) stores a value V as one byte L (the
/// length of the prefix V shares with A, at most 127) then V without those L bytes, or stores
/// nothing when V is A; a stored form equal to a dictionary entry is replaced by that entry's
/// number (CD code 12, one byte of short data). Other columns store V as on a ROW compressed
/// page. Sources: Microsoft, "Page Compression Implementation" (prefix per column, then a
/// dictionary of repeated prefix-compressed values); danny-sg/internals-viewer
/// (`CdRecordField.cs`), rsleedbx/mssqlbak-tests (`04_ROWSTORE_COMPRESSED.md` §3.4, §3.6).
pub struct PageCi {
    anchor: Vec<CdCell>,
    dictionary: Vec<Vec<u8>>,
}

/// Longest prefix a one-byte prefix length can name.
const PREFIX_MAX: usize = 127;

impl PageCi {
    /// The CI of a page whose first row is `cells`: each column's anchor is the first half
    /// (rounded up) of that row's value, so the row itself is stored against it, and the
    /// dictionary holds that row's stored forms, so its values are all dictionary hits.
    pub fn for_first_row(cells: &[CdCell]) -> Self {
        let anchor: Vec<CdCell> = cells
            .iter()
            .map(|c| match c {
                CdCell::Bytes(b) if !b.is_empty() => CdCell::Bytes(b[..b.len().div_ceil(2).min(PREFIX_MAX)].to_vec()),
                _ => CdCell::Null,
            })
            .collect();
        let mut ci = PageCi { anchor, dictionary: Vec::new() };
        let mut dictionary = Vec::new();
        for (column, cell) in cells.iter().enumerate() {
            if let CdCell::Bytes(b) = ci.prefixed(column, cell) {
                if !b.is_empty() && !dictionary.contains(&b) && dictionary.len() < 255 {
                    dictionary.push(b);
                }
            }
        }
        ci.dictionary = dictionary;
        ci
    }

    /// `cell` of column `column` stored against its anchor value.
    fn prefixed(&self, column: usize, cell: &CdCell) -> CdCell {
        match (self.anchor.get(column), cell) {
            (Some(CdCell::Bytes(a)), CdCell::Bytes(v)) => {
                if v == a {
                    return CdCell::Bytes(Vec::new());
                }
                let shared = a.iter().zip(v).take_while(|(x, y)| x == y).count().min(PREFIX_MAX);
                let mut stored = vec![shared as u8];
                stored.extend_from_slice(&v[shared..]);
                CdCell::Bytes(stored)
            }
            _ => cell.clone(),
        }
    }

    /// A row's cells as this page stores them: prefixes, then dictionary symbols.
    pub fn apply(&self, cells: &[CdCell]) -> Vec<CdCell> {
        (0..cells.len())
            .map(|column| match self.prefixed(column, &cells[column]) {
                CdCell::Bytes(b) if !b.is_empty() => match self.dictionary.iter().position(|e| *e == b) {
                    Some(n) => CdCell::Symbol(n as u8),
                    None => CdCell::Bytes(b),
                },
                other => other,
            })
            .collect()
    }

    /// The CI structure: header 0x06 (anchor record and dictionary), modification count 0, the
    /// dictionary's offset and the structure's size (from its start), the anchor record, then
    /// the dictionary: entry count, each entry's end offset (from the dictionary's start), the
    /// entries. Layout: internals-viewer `CompressionInfoLoader.cs`, `DictionaryLoader.cs`;
    /// mssqlbak-tests §3.6.
    pub fn bytes(&self) -> Vec<u8> {
        let mut anchor = Vec::new();
        encode(&self.anchor, Kind::Primary, &mut anchor);
        let mut dictionary = (self.dictionary.len() as u16).to_le_bytes().to_vec();
        let mut end = 2 + 2 * self.dictionary.len();
        for e in &self.dictionary {
            end += e.len();
            dictionary.extend_from_slice(&(end as u16).to_le_bytes());
        }
        self.dictionary.iter().for_each(|e| dictionary.extend_from_slice(e));
        let dictionary_at = 7 + anchor.len();
        let mut ci = vec![0x06, 0, 0];
        ci.extend_from_slice(&(dictionary_at as u16).to_le_bytes());
        ci.extend_from_slice(&((dictionary_at + dictionary.len()) as u16).to_le_bytes());
        ci.extend_from_slice(&anchor);
        ci.extend_from_slice(&dictionary);
        ci
    }
}

/// A compressed heap's forwarding stub: header 0x09 (CD format, record type 2), then the
/// forwarded record's page, file, slot.
pub fn forwarding_stub(target: PageId, slot: u16) -> Vec<u8> {
    let mut r = vec![0x01 | 2 << 2];
    r.extend_from_slice(&target.bytes());
    r.extend_from_slice(&slot.to_le_bytes());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn page_values_are_stored_against_the_anchor_and_the_dictionary() {
        let bytes = |b: &[u8]| CdCell::Bytes(b.to_vec());
        let first = [bytes(b"abcdef"), CdCell::Null, bytes(b""), CdCell::TrueBit, bytes(b"q")];
        let ci = PageCi::for_first_row(&first);
        // Anchors "abc", none, none, none, "q" (a one-byte value is its own anchor); the
        // dictionary holds the first row's stored form "\x03def".
        assert_eq!(ci.apply(&first), [CdCell::Symbol(0), CdCell::Null, bytes(b""), CdCell::TrueBit, bytes(b"")]);
        let row = |v: &[u8]| ci.apply(&[bytes(v)])[0].clone();
        assert_eq!(row(b"abc"), bytes(b""), "the whole anchor: nothing stored");
        assert_eq!(row(b"abX"), bytes(b"\x02X"));
        assert_eq!(row(b"aXc"), bytes(b"\x01Xc"));
        assert_eq!(row(b"xyz"), bytes(b"\x00xyz"), "no shared prefix");
        assert_eq!(row(b""), bytes(b"\x00"), "an empty value is not the anchor");
        assert_eq!(row(b"abcdef"), CdCell::Symbol(0), "a dictionary hit");
        assert_eq!(ci.apply(&[CdCell::Null, bytes(b"abc")])[1], bytes(b"abc"), "no anchor: as stored");
        // Header 0x06, dictionary at 7 + anchor record (2 + 3 code bytes + 4 bytes = 9) = 16.
        let b = ci.bytes();
        assert_eq!(&b[..7], &[0x06, 0, 0, 16, 0, 24, 0]);
        assert_eq!(&b[7..16], &[0x01, 5, 0x04, 0x00, 0x02, b'a', b'b', b'c', b'q']);
        assert_eq!(&b[16..], &[1, 0, 8, 0, 3, b'd', b'e', b'f']);
    }

    #[test]
    fn prefixes_of_every_length_up_to_127() {
        let value: Vec<u8> = (0..=255u8).collect();
        let ci = PageCi::for_first_row(&[CdCell::Bytes(value.clone())]);
        for shared in 0..=127usize {
            let mut v = value[..shared].to_vec();
            v.push(0xff);
            let mut want = vec![shared as u8];
            want.push(0xff);
            assert_eq!(ci.apply(&[CdCell::Bytes(v)])[0], CdCell::Bytes(want), "{shared}");
        }
    }

    #[test]
    fn integers_as_improve_dk_and_orcamdf_show_them() {
        // "The Anatomy of Row & Page Compressed Integers": smallint -2, -1, 1, 2 are 7E, 7F, 81, 82.
        for (v, want) in [(-2, "7e"), (-1, "7f"), (1, "81"), (2, "82"), (128, "8080"), (-129, "7f7f"), (0, "")] {
            assert_eq!(hex(&integer(v)), want, "{v}");
        }
        assert_eq!(hex(&integer(i64::MAX)), "ffffffffffffffff");
        assert_eq!(hex(&integer(i64::MIN)), "0000000000000000");
    }

    #[test]
    fn the_record_of_pro_sql_server_internals() {
        // Listing 4-27 (Korotkevitch): (0, 2147483647, NULL, 'aaa', replicate('b',1000), 0, 1,
        // NULL, replicate('c',1000), 'dddddddddd' in char(1000)); the dump starts
        // 210a5140 1a0baaff ffffff61 61610103 00e803d0 07da07.
        let b = |s: &str| CdCell::Bytes(s.as_bytes().to_vec());
        let cells = [
            CdCell::Bytes(integer(0)),
            CdCell::Bytes(integer(2_147_483_647)),
            CdCell::Null,
            b("aaa"),
            b(&"b".repeat(1000)),
            CdCell::Bytes(Vec::new()),
            CdCell::TrueBit,
            CdCell::Null,
            b(&"c".repeat(1000)),
            b("dddddddddd"),
        ];
        let mut out = Vec::new();
        encode(&cells, Kind::Primary, &mut out);
        assert_eq!(hex(&out[..23]), "210a51401a0baaffffffff616161010300e803d007da07");
        assert_eq!(out.len(), 2033, "Record size = 2033");
    }

    #[test]
    fn unicode_compression_is_odd_or_utf16() {
        assert_eq!(unicode("GENJNL"), b"GENJNL\x10", "the Business Central record's value");
        assert_eq!(unicode("abc"), b"abc");
        assert_eq!(unicode(""), Vec::<u8>::new(), "empty stays empty (UTF-16 is not longer)");
        // Cyrillic quoted costs 3 bytes a character: UTF-16 is shorter.
        assert_eq!(unicode("Жж"), "Жж".encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<_>>());
        assert_eq!(unicode("é"), vec![0xE9], "U+00E9 through window 0 at U+0080");
    }
}
