//! Records in the CD (column descriptor) format: the rows of ROW and PAGE compressed tables.
//!
//! ```text
//!  +--------+-----------+------------------+-----------------+----------------------+---------------------+---------+
//!  | header | column    | CD array         | cluster array   | short data region    | long data region    | version |
//!  | (1)    | count (1) | 4 bits a column, | 1 byte a full   | clusters of 30       | (header bit 0x20)   | tag     |
//!  |        |           | low nibble first | cluster: (n-1)/30| columns, in order   |                     | (14)    |
//!  +--------+-----------+------------------+-----------------+----------------------+---------------------+---------+
//!
//!  long data region:
//!  +-----------+-----------+--------------------------+----------------------+----------------------+
//!  | flags (1) | count (2) | end offsets (2 each;     | cluster array        | values, in column    |
//!  | 0x01: two-|           | 0x8000 marks a complex   | (n-1)/30 bytes       | order                |
//!  | byte ends |           | value: a LOB / overflow  |                      |                      |
//!  |           |           | pointer or back pointer) |                      |                      |
//!  +-----------+-----------+--------------------------+----------------------+----------------------+
//! ```
//!
//! Header: bit 0 (0x01) set for the CD format; bit 1 (0x02) a 14-byte versioning tag ends the
//! record; bits 2-4 the record type (0 primary, 1 ghost empty, 2 forwarding stub, 3 ghost data,
//! 4 forwarded, 5 ghost forwarded, 6 index, 7 ghost index); bit 5 (0x20) a long data region follows
//! the short data region.
//!
//! CD codes, one per column: 0 NULL, 1 empty (zero bytes: 0 for numbers, `''` for strings, false
//! for bit), 2-9 one to eight bytes in the short data region, 10 (0xA) long data (a value in the
//! long data region), 11 (0xB) a bit column that is true (no bytes), 12 (0xC) a PAGE compression
//! dictionary symbol: the entry's number, one byte in the short data region (danny-sg/
//! internals-viewer `CdDataRecordLoader.cs` gives the code a size of 1; rsleedbx/mssqlbak-tests
//! `docs/spec/04_ROWSTORE_COMPRESSED.md` §3.4 "1-byte index in short-data region"), resolved
//! against the page's CI structure in [`crate::page::compression_info`]. Codes 13-15 are never
//! written.
//!
//! Short data: the values of columns with codes 2-9 and 12, in column order, grouped in clusters of 30
//! columns. The cluster array gives the byte length of every cluster but the last (whose length
//! follows from its codes); this reader checks each against its codes.
//!
//! Index records (type 6, 7 a ghost) of a compressed index's non-leaf pages are CD records too:
//! the key columns, then one more column holding the child page's address (page 4 bytes, file
//! 2) as six bytes of short data (code 7), read by [`CdRecord::down_page`]. Source:
//! danny-sg/internals-viewer (`CdRecordLoader.cs`: "6 bytes post columns is the Down Page
//! Pointer", a six-byte short column past the index's columns; `CdIndexRecord.cs`).
//!
//! Long data: the flags byte (bit 0 two-byte end offsets, the only form seen; bit 1 complex values
//! present), the entry count, one end offset per entry counted from the first value (top bit: the
//! value is complex), a cluster array of (n-1)/30 bytes, then the values. Entry `i` belongs to the
//! `i`-th column with code 10. A forwarded record has one more, complex entry: the back pointer
//! to its forwarding stub.
//!
//! Sources: Microsoft, "Row Compression Implementation" (SQL Server documentation); Dmitri
//! Korotkevitch, "Pro SQL Server Internals", ch. 4 (the long data flags: bit 0 always set, two-byte
//! offsets; bit 1 complex columns present; its cluster array counts the long columns of each
//! cluster), whose DBCC PAGE dump of a 10-column row is a test in `values.rs`, as is one from
//! danny-sg/internals-viewer (`CdDataRecordLoaderTests.cs`); Mark S. Rasmussen's OrcaMDF
//! (`CompressedRecord.cs`, whose tests' records are unit tests here); StefanMaron's
//! BusinessCentral.AL.Runner (`tools/BakTableReader/RecordDecoding/CompressedRecord.cs`), which
//! found that the last cluster has no length entry (OrcaMDF lost it), checked here on its two real
//! records (the corpus' `fragments/bc-compressed-records`: 7 and 84 columns, three clusters with
//! lengths 50 and 50). The two-byte column count (first byte's top bit set, more than 127
//! columns) is read big endian by danny-sg/internals-viewer (`CdRecordLoader.cs`) and little
//! endian by OrcaMDF, and no record at hand has one: it is refused by name.

use std::ops::Range;

use crate::bytes::read_u16;
use crate::error::{Error, Result};
use crate::geometry::PAGE_SIZE;

/// Bytes of an index record's child page address: page (4), file (2).
const DOWN_PAGE_SIZE: usize = 6;
/// Columns per short-data (and long-data) cluster.
const CLUSTER_COLUMNS: usize = 30;
const VERSION_TAG_SIZE: usize = 14;

/// Header bit 0: the record is in the CD format (never set in a FixedVar record's status byte).
pub const HEADER_CD_FORMAT: u8 = 0x01;
/// Header bit 1: a 14-byte versioning tag ends the record.
pub const HEADER_VERSION_TAG: u8 = 0x02;
/// Header bit 5: a long data region follows the short data region.
pub const HEADER_LONG_DATA: u8 = 0x20;
const LONG_TWO_BYTE_OFFSETS: u8 = 0x01;
/// Top bit of a long data end offset: the value is complex (a LOB or row-overflow pointer, or a
/// forwarded record's back pointer).
pub const LONG_COMPLEX: u16 = 0x8000;

/// The record type in bits 2-4 of a CD record's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CdRecordType {
    /// 0: a data record.
    Primary,
    /// 1: a deleted record with no data left.
    GhostEmpty,
    /// 2: a heap record's forwarding stub.
    ForwardingStub,
    /// 3: a deleted data record not yet cleaned up.
    GhostData,
    /// 4: a heap record moved here from its forwarding stub.
    Forwarded,
    /// 5: a deleted forwarded record.
    GhostForwarded,
    /// 6: an index record.
    Index,
    /// 7: a deleted index record.
    GhostIndex,
}

