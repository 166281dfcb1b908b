//! The compression information (CI) structure of a PAGE compressed data page: right after the
//! page header (offset 96), before the first record, on pages whose header type bits have 0x80
//! set.
//!
//! ```text
//!  +0  header (1)         0x02 an anchor record follows, 0x04 a dictionary follows
//!  +1  modification count (2)   changes since the page was compressed
//!  +3  with a dictionary: where the dictionary starts, from the CI's start (2);
//!      without: the CI's size (2)
//!  +5  with a dictionary only: the CI's size (2)
//!  +5 / +7  anchor record: a CD record, one column per table column, each the prefix that
//!           column's values on the page are stored against (NULL: no prefix)
//!  dictionary: entry count (2) | end offset of each entry, from the dictionary's start (2 each) |
//!              entries
//! ```
//!
//! Sources: danny-sg/internals-viewer (`CompressionInfoLoader.cs`, `DictionaryLoader.cs`: the
//! header bits, the fields, the anchor at +5 or +7, the dictionary's layout; `DataPage.cs`: header
//! type bit 0x80); rsleedbx/mssqlbak-tests `docs/spec/04_ROWSTORE_COMPRESSED.md` §3.6 (the same
//! layout checked against `DBCC PAGE`: `CI Header Flags = CI_HAS_ANCHOR_RECORD`,
//! `CompressionInfo size = 80`, an anchor record of 75 bytes at CI offset 5; only the headers 0x02
//! and 0x06 seen across SQL Server 2017-2025); Dmitri Korotkevitch, "Pro SQL Server Internals"
//! ch. 4 (header, PageModCount, offsets, anchor record in CD format, dictionary of count, offsets
//! and values).
//!
//! How a record's values use it, per column (resolved by [`CompressionInfo::resolve`]):
//!
//! ```text
//!  CD code 12 (symbol n)  -> the dictionary's entry n stands for the stored value, then:
//!  anchor value NULL            -> the stored value is the value (as on a ROW compressed page)
//!  anchor value A (bytes, possibly none: an int 0 is stored empty and is an anchor like any other):
//!    stored value empty (code 1)  -> the whole of A
//!    stored value L | suffix      -> A[..L] followed by suffix; L one byte (0-127)
//!    NULL, a true bit, a complex (LOB / overflow) value -> as stored, no prefix
//! ```
//!
//! Sources: danny-sg/internals-viewer `CdRecordField.cs` (`ExpandAnchor`: the first byte is the
//! length of the anchor prefix to take, the rest the suffix; a value with no bytes is the whole
//! anchor; a symbol's byte is the entry number); an empty anchor is an anchor (its values are
//! still `L | suffix`, L = 0): rsleedbx/mssqlbak-tests `docs/260623-2-rust-page-compress-fix.md`
//! found it on ContosoRetailDW's PAGE compressed facts (read as stored, a key stored `00` came
//! out -128), where internals-viewer skips empty anchors; their reader then matched SQL Server
//! on every cell of that backup (`docs/correctness_coverage_fixtures_realworld.md`); rsleedbx/mssqlbak-tests `docs/spec/04_ROWSTORE_COMPRESSED.md` §3.6 G1A
//! (checked against `DBCC PAGE` on real files: a column stored empty on a page with an anchor is
//! the anchor's value, not 0 / NULL; dictionary entries are `[prefix length][suffix]` against the
//! anchor, as stored values are); Microsoft, "Page Compression Implementation" (prefix
//! compression runs first, the dictionary then replaces repeated prefix-compressed values). A
//! prefix length byte with its top bit set announces a two-byte length, whose byte order the
//! sources disagree on (internals-viewer's versions read it either way) and no real page here
//! shows: it is refused by name rather than guessed.

use std::ops::Range;

use crate::bytes::read_u16;
use crate::error::{Error, Result};
use crate::geometry::{HEADER_SIZE, PAGE_SIZE};
use crate::record::cd::{CdCell, CdRecord, CdValue};

/// Type bit 0x80 of a page header: the page starts with a CI structure.
pub const PAGE_HAS_CI_STRUCTURE: u8 = 0x80;

