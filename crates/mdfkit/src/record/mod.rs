//! Records in the FixedVar format (uncompressed rows of heaps, clustered and system tables).
//!
//! ```text
//!  +----+----+---------+-------------------+--------+-------------+--------+--------------------+-----------+-------------+
//!  | A  | B  | fixed   | fixed-length data | column | null bitmap | var    | var column end     | var data  | version tag |
//!  |    |    | end (2) |                   | count  | (count+7)/8 | count  | offsets (2 each)   |           | (14, opt.)  |
//!  +----+----+---------+-------------------+--------+-------------+--------+--------------------+-----------+-------------+
//!  0    1    2         4                   ^ fixed end
//! ```
//!
//! Status byte A: bits 1-3 the record type (0 primary, 1 forwarded, 2 forwarding stub, 3 index,
//! 4 blob fragment, 5 ghost index, 6 ghost data, 7 ghost version); 0x10 a null bitmap follows
//! the fixed part; 0x20 variable-length columns are present; 0x40 a 14-byte versioning tag ends
//! the record. Status byte B: 0x01 ghost forwarded record.
//!
//! Variable-length end offsets count from the start of the record; the top bit (0x8000) marks a
//! "complex" column whose bytes are a pointer (row-overflow or LOB root) rather than the value.
//! Trailing NULL variable-length columns are not stored at all, and columns added to a table
//! after a row was written are beyond the row's column count: both read as absent. A forwarded
//! record carries one extra complex variable-length column at its end: a 10-byte back pointer to
//! its forwarding stub (`00 04`, then page, file, slot), seen in the corpus' amigos.api backup.
//!
//! Index records (type 3, 5 a ghost: a nonclustered index's rows, a B-tree's non-leaf rows) have
//! status byte A only: no status byte B and no fixed-end field. Their fixed-length columns run
//! from byte 1 to the page header's `pminlen`, a non-leaf record's ending with its child page
//! (page 4, file 2); the null bitmap (only where a column is nullable) and the variable-length
//! part follow as above ([`Record::parse_index`]). Seen in the corpus: pubs' `titles.titleind`
//! leaf records `26 0200 1f00 2500 ...` (status 0x26, pminlen 1: no fixed part, two variable
//! columns), and Mark S. Rasmussen's DBCC PAGE dump of a nonclustered index record `36 01000000
//! 0300 00 0100 1000 4d61726b` (improve.dk, "Determining the Uniquifier Column Ordinal": an int key
//! at byte 1, a three-column null bitmap, one variable column); danny-sg/internals-viewer
//! (`IndexRecordLoader.cs`: the down page pointer is the last six bytes of the fixed part).
//!
//! The rows of ROW and PAGE compressed partitions are in the CD format instead
//! ([`crate::record::cd`]): a [`Record`] then wraps the parsed [`CdRecord`]
//! ([`Record::cd`]) and has no fixed part, null bitmap or variable-length columns of its own;
//! which format a partition's pages hold is its [`RecordFormat`].
//!
//! Sources: Paul Randal, "Inside the Storage Engine: Anatomy of a record"; Kalen Delaney,
//! "SQL Server Internals"; checked on every system table of the corpus files.

pub mod cd;
pub mod compression_info;

use crate::bytes::read_u16;
use crate::error::{Error, Result};
use cd::{CdRecord, CdRecordType};
use compression_info::CompressionInfo;

/// The record format of a partition's data pages, from `sys.partitions.data_compression`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecordFormat {
    /// Uncompressed (and vardecimal) rows.
    #[default]
    FixedVar,
    /// ROW and PAGE compressed rows (data_compression 1 and 2).
    Cd,
}

impl RecordFormat {
    /// The format of a partition with this `data_compression`; `None` for the columnstore ones
    /// (3, 4), which hold no rowstore records.
    pub fn of_compression(data_compression: u8) -> Option<Self> {
        match data_compression {
            0 => Some(RecordFormat::FixedVar),
            1 | 2 => Some(RecordFormat::Cd),
            _ => None,
        }
    }
}

/// The record type held in bits 1-3 of status byte A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// 0: a data record (heap or clustered index leaf).
    Primary,
    /// 1: a heap record moved to another page, pointed at by a forwarding stub.
    Forwarded,
    /// 2: what stays at a heap record's old place when it is forwarded: a pointer to its new place.
    ForwardingStub,
    /// 3: an index record (nonclustered index, B-tree interior level).
    Index,
    /// 4: a LOB or row-overflow fragment (text mix and text tree pages).
    BlobFragment,
    /// 5: a deleted index record not yet cleaned up.
    GhostIndex,
    /// 6: a deleted data record not yet cleaned up.
    GhostData,
    /// 7: a deleted record kept for row versioning.
    GhostVersion,
}

