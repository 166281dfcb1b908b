//! Page anatomy: every field of a page and of each of its records, with its offset, length, name,
//! meaning and decoded value. It backs `mdfkit page` (printed the way `DBCC PAGE (db, file, page,
//! 3)` prints a page) and the studio's page and record views.
//!
//! ```text
//!  0         96                                         free_data       8192 - 2n      8192
//!  +---------+------------------------------------------+---------------+-------------+
//!  | header  | record | record | ...                    | free space    | slot array  |
//!  +---------+------------------------------------------+---------------+-------------+
//!
//!  a FixedVar data record, each part one field (offsets from the record's start):
//!  +----------+----------+-----------+--------------------+-------+--------+-------+---------+------+---------+
//!  | status A | status B | fixed end | fixed columns,     | col   | null   | var   | var end | var  | version |
//!  | (1)      | (1)      | (2)       | one field a column | count | bitmap | count | offsets | cols | tag (14)|
//!  +----------+----------+-----------+--------------------+-------+--------+-------+---------+------+---------+
//!
//!  a forwarding stub:  | status (1) | page (4) | file (2) | slot (2) |
//!
//!  a PAGE compressed page: | header | CI structure | records ... (CD format)
//!  CI structure: | header | PageModCount | (dictionary offset) | size | anchor record | dictionary |
//!  a CD record: | header | column count | CD array | short clusters | short data | long data | version tag |
//! ```
//!
//! This module holds no format knowledge of its own: the header fields are those of
//! [`crate::page`] (whose documentation gives the layout and its sources; the DBCC PAGE names
//! `m_type`, `m_slotCnt`... are those Paul Randal's "Anatomy of a page" shows; the few fields
//! [`PageHeader`] does not keep are read at the offsets that table gives, the LSN as a
//! [`crate::backup::Lsn`], the 6-byte xdes id shown as `(last 2 bytes:first 4 bytes)`), the record parts
//! come from [`crate::record::Record`]'s parse, the verdict from [`crate::page::protection`], the
//! column values from [`crate::rows::RowDecoder`] and stubs from [`crate::scan::forwarding_target`].
//! Records in the CD format (ROW and PAGE compressed rows; header bit 0x01, never set in a
//! FixedVar status byte) are taken apart where [`crate::record::cd::CdRecord::parts`] and
//! [`crate::record::cd::CdRecord::stored_span`] say their parts lie, a page's CI structure where
//! [`crate::page::compression_info::CompressionInfo::parts`] says (its anchor record taken apart
//! as a CD record).
//! Index records (a nonclustered index's pages, a clustered index's non-leaf pages), CD or
//! FixedVar ([`crate::record::Record::parse_index`]: status A, the fixed part up to the page's
//! `pminlen`, a non-leaf record's ending with its child page), are decoded with the index's
//! columns as [`crate::index_rows`] says which they are. Records it does not take apart (LOB
//! fragments) are shown whole and named, from their slot offset to the next record's start.
//!
//! Allocation pages (GAM, SGAM, IAM, PFS) also get their bitmap ([`PageAnatomy::allocation`]),
//! read by [`crate::page::allocation`]. [`PageAnatomy::to_json`] is the one JSON spelling of it
//! all, for the CLI, the studio and Python.
//!
//! Every offset is checked: a damaged page gives an anatomy with the damage named in it, never a
//! panic, and every field lies inside the page. A page's records are taken apart into one list
//! of fields and one of decoded columns (each record holds a range of each, and text is spelled
//! when shown), at most [`MAX_FIELDS`] fields a page: a page of thousands of slots costs a few
//! allocations, not a few a record.

use std::borrow::Cow;
use std::ops::Range;

use crate::backup::Lsn;
use crate::bytes::{read_u16, read_u32};
use crate::catalog::model::TableInfo;
use crate::catalog::owners::UnitOwner;
use crate::catalog::rowset::ColumnLocation;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::page::allocation::{ExtentMap, PfsByte, PfsMap};
use crate::page::compression_info::{CompressionInfo, HAS_ANCHOR, HAS_DICTIONARY, PAGE_HAS_CI_STRUCTURE};
use crate::page::protection::{self, Verdict};
use crate::page::{slot_offsets, Page, PageHeader, PageId, PageType, HEADER_SIZE, PAGE_SIZE};
use crate::record::cd::{
    CdCode, CdRecord, CdRecordType, CdValue, HEADER_CD_FORMAT, HEADER_LONG_DATA, HEADER_VERSION_TAG, LONG_COMPLEX,
};
use crate::record::{
    Record, RecordFormat, RecordType, COMPLEX_COLUMN, HAS_NULL_BITMAP, HAS_VAR_COLUMNS, HAS_VERSION_TAG,
    VERSION_TAG_SIZE,
};
use crate::rows::RowDecoder;
use crate::scan::forwarding_target;
use crate::source::PageSource;
use crate::value::Value;

/// What a span of bytes is, for colouring and for a reader of the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A field of the 96-byte page header.
    Header,
    /// Status byte A (record type in bits 1-3, then which optional parts follow) or B.
    Status,
    /// The 2-byte offset, from the record's start, where the fixed-length part ends.
    FixedEnd,
    /// The bytes of one fixed-length column.
    FixedColumn,
    /// Fixed-part bytes no stored column claims (dropped columns).
    FixedUnused,
    /// The 2-byte count of columns the record was written with.
    ColumnCount,
    /// One bit a column, `(count + 7) / 8` bytes; a set bit: the column is NULL.
    NullBitmap,
    /// The 2-byte count of variable-length columns stored.
    VarCount,
    /// One variable-length column's 2-byte end offset from the record's start (top bit 0x8000:
    /// its bytes are a pointer).
    VarOffset,
    /// The bytes of one variable-length column.
    VarColumn,
    /// A variable-length column holding a pointer: LOB root, row-overflow or back pointer.
    Pointer,
    /// The 14-byte row versioning tag that status bit 0x40 announces, ending the record.
    VersionTag,
    /// A record this module does not take apart, shown whole.
    Undecoded,
    /// The unused bytes between the last record (the header's `m_freeData`) and the slot array.
    FreeSpace,
    /// One 2-byte slot array entry: its record's page offset. Slot 0 is the page's last two
    /// bytes; the array grows towards the records.
    SlotArray,
    /// A field of a PAGE compressed page's CI structure header (flags, PageModCount, offsets).
    CiHeader,
    /// A byte of a CD record's column descriptor array: two columns' 4-bit codes.
    CdArray,
    /// A byte of a CD record's short or long data cluster array (one a full cluster of 30
    /// columns).
    ClusterArray,
    /// The dictionary of a PAGE compressed page: its entry count, end offsets and entries.
    Dictionary,
}

impl Part {
    /// The part's name in the JSON (and, after `p-`, the CSS class the studio colours it by).
    pub fn name(self) -> &'static str {
        match self {
            Part::Header => "header",
            Part::Status => "status",
            Part::FixedEnd => "fixed-end",
            Part::FixedColumn => "fixed-column",
            Part::FixedUnused => "fixed-unused",
            Part::ColumnCount => "column-count",
            Part::NullBitmap => "null-bitmap",
            Part::VarCount => "var-count",
            Part::VarOffset => "var-offset",
            Part::VarColumn => "var-column",
            Part::Pointer => "pointer",
            Part::VersionTag => "version-tag",
            Part::Undecoded => "undecoded",
            Part::FreeSpace => "free-space",
            Part::SlotArray => "slot-array",
            Part::CiHeader => "ci-header",
            Part::CdArray => "cd-array",
            Part::ClusterArray => "cluster-array",
            Part::Dictionary => "dictionary",
        }
    }
}

/// One field: `len` bytes at page offset `offset`. Its name and value are kept as numbers and
/// kinds, spelled only when shown ([`PageAnatomy::field_name`], [`PageAnatomy::field_value`]):
/// taking a page of thousands of slots apart allocates no text per field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Offset from the page's first byte.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
    /// What kind of bytes these are.
    pub part: Part,
    /// The field's name: the DBCC PAGE name for header fields (`m_type`), else `status A`,
    /// `slot 3`, a column's name...
    pub name: FieldName,
    /// What the field holds, in words (with the meaning of its bits where it has some).
    pub meaning: &'static str,
    /// The decoded value.
    pub value: FieldValue,
}

/// A field's name, spelled by [`PageAnatomy::field_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldName {
    /// A name that does not vary (`m_type`, `status A`, `null bitmap`...).
    Fixed(&'static str),
    /// `slot n`: one slot array entry.
    Slot(u16),
    /// `INDEX_RECORD record`: a record shown whole.
    Record(RecordType),
    /// `variable end n` (1-based): one entry of the variable-length offset table.
    VariableEnd(usize),
    /// `variable column n` (1-based): a variable-length column no declared column claims.
    VariableColumn(usize),
    /// The bytes of one column: its index in [`PageAnatomy::columns`].
    Column(usize),
    /// The byte bit columns share: a run of [`PageAnatomy::fixed_columns`] (indexes in
    /// [`PageAnatomy::columns`]), names joined by `, `.
    Columns(Range<usize>),
    /// `what n`: one of a numbered run (`column 3` of a CD record read without a layout,
    /// `short cluster 1`, `long end 2`, `dictionary entry 0`...).
    Numbered(&'static str, usize),
}

/// A field's value, spelled by [`PageAnatomy::field_value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue {
    /// No value shown.
    Empty,
    /// A number, in decimal.
    Number(i64),
    /// Flag bits, in hex (`0x200`).
    Flags(u64),
    /// One byte, in two hex digits (`0x01`).
    Byte(u8),
    /// The header's type byte and its name: `1 (data)`.
    PageType(u8, PageType),
    /// A page address: `1:153`.
    Page(PageId),
    /// A row's address: `1:153 slot 2`.
    Row(PageId, u16),
    /// A log sequence number: `(vlf:block:slot)`.
    Lsn(Lsn),
    /// A transaction id: `(last 2 bytes:first 4 bytes)`.
    Xdes(u16, u32),
    /// The checksum or torn bits, signed then in hex: `-1 (0xffffffff)`.
    TornBits(u32),
    /// A slot's record offset, in decimal and hex: `96 (0x60)`.
    SlotOffset(u16),
    /// Status byte A: its hex value, record type and the bits naming what follows.
    Status(u8),
    /// A variable-length offset table entry: its end offset, and whether the column is complex.
    VariableEnd(u16),
    /// The field's bytes in hex: `0x0AFF00`.
    Hex,
    /// The field's bytes as bits, last byte first, a space between bytes (a null bitmap).
    Bits,
    /// The decoded value of a column: its index in the record's columns
    /// ([`PageAnatomy::record_columns`]; nothing when it could not be decoded).
    Column(usize),
    /// A CD record's header byte: its hex value, record type and the bits naming what follows.
    CdHeader(u8),
    /// A byte of the CD array: the codes of column `first` (0-based) and, when `pair`, of the
    /// next one, each named (`NULL`, `empty`, `2 bytes`, `long`, `bit 1`, `symbol`).
    CdCodes {
        /// The column of the byte's low nibble, from 0.
        first: usize,
        /// The high nibble is a column's too (not padding after the last one).
        pair: bool,
    },
    /// A long data end offset: the end, and whether the value is complex (top bit 0x8000).
    LongEnd(u16),
    /// A CI structure's header byte and the parts it announces.
    CiHeader(u8),
}

/// A column of the row layout the page's records were decoded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnLayout {
    /// The column's name, from the catalog.
    pub name: String,
    /// The SQL type as T-SQL spells it.
    pub type_name: String,
    /// `fixed at 4` or `variable 2` (1-based, as the offset table counts).
    pub storage: String,
    /// The column's 1-based null bit (0: none).
    pub null_bit: u16,
}

/// One column of a decoded record ([`PageAnatomy::record_columns`]); its name, type and storage are
/// those of the same index in [`PageAnatomy::columns`].
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnAnatomy {
    /// The record's null bitmap marks the column NULL.
    pub is_null: bool,
    /// The page offset and length of the column's stored bytes (`None`: NULL or not stored).
    pub span: Option<(usize, usize)>,
    /// The stored bytes are a pointer to the value elsewhere.
    pub off_row: bool,
    /// The records an off-row value's pointer links to (page, slot): its LOB root or fragments,
    /// or its row-overflow parts.
    pub links: Vec<(PageId, u16)>,
    /// The decoded value (its `Display` spells it as SQL Server prints it), or why it could not
    /// be decoded (not naming the column: it is shown beside it; a fixed text is not copied).
    pub value: std::result::Result<Value, Cow<'static, str>>,
}

