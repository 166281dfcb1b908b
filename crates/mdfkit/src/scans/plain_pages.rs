//! Whole pages into Arrow batches, column by column, for partitions with a plain layout.
//!
//! The row-by-row path ([`RowDecoder::stored`] then [`BatchBuilder::append`]) works out where each
//! value is and what type it has once per cell. Here a page's records are located once (where
//! each starts and where its null bitmap and variable-length offsets lie,
//! [`Record::primary_parts`], into a run reused from page to page), then each output column is
//! appended for all of them in one typed loop (`ColumnBuilder::append_cells`, the same
//! conversion the row-by-row path uses; fixed-length values of the common lengths read with
//! their length as a constant).
//!
//! Most pages hold records of one shape (`RecordShape`: the same status byte, fixed part and
//! column count, so the same length and parts when no variable-length column is stored), written
//! end to end in slot order. A record of the last one's shape is taken with three comparisons
//! instead of working out its parts again, and while they also lie end to end the run is kept as
//! where its first record starts and how many follow (`AlikeRows`), read a record length at a
//! time by the column loops; the first record that breaks the pattern turns it into a list.
//!
//! The CSV and JSON Lines exports take a page's records the same way
//! ([`PlainLayout::visit_page`]): a record of the last one's shape is handed on as its bytes, with
//! where each column lies ([`FixedPlace`]), instead of as a parsed [`Record`].
//!
//! Eligibility is decided in two places, both explicit:
//! - [`PlainLayout::of`], once per partition: the rows are uncompressed (FixedVar records), the
//!   layout has no sparse column (chosen or not:
//!   rows may end with a sparse vector), and every output column is an in-row column read
//!   straight from its bytes (no column set, no text/ntext/image, whose in-row bytes are a
//!   text pointer), has a null bit, and a fixed-length one has a known length at an offset
//!   within the fixed part.
//! - [`PlainLayout::takes`], once per record (checked on the record's `PrimaryParts`, without a
//!   [`Record`]): a primary record whose null bitmap covers every
//!   output column, whose fixed part holds every fixed-length one, and whose variable-length
//!   columns read are well-formed and in-row (no row-overflow or LOB pointer).
//!
//! Everything else goes through the row-by-row path one slot at a time, in slot order: ghosts,
//! forwarding stubs and forwarded records, deleted slots, off-row values, rows written before a
//! column was added, damaged records. So both paths give identical rows and the same errors.
//! (What a plain record's bytes mean is `record.rs`'s and `rows.rs`'s knowledge; this module only
//! decides which path a record takes.)

use crate::bytes::{read_u16, read_u32};
use crate::catalog::rowset::ColumnLocation;
use crate::columnar::BatchBuilder;
use crate::error::{Error, Result};
use crate::page::{Page, HEADER_SIZE};
use crate::record::{
    PrimaryParts, Record, RecordFormat, RecordType, VarField, VarSpan, HAS_NULL_BITMAP, HAS_VAR_COLUMNS,
};
use crate::rows::{ColumnPlan, RowDecoder};
use crate::scan::{self, Flow, ScanMode, ScanStats};
use crate::source::PageReader;
use crate::types::SqlType;

/// The slots of one page that a batch takes rows from, page at a time.
#[derive(Clone, Copy)]
pub struct PageSlots<'a> {
    /// The partition's columns.
    pub decoder: &'a RowDecoder,
    /// Reads forwarded records and off-row values.
    pub reader: &'a PageReader,
    /// The page.
    pub page: &'a Page,
    /// A heap's page: forwarding stubs are followed.
    pub is_heap: bool,
    /// The first slot to read.
    pub first_slot: u16,
    /// Rows to append at most.
    pub max_rows: usize,
}

/// Where each output column of a plain partition is, worked out once per partition.
#[derive(Debug, Clone)]
pub struct PlainLayout {
    columns: Vec<PlainColumn>,
    /// The variable-length columns read (each record's must be in-row and well-formed).
    var_indexes: Vec<usize>,
    /// A record's fixed part must reach this far to hold every fixed-length output column.
    fixed_end: usize,
    /// A record's null bitmap must cover this many columns.
    null_bits: usize,
}

#[derive(Debug, Clone, Copy)]
enum PlainColumn {
    Fixed { offset: usize, len: usize, null: NullBit },
    Variable { index: usize, null: NullBit },
}

/// A column's null bit as a byte of the null bitmap and a mask.
#[derive(Debug, Clone, Copy)]
struct NullBit {
    byte: usize,
    mask: u8,
}

impl NullBit {
    /// `bit` is 1-based, as sysrscols numbers it.
    fn new(bit: usize) -> Self {
        NullBit { byte: (bit - 1) / 8, mask: 1 << ((bit - 1) % 8) }
    }

    /// Whether the column is NULL in a record that `PlainLayout::takes` (its bitmap covers the
    /// column): `Record::is_null` without working out the byte and mask again.
    #[inline]
    fn is_set(self, record: &Record) -> bool {
        record.null_bitmap().get(self.byte).is_some_and(|b| b & self.mask != 0)
    }
}

/// A record the run takes: where it starts in the page's record area, and its parts.
#[derive(Debug, Clone, Copy)]
struct PlainRow {
    start: u32,
    /// Where its null bitmap starts.
    nulls: u32,
    parts: PrimaryParts,
}

impl PlainRow {
    /// The record `parts_taken` took at `start` (offsets in a page fit 32 bits).
    #[inline]
    fn new(start: usize, parts: PrimaryParts) -> Self {
        let start32 = start as u32;
        PlainRow { start: start32, nulls: start32 + parts.null_bitmap() as u32, parts }
    }
}

/// A record of a run, as the column loops read it: `parts_taken` checked that its null bitmap
/// covers every output column and its fixed part holds every fixed-length one.
trait RunRecord<'a>: Copy {
    /// The `len` bytes at `offset` of the record (empty past its end, which `parts_taken` ruled
    /// out for a fixed-length output column; no conversion accepts it).
    fn fixed(self, offset: usize, len: usize) -> &'a [u8];

    /// Whether the column of `null` is NULL.
    fn is_null(self, null: NullBit) -> bool;

    /// The first `len` bytes of its null bitmap.
    fn null_bitmap(self, len: usize) -> Option<&'a [u8]>;

    /// The stored bytes of the `index`-th variable-length column, well-formed and in-row
    /// (`parts_taken`); empty when not stored and not NULL either (`rows.rs`).
    fn var(self, index: usize) -> &'a [u8];
}