/// `expected EXPECTED, found a TYPE record` (the type as `Debug` spells it), as a static
/// message: a page of thousands of slots of another kind is refused without a string each.
macro_rules! found_instead {
    ($expected:literal, $found:expr) => {
        match $found {
            RecordType::Primary => concat!("expected ", $expected, ", found a Primary record"),
            RecordType::Forwarded => concat!("expected ", $expected, ", found a Forwarded record"),
            RecordType::ForwardingStub => concat!("expected ", $expected, ", found a ForwardingStub record"),
            RecordType::Index => concat!("expected ", $expected, ", found a Index record"),
            RecordType::BlobFragment => concat!("expected ", $expected, ", found a BlobFragment record"),
            RecordType::GhostIndex => concat!("expected ", $expected, ", found a GhostIndex record"),
            RecordType::GhostData => concat!("expected ", $expected, ", found a GhostData record"),
            RecordType::GhostVersion => concat!("expected ", $expected, ", found a GhostVersion record"),
        }
    };
}

impl RecordType {
    /// The type in bits 1-3 of status byte A.
    pub fn from_status(a: u8) -> Self {
        match (a >> 1) & 7 {
            0 => RecordType::Primary,
            1 => RecordType::Forwarded,
            2 => RecordType::ForwardingStub,
            3 => RecordType::Index,
            4 => RecordType::BlobFragment,
            5 => RecordType::GhostIndex,
            6 => RecordType::GhostData,
            _ => RecordType::GhostVersion,
        }
    }

    /// The record type a scan treats a CD record with this `header` byte as.
    pub fn from_cd_header(header: u8) -> Self {
        match CdRecordType::from_header(header) {
            CdRecordType::Primary => RecordType::Primary,
            CdRecordType::Forwarded | CdRecordType::GhostForwarded => RecordType::Forwarded,
            CdRecordType::ForwardingStub => RecordType::ForwardingStub,
            CdRecordType::GhostData => RecordType::GhostData,
            // A ghost without its row's data: counted, never returned.
            CdRecordType::GhostEmpty => RecordType::GhostVersion,
            CdRecordType::Index => RecordType::Index,
            CdRecordType::GhostIndex => RecordType::GhostIndex,
        }
    }

    /// A deleted record awaiting ghost cleanup (types 5, 6 and 7).
    pub fn is_ghost(self) -> bool {
        matches!(self, RecordType::GhostIndex | RecordType::GhostData | RecordType::GhostVersion)
    }
}

/// Status byte A: a null bitmap follows the fixed part.
pub const HAS_NULL_BITMAP: u8 = 0x10;
/// Status byte A: variable-length columns are present.
pub const HAS_VAR_COLUMNS: u8 = 0x20;
/// Status byte A: a 14-byte versioning tag ends the record.
pub const HAS_VERSION_TAG: u8 = 0x40;
/// Bytes of the versioning tag ending a record whose status byte A has [`HAS_VERSION_TAG`]: the
/// pointer to the row's previous version in the version store and the sequence number of the
/// transaction that wrote it (Microsoft, "Row versioning-based isolation levels").
pub const VERSION_TAG_SIZE: usize = 14;
/// Top bit of a variable-length end offset: the column's bytes are a pointer.
pub const COMPLEX_COLUMN: u16 = 0x8000;
/// A forwarded record's back pointer: tag 0x0400, then the stub's page (4), file (2), slot (2).
const BACK_POINTER_SIZE: usize = 10;
const BACK_POINTER_TAG: [u8; 2] = [0x00, 0x04];

/// A variable-length column's bytes, and whether they are a pointer to data stored elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarField<'a> {
    /// The stored bytes: the value, or a pointer when `complex`.
    pub bytes: &'a [u8],
    /// The column end offset's top bit (0x8000): the bytes are a row-overflow or LOB pointer.
    pub complex: bool,
}

/// A zero-copy view of one FixedVar data record, with every offset checked on parse.
///
/// Kept small (the counts are stored as the 2-byte fields they are read from, the null bitmap is
/// found from the fixed part's end): scans hold a page's worth of them.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    bytes: &'a [u8],
    /// Offset of the first variable-length end offset.
    var_table: usize,
    record_type: RecordType,
    /// Where the fixed-length columns start: 4 in a data record, 1 in an index record.
    fixed_start: u8,
    fixed_end: u16,
    /// Columns covered by the null bitmap (0: no bitmap), which follows the count at `fixed_end`.
    column_count: u16,
    /// Variable-length columns of the table stored in the record.
    var_count: u16,
    /// Entries in the variable-length offset table (one more than `var_count` for a forwarded
    /// record's back pointer).
    var_entries: u16,
    /// The record in the CD format, for rows of a compressed partition.
    cd: Option<&'a CdRecord<'a>>,
    /// The CI structure of the PAGE compressed page the CD record is on.
    compression_info: Option<&'a CompressionInfo<'a>>,
}