/// One slot and the record it points at. Its fields and columns are ranges of the page's lists
/// ([`PageAnatomy::record_fields`], [`PageAnatomy::record_columns`]): a page of thousands of
/// records is taken apart into two lists, not two a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordAnatomy {
    /// The slot number, from 0 as DBCC PAGE counts.
    pub slot: u16,
    /// Page offset of the record (0: a deleted slot, no record).
    pub offset: usize,
    /// Bytes the record takes.
    pub len: usize,
    /// The record type in bits 1-3 of status byte A (`None`: a deleted slot, or one pointing
    /// outside the record area).
    pub record_type: Option<RecordType>,
    /// The parts of the record, in order, covering its `len` bytes exactly: a range of
    /// [`PageAnatomy::fields`].
    pub fields: Range<usize>,
    /// The table's columns, as [`PageAnatomy::columns`] lists them (empty when the page's owner
    /// is unknown or the record is not a row): a range of [`PageAnatomy::column_values`].
    pub columns: Range<usize>,
    /// For a forwarding stub: the row it points at.
    pub forwarded_to: Option<(PageId, u16)>,
    /// Why the record could not be taken apart.
    pub error: Option<RecordError>,
}

/// Why a slot's record could not be taken apart; [`PageAnatomy::record_error`] spells it as
/// `mdfkit page` and the JSON show it. Kept as what it is, spelled when shown, and owning no text
/// (a parser's message is in [`PageAnatomy::damage`]): a page of thousands of deleted or damaged
/// slots allocates, and frees, nothing a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// The slot's offset is 0: its record was deleted.
    DeletedSlot,
    /// The slot's offset lies outside the record area, between the page header and the slot
    /// array (which starts at `array_start`).
    OutsideRecordArea {
        /// The slot's record offset.
        offset: usize,
        /// Where the slot array starts.
        array_start: usize,
    },
    /// With this record the page's records would hold more than [`MAX_FIELDS`] fields or decoded
    /// columns: only records that overlap each other (damage) take so many, and this one is not
    /// taken apart.
    TooManyFields,
    /// What the record's parser found wrong with its bytes: the text is entry `n` of
    /// [`PageAnatomy::damage`].
    Damaged(usize),
}

/// Most fields (and decoded columns) the records of one page are taken apart into before a
/// record is refused. Records that do not overlap hold at most about one field a byte (an empty
/// variable-length column is a field of no bytes after its 2-byte end offset), so a page holds
/// fewer than [`PAGE_SIZE`]; damaged slots pointing into each other's records could make
/// thousands of records of thousands of fields each (gigabytes). Twice a page's worth leaves a
/// margin over any sound page and keeps a damaged one's lists near a megabyte each.
pub const MAX_FIELDS: usize = 2 * PAGE_SIZE;

/// A page taken apart.
#[derive(Debug, Clone)]
pub struct PageAnatomy {
    /// The page asked for (the header may name another one: see `error`).
    pub id: PageId,
    /// What the page's checksum or torn-page bits say of its bytes.
    pub verdict: Verdict,
    /// `None` when the bytes do not hold a page header naming this page (unformatted, damaged).
    pub header: Option<PageHeader>,
    /// Why the page could not be taken apart further than its bytes.
    pub error: Option<String>,
    /// The header's fields in offset order (empty when the bytes hold no page header).
    pub header_fields: Vec<Field>,
    /// The row layout the records were decoded with (empty: not decoded).
    pub columns: Vec<ColumnLayout>,
    /// The layout's fixed-length columns (their indexes in `columns`) by offset, then length: the
    /// bit columns sharing a byte are a run of it ([`FieldName::Columns`]).
    pub fixed_columns: Vec<usize>,
    /// One entry a slot, in slot order.
    pub records: Vec<RecordAnatomy>,
    /// The fields of every record, record after record ([`PageAnatomy::record_fields`]).
    pub fields: Vec<Field>,
    /// The decoded columns of every record, record after record
    /// ([`PageAnatomy::record_columns`]).
    pub column_values: Vec<ColumnAnatomy>,
    /// The free space between the records and the slot array (offset, length), from the header.
    pub free_space: Option<(usize, usize)>,
    /// The object owning the page, as `schema.table`, when the catalog says: the table for its
    /// data pages and for the pages of its indexes, LOB and row-overflow data alike.
    pub owner: Option<String>,
    /// The allocation unit owning the page, with its index, partition and kind
    /// ([`crate::catalog::Catalog::owners`]), when the catalog says.
    pub owner_unit: Option<UnitOwner>,
    /// The fields of a PAGE compressed page's CI structure, in offset order (its header, its
    /// anchor record taken apart as a CD record, its dictionary); empty when the page has none.
    pub compression_info: Vec<Field>,
    /// What the parsers found wrong with the damaged records' bytes, one entry a
    /// [`RecordError::Damaged`].
    pub damage: Vec<Cow<'static, str>>,
    /// The page's 8,192 bytes (torn-page bits restored).
    pub bytes: Box<[u8]>,
}

impl PageAnatomy {
    /// The verdict as `mdfkit pages` spells it.
    pub fn verdict_text(&self) -> String {
        match self.verdict {
            Verdict::ChecksumOk | Verdict::TornBitsRestored => "ok".into(),
            Verdict::Unprotected => "unprotected".into(),
            Verdict::ChecksumMismatch { stored, computed } => {
                format!("checksum mismatch: page says {stored:#010x}, its bytes give {computed:#010x}")
            }
            Verdict::Torn { sector } => format!("torn (sector {sector})"),
        }
    }

    /// Why record `r` of this page could not be taken apart, spelled (`None`: it was).
    pub fn record_error(&self, r: &RecordAnatomy) -> Option<Cow<'_, str>> {
        Some(match r.error? {
            RecordError::DeletedSlot => "deleted slot".into(),
            RecordError::OutsideRecordArea { offset, array_start } => {
                format!("slot points at offset {offset}, outside the record area {HEADER_SIZE}..{array_start}").into()
            }
            RecordError::TooManyFields => format!(
                "not taken apart: with it the page's records would hold more than {MAX_FIELDS} fields or columns (records overlap)"
            )
            .into(),
            RecordError::Damaged(n) => self.damage.get(n).map_or("damaged", |text| text.as_ref()).into(),
        })
    }

    /// The parts of record `r` of this page, in order, covering its bytes.
    pub fn record_fields(&self, r: &RecordAnatomy) -> &[Field] {
        self.fields.get(r.fields.clone()).unwrap_or_default()
    }

    /// The decoded columns of record `r` of this page, as [`PageAnatomy::columns`] lists them
    /// (empty when the record was not decoded).
    pub fn record_columns(&self, r: &RecordAnatomy) -> &[ColumnAnatomy] {
        self.column_values.get(r.columns.clone()).unwrap_or_default()
    }

    /// The slot array, one field a slot in slot order (none when the page has no header, or a
    /// slot count that does not fit): made from the bytes when asked for, not kept.
    pub fn slot_array(&self) -> impl Iterator<Item = Field> + '_ {
        let slots = self.header.map_or(0, |h| usize::from(h.slot_count));
        let slots = if HEADER_SIZE + 2 * slots > PAGE_SIZE { 0 } else { slots };
        (0..slots).map(|slot| {
            let offset = PAGE_SIZE - 2 * (slot + 1);
            Field {
                offset,
                len: 2,
                part: Part::SlotArray,
                name: FieldName::Slot(slot as u16),
                meaning: "offset of the slot's record (0: deleted)",
                value: FieldValue::SlotOffset(read_u16(&self.bytes, offset).unwrap_or(0)),
            }
        })
    }

    /// The name of field `f` of this page, spelled.
    pub fn field_name(&self, f: &Field) -> Cow<'_, str> {
        let column = |i: usize| self.columns.get(i).map_or("", |c| c.name.as_str());
        match &f.name {
            FieldName::Fixed(name) => Cow::Borrowed(name),
            FieldName::Slot(slot) => format!("slot {slot}").into(),
            FieldName::Record(t) => format!("{} record", record_type_name(*t)).into(),
            FieldName::VariableEnd(n) => format!("variable end {n}").into(),
            FieldName::VariableColumn(n) => format!("variable column {n}").into(),
            FieldName::Column(i) => Cow::Borrowed(column(*i)),
            FieldName::Columns(run) => {
                let names = self.fixed_columns.get(run.clone()).unwrap_or_default().iter().map(|&i| column(i));
                names.collect::<Vec<_>>().join(", ").into()
            }
            FieldName::Numbered(what, n) => format!("{what} {n}").into(),
        }
    }

    /// The value of field `f` of this page, spelled; `record` is the record holding it (its
    /// column values), `None` for the header's and the slot array's fields.
    pub fn field_value(&self, f: &Field, record: Option<&RecordAnatomy>) -> Cow<'_, str> {
        let bytes = self.bytes.get(f.offset..f.offset + f.len).unwrap_or_default();
        match f.value {
            FieldValue::Empty => Cow::Borrowed(""),
            FieldValue::Number(n) => n.to_string().into(),
            FieldValue::Flags(bits) => format!("0x{bits:x}").into(),
            FieldValue::Byte(b) => format!("0x{b:02x}").into(),
            FieldValue::PageType(byte, t) => format!("{byte} ({})", t.name()).into(),
            FieldValue::Page(p) => p.to_string().into(),
            FieldValue::Row(p, slot) => format!("{p} slot {slot}").into(),
            FieldValue::Lsn(lsn) => format!("({}:{}:{})", lsn.vlf, lsn.block, lsn.slot).into(),
            FieldValue::Xdes(high, low) => format!("({high}:{low})").into(),
            FieldValue::TornBits(bits) => format!("{} (0x{bits:08x})", bits as i32).into(),
            FieldValue::SlotOffset(o) => format!("{o} (0x{o:x})").into(),
            FieldValue::Status(a) => status_text(a).into(),
            FieldValue::VariableEnd(raw) => {
                let complex = if raw & COMPLEX_COLUMN != 0 { " (complex: a pointer)" } else { "" };
                format!("{}{complex}", raw & !COMPLEX_COLUMN).into()
            }
            FieldValue::Hex => hex(bytes).into(),
            FieldValue::Bits => bits(bytes).into(),
            FieldValue::Column(i) => match record.and_then(|r| self.record_columns(r).get(i)).map(|c| &c.value) {
                Some(Ok(v)) => v.to_string().into(),
                _ => Cow::Borrowed(""),
            },
            FieldValue::CdHeader(h) => cd_header_text(h).into(),
            FieldValue::CdCodes { first, pair } => {
                let byte = bytes.first().copied().unwrap_or(0);
                let mut text = format!("column {}: {}", first + 1, cd_code_name(byte & 0x0f));
                if pair {
                    text.push_str(&format!(", column {}: {}", first + 2, cd_code_name(byte >> 4)));
                }
                text.into()
            }
            FieldValue::LongEnd(raw) => {
                let complex = if raw & LONG_COMPLEX != 0 { " (complex: a pointer)" } else { "" };
                format!("{}{complex}", raw & !LONG_COMPLEX).into()
            }
            FieldValue::CiHeader(h) => {
                let mut text = format!("0x{h:02x}");
                for (bit, name) in [(HAS_ANCHOR, "ANCHOR_RECORD"), (HAS_DICTIONARY, "DICTIONARY")] {
                    if h & bit != 0 {
                        text.push_str(if text.len() == 4 { ": " } else { " | " });
                        text.push_str(name);
                    }
                }
                text.into()
            }
        }
    }
}

/// Reads page `id` from `source` and takes it apart; rows are decoded with `decoder` when given
/// (it must be the decoder of the page's partition).
pub fn read_page(source: &dyn PageSource, id: PageId, decoder: Option<&RowDecoder>) -> Result<PageAnatomy> {
    let (bytes, verdict) = read_verified(source, id)?;
    Ok(take_apart(bytes, id, verdict, decoder))
}

/// Page `id`'s bytes (torn-page bits restored) and what its protection says of them.
fn read_verified(source: &dyn PageSource, id: PageId) -> Result<(Box<[u8]>, Verdict)> {
    let mut bytes = vec![0u8; PAGE_SIZE].into_boxed_slice();
    source.read_raw(id, &mut bytes).map_err(|e| e.at_page(id))?;
    let verdict = protection::verify_and_restore(&mut bytes);
    Ok((bytes, verdict))
}