/// A record of a listed run: where it starts in the page's record area, and its parts.
#[derive(Clone, Copy)]
struct Listed<'a> {
    area: &'a [u8],
    row: &'a PlainRow,
}

impl<'a> RunRecord<'a> for Listed<'a> {
    #[inline]
    fn fixed(self, offset: usize, len: usize) -> &'a [u8] {
        let at = self.row.start as usize + offset;
        self.area.get(at..at + len).unwrap_or_default()
    }

    #[inline]
    fn is_null(self, null: NullBit) -> bool {
        self.area.get(self.row.nulls as usize + null.byte).is_some_and(|b| b & null.mask != 0)
    }

    #[inline]
    fn null_bitmap(self, len: usize) -> Option<&'a [u8]> {
        let at = self.row.nulls as usize;
        self.area.get(at..at + len)
    }

    #[inline]
    fn var(self, index: usize) -> &'a [u8] {
        let b = self.area.get(self.row.start as usize..).unwrap_or_default();
        match self.row.parts.var(b, index) {
            Some(Some(span)) => b.get(span.start..span.end).unwrap_or_default(),
            _ => &[][..],
        }
    }
}

/// A record of an alike run ([`AlikeRows`]): its bytes, and where its null bitmap starts (the
/// same in every record of the run).
#[derive(Clone, Copy)]
struct Alike<'a> {
    bytes: &'a [u8],
    nulls: usize,
}

impl<'a> RunRecord<'a> for Alike<'a> {
    #[inline]
    fn fixed(self, offset: usize, len: usize) -> &'a [u8] {
        self.bytes.get(offset..offset + len).unwrap_or_default()
    }

    #[inline]
    fn is_null(self, null: NullBit) -> bool {
        self.bytes.get(self.nulls + null.byte).is_some_and(|b| b & null.mask != 0)
    }

    #[inline]
    fn null_bitmap(self, len: usize) -> Option<&'a [u8]> {
        self.bytes.get(self.nulls..self.nulls + len)
    }

    /// The records of an alike run store no variable-length column ([`RecordShape`]).
    #[inline]
    fn var(self, _index: usize) -> &'a [u8] {
        &[][..]
    }
}

impl PlainLayout {
    /// The plain layout of the decoder's partition, or `None` when its columns need the
    /// row-by-row path.
    pub fn of(decoder: &RowDecoder) -> Option<Self> {
        if decoder.has_sparse() || decoder.format() != RecordFormat::FixedVar {
            return None;
        }
        let mut columns = Vec::with_capacity(decoder.columns().len());
        let mut var_indexes = Vec::new();
        let (mut fixed_end, mut null_bits) = (4, 0);
        for plan in decoder.columns() {
            let p = &plan.physical;
            let pointer_type =
                matches!(plan.column.type_info.sql_type, SqlType::Text | SqlType::NText | SqlType::Image);
            // vardecimal values are expanded by the row-by-row path (`RowDecoder::stored`).
            if p.is_sparse() || p.null_bit == 0 || pointer_type || plan.is_vardecimal() {
                return None;
            }
            let null_bit = usize::from(p.null_bit);
            null_bits = null_bits.max(null_bit);
            let null = NullBit::new(null_bit);
            columns.push(match p.location() {
                ColumnLocation::Fixed(offset) => {
                    let len = plan.fixed_len()?;
                    if offset < 4 {
                        return None;
                    }
                    fixed_end = fixed_end.max(offset.checked_add(len)?);
                    PlainColumn::Fixed { offset, len, null }
                }
                ColumnLocation::Variable(index) => {
                    var_indexes.push(index);
                    PlainColumn::Variable { index, null }
                }
            });
        }
        Some(PlainLayout { columns, var_indexes, fixed_end, null_bits })
    }

    /// Whether `record` can be decoded column by column (see the module notes).
    pub fn takes(&self, record: &Record) -> bool {
        record.record_type() == RecordType::Primary
            && record.column_count() >= self.null_bits
            && record.fixed_end() >= self.fixed_end
            && self
                .var_indexes
                .iter()
                .all(|&index| matches!(record.var(index), Ok(None | Some(VarField { complex: false, .. }))))
    }

    /// [`Self::takes`] for the record starting at `b[0]`, found without a [`Record`]: its parts
    /// when it is taken. Inlined into both record loops (`append_slots_of`): a call a record
    /// cost `dbo.Wide`'s scan 1.5% more instructions.
    #[inline(always)]
    fn parts_taken(&self, b: &[u8]) -> Option<PrimaryParts> {
        let parts = Record::primary_parts(b)?;
        let taken = usize::from(parts.column_count) >= self.null_bits
            && usize::from(parts.fixed_end) >= self.fixed_end
            && self
                .var_indexes
                .iter()
                .all(|&index| matches!(parts.var(b, index), Some(None | Some(VarSpan { complex: false, .. }))));
        taken.then_some(parts)
    }

    /// Appends the rows of the slots `slots` names (in `slots.decoder`'s columns) to `batch`, counting them (and ghosts,
    /// forwarded rows) in `stats`; returns the slot to continue from (the slot count once the
    /// page is done).
    pub fn append_slots(&self, slots: PageSlots, batch: &mut BatchBuilder, stats: &mut ScanStats) -> Result<u16> {
        // A layout that reads a variable-length column takes records that store one, which have
        // no `RecordShape`: its loop does not look for them.
        if self.var_indexes.is_empty() {
            self.append_slots_of::<true>(slots, batch, stats)
        } else {
            self.append_slots_of::<false>(slots, batch, stats)
        }
    }