/// Top bit of a prefix length byte: the length takes two bytes.
const TWO_BYTE_PREFIX_LENGTH: u8 = 0x80;

/// Header bit 0x02: an anchor record follows the header.
pub const HAS_ANCHOR: u8 = 0x02;
/// Header bit 0x04: a dictionary follows the anchor record.
pub const HAS_DICTIONARY: u8 = 0x04;
/// The header bits this reader knows; bit 0 set would make it a CD record, not a CI header.
const KNOWN_HEADER_BITS: u8 = HAS_ANCHOR | HAS_DICTIONARY;

/// A page's CI structure, every offset checked on parse.
#[derive(Debug, Clone)]
pub struct CompressionInfo<'a> {
    /// Changes to the page since it was compressed.
    pub modification_count: u16,
    /// Bytes the structure takes from offset 96 on: records start after it.
    pub size: usize,
    anchor: Option<CdRecord<'a>>,
    /// Each column's anchor value (`None`: NULL, the column has no prefix), read once for all
    /// the page's values.
    prefixes: Vec<Option<&'a [u8]>>,
    /// Each entry's bytes.
    dictionary: Vec<&'a [u8]>,
    /// The header byte.
    header: u8,
    /// Where the dictionary starts, from the structure's start.
    dictionary_at: Option<usize>,
}

/// Where the fields of a CI structure lie, as page offsets (what the page anatomy draws).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiParts {
    /// The header byte: 0x02 an anchor record follows, 0x04 a dictionary.
    pub header: Range<usize>,
    /// Changes to the page since it was compressed.
    pub modification_count: Range<usize>,
    /// Where the dictionary starts, from the structure's start (with a dictionary only).
    pub dictionary_offset: Option<Range<usize>>,
    /// Bytes the structure takes.
    pub size: Range<usize>,
    /// The anchor record, a CD record.
    pub anchor: Option<Range<usize>>,
    /// The dictionary's 2-byte entry count.
    pub dictionary_count: Option<Range<usize>>,
    /// One 2-byte end offset an entry, from the dictionary's start.
    pub dictionary_ends: Option<Range<usize>>,
    /// Each entry's bytes, in symbol order.
    pub dictionary_entries: Vec<Range<usize>>,
}

impl<'a> CompressionInfo<'a> {
    /// Parses the CI structure of `page` (a whole page, header included).
    pub fn parse(page: &'a [u8]) -> Result<Self> {
        let page = page.get(..PAGE_SIZE.min(page.len())).unwrap_or(page);
        let ci = page.get(HEADER_SIZE..).ok_or_else(|| Error::corrupt("page too short for a CI structure"))?;
        let bad = |what: String| Error::corrupt(format!("compression information structure: {what}"));
        let header = *ci.first().ok_or_else(|| bad("missing".into()))?;
        if header & !KNOWN_HEADER_BITS != 0 {
            return Err(bad(format!("header {header:#04x} has bits other than anchor (0x02) and dictionary (0x04)")));
        }
        let has_dictionary = header & HAS_DICTIONARY != 0;
        let field = |at: usize, name: &str| {
            read_u16(ci, at).map(usize::from).ok_or_else(|| bad(format!("{name} runs past the page")))
        };
        let modification_count = field(1, "modification count")? as u16;
        let (anchor_at, anchor_end, size) = if has_dictionary {
            let dictionary_at = field(3, "dictionary offset")?;
            (7, dictionary_at, field(5, "size")?)
        } else {
            let size = field(3, "size")?;
            (5, size, size)
        };
        // Records and the slot array follow; two bytes of slot array at least.
        let room = ci.len().saturating_sub(2);
        if size > room || anchor_end > size || anchor_end < anchor_at {
            return Err(bad(format!(
                "{size} bytes with the anchor ending at {anchor_end} (header {anchor_at} bytes), {room} bytes of room"
            )));
        }
        let anchor = if header & HAS_ANCHOR != 0 {
            let record = CdRecord::parse(&ci[anchor_at..anchor_end]).map_err(|e| bad(format!("anchor record: {e}")))?;
            Some(record)
        } else if anchor_end != anchor_at {
            return Err(bad(format!("no anchor record, yet {} bytes before the dictionary", anchor_end - anchor_at)));
        } else {
            None
        };
        let mut dictionary = Vec::new();
        if has_dictionary {
            let d = &ci[anchor_end..size];
            let count = usize::from(read_u16(d, 0).ok_or_else(|| bad("dictionary entry count runs past it".into()))?);
            let mut start = 2 + 2 * count;
            if start > d.len() {
                return Err(bad(format!("{count} dictionary entry offsets run past its {} bytes", d.len())));
            }
            dictionary.reserve(count);
            for i in 0..count {
                let end = usize::from(read_u16(d, 2 + 2 * i).unwrap_or(0));
                if end < start || end > d.len() {
                    return Err(bad(format!("dictionary entry {i} spans {start}..{end}, outside {}", d.len())));
                }
                dictionary.push(&d[start..end]);
                start = end;
            }
        }
        let prefixes = anchor.as_ref().map_or_else(Vec::new, |a| {
            (0..a.column_count())
                .map(|i| match a.value(i) {
                    Some(CdValue::Bytes(b)) => Some(b),
                    _ => None,
                })
                .collect()
        });
        let dictionary_at = has_dictionary.then_some(anchor_end);
        Ok(CompressionInfo { modification_count, size, anchor, prefixes, dictionary, header, dictionary_at })
    }