/// Reads page `id` of `db` and takes it apart, decoding the rows of a data page with its
/// table's columns, and the records of an index page with its index's, when the catalog names
/// the page's owner and its storage is decoded. The owner is one lookup
/// ([`crate::catalog::Catalog::owners`]) and the page is taken apart once.
pub fn read_database_page(db: &Database, id: PageId) -> Result<PageAnatomy> {
    let (bytes, verdict) = read_verified(db.reader().source(), id)?;
    let owners = db.catalog().owners();
    // The header as `take_apart` accepts it: parsed, and naming this page.
    let header = PageHeader::parse(&bytes).ok().filter(|h| h.this_page == id);
    let owner = header.as_ref().and_then(|h| owners.of_page(h));
    let mut not_decoded = None;
    let mut index_rows = None;
    let mut row_decoder = None;
    if let (Some(h), Some(o)) = (&header, owner) {
        if let Some(table) = owners.table(o) {
            match index_rows_of(db, table, o, h) {
                Some(Ok(rows)) => index_rows = Some(rows),
                // FixedVar index records are shown as they were.
                Some(Err(e)) if e.kind() == crate::ErrorKind::Unsupported => {}
                Some(Err(e)) => not_decoded = Some(format!("index records not decoded: {e}")),
                None if h.page_type == PageType::Data && h.level == 0 && o.unit.kind == 1 && o.holds_rows() => {
                    match db.row_decoder(table, o.partition_id, None) {
                        Ok(decoder) => row_decoder = Some(decoder),
                        Err(e) => not_decoded = Some(format!("rows not decoded: {e}")),
                    }
                }
                None => {}
            }
        }
    }
    let decoder = match (&index_rows, &header) {
        (Some(rows), Some(h)) => Some(rows.decoder(h.level)),
        _ => row_decoder.as_ref(),
    };
    let mut anatomy = take_apart(bytes, id, verdict, decoder);
    if let Some(o) = owner {
        anatomy.owner = Some(o.object.clone());
        anatomy.owner_unit = Some(o.clone());
    }
    if let Some(e) = not_decoded {
        anatomy.error = Some(e);
    }
    Ok(anatomy)
}

/// The records of the index page `header` of `table` (allocation unit `unit`): a nonclustered
/// index's pages, a clustered index's non-leaf pages; `None` for the table's own rows (heap or
/// clustered leaf pages, read by the table's decoder).
fn index_rows_of(
    db: &Database,
    table: &TableInfo,
    owner: &UnitOwner,
    header: &PageHeader,
) -> Option<Result<crate::index_rows::IndexRows>> {
    let is_table_rows = owner.index_id == 0 || (owner.index_id == 1 && header.level == 0);
    if is_table_rows || header.page_type != PageType::Index || owner.unit.kind != 1 {
        return None;
    }
    let index = db.catalog().indexes(table.object_id).into_iter().find(|i| i.index_id == owner.index_id)?;
    Some(crate::index_rows::IndexRows::new(db.catalog(), db.reader(), table, &index, owner.partition_id))
}

/// Where a decoder's columns lie in a record, worked out once a page.
struct Layout<'d> {
    decoder: &'d RowDecoder,
    /// (offset, length, column index) of the fixed-length columns, by offset then length.
    fixed: Vec<(usize, usize, usize)>,
    /// The column index of each variable-length column, by its index among them (from 0;
    /// `None`: no column of the layout is stored there). At most 32,768 entries (`leaf_offset`
    /// is an `i16`), looked up once a stored column.
    variable: Vec<Option<usize>>,
}

impl<'d> Layout<'d> {
    fn new(decoder: &'d RowDecoder) -> Self {
        let mut fixed: Vec<(usize, usize, usize)> = Vec::new();
        let mut variable = Vec::new();
        for (i, p) in decoder.columns().iter().enumerate() {
            match (p.physical.location(), p.fixed_len()) {
                // From byte 1: an index record's fixed part starts there (a data record's at 4).
                (ColumnLocation::Fixed(o), Some(len)) if o >= 1 => fixed.push((o, len, i)),
                (ColumnLocation::Variable(v), _) => {
                    if variable.len() <= v {
                        variable.resize(v + 1, None);
                    }
                    // The first column stored there, as a search in column order finds it.
                    variable[v].get_or_insert(i);
                }
                _ => {}
            }
        }
        fixed.sort_by_key(|(o, len, _)| (*o, *len));
        Layout { decoder, fixed, variable }
    }

    /// The column stored as variable-length column `index` (from 0) of a FixedVar record, or as
    /// column `index` of a CD record: its index in the decoder's.
    fn variable_column(&self, index: usize) -> Option<usize> {
        self.variable.get(index).copied().flatten()
    }

    fn columns(&self) -> Vec<ColumnLayout> {
        let cd = self.decoder.format() == RecordFormat::Cd;
        self.decoder
            .columns()
            .iter()
            .map(|plan| ColumnLayout {
                name: plan.column.name.clone(),
                type_name: plan.column.type_info.spelling(),
                storage: match plan.physical.location() {
                    ColumnLocation::Fixed(o) => format!("fixed at {o}"),
                    ColumnLocation::Variable(i) if cd => format!("CD column {}", i + 1),
                    ColumnLocation::Variable(i) => format!("variable {}", i + 1),
                },
                null_bit: plan.physical.null_bit,
            })
            .collect()
    }
}

/// Takes apart the 8 KB `bytes` read from `id`.
pub fn take_apart(bytes: Box<[u8]>, id: PageId, verdict: Verdict, decoder: Option<&RowDecoder>) -> PageAnatomy {
    let mut anatomy = PageAnatomy {
        id,
        verdict,
        header: None,
        error: None,
        header_fields: Vec::new(),
        columns: Vec::new(),
        fixed_columns: Vec::new(),
        records: Vec::new(),
        fields: Vec::new(),
        column_values: Vec::new(),
        free_space: None,
        owner: None,
        owner_unit: None,
        compression_info: Vec::new(),
        damage: Vec::new(),
        bytes,
    };
    let header = match PageHeader::parse(&anatomy.bytes) {
        Ok(h) => h,
        Err(e) => {
            anatomy.error = Some(e.to_string());
            return anatomy;
        }
    };
    anatomy.header_fields = header_fields(&anatomy.bytes, &header);
    if header.this_page != id {
        anatomy.error = Some(format!(
            "the header says it is page {} ({} page): not taken apart further",
            header.this_page,
            header.page_type.name()
        ));
        return anatomy;
    }
    anatomy.header = Some(header);
    let slots = usize::from(header.slot_count);
    if HEADER_SIZE + 2 * slots > PAGE_SIZE {
        anatomy.error = Some(format!("slot count {slots} does not fit in a page"));
        return anatomy;
    }
    let layout = decoder.map(Layout::new);
    if let Some(layout) = &layout {
        anatomy.columns = layout.columns();
        anatomy.fixed_columns = layout.fixed.iter().map(|&(_, _, column)| column).collect();
    }
    let ci = if header.page_type == PageType::Data && header.type_flag_bits & PAGE_HAS_CI_STRUCTURE != 0 {
        match CompressionInfo::parse(&anatomy.bytes) {
            Ok(ci) => {
                anatomy.compression_info = ci_fields(&ci, &anatomy.bytes, layout.as_ref());
                Some(ci)
            }
            Err(e) => {
                anatomy.error = Some(e.to_string());
                None
            }
        }
    } else {
        None
    };
    let array_start = PAGE_SIZE - 2 * slots;
    let free_data = usize::from(header.free_data);
    if (HEADER_SIZE..=array_start).contains(&free_data) {
        anatomy.free_space = Some((free_data, array_start - free_data));
    }
    let (page, slot_array) = anatomy.bytes.split_at(array_start);
    let mut ends = RecordEnds { slot_array, free_data, array_start, starts: None };
    // Room for the records' fields and columns at once, as many as a record of the layout takes
    // a slot, up to the bound on each list: a page-long list regrown is copied whole (damaged
    // pages of overlapping records reach the bound). Deleted slots take none, but counting them
    // costs more than the room they leave unused (never written, it is never paged in).
    let (fields_a_record, columns_a_record) = layout.as_ref().map_or((8, 0), |l| {
        (8 + 2 * l.fixed.len() + 3 * l.variable.iter().flatten().count(), l.decoder.columns().len())
    });
    let mut parts = Parts {
        fields: Vec::with_capacity((slots * fields_a_record).min(MAX_FIELDS)),
        columns: Vec::with_capacity((slots * columns_a_record).min(MAX_FIELDS)),
        ..Parts::default()
    };
    let context = RecordContext {
        page_type: header.page_type,
        level: header.level,
        pminlen: header.pminlen,
        ci: ci.as_ref(),
        layout: layout.as_ref(),
    };
    // Slots that point at a record already taken apart share its fields and columns: the record
    // is the same bytes, so it is taken apart once (damage can point thousands of slots at a few
    // offsets). `taken[o]` is one more than the index of the first record taken apart at `o`.
    let mut taken = [0u16; PAGE_SIZE];
    anatomy.records.reserve_exact(slots);
    for (slot, offset) in slot_offsets(slot_array).map(usize::from).enumerate() {
        let slot = slot as u16;
        let record = if offset == 0 {
            RecordAnatomy::empty(slot, 0, Some(RecordError::DeletedSlot))
        } else if offset < HEADER_SIZE || offset >= array_start {
            RecordAnatomy::empty(slot, offset, Some(RecordError::OutsideRecordArea { offset, array_start }))
        } else if let Some(first) = taken[offset].checked_sub(1).and_then(|i| anatomy.records.get(usize::from(i))) {
            RecordAnatomy { slot, ..first.clone() }
        } else if parts.fields.len() >= MAX_FIELDS || parts.columns.len() >= MAX_FIELDS {
            RecordAnatomy::empty(slot, offset, Some(RecordError::TooManyFields))
        } else {
            taken[offset] = slot + 1;
            record(page, slot, offset, &mut ends, &context, &mut parts)
        };
        anatomy.records.push(record);
    }
    anatomy.fields = parts.fields;
    anatomy.column_values = parts.columns;
    anatomy.damage = parts.damage;
    anatomy
}

/// What a page's records are taken apart into: one list of fields and one of columns for the
/// whole page (each record holds a range of each), and scratch reused from record to record.
#[derive(Default)]
struct Parts {
    fields: Vec<Field>,
    columns: Vec<ColumnAnatomy>,
    /// A CD record's fields before they are put in offset order.
    unsorted: Vec<Field>,
    /// Off-row values read while decoding.
    scratch: Vec<u8>,
    /// The damaged records' errors' text ([`PageAnatomy::damage`]).
    damage: Vec<Cow<'static, str>>,
}

impl Parts {
    /// The error of a record whose bytes are damaged as `text` says.
    fn damaged(&mut self, text: impl Into<Cow<'static, str>>) -> RecordError {
        self.damage.push(text.into());
        RecordError::Damaged(self.damage.len() - 1)
    }
}

/// Where the records of a page that are not taken apart end: the next record's start, or the
/// free space. Worked out on first need (most records are taken apart, and end where their parts
/// say) and without sorting: the starts are bits of a page-long bitmap, so a record's end is the
/// start after its own rank among them (the bits set up to its offset).
struct RecordEnds<'o> {
    /// The page's slot array.
    slot_array: &'o [u8],
    /// The header's `m_freeData`.
    free_data: usize,
    array_start: usize,
    starts: Option<Box<Starts>>,
}

/// The starts of a page's records (those in the record area) and of its free space.
struct Starts {
    /// Bit `o % 64` of word `o / 64`: a record (or the free space) starts at offset `o`. Every
    /// offset a slot can hold has its bit, so that a slot's is set without a comparison (a page
    /// of damage holds thousands of slots); those outside the record area are cleared after.
    bits: [u64; (u16::MAX as usize + 1) / 64],
    /// Starts in the words before each word of the page.
    before: [u16; PAGE_SIZE / 64],
    /// The starts in offset order, each once.
    in_order: Vec<u16>,
}