    /// [`Self::append_slots`], taking records a [`RecordShape`] at a time where `SHAPES`.
    fn append_slots_of<const SHAPES: bool>(
        &self,
        slots: PageSlots,
        batch: &mut BatchBuilder,
        stats: &mut ScanStats,
    ) -> Result<u16> {
        let PageSlots { decoder, reader, page, is_heap, first_slot, max_rows } = slots;
        // The buffer of the thread's previous page, reused.
        let mut run = PLAIN_ROWS.take();
        run.clear();
        // The run while its records lie end to end with one shape; then `run` lists them.
        let mut alike: Option<AlikeRows> = None;
        let (area, offsets) = page.record_area_and_slots();
        let mut offsets = offsets.skip(usize::from(first_slot));
        let mut appended = 0usize;
        let mut slot = first_slot;
        // The shape of the last record taken, while it has no variable-length columns.
        let mut shape: Option<RecordShape> = None;
        let result = loop {
            let offset = match &mut alike {
                Some(rows) if SHAPES => {
                    let (taken, next) = rows.extend(area, &mut offsets, max_rows - appended);
                    appended += taken;
                    // At most the page's slot count.
                    slot += taken as u16;
                    next
                }
                _ if appended < max_rows => offsets.next(),
                _ => None,
            };
            let Some(offset) = offset else {
                break self.append_run(decoder, batch, area, &run, alike, stats).map(|()| slot);
            };
            let start = usize::from(offset);
            // An offset inside the header (0: deleted) goes the row-by-row way, which names it;
            // one past the record area finds no record there.
            if start >= HEADER_SIZE {
                let parts = match shape {
                    Some(shape) if SHAPES && shape.fits(area, start) => Some(shape.parts),
                    _ => {
                        let parts = area.get(start..).and_then(|b| self.parts_taken(b));
                        if SHAPES {
                            shape = parts.and_then(|parts| RecordShape::of(area, start, parts));
                        }
                        parts
                    }
                };
                if let Some(parts) = parts {
                    match (alike.take(), shape) {
                        (None, Some(shape)) if SHAPES && run.is_empty() => {
                            alike = Some(AlikeRows { first: start, count: 1, shape })
                        }
                        (earlier, _) => {
                            if let Some(earlier) = earlier {
                                earlier.list_into(&mut run);
                            }
                            run.push(PlainRow::new(start, parts));
                        }
                    }
                    appended += 1;
                    slot += 1;
                    continue;
                }
            }
            // Rows keep their slot order: the run so far goes first.
            if let Err(e) = self.append_run(decoder, batch, area, &run, alike.take(), stats) {
                break Err(e);
            }
            run.clear();
            let mut append = |record: &Record, _| {
                batch.append(decoder, record)?;
                appended += 1;
                Ok(Flow::Continue)
            };
            if let Err(e) = scan::visit_slot(reader, page, None, slot, is_heap, ScanMode::default(), stats, &mut append)
            {
                break Err(e);
            }
            slot += 1;
        };
        PLAIN_ROWS.set(run);
        result
    }

    /// The null bitmaps of a run's records folded into one ([`RunNulls`]); `None` when they are
    /// wider than it holds. `parts_taken` checked that each record's bitmap covers `null_bits`
    /// columns.
    fn nulls_in_run<'a>(&self, records: impl Iterator<Item = impl RunRecord<'a>>) -> Option<RunNulls> {
        let len = self.null_bits.div_ceil(8);
        let mut nulls = RunNulls { seen: [0; RunNulls::MAX_BYTES], len };
        let seen = nulls.seen.get_mut(..len)?;
        for r in records {
            seen.iter_mut().zip(r.null_bitmap(len)?).for_each(|(s, b)| *s |= b);
        }
        Some(nulls)
    }

    /// Appends a run to `batch`: the records `rows` lists, or those `alike` holds (one of them
    /// is empty).
    fn append_run(
        &self,
        decoder: &RowDecoder,
        batch: &mut BatchBuilder,
        area: &[u8],
        rows: &[PlainRow],
        alike: Option<AlikeRows>,
        stats: &mut ScanStats,
    ) -> Result<()> {
        let Some(alike) = alike else {
            return self.append_records(decoder, batch, rows.iter().map(move |row| Listed { area, row }), stats);
        };
        // `RecordShape::fits` checked that each record lies within the area.
        let records = area.get(alike.first..alike.end()).ok_or_else(|| {
            Error::corrupt(format!("records at {}..{} run past the record area", alike.first, alike.end()))
        })?;
        let nulls = alike.shape.parts.null_bitmap();
        // A record is at least 4 bytes long (`primary_parts`): `max` only keeps `chunks_exact`'s
        // panic out of reach.
        let records = records.chunks_exact(usize::from(alike.shape.parts.len).max(1));
        self.append_records(decoder, batch, records.map(move |bytes| Alike { bytes, nulls }), stats)
    }

    /// Appends plain records to `batch`, one column at a time.
    fn append_records<'a, R: RunRecord<'a>>(
        &self,
        decoder: &RowDecoder,
        batch: &mut BatchBuilder,
        records: impl ExactSizeIterator<Item = R> + Clone,
        stats: &mut ScanStats,
    ) -> Result<()> {
        let rows = records.len();
        if rows == 0 {
            return Ok(());
        }
        let nulls = self.nulls_in_run(records.clone());
        for (i, (plan, column)) in decoder.columns().iter().zip(&self.columns).enumerate() {
            let appended = match *column {
                // `parts_taken` checked that the fixed part holds the column (`offset + len`
                // cannot overflow: `of` added them): the empty fallback, which no conversion
                // accepts, cannot be reached.
                // The common lengths as constants: the conversions' length checks fold away.
                PlainColumn::Fixed { offset, len, null } => {
                    let null = nulls.as_ref().is_none_or(|seen| seen.may_be_set(null)).then_some(null);
                    let column = FixedColumn { records: records.clone(), offset, null };
                    match len {
                        1 => column.append::<1>(batch, i, plan),
                        2 => column.append::<2>(batch, i, plan),
                        3 => column.append::<3>(batch, i, plan),
                        4 => column.append::<4>(batch, i, plan),
                        5 => column.append::<5>(batch, i, plan),
                        8 => column.append::<8>(batch, i, plan),
                        9 => column.append::<9>(batch, i, plan),
                        16 => column.append::<16>(batch, i, plan),
                        _ => batch.append_column(
                            i,
                            plan,
                            records.clone().map(move |r| {
                                (!null.is_some_and(|null| r.is_null(null))).then(|| r.fixed(offset, len))
                            }),
                        ),
                    }
                }
                PlainColumn::Variable { index, null } => {
                    batch.append_column(i, plan, records.clone().map(move |r| (!r.is_null(null)).then(|| r.var(index))))
                }
            };
            appended.map_err(|e| decoder.in_column(e, plan))?;
        }
        batch.add_rows(rows);
        stats.rows += rows as u64;
        Ok(())
    }

    /// The stored bytes of output column `column` in a record this layout [`takes`](Self::takes)
    /// (`None` for NULL, or past the last column): what the row-by-row path's
    /// [`RowDecoder::stored`] returns for it, without working out again where the value is.
    /// `takes` checked that the fixed part holds every fixed column (`offset + len` cannot
    /// overflow: `of` added them), so the empty fallback, which no conversion accepts, cannot be
    /// reached; a variable-length value not stored but not NULL either is empty (`rows.rs`).
    #[inline]
    pub fn stored<'r>(&self, column: usize, record: &Record<'r>) -> Option<&'r [u8]> {
        match *self.columns.get(column)? {
            PlainColumn::Fixed { offset, len, null } => {
                (!null.is_set(record)).then(|| record.bytes().get(offset..offset + len).unwrap_or_default())
            }
            PlainColumn::Variable { index, null } => {
                (!null.is_set(record)).then(|| record.var(index).ok().flatten().map_or(&[][..], |v| v.bytes))
            }
        }
    }
}

