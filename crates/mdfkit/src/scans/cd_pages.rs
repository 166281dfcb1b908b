//! Whole pages of ROW and PAGE compressed partitions into Arrow batches, column by column: the
//! [`crate::plain_pages`] path for CD records.
//!
//! A page's CI structure (anchor record, dictionary) is parsed once. Each record's CD array is
//! walked once ([`CdRecord::parse_cells`]), which checks the record and puts each stored value
//! into its output column's cells as a 4-byte [`CdCell`] (where the value lies on the page, or
//! NULL, a true bit, a symbol: no slice, a sixth of a [`CdValue`]'s size); the cells live in a
//! buffer a thread reuses from page to page. Then each output column is appended for all the
//! page's records in one loop, each value read from the page through its cell, its anchor prefix
//! and dictionary symbol resolved against the page's CI structure:
//! - integers, bit, money, date and datetime ([`IntegerForm`]) and decimals (vardecimal) are read
//!   from the stored bytes straight into the column's Arrow values, one typed loop a column
//!   (`BatchBuilder::append_integers`, `BatchBuilder::append_decimals`): the column's anchor is
//!   taken once a page ([`PageColumn`]: its prefixes as big endian words), so that a value of up
//!   to 8 bytes, prefix, suffix or dictionary entry, becomes one word with no bytes joined
//!   ([`PageColumn::word_at`]: one 8-byte read of the page, [`IntegerForm::from_word`],
//!   [`vardecimal::unscaled_word`]); the values that do not (longer ones, damage) leave the loop
//!   for [`CompressionInfo::resolve`], which names their errors;
//! - a value whose compressed form is its ordinary form (varchar, varbinary, (max) types:
//!   [`values::stored_as_is`]) goes to the builder straight from the record;
//! - the others are expanded ([`values::expand`], as [`RowDecoder::stored`] does) into one buffer
//!   reused for the whole column, then converted as every value of their type is
//!   (`ColumnBuilder::append_cells`).
//!
//! Eligibility is decided in two places, both explicit:
//! - [`CdLayout::of`], once per partition: the rows are CD records, the layout has no sparse
//!   column, and no output column holds a text pointer (text, ntext, image) or has a compressed
//!   form this reader refuses (smalldatetime, sql_variant).
//! - [`CdLayout::append_slots`], once per record: a primary record that stores every column read
//!   (none added after it was written) and holds no complex value (LOB root, row-overflow or LOB
//!   pointer).
//!
//! Everything else goes through the row-by-row path one slot at a time, in slot order: ghosts,
//! forwarding stubs and forwarded records, deleted slots, off-row values, rows written before a
//! column was added, damaged records. So both paths give identical rows.

use crate::catalog::rowset::ColumnLocation;
use crate::columnar::BatchBuilder;
use crate::compressed::values::{self, IntegerForm};
use crate::compressed::vardecimal;
use crate::error::Result;
use crate::page::compression_info::{CompressionInfo, PageColumn, PageValue};
use crate::page::Page;
use crate::plain_pages::PageSlots;
use crate::record::cd::{CdCell, CdRecord, CdRecordType, CdValue};
use crate::record::{Record, RecordFormat};
use crate::rows::{ColumnPlan, RowDecoder};
use crate::scan::{self, Flow, ScanMode, ScanStats};
use crate::types::{SqlType, TypeInfo};

/// Where each output column of a compressed partition is, worked out once per partition.
#[derive(Debug, Clone)]
pub struct CdLayout {
    columns: Vec<CdColumn>,
    /// Columns a record must store: the last CD column read, plus one.
    stored_columns: usize,
    /// For each of those, the output column it goes to ([`UNREAD`]: none).
    outputs: Vec<usize>,
}

/// A CD column no output column reads.
const UNREAD: usize = usize::MAX;