impl RecordEnds<'_> {
    /// Where the record starting at `offset` (in the record area) ends.
    fn after(&mut self, offset: usize) -> usize {
        let (slot_array, free_data, array_start) = (self.slot_array, self.free_data, self.array_start);
        let starts = self.starts.get_or_insert_with(|| {
            let mut starts = Box::new(Starts {
                bits: [0; (u16::MAX as usize + 1) / 64],
                before: [0; PAGE_SIZE / 64],
                in_order: Vec::new(),
            });
            for o in slot_offsets(slot_array).map(usize::from) {
                starts.bits[o / 64] |= 1 << (o % 64);
            }
            // Only the record area's starts count: the bits before the header's end and from
            // the slot array's start on are cleared.
            starts.bits[..HEADER_SIZE / 64].fill(0);
            starts.bits[HEADER_SIZE / 64] &= !0 << (HEADER_SIZE % 64);
            starts.bits[array_start / 64] &= (1 << (array_start % 64)) - 1;
            starts.bits[array_start / 64 + 1..].fill(0);
            // The free space starting at the slot array ends nothing before the array.
            let free = free_data.clamp(HEADER_SIZE, array_start);
            if free < array_start {
                starts.bits[free / 64] |= 1 << (free % 64);
            }
            let mut count = 0;
            for (w, &word) in starts.bits.iter().enumerate().take(PAGE_SIZE / 64).skip(HEADER_SIZE / 64) {
                starts.before[w] = count;
                let mut rest = word;
                while rest != 0 {
                    starts.in_order.push((64 * w) as u16 + rest.trailing_zeros() as u16);
                    rest &= rest - 1;
                    count += 1;
                }
            }
            starts
        });
        let (word, bit) = (offset / 64, offset % 64);
        let (Some(&before), Some(&bits)) = (starts.before.get(word), starts.bits.get(word)) else { return array_start };
        // Starts up to `offset`, itself included: the next one is the first past it.
        let rank = usize::from(before) + (bits & (2u64 << bit).wrapping_sub(1)).count_ones() as usize;
        starts.in_order.get(rank).map_or(array_start, |&next| usize::from(next))
    }
}

impl RecordAnatomy {
    fn empty(slot: u16, offset: usize, error: Option<RecordError>) -> Self {
        RecordAnatomy {
            slot,
            offset,
            len: 0,
            record_type: None,
            fields: 0..0,
            columns: 0..0,
            forwarded_to: None,
            error,
        }
    }
}

fn field(offset: usize, len: usize, part: Part, name: FieldName, meaning: &'static str, value: FieldValue) -> Field {
    Field { offset, len, part, name, meaning, value }
}

/// Record bytes between two parts that no offset claims.
fn gap(offset: usize, len: usize) -> Field {
    field(offset, len, Part::Undecoded, FieldName::Fixed("gap"), "bytes no offset claims", FieldValue::Empty)
}

fn header_fields(b: &[u8], h: &PageHeader) -> Vec<Field> {
    let u16_at = |o| i64::from(read_u16(b, o).unwrap_or(0));
    let u32_at = |o| read_u32(b, o).unwrap_or(0);
    let h_ = |offset, len, name: &'static str, meaning: &'static str, value: FieldValue| {
        field(offset, len, Part::Header, FieldName::Fixed(name), meaning, value)
    };
    use FieldValue::{Flags, Number, Page};
    vec![
        h_(0, 1, "m_headerVersion", "header version (1)", Number(h.header_version.into())),
        h_(1, 1, "m_type", "page type", FieldValue::PageType(b[1], h.page_type)),
        h_(2, 1, "m_typeFlagBits", "type flag bits", Flags(h.type_flag_bits.into())),
        h_(3, 1, "m_level", "B-tree level (0: leaf or data page)", Number(h.level.into())),
        h_(4, 2, "m_flagBits", "flag bits: 0x100 torn-page protected, 0x200 checksum", Flags(h.flag_bits.into())),
        h_(6, 2, "m_indexId", "allocation unit id, high part", Number(u16_at(6))),
        h_(8, 6, "m_prevPage", "previous page in the chain (0:0: none)", Page(h.prev_page)),
        h_(14, 2, "pminlen", "fixed-length part of the records", Number(h.pminlen.into())),
        h_(16, 6, "m_nextPage", "next page in the chain (0:0: none)", Page(h.next_page)),
        h_(22, 2, "m_slotCnt", "slots in the slot array", Number(h.slot_count.into())),
        h_(24, 4, "m_objId", "allocation unit id, middle part", Number(u32_at(24).into())),
        h_(28, 2, "m_freeCnt", "bytes free", Number(h.free_count.into())),
        h_(30, 2, "m_freeData", "offset of the first free byte", Number(h.free_data.into())),
        h_(32, 6, "m_pageId", "the page's own address", Page(h.this_page)),
        h_(38, 2, "m_reservedCnt", "bytes reserved by transactions", Number(u16_at(38))),
        h_(
            40,
            10,
            "m_lsn",
            "log sequence number of the last change",
            FieldValue::Lsn(Lsn::parse(b, 40).unwrap_or_default()),
        ),
        h_(50, 2, "m_xactReserved", "bytes reserved by the last transaction", Number(u16_at(50))),
        h_(52, 6, "m_xdesId", "transaction id of the last change", FieldValue::Xdes(u16_at(56) as u16, u32_at(52))),
        h_(58, 2, "m_ghostRecCnt", "ghost (deleted) records", Number(h.ghost_record_count.into())),
        h_(60, 4, "m_tornBits", "checksum, or the saved torn-page bits", FieldValue::TornBits(h.torn_bits)),
        h_(64, 32, "(unused)", "rest of the header", FieldValue::Empty),
        h_(
            0,
            0,
            "Metadata: AllocUnitId",
            "allocation unit id: m_indexId << 48 | m_objId << 16",
            Number(h.allocation_unit_id()),
        ),
    ]
}

/// What taking a record apart needs to know of its page.
struct RecordContext<'p, 'l> {
    page_type: PageType,
    /// The page's level in its B-tree (0: the leaf).
    level: u8,
    /// The page's `pminlen`: where a FixedVar index record's fixed part ends.
    pminlen: u16,
    /// The page's CI structure (PAGE compression), which its CD records' values resolve against.
    ci: Option<&'p CompressionInfo<'p>>,
    layout: Option<&'l Layout<'l>>,
}

/// Takes apart the record at page offset `offset`, its fields and columns added to `parts`;
/// `page` ends at the slot array and `ends` says where the next record starts (the length of
/// records not taken apart).
fn record(
    page: &[u8],
    slot: u16,
    offset: usize,
    ends: &mut RecordEnds,
    context: &RecordContext,
    parts: &mut Parts,
) -> RecordAnatomy {
    let status = page[offset];
    let is_data_page = context.page_type == PageType::Data;
    // Bit 0 is never set in a FixedVar status byte: it marks a CD record (the rows of a compressed
    // table, the index records of a compressed index).
    let is_cd = matches!(context.page_type, PageType::Data | PageType::Index) && status & HEADER_CD_FORMAT != 0;
    let record_type = if is_cd { RecordType::from_cd_header(status) } else { RecordType::from_status(status) };
    let mut out = RecordAnatomy::empty(slot, offset, None);
    out.record_type = Some(record_type);
    let (first_field, first_column) = (parts.fields.len(), parts.columns.len());
    match record_type {
        RecordType::ForwardingStub if is_data_page => {
            let stub = &page[offset..];
            match forwarding_target(stub) {
                Ok(target) => {
                    out.len = 9;
                    out.forwarded_to = Some((target.page, target.slot));
                    parts.fields.extend([
                        if is_cd { cd_header_field(offset, status) } else { status_field(offset, status) },
                        field(
                            offset + 1,
                            6,
                            Part::Pointer,
                            FieldName::Fixed("forwarded to page"),
                            "page (4) + file (2)",
                            FieldValue::Page(target.page),
                        ),
                        field(
                            offset + 7,
                            2,
                            Part::Pointer,
                            FieldName::Fixed("forwarded to slot"),
                            "slot of the forwarded record",
                            FieldValue::Number(target.slot.into()),
                        ),
                    ]);
                }
                Err(e) => out.error = Some(parts.damaged(e.into_text())),
            }
        }
        RecordType::Primary
        | RecordType::Forwarded
        | RecordType::GhostData
        | RecordType::GhostVersion
        | RecordType::Index
        | RecordType::GhostIndex
            if is_cd =>
        {
            match CdRecord::parse(&page[offset..]) {
                Ok(cd) => cd_record(&mut out, &cd, offset, context, parts),
                Err(e) => {
                    out.error = Some(parts.damaged(e.into_text()));
                    whole(&mut out, ends.after(offset), record_type, parts);
                }
            }
        }
        RecordType::Primary | RecordType::Forwarded | RecordType::GhostData if is_data_page => {
            match Record::parse(&page[offset..]) {
                Ok(rec) => data_record(&mut out, &rec, offset, 0, context.layout, parts),
                Err(e) => out.error = Some(parts.damaged(e.into_text())),
            }
        }
        RecordType::Index | RecordType::GhostIndex if context.page_type == PageType::Index => {
            match Record::parse_index(&page[offset..], context.pminlen) {
                Ok(rec) => data_record(&mut out, &rec, offset, context.level, context.layout, parts),
                Err(e) => {
                    out.error = Some(parts.damaged(e.into_text()));
                    whole(&mut out, ends.after(offset), record_type, parts);
                }
            }
        }
        other => whole(&mut out, ends.after(offset), other, parts),
    }
    out.fields = first_field..parts.fields.len();
    out.columns = first_column..parts.columns.len();
    out
}

/// Shows a record not taken apart as one field, up to `end` (the next record's start).
fn whole(out: &mut RecordAnatomy, end: usize, record_type: RecordType, parts: &mut Parts) {
    out.len = end.saturating_sub(out.offset);
    parts.fields.push(field(
        out.offset,
        out.len,
        Part::Undecoded,
        FieldName::Record(record_type),
        "not taken apart by this version: shown up to the next record",
        FieldValue::Empty,
    ));
}

/// A CD record at page offset `at`: its parts, and its columns decoded when a layout is given.
fn cd_record(out: &mut RecordAnatomy, cd: &CdRecord, at: usize, context: &RecordContext, parts: &mut Parts) {
    out.len = cd.bytes().len();
    let layout = context.layout;
    // A non-leaf index record's last column: the child page (a leaf index record's last column is
    // one of the index's).
    let down_page = cd.down_page().filter(|_| context.page_type == PageType::Index && context.level > 0);
    let last = cd.column_count().saturating_sub(1);
    let column = |i| match (layout.and_then(|l| l.variable_column(i)), down_page) {
        (_, Some(child)) if i == last => (FieldName::Fixed("down page"), FieldValue::Page(child)),
        (Some(c), _) => (FieldName::Column(c), FieldValue::Column(c)),
        (None, _) => (FieldName::Numbered("column", i + 1), FieldValue::Hex),
    };
    cd_fields(at, cd, &column, &mut parts.unsorted);
    tile(&mut parts.unsorted, at, at + cd.bytes().len(), &mut parts.fields);
    if let Some(layout) = layout {
        cd_columns(layout.decoder, cd, context.ci, at, parts);
    }
}