impl CdRecordType {
    /// The type that bits 2-4 of `header`, a CD record's first byte, give.
    pub fn from_header(header: u8) -> Self {
        match (header >> 2) & 7 {
            0 => CdRecordType::Primary,
            1 => CdRecordType::GhostEmpty,
            2 => CdRecordType::ForwardingStub,
            3 => CdRecordType::GhostData,
            4 => CdRecordType::Forwarded,
            5 => CdRecordType::GhostForwarded,
            6 => CdRecordType::Index,
            _ => CdRecordType::GhostIndex,
        }
    }

    /// A deleted record awaiting ghost cleanup (types 1, 3, 5 and 7).
    pub fn is_ghost(self) -> bool {
        matches!(
            self,
            CdRecordType::GhostEmpty
                | CdRecordType::GhostData
                | CdRecordType::GhostForwarded
                | CdRecordType::GhostIndex
        )
    }
}

/// One column's 4-bit code in the CD array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CdCode {
    /// Code 0: NULL.
    Null,
    /// Zero bytes: 0, `''`, `0x`, a false bit.
    Empty,
    /// `n` (1-8) bytes in the short data region.
    Short(u8),
    /// A value in the long data region.
    Long,
    /// A bit column whose value is 1.
    TrueBit,
    /// A symbol of the page's dictionary (PAGE compression).
    PageSymbol,
}

impl CdCode {
    /// The code a 4-bit value of the CD array stands for (`None`: 13-15, never written).
    pub fn from_nibble(n: u8) -> Option<Self> {
        Some(match n {
            0 => CdCode::Null,
            1 => CdCode::Empty,
            2..=9 => CdCode::Short(n - 1),
            10 => CdCode::Long,
            11 => CdCode::TrueBit,
            12 => CdCode::PageSymbol,
            _ => return None,
        })
    }
}

/// One column's stored value in a CD record, still in its compressed storage form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CdValue<'a> {
    /// NULL (code 0).
    Null,
    /// A bit column's 1 (code 11), which stores no bytes.
    TrueBit,
    /// The value's bytes (empty for [`CdCode::Empty`]).
    Bytes(&'a [u8]),
    /// A long-data value flagged complex: an in-row LOB root, a row-overflow or LOB pointer,
    /// resolved by [`crate::lob`].
    Complex(&'a [u8]),
    /// The number of an entry of the page's dictionary (code 12), resolved by
    /// [`crate::page::compression_info::CompressionInfo::resolve`].
    Symbol(u8),
}

/// A column's stored value as a walk of the CD array finds it: what [`CdValue`] and [`CdCell`]
/// are made of, with no branch on its code (a column's codes vary from record to record: a bit
/// column's 1 and 0 are codes 11 and 1).
#[derive(Debug, Clone, Copy)]
struct Stored {
    /// The CD code, or [`CODE_COMPLEX`] for a complex long value.
    code: u8,
    /// Where its bytes lie in the bytes walked (a symbol's byte for code 12).
    start: usize,
    len: usize,
    /// The byte at `start`, when it is a symbol.
    symbol: u8,
}

/// [`Stored::code`] of a long value flagged complex (never a CD code).
const CODE_COMPLEX: u8 = 13;

impl Stored {
    /// The value in `b`, the bytes walked (an empty value where it runs past them: only in a
    /// record the walk then refuses).
    #[inline(always)]
    fn value(self, b: &[u8]) -> CdValue<'_> {
        let bytes = b.get(self.start..self.start + self.len).unwrap_or_default();
        match self.code {
            0 => CdValue::Null,
            11 => CdValue::TrueBit,
            CODE_PAGE_SYMBOL => CdValue::Symbol(self.symbol),
            CODE_COMPLEX => CdValue::Complex(bytes),
            _ => CdValue::Bytes(bytes),
        }
    }
}

/// A [`CdValue`] in 4 bytes: where it lies on its page rather than a slice of it. The low 16
/// bits are the value's page offset; the high 16 bits its length (below `CELL_COMPLEX`: a page
/// holds 8,192 bytes), its length with `CELL_COMPLEX` set for a complex value, `CELL_SYMBOL`
/// with a dictionary symbol's number, or `CELL_NULL` / `CELL_TRUE_BIT`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CdCell(u32);

/// [`CdCell`]'s high half for a complex value (its length below).
const CELL_COMPLEX: u32 = 0x4000;
/// [`CdCell`]'s high half for a dictionary symbol (its number below).
const CELL_SYMBOL: u32 = 0x8000;
/// [`CdCell`]'s high half for NULL.
const CELL_NULL: u32 = 0xc000;
/// [`CdCell`]'s high half for a true bit.
const CELL_TRUE_BIT: u32 = 0xc001;

impl CdCell {
    /// NULL.
    pub const NULL: CdCell = CdCell(CELL_NULL << 16);

    /// The cell of `stored`, a value of a record at page offset `at`: its high half from a table
    /// by code, not a branch.
    #[inline(always)]
    fn new(stored: Stored, at: usize) -> Self {
        const HIGH: [u32; 16] = {
            let mut high = [0; 16];
            high[0] = CELL_NULL;
            high[11] = CELL_TRUE_BIT;
            high[CODE_PAGE_SYMBOL as usize] = CELL_SYMBOL;
            high[CODE_COMPLEX as usize] = CELL_COMPLEX;
            high
        };
        // Codes 0 and 11 have no bytes: their length is 0. Within a page, offsets and lengths
        // are below 2^14: the casts keep them whole.
        let low = if stored.code == CODE_PAGE_SYMBOL { u32::from(stored.symbol) } else { stored.len as u32 & 0x3fff };
        CdCell((HIGH[usize::from(stored.code & 0x0f)] | low) << 16 | ((at + stored.start) as u32 & 0xffff))
    }