impl<'a> Record<'a> {
    /// Parses a data record (primary, forwarded or ghost data) starting at `b[0]`; `b` may run
    /// past the record's end (up to the page's slot array).
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        let status = *b.first().ok_or_else(|| Error::corrupt("empty record"))?;
        let record_type = RecordType::from_status(status);
        if !matches!(record_type, RecordType::Primary | RecordType::Forwarded | RecordType::GhostData) {
            return Err(Error::corrupt(found_instead!("a data record", record_type)));
        }
        let fixed_end = read_u16(b, 2).ok_or_else(|| Error::corrupt("record ends inside its 4-byte header"))?;
        if fixed_end < 4 {
            return Err(Error::corrupt(format!("record's fixed part ends at {fixed_end}, before its header does")));
        }
        Self::parse_rest(b, status, record_type, 4, fixed_end)
    }

    /// Parses an index record (type 3 or 5) starting at `b[0]`, whose fixed part (from byte 1)
    /// ends at `fixed_end`: the `pminlen` of its page. `b` may run past the record's end.
    pub fn parse_index(b: &'a [u8], fixed_end: u16) -> Result<Self> {
        let status = *b.first().ok_or_else(|| Error::corrupt("empty record"))?;
        let record_type = RecordType::from_status(status);
        if !matches!(record_type, RecordType::Index | RecordType::GhostIndex) {
            return Err(Error::corrupt(found_instead!("an index record", record_type)));
        }
        if fixed_end < 1 {
            return Err(Error::corrupt("the page's pminlen 0 leaves no room for an index record's status byte"));
        }
        if usize::from(fixed_end) > b.len() {
            return Err(Error::corrupt(format!("the fixed part (pminlen {fixed_end}) runs past the record's end")));
        }
        Self::parse_rest(b, status, record_type, 1, fixed_end)
    }

    /// The null bitmap and variable-length part after a fixed part ending at `fixed_end`.
    fn parse_rest(b: &'a [u8], status: u8, record_type: RecordType, fixed_start: u8, fixed_end: u16) -> Result<Self> {
        let mut at = usize::from(fixed_end);
        let column_count = if status & HAS_NULL_BITMAP != 0 {
            let count = read_u16(b, at)
                .ok_or_else(|| Error::corrupt(format!("column count at {at} is past the record's end")))?;
            let len = usize::from(count).div_ceil(8);
            if at + 2 + len > b.len() {
                return Err(Error::corrupt("null bitmap runs past the record's end"));
            }
            at += 2 + len;
            count
        } else {
            0
        };
        let (var_count, var_table, mut end) = if status & HAS_VAR_COLUMNS != 0 {
            let count =
                read_u16(b, at).ok_or_else(|| Error::corrupt("variable column count is past the record's end"))?;
            let table = at + 2;
            let table_end = table + 2 * usize::from(count);
            if table_end > b.len() {
                return Err(Error::corrupt(format!("{count} variable column offsets run past the record's end")));
            }
            let last = if count == 0 {
                table_end
            } else {
                (read_u16(b, table_end - 2).unwrap_or(0) & !COMPLEX_COLUMN) as usize
            };
            (count, table, last.max(table_end))
        } else {
            (0, at, at)
        };
        if status & HAS_VERSION_TAG != 0 {
            end += VERSION_TAG_SIZE;
        }
        if end > b.len() {
            return Err(Error::corrupt(format!("record claims {end} bytes, only {} are left in the page", b.len())));
        }
        let mut record = Record {
            bytes: &b[..end],
            var_table,
            record_type,
            fixed_start,
            fixed_end,
            column_count,
            var_count,
            var_entries: var_count,
            cd: None,
            compression_info: None,
        };
        // A forwarded record ends with a back pointer to its stub, stored as one more
        // (complex) variable-length column: it is not a column of the table.
        if record_type == RecordType::Forwarded && var_count > 0 {
            if let Some(last) = record.var(usize::from(var_count) - 1)? {
                if last.complex && last.bytes.len() == BACK_POINTER_SIZE && last.bytes[..2] == BACK_POINTER_TAG {
                    record.var_count -= 1;
                }
            }
        }
        Ok(record)
    }

    /// A row of a compressed partition: its values are read through [`Record::cd`] (against
    /// `compression_info`, the CI structure of its page, if it has one); as a FixedVar record it
    /// has no columns (no fixed part, every null bit set, no variable columns).
    pub fn from_cd(cd: &'a CdRecord<'a>, compression_info: Option<&'a CompressionInfo<'a>>) -> Self {
        let record_type = RecordType::from_cd_header(cd.bytes()[0]);
        Record {
            bytes: cd.bytes(),
            var_table: 0,
            record_type,
            fixed_start: 4,
            fixed_end: 4,
            column_count: 0,
            var_count: 0,
            var_entries: 0,
            cd: Some(cd),
            compression_info,
        }
    }

    /// The CI structure (anchor record, dictionary) of the page a CD record is on.
    #[inline]
    pub fn compression_info(&self) -> Option<&'a CompressionInfo<'a>> {
        self.compression_info
    }

    /// The CD format record of a row of a compressed partition.
    #[inline]
    pub fn cd(&self) -> Option<&'a CdRecord<'a>> {
        self.cd
    }

    /// The type in status byte A.
    pub fn record_type(&self) -> RecordType {
        self.record_type
    }

    /// The record's bytes, exactly as long as the record.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Where the fixed part ends: bytes `fixed_start..fixed_end` hold the fixed-length columns.
    #[inline]
    pub fn fixed_end(&self) -> usize {
        usize::from(self.fixed_end)
    }

    /// Where the fixed-length columns start: 4 in a data record, 1 in an index record.
    #[inline]
    pub fn fixed_start(&self) -> usize {
        usize::from(self.fixed_start)
    }

    /// A non-leaf index record's child page: the last six bytes of its fixed part (page 4, file
    /// 2); `None` for a data record or a fixed part too short.
    pub fn down_page(&self) -> Option<crate::geometry::PageId> {
        if !matches!(self.record_type, RecordType::Index | RecordType::GhostIndex) || self.cd.is_some() {
            return None;
        }
        let at = self.fixed_end().checked_sub(6).filter(|&at| at >= self.fixed_start())?;
        crate::geometry::PageId::from_bytes(self.bytes.get(at..at + 6)?)
    }

    /// The null bitmap: bit `n - 1` set when column `n` (1-based) is NULL, for the first
    /// [`Self::column_count`] columns.
    #[inline]
    pub fn null_bitmap(&self) -> &'a [u8] {
        let start = usize::from(self.fixed_end) + 2;
        let len = usize::from(self.column_count).div_ceil(8);
        self.bytes.get(start..start + len).unwrap_or_default()
    }

    /// Number of columns the record was written with (columns added later are not counted).
    #[inline]
    pub fn column_count(&self) -> usize {
        usize::from(self.column_count)
    }

    /// Number of variable-length columns stored (trailing NULL ones are not).
    pub fn var_column_count(&self) -> usize {
        usize::from(self.var_count)
    }

    /// Bytes `offset..offset + len` of the fixed part, or `None` when the record's fixed part is
    /// shorter (the column was added after the record was written).
    #[inline]
    pub fn fixed(&self, offset: usize, len: usize) -> Option<&'a [u8]> {
        let end = offset.checked_add(len)?;
        if offset < self.fixed_start() || end > usize::from(self.fixed_end) {
            return None;
        }
        self.bytes.get(offset..end)
    }

    /// Whether the 1-based null bit `bit` is set. Columns beyond the record's column count are
    /// reported as null: they did not exist when the record was written.
    #[inline]
    pub fn is_null(&self, bit: usize) -> bool {
        if bit == 0 {
            return false;
        }
        let i = bit - 1;
        if i >= usize::from(self.column_count) {
            return true;
        }
        self.null_bitmap().get(i / 8).is_some_and(|byte| byte & (1 << (i % 8)) != 0)
    }

    /// Where the variable-length column count is (`None`: the record has no variable part).
    pub fn var_count_offset(&self) -> Option<usize> {
        (self.bytes[0] & HAS_VAR_COLUMNS != 0).then(|| self.var_table - 2)
    }

    /// Entries in the variable-length offset table, a forwarded record's back pointer included.
    pub fn var_entry_count(&self) -> usize {
        usize::from(self.var_entries)
    }

    /// The `index`-th (0-based) variable-length column, or `None` when it is not stored.
    #[inline]
    pub fn var(&self, index: usize) -> Result<Option<VarField<'a>>> {
        if index >= usize::from(self.var_count) {
            return Ok(None);
        }
        self.var_entry(index).map(Some)
    }

    /// The bytes of entry `index` of the variable-length offset table (below
    /// [`Self::var_entry_count`]; a forwarded record's back pointer is the last), checked to lie in
    /// the record's variable data.
    pub fn var_entry(&self, index: usize) -> Result<VarField<'a>> {
        if index >= usize::from(self.var_entries) {
            return Err(Error::corrupt(format!("no variable column entry {index}")));
        }
        let entries = usize::from(self.var_entries);
        match var_span(self.bytes, self.var_table, entries, index, self.bytes.len()) {
            Some(VarSpan { start, end, complex }) => Ok(VarField { bytes: &self.bytes[start..end], complex }),
            None => {
                let data_start = self.var_table + 2 * entries;
                let end_of =
                    |i: usize| usize::from(read_u16(self.bytes, self.var_table + 2 * i).unwrap_or(0) & !COMPLEX_COLUMN);
                let start = if index == 0 { data_start } else { end_of(index - 1) };
                Err(Error::corrupt(format!(
                    "variable column {index} spans {start}..{}, outside the record's data {data_start}..{}",
                    end_of(index),
                    self.bytes.len()
                )))
            }
        }
    }

    /// Every entry of the variable-length offset table in order (a forwarded record's back
    /// pointer last), the table read once: each entry's bytes as [`Self::var_entry`] gives them,
    /// or `None` where it refuses them (they do not lie in the record's variable data).
    pub fn var_entries(&self) -> impl Iterator<Item = Option<VarField<'a>>> + 'a {
        let bytes = self.bytes;
        let data_start = self.var_table + 2 * usize::from(self.var_entries);
        // `parse_rest` checked that the table lies inside the record.
        let table = bytes.get(self.var_table..data_start).unwrap_or_default();
        let mut start = data_start;
        table.chunks_exact(2).map(move |entry| {
            let raw_end = u16::from_le_bytes([entry[0], entry[1]]);
            let field = var_span_ending(start, raw_end, data_start, bytes.len())
                .map(|span| VarField { bytes: &bytes[span.start..span.end], complex: span.complex });
            start = usize::from(raw_end & !COMPLEX_COLUMN);
            field
        })
    }
}