impl PlainLayout {
    /// Where output column `column` lies in a record of one shape ([`PageRow::Alike`]); `None`
    /// for a variable-length column (a layout that reads one hands on no such record) or past
    /// the last column.
    pub fn fixed_place(&self, column: usize) -> Option<FixedPlace> {
        match *self.columns.get(column)? {
            PlainColumn::Fixed { offset, len, null } => Some(FixedPlace { offset, len, null }),
            PlainColumn::Variable { .. } => None,
        }
    }

    /// Calls `each` for every live row of `page` in slot order, as [`scan::visit_page`] does,
    /// with the same statistics, errors and [`Flow`]: a record of the shape of the last record
    /// taken (`RecordShape`) is handed on as its bytes ([`PageRow::Alike`]: three comparisons,
    /// no [`Record`]), every other slot through `scan::visit_slot` as a [`Record`]. Only layouts
    /// that read no variable-length column look for shapes (the records of the others store
    /// one, so have none); a salvage scan goes through [`scan::visit_page`], which skips what
    /// it cannot read.
    pub fn visit_page(
        &self,
        reader: &PageReader,
        page: &Page,
        is_heap: bool,
        mode: ScanMode,
        stats: &mut ScanStats,
        each: &mut impl FnMut(PageRow<'_, '_>) -> Result<Flow>,
    ) -> Result<Flow> {
        if mode.salvage || !self.var_indexes.is_empty() {
            return scan::visit_page(reader, page, is_heap, mode, stats, &mut |record, _| {
                each(PageRow::Record(record))
            });
        }
        stats.pages += 1;
        let ci = scan::page_compression_info(page, mode.format)?;
        let (area, offsets) = page.record_area_and_slots();
        let mut shape: Option<RecordShape> = None;
        for (slot, offset) in (0u16..).zip(offsets) {
            let start = usize::from(offset);
            // An offset inside the header (0: deleted) goes the row-by-row way, which names it.
            if start >= HEADER_SIZE {
                let alike = match shape {
                    Some(shape) if shape.fits(area, start) => Some(shape),
                    _ => {
                        shape = area
                            .get(start..)
                            .and_then(|b| self.parts_taken(b))
                            .and_then(|parts| RecordShape::of(area, start, parts));
                        shape
                    }
                };
                // `fits` (or `primary_parts`, for the record that gave the shape) checked that
                // the record lies within the area.
                let record = alike.and_then(|shape| {
                    let bytes = area.get(start..start + usize::from(shape.parts.len))?;
                    Some(AlikeRecord { bytes, nulls: shape.parts.null_bitmap() })
                });
                if let Some(record) = record {
                    let flow = each(PageRow::Alike(record)).map_err(|e| e.at_page(page.id()).at_slot(slot))?;
                    stats.rows += 1;
                    if flow == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                    continue;
                }
            }
            let mut record = |record: &Record, _| each(PageRow::Record(record));
            if scan::visit_slot(reader, page, ci.as_ref(), slot, is_heap, mode, stats, &mut record)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }
}

/// Where a fixed-length output column lies in a record of one shape, and its null bit.
#[derive(Debug, Clone, Copy)]
pub struct FixedPlace {
    offset: usize,
    len: usize,
    null: NullBit,
}

impl FixedPlace {
    /// The bytes the column stores.
    pub fn stored_len(&self) -> usize {
        self.len
    }
}

/// A live row of a page, as [`PlainLayout::visit_page`] hands it on.
pub enum PageRow<'r, 'a> {
    /// A primary record of the shape of the record before it: every output column is a
    /// fixed-length one and lies where its [`FixedPlace`] says.
    Alike(AlikeRecord<'a>),
    /// Any other row, as [`scan::visit_page`] hands it on.
    Record(&'r Record<'a>),
}

/// A record of one shape ([`PageRow::Alike`]): its bytes, and where its null bitmap starts.
#[derive(Debug, Clone, Copy)]
pub struct AlikeRecord<'a> {
    bytes: &'a [u8],
    nulls: usize,
}

impl<'a> AlikeRecord<'a> {
    /// The stored bytes of the column at `place` (`None` for NULL): what
    /// [`RowDecoder::stored`] returns for it. The record's shape holds every fixed-length output
    /// column (`parts_taken`), so the empty fallback, which no spelling accepts, is not reached.
    #[inline]
    pub fn value(self, place: FixedPlace) -> Option<&'a [u8]> {
        let null = self.bytes.get(self.nulls + place.null.byte).is_some_and(|b| b & place.null.mask != 0);
        (!null).then(|| self.bytes.get(place.offset..place.offset + place.len).unwrap_or_default())
    }
}