    /// NULL (code 0).
    #[inline(always)]
    pub fn is_null(self) -> bool {
        self.0 >> 16 == CELL_NULL
    }

    /// A bit column's 1 (code 11).
    #[inline(always)]
    pub fn is_true_bit(self) -> bool {
        self.0 >> 16 == CELL_TRUE_BIT
    }

    /// A complex value (an in-row LOB root, a row-overflow or LOB pointer).
    #[inline(always)]
    pub fn is_complex(self) -> bool {
        self.0 >> 30 == CELL_COMPLEX >> 14
    }

    /// Where a value of bytes lies on its page (`None`: NULL, a true bit, a complex value, a
    /// symbol).
    #[inline(always)]
    pub fn span(self) -> Option<Range<usize>> {
        let (high, start) = ((self.0 >> 16) as usize, (self.0 & 0xffff) as usize);
        (high < CELL_COMPLEX as usize).then_some(start..start + high)
    }

    /// A dictionary symbol's number.
    #[inline(always)]
    pub fn symbol(self) -> Option<u8> {
        (self.0 >> 24 == CELL_SYMBOL >> 8).then_some((self.0 >> 16) as u8)
    }

    /// The [`CdValue`] of the cell, on `page` (the page [`CdRecord::parse_cells`] read it from).
    pub fn value(self, page: &[u8]) -> CdValue<'_> {
        let high = self.0 >> 16;
        let start = (self.0 & 0xffff) as usize;
        let bytes = |len: u32| page.get(start..start + len as usize).unwrap_or_default();
        match high {
            CELL_NULL => CdValue::Null,
            CELL_TRUE_BIT => CdValue::TrueBit,
            _ if high < CELL_COMPLEX => CdValue::Bytes(bytes(high)),
            _ if high < CELL_SYMBOL => CdValue::Complex(bytes(high & 0x3fff)),
            _ => CdValue::Symbol(high as u8),
        }
    }
}

impl std::fmt::Debug for CdCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CdCell({:#010x})", self.0)
    }
}

/// A zero-copy view of one CD record, every offset and length checked on parse. It allocates
/// nothing: codes, cluster starts and long values are read from the record's own arrays, which
/// parse checked.
#[derive(Debug, Clone, Copy)]
pub struct CdRecord<'a> {
    bytes: &'a [u8],
    record_type: CdRecordType,
    columns: u8,
    /// Where the short data region's first cluster starts (after the cluster array).
    short_start: usize,
    /// The long data region's end offsets, and where its values start.
    long_ends: usize,
    long_data: usize,
    long_entries: usize,
}

/// Where the parts of a CD record lie, as offsets from its first byte (what the page anatomy
/// draws); parse checked every range to lie within the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdParts {
    /// The column count byte.
    pub column_count: usize,
    /// The 4-bit codes, two columns a byte (low nibble first).
    pub cd_array: Range<usize>,
    /// One byte a full cluster of 30 columns: the bytes of short data it holds.
    pub short_clusters: Range<usize>,
    /// The short data region's values, in column order.
    pub short_data: Range<usize>,
    /// The long data region, when the header announces one.
    pub long: Option<CdLongParts>,
    /// The 14-byte versioning tag ending the record.
    pub version_tag: Option<Range<usize>>,
}

/// Where the parts of a CD record's long data region lie, as offsets from the record's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdLongParts {
    /// The flags byte (bit 0 two-byte end offsets, bit 1 complex values present).
    pub flags: usize,
    /// The 2-byte entry count.
    pub count: Range<usize>,
    /// One 2-byte end offset an entry, counted from the first value (top bit: complex).
    pub ends: Range<usize>,
    /// One byte a full cluster of 30 columns: its long values' count.
    pub clusters: Range<usize>,
    /// The values, in entry order.
    pub data: Range<usize>,
}

/// The CD code of column `i` in the CD array starting at `b[CD_ARRAY]`, checked by parse.
#[inline]
fn nibble(b: &[u8], i: usize) -> u8 {
    let byte = b[CD_ARRAY + i / 2];
    if i.is_multiple_of(2) {
        byte & 0x0f
    } else {
        byte >> 4
    }
}

/// Offset of the CD array: after the header byte and the one-byte column count.
const CD_ARRAY: usize = 2;
const CODE_LONG: u8 = 10;

const CODE_PAGE_SYMBOL: u8 = 12;

/// Bytes in the short data region of a CD code: a dictionary symbol's number takes one.
#[inline]
fn short_len(code: u8) -> usize {
    // A table, not a branch: codes vary from one column to the next.
    const SHORT_LEN: [u8; 16] = [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 1, 0, 0, 0];
    usize::from(SHORT_LEN[usize::from(code & 0x0f)])
}

/// The error for the first column of the CD array of `b` (of `count` columns) whose code is
/// never written (13-15).
#[cold]
fn never_written(b: &[u8], count: usize) -> Error {
    let i = (0..count).find(|&i| nibble(b, i) > CODE_PAGE_SYMBOL).unwrap_or_default();
    Error::corrupt(format!("column {i} has CD code {}, which is never written", nibble(b, i)))
}