/// Where a variable-length column's bytes lie in its record, and whether they are a pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarSpan {
    /// Its first byte, from the record's start.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// The end offset's top bit: the bytes are a row-overflow or LOB pointer.
    pub complex: bool,
}

/// Entry `index` of the variable-length offset table at `var_table` (`entries` entries) of the
/// record starting at `b[0]`, `len` bytes long: `None` unless it lies in the record's variable
/// data (from the table's end to the record's end, not before the entry before it ends).
#[inline]
fn var_span(b: &[u8], var_table: usize, entries: usize, index: usize, len: usize) -> Option<VarSpan> {
    let data_start = var_table + 2 * entries;
    let start =
        if index == 0 { data_start } else { usize::from(read_u16(b, var_table + 2 * (index - 1))? & !COMPLEX_COLUMN) };
    var_span_ending(start, read_u16(b, var_table + 2 * index)?, data_start, len)
}

/// The span from `start` to the offset table entry `raw_end` (its complex bit aside): `None`
/// unless it lies in the record's variable data `data_start..len`, not ending before it starts.
#[inline]
fn var_span_ending(start: usize, raw_end: u16, data_start: usize, len: usize) -> Option<VarSpan> {
    let end = usize::from(raw_end & !COMPLEX_COLUMN);
    (start >= data_start && end >= start && end <= len).then_some(VarSpan {
        start,
        end,
        complex: raw_end & COMPLEX_COLUMN != 0,
    })
}