/// What [`Record::primary_parts`] reads of a primary record with a null bitmap and no
/// variable-length columns: its status byte A (the record type, the bitmap and versioning tag
/// bits), where its fixed part ends, and its column count, which give its length. Any record with
/// the same three that fits in the record area has the same parts, and so is taken as this one
/// was (`PlainLayout::parts_taken` reads nothing else of a record without variable-length
/// columns): the records of a page are mostly alike, and this is three comparisons a record
/// instead of `parts_taken`'s walk. A record that differs in any of them (another type, a
/// ghost, a row written before a column was added, a damaged one) is read by `parts_taken`.
#[derive(Debug, Clone, Copy)]
struct RecordShape {
    /// The record's first four bytes, status byte B (byte 1, which `primary_parts` does not read)
    /// cleared.
    head: u32,
    column_count: u16,
    parts: PrimaryParts,
}

impl RecordShape {
    /// Bytes 0, 2 and 3 of a record: status byte A and where the fixed part ends.
    const HEAD_MASK: u32 = 0xffff_00ff;

    /// The shape of the record `parts_taken` took at `start`, when it has a null bitmap and no
    /// variable-length columns.
    fn of(area: &[u8], start: usize, parts: PrimaryParts) -> Option<Self> {
        let b = area.get(start..)?;
        let status = *b.first()?;
        if status & HAS_NULL_BITMAP == 0 || status & HAS_VAR_COLUMNS != 0 {
            return None;
        }
        Some(RecordShape { head: read_u32(b, 0)? & Self::HEAD_MASK, column_count: parts.column_count, parts })
    }

    /// Whether the record at `start` has this shape and lies within `area`.
    #[inline]
    fn fits(&self, area: &[u8], start: usize) -> bool {
        let Some(b) = area.get(start..start + usize::from(self.parts.len)) else {
            return false;
        };
        read_u32(b, 0).is_some_and(|head| head & Self::HEAD_MASK == self.head)
            && read_u16(b, usize::from(self.parts.fixed_end)) == Some(self.column_count)
    }
}

/// One fixed-length column of a run of records.
#[derive(Clone)]
struct FixedColumn<I> {
    records: I,
    offset: usize,
    /// The column's null bit; `None` when no record of the run has it set.
    null: Option<NullBit>,
}

impl<'a, R: RunRecord<'a>, I: ExactSizeIterator<Item = R> + Clone> FixedColumn<I> {
    /// Appends the column's `N`-byte values to output column `index` of `batch`; without a
    /// NULL in the run, in a loop that reads no null bit.
    #[inline]
    fn append<const N: usize>(self, batch: &mut BatchBuilder, index: usize, plan: &ColumnPlan) -> Result<()> {
        let FixedColumn { records, offset, null } = self;
        // The closures own their offset and null bit (`move`): borrowed, both were read from
        // memory again after each value stored (the store might have changed them), which kept
        // the loop from hoisting the range checks; a third of the loop's instructions.
        match null {
            Some(null) => {
                batch.append_column(index, plan, records.map(move |r| (!r.is_null(null)).then(|| r.fixed(offset, N))))
            }
            None => batch.append_column(index, plan, records.map(move |r| Some(r.fixed(offset, N)))),
        }
    }
}

/// Records taken end to end with one shape, kept as where the first starts and how many there
/// are until a record breaks the pattern: the column loops then read the run's bytes a record
/// length at a time, with no list of where each record starts.
#[derive(Debug, Clone, Copy)]
struct AlikeRows {
    first: usize,
    count: usize,
    shape: RecordShape,
}

impl AlikeRows {
    /// Where the next record of the run would start.
    #[inline]
    fn end(&self) -> usize {
        self.first + self.count * usize::from(self.shape.parts.len)
    }

    /// Takes the records of `offsets` while each starts where the run ends and has its shape,
    /// `limit` at most; returns how many it took, and the offset that did not extend the run
    /// (`None` once `offsets` or `limit` ends). One short loop, which keeps its state in
    /// registers.
    #[inline]
    fn extend(&mut self, area: &[u8], offsets: &mut impl Iterator<Item = u16>, limit: usize) -> (usize, Option<u16>) {
        let len = usize::from(self.shape.parts.len);
        let mut end = self.end();
        let mut taken = 0;
        let next = loop {
            if taken == limit {
                break None;
            }
            let Some(offset) = offsets.next() else { break None };
            if usize::from(offset) != end || !self.shape.fits(area, end) {
                break Some(offset);
            }
            end += len;
            taken += 1;
        };
        self.count += taken;
        (taken, next)
    }

    /// Lists the run's records in `run`, for a run that goes on with another record.
    fn list_into(&self, run: &mut Vec<PlainRow>) {
        let len = usize::from(self.shape.parts.len);
        run.extend((0..self.count).map(|k| PlainRow::new(self.first + k * len, self.shape.parts)));
    }
}

/// The null bitmaps of a run's records ORed together, over the bytes that cover the output
/// columns: a column whose bit is clear here is NULL in none of them.
struct RunNulls {
    seen: [u8; RunNulls::MAX_BYTES],
    /// The bytes folded.
    len: usize,
}

impl RunNulls {
    /// Bitmap bytes folded at most: 1,024 columns' bits, a table's most without sparse columns
    /// (which plain layouts do not take); a wider layout checks every record's bit.
    const MAX_BYTES: usize = 128;

    /// Whether some record of the run may have `null` set.
    #[inline]
    fn may_be_set(&self, null: NullBit) -> bool {
        self.seen.get(..self.len).and_then(|seen| seen.get(null.byte)).is_none_or(|b| b & null.mask != 0)
    }
}