/// Adds to `fields` the fields of CD record `cd` at page offset `at`, in no order and with no gap
/// between them named ([`tile`] does both): header, column count, CD array, cluster arrays, each
/// column's stored bytes (named and valued by `column`, given the column's index in the record),
/// the long data region's flags, count, end offsets and back pointer, the versioning tag.
fn cd_fields(at: usize, cd: &CdRecord, column: &dyn Fn(usize) -> (FieldName, FieldValue), fields: &mut Vec<Field>) {
    use FieldName::{Fixed, Numbered};
    let b = cd.bytes();
    let parts = cd.parts();
    fields.push(cd_header_field(at, b[0]));
    fields.push(field(
        at + parts.column_count,
        1,
        Part::ColumnCount,
        Fixed("column count"),
        "columns in the CD array",
        FieldValue::Number(cd.column_count() as i64),
    ));
    for (k, o) in parts.cd_array.clone().enumerate() {
        let first = 2 * k;
        fields.push(field(
            at + o,
            1,
            Part::CdArray,
            Numbered("CD codes of column", first + 1),
            "4 bits a column, low nibble first: 0 NULL, 1 empty, 2-9 1-8 bytes, 10 long, 11 bit 1, 12 dictionary symbol",
            FieldValue::CdCodes { first, pair: first + 1 < cd.column_count() },
        ));
    }
    let cluster_meaning = "bytes of short data in this full cluster of 30 columns";
    for (k, o) in parts.short_clusters.clone().enumerate() {
        let length = FieldValue::Number(b[o].into());
        fields.push(field(at + o, 1, Part::ClusterArray, Numbered("short cluster", k + 1), cluster_meaning, length));
    }
    // A CD record has at most 127 columns (a one-byte count).
    let mut spans = [None; 128];
    cd.for_each_stored_span(|i, span| {
        if let Some(slot) = spans.get_mut(i) {
            *slot = Some((span.start, span.len()));
        }
    });
    let mut long_columns = 0;
    for (i, span) in spans.iter().enumerate().take(cd.column_count()) {
        let Some((start, len)) = *span else { continue };
        let (name, value) = column(i);
        let (part, meaning, value) = match cd.code(i) {
            Some(CdCode::Long) => {
                long_columns += 1;
                match cd.long_entry(long_columns - 1) {
                    Some((_, true)) => (
                        Part::Pointer,
                        "long data: pointer to the value stored elsewhere (LOB or row-overflow)",
                        FieldValue::Hex,
                    ),
                    _ => (Part::VarColumn, "long data value", value),
                }
            }
            Some(CdCode::PageSymbol) => (Part::VarColumn, "dictionary symbol: the number of a dictionary entry", value),
            _ => (Part::VarColumn, "short data value", value),
        };
        fields.push(field(at + start, len, part, name, meaning, value));
    }
    if let Some(long) = &parts.long {
        fields.push(field(
            at + long.flags,
            1,
            Part::Status,
            Fixed("long data flags"),
            "0x01 two-byte end offsets, 0x02 complex values present",
            FieldValue::Byte(b[long.flags]),
        ));
        fields.push(field(
            at + long.count.start,
            2,
            Part::VarCount,
            Fixed("long data count"),
            "entries in the long data region",
            FieldValue::Number(cd.long_entry_count() as i64),
        ));
        for e in 0..cd.long_entry_count() {
            let o = long.ends.start + 2 * e;
            fields.push(field(
                at + o,
                2,
                Part::VarOffset,
                Numbered("long end", e + 1),
                "where long value n ends, from the first long value (top bit 0x8000: complex)",
                FieldValue::LongEnd(read_u16(b, o).unwrap_or(0)),
            ));
        }
        for (k, o) in long.clusters.clone().enumerate() {
            let count = FieldValue::Number(b[o].into());
            let meaning = "long values in this full cluster of 30 columns";
            fields.push(field(at + o, 1, Part::ClusterArray, Numbered("long cluster", k + 1), meaning, count));
        }
        // Entries past the long columns': a forwarded record's back pointer.
        for (span, _) in (long_columns..cd.long_entry_count()).filter_map(|e| cd.long_entry(e)) {
            let meaning = "the forwarding stub pointing here";
            let value = back_pointer_value(&b[span.clone()]);
            fields.push(field(at + span.start, span.len(), Part::Pointer, Fixed("back pointer"), meaning, value));
        }
    }
    if let Some(tag) = parts.version_tag {
        let meaning = "row versioning (snapshot isolation)";
        fields.push(field(at + tag.start, tag.len(), Part::VersionTag, Fixed("version tag"), meaning, FieldValue::Hex));
    }
}

/// Moves `fields` (left empty) to the end of `out` in offset order, bytes between them that no
/// part claims named as gaps, from `start` up to `end`.
fn tile(fields: &mut Vec<Field>, start: usize, end: usize, out: &mut Vec<Field>) {
    fields.sort_by_key(|f| f.offset);
    out.reserve(fields.len() + 1);
    let mut cursor = start;
    for f in fields.drain(..) {
        if f.offset > cursor {
            out.push(gap(cursor, f.offset - cursor));
        }
        cursor = cursor.max(f.offset + f.len);
        out.push(f);
    }
    if end > cursor {
        out.push(gap(cursor, end - cursor));
    }
}

/// Adds to `parts` the columns of `decoder` in CD record `cd` at page offset `at` (on a page with
/// CI structure `ci`): where each one's stored bytes lie, and its value as the scan decodes it.
fn cd_columns(decoder: &RowDecoder, cd: &CdRecord, ci: Option<&CompressionInfo>, at: usize, parts: &mut Parts) {
    let record = Record::from_cd(cd, ci);
    let scratch = &mut parts.scratch;
    parts.columns.extend(decoder.columns().iter().map(|plan| {
        let index = match plan.physical.location() {
            ColumnLocation::Variable(i) => Some(i),
            ColumnLocation::Fixed(_) => None,
        };
        let links = match index.and_then(|i| cd.value(i)) {
            Some(CdValue::Complex(bytes)) => {
                let text_pointer = crate::lob::is_text_pointer(plan.column.type_info.sql_type, true, bytes.len());
                crate::lob::pointer_links(bytes, text_pointer).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let off_row = index.is_some_and(|i| matches!(cd.value(i), Some(CdValue::Complex(_))));
        ColumnAnatomy {
            is_null: index.and_then(|i| cd.code(i)) == Some(CdCode::Null),
            span: index.and_then(|i| cd.stored_span(i)).map(|r| (at + r.start, r.len())),
            off_row,
            links,
            value: decoder.column_value(&record, plan, scratch).map_err(Error::into_text),
        }
    }));
}

/// The fields of a page's CI structure: its header, its anchor record (each column's prefix,
/// named by `layout`'s columns), its dictionary; in offset order, covering the structure.
fn ci_fields(ci: &CompressionInfo, page: &[u8], layout: Option<&Layout>) -> Vec<Field> {
    use FieldName::{Fixed, Numbered};
    let p = ci.parts();
    let number = |n: usize| FieldValue::Number(n as i64);
    let mut fields = vec![
        field(
            p.header.start,
            1,
            Part::CiHeader,
            Fixed("CI header"),
            "0x02 an anchor record follows, 0x04 a dictionary",
            FieldValue::CiHeader(ci.header()),
        ),
        field(
            p.modification_count.start,
            2,
            Part::CiHeader,
            Fixed("PageModCount"),
            "changes to the page since it was compressed",
            FieldValue::Number(ci.modification_count.into()),
        ),
        field(p.size.start, 2, Part::CiHeader, Fixed("CI size"), "bytes the CI structure takes", number(ci.size)),
    ];
    if let Some(r) = &p.dictionary_offset {
        let start = p.dictionary_count.as_ref().map_or(0, |c| c.start - HEADER_SIZE);
        let meaning = "where the dictionary starts, from the CI structure's start";
        fields.push(field(r.start, 2, Part::CiHeader, Fixed("dictionary offset"), meaning, number(start)));
    }
    if let (Some(anchor), Some(r)) = (ci.anchor(), &p.anchor) {
        let mut unsorted = Vec::new();
        cd_fields(
            r.start,
            anchor,
            &|i| {
                let name =
                    layout.and_then(|l| l.variable_column(i)).map_or(Numbered("column", i + 1), FieldName::Column);
                (name, FieldValue::Hex)
            },
            &mut unsorted,
        );
        tile(&mut unsorted, r.start, r.start + anchor.bytes().len(), &mut fields);
    }
    if let Some(r) = &p.dictionary_count {
        let count = number(p.dictionary_entries.len());
        fields.push(field(
            r.start,
            2,
            Part::Dictionary,
            Fixed("dictionary entries"),
            "entries in the dictionary",
            count,
        ));
    }
    if let Some(ends) = &p.dictionary_ends {
        for (n, o) in ends.clone().step_by(2).enumerate() {
            let end = number(read_u16(page, o).map_or(0, usize::from));
            let meaning = "where entry n ends, from the dictionary's start";
            fields.push(field(o, 2, Part::Dictionary, Numbered("dictionary end", n), meaning, end));
        }
    }
    for (n, r) in p.dictionary_entries.iter().enumerate() {
        let meaning = "the stored value dictionary symbol n stands for";
        fields.push(field(
            r.start,
            r.len(),
            Part::Dictionary,
            Numbered("dictionary entry", n),
            meaning,
            FieldValue::Hex,
        ));
    }
    let mut tiled = Vec::new();
    tile(&mut fields, HEADER_SIZE, HEADER_SIZE + ci.size, &mut tiled);
    tiled
}

/// DBCC PAGE's spelling of a record type.
pub fn record_type_name(t: RecordType) -> &'static str {
    match t {
        RecordType::Primary => "PRIMARY_RECORD",
        RecordType::Forwarded => "FORWARDED_RECORD",
        RecordType::ForwardingStub => "FORWARDING_STUB",
        RecordType::Index => "INDEX_RECORD",
        RecordType::BlobFragment => "BLOB_FRAGMENT",
        RecordType::GhostIndex => "GHOST_INDEX_RECORD",
        RecordType::GhostData => "GHOST_DATA_RECORD",
        RecordType::GhostVersion => "GHOST_VERSION_RECORD",
    }
}

fn status_field(offset: usize, a: u8) -> Field {
    let name = FieldName::Fixed("status A");
    field(offset, 1, Part::Status, name, "record type (bits 1-3) and what follows", FieldValue::Status(a))
}

fn cd_header_field(offset: usize, header: u8) -> Field {
    let name = FieldName::Fixed("header");
    let meaning = "CD record header: 0x01 CD format, record type (bits 2-4), 0x20 long data, 0x02 version tag";
    field(offset, 1, Part::Status, name, meaning, FieldValue::CdHeader(header))
}

/// A CD record's header byte in words: `0x21: PRIMARY_RECORD | LONG_DATA_REGION`.
fn cd_header_text(header: u8) -> String {
    let mut value = format!("0x{header:02x}: {}", cd_record_type_name(CdRecordType::from_header(header)));
    for (bit, name) in [(HEADER_LONG_DATA, "LONG_DATA_REGION"), (HEADER_VERSION_TAG, "VERSIONING_INFO")] {
        if header & bit != 0 {
            value.push_str(" | ");
            value.push_str(name);
        }
    }
    value
}

/// DBCC PAGE's spelling of a CD record's type.
fn cd_record_type_name(t: CdRecordType) -> &'static str {
    match t {
        CdRecordType::Primary => "PRIMARY_RECORD",
        CdRecordType::GhostEmpty => "GHOST_EMPTY_RECORD",
        CdRecordType::ForwardingStub => "FORWARDING_STUB",
        CdRecordType::GhostData => "GHOST_DATA_RECORD",
        CdRecordType::Forwarded => "FORWARDED_RECORD",
        CdRecordType::GhostForwarded => "GHOST_FORWARDED_RECORD",
        CdRecordType::Index => "INDEX_RECORD",
        CdRecordType::GhostIndex => "GHOST_INDEX_RECORD",
    }
}

/// A 4-bit CD code in words.
fn cd_code_name(nibble: u8) -> Cow<'static, str> {
    match CdCode::from_nibble(nibble) {
        Some(CdCode::Null) => "NULL".into(),
        Some(CdCode::Empty) => "empty".into(),
        Some(CdCode::Short(1)) => "1 byte".into(),
        Some(CdCode::Short(n)) => format!("{n} bytes").into(),
        Some(CdCode::Long) => "long".into(),
        Some(CdCode::TrueBit) => "bit 1".into(),
        Some(CdCode::PageSymbol) => "dictionary symbol".into(),
        None => format!("code {nibble} (never written)").into(),
    }
}

/// The value of a back pointer's bytes (a 2-byte tag, then the stub's page and slot).
fn back_pointer_value(bytes: &[u8]) -> FieldValue {
    bytes.get(2..10).map_or(FieldValue::Empty, |p| {
        FieldValue::Row(PageId::from_bytes(p).unwrap_or_default(), read_u16(p, 6).unwrap_or(0))
    })
}

/// Status byte A in words: `0x30: PRIMARY_RECORD | NULL_BITMAP | VARIABLE_COLUMNS`.
fn status_text(a: u8) -> String {
    let mut value = format!("0x{a:02x}: {}", record_type_name(RecordType::from_status(a)));
    for (bit, name) in
        [(HAS_NULL_BITMAP, "NULL_BITMAP"), (HAS_VAR_COLUMNS, "VARIABLE_COLUMNS"), (HAS_VERSION_TAG, "VERSIONING_INFO")]
    {
        if a & bit != 0 {
            value.push_str(" | ");
            value.push_str(name);
        }
    }
    value
}