#[derive(Debug, Clone, Copy)]
struct CdColumn {
    /// The column's entry in the CD array.
    index: usize,
    /// Its compressed form is its ordinary storage form.
    as_is: bool,
    /// How its values go into Arrow.
    typed: Typed,
}

/// A column's values read straight into Arrow, with no ordinary storage form in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typed {
    /// One integer each.
    Integer(IntegerForm),
    /// vardecimal.
    Decimal,
    /// Expanded to the ordinary storage form, then converted as every value of the type is.
    No,
}

/// One cell of a column being appended: where its ordinary storage form is.
#[derive(Debug, Clone, Copy)]
enum Cell<'a> {
    Null,
    /// In the record (or the page's CI structure) as it is.
    Stored(&'a [u8]),
    /// Expanded into the column's buffer, at this range.
    Expanded(usize, usize),
}

impl CdLayout {
    /// The layout of the decoder's compressed partition, or `None` when its columns need the
    /// row-by-row path (or the partition is not compressed).
    pub fn of(decoder: &RowDecoder) -> Option<Self> {
        if decoder.has_sparse() || decoder.format() != RecordFormat::Cd || decoder.columns().is_empty() {
            return None;
        }
        let mut columns = Vec::with_capacity(decoder.columns().len());
        let mut stored_columns = 0;
        for plan in decoder.columns() {
            let ty = &plan.column.type_info;
            let row_by_row = matches!(
                ty.sql_type,
                SqlType::Text | SqlType::NText | SqlType::Image | SqlType::SmallDateTime | SqlType::SqlVariant
            ) || matches!(ty.sql_type, SqlType::Unknown(_));
            let ColumnLocation::Variable(index) = plan.physical.location() else { return None };
            if row_by_row || plan.physical.is_sparse() {
                return None;
            }
            stored_columns = stored_columns.max(index + 1);
            let typed = match IntegerForm::of(ty) {
                Some(form) => Typed::Integer(form),
                None if matches!(ty.sql_type, SqlType::Decimal | SqlType::Numeric) => Typed::Decimal,
                None => Typed::No,
            };
            columns.push(CdColumn { index, as_is: values::stored_as_is(ty), typed });
        }
        let mut outputs = vec![UNREAD; stored_columns];
        for (j, column) in columns.iter().enumerate() {
            // One output column a CD column (a column read twice takes the row-by-row path).
            if std::mem::replace(&mut outputs[column.index], j) != UNREAD {
                return None;
            }
        }
        Some(CdLayout { columns, stored_columns, outputs })
    }

    /// [`crate::plain_pages::PlainLayout::append_slots`] for CD records.
    pub fn append_slots(&self, slots: PageSlots, batch: &mut BatchBuilder, stats: &mut ScanStats) -> Result<u16> {
        let PageSlots { decoder, reader, page, is_heap, first_slot, max_rows } = slots;
        let ci = scan::page_compression_info(page, RecordFormat::Cd)?;
        let mode = ScanMode { format: RecordFormat::Cd, ..ScanMode::default() };
        let room = usize::from(page.slot_count().saturating_sub(first_slot)).min(max_rows);
        // The run's stored values, column by column (`room` cells an output column: each
        // column's pass then reads its cells in order), and the run's slots; the buffers of the
        // thread's previous page, reused.
        let mut run = SCRATCH.take();
        run.cells.clear();
        run.cells.resize(room * self.columns.len(), CdCell::NULL);
        run.room = room;
        run.slots.clear();
        let area = page.record_area();
        let mut appended = 0usize;
        let mut slot = first_slot;
        let result = loop {
            if slot >= page.slot_count() || appended >= max_rows {
                break self.append_run(decoder, batch, page, ci.as_ref(), &mut run, stats).map(|()| slot);
            }
            if let Ok(Some(at)) = page.live_slot_offset(slot) {
                // Each value straight into its column's cell of the next row, which counts only
                // once the record is one the run takes.
                let (row, mut complex) = (run.slots.len(), false);
                let cells = &mut run.cells;
                let parsed = CdRecord::parse_cells(area, at, self.stored_columns, |i, cell| {
                    complex |= cell.is_complex();
                    match self.outputs.get(i) {
                        Some(&j) if j != UNREAD => {
                            if let Some(target) = cells.get_mut(j * room + row) {
                                *target = cell;
                            }
                        }
                        _ => {}
                    }
                });
                if let Ok(record) = parsed {
                    if record.record_type() == CdRecordType::Primary
                        && record.column_count() >= self.stored_columns
                        && !complex
                    {
                        run.slots.push(slot);
                        appended += 1;
                        slot += 1;
                        continue;
                    }
                }
            }
            // Rows keep their slot order: the run so far goes first.
            if let Err(e) = self.append_run(decoder, batch, page, ci.as_ref(), &mut run, stats) {
                break Err(e);
            }
            run.slots.clear();
            let mut append = |record: &Record, _| {
                batch.append(decoder, record)?;
                appended += 1;
                Ok(Flow::Continue)
            };
            if let Err(e) = scan::visit_slot(reader, page, ci.as_ref(), slot, is_heap, mode, stats, &mut append) {
                break Err(e);
            }
            slot += 1;
        };
        SCRATCH.set(run);
        result
    }