thread_local! {
    /// The records of the thread's page taken so far: the layout is shared by the threads of a
    /// scan, its buffer is not.
    static PLAIN_ROWS: std::cell::Cell<Vec<PlainRow>> = const { std::cell::Cell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {

    use arrow_array::{Array, Int32Array, RecordBatch, StringArray};

    use super::*;
    use crate::source::tests::reader;

    use crate::page::tests::{build_page, build_page_with_cut_record};
    use crate::page::{PageId, PAGE_SIZE};
    use crate::record::tests::build_record;
    use crate::scan::ScanMode;

    use crate::types::TypeInfo;

    fn ty(sql_type: SqlType, max_length: i16, precision: u8, scale: u8) -> TypeInfo {
        TypeInfo { sql_type, max_length, precision, scale }
    }

    /// Every type a plain layout reads, fixed-length ones first and variable-length ones mixed in
    /// between (the declared layout puts them after the fixed part).
    fn every_type() -> Vec<(String, TypeInfo)> {
        use SqlType::*;
        let types = [
            ty(Bit, 1, 1, 0),
            ty(Int, 4, 10, 0),
            ty(VarChar, 20, 0, 0),
            ty(Bit, 1, 1, 0),
            ty(TinyInt, 1, 3, 0),
            ty(SmallInt, 2, 5, 0),
            ty(BigInt, 8, 19, 0),
            ty(NVarChar, 40, 0, 0),
            ty(Real, 4, 24, 0),
            ty(Float, 8, 53, 0),
            ty(Money, 8, 19, 4),
            ty(SmallMoney, 4, 10, 4),
            ty(Decimal, 5, 9, 2),
            ty(Numeric, 17, 38, 5),
            ty(Date, 3, 10, 0),
            ty(Time, 5, 16, 7),
            ty(Time, 4, 12, 3),
            ty(DateTime, 8, 23, 3),
            ty(SmallDateTime, 4, 16, 0),
            ty(DateTime2, 8, 27, 7),
            ty(DateTime2, 7, 23, 3),
            ty(DateTimeOffset, 10, 34, 7),
            ty(UniqueIdentifier, 16, 0, 0),
            ty(Timestamp, 8, 0, 0),
            ty(Char, 5, 0, 0),
            ty(NChar, 6, 0, 0),
            ty(Binary, 4, 0, 0),
            ty(VarBinary, -1, 0, 0),
            ty(VarChar, -1, 0, 0),
        ];
        types.iter().enumerate().map(|(i, t)| (format!("c{i}"), *t)).collect()
    }

    /// Stored bytes of a valid value of `t` for row `row`: small numbers, dates within their range,
    /// text with and without non-ASCII characters, empty and full variable-length values.
    fn stored(t: &TypeInfo, row: usize) -> Vec<u8> {
        use SqlType::*;
        let r = row as i64;
        let utf16 = |s: &str| s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect::<Vec<u8>>();
        let time = |units: u64, len: usize| units.to_le_bytes()[..len].to_vec();
        let date = |days: u32| days.to_le_bytes()[..3].to_vec();
        let bytes = match t.sql_type {
            TinyInt => vec![row as u8],
            SmallInt => ((r * 7 - 100) as i16).to_le_bytes().to_vec(),
            Int => ((r * 1000 - 5) as i32).to_le_bytes().to_vec(),
            BigInt => ((r << 40) - 3).to_le_bytes().to_vec(),
            Real => (r as f32 * 1.5).to_le_bytes().to_vec(),
            Float => (r as f64 / 3.0).to_le_bytes().to_vec(),
            Money => (r * 123_456 - 7).to_le_bytes().to_vec(),
            SmallMoney => ((r * 99) as i32).to_le_bytes().to_vec(),
            Decimal | Numeric => {
                let mut b = vec![u8::from(!row.is_multiple_of(3))];
                b.extend_from_slice(&((r as u128) * 1_000_003).to_le_bytes()[..t.fixed_length().unwrap() - 1]);
                b
            }
            Date => date(730_000 + row as u32),
            Time => time(row as u64 * 10_000_007 % 864_000_000_000, t.fixed_length().unwrap()),
            DateTime => [(row as u32 * 300).to_le_bytes(), (40_000 + row as i32 - 50).to_le_bytes()].concat(),
            SmallDateTime => [(row as u16 * 7).to_le_bytes(), (40_000u16 + row as u16).to_le_bytes()].concat(),
            DateTime2 => {
                [time(row as u64 * 999_999, t.fixed_length().unwrap() - 3), date(700_000 + row as u32)].concat()
            }
            DateTimeOffset => [
                time(row as u64 * 77_777, 5),
                date(720_000 + row as u32),
                ((r * 15 - 120) as i16).to_le_bytes().to_vec(),
            ]
            .concat(),
            UniqueIdentifier => (0..16).map(|i| (row * 16 + i) as u8).collect(),
            Timestamp => (r * 31).to_le_bytes().to_vec(),
            Char => format!("{:<5}", if row % 4 == 1 { "caf\u{e9}" } else { "ab" }).chars().map(|c| c as u8).collect(),
            NChar => utf16(if row % 4 == 2 { "x\u{20ac}y" } else { "abc" }),
            Binary => (r * 1_000_003).to_le_bytes()[..4].to_vec(),
            VarChar => "v".repeat(row % 7).into_bytes(),
            NVarChar if row % 5 == 3 => utf16("\u{1f600}\u{e9}"),
            NVarChar => utf16(&"n".repeat(row % 9)),
            VarBinary => vec![row as u8; row % 4],
            other => panic!("no test value for {other:?}"),
        };
        if let Some(len) = t.fixed_length().filter(|_| t.max_length >= 0 && !matches!(t.sql_type, VarChar | NVarChar)) {
            assert_eq!(bytes.len(), len, "{t:?}");
        }
        bytes
    }

    /// A record of the declared layout holding the first `columns` columns (a row written before
    /// the others were added), with the 1-based columns in `nulls` NULL and the last
    /// `unstored_vars` variable-length values left out (not NULL: empty).
    fn record(
        declared: &[(String, TypeInfo)],
        row: usize,
        columns: usize,
        nulls: &[usize],
        unstored_vars: usize,
    ) -> Vec<u8> {
        let (mut fixed, mut vars, mut bits) = (Vec::new(), Vec::new(), 8);
        for (i, (_, t)) in declared.iter().enumerate().take(columns) {
            let null = nulls.contains(&(i + 1));
            if t.sql_type == SqlType::Bit {
                if bits == 8 {
                    fixed.push(0);
                    bits = 0;
                }
                if !null && (row + i).is_multiple_of(2) {
                    *fixed.last_mut().unwrap() |= 1 << bits;
                }
                bits += 1;
            } else if t.max_length < 0 || matches!(t.sql_type, SqlType::VarChar | SqlType::NVarChar) {
                vars.push(if null { Vec::new() } else { stored(t, row) });
            } else {
                fixed.extend(if null { vec![0; t.fixed_length().unwrap()] } else { stored(t, row) });
            }
        }
        vars.truncate(vars.len() - unstored_vars.min(vars.len()));
        let vars: Vec<&[u8]> = vars.iter().map(Vec::as_slice).collect();
        build_record(&fixed, columns as u16, nulls, &vars)
    }

    /// Decodes `page` row by row, as the scans did before the fast path.
    fn row_by_row(decoder: &RowDecoder, reader: &PageReader, page: &Page) -> (RecordBatch, ScanStats) {
        let mut batch = BatchBuilder::new(decoder, 16, crate::TimestampUnit::Nanosecond);
        let mut stats = ScanStats::default();
        let mut append = |record: &Record, _| {
            batch.append(decoder, record)?;
            Ok(Flow::Continue)
        };
        scan::visit_page(reader, page, true, ScanMode::default(), &mut stats, &mut append).unwrap();
        stats.pages = 0;
        (batch.finish().unwrap(), stats)
    }

    /// Decodes `page` with the fast path, at most `step` rows a call.
    fn by_columns(decoder: &RowDecoder, reader: &PageReader, page: &Page, step: usize) -> (RecordBatch, ScanStats) {
        let plain = PlainLayout::of(decoder).expect("a plain layout");
        let mut batch = BatchBuilder::new(decoder, 16, crate::TimestampUnit::Nanosecond);
        let mut stats = ScanStats::default();
        let mut slot = 0;
        while slot < page.slot_count() {
            let slots = PageSlots { decoder, reader, page, is_heap: true, first_slot: slot, max_rows: step };
            slot = plain.append_slots(slots, &mut batch, &mut stats).unwrap();
        }
        (batch.finish().unwrap(), stats)
    }

    #[test]
    fn pages_decode_column_by_column_as_row_by_row() {
        let declared = every_type();
        let n = declared.len();
        let mut records = Vec::new();
        for row in 0..40 {
            let nulls: Vec<usize> = match row % 5 {
                0 => vec![],
                1 => (1..=n).collect(),
                2 => (1..=n).filter(|c| c % 2 == 0).collect(),
                3 => (1..=n).filter(|c| c % 3 == 1).collect(),
                _ => vec![row % n + 1],
            };
            records.push(record(&declared, row, n, &nulls, row % 4));
        }
        // Rows written before columns were added: shorter fixed parts and null bitmaps.
        records.push(record(&declared, 40, 3, &[], 0));
        records.push(record(&declared, 41, 12, &[2], 0));
        records.push(record(&declared, 42, n - 1, &[], 0));
        // A ghost, a deleted slot (its offset set to 0 below), a forwarding stub and the
        // forwarded record on page 11 it points to.
        let mut ghost = record(&declared, 43, n, &[], 0);
        ghost[0] = (ghost[0] & !0x0e) | (6 << 1);
        records.push(ghost);
        records.push(record(&declared, 44, n, &[], 0));
        records.push(vec![2 << 1, 11, 0, 0, 0, 1, 0, 0, 0]);
        records.push(record(&declared, 45, n, &[], 0));
        let mut forwarded = record(&declared, 46, n, &[5], 0);
        forwarded[0] |= 1 << 1;
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let mut page_bytes = build_page(PageId::new(1, 10), 1, &refs);
        let deleted_slot = records.len() - 3;
        page_bytes[PAGE_SIZE - 2 * (deleted_slot + 1)..][..2].copy_from_slice(&[0, 0]);
        let target = build_page(PageId::new(1, 11), 1, &[&forwarded]);
        let reader = reader(vec![(10, page_bytes), (11, target)]);
        let decoder = RowDecoder::from_declaration(reader.clone(), "dbo.T", &declared).unwrap();
        let plain = PlainLayout::of(&decoder).expect("every type here is plain");
        let page = reader.read(PageId::new(1, 10)).unwrap();

        let takes = |slot: u16| Record::parse(page.slot_bytes(slot).unwrap().unwrap()).is_ok_and(|r| plain.takes(&r));
        assert!((0..40).all(takes), "full rows take the fast path");
        assert!(!(40..43).any(takes), "rows shorter than the layout take the row-by-row path");

        let (expected, expected_stats) = row_by_row(&decoder, &reader, &page);
        assert_eq!(expected.num_rows(), 40 + 3 + 2, "the ghost and the deleted slot are not rows");
        assert_eq!((expected_stats.ghost_records, expected_stats.forwarded_rows), (1, 1));
        for step in [usize::MAX, 1, 3, 7] {
            let (got, stats) = by_columns(&decoder, &reader, &page, step);
            assert_eq!(got, expected, "{step} rows a call");
            assert_eq!(stats, expected_stats, "{step} rows a call");
        }
        // Values from the generator, not from either decoder.
        let ints = expected.column(1).as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!((ints.value(0), ints.is_null(1), ints.value(3), ints.value(40)), (-5, true, 2995, 39_995));
        let names = expected.column(7).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((names.value(8), names.value(0), names.is_null(2)), ("\u{1f600}\u{e9}", "", true));
        let added = expected.column(5).as_any().downcast_ref::<arrow_array::Int16Array>().unwrap();
        assert!(added.is_null(40), "a column added after the row was written reads NULL");
    }

    /// Records without variable-length columns, most of one shape ([`RecordShape`]), others among
    /// them: each is read as the row-by-row path reads it, and a record of the shape that runs
    /// past the record area is refused by both paths alike.
    #[test]
    fn records_of_one_shape_and_the_others_among_them() {
        use SqlType::*;
        let types =
            [ty(BigInt, 8, 19, 0), ty(Int, 4, 10, 0), ty(Date, 3, 10, 0), ty(Decimal, 5, 9, 2), ty(Bit, 1, 1, 0)];
        let declared: Vec<(String, TypeInfo)> = types.iter().enumerate().map(|(i, t)| (format!("c{i}"), *t)).collect();
        let n = declared.len();
        let mut records: Vec<Vec<u8>> =
            (0..30).map(|row| record(&declared, row, n, if row % 7 == 3 { &[4] } else { &[] }, 0)).collect();
        // Status byte B, which gives no part: the same shape.
        records[2][1] = 0x01;
        // A row written before the last two columns were added: a shorter fixed part.
        records[5] = record(&declared, 5, 3, &[], 0);
        // The same fixed part, a column count one more (its bitmap still one byte).
        let count_at = 4 + 8 + 4 + 3 + 5 + 1;
        records[9][count_at..count_at + 2].copy_from_slice(&(n as u16 + 1).to_le_bytes());
        // A ghost, and a record with a versioning tag.
        records[12][0] = (records[12][0] & !0x0e) | (6 << 1);
        records[20][0] |= 0x40;
        records[20].extend([7; 14]);
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let mut whole_page = build_page(PageId::new(1, 10), 1, &refs);
        // Slots 25 and 26 swapped: records of one shape, not end to end in slot order.
        let (slot_25, slot_26) = (PAGE_SIZE - 2 * 26, PAGE_SIZE - 2 * 27);
        let offset_25: [u8; 2] = whole_page[slot_25..slot_25 + 2].try_into().unwrap();
        whole_page.copy_within(slot_26..slot_26 + 2, slot_25);
        whole_page[slot_26..slot_26 + 2].copy_from_slice(&offset_25);
        // One more slot, pointed at the record area's last 20 bytes: the start of a record.
        let cut_page = build_page_with_cut_record(PageId::new(1, 11), &refs, &records[0]);
        let reader = reader(vec![(10, whole_page), (11, cut_page)]);
        let decoder = RowDecoder::from_declaration(reader.clone(), "dbo.T", &declared).unwrap();

        let page = reader.read(PageId::new(1, 10)).unwrap();
        let (expected, expected_stats) = row_by_row(&decoder, &reader, &page);
        assert_eq!((expected.num_rows(), expected_stats.ghost_records), (29, 1));
        for step in [usize::MAX, 1, 3, 7] {
            let (got, stats) = by_columns(&decoder, &reader, &page, step);
            assert_eq!(got, expected, "{step} rows a call");
            assert_eq!(stats, expected_stats, "{step} rows a call");
        }
        // Values from the generator: row r's int is r * 1000 - 5 (from row 13 on, row r is the
        // batch's r - 1: the ghost is not a row); rows 3, 10, 17 and 24 have their decimal NULL,
        // and so does row 5, written before the column was added.
        let ints = expected.column(1).as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!((ints.value(2), ints.value(5), ints.value(9), ints.value(19)), (1995, 4995, 8995, 19_995));
        let decimals = expected.column(3);
        assert!([3, 5, 10, 16, 23].iter().all(|&i| decimals.is_null(i)), "NULL where the generator put it");
        assert_eq!(decimals.null_count(), 5);
        let keys = expected.column(0).as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
        assert_eq!((keys.value(24), keys.value(25)), ((26 << 40) - 3, (25 << 40) - 3), "slot order");

        let page = reader.read(PageId::new(1, 11)).unwrap();
        let mut stats = ScanStats::default();
        let mut batch = BatchBuilder::new(&decoder, 16, crate::TimestampUnit::Nanosecond);
        let mut append = |record: &Record, _| {
            batch.append(&decoder, record)?;
            Ok(Flow::Continue)
        };
        let row_by_row = scan::visit_page(&reader, &page, true, ScanMode::default(), &mut stats, &mut append);
        let plain = PlainLayout::of(&decoder).unwrap();
        let mut batch = BatchBuilder::new(&decoder, 16, crate::TimestampUnit::Nanosecond);
        let slots = PageSlots {
            decoder: &decoder,
            reader: &reader,
            page: &page,
            is_heap: true,
            first_slot: 0,
            max_rows: usize::MAX,
        };
        let by_columns = plain.append_slots(slots, &mut batch, &mut ScanStats::default());
        let (expected, got) = (row_by_row.unwrap_err().to_string(), by_columns.unwrap_err().to_string());
        assert!(expected.contains("slot 30"), "{expected}");
        assert_eq!(got, expected);
        assert_eq!(batch.len(), 29, "the rows before it are appended");
    }

    #[test]
    fn off_row_values_and_pointer_types_are_not_plain() {
        let declared =
            vec![("id".to_string(), ty(SqlType::Int, 4, 10, 0)), ("v".to_string(), ty(SqlType::VarBinary, -1, 0, 0))];
        let reader = reader(Vec::new());
        let decoder = RowDecoder::from_declaration(reader.clone(), "dbo.T", &declared).unwrap();
        let plain = PlainLayout::of(&decoder).unwrap();
        let mut r = build_record(&7i32.to_le_bytes(), 2, &[], &[&[0u8; 24]]);
        let end = r.len() - 24 - 1;
        assert!(plain.takes(&Record::parse(&r).unwrap()));
        r[end] |= 0x80; // a row-overflow or LOB pointer
        assert!(!plain.takes(&Record::parse(&r).unwrap()));

        let declared = vec![("t".to_string(), ty(SqlType::Text, 16, 0, 0))];
        let decoder = RowDecoder::from_declaration(reader, "dbo.T", &declared).unwrap();
        assert!(PlainLayout::of(&decoder).is_none(), "text columns hold a pointer in the row");
    }
}