    /// The header byte (0x02 an anchor record follows, 0x04 a dictionary).
    pub fn header(&self) -> u8 {
        self.header
    }

    /// Where the structure's fields lie on the page (see [`CiParts`]).
    pub fn parts(&self) -> CiParts {
        let at = |offset: usize, len: usize| HEADER_SIZE + offset..HEADER_SIZE + offset + len;
        let anchor_at = if self.dictionary_at.is_some() { 7 } else { 5 };
        let anchor = self.anchor.as_ref().map(|a| at(anchor_at, a.bytes().len()));
        let mut entries = Vec::with_capacity(self.dictionary.len());
        if let Some(d) = self.dictionary_at {
            let mut start = d + 2 + 2 * self.dictionary.len();
            for e in &self.dictionary {
                entries.push(at(start, e.len()));
                start += e.len();
            }
        }
        CiParts {
            header: at(0, 1),
            modification_count: at(1, 2),
            dictionary_offset: self.dictionary_at.map(|_| at(3, 2)),
            size: if self.dictionary_at.is_some() { at(5, 2) } else { at(3, 2) },
            anchor,
            dictionary_count: self.dictionary_at.map(|d| at(d, 2)),
            dictionary_ends: self.dictionary_at.map(|d| at(d + 2, 2 * self.dictionary.len())),
            dictionary_entries: entries,
        }
    }

    /// The anchor record: each column's prefix.
    pub fn anchor(&self) -> Option<&CdRecord<'a>> {
        self.anchor.as_ref()
    }

    /// The dictionary's entries, in symbol order.
    pub fn dictionary(&self) -> &[&'a [u8]] {
        &self.dictionary
    }

    /// The anchor value of column `column` (0-based): the bytes its values on this page are
    /// stored against; `None` when they are stored as they are (a NULL anchor, no anchor
    /// record, or a column the anchor does not store).
    #[inline]
    pub fn prefix(&self, column: usize) -> Option<&'a [u8]> {
        self.prefixes.get(column).copied().flatten()
    }

    /// Column `column`'s share of the structure, for reading many of its values on this page.
    pub fn column(&self, column: usize) -> PageColumn<'_, 'a> {
        PageColumn::new(self.prefix(column), &self.dictionary)
    }

    /// Where the first record may start on the page.
    pub fn records_start(&self) -> usize {
        HEADER_SIZE + self.size
    }

    /// The value of column `column` (0-based) of a record on this page whose stored value is
    /// `stored`: dictionary symbol and anchor prefix resolved (see the module's drawing).
    #[inline]
    pub fn resolve(&self, column: usize, stored: CdValue<'a>) -> Result<PageValue<'a>> {
        let stored = match stored {
            CdValue::Symbol(n) => match self.dictionary.get(usize::from(n)) {
                Some(&entry) => CdValue::Bytes(entry),
                None => return Err(self.no_symbol(column, n)),
            },
            other => other,
        };
        let Some(anchor) = self.prefix(column) else {
            return Ok(PageValue::Stored(stored));
        };
        let CdValue::Bytes(bytes) = stored else { return Ok(PageValue::Stored(stored)) };
        let Some((&length, suffix)) = bytes.split_first() else { return Ok(PageValue::Stored(CdValue::Bytes(anchor))) };
        match anchor.get(..usize::from(length)) {
            Some(prefix) if length & TWO_BYTE_PREFIX_LENGTH == 0 => Ok(PageValue::Prefixed { prefix, suffix }),
            _ => Err(bad_prefix(column, length, anchor.len())),
        }
    }

    #[cold]
    fn no_symbol(&self, column: usize, n: u8) -> Error {
        Error::corrupt(format!(
            "column {column}: dictionary symbol {n} past the page's {} dictionary entries",
            self.dictionary.len()
        ))
    }
}