/// A FixedVar record at page offset `at`: a data record, or an index record of a page at `level`
/// (no status B or fixed end; a non-leaf one's fixed part ends with its child page). Its parts,
/// and its columns decoded when a layout is given.
fn data_record(
    out: &mut RecordAnatomy,
    rec: &Record,
    at: usize,
    level: u8,
    layout: Option<&Layout>,
    parts: &mut Parts,
) {
    let fixed: &[(usize, usize, usize)] = layout.map_or(&[], |l| &l.fixed);
    // Room for every part at once (the header's and tag's 10 at most, a fixed column and the
    // unused bytes before it, a variable column's end offset, bytes and the gap before them),
    // within the page's bound: the lists were sized to it, and are never regrown.
    let most_fields = 10 + 2 * fixed.len() + 3 * rec.var_entry_count();
    let decoded = layout.map_or(0, |l| l.decoder.columns().len());
    if parts.fields.len() + most_fields > MAX_FIELDS || parts.columns.len() + decoded > MAX_FIELDS {
        out.error = Some(RecordError::TooManyFields);
        return;
    }
    let b = rec.bytes();
    out.len = b.len();
    let fields = &mut parts.fields;
    fields.reserve(most_fields);
    fields.push(status_field(at, b[0]));
    // A data record's status B and fixed end; an index record has neither.
    if rec.fixed_start() == 4 {
        fields.push(field(
            at + 1,
            1,
            Part::Status,
            FieldName::Fixed("status B"),
            "0x01: ghost forwarded record",
            FieldValue::Byte(b[1]),
        ));
        fields.push(field(
            at + 2,
            2,
            Part::FixedEnd,
            FieldName::Fixed("fixed end"),
            "where the fixed-length part ends",
            FieldValue::Number(rec.fixed_end() as i64),
        ));
    }
    // The fixed part, one field per stored column (bit columns share their byte), the rest unused;
    // a non-leaf index record's ends with its child page.
    let down_page = rec.down_page().filter(|_| level > 0);
    let fixed_end = rec.fixed_end() - if down_page.is_some() { 6 } else { 0 };
    let mut cursor = rec.fixed_start();
    let mut i = 0;
    while i < fixed.len() {
        let (o, len, column) = fixed[i];
        if o < cursor || o + len > fixed_end {
            i += 1; // overlaps a field already placed: a damaged layout, the column list shows it
            continue;
        }
        if o > cursor {
            let name = FieldName::Fixed("fixed bytes");
            let unused = field(
                at + cursor,
                o - cursor,
                Part::FixedUnused,
                name,
                "no stored column (dropped?)",
                FieldValue::Empty,
            );
            fields.push(unused);
        }
        let n = fixed[i..].iter().take_while(|(o2, l2, _)| *o2 == o && *l2 == len).count();
        let (name, value) = if n == 1 {
            (FieldName::Column(column), FieldValue::Column(column))
        } else {
            (FieldName::Columns(i..i + n), FieldValue::Empty)
        };
        fields.push(field(at + o, len, Part::FixedColumn, name, "fixed-length column", value));
        cursor = o + len;
        i += n;
    }
    if cursor < fixed_end {
        let name = FieldName::Fixed(if layout.is_some() { "fixed bytes" } else { "fixed-length columns" });
        fields.push(field(at + cursor, fixed_end - cursor, Part::FixedUnused, name, "", FieldValue::Empty));
    }
    if let Some(child) = down_page {
        let name = FieldName::Fixed("down page");
        fields.push(field(
            at + fixed_end,
            6,
            Part::Pointer,
            name,
            "child page: page (4) + file (2)",
            FieldValue::Page(child),
        ));
    }
    let mut pos = rec.fixed_end();
    if b[0] & HAS_NULL_BITMAP != 0 {
        fields.push(field(
            at + pos,
            2,
            Part::ColumnCount,
            FieldName::Fixed("column count"),
            "columns in the null bitmap",
            FieldValue::Number(rec.column_count() as i64),
        ));
        pos += 2;
        let bitmap = rec.null_bitmap();
        let name = FieldName::Fixed("null bitmap");
        fields.push(field(
            at + pos,
            bitmap.len(),
            Part::NullBitmap,
            name,
            "bit n-1 set: column n is NULL",
            FieldValue::Bits,
        ));
        pos += bitmap.len();
    }
    if let Some(count_at) = rec.var_count_offset() {
        let entries = rec.var_entry_count();
        fields.push(field(
            at + count_at,
            2,
            Part::VarCount,
            FieldName::Fixed("variable column count"),
            "entries in the offset table",
            FieldValue::Number(entries as i64),
        ));
        let table = count_at + 2;
        // The end offsets in one go (`Record::parse` checked that the table lies in the record).
        let ends = b.get(table..table + 2 * entries).unwrap_or_default();
        fields.extend(ends.chunks_exact(2).enumerate().map(|(i, end)| {
            field(
                at + table + 2 * i,
                2,
                Part::VarOffset,
                FieldName::VariableEnd(i + 1),
                "where variable column n ends, from the record's start",
                FieldValue::VariableEnd(u16::from_le_bytes([end[0], end[1]])),
            )
        }));
        pos = table + 2 * entries;
        // The columns' bytes, the table read once more (not twice an entry).
        for (i, v) in rec.var_entries().enumerate() {
            let Some(v) = v else {
                parts.damage.push(format!("variable column {} lies outside the record", i + 1).into());
                out.error = Some(RecordError::Damaged(parts.damage.len() - 1));
                break;
            };
            let start = offset_in(b, v.bytes);
            let is_back_pointer = i >= rec.var_column_count() && out.record_type == Some(RecordType::Forwarded);
            let column = layout.and_then(|l| l.variable_column(i));
            let (part, name, meaning, value) = if is_back_pointer {
                let stub = back_pointer_value(v.bytes);
                (Part::Pointer, FieldName::Fixed("back pointer"), "the forwarding stub pointing here", stub)
            } else {
                let name = column.map_or(FieldName::VariableColumn(i + 1), FieldName::Column);
                if v.complex {
                    (
                        Part::Pointer,
                        name,
                        "pointer to the value stored elsewhere (LOB or row-overflow)",
                        FieldValue::Hex,
                    )
                } else {
                    let value = column.map_or(FieldValue::Empty, FieldValue::Column);
                    (Part::VarColumn, name, "variable-length column", value)
                }
            };
            if start > pos {
                fields.push(gap(at + pos, start - pos));
            }
            fields.push(field(at + start, v.bytes.len(), part, name, meaning, value));
            pos = pos.max(start + v.bytes.len());
        }
    }
    if b[0] & HAS_VERSION_TAG != 0 && b.len() >= VERSION_TAG_SIZE {
        let tag_at = b.len() - VERSION_TAG_SIZE;
        if tag_at > pos {
            fields.push(gap(at + pos, tag_at - pos));
        }
        fields.push(field(
            at + tag_at,
            VERSION_TAG_SIZE,
            Part::VersionTag,
            FieldName::Fixed("version tag"),
            "row versioning (snapshot isolation)",
            FieldValue::Hex,
        ));
    }
    if let Some(layout) = layout {
        columns(layout.decoder, rec, at, parts);
    }
}

/// Adds to `parts` the columns of `d` in FixedVar record `rec` at page offset `at`: where each
/// one's stored bytes lie, and its value as the scan decodes it.
fn columns(d: &RowDecoder, rec: &Record, at: usize, parts: &mut Parts) {
    let scratch = &mut parts.scratch;
    parts.columns.extend(d.columns().iter().map(|plan| {
        let p = &plan.physical;
        let stored = match p.location() {
            ColumnLocation::Fixed(o) => plan.fixed_len().and_then(|len| rec.fixed(o, len)).map(|s| (s, false)),
            ColumnLocation::Variable(i) => rec.var(i).ok().flatten().map(|v| (v.bytes, v.complex)),
        };
        let is_null = p.null_bit > 0 && rec.is_null(usize::from(p.null_bit));
        let span = stored.filter(|_| !is_null).map(|(s, _)| (at + offset_in(rec.bytes(), s), s.len()));
        let value = d.column_value(rec, plan, scratch).map_err(Error::into_text);
        let links = match stored {
            Some((bytes, complex)) if !is_null => {
                let text_pointer = crate::lob::is_text_pointer(plan.column.type_info.sql_type, complex, bytes.len());
                if complex || text_pointer {
                    crate::lob::pointer_links(bytes, text_pointer).unwrap_or_default()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        };
        ColumnAnatomy {
            is_null,
            span,
            off_row: stored.is_some_and(|(_, complex)| complex) || !links.is_empty(),
            links,
            value,
        }
    }));
}

/// Where `part` (a sub-slice of `whole`) starts within `whole`.
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize).min(whole.len())
}

const HEX_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for x in b {
        s.push(char::from(HEX_DIGITS[usize::from(x >> 4)]));
        s.push(char::from(HEX_DIGITS[usize::from(x & 0xf)]));
    }
    s
}

/// Bytes as bits, last byte first, spelled bit by bit: a damaged column count makes bitmaps of
/// thousands of bytes, and `{:08b}` a formatter call a byte.
fn bits(b: &[u8]) -> String {
    let mut value = String::with_capacity(9 * b.len());
    for x in b.iter().rev() {
        if !value.is_empty() {
            value.push(' ');
        }
        value.extend((0..8).rev().map(|bit| if x >> bit & 1 == 1 { '1' } else { '0' }));
    }
    value
}

/// Parses `1:153` (file:page).
pub fn parse_page_id(text: &str) -> Result<PageId> {
    let bad = || Error::not_found(format!("page {text:?}: expected FILE:PAGE, e.g. 1:153"));
    let (file, page) = text.trim().trim_matches(|c| c == '(' || c == ')').split_once(':').ok_or_else(bad)?;
    Ok(PageId::new(file.trim().parse().map_err(|_| bad())?, page.trim().parse().map_err(|_| bad())?))
}

/// What an allocation page's bitmap says, read by [`crate::page::allocation`] (where the layout
/// and its sources are documented).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocationBitmap {
    /// A GAM, SGAM or IAM page: one bit an extent.
    Extents(ExtentMap),
    /// A PFS page: one byte a page, as runs of pages holding the same byte.
    Pfs {
        /// The first page the PFS page covers.
        start: PageId,
        /// Pages the PFS page has a byte for.
        pages: u32,
        /// (first page number, last page number, byte) of each run.
        runs: Vec<(u32, u32, PfsByte)>,
    },
}

impl PageAnatomy {
    /// The bitmap of a GAM, SGAM, IAM or PFS page (`None` for other pages; an error when the
    /// page's records cannot hold one).
    pub fn allocation(&self) -> Option<Result<AllocationBitmap>> {
        let kind = self.header.as_ref()?.page_type;
        if !matches!(kind, PageType::Gam | PageType::Sgam | PageType::Iam | PageType::Pfs) {
            return None;
        }
        let page = match Page::new(self.bytes.clone(), self.id) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        Some(if kind == PageType::Pfs {
            PfsMap::parse(&page).map(|m| AllocationBitmap::Pfs {
                start: m.start,
                pages: m.bytes.len() as u32,
                runs: m.runs().collect(),
            })
        } else {
            ExtentMap::parse(&page).map(AllocationBitmap::Extents)
        })
    }

    /// The page taken apart as JSON: `mdfkit page --format json`, the studio's `/page/1:153.json`
    /// and Python's `Database.page`.
    pub fn to_json(&self) -> serde_json::Value {
        let h = self.header.as_ref();
        serde_json::json!({
            "page": self.id.to_string(),
            "verdict": self.verdict_text(),
            "damaged": self.verdict.is_damaged(),
            "owner": self.owner,
            "owner_unit": self.owner_unit.as_ref().map(|o| serde_json::json!({
                "allocation_unit": o.unit.id, "kind": o.unit.kind_name(), "object": o.object,
                "object_id": o.object_id, "index_id": o.index_id, "index": o.index_name,
                "partition_number": o.partition_number, "partition_id": o.partition_id,
            })),
            "error": self.error,
            "type": h.map(|h| h.page_type.name()),
            "level": h.map(|h| h.level),
            "allocation_unit": h.map(|h| h.allocation_unit_id()),
            "slots": h.map(|h| h.slot_count),
            "free_bytes": h.map(|h| h.free_count),
            "prev": h.map(|h| h.prev_page.to_string()),
            "next": h.map(|h| h.next_page.to_string()),
            "header": self.header_fields.iter().map(|f| self.field_to_json(f, None)).collect::<Vec<_>>(),
            "compression_info": (!self.compression_info.is_empty())
                .then(|| self.compression_info.iter().map(|f| self.field_to_json(f, None)).collect::<Vec<_>>()),
            "free_space": self.free_space.map(|(o, l)| serde_json::json!({"offset": o, "length": l})),
            "slot_array": self.slot_array().map(|f| self.field_to_json(&f, None)).collect::<Vec<_>>(),
            "records": self.records.iter().map(|r| self.record_to_json(r)).collect::<Vec<_>>(),
            "allocation": self.allocation().map(|a| match a {
                Ok(a) => a.to_json(),
                Err(e) => serde_json::json!({"error": e.to_string()}),
            }),
        })
    }
}