/// Where the parts of a primary data record lie, from its first byte: what [`Record::parse`]
/// works out for one, with the same checks ([`Record::primary_parts`]) but no [`Record`] and no
/// error message, for scans that read a page's records column by column and leave every other
/// record to [`Record::parse`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrimaryParts {
    /// Where the fixed part ends: the column count, then the null bitmap, follow.
    pub fixed_end: u16,
    /// Columns covered by the null bitmap (0: no bitmap).
    pub column_count: u16,
    /// Where the variable-length offset table starts.
    pub var_table: u16,
    /// Variable-length columns stored (the table's entries).
    pub var_count: u16,
    /// The record's length, its versioning tag included.
    pub len: u16,
}

impl PrimaryParts {
    /// Where the null bitmap starts.
    #[inline]
    pub fn null_bitmap(&self) -> usize {
        usize::from(self.fixed_end) + 2
    }

    /// The `index`-th (0-based) variable-length column of the record starting at `b[0]`, as
    /// [`Record::var`] finds it: `Some(None)` when not stored, `None` when its offsets are bad.
    #[inline]
    pub fn var(&self, b: &[u8], index: usize) -> Option<Option<VarSpan>> {
        let entries = usize::from(self.var_count);
        if index >= entries {
            return Some(None);
        }
        var_span(b, usize::from(self.var_table), entries, index, usize::from(self.len)).map(Some)
    }
}