/// The error for an anchor prefix length byte `length` of column `column` whose anchor value
/// holds `anchor_len` bytes.
#[cold]
fn bad_prefix(column: usize, length: u8, anchor_len: usize) -> Error {
    if length & TWO_BYTE_PREFIX_LENGTH != 0 {
        return Error::unsupported(format!(
            "column {column}: a two-byte anchor prefix length (byte {length:#04x}): its layout is not confirmed, not read"
        ));
    }
    Error::corrupt(format!(
        "column {column}: anchor prefix of {length} bytes, longer than the anchor's {anchor_len} bytes"
    ))
}

/// One column's share of a page's CI structure, taken once for all its values on the page: its
/// anchor value, the anchor's first bytes read as big endian words, and the page's dictionary.
/// A value of at most 8 bytes once resolved (an integer, a short vardecimal) becomes one word,
/// with no bytes joined in between ([`Self::word`]).
#[derive(Debug, Clone, Copy)]
pub struct PageColumn<'c, 'a> {
    /// `None`: values are as stored (no CI structure, a NULL anchor).
    anchor: Option<&'a [u8]>,
    /// `prefix_words[l]`: the anchor's first `l` bytes read big endian (`l` up to 8 and the
    /// anchor's length).
    prefix_words: [u64; 9],
    dictionary: &'c [&'a [u8]],
}

impl<'c, 'a> PageColumn<'c, 'a> {
    /// A column of a page without a CI structure: values are as stored.
    pub const AS_STORED: PageColumn<'static, 'static> =
        PageColumn { anchor: None, prefix_words: [0; 9], dictionary: &[] };