impl<'a> CdRecord<'a> {
    /// Parses a CD record starting at `b[0]`; `b` may run past the record's end (up to the page's
    /// slot array).
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        Self::parse_values(b, 0, &mut Vec::new())
    }

    /// [`Self::parse`], appending the stored values of the record's first `columns` columns
    /// (fewer when the record stores fewer) to `out` as [`Self::value`] gives them, in the same
    /// walk of the CD array ([`Self::parse_each`]). On an error, `out` holds some of them.
    pub fn parse_values(b: &'a [u8], columns: usize, out: &mut Vec<CdValue<'a>>) -> Result<Self> {
        let first = out.len();
        Self::parse_each(b, columns, |i, value| {
            // Long values come last: the short ones after them already made room.
            if out.len() <= first + i {
                out.resize(first + i + 1, CdValue::Null);
            }
            out[first + i] = value;
        })
    }

    /// [`Self::parse`], handing `put(i, value)` the stored value of each of the record's first
    /// `columns` columns (fewer when the record stores fewer) as [`Self::value`] gives it, once a
    /// column, in the same walk of the CD array: the short data region's values in column order
    /// (its clusters follow each other), then the long data region's once it is read. On an
    /// error, `put` has had some of them. Nothing is allocated: a caller puts each value where
    /// it wants it.
    #[inline]
    pub fn parse_each(b: &'a [u8], columns: usize, mut put: impl FnMut(usize, CdValue<'a>)) -> Result<Self> {
        Self::walk(b, columns, |i, stored| put(i, stored.value(b)))
    }

    /// [`Self::parse_each`] for the record at offset `at` of `page` (a page's bytes, at most
    /// [`PAGE_SIZE`]), handing `put(i, cell)` each value as a 4-byte [`CdCell`] that locates it
    /// on the page: the column-at-a-time path keeps a page's values this way (a sixth of a
    /// [`CdValue`]'s size) and reads them from the page when it converts a column.
    #[inline]
    pub fn parse_cells(page: &'a [u8], at: usize, columns: usize, mut put: impl FnMut(usize, CdCell)) -> Result<Self> {
        if page.len() > PAGE_SIZE {
            return Err(Error::unsupported(format!("{} bytes are more than a page: no cells", page.len())));
        }
        let b = page.get(at..).ok_or_else(|| Error::corrupt(format!("CD record at {at}, past the page")))?;
        Self::walk(b, columns, |i, stored| put(i, CdCell::new(stored, at)))
    }

    /// The walk of [`Self::parse_each`] and [`Self::parse_cells`]: `put` gets where each value
    /// lies in `b`.
    #[inline(always)]
    fn walk(b: &'a [u8], columns: usize, mut put: impl FnMut(usize, Stored)) -> Result<Self> {
        let header = *b.first().ok_or_else(|| Error::corrupt("empty CD record"))?;
        if header & HEADER_CD_FORMAT == 0 {
            return Err(Error::corrupt(format!("record header {header:#04x} is not in the CD format (bit 0 clear)")));
        }
        let record_type = CdRecordType::from_header(header);
        let count_byte = *b.get(1).ok_or_else(|| Error::corrupt("CD record's column count runs past the record"))?;
        if count_byte & 0x80 != 0 {
            return Err(Error::unsupported(
                "CD record with a two-byte column count (more than 127 columns): layout not confirmed, not read",
            ));
        }
        let count = usize::from(count_byte);
        let cd_end = CD_ARRAY + count.div_ceil(2);
        if cd_end > b.len() {
            return Err(Error::corrupt(format!(
                "CD array of {count} columns runs past the record ({} bytes)",
                b.len()
            )));
        }
        // Short data region: the cluster array, then each cluster's values. One walk of the CD
        // array checks every code, counts the long columns and sums each cluster's lengths.
        let full_clusters = count.saturating_sub(1) / CLUSTER_COLUMNS;
        let clusters_at = cd_end;
        let short_start = clusters_at + full_clusters;
        if short_start > b.len() {
            return Err(Error::corrupt(format!(
                "short data cluster array of {full_clusters} entries runs past the record"
            )));
        }
        let wanted = columns.min(count);
        let codes = &b[CD_ARRAY..cd_end];
        let (mut long_columns, mut at, mut highest) = (0, short_start, 0);
        // One cluster of 30 columns at a time: its values lie from `at` on, its length is
        // checked at its end.
        let mut cluster_first = 0;
        while cluster_first < count {
            let cluster_end = (cluster_first + CLUSTER_COLUMNS).min(count);
            let mut cluster_len = 0;
            let mut step = |i: usize, code: u8| {
                let len = short_len(code);
                // Long values are put once the long data region is read.
                if i < wanted && code != CODE_LONG {
                    // Out of range only in a record this walk then refuses (as are codes 13-15).
                    let short_at = at + cluster_len;
                    let symbol = b.get(short_at).copied().unwrap_or_default();
                    put(i, Stored { code, start: short_at, len, symbol });
                }
                highest = highest.max(code);
                long_columns += usize::from(code == CODE_LONG);
                cluster_len += len;
            };
            // A byte of the CD array at a time: two columns, the low nibble first (a cluster's
            // 30 columns start on a byte).
            for (k, &byte) in codes[cluster_first / 2..cluster_end.div_ceil(2)].iter().enumerate() {
                let i = cluster_first + 2 * k;
                step(i, byte & 0x0f);
                if i + 1 < cluster_end {
                    step(i + 1, byte >> 4);
                }
            }
            if highest > CODE_PAGE_SYMBOL {
                return Err(never_written(b, count));
            }
            let cluster = cluster_first / CLUSTER_COLUMNS;
            if cluster < full_clusters && usize::from(b[clusters_at + cluster]) != cluster_len {
                return Err(Error::corrupt(format!(
                    "short data cluster {cluster} holds {cluster_len} bytes by its CD codes, its cluster array says {}",
                    b[clusters_at + cluster]
                )));
            }
            at += cluster_len;
            cluster_first = cluster_end;
        }
        if at > b.len() {
            return Err(Error::corrupt(format!("short data region ends at {at}, past the record ({} bytes)", b.len())));
        }

        let (mut long_ends, mut long_data, mut long_entries) = (at, at, 0);
        if header & HEADER_LONG_DATA != 0 {
            let flags = *b.get(at).ok_or_else(|| Error::corrupt("long data region runs past the record"))?;
            if flags & LONG_TWO_BYTE_OFFSETS == 0 {
                return Err(Error::unsupported(format!(
                    "long data region with flags {flags:#04x} (one-byte offsets?): layout not confirmed, not read"
                )));
            }
            let entries = usize::from(
                read_u16(b, at + 1).ok_or_else(|| Error::corrupt("long data entry count runs past the record"))?,
            );
            let forwarded = matches!(record_type, CdRecordType::Forwarded | CdRecordType::GhostForwarded);
            // A forwarded record's back pointer is one more entry than its long columns.
            if entries != long_columns && !(forwarded && entries == long_columns + 1) {
                return Err(Error::corrupt(format!(
                    "long data region has {entries} entries for {long_columns} long columns"
                )));
            }
            let ends_at = at + 3;
            let data_start = ends_at + 2 * entries + full_clusters;
            if data_start > b.len() {
                return Err(Error::corrupt(format!(
                    "long data offsets of {entries} entries run past the record ({} bytes)",
                    b.len()
                )));
            }
            let mut start = data_start;
            for i in 0..entries {
                let raw = read_u16(b, ends_at + 2 * i).unwrap_or(0);
                let end = data_start + usize::from(raw & !LONG_COMPLEX);
                if end < start || end > b.len() {
                    return Err(Error::corrupt(format!(
                        "long data value {i} spans {start}..{end}, outside the record's {} bytes",
                        b.len()
                    )));
                }
                start = end;
            }
            (long_ends, long_data, long_entries) = (ends_at, data_start, entries);
            at = start;
            if long_columns > 0 {
                // The long columns' entries, in order (in range: checked just above).
                let (mut entry, mut start) = (0, 0);
                for i in 0..wanted {
                    if nibble(b, i) != CODE_LONG {
                        continue;
                    }
                    let raw = usize::from(read_u16(b, ends_at + 2 * entry).unwrap_or(0));
                    let end = raw & usize::from(!LONG_COMPLEX);
                    // In order: checked just above.
                    let value = (data_start + start, end.saturating_sub(start));
                    let code = if raw & usize::from(LONG_COMPLEX) != 0 { CODE_COMPLEX } else { CODE_LONG };
                    put(i, Stored { code, start: value.0, len: value.1, symbol: 0 });
                    (entry, start) = (entry + 1, end);
                }
            }
        } else if long_columns > 0 {
            return Err(Error::corrupt(format!("{long_columns} long columns but no long data region")));
        }
        if header & HEADER_VERSION_TAG != 0 {
            at += VERSION_TAG_SIZE;
            if at > b.len() {
                return Err(Error::corrupt("versioning tag runs past the record"));
            }
        }
        Ok(CdRecord {
            bytes: &b[..at],
            record_type,
            columns: count_byte,
            short_start,
            long_ends,
            long_data,
            long_entries,
        })
    }

    /// The type in bits 2-4 of the record header.
    pub fn record_type(&self) -> CdRecordType {
        self.record_type
    }

    /// The record's bytes, exactly as long as the record.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of columns the record stores (columns added later are not counted).
    pub fn column_count(&self) -> usize {
        usize::from(self.columns)
    }

    /// The CD code of column `index` (0-based), `None` past the record's columns.
    pub fn code(&self, index: usize) -> Option<CdCode> {
        (index < self.column_count()).then(|| CdCode::from_nibble(nibble(self.bytes, index))).flatten()
    }

    /// Where the `entry`-th value of the long data region lies in the record, and whether it is
    /// complex (`None` past its entries).
    pub fn long_entry(&self, entry: usize) -> Option<(Range<usize>, bool)> {
        if entry >= self.long_entries {
            return None;
        }
        let end_of = |k: usize| usize::from(read_u16(self.bytes, self.long_ends + 2 * k).unwrap_or(0));
        let start = if entry == 0 { 0 } else { end_of(entry - 1) & usize::from(!LONG_COMPLEX) };
        let raw = end_of(entry);
        let end = raw & usize::from(!LONG_COMPLEX);
        // In range and in order: parse checked every end offset.
        let range = self.long_data + start..self.long_data + end;
        self.bytes.get(range.clone())?;
        Some((range, raw & usize::from(LONG_COMPLEX) != 0))
    }

    /// Entries of the long data region: one a long column, and a forwarded record's back pointer.
    pub fn long_entry_count(&self) -> usize {
        self.long_entries
    }

    /// Where the parts of the record lie (see [`CdParts`]).
    pub fn parts(&self) -> CdParts {
        let count = self.column_count();
        let clusters_at = CD_ARRAY + count.div_ceil(2);
        let has_long = self.bytes[0] & HEADER_LONG_DATA != 0;
        let tag = if self.bytes[0] & HEADER_VERSION_TAG != 0 { VERSION_TAG_SIZE } else { 0 };
        let end = self.bytes.len() - tag;
        // Without a long data region, parse set its offsets to the short data's end.
        let short_end = if has_long { self.long_ends - 3 } else { self.long_ends };
        CdParts {
            column_count: 1,
            cd_array: CD_ARRAY..clusters_at,
            short_clusters: clusters_at..self.short_start,
            short_data: self.short_start..short_end,
            long: has_long.then(|| CdLongParts {
                flags: short_end,
                count: short_end + 1..short_end + 3,
                ends: self.long_ends..self.long_ends + 2 * self.long_entries,
                clusters: self.long_ends + 2 * self.long_entries..self.long_data,
                data: self.long_data..end,
            }),
            version_tag: (tag > 0).then_some(end..self.bytes.len()),
        }
    }

    /// Where the stored bytes of column `index` lie in the record: its short data (a dictionary
    /// symbol's byte) or its long data entry; `None` for a column that stores no bytes (NULL,
    /// empty, a true bit) or past the record's columns.
    pub fn stored_span(&self, index: usize) -> Option<Range<usize>> {
        match self.code(index)? {
            CdCode::Null | CdCode::TrueBit | CdCode::Empty => None,
            code @ (CdCode::Short(_) | CdCode::PageSymbol) => {
                let cluster = index / CLUSTER_COLUMNS;
                let clusters_at = self.short_start - (self.column_count().saturating_sub(1) / CLUSTER_COLUMNS);
                let cluster_start: usize = self.short_start
                    + self.bytes[clusters_at..clusters_at + cluster].iter().map(|&l| usize::from(l)).sum::<usize>();
                let before: usize = (cluster * CLUSTER_COLUMNS..index).map(|i| short_len(nibble(self.bytes, i))).sum();
                let start = cluster_start + before;
                let len = if let CdCode::Short(n) = code { usize::from(n) } else { 1 };
                // In range: parse summed every cluster's lengths within the record.
                self.bytes.get(start..start + len).map(|_| start..start + len)
            }
            CdCode::Long => {
                let entry = (0..index).filter(|&i| nibble(self.bytes, i) == CODE_LONG).count();
                self.long_entry(entry).map(|(range, _)| range)
            }
        }
    }

    /// [`Self::stored_span`] of every column that stores bytes, in one walk of the CD array
    /// (`stored_span` of each column in turn re-reads the codes before it): `put(i, span)` for
    /// the short data values in column order, then the long ones.
    pub fn for_each_stored_span(&self, mut put: impl FnMut(usize, Range<usize>)) {
        // The record's own bytes parsed once already: the walk finds what it found.
        let _ = Self::walk(self.bytes, self.column_count(), |i, stored| {
            if !matches!(stored.code, 0 | 1 | 11) {
                put(i, stored.start..stored.start + stored.len);
            }
        });
    }

    /// The stored value of column `index` (0-based, physical order), `None` past the record's
    /// columns (a column added after the row was written).
    pub fn value(&self, index: usize) -> Option<CdValue<'a>> {
        let code = self.code(index)?;
        Some(match code {
            CdCode::Null => CdValue::Null,
            CdCode::TrueBit => CdValue::TrueBit,
            CdCode::Empty => CdValue::Bytes(&[]),
            CdCode::Short(_) => CdValue::Bytes(self.bytes.get(self.stored_span(index)?)?),
            CdCode::PageSymbol => CdValue::Symbol(*self.bytes.get(self.stored_span(index)?.start)?),
            CdCode::Long => {
                let entry = (0..index).filter(|&i| nibble(self.bytes, i) == CODE_LONG).count();
                let (range, complex) = self.long_entry(entry)?;
                let bytes = self.bytes.get(range)?;
                if complex {
                    CdValue::Complex(bytes)
                } else {
                    CdValue::Bytes(bytes)
                }
            }
        })
    }

    /// Appends the stored values of the record's first `columns` columns (fewer when the record
    /// stores fewer) to `out`, as [`Self::parse_values`] does.
    pub fn values_into(&self, columns: usize, out: &mut Vec<CdValue<'a>>) {
        // The record's own bytes parsed once already.
        let _ = Self::parse_values(self.bytes, columns, out);
    }

    /// An index record's child page (on a non-leaf page of a compressed index): its last column,
    /// when that holds six bytes of short data; `None` for other records.
    pub fn down_page(&self) -> Option<crate::geometry::PageId> {
        if !matches!(self.record_type, CdRecordType::Index | CdRecordType::GhostIndex) {
            return None;
        }
        let last = self.column_count().checked_sub(1)?;
        match self.value(last)? {
            CdValue::Bytes(b) if b.len() == DOWN_PAGE_SIZE => crate::geometry::PageId::from_bytes(b),
            _ => None,
        }
    }

    /// A forwarded record's back pointer to its forwarding stub (the complex long entry after the
    /// long columns' entries).
    pub fn back_pointer(&self) -> Option<&'a [u8]> {
        let long_columns = (0..self.column_count()).filter(|&i| nibble(self.bytes, i) == CODE_LONG).count();
        self.long_entry(long_columns).and_then(|(range, _)| self.bytes.get(range))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::ErrorKind;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
    }

    /// The corpus' `fragments/bc-compressed-records/base_row.hex`: a PAGE compressed row of
    /// Business Central 28.1's "Code Setup" table (7 columns), from
    /// StefanMaron/BusinessCentral.AL.Runner `tools/BakTableReader.Tests/CompressedRecordTests.cs`.
    pub(crate) const BC_BASE_ROW: &str = "2107418a8a1a03fb8380b44f0181b6a880b44f0181b6a8010300100020003000dbd1420053d911f18e267ced8d9e40940000000000000000000000000000000100000000000000000000000000000001";

    /// The corpus' `fragments/bc-compressed-records/ext_row.hex`: the companion "Source Code
    /// Setup" row (84 columns, three short data clusters), same source.
    pub(crate) const BC_EXT_ROW: &str = "215441a6aa11aaa8aa8a88aa88aa1aaaaaaa8a8a8aaaaaaaaaa8aa8486aaaaaaaa6a88a8aaaaaaaaa8aaa88a323203fb8453414c455347454e4a4e4c104954454d4a4e4c5245534a4e4c1050524f4a4a4e4c56415453544d54434f4d5052474c46494e4348524744454c4554451042414e4b5245434346574b534810474c1043414a4f555210414c4c4f435452414255441046414a4e4c4641474c4a4e4c494e534a4e4c10434f4d5052464157484954454d1057485049434b1053455256494345013900090012001d0026002f00380041004c0057006000690072007b0084008d009600a100ac00b500c000cb00d400df00e800f100fc0007011001190124012f01380141014a0153015c01650170017b0184018f019801a301ae01b701c001c901d201db01e401ed01f80103020e02170222022b021216505552434841534553494e565450434f53544558434852415441444a10434c53494e434f4d45434f4e534f4c49441053414c45534a4e4c1050555243484a4e4c10434153485245434a4e4c105041594d454e544a4e4c1053414c45534150504c50555243484150504c434f4d505256415410434f4d505243555354434f4d505256454e44434f4d505252455310434f4d505250524f4a5245434c4153534a4e4c1050485953494e564a4e4c10434f4d505242414e4b434f4d5052434845434b1046494e564f494443484b1052454d494e4445521041444a4144444355525210494e544552434f4d50554e415050454d504c554e41505053414c455310554e415050505552434810524556455253414c10454d504c4150504c105041594d545245434f4e10474c435552524556414c10415353454d424c591050524f4a474c4a4e4c50524f4a474c57495047454e2d444546455253414c2d44454645525055522d4445464552434f4e53554d504a4e4c10504f494e4f55544a4e4c10464c555348494e4710434150414349544a4e4c1050524f444f5244455250524f44554354494f4e10434f4d50524d41494e5410434f4d5052494e53105452414e5346455210524556414c4a4e4c10494e565441444a4d54494e56545243505410494e56545348505410494e56544f52444552434f4d5052494255444710574850485953494e565410574852434c53534a4e4c1057485055544157415957484d4f56454d454e5410434f4d505257485345";

    fn bytes_of<'a>(v: Option<CdValue<'a>>) -> &'a [u8] {
        match v {
            Some(CdValue::Bytes(b)) => b,
            other => panic!("expected bytes, found {other:?}"),
        }
    }

    #[test]
    fn reads_the_business_central_base_row() {
        let raw = hex(BC_BASE_ROW);
        let mut padded = raw.clone();
        padded.extend_from_slice(&[0xee; 40]);
        let r = CdRecord::parse(&padded).unwrap();
        assert_eq!(r.bytes().len(), 80, "ends at the page's free data offset (176 - 96)");
        assert_eq!(r.record_type(), CdRecordType::Primary);
        assert_eq!(r.column_count(), 7);
        assert_eq!(r.code(0), Some(CdCode::Empty), "the empty primary key of a setup table");
        assert_eq!(r.code(2), Some(CdCode::Long));
        assert_eq!(bytes_of(r.value(2)).len(), 16, "SystemId, a GUID in the long data region");
        assert_eq!(r.code(3), Some(CdCode::Short(7)));
        assert_eq!(bytes_of(r.value(3)), bytes_of(r.value(5)), "created and modified at the same instant");
        assert_eq!(r.value(7), None);
    }

    #[test]
    fn reads_the_business_central_row_of_three_clusters() {
        let raw = hex(BC_EXT_ROW);
        let r = CdRecord::parse(&raw).unwrap();
        assert_eq!(r.bytes().len(), 867);
        assert_eq!(r.column_count(), 84);
        // The fragment README's expected values (SCSU text, ASCII here, with its trailing 0x10).
        for (column, text) in [
            (2, "SALES"),
            (3, "PURCHASES"),
            (4, "INVTPCOST"),
            (5, "EXCHRATADJ"),
            (10, "GENJNL"),
            (61, "PRODORDER"),
            (70, "REVALJNL"),
            (82, "COMPRWHSE"),
        ] {
            let stored = bytes_of(r.value(column));
            let stored = stored.strip_suffix(&[0x10]).unwrap_or(stored);
            assert_eq!(stored, text.as_bytes(), "column {column}");
        }
        assert_eq!(r.value(6), Some(CdValue::Bytes(&[])), "empty, not NULL");
        assert_eq!(r.value(7), Some(CdValue::Bytes(&[])), "empty, not NULL");
    }

    #[test]
    fn reads_orcamdf_single_column_records() {
        // OrcaMDF's IntegerCompressionTests / DateCompressionTests: header 01, one column, code,
        // value (the hex strings there carry filler bytes after the record).
        let (one, null, max) =
            (hex("01011281 00000000 10"), hex("01011084 00000000 a8"), hex("010119ff ffffffff ffffff"));
        let r = CdRecord::parse(&one).unwrap();
        assert_eq!(r.bytes(), &[0x01, 0x01, 0x12, 0x81]);
        assert_eq!(r.value(0), Some(CdValue::Bytes(&[0x81])));
        let r = CdRecord::parse(&null).unwrap();
        assert_eq!(r.value(0), Some(CdValue::Null), "NULL: code 0 (the high nibble is padding)");
        let r = CdRecord::parse(&max).unwrap();
        assert_eq!(r.value(0), Some(CdValue::Bytes(&[0xff; 8])));
    }

    #[test]
    fn reads_true_bits_complex_values_and_version_tags() {
        // header: long data + version tag; 3 columns: true bit, long (complex), 1 byte
        let mut r = vec![0x01 | 0x02 | 0x20, 3, 0xab, 0x02, 0x42, 0x03, 1, 0, 3, 0x80, 9, 9, 9];
        r.extend_from_slice(&[0x77; 14]);
        let rec = CdRecord::parse(&r).unwrap();
        assert_eq!(rec.value(0), Some(CdValue::TrueBit));
        assert_eq!(rec.value(1), Some(CdValue::Complex(&[9, 9, 9])));
        assert_eq!(rec.value(2), Some(CdValue::Bytes(&[0x42])));
        assert_eq!(rec.bytes().len(), r.len());
    }

    #[test]
    fn dictionary_symbols_take_one_byte_of_short_data() {
        // Columns: symbol 3, two bytes, symbol 0 (codes 12, 3, 12).
        let r = [0x01, 3, 0x3c, 0x0c, 3, 0xaa, 0xbb, 0];
        let rec = CdRecord::parse(&r).unwrap();
        assert_eq!(rec.bytes().len(), r.len());
        assert_eq!(rec.value(0), Some(CdValue::Symbol(3)));
        assert_eq!(rec.value(1), Some(CdValue::Bytes(&[0xaa, 0xbb])));
        assert_eq!(rec.value(2), Some(CdValue::Symbol(0)));
    }

    #[test]
    fn one_walk_gives_every_value_as_value_does() {
        let mut tagged = vec![0x01 | 0x02 | 0x20, 3, 0xab, 0x02, 0x42, 0x03, 1, 0, 3, 0x80, 9, 9, 9];
        tagged.extend_from_slice(&[0x77; 14]);
        let records = [hex(BC_BASE_ROW), hex(BC_EXT_ROW), tagged, vec![0x01, 3, 0x3c, 0x0c, 3, 0xaa, 0xbb, 0]];
        for raw in &records {
            let r = CdRecord::parse(raw).unwrap();
            let mut all = Vec::new();
            r.values_into(usize::MAX, &mut all);
            let one_by_one: Vec<CdValue> = (0..r.column_count()).map(|i| r.value(i).unwrap()).collect();
            assert_eq!(all, one_by_one);
            let mut first = Vec::new();
            r.values_into(2, &mut first);
            assert_eq!(first, one_by_one[..2]);
        }
    }

    /// Both Business Central records, a versioned one with a long value, one of every code.
    fn sample_records() -> [Vec<u8>; 5] {
        let mut tagged = vec![0x01 | 0x02 | 0x20, 3, 0xab, 0x02, 0x42, 0x03, 1, 0, 3, 0x80, 9, 9, 9];
        tagged.extend_from_slice(&[0x77; 14]);
        // Codes: NULL, empty, symbol 5, long (plain), 2 bytes.
        let mut mixed = vec![0x01 | 0x20, 5, 0x10, 0xac, 0x03, 0x05, 0xaa, 0xbb, 0x01, 1, 0, 2, 0, 7, 7];
        mixed.extend_from_slice(&[0xee; 4]);
        [hex(BC_BASE_ROW), hex(BC_EXT_ROW), tagged, mixed, vec![0x01, 3, 0x3c, 0x0c, 3, 0xaa, 0xbb, 0]]
    }

    #[test]
    fn one_walk_gives_every_span_as_stored_span_does() {
        let (mut stored, mut not_stored) = (0, 0);
        for raw in sample_records() {
            let r = CdRecord::parse(&raw).unwrap();
            let mut walked = vec![None; r.column_count()];
            r.for_each_stored_span(|i, span| {
                assert_eq!(walked[i], None, "column {i} put twice");
                walked[i] = Some(span);
            });
            let one_by_one: Vec<_> = (0..r.column_count()).map(|i| r.stored_span(i)).collect();
            assert_eq!(walked, one_by_one);
            stored += walked.iter().flatten().count();
            not_stored += walked.iter().filter(|s| s.is_none()).count();
        }
        assert!(stored > 80 && not_stored > 3, "{stored} stored, {not_stored} not");
    }

    #[test]
    fn cells_locate_every_value_on_the_page() {
        for raw in &sample_records() {
            for at in [96, PAGE_SIZE - raw.len()] {
                let mut page = vec![0x5a; at];
                page.extend_from_slice(raw);
                let mut cells = vec![None; raw[1] as usize];
                let r = CdRecord::parse_cells(&page, at, usize::MAX, |i, cell| cells[i] = Some(cell)).unwrap();
                assert_eq!(r.bytes(), CdRecord::parse(raw).unwrap().bytes());
                for (i, cell) in cells.iter().enumerate() {
                    let (cell, value) = (cell.unwrap(), r.value(i).unwrap());
                    assert_eq!(cell.value(&page), value, "column {i} at {at}");
                    assert_eq!(cell.is_null(), value == CdValue::Null);
                    assert_eq!(cell.is_true_bit(), value == CdValue::TrueBit);
                    assert_eq!(cell.is_complex(), matches!(value, CdValue::Complex(_)));
                    assert_eq!(cell.symbol(), if let CdValue::Symbol(n) = value { Some(n) } else { None });
                    match (cell.span(), value) {
                        (Some(span), CdValue::Bytes(b)) => assert_eq!(&page[span], b),
                        (None, CdValue::Bytes(_)) => panic!("column {i}: bytes without a span"),
                        (span, _) => assert_eq!(span, None),
                    }
                }
            }
        }
        let raw = hex(BC_BASE_ROW);
        let too_long = vec![0x01; PAGE_SIZE + 1];
        assert_eq!(CdRecord::parse_cells(&too_long, 0, 1, |_, _| {}).unwrap_err().kind(), ErrorKind::Unsupported);
        assert!(CdRecord::parse_cells(&raw, raw.len() + 1, 1, |_, _| {}).is_err(), "an offset past the page");
        assert!(CdRecord::parse_cells(&raw[..20], 0, 1, |_, _| {}).is_err(), "a record cut short");
        assert_eq!(CdCell::NULL.value(&raw), CdValue::Null);
    }

    #[test]
    fn index_records_end_with_their_child_page() {
        // Type 6 (header 0x19), two columns: a 2-byte key, the child page 1:300 (code 7, 6 bytes).
        let r = [0x19, 2, 0x73, 0x83, 0xe8, 0x2c, 0x01, 0, 0, 1, 0];
        let rec = CdRecord::parse(&r).unwrap();
        assert_eq!(rec.record_type(), CdRecordType::Index);
        assert_eq!(rec.bytes().len(), r.len());
        assert_eq!(rec.down_page(), Some(crate::geometry::PageId::new(1, 300)));
        let mut data = r;
        data[0] = 0x01;
        assert_eq!(CdRecord::parse(&data).unwrap().down_page(), None, "a data record has no child page");
        let five = [0x19, 2, 0x63, 0x83, 0xe8, 0x2c, 0x01, 0, 0, 1];
        assert_eq!(CdRecord::parse(&five).unwrap().down_page(), None, "five bytes are no page address");
    }

    #[test]
    fn malformed_records_are_errors_that_say_what_ran_past_what() {
        let raw = hex(BC_EXT_ROW);
        for cut in 0..raw.len() {
            assert!(CdRecord::parse(&raw[..cut]).is_err(), "cut at {cut}");
        }
        let message = |b: &[u8]| CdRecord::parse(b).unwrap_err().to_string();
        assert!(message(&[0x01, 4, 0x22]).contains("CD array of 4 columns runs past the record"));
        assert!(message(&[0x00, 1, 0x02]).contains("not in the CD format"));
        assert!(message(&[0x01, 1, 0x0d]).contains("CD code 13"));
        let mut wrong_cluster = raw.clone();
        wrong_cluster[44] = 0x31;
        assert!(message(&wrong_cluster).contains("cluster 0 holds 50 bytes"), "{}", message(&wrong_cluster));
        let mut long_past = hex(BC_BASE_ROW);
        long_past[30] = 0x40; // the last long value would end 16 bytes past the record
        assert!(message(&long_past).contains("long data value 2"));
        assert_eq!(CdRecord::parse(&[0x01, 0x81, 0]).unwrap_err().kind(), ErrorKind::Unsupported);
        assert!(message(&[0x01, 1, 0x0c]).contains("short data region ends at 4"), "a symbol's byte is missing");
    }
}