    /// Appends a run of records' stored values to `batch`, one column at a time.
    fn append_run(
        &self,
        decoder: &RowDecoder,
        batch: &mut BatchBuilder,
        page: &Page,
        ci: Option<&CompressionInfo>,
        run: &mut Run,
        stats: &mut ScanStats,
    ) -> Result<()> {
        let rows = run.slots.len();
        if rows == 0 {
            return Ok(());
        }
        let bytes = page.bytes();
        let Run { cells: run_cells, room, slots } = run;
        let (mut expanded, mut joined) = (Vec::new(), Vec::new());
        let mut cells: Vec<Cell> = Vec::new();
        for (i, (plan, &column)) in decoder.columns().iter().zip(&self.columns).enumerate() {
            let stored = &run_cells[i * *room..][..rows];
            let ty = &plan.column.type_info;
            // A value that does not read ends the column's run; its error and slot are kept here.
            let failure = match column.typed {
                Typed::Integer(form) => {
                    let prefixes = page_column(ci, column);
                    let fast = |cell: CdCell| {
                        // A true bit has no bytes and no prefix.
                        if form == IntegerForm::Bit && cell.is_true_bit() {
                            return Some(1);
                        }
                        prefixes.word_at(bytes, cell).and_then(|(word, n)| form.from_word(word, n))
                    };
                    let slow = |cell: CdCell| integer_cell(ty, form, ci, column, cell.value(bytes));
                    let mut failed = None;
                    batch.append_integers(i, plan, read_cells(stored, slots, &mut failed, fast, slow))?;
                    failed
                }
                Typed::Decimal => {
                    let prefixes = page_column(ci, column);
                    let (precision, scale) = (ty.precision, ty.scale);
                    let fast = |cell: CdCell| {
                        let (word, n) = prefixes.word_at(bytes, cell)?;
                        vardecimal::unscaled_word(word, n, precision, scale).ok()
                    };
                    let slow = |cell: CdCell| {
                        resolve(ci, column, cell.value(bytes)).and_then(|v| decimal_cell(ty, v, &mut joined))
                    };
                    let mut failed = None;
                    batch.append_decimals(i, plan, read_cells(stored, slots, &mut failed, fast, slow))?;
                    failed
                }
                Typed::No => None,
            };
            if let Some((e, slot)) = failure {
                return Err(decoder.in_column(e, plan).at_page(page.id()).at_slot(slot));
            }
            if column.typed != Typed::No {
                continue;
            }
            expanded.clear();
            cells.clear();
            for (&stored, &slot) in stored.iter().zip(slots.iter()) {
                let cell = cell(plan, column, ci, stored.value(bytes), &mut expanded, &mut joined)
                    .map_err(|e| decoder.in_column(e, plan).at_page(page.id()).at_slot(slot))?;
                cells.push(cell);
            }
            let expanded = &expanded;
            batch
                .append_column(
                    i,
                    plan,
                    cells.iter().map(|&c| match c {
                        Cell::Null => None,
                        Cell::Stored(bytes) => Some(bytes),
                        Cell::Expanded(start, end) => expanded.get(start..end),
                    }),
                )
                .map_err(|e| decoder.in_column(e, plan).at_page(page.id()))?;
        }
        batch.add_rows(rows);
        stats.rows += rows as u64;
        Ok(())
    }
}