    fn new(anchor: Option<&'a [u8]>, dictionary: &'c [&'a [u8]]) -> Self {
        let mut prefix_words = [0u64; 9];
        for (l, &byte) in anchor.unwrap_or_default().iter().take(8).enumerate() {
            prefix_words[l + 1] = prefix_words[l] << 8 | u64::from(byte);
        }
        PageColumn { anchor, prefix_words, dictionary }
    }

    /// The value stored as `stored`, its dictionary symbol and anchor prefix resolved (as
    /// [`CompressionInfo::resolve`] does), as the big endian reading of its bytes and their
    /// count, when they are at most 8. `None` for anything else (NULL, a true bit, a complex or
    /// longer value, a symbol or prefix that does not resolve): `resolve` reads those and names
    /// their errors.
    #[inline(always)]
    pub fn word(&self, stored: CdValue<'a>) -> Option<(u64, usize)> {
        match stored {
            CdValue::Bytes(bytes) => self.word_of(bytes),
            CdValue::Symbol(n) => self.word_of(self.dictionary.get(usize::from(n))?),
            _ => None,
        }
    }

    /// [`Self::word`] of the value that `cell` locates on `page` (the page's bytes). A value in
    /// the record is read with the page's 8 bytes that end where it ends (records start past the
    /// page header, so there are 8), its length masking the bytes before it off: one read, no
    /// branch on the length, which varies from value to value.
    #[inline(always)]
    pub fn word_at(&self, page: &[u8], cell: CdCell) -> Option<(u64, usize)> {
        let Some(span) = cell.span() else {
            return self.word_of(self.dictionary.get(usize::from(cell.symbol()?))?);
        };
        let Some(last8) = span.end.checked_sub(8).and_then(|from| page.get(from..span.end)) else {
            return self.word_of(page.get(span)?);
        };
        let last8 = u64::from_be_bytes(last8.try_into().ok()?);
        let first = page.get(span.start).copied().unwrap_or_default();
        // The last `k` (at most 8) bytes; none for 0 (a shift by 64 bits is none).
        self.word_from(span.len(), first, |k| last8 & u64::MAX.checked_shr(64 - 8 * k as u32).unwrap_or(0))
    }

    /// [`Self::word`] of a value stored as `bytes` (in the record or the dictionary).
    #[inline(always)]
    fn word_of(&self, bytes: &[u8]) -> Option<(u64, usize)> {
        let first = bytes.first().copied().unwrap_or_default();
        self.word_from(bytes.len(), first, |k| big_endian(&bytes[bytes.len() - k..]))
    }

    /// [`Self::word`] of a value stored as `len` bytes, the first `first`, whose last `k` bytes
    /// (`k` at most 8 and `len`) read big endian are `last(k)`.
    #[inline(always)]
    fn word_from(&self, len: usize, first: u8, last: impl Fn(usize) -> u64) -> Option<(u64, usize)> {
        let Some(anchor) = self.anchor else {
            return (len <= 8).then(|| (last(len), len));
        };
        // Stored empty: the whole anchor value.
        if len == 0 {
            return (anchor.len() <= 8).then(|| (self.prefix_words[anchor.len()], anchor.len()));
        }
        // The prefix length, then the suffix.
        let (length, suffix) = (usize::from(first), len - 1);
        // A length byte with its top bit set is over 8 too.
        if length + suffix > 8 || length > anchor.len() {
            return None;
        }
        // A suffix of 8 bytes has no prefix (and a shift by 64 bits is none).
        let prefix = self.prefix_words[length].checked_shl(8 * suffix as u32).unwrap_or(0);
        Some((prefix | last(suffix), length + suffix))
    }
}

/// `bytes` (at most 8) read big endian: two overlapping reads of their first and last bytes (the
/// bytes both hold land on the same bits), not a loop whose count varies from value to value.
#[inline]
fn big_endian(bytes: &[u8]) -> u64 {
    debug_assert!(bytes.len() <= 8);
    let n = bytes.len();
    match n {
        0 => 0,
        1 => u64::from(bytes[0]),
        2 | 3 => {
            let (first, last) = ([bytes[0], bytes[1]], [bytes[n - 2], bytes[n - 1]]);
            u64::from(u16::from_be_bytes(first)) << (8 * (n - 2)) | u64::from(u16::from_be_bytes(last))
        }
        _ => {
            let first = [bytes[0], bytes[1], bytes[2], bytes[3]];
            let last = [bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]];
            u64::from(u32::from_be_bytes(first)) << (8 * (n - 4)) | u64::from(u32::from_be_bytes(last))
        }
    }
}