impl AllocationBitmap {
    /// The bitmap as JSON: runs of set extents (GAM, SGAM, IAM) or runs of equal PFS bytes.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            AllocationBitmap::Extents(m) => serde_json::json!({
                "kind": m.kind.name(),
                "start": m.start.to_string(),
                "extents": m.extents,
                "set_means": m.set_means(),
                "set": m.set.iter().map(|r| {
                    let (first, last) = m.pages(r);
                    serde_json::json!({"first_extent": r.start, "last_extent": r.end - 1, "first_page": first.to_string(), "last_page": last.to_string()})
                }).collect::<Vec<_>>(),
                "single_pages": m.single_pages.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            }),
            AllocationBitmap::Pfs { start, pages, runs } => serde_json::json!({
                "kind": "PFS",
                "start": start.to_string(),
                "pages": pages,
                "runs": runs.iter().map(|(first, last, b)| serde_json::json!({
                    "first_page": PageId::new(start.file, *first).to_string(),
                    "last_page": PageId::new(start.file, *last).to_string(),
                    "byte": format!("{:#04x}", b.0),
                    "allocated": b.allocated(), "fullness": b.fullness(), "mixed": b.mixed(),
                    "iam": b.iam(), "ghosts": b.ghosts(), "meaning": b.describe(),
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

impl PageAnatomy {
    /// Field `f` of this page as JSON (offset, length, part, name, meaning, value); `record`: the
    /// record holding it.
    pub fn field_to_json(&self, f: &Field, record: Option<&RecordAnatomy>) -> serde_json::Value {
        serde_json::json!({
            "offset": f.offset,
            "length": f.len,
            "part": f.part.name(),
            "name": self.field_name(f),
            "meaning": f.meaning,
            "value": self.field_value(f, record),
        })
    }

    /// Record `r` of this page as JSON: slot, offset, length, type, fields, columns (each with its
    /// layout: name, type, storage, null bit; span, off-row links, value or error), forwarding,
    /// error.
    pub fn record_to_json(&self, r: &RecordAnatomy) -> serde_json::Value {
        let column = |(c, layout): (&ColumnAnatomy, &ColumnLayout)| {
            serde_json::json!({
                "name": layout.name,
                "type": layout.type_name,
                "storage": layout.storage,
                "null_bit": layout.null_bit,
                "is_null": c.is_null,
                "offset": c.span.map(|s| s.0),
                "length": c.span.map(|s| s.1),
                "off_row": c.off_row,
                "links": c.links.iter().map(|(p, s)| format!("{p}:{s}")).collect::<Vec<_>>(),
                "value": c.value.as_ref().ok().map(ToString::to_string),
                "error": c.value.as_ref().err(),
            })
        };
        serde_json::json!({
            "slot": r.slot,
            "offset": r.offset,
            "length": r.len,
            "record_type": r.record_type.map(record_type_name),
            "fields": self.record_fields(r).iter().map(|f| self.field_to_json(f, Some(r))).collect::<Vec<_>>(),
            "columns": self.record_columns(r).iter().zip(&self.columns).map(column).collect::<Vec<_>>(),
            "forwarded_to": r.forwarded_to.map(|(p, s)| format!("{p}:{s}")),
            "error": self.record_error(r),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::tests::build_page;
    use crate::record::tests::build_record;
    use crate::types::TypeInfo;

    fn decoder() -> RowDecoder {
        RowDecoder::from_declaration(
            crate::source::tests::reader(Vec::new()),
            "t",
            &[("id".into(), TypeInfo::parse("int").unwrap()), ("name".into(), TypeInfo::parse("varchar(10)").unwrap())],
        )
        .unwrap()
    }

    /// Every record's fields tile it: in order, no gap, no overlap, summing to its length.
    fn assert_tiles(a: &PageAnatomy, r: &RecordAnatomy) {
        let mut at = r.offset;
        for f in a.record_fields(r) {
            assert_eq!(f.offset, at, "slot {} field {:?} starts at {}, expected {at}", r.slot, f.name, f.offset);
            at += f.len;
        }
        assert_eq!(at - r.offset, r.len, "slot {}", r.slot);
    }

    #[test]
    fn takes_a_data_page_apart() {
        let id = PageId::new(1, 153);
        let row1 = build_record(&7i32.to_le_bytes(), 2, &[], &[b"abc"]);
        let row2 = build_record(&9i32.to_le_bytes(), 2, &[2], &[]);
        let mut b = build_page(id, 1, &[&row1, &row2]);
        b[28..30].copy_from_slice(&1234u16.to_le_bytes());
        let d = decoder();
        let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, Some(&d));
        assert!(a.error.is_none(), "{:?}", a.error);
        let h = a.header.unwrap();
        assert_eq!(h.slot_count, 2);
        let field = |name: &str| {
            let f = a.header_fields.iter().find(|f| a.field_name(f) == name).unwrap();
            a.field_value(f, None).into_owned()
        };
        assert_eq!(field("m_pageId"), "1:153");
        assert_eq!(field("m_type"), "1 (data)");
        assert_eq!(field("m_freeCnt"), "1234");
        assert_eq!(a.records.len(), 2);
        let r = &a.records[0];
        assert_eq!((r.offset, r.len), (96, row1.len()));
        assert_tiles(&a, r);
        let value = |c: &ColumnAnatomy| c.value.as_ref().map(Value::to_string).map_err(|e| e.to_string());
        assert_eq!(value(&a.record_columns(r)[0]), Ok("7".into()));
        assert_eq!(a.record_columns(r)[0].span, Some((96 + 4, 4)));
        assert_eq!(value(&a.record_columns(r)[1]), Ok("abc".into()));
        assert_eq!(a.record_columns(r)[1].span, Some((96 + row1.len() - 3, 3)));
        let id_field = a.record_fields(r).iter().find(|f| f.part == Part::FixedColumn).unwrap();
        assert_eq!((a.field_name(id_field), a.field_value(id_field, Some(r))), ("id".into(), "7".into()));
        let r = &a.records[1];
        assert_eq!(r.offset, 96 + row1.len());
        assert_tiles(&a, r);
        assert!(a.record_columns(r)[1].is_null && a.record_columns(r)[1].span.is_none());
        assert_eq!(value(&a.record_columns(r)[1]), Ok("NULL".into()));
        assert_eq!(a.free_space, Some((96 + row1.len() + row2.len(), PAGE_SIZE - 4 - (96 + row1.len() + row2.len()))));
        assert_eq!(a.slot_array().nth(1).map(|f| f.offset), Some(PAGE_SIZE - 4));
    }

    #[test]
    fn spells_null_bitmaps_last_byte_first_and_pointers_in_hex() {
        let id = PageId::new(1, 153);
        // Ten columns, 1 and 10 NULL: bit 0 of the first byte, bit 1 of the second.
        let row = build_record(&7i32.to_le_bytes(), 10, &[1, 10], &[]);
        let a = take_apart(build_page(id, 1, &[&row]).into_boxed_slice(), id, Verdict::Unprotected, None);
        let bitmap = a.record_fields(&a.records[0]).iter().find(|f| f.part == Part::NullBitmap).unwrap();
        assert_eq!((bitmap.len, a.field_value(bitmap, None).as_ref()), (2, "00000010 00000001"));
        assert_eq!(hex(&[0x0a, 0xff, 0x00]), "0x0AFF00");
    }

    #[test]
    fn names_what_it_does_not_take_apart() {
        let id = PageId::new(1, 9);
        let stub = [2u8 << 1, 0x24, 1, 0, 0, 1, 0, 3, 0];
        let index = [3u8 << 1, 1, 2, 3, 4];
        let mut b = build_page(id, 1, &[&stub, &index]);
        b[PAGE_SIZE - 6..PAGE_SIZE - 4].copy_from_slice(&0u16.to_le_bytes());
        b[22] = 3; // a third slot, deleted
        let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, None);
        assert_eq!(a.records[0].forwarded_to, Some((PageId::new(1, 292), 3)));
        assert_tiles(&a, &a.records[0]);
        assert_eq!(a.field_name(&a.record_fields(&a.records[1])[0]), "INDEX_RECORD record");
        assert_eq!(a.records[1].len, index.len());
        assert_eq!(a.records[2].error, Some(RecordError::DeletedSlot));
        assert_eq!(a.record_error(&a.records[2]).as_deref(), Some("deleted slot"));
        assert_eq!(a.record_error(&a.records[1]), None);
    }

    #[test]
    fn records_not_taken_apart_end_where_the_next_record_in_offset_order_starts() {
        let id = PageId::new(1, 11);
        // Three LOB fragments (type 4, shown whole) of 10, 20 and 5 bytes, their slots out of
        // offset order, the free space after them.
        let fragment = |len: usize| vec![4u8 << 1; len];
        let (a, b, c) = (fragment(10), fragment(20), fragment(5));
        let mut page = build_page(id, 3, &[&a, &b, &c]);
        for (slot, offset) in [126u16, 96, 106].into_iter().enumerate() {
            page[PAGE_SIZE - 2 * (slot + 1)..PAGE_SIZE - 2 * slot].copy_from_slice(&offset.to_le_bytes());
        }
        let anatomy = take_apart(page.into_boxed_slice(), id, Verdict::Unprotected, None);
        let spans: Vec<_> = anatomy.records.iter().map(|r| (r.offset, r.len)).collect();
        assert_eq!(spans, [(126, 5), (96, 10), (106, 20)]);

        // Starts on both sides of 64-byte words, one twice, slots outside the record area (in
        // the header, in the slot array, past the page).
        let offsets = [0u16, 300, 96, 8100, 127, 128, 300, 50, 8180, 40000, u16::MAX];
        let slot_array: Vec<u8> = offsets.iter().rev().flat_map(|o| o.to_le_bytes()).collect();
        let array_start = PAGE_SIZE - slot_array.len();
        // The free space: after the record at 300, past the slot array, before the header.
        for (free_data, after_300) in [(5000, 5000), (9000, 8100), (10, 8100)] {
            let mut ends = RecordEnds { slot_array: &slot_array, free_data, array_start, starts: None };
            let found: Vec<_> = [96, 127, 128, 300, 8100].into_iter().map(|o| ends.after(o)).collect();
            assert_eq!(found, [127, 128, 300, after_300, array_start], "free data at {free_data}");
        }
    }

    #[test]
    fn survives_any_damage() {
        let id = PageId::new(1, 5);
        let row = build_record(&7i32.to_le_bytes(), 2, &[], &[b"abc"]);
        let good = build_page(id, 1, &[&row, &row]);
        let d = decoder();
        for at in (0..200).chain(PAGE_SIZE - 8..PAGE_SIZE) {
            for x in [0u8, 0x7f, 0xff] {
                let mut b = good.clone();
                b[at] = x;
                let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, Some(&d));
                for r in &a.records {
                    for f in a.record_fields(r) {
                        assert!(f.offset + f.len <= PAGE_SIZE);
                    }
                }
            }
        }
        let a = take_apart(vec![0u8; PAGE_SIZE].into_boxed_slice(), id, Verdict::Unprotected, Some(&d));
        assert!(a.error.unwrap().contains("says it is page 0:0"));
    }

    /// A page whose one record, of 2,000 empty variable-length columns (4,004 fields: status A and
    /// B, fixed end, count, then an end offset and a column of no bytes each), is pointed at by
    /// `slots` slots: a damaged slot array.
    fn one_record_many_slots(id: PageId, columns: u16, slots: usize) -> Vec<u8> {
        let mut row = vec![0x20, 0, 4, 0];
        row.extend_from_slice(&columns.to_le_bytes());
        let table_end = 6 + 2 * columns;
        for _ in 0..columns {
            row.extend_from_slice(&table_end.to_le_bytes());
        }
        let mut b = build_page(id, 1, &[&row]);
        b[22..24].copy_from_slice(&(slots as u16).to_le_bytes());
        for s in 0..slots {
            b[PAGE_SIZE - 2 * (s + 1)..PAGE_SIZE - 2 * s].copy_from_slice(&96u16.to_le_bytes());
        }
        b
    }

    #[test]
    fn slots_pointing_at_one_record_share_its_parts() {
        let id = PageId::new(1, 7);
        let columns = 2000u16;
        let a = take_apart(one_record_many_slots(id, columns, 100).into_boxed_slice(), id, Verdict::Unprotected, None);
        let per_record = 4 + 2 * usize::from(columns);
        assert_eq!(a.fields.len(), per_record, "the record is taken apart once");
        assert_eq!(a.records.len(), 100);
        for (slot, r) in a.records.iter().enumerate() {
            assert_eq!((usize::from(r.slot), r.offset, r.len, r.error), (slot, 96, 6 + 2 * usize::from(columns), None));
            assert_eq!(r.fields, a.records[0].fields);
            assert_tiles(&a, r);
        }
    }

    #[test]
    fn bounds_the_fields_of_records_that_overlap() {
        let id = PageId::new(1, 7);
        // Damaged slots pointing into each other's records, each at its own offset: the page's
        // record area repeats status A 0x20 (variable-length columns, no null bitmap), status B
        // 0, then 202 as the fixed part's end. At every fourth byte a record starts whose fixed
        // part ends at 202, where it reads 202 variable-length columns, their end offsets
        // alternating 32 and 202 up to byte 608: 207 fields (status A and B, fixed end, fixed
        // part, count, an end offset a column; the columns lie outside the record, named as
        // damage), from each of 400 slots.
        let slots = 400;
        let array_start = PAGE_SIZE - 2 * slots;
        let mut b = build_page(id, 1, &[]);
        for (i, byte) in b[HEADER_SIZE..array_start].iter_mut().enumerate() {
            *byte = [0x20, 0, 202, 0][i % 4];
        }
        b[22..24].copy_from_slice(&(slots as u16).to_le_bytes());
        for s in 0..slots {
            let offset = (HEADER_SIZE + 4 * s) as u16;
            b[PAGE_SIZE - 2 * (s + 1)..PAGE_SIZE - 2 * s].copy_from_slice(&offset.to_le_bytes());
        }
        let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, None);
        let per_record = 5 + 202;
        // A record is taken apart while the most fields it could add (10 + 3 a variable-length
        // column) stay within the bound.
        let taken = (MAX_FIELDS - (10 + 3 * 202)) / per_record + 1;
        assert!(taken < slots);
        for r in &a.records[..taken] {
            assert_eq!(r.len, 608, "slot {}", r.slot);
            assert!(matches!(r.error, Some(RecordError::Damaged(_))), "slot {}", r.slot);
            assert_eq!(a.record_fields(r).len(), per_record, "slot {}", r.slot);
            assert_tiles(&a, r);
        }
        assert_eq!(a.fields.len(), taken * per_record, "the records taken apart before the bound");
        for r in &a.records[taken..] {
            assert_eq!(r.error, Some(RecordError::TooManyFields), "slot {}", r.slot);
            assert!(a.record_fields(r).is_empty());
        }
        assert_eq!(a.records.len(), slots);
    }

    /// A PAGE compressed data page: the CI structure `ci` at offset 96, then `records`.
    fn compressed_page(id: PageId, ci: &[u8], records: &[&[u8]]) -> Vec<u8> {
        let mut all = vec![ci];
        all.extend_from_slice(records);
        let mut b = build_page(id, 1, &all);
        // The CI structure is no record: slot n is the (n + 1)-th part's.
        for slot in 0..records.len() {
            let from = PAGE_SIZE - 2 * (slot + 2);
            b.copy_within(from..from + 2, PAGE_SIZE - 2 * (slot + 1));
        }
        let last = PAGE_SIZE - 2 * (records.len() + 1);
        b[last..last + 2].fill(0);
        b[22..24].copy_from_slice(&(records.len() as u16).to_le_bytes());
        b[2] |= PAGE_HAS_CI_STRUCTURE;
        b
    }

    /// CI: header 0x06, PageModCount 3, dictionary at 14, size 24; anchor of 3 columns ('abc',
    /// NULL, empty: codes 4, 0, 1); dictionary of two entries, [2]'x' and 'zz'.
    fn small_ci() -> Vec<u8> {
        let mut ci = vec![0x06, 3, 0, 14, 0, 24, 0];
        ci.extend_from_slice(&[0x01, 3, 0x04, 0x01, b'a', b'b', b'c']);
        ci.extend_from_slice(&[2, 0, 8, 0, 10, 0, 2, b'x', b'z', b'z']);
        ci
    }

    #[test]
    fn takes_a_page_compressed_page_apart() {
        let id = PageId::new(1, 200);
        let ci = small_ci();
        // Symbol 0, two bytes 'kk', NULL (codes 12, 3, 0).
        let row = [0x01, 3, 0x3c, 0x00, 0, b'k', b'k'];
        // Forwarded (type 4), long data and a versioning tag: true bit, a complex long value, one
        // byte; the long region holds the column's entry and the back pointer to 1:9 slot 3.
        let mut moved = vec![0x01 | 4 << 2 | 0x20 | 0x02, 3, 0xab, 0x02, 0x42, 0x03, 2, 0, 3, 0x80, 13, 0x80];
        moved.extend_from_slice(&[9, 9, 9, 0x00, 0x04, 9, 0, 0, 0, 1, 0, 3, 0]);
        moved.extend_from_slice(&[0x77; 14]);
        let wide = crate::record::cd::tests::hex(crate::record::cd::tests::BC_EXT_ROW);
        let b = compressed_page(id, &ci, &[&row, &moved, &wide]);
        let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, None);
        assert!(a.error.is_none(), "{:?}", a.error);
        let named = |fields: &[Field], name: &str| {
            let f = fields.iter().find(|f| a.field_name(f) == name).unwrap_or_else(|| panic!("no field {name}"));
            (f.offset, f.len, a.field_value(f, None).into_owned())
        };
        // The CI structure, every byte once.
        let mut at = 96;
        for f in &a.compression_info {
            assert_eq!(f.offset, at, "{}", a.field_name(f));
            at += f.len;
        }
        assert_eq!(at, 96 + 24);
        let ci_fields = &a.compression_info;
        assert_eq!(named(ci_fields, "CI header"), (96, 1, "0x06: ANCHOR_RECORD | DICTIONARY".into()));
        assert_eq!(named(ci_fields, "PageModCount"), (97, 2, "3".into()));
        assert_eq!(named(ci_fields, "dictionary offset"), (99, 2, "14".into()));
        assert_eq!(named(ci_fields, "CI size"), (101, 2, "24".into()));
        assert_eq!(named(ci_fields, "column 1"), (107, 3, "0x616263".into()), "the anchor's prefix of column 1");
        assert_eq!(named(ci_fields, "CD codes of column 3").2, "column 3: empty");
        assert_eq!(named(ci_fields, "dictionary entries"), (110, 2, "2".into()));
        assert_eq!(named(ci_fields, "dictionary end 1"), (114, 2, "10".into()));
        assert_eq!(named(ci_fields, "dictionary entry 0"), (116, 2, "0x0278".into()));
        assert_eq!(named(ci_fields, "dictionary entry 1"), (118, 2, "0x7A7A".into()));

        let r = &a.records[0];
        assert_eq!((r.offset, r.len, r.record_type), (120, row.len(), Some(RecordType::Primary)));
        assert_tiles(&a, r);
        assert_eq!(named(a.record_fields(r), "header").2, "0x01: PRIMARY_RECORD");
        assert_eq!(
            named(a.record_fields(r), "CD codes of column 1").2,
            "column 1: dictionary symbol, column 2: 2 bytes"
        );
        assert_eq!(named(a.record_fields(r), "CD codes of column 3").2, "column 3: NULL");
        assert_eq!(named(a.record_fields(r), "column 1"), (124, 1, "0x00".into()), "symbol 0's byte");
        assert_eq!(named(a.record_fields(r), "column 2"), (125, 2, "0x6B6B".into()));

        let r = &a.records[1];
        assert_eq!((r.len, r.record_type), (moved.len(), Some(RecordType::Forwarded)));
        assert_tiles(&a, r);
        assert_eq!(
            named(a.record_fields(r), "header").2,
            "0x33: FORWARDED_RECORD | LONG_DATA_REGION | VERSIONING_INFO"
        );
        assert_eq!(named(a.record_fields(r), "long data count").2, "2");
        assert_eq!(named(a.record_fields(r), "long end 1").2, "3 (complex: a pointer)");
        let column_2 = a.record_fields(r).iter().find(|f| a.field_name(f) == "column 2").unwrap();
        assert_eq!((column_2.part, column_2.len), (Part::Pointer, 3));
        assert_eq!(named(a.record_fields(r), "back pointer").2, "1:9 slot 3");
        assert_eq!(named(a.record_fields(r), "version tag").1, 14);

        // The Business Central row (84 columns, three clusters: `record/cd.rs`).
        let r = &a.records[2];
        assert_eq!(r.len, 867);
        assert_tiles(&a, r);
        assert_eq!(named(a.record_fields(r), "short cluster 1").2, "50");
        assert_eq!(named(a.record_fields(r), "short cluster 2").2, "50");
        assert!(a.record_fields(r).iter().all(|f| f.part != Part::Undecoded), "no gap in a real record");
        assert_eq!(a.records.len(), 3);
        let json = a.to_json();
        assert_eq!(json["compression_info"][0]["value"], "0x06: ANCHOR_RECORD | DICTIONARY");
    }

    #[test]
    fn survives_any_damage_to_a_compressed_page() {
        let id = PageId::new(1, 203);
        let ci = small_ci();
        let wide = crate::record::cd::tests::hex(crate::record::cd::tests::BC_BASE_ROW);
        let good = compressed_page(id, &ci, &[&[0x01, 3, 0x3c, 0x00, 0, b'k', b'k'], &wide]);
        let end = 96 + ci.len() + 7 + wide.len();
        for at in 96..end {
            for x in [0u8, 0x01, 0x7f, 0x80, 0xff] {
                let mut b = good.clone();
                b[at] = x;
                let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, None);
                let mut cursor = 96;
                for f in &a.compression_info {
                    assert_eq!(f.offset, cursor, "byte {at} set to {x:#04x}");
                    cursor += f.len;
                }
                for r in &a.records {
                    assert_tiles(&a, r);
                    assert!(a.record_fields(r).iter().all(|f| f.offset + f.len <= PAGE_SIZE));
                    for f in a.record_fields(r) {
                        let _ = (a.field_name(f), a.field_value(f, Some(r)));
                    }
                }
            }
        }
    }

    #[test]
    fn takes_compressed_index_records_apart_to_their_child_page() {
        let id = PageId::new(1, 202);
        // Type 6, a 2-byte key, the child page 1:300 (six bytes, code 7).
        let index = [0x19, 2, 0x73, 0x83, 0xe8, 0x2c, 0x01, 0, 0, 1, 0];
        let mut b = build_page(id, 2, &[&index]);
        b[3] = 1; // level 1: a non-leaf page
        let a = take_apart(b.into_boxed_slice(), id, Verdict::Unprotected, None);
        let r = &a.records[0];
        assert_eq!((r.record_type, r.len), (Some(RecordType::Index), index.len()));
        assert_tiles(&a, r);
        let value = |name: &str| {
            let f = a.record_fields(r).iter().find(|f| a.field_name(f) == name).unwrap_or_else(|| panic!("{name}"));
            a.field_value(f, Some(r)).into_owned()
        };
        assert_eq!(value("header"), "0x19: INDEX_RECORD");
        assert_eq!(value("column 1"), "0x83E8");
        assert_eq!(value("down page"), "1:300");
    }

    #[test]
    fn names_damaged_ci_structures_and_cd_records() {
        let id = PageId::new(1, 201);
        let ci = [0x06, 0, 0, 200, 0, 24, 0];
        let row = [0x01, 1, 0x0d];
        let a = take_apart(compressed_page(id, &ci, &[&row]).into_boxed_slice(), id, Verdict::Unprotected, None);
        assert!(a.error.as_deref().unwrap_or("").contains("compression information structure"), "{:?}", a.error);
        let r = &a.records[0];
        assert!(matches!(r.error, Some(RecordError::Damaged(_))), "{:?}", r.error);
        assert!(a.record_error(r).is_some_and(|e| e.contains("CD code 13")), "{:?}", a.record_error(r));
        assert_tiles(&a, r);
    }

    #[test]
    fn parses_page_ids() {
        assert_eq!(parse_page_id("1:153").unwrap(), PageId::new(1, 153));
        assert_eq!(parse_page_id("(3:7)").unwrap(), PageId::new(3, 7));
        assert!(parse_page_id("153").is_err());
        assert!(parse_page_id("1:x").is_err());
    }
}