/// The records of a page taken column by column so far: one a thread, its buffers reused from
/// page to page.
#[derive(Default)]
struct Run {
    /// Each output column's stored values, `room` cells a column, the first `slots.len()` used.
    cells: Vec<CdCell>,
    room: usize,
    /// The records' slots, in order (for errors).
    slots: Vec<u16>,
}

thread_local! {
    /// The thread's [`Run`]: the layout is shared by the threads of a scan, its buffers are not.
    static SCRATCH: std::cell::Cell<Run> = std::cell::Cell::new(Run::default());
}

/// Where the ordinary storage form of column `column`'s value `stored` is: its prefix and symbol
/// resolved against the page's CI structure `ci`, expanded into `expanded` unless stored as is
/// (`joined`: a buffer for a prefix joined with its suffix). What [`RowDecoder::stored`] does
/// for one value of a CD record.
fn cell<'a>(
    plan: &ColumnPlan,
    column: CdColumn,
    ci: Option<&CompressionInfo<'a>>,
    stored: CdValue<'a>,
    expanded: &mut Vec<u8>,
    joined: &mut Vec<u8>,
) -> Result<Cell<'a>> {
    let value = resolve(ci, column, stored)?;
    let ty = &plan.column.type_info;
    let start = expanded.len();
    match value {
        PageValue::Stored(CdValue::Null) => return Ok(Cell::Null),
        PageValue::Stored(CdValue::Bytes(bytes)) if column.as_is => return Ok(Cell::Stored(bytes)),
        PageValue::Stored(value) => values::expand(ty, value, expanded)?,
        PageValue::Prefixed { prefix, suffix } if column.as_is => {
            expanded.extend_from_slice(prefix);
            expanded.extend_from_slice(suffix);
        }
        PageValue::Prefixed { prefix, suffix } => {
            values::expand(ty, CdValue::Bytes(join(prefix, suffix, joined)), expanded)?
        }
    }
    Ok(Cell::Expanded(start, expanded.len()))
}

/// Column `column`'s value `stored`, its prefix and symbol resolved against the page's CI
/// structure `ci`.
#[inline]
fn resolve<'a>(ci: Option<&CompressionInfo<'a>>, column: CdColumn, stored: CdValue<'a>) -> Result<PageValue<'a>> {
    match ci {
        Some(ci) => ci.resolve(column.index, stored),
        None => Ok(PageValue::Stored(stored)),
    }
}

/// The integer (NULL: `None`) of a value of type `ty`, of integer form `form`: what [`cell`] and
/// the builder's conversion give, without the ordinary storage form in between, and the same
/// errors ([`values::expand`]'s). The typed loop reads most values through [`PageColumn::word`]
/// and comes here for the others.
#[cold]
fn integer_cell<'a>(
    ty: &TypeInfo,
    form: IntegerForm,
    ci: Option<&CompressionInfo<'a>>,
    column: CdColumn,
    stored: CdValue<'a>,
) -> Result<Option<i64>> {
    let (head, tail) = match resolve(ci, column, stored)? {
        PageValue::Stored(CdValue::Null) => return Ok(None),
        PageValue::Stored(CdValue::Bytes(bytes)) => (bytes, &[][..]),
        PageValue::Prefixed { prefix, suffix } => (prefix, suffix),
        PageValue::Stored(CdValue::TrueBit) if form == IntegerForm::Bit => return Ok(Some(1)),
        PageValue::Stored(other) => return Err(not_stored_as(ty, other)),
    };
    form.value(head, tail).map(Some).ok_or_else(|| values::too_long(ty, head.len() + tail.len()))
}