/// A column's value on a page with a CI structure, still in its compressed storage form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageValue<'a> {
    /// Stored whole: in the record, in the dictionary, or the whole anchor value.
    Stored(CdValue<'a>),
    /// The first bytes of the anchor's value followed by the stored suffix.
    Prefixed {
        /// The anchor's bytes the value starts with.
        prefix: &'a [u8],
        /// The bytes after them.
        suffix: &'a [u8],
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// A page whose CI is `ci` (from offset 96).
    fn page_with(ci: &[u8]) -> Vec<u8> {
        let mut page = vec![0u8; PAGE_SIZE];
        page[HEADER_SIZE..HEADER_SIZE + ci.len()].copy_from_slice(ci);
        page
    }

    /// An anchor of two columns: 'ab' and NULL (CD codes 3 and 0).
    const ANCHOR: [u8; 5] = [0x01, 0x02, 0x03, b'a', b'b'];

    #[test]
    fn reads_an_anchor_only_structure() {
        let mut ci = vec![HAS_ANCHOR, 7, 0, 10, 0];
        ci.extend_from_slice(&ANCHOR);
        let page = page_with(&ci);
        let info = CompressionInfo::parse(&page).unwrap();
        assert_eq!(info.modification_count, 7);
        assert_eq!(info.size, 10);
        assert_eq!(info.records_start(), 106);
        let anchor = info.anchor().unwrap();
        assert_eq!(anchor.column_count(), 2);
        assert_eq!(anchor.value(0), Some(crate::record::cd::CdValue::Bytes(b"ab")));
        assert!(info.dictionary().is_empty());
    }

    #[test]
    fn reads_an_anchor_and_a_dictionary() {
        // Header 7 + anchor 5 = 12: the dictionary (two entries, "xyz" and "q") starts there.
        let mut ci = vec![HAS_ANCHOR | HAS_DICTIONARY, 0, 0, 12, 0, 22, 0];
        ci.extend_from_slice(&ANCHOR);
        ci.extend_from_slice(&[2, 0, 9, 0, 10, 0]);
        ci.extend_from_slice(b"xyzq");
        assert_eq!(ci.len(), 22);
        let page = page_with(&ci);
        let info = CompressionInfo::parse(&page).unwrap();
        assert_eq!(info.dictionary(), [&b"xyz"[..], &b"q"[..]]);
        assert_eq!(info.size, 22);
    }

    #[test]
    fn damaged_structures_are_corrupt_pages() {
        let corrupt = |ci: &[u8]| CompressionInfo::parse(&page_with(ci)).unwrap_err().kind() == ErrorKind::Corrupt;
        let mut good = vec![HAS_ANCHOR | HAS_DICTIONARY, 0, 0, 12, 0, 22, 0];
        good.extend_from_slice(&ANCHOR);
        good.extend_from_slice(&[2, 0, 9, 0, 10, 0]);
        good.extend_from_slice(b"xyzq");
        let mut unknown_bit = good.clone();
        unknown_bit[0] |= 0x01;
        assert!(corrupt(&unknown_bit), "bit 0 marks a CD record, not a CI header");
        let mut huge = good.clone();
        huge[5..7].copy_from_slice(&9000u16.to_le_bytes());
        assert!(corrupt(&huge), "a size past the page");
        let mut backwards = good.clone();
        backwards[3..5].copy_from_slice(&30u16.to_le_bytes());
        assert!(corrupt(&backwards), "a dictionary after the CI's end");
        let mut entry = good.clone();
        entry[12 + 2..12 + 4].copy_from_slice(&40u16.to_le_bytes());
        assert!(corrupt(&entry), "an entry past the dictionary");
        let mut count = good.clone();
        count[12..14].copy_from_slice(&600u16.to_le_bytes());
        assert!(corrupt(&count), "more offsets than the dictionary holds");
        let mut anchor = good;
        anchor[7 + 1] = 40;
        assert!(corrupt(&anchor), "an anchor whose CD array runs past it");
        for cut in 0..HEADER_SIZE + 3 {
            assert!(CompressionInfo::parse(&vec![HAS_ANCHOR; cut]).is_err(), "cut at {cut}");
        }
    }

    /// An anchor with a dictionary: anchor columns 'abc', NULL, empty (codes 4, 0, 1); entries
    /// [2]"x" and "zz".
    fn prefix_page() -> Vec<u8> {
        // Header 7 + anchor 7: the dictionary (count, two end offsets, 4 bytes) starts at 14.
        let mut ci = vec![HAS_ANCHOR | HAS_DICTIONARY, 0, 0, 14, 0, 24, 0];
        ci.extend_from_slice(&[0x01, 3, 0x04, 0x01, b'a', b'b', b'c']);
        ci.extend_from_slice(&[2, 0, 8, 0, 10, 0, 2, b'x', b'z', b'z']);
        assert_eq!(ci.len(), 24);
        page_with(&ci)
    }

    #[test]
    fn resolves_anchor_prefixes_and_dictionary_symbols() {
        let page = prefix_page();
        let info = CompressionInfo::parse(&page).unwrap();
        let prefixed = |prefix: &'static [u8], suffix: &'static [u8]| PageValue::Prefixed { prefix, suffix };
        let stored = |b: &'static [u8]| PageValue::Stored(CdValue::Bytes(b));
        let resolve = |column, value| info.resolve(column, value).unwrap();
        for length in 0..=3u8 {
            let value = [length, b'!'];
            assert_eq!(
                info.resolve(0, CdValue::Bytes(&value)).unwrap(),
                PageValue::Prefixed { prefix: &b"abc"[..usize::from(length)], suffix: b"!" },
                "prefix of {length} bytes"
            );
        }
        assert_eq!(resolve(0, CdValue::Bytes(&[])), stored(b"abc"), "stored empty: the whole anchor");
        assert_eq!(resolve(0, CdValue::Null), PageValue::Stored(CdValue::Null));
        assert_eq!(resolve(0, CdValue::Symbol(0)), prefixed(b"ab", b"x"), "entries are prefix-compressed too");
        assert_eq!(resolve(1, CdValue::Bytes(b"kept")), stored(b"kept"), "NULL anchor: as stored");
        assert_eq!(resolve(2, CdValue::Bytes(&[0, 0x81])), prefixed(b"", &[0x81]), "empty anchor: still L | suffix");
        assert_eq!(resolve(2, CdValue::Bytes(&[])), stored(b""), "empty anchor: stored empty is the anchor");
        assert!(info.resolve(2, CdValue::Bytes(&[1, 0x81])).is_err(), "a prefix longer than the empty anchor");
        assert_eq!(resolve(1, CdValue::Symbol(1)), stored(b"zz"));
        assert_eq!(resolve(5, CdValue::Bytes(&[9])), stored(&[9]), "a column the anchor does not store");
        assert_eq!(resolve(0, CdValue::Complex(&[1, 2])), PageValue::Stored(CdValue::Complex(&[1, 2])));
    }

    #[test]
    fn column_words_resolve_prefixes_and_symbols_once_a_page() {
        let page = prefix_page();
        let info = CompressionInfo::parse(&page).unwrap();
        let (abc, as_stored, empty) = (info.column(0), info.column(1), info.column(2));
        let word = |column: &PageColumn<'_, '_>, value| column.word(value);
        // 'a' 'b' 'c' = 0x61 0x62 0x63.
        assert_eq!(word(&abc, CdValue::Bytes(&[0, 0x21])), Some((0x21, 1)), "prefix length 0: the suffix alone");
        assert_eq!(word(&abc, CdValue::Bytes(&[2, 0x21])), Some((0x61_62_21, 3)));
        assert_eq!(word(&abc, CdValue::Bytes(&[3])), Some((0x61_62_63, 3)), "the whole anchor, no suffix");
        assert_eq!(word(&abc, CdValue::Bytes(&[])), Some((0x61_62_63, 3)), "stored empty: the whole anchor");
        assert_eq!(word(&abc, CdValue::Symbol(0)), Some((0x61_62_78, 3)), "entry 0 is [2]'x' against 'abc'");
        assert_eq!(word(&abc, CdValue::Bytes(&[3, 1, 2, 3, 4, 5])), Some((0x61_62_63_01_02_03_04_05, 8)));
        assert_eq!(word(&abc, CdValue::Bytes(&[0, 1, 2, 3, 4, 5, 6, 7, 8])), Some((0x01_02_03_04_05_06_07_08, 8)));
        assert_eq!(word(&abc, CdValue::Bytes(&[3, 1, 2, 3, 4, 5, 6])), None, "9 bytes: not one word");
        assert_eq!(word(&abc, CdValue::Bytes(&[4, 1])), None, "a prefix past the anchor: resolve's error");
        assert_eq!(word(&abc, CdValue::Bytes(&[0x80, 1])), None, "a two-byte length: resolve's refusal");
        assert_eq!(word(&abc, CdValue::Symbol(2)), None, "a symbol past the dictionary");
        assert_eq!(word(&abc, CdValue::Null), None, "NULL against an anchor stays NULL");
        assert_eq!(word(&abc, CdValue::TrueBit), None);
        assert_eq!(word(&as_stored, CdValue::Bytes(&[0x81, 0x02])), Some((0x81_02, 2)), "NULL anchor: as stored");
        assert_eq!(word(&as_stored, CdValue::Symbol(1)), Some((0x7a_7a, 2)), "entry 1, 'zz', as stored");
        assert_eq!(word(&empty, CdValue::Bytes(&[0, 0x81])), Some((0x81, 1)), "empty anchor: still L | suffix");
        assert_eq!(word(&empty, CdValue::Bytes(&[])), Some((0, 0)), "empty anchor, stored empty");
        assert_eq!(word(&info.column(9), CdValue::Bytes(&[7])), Some((7, 1)), "a column the anchor lacks");
        assert_eq!(PageColumn::AS_STORED.word(CdValue::Bytes(&[1, 2, 3])), Some((0x01_02_03, 3)), "no CI");
        assert_eq!(PageColumn::AS_STORED.word(CdValue::Symbol(0)), None, "no CI: no dictionary");
        let bytes = [0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xf8];
        for n in 0..=8 {
            let one_by_one = bytes[..n].iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
            assert_eq!(big_endian(&bytes[..n]), one_by_one, "{n} bytes");
        }
        // Every value that makes one word is what resolve gives, read big endian.
        let values: [&[u8]; 6] = [&[], &[0], &[1, 9], &[3, 9, 9], &[2, 1, 2, 3, 4, 5, 6], &[0x80]];
        for column in 0..3 {
            let stored = values.iter().map(|&b| CdValue::Bytes(b)).chain([CdValue::Symbol(0), CdValue::Symbol(1)]);
            for value in stored {
                let Some((word, n)) = info.column(column).word(value) else { continue };
                let bytes: Vec<u8> = match info.resolve(column, value).unwrap() {
                    PageValue::Stored(CdValue::Bytes(b)) => b.to_vec(),
                    PageValue::Prefixed { prefix, suffix } => [prefix, suffix].concat(),
                    other => panic!("{other:?}"),
                };
                let one_by_one = bytes.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
                assert_eq!((one_by_one, bytes.len()), (word, n), "column {column}, {value:?}");
            }
        }
    }

    #[test]
    fn words_of_cells_on_a_page_are_the_words_of_their_values() {
        let page = prefix_page();
        let info = CompressionInfo::parse(&page).unwrap();
        // A CD record of 8 columns: values of 0, 1, 2, 3, 7 and 1 bytes (codes 1, 2, 3, 4, 8, 2),
        // then symbols 0 and 1 (code 12).
        let mut record = vec![0x01, 8, 0x21, 0x43, 0x28, 0xcc];
        record.extend_from_slice(&[0, 1, 9, 3, 9, 9, 2, 1, 2, 3, 4, 5, 6, 0x80, 0, 1]);
        // At the buffer's start, the first values have fewer than 8 bytes before their end.
        for at in [0, 200] {
            let mut buffer = vec![0xa5; at];
            buffer.extend_from_slice(&record);
            let mut cells = Vec::new();
            CdRecord::parse_cells(&buffer, at, usize::MAX, |_, cell| cells.push(cell)).unwrap();
            assert_eq!(cells.len(), 8);
            for column in [0, 1, 2, 9] {
                let share = info.column(column);
                for &cell in &cells {
                    let value = cell.value(&buffer);
                    assert_eq!(share.word_at(&buffer, cell), share.word(value), "column {column}, {value:?} at {at}");
                }
            }
            assert_eq!(PageColumn::AS_STORED.word_at(&buffer, cells[4]), Some((0x02_01_02_03_04_05_06, 7)));
            assert_eq!(PageColumn::AS_STORED.word_at(&buffer, cells[6]), None, "no CI: no dictionary");
        }
    }

    #[test]
    fn bad_references_are_damage_and_two_byte_lengths_are_refused() {
        let page = prefix_page();
        let info = CompressionInfo::parse(&page).unwrap();
        let err = info.resolve(0, CdValue::Bytes(&[4, b'!'])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert!(err.to_string().contains("anchor prefix of 4 bytes, longer than the anchor's 3"), "{err}");
        let err = info.resolve(1, CdValue::Symbol(2)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt);
        assert!(err.to_string().contains("dictionary symbol 2 past the page's 2 dictionary entries"), "{err}");
        assert_eq!(info.resolve(0, CdValue::Bytes(&[0x80, 1, 2])).unwrap_err().kind(), ErrorKind::Unsupported);
    }
}