impl Record<'_> {
    /// The parts of the primary record starting at `b[0]` (`b` may run past its end), when
    /// [`Record::parse`] would read it as one; `None` for any other record, one `parse` refuses,
    /// and one longer than 64 KiB (no page holds one).
    #[inline]
    pub fn primary_parts(b: &[u8]) -> Option<PrimaryParts> {
        let status = *b.first()?;
        if RecordType::from_status(status) != RecordType::Primary {
            return None;
        }
        let fixed_end = read_u16(b, 2)?;
        if fixed_end < 4 {
            return None;
        }
        let mut at = usize::from(fixed_end);
        let mut column_count = 0;
        if status & HAS_NULL_BITMAP != 0 {
            column_count = read_u16(b, at)?;
            at += 2 + usize::from(column_count).div_ceil(8);
        }
        let (var_count, var_table, mut end) = if status & HAS_VAR_COLUMNS != 0 {
            let count = read_u16(b, at)?;
            let table_end = at + 2 + 2 * usize::from(count);
            let last = if count == 0 { table_end } else { usize::from(read_u16(b, table_end - 2)? & !COMPLEX_COLUMN) };
            (count, at + 2, last.max(table_end))
        } else {
            (0, at, at)
        };
        if status & HAS_VERSION_TAG != 0 {
            end += VERSION_TAG_SIZE;
        }
        if end > b.len() {
            return None;
        }
        Some(PrimaryParts {
            fixed_end,
            column_count,
            var_table: u16::try_from(var_table).ok()?,
            var_count,
            len: u16::try_from(end).ok()?,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn refuses_other_record_types_by_their_name() {
        // Each type in bits 1-3 of status byte A, named as `Debug` spells it.
        for code in 0u8..8 {
            let t = RecordType::from_status(code << 1);
            let bytes = [code << 1, 0, 4, 0, 0, 0];
            let is_data = matches!(t, RecordType::Primary | RecordType::Forwarded | RecordType::GhostData);
            match Record::parse(&bytes) {
                Err(e) => assert_eq!(e.message(), format!("expected a data record, found a {t:?} record")),
                Ok(_) => assert!(is_data, "{t:?} read as a data record"),
            }
            let is_index = matches!(t, RecordType::Index | RecordType::GhostIndex);
            match Record::parse_index(&bytes, 1) {
                Err(e) if !is_index => {
                    assert_eq!(e.message(), format!("expected an index record, found a {t:?} record"))
                }
                other => assert!(is_index && other.is_ok(), "{t:?} as an index record: {:?}", other.err()),
            }
        }
    }

    /// Builds a primary record: fixed bytes, a null bitmap over `columns` and variable columns.
    pub(crate) fn build_record(fixed: &[u8], columns: u16, nulls: &[usize], vars: &[&[u8]]) -> Vec<u8> {
        let mut status = HAS_NULL_BITMAP;
        if !vars.is_empty() {
            status |= HAS_VAR_COLUMNS;
        }
        let mut r = vec![status, 0];
        r.extend_from_slice(&((4 + fixed.len()) as u16).to_le_bytes());
        r.extend_from_slice(fixed);
        r.extend_from_slice(&columns.to_le_bytes());
        let mut bitmap = vec![0u8; (columns as usize).div_ceil(8)];
        for &n in nulls {
            bitmap[(n - 1) / 8] |= 1 << ((n - 1) % 8);
        }
        r.extend_from_slice(&bitmap);
        if !vars.is_empty() {
            r.extend_from_slice(&(vars.len() as u16).to_le_bytes());
            let mut end = r.len() + 2 * vars.len();
            for v in vars {
                end += v.len();
                r.extend_from_slice(&(end as u16).to_le_bytes());
            }
            for v in vars {
                r.extend_from_slice(v);
            }
        }
        r
    }

    #[test]
    fn index_records_have_status_a_only_and_their_fixed_part_up_to_pminlen() {
        // improve.dk's DBCC PAGE dump of two nonclustered index leaf records (pminlen 5): ID = 1
        // at byte 1, three columns in the null bitmap, the variable columns "Mark" and, in the
        // second, the uniquifier 1.
        let first = [0x36, 1, 0, 0, 0, 3, 0, 0, 1, 0, 0x10, 0, b'M', b'a', b'r', b'k', 0xff];
        let r = Record::parse_index(&first, 5).unwrap();
        assert_eq!((r.record_type(), r.bytes().len(), r.column_count()), (RecordType::Index, 16, 3));
        assert_eq!(r.fixed(1, 4), Some(&[1, 0, 0, 0][..]));
        assert!(!r.is_null(1) && !r.is_null(2) && !r.is_null(3));
        assert_eq!((r.var_column_count(), r.var(0).unwrap().unwrap().bytes), (1, &b"Mark"[..]));
        assert_eq!(r.down_page(), None, "a leaf record's fixed part holds no child page");
        let second = [0x36, 1, 0, 0, 0, 3, 0, 0, 2, 0, 0x12, 0, 0x16, 0, b'M', b'a', b'r', b'k', 1, 0, 0, 0];
        let r = Record::parse_index(&second, 5).unwrap();
        assert_eq!(r.var(1).unwrap().unwrap().bytes, &[1, 0, 0, 0][..]);
        // pubs' titles.titleind, slot 0 of page 1:214 (pminlen 1): the title, then title_id.
        let mut titleind = vec![0x26, 2, 0, 0x1f, 0, 0x25, 0];
        titleind.extend_from_slice(b"But Is It User Friendly?PC1035");
        let r = Record::parse_index(&titleind, 1).unwrap();
        assert_eq!(r.var(0).unwrap().unwrap().bytes, b"But Is It User Friendly?");
        assert_eq!(r.var(1).unwrap().unwrap().bytes, b"PC1035");
        // A non-leaf record: an int key, then the child page 1:300 ending the fixed part.
        let node = [0x06, 7, 0, 0, 0, 0x2c, 1, 0, 0, 1, 0];
        assert_eq!(
            Record::parse_index(&node, 11).unwrap().down_page(),
            Some(crate::geometry::PageId { page: 300, file: 1 })
        );
        // Refused: a data record, no room for the status byte, a fixed part past the bytes.
        assert!(Record::parse_index(&[0x10, 0, 4, 0], 4).is_err());
        assert!(Record::parse_index(&node, 0).is_err());
        assert!(Record::parse_index(&node, 12).is_err());
    }

    #[test]
    fn reads_fixed_null_and_variable_parts() {
        let r = build_record(&[7, 0, 0, 0], 3, &[2], &[b"ab", b"", b"xyz"]);
        let mut padded = r.clone();
        padded.extend_from_slice(&[0xee; 20]);
        let rec = Record::parse(&padded).unwrap();
        assert_eq!(rec.bytes().len(), r.len());
        assert_eq!(rec.record_type(), RecordType::Primary);
        assert_eq!(rec.fixed(4, 4), Some(&[7, 0, 0, 0][..]));
        assert_eq!(rec.fixed(6, 4), None);
        assert!(!rec.is_null(1));
        assert!(rec.is_null(2));
        assert!(rec.is_null(4), "a column added after the record was written reads as null");
        assert_eq!(rec.var(0).unwrap().unwrap().bytes, b"ab");
        assert_eq!(rec.var(1).unwrap().unwrap().bytes, b"");
        assert_eq!(rec.var(2).unwrap().unwrap().bytes, b"xyz");
        assert_eq!(rec.var(3).unwrap(), None);
    }

    #[test]
    fn hides_the_back_pointer_of_a_forwarded_record() {
        let back = [0x00, 0x04, 0x24, 0x01, 0, 0, 1, 0, 0x63, 0];
        let mut r = build_record(&[], 2, &[2], &[b"ab", &back]);
        r[0] |= 1 << 1; // forwarded record
        let table = 4 + 2 + 1 + 2;
        r[table + 3] |= 0x80; // the back pointer is complex
        let rec = Record::parse(&r).unwrap();
        assert_eq!(rec.record_type(), RecordType::Forwarded);
        assert_eq!(rec.var(0).unwrap().unwrap().bytes, b"ab");
        assert_eq!(rec.var(1).unwrap(), None, "the back pointer is not a column");
    }

    #[test]
    fn flags_complex_columns() {
        let mut r = build_record(&[], 1, &[], &[b"ptr"]);
        let n = r.len();
        let at = n - 3 - 2;
        r[at + 1] |= 0x80;
        let rec = Record::parse(&r).unwrap();
        assert!(rec.var(0).unwrap().unwrap().complex);
    }

    #[test]
    fn rejects_truncated_and_inconsistent_records() {
        let r = build_record(&[1, 2, 3, 4], 2, &[], &[b"hello"]);
        for cut in 0..r.len() {
            assert!(Record::parse(&r[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = r.clone();
        bad[2] = 2; // fixed part ends inside the header
        assert!(Record::parse(&bad).is_err());
        let mut stub = r.clone();
        stub[0] = 2 << 1; // forwarding stub
        assert!(Record::parse(&stub).is_err());
        // a variable column whose end precedes its start
        let mut back = build_record(&[], 1, &[], &[b"ab", b"cd"]);
        let table = 4 + 2 + 1 + 2;
        back[table..table + 2].copy_from_slice(&100u16.to_le_bytes());
        back.resize(120, 0);
        let rec = Record::parse(&back).unwrap();
        assert!(rec.var(1).is_err());
    }

    #[test]
    fn var_entries_read_the_table_once_as_var_entry_reads_each_entry() {
        // A forwarded record: "ab", then its back pointer (complex), both entries of the table.
        let back = [0x00, 0x04, 0x24, 0x01, 0, 0, 1, 0, 0x63, 0];
        let mut forwarded = build_record(&[], 2, &[2], &[b"ab", &back]);
        forwarded[0] |= 1 << 1;
        let table = 4 + 2 + 1 + 2;
        forwarded[table + 3] |= 0x80;
        let rec = Record::parse(&forwarded).unwrap();
        let entries: Vec<_> = rec.var_entries().collect();
        let ab = VarField { bytes: &b"ab"[..], complex: false };
        assert_eq!(entries, [Some(ab), Some(VarField { bytes: &back[..], complex: true })]);
        // The first end offset past the record's data: the first entry is refused, the second
        // (from 100 back to its own end) too, the third starts where the second ends.
        let mut bad = build_record(&[], 1, &[], &[b"ab", b"cd", b"ef"]);
        bad[table..table + 2].copy_from_slice(&100u16.to_le_bytes());
        let rec = Record::parse(&bad).unwrap();
        let ef = VarField { bytes: &b"ef"[..], complex: false };
        assert_eq!(rec.var_entries().collect::<Vec<_>>(), [None, None, Some(ef)]);
        // And every one-byte change of a record: the same as `var_entry` entry by entry.
        let plain = build_record(&[1, 2, 3, 4], 4, &[2], &[b"ab", b"", b"xyz"]);
        for at in 0..plain.len() {
            for value in [0u8, 1, 0x0e, 0x10, 0x80, 0xff] {
                let mut b = plain.clone();
                b[at] = value;
                let Ok(rec) = Record::parse(&b) else { continue };
                let one_by_one: Vec<_> = (0..rec.var_entry_count()).map(|i| rec.var_entry(i).ok()).collect();
                assert_eq!(rec.var_entries().collect::<Vec<_>>(), one_by_one, "byte {at} set to {value}");
            }
        }
    }

    /// What [`Record::parse`] reads of `b` where it is a primary record, as `primary_parts`
    /// gives it: the fixed end, column count, length and every variable column.
    type Reading<'a> = (usize, usize, usize, Vec<Option<Option<(&'a [u8], bool)>>>);

    fn by_parse(b: &[u8]) -> Option<Reading<'_>> {
        let r = Record::parse(b).ok().filter(|r| r.record_type() == RecordType::Primary)?;
        let vars = (0..r.var_column_count() + 2).map(|i| r.var(i).ok().map(|v| v.map(|f| (f.bytes, f.complex))));
        Some((r.fixed_end(), r.column_count(), r.bytes().len(), vars.collect()))
    }

    fn by_parts(b: &[u8]) -> Option<Reading<'_>> {
        let p = Record::primary_parts(b)?;
        let vars = (0..usize::from(p.var_count) + 2)
            .map(|i| p.var(b, i).map(|v| v.map(|span| (&b[span.start..span.end], span.complex))));
        Some((usize::from(p.fixed_end), usize::from(p.column_count), usize::from(p.len), vars.collect()))
    }

    #[test]
    fn primary_parts_read_what_parse_reads_and_refuse_what_it_refuses() {
        let plain = build_record(&[1, 2, 3, 4, 5], 4, &[2], &[b"ab", b"", b"xyz"]);
        let no_vars = build_record(&7i32.to_le_bytes(), 1, &[], &[]);
        let mut complex = plain.clone();
        let last_offset = complex.len() - 5 - 2;
        complex[last_offset] |= 0x80; // the last column's end offset marks a pointer
        let mut tagged = plain.clone();
        tagged[0] |= HAS_VERSION_TAG;
        tagged.extend_from_slice(&[9; VERSION_TAG_SIZE]);
        let mut cases = vec![plain.clone(), no_vars, complex, tagged.clone()];
        // Every other record type, and every bad offset a single byte can make.
        for base in [&plain, &tagged] {
            for at in 0..base.len() {
                for value in [0u8, 1, 3, 0x0e, 0x10, 0x7f, 0x80, 0xff] {
                    let mut b = base.clone();
                    b[at] = value;
                    cases.push(b);
                }
            }
        }
        // Records cut short, and records followed by other bytes (a page's next record).
        for len in 0..plain.len() {
            cases.push(plain[..len].to_vec());
        }
        let mut padded = plain.clone();
        padded.extend_from_slice(&[0xee; 30]);
        cases.push(padded);
        let mut read = 0;
        for b in &cases {
            let parsed = by_parse(b);
            assert_eq!(by_parts(b), parsed, "{b:02x?}");
            read += usize::from(parsed.is_some());
        }
        assert!(read > 100 && read < cases.len(), "{read} of {} cases read", cases.len());
    }
}