/// The values of a column's `stored` cells, at `slots`, for its Arrow builder to take in its own
/// loop: NULL for a NULL cell, others read with `fast`, or with `slow` where `fast` gives `None`
/// (a value `fast` does not read: longer than a word, damaged), up to the first that `slow` does
/// not read either, whose
/// error and slot go to `failure`. One tight loop a column, the values going straight into the
/// builder (no buffer in between), inlined with `fast`, with no `Result` a value.
#[inline(always)]
fn read_cells<'r, T, F, S>(
    stored: &'r [CdCell],
    slots: &'r [u16],
    failure: &'r mut Option<(crate::error::Error, u16)>,
    mut fast: F,
    mut slow: S,
) -> impl Iterator<Item = Option<T>> + 'r
where
    F: FnMut(CdCell) -> Option<T> + 'r,
    S: FnMut(CdCell) -> Result<Option<T>> + 'r,
{
    stored.iter().zip(slots).map_while(move |(&cell, &slot)| {
        if cell.is_null() {
            return Some(None);
        }
        match fast(cell) {
            Some(value) => Some(Some(value)),
            None => match read_slowly(&mut slow, cell) {
                Ok(value) => Some(value),
                Err(e) => {
                    *failure = Some((e, slot));
                    None
                }
            },
        }
    })
}

/// `slow(cell)`, out of [`read_cells`]'s loop.
#[cold]
#[inline(never)]
fn read_slowly<T>(slow: &mut impl FnMut(CdCell) -> Result<Option<T>>, cell: CdCell) -> Result<Option<T>> {
    slow(cell)
}

/// Column `column`'s share of the page's CI structure `ci` (none: values as stored).
fn page_column<'c, 'a>(ci: Option<&'c CompressionInfo<'a>>, column: CdColumn) -> PageColumn<'c, 'a> {
    ci.map_or(PageColumn::AS_STORED, |ci| ci.column(column.index))
}

/// The count of `10^-scale` (NULL: `None`) of a vardecimal value of type `ty` (`joined`: a buffer
/// for a prefix joined with its suffix), as [`integer_cell`] reads integers.
#[inline]
fn decimal_cell(ty: &TypeInfo, value: PageValue, joined: &mut Vec<u8>) -> Result<Option<i128>> {
    let bytes = match value {
        PageValue::Stored(CdValue::Null) => return Ok(None),
        PageValue::Stored(CdValue::Bytes(bytes)) => bytes,
        PageValue::Prefixed { prefix, suffix } => join(prefix, suffix, joined),
        PageValue::Stored(other) => return Err(not_stored_as(ty, other)),
    };
    vardecimal::unscaled(bytes, ty.precision, ty.scale).map(Some)
}

/// `prefix` followed by `suffix`, in `joined`.
fn join<'b>(prefix: &[u8], suffix: &[u8], joined: &'b mut Vec<u8>) -> &'b [u8] {
    joined.clear();
    joined.extend_from_slice(prefix);
    joined.extend_from_slice(suffix);
    joined
}

/// The error for a value of type `ty` stored as `other` (a true bit of another type, a symbol
/// without a dictionary, a complex value): [`values::expand`]'s.
#[cold]
fn not_stored_as(ty: &TypeInfo, other: CdValue) -> crate::error::Error {
    match values::expand(ty, other, &mut Vec::new()) {
        Err(e) => e,
        Ok(()) => crate::error::Error::corrupt(format!("{} value stored as {other:?}", ty.spelling())),
    }
}
