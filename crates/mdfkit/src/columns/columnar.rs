//! Rows into Arrow record batches: one builder per column, values decoded straight from the stored
//! bytes (no intermediate value per cell).
//!
//! | SQL type                      | Arrow type                                           |
//! |-------------------------------|------------------------------------------------------|
//! | bit                           | Boolean                                              |
//! | tinyint / smallint / int / bigint | UInt8 / Int16 / Int32 / Int64                    |
//! | decimal(p,s), numeric(p,s)    | Decimal128(p, s)                                     |
//! | money / smallmoney            | Decimal128(19, 4) / Decimal128(10, 4)                |
//! | real / float                  | Float32 / Float64                                    |
//! | date                          | Date32                                               |
//! | time(n)                       | Time64(µs) for n ≤ 6, Time64(ns) for n = 7           |
//! | datetime                      | Timestamp(ms), 1/300 s ticks rounded as SQL Server prints them (…007 stays …007) |
//! | smalldatetime                 | Timestamp(s)                                         |
//! | datetime2(n)                  | Timestamp(µs) for n ≤ 6, Timestamp(ns) for n = 7 (µs with [`TimestampUnit::Microsecond`]) |
//! | datetimeoffset(n)             | Struct { utc: Timestamp(µs/ns, "UTC"), offset_minutes: Int16 }, unit as datetime2(n) |
//! | char / varchar / text / nchar / nvarchar / ntext / xml | Utf8                        |
//! | binary / varbinary / image, user CLR types | Binary                                  |
//! | hierarchyid                   | Utf8: the path SQL Server's `ToString()` prints (`/1/-2.18/`) |
//! | geometry / geography          | Struct { srid: Int32, wkb: Binary }: OGC/ISO Well-Known Binary, little endian; geography as x = longitude, y = latitude |
//! | sql_variant                   | Struct { base_type: Utf8 (e.g. `decimal(9,2)`), value: Utf8 (SQL Server's spelling) } |
//! | uniqueidentifier              | FixedSizeBinary(16), RFC 4122 byte order: a UUID reader gives the string SQL Server prints |
//! | rowversion / timestamp        | FixedSizeBinary(8)                                   |
//!
//! Nanoseconds since 1970 in an i64 hold only the years 1677 to 2262, while datetime2 goes from
//! 0001 to 9999 (9999-12-31 is an everyday "no end" sentinel). [`TimestampUnit::Nanosecond`] (the
//! default) is exact and refuses a datetime2(7) / datetimeoffset(7) value outside that range by
//! name; [`TimestampUnit::Microsecond`] holds every year and drops the 100 ns digit.
//!
//! Every field carries its declared SQL type in the metadata key `mdfkit.sql_type`
//! (e.g. `decimal(18,2)`, `nvarchar(max)`), so front ends can show what the column was.
//!
//! A check reads rows to verify them, not to keep them ([`BatchBuilder::verifying`]): text and
//! binary columns are read as a scan reads them (LOB and row-overflow links
//! followed, sizes checked) but not spelled into Arrow strings; they come out as `Null` columns
//! of the batch's length. Text that could not be spelled is refused the same way either way
//! (`TextCodec::check`), so a check finds what an export of the rows would.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, FixedSizeBinaryBuilder, Int16Builder, Int32Builder, StringBuilder, StructBuilder,
    TimestampMicrosecondBuilder, TimestampNanosecondBuilder,
};
use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, NullArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, NullBufferBuilder};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::bytes::{read_i16, read_i32, read_i64, read_u16, read_u32, read_u64};
use crate::catalog::model::ColumnInfo;
use crate::clrtypes::ClrKind;
use crate::error::{Error, Result};
use crate::record::Record;
use crate::rows::{ColumnPlan, RowDecoder};
use crate::types::{SqlType, TypeInfo};

/// Field metadata key holding the declared SQL type.
pub const SQL_TYPE_KEY: &str = "mdfkit.sql_type";

const DAYS_0001_TO_1970: i64 = 719_162;
const DAYS_1900_TO_1970: i64 = 25_567;
const MS_PER_DAY: i64 = 86_400_000;

/// The unit of the timestamps of datetime2(7) and datetimeoffset(7) columns (scales 0 to 6 are
/// always microseconds, time(7) always nanoseconds: both exact).
/// A scan split ([`crate::split`]) carries it as `"ns"` or `"us"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimestampUnit {
    /// Exact: every 100 ns tick kept; values outside the years 1677 to 2262 are refused.
    #[default]
    #[serde(rename = "ns")]
    Nanosecond,
    /// Every year 0001 to 9999; the seventh fractional digit (100 ns) is dropped.
    #[serde(rename = "us")]
    Microsecond,
}

/// The Arrow type of a column: [`arrow_type`], except for the CLR types decoded by their user
/// type id (hierarchyid, geometry, geography).
pub fn column_arrow_type(c: &ColumnInfo, unit: TimestampUnit) -> DataType {
    match c.clr_kind() {
        Some(ClrKind::HierarchyId) => DataType::Utf8,
        Some(ClrKind::Geometry | ClrKind::Geography) => DataType::Struct(spatial_fields()),
        _ => arrow_type(&c.type_info, unit),
    }
}

/// The fields of a geometry or geography value.
pub fn spatial_fields() -> Fields {
    Fields::from(vec![Field::new("srid", DataType::Int32, false), Field::new("wkb", DataType::Binary, false)])
}

/// The Arrow type of a SQL type, datetime2(7) / datetimeoffset(7) in `unit`.
pub fn arrow_type(t: &TypeInfo, unit: TimestampUnit) -> DataType {
    use SqlType::*;
    match t.sql_type {
        Bit => DataType::Boolean,
        TinyInt => DataType::UInt8,
        SmallInt => DataType::Int16,
        Int => DataType::Int32,
        BigInt => DataType::Int64,
        Decimal | Numeric => DataType::Decimal128(t.precision.clamp(1, 38), t.scale.min(38) as i8),
        Money => DataType::Decimal128(19, 4),
        SmallMoney => DataType::Decimal128(10, 4),
        Real => DataType::Float32,
        Float => DataType::Float64,
        Date => DataType::Date32,
        Time => DataType::Time64(fine_unit(t.scale)),
        DateTime => DataType::Timestamp(TimeUnit::Millisecond, None),
        SmallDateTime => DataType::Timestamp(TimeUnit::Second, None),
        DateTime2 => DataType::Timestamp(timestamp_unit(t.scale, unit), None),
        DateTimeOffset => DataType::Struct(offset_fields(timestamp_unit(t.scale, unit))),
        Char | VarChar | Text | NChar | NVarChar | NText | Xml => DataType::Utf8,
        SqlVariant => DataType::Struct(variant_fields()),
        UniqueIdentifier => DataType::FixedSizeBinary(16),
        Timestamp => DataType::FixedSizeBinary(8),
        Binary | VarBinary | Image | Clr | Unknown(_) => DataType::Binary,
    }
}

fn fine_unit(scale: u8) -> TimeUnit {
    if scale <= 6 {
        TimeUnit::Microsecond
    } else {
        TimeUnit::Nanosecond
    }
}

/// The unit of a datetime2 / datetimeoffset column of `scale`.
fn timestamp_unit(scale: u8, unit: TimestampUnit) -> TimeUnit {
    match unit {
        TimestampUnit::Nanosecond => fine_unit(scale),
        TimestampUnit::Microsecond => TimeUnit::Microsecond,
    }
}

fn variant_fields() -> Fields {
    Fields::from(vec![Field::new("base_type", DataType::Utf8, false), Field::new("value", DataType::Utf8, false)])
}

fn offset_fields(unit: TimeUnit) -> Fields {
    Fields::from(vec![
        Field::new("utc", DataType::Timestamp(unit, Some("UTC".into())), false),
        Field::new("offset_minutes", DataType::Int16, false),
    ])
}

/// The Arrow schema of the columns a decoder returns, datetime2(7) / datetimeoffset(7) in `unit`.
pub fn schema(decoder: &RowDecoder, unit: TimestampUnit) -> SchemaRef {
    let fields: Vec<Field> = decoder
        .columns()
        .iter()
        .map(|c| {
            let metadata = HashMap::from([(SQL_TYPE_KEY.to_string(), c.column.type_info.spelling())]);
            Field::new(&c.column.name, column_arrow_type(&c.column, unit), true).with_metadata(metadata)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Accumulates rows into Arrow arrays.
pub struct BatchBuilder {
    schema: SchemaRef,
    columns: Vec<ColumnInfo>,
    /// Rows each new batch's builders are sized for.
    capacity: usize,
    builders: Vec<ColumnBuilder>,
    rows: usize,
    /// Stored bytes of the values appended since the last batch: a batch is cut by size too, so
    /// that rows of large LOB values do not pile up gigabytes in one batch.
    bytes: usize,
    off_row: Vec<u8>,
    text: TextRun,
}

/// A run of one column's text values spelled as UTF-8 into one buffer, checked as UTF-8 once for
/// the run (`simdutf8`: safe code takes bytes as text only checked, and a check a value costs more
/// than the value's spelling), then appended value by value.
#[derive(Default)]
struct TextRun {
    utf8: crate::bytes::Utf8Writer,
    /// Where each value of the run ends in `utf8`; `None` for NULL.
    ends: Vec<Option<usize>>,
}

/// A batch is finished once its values reach this many stored bytes, whatever its row count.
/// Small enough that a column's buffers stay under the 2 MiB above which the CLI has glibc map
/// memory afresh (`keep_large_buffers_out_of_the_heap`), so that each batch reuses the heap the
/// last one freed. At 16 MiB a serial scan of a text or LOB table mapped every batch's buffers
/// anew and faulted them in: `dbo.Documents` 78,700 page faults and 0.54 s of CPU against 4,300
/// and 0.25 s, `dbo.Wide` 39,000 against 1,500 (docs/PERFORMANCE.md, 2026-11-27 evening).
pub const BATCH_BYTES: usize = 1 << 20;

enum ColumnBuilder {
    Bool(Bits),
    U8(Prim<UInt8Type>),
    I16(Prim<Int16Type>),
    I32(Prim<Int32Type>),
    I64(Prim<Int64Type>),
    F32(Prim<Float32Type>),
    F64(Prim<Float64Type>),
    Decimal(Prim<Decimal128Type>),
    Date(Prim<Date32Type>),
    TimeUs(Prim<Time64MicrosecondType>),
    TimeNs(Prim<Time64NanosecondType>),
    TsS(Prim<TimestampSecondType>),
    TsMs(Prim<TimestampMillisecondType>),
    TsUs(Prim<TimestampMicrosecondType>),
    TsNs(Prim<TimestampNanosecondType>),
    Offset(StructBuilder),
    Variant(StructBuilder),
    Spatial(StructBuilder),
    Text(StringBuilder),
    Bin(BinaryBuilder),
    Fixed(FixedSizeBinaryBuilder),
    /// Text or binary values verified and counted, not kept ([`BatchBuilder::verifying`]).
    Unkept(usize),
}

/// A fixed-width column's values in a plain `Vec` and its validity bits, appended a run at a time
/// (Arrow's builders do bookkeeping per value); the array is built from them at the end.
struct Prim<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: NullBufferBuilder,
    data_type: DataType,
}

impl<T: ArrowPrimitiveType> Prim<T> {
    fn new(capacity: usize, data_type: DataType) -> Self {
        Prim { values: Vec::with_capacity(capacity), nulls: NullBufferBuilder::new(capacity), data_type }
    }

    fn append_null(&mut self) {
        self.values.push(T::Native::default());
        self.nulls.append_null();
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        let values = std::mem::take(&mut self.values);
        let array = PrimitiveArray::<T>::try_new(values.into(), self.nulls.finish())
            .map_err(|e| Error::corrupt(format!("building a column: {e}")))?;
        // The data type was worked out for `T` (`ColumnBuilder::new`): only its parameters
        // (precision and scale, time zone) change.
        Ok(Arc::new(array.with_data_type(self.data_type.clone())))
    }
}

impl<T: ArrowPrimitiveType> Runs<T::Native> for Prim<T>
where
    T::Native: Default,
{
    /// Valid values are counted and their bits set once per run of them.
    #[inline]
    fn extend(&mut self, values: impl Iterator<Item = Option<T::Native>>) -> usize {
        self.values.reserve(values.size_hint().0);
        let (mut valid, mut all_valid) = (0usize, 0usize);
        for value in values {
            match value {
                None => {
                    self.nulls.append_n_non_nulls(valid);
                    all_valid += valid;
                    valid = 0;
                    self.nulls.append_null();
                    self.values.push(T::Native::default());
                }
                Some(value) => {
                    self.values.push(value);
                    valid += 1;
                }
            }
        }
        self.nulls.append_n_non_nulls(valid);
        all_valid + valid
    }

    #[inline]
    fn extend_values(&mut self, values: impl Iterator<Item = T::Native>) {
        self.values.extend(values);
    }

    fn push_validity(&mut self, valid: impl Iterator<Item = bool>) -> usize {
        push_validity_runs(&mut self.nulls, valid)
    }

    #[inline]
    fn push_valid(&mut self, n: usize) {
        self.nulls.append_n_non_nulls(n);
    }
}

/// Appends validity bits to `nulls` a run of valid ones at a time (Arrow's builder sets bits
/// one call each); returns how many are valid.
#[inline]
fn push_validity_runs(nulls: &mut NullBufferBuilder, valid: impl Iterator<Item = bool>) -> usize {
    let (mut run, mut all) = (0usize, 0usize);
    for v in valid {
        if v {
            run += 1;
        } else {
            nulls.append_n_non_nulls(run);
            all += run;
            run = 0;
            nulls.append_null();
        }
    }
    nulls.append_n_non_nulls(run);
    all + run
}

/// A builder of fixed-width values appended a run at a time.
trait Runs<V: Default> {
    /// Appends a run of values (`None`: NULL); returns how many were not NULL. The values are
    /// small (an error stops the run where the caller keeps it): no large `Result` moves per
    /// value.
    fn extend(&mut self, values: impl Iterator<Item = Option<V>>) -> usize;

    /// Appends a run of values without their validity bits, which [`Self::push_validity`] or
    /// [`Self::push_valid`] adds next: one plain loop over the run's values.
    fn extend_values(&mut self, values: impl Iterator<Item = V>);

    /// The validity bits of the values [`Self::extend_values`] appended, in order; returns how
    /// many are set.
    fn push_validity(&mut self, valid: impl Iterator<Item = bool>) -> usize;

    /// `n` values [`Self::extend_values`] appended are all valid.
    fn push_valid(&mut self, n: usize);

    /// Appends a run of cells, converting the non-NULL ones with `convert`; returns how many
    /// were not NULL. The values go in one pass (NULL ones as zero) that keeps no count in
    /// memory (a count carried from value to value through memory would bound the loop), their
    /// validity in a second pass over the cells only when the run has a NULL. After an error
    /// the builder is not used again (its batch is dropped or built anew).
    #[inline]
    fn append_cells<'a>(
        &mut self,
        cells: impl ExactSizeIterator<Item = Option<&'a [u8]>> + Clone,
        convert: impl Fn(&[u8]) -> Option<V>,
        bad: impl Fn(&[u8]) -> Error,
    ) -> Result<usize> {
        let (mut has_null, mut failure) = (false, None);
        self.extend_values(cells.clone().map(|cell| match cell {
            None => {
                has_null = true;
                V::default()
            }
            Some(bytes) => convert(bytes).unwrap_or_else(|| {
                failure.get_or_insert(bytes);
                V::default()
            }),
        }));
        if let Some(bytes) = failure {
            return Err(bad(bytes));
        }
        if has_null {
            Ok(self.push_validity(cells.map(|cell| cell.is_some())))
        } else {
            self.push_valid(cells.len());
            Ok(cells.len())
        }
    }
}

/// A bit column's values and validity bits (see [`Prim`]).
struct Bits {
    values: BooleanBufferBuilder,
    nulls: NullBufferBuilder,
}

impl Bits {
    fn new(capacity: usize) -> Self {
        Bits { values: BooleanBufferBuilder::new(capacity), nulls: NullBufferBuilder::new(capacity) }
    }

    fn append_null(&mut self) {
        self.values.append(false);
        self.nulls.append_null();
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        let (values, nulls) = (self.values.finish(), self.nulls.finish());
        if nulls.as_ref().is_some_and(|n| n.len() != values.len()) {
            return Err(Error::corrupt("building a bit column: values and nulls differ in length".to_string()));
        }
        Ok(Arc::new(BooleanArray::new(values, nulls)))
    }
}

impl Runs<bool> for Bits {
    #[inline]
    fn extend(&mut self, values: impl Iterator<Item = Option<bool>>) -> usize {
        let (mut valid, mut all_valid) = (0usize, 0usize);
        let nulls = &mut self.nulls;
        pack_bits(
            &mut self.values,
            values.map(|value| match value {
                None => {
                    nulls.append_n_non_nulls(valid);
                    all_valid += valid;
                    valid = 0;
                    nulls.append_null();
                    false
                }
                Some(value) => {
                    valid += 1;
                    value
                }
            }),
        );
        self.nulls.append_n_non_nulls(valid);
        all_valid + valid
    }

    fn extend_values(&mut self, values: impl Iterator<Item = bool>) {
        pack_bits(&mut self.values, values);
    }

    fn push_validity(&mut self, valid: impl Iterator<Item = bool>) -> usize {
        push_validity_runs(&mut self.nulls, valid)
    }

    fn push_valid(&mut self, n: usize) {
        self.nulls.append_n_non_nulls(n);
    }
}

/// Appends `values` to `bits` 64 at a time.
#[inline]
fn pack_bits(bits: &mut BooleanBufferBuilder, values: impl Iterator<Item = bool>) {
    let (mut word, mut n) = (0u64, 0usize);
    for value in values {
        word |= u64::from(value) << n;
        n += 1;
        if n == 64 {
            bits.append_packed_range(0..64, &word.to_le_bytes());
            (word, n) = (0, 0);
        }
    }
    bits.append_packed_range(0..n, &word.to_le_bytes());
}

impl BatchBuilder {
    /// A builder of batches of the decoder's columns, room for `capacity` rows to start with,
    /// datetime2(7) / datetimeoffset(7) in `unit`.
    pub fn new(decoder: &RowDecoder, capacity: usize, unit: TimestampUnit) -> Self {
        Self::of_schema(decoder, capacity, schema(decoder, unit))
    }

    /// A builder for a check: as [`Self::new`], except that text and binary columns are verified
    /// without being spelled, and come out as `Null` columns (see the module documentation).
    pub fn verifying(decoder: &RowDecoder, capacity: usize, unit: TimestampUnit) -> Self {
        let full = schema(decoder, unit);
        let fields = full.fields().iter().zip(decoder.columns()).map(|(field, plan)| {
            // xml and CLR values are checked by decoding them: they stay.
            let plain = matches!(field.data_type(), DataType::Utf8 | DataType::Binary)
                && !matches!(plan.column.type_info.sql_type, SqlType::Xml | SqlType::Clr);
            let field = field.as_ref().clone();
            if plain {
                field.with_data_type(DataType::Null)
            } else {
                field
            }
        });
        Self::of_schema(decoder, capacity, Arc::new(Schema::new(fields.collect::<Vec<_>>())))
    }

    /// A builder of batches of `schema`, the decoder's columns as their fields' types say.
    fn of_schema(decoder: &RowDecoder, capacity: usize, schema: SchemaRef) -> Self {
        let columns: Vec<ColumnInfo> = decoder.columns().iter().map(|c| c.column.clone()).collect();
        let builders =
            columns.iter().zip(schema.fields()).map(|(c, f)| ColumnBuilder::new(c, f.data_type(), capacity)).collect();
        BatchBuilder {
            schema,
            columns,
            capacity,
            builders,
            rows: 0,
            bytes: 0,
            off_row: Vec::new(),
            text: TextRun::default(),
        }
    }

    /// The Arrow schema of the batches (types as in the module documentation).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows appended since the last batch.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was appended since the last batch.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether the batch should be finished: `batch_size` rows, or [`BATCH_BYTES`] of values.
    pub fn is_full(&self, batch_size: usize) -> bool {
        self.rows >= batch_size || self.bytes >= BATCH_BYTES
    }

    /// Appends one row decoded from `record`.
    pub fn append(&mut self, decoder: &RowDecoder, record: &Record) -> Result<()> {
        let BatchBuilder { builders, bytes: total, off_row, text, .. } = self;
        for (plan, builder) in decoder.columns().iter().zip(builders.iter_mut()) {
            let result = match decoder.stored(record, plan, off_row) {
                Ok(None) => {
                    builder.append_null();
                    Ok(())
                }
                Ok(Some(bytes)) => {
                    *total += bytes.len();
                    builder.append(plan, bytes, text)
                }
                Err(e) => Err(e),
            };
            result.map_err(|e| decoder.in_column(e, plan))?;
        }
        self.rows += 1;
        Ok(())
    }

    /// Appends a run of cells to output column `index` (see [`ColumnBuilder::append_cells`]). The
    /// caller appends the same number of cells to every column, then calls [`Self::add_rows`].
    pub(crate) fn append_column<'a>(
        &mut self,
        index: usize,
        plan: &ColumnPlan,
        cells: impl ExactSizeIterator<Item = Option<&'a [u8]>> + Clone,
    ) -> Result<()> {
        self.bytes += builder_at(&mut self.builders, index)?.append_cells(plan, cells, &mut self.text)?;
        Ok(())
    }

    /// Appends a run of integer cells (`None`: NULL) to output column `index`, of an integer,
    /// bit, money, date or datetime column: each the integer its ordinary storage form holds
    /// ([`crate::compressed::values::IntegerForm`]: days since 0001-01-01, `days << 32 | ticks`,
    /// ten-thousandths). One typed loop per column, no bytes in between; the caller ends `cells`
    /// at a value it cannot read, and keeps the error.
    pub(crate) fn append_integers(
        &mut self,
        index: usize,
        plan: &ColumnPlan,
        cells: impl Iterator<Item = Option<i64>>,
    ) -> Result<()> {
        // The integer types fit their builders' natives: IntegerForm read at most their width.
        let valid = match builder_at(&mut self.builders, index)? {
            ColumnBuilder::Bool(b) => b.extend(cells.map(|v| v.map(|v| v != 0))),
            ColumnBuilder::U8(b) => b.extend(cells.map(|v| v.map(|v| v as u8))),
            ColumnBuilder::I16(b) => b.extend(cells.map(|v| v.map(|v| v as i16))),
            ColumnBuilder::I32(b) => b.extend(cells.map(|v| v.map(|v| v as i32))),
            ColumnBuilder::I64(b) => b.extend(cells),
            ColumnBuilder::Decimal(b) => b.extend(cells.map(|v| v.map(i128::from))),
            ColumnBuilder::Date(b) => b.extend(cells.map(|v| v.map(|days| (days - DAYS_0001_TO_1970) as i32))),
            ColumnBuilder::TsMs(b) => {
                b.extend(cells.map(|v| v.map(|v| datetime_millis_of(v as u32, (v >> 32) as i32))))
            }
            _ => return Err(not_read_as(plan, "integers")),
        };
        self.bytes += valid * plan.column.type_info.fixed_length().unwrap_or(1);
        Ok(())
    }

    /// Appends a run of decimal cells (`None`: NULL) to output column `index`, a decimal or
    /// numeric column: each a count of `10^-scale` (as [`Self::append_integers`]).
    pub(crate) fn append_decimals(
        &mut self,
        index: usize,
        plan: &ColumnPlan,
        cells: impl Iterator<Item = Option<i128>>,
    ) -> Result<()> {
        let ColumnBuilder::Decimal(b) = builder_at(&mut self.builders, index)? else {
            return Err(not_read_as(plan, "decimals"));
        };
        let valid = b.extend(cells);
        self.bytes += valid * plan.column.type_info.fixed_length().unwrap_or(1);
        Ok(())
    }

    /// Counts `rows` rows whose cells [`Self::append_column`] appended.
    pub(crate) fn add_rows(&mut self, rows: usize) {
        self.rows += rows;
    }

    /// The rows appended so far as a batch; the builder starts over.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        // The next batch's builders are sized up front, while this batch's buffers are still
        // held: finished builders restart empty and would grow by copying, and memory freed at
        // the top of the heap goes back to the OS only to fault in again for the next batch.
        // Text and binary buffers get room for as many bytes a row as this batch's took, an
        // eighth more: started from a guess (16 bytes a row), they were copied at each doubling.
        let rows = self.rows.max(1);
        let capacity = self.capacity.min(rows);
        let columns = self
            .builders
            .iter_mut()
            .zip(self.columns.iter().zip(self.schema.fields()))
            .map(|(builder, (column, field))| {
                let per_row = builder.value_bytes() / rows + 1;
                let room = (per_row + per_row / 8).saturating_mul(capacity).min(2 * BATCH_BYTES);
                std::mem::replace(builder, ColumnBuilder::with_value_room(column, field.data_type(), capacity, room))
                    .finish()
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| Error::corrupt(format!("building a batch: {e}")))
    }
}

impl ColumnBuilder {
    /// A builder of `c`'s values as `d` (the column's [`column_arrow_type`] in the batch's unit).
    fn new(c: &ColumnInfo, d: &DataType, capacity: usize) -> Self {
        Self::with_value_room(c, d, capacity, capacity * 16)
    }

    /// As [`Self::new`], with room for `value_bytes` bytes of text or binary values.
    fn with_value_room(c: &ColumnInfo, d: &DataType, capacity: usize, value_bytes: usize) -> Self {
        use SqlType::*;
        let t = &c.type_info;
        let d = d.clone();
        match d {
            DataType::Boolean => ColumnBuilder::Bool(Bits::new(capacity)),
            DataType::UInt8 => ColumnBuilder::U8(Prim::new(capacity, d)),
            DataType::Int16 => ColumnBuilder::I16(Prim::new(capacity, d)),
            DataType::Int32 => ColumnBuilder::I32(Prim::new(capacity, d)),
            DataType::Int64 => ColumnBuilder::I64(Prim::new(capacity, d)),
            DataType::Float32 => ColumnBuilder::F32(Prim::new(capacity, d)),
            DataType::Float64 => ColumnBuilder::F64(Prim::new(capacity, d)),
            DataType::Decimal128(..) => ColumnBuilder::Decimal(Prim::new(capacity, d)),
            DataType::Date32 => ColumnBuilder::Date(Prim::new(capacity, d)),
            DataType::Time64(TimeUnit::Microsecond) => ColumnBuilder::TimeUs(Prim::new(capacity, d)),
            DataType::Time64(_) => ColumnBuilder::TimeNs(Prim::new(capacity, d)),
            DataType::Timestamp(TimeUnit::Second, _) => ColumnBuilder::TsS(Prim::new(capacity, d)),
            DataType::Timestamp(TimeUnit::Millisecond, _) => ColumnBuilder::TsMs(Prim::new(capacity, d)),
            DataType::Timestamp(TimeUnit::Microsecond, _) => ColumnBuilder::TsUs(Prim::new(capacity, d)),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => ColumnBuilder::TsNs(Prim::new(capacity, d)),
            DataType::Struct(fields) if t.sql_type == Clr => {
                ColumnBuilder::Spatial(StructBuilder::from_fields(fields, capacity))
            }
            DataType::Struct(fields) if t.sql_type == SqlVariant => {
                ColumnBuilder::Variant(StructBuilder::from_fields(fields, capacity))
            }
            DataType::Struct(fields) => ColumnBuilder::Offset(StructBuilder::from_fields(fields, capacity)),
            DataType::Utf8 => ColumnBuilder::Text(StringBuilder::with_capacity(capacity, value_bytes)),
            DataType::Null => ColumnBuilder::Unkept(0),
            DataType::FixedSizeBinary(n) => ColumnBuilder::Fixed(FixedSizeBinaryBuilder::with_capacity(capacity, n)),
            _ => ColumnBuilder::Bin(BinaryBuilder::with_capacity(capacity, value_bytes)),
        }
    }

    /// The bytes of the text or binary values appended so far (0 for other columns).
    fn value_bytes(&self) -> usize {
        match self {
            ColumnBuilder::Text(b) => b.values_slice().len(),
            ColumnBuilder::Bin(b) => b.values_slice().len(),
            _ => 0,
        }
    }

    fn append_null(&mut self) {
        match self {
            ColumnBuilder::Bool(b) => b.append_null(),
            ColumnBuilder::U8(b) => b.append_null(),
            ColumnBuilder::I16(b) => b.append_null(),
            ColumnBuilder::I32(b) => b.append_null(),
            ColumnBuilder::I64(b) => b.append_null(),
            ColumnBuilder::F32(b) => b.append_null(),
            ColumnBuilder::F64(b) => b.append_null(),
            ColumnBuilder::Decimal(b) => b.append_null(),
            ColumnBuilder::Date(b) => b.append_null(),
            ColumnBuilder::TimeUs(b) => b.append_null(),
            ColumnBuilder::TimeNs(b) => b.append_null(),
            ColumnBuilder::TsS(b) => b.append_null(),
            ColumnBuilder::TsMs(b) => b.append_null(),
            ColumnBuilder::TsUs(b) => b.append_null(),
            ColumnBuilder::TsNs(b) => b.append_null(),
            ColumnBuilder::Offset(b) => {
                append_offset_parts(b, 0, 0);
                b.append(false);
            }
            ColumnBuilder::Variant(b) => {
                append_variant_parts(b, "", "");
                b.append(false);
            }
            ColumnBuilder::Spatial(b) => {
                append_spatial_parts(b, 0, &[]);
                b.append(false);
            }
            ColumnBuilder::Text(b) => b.append_null(),
            ColumnBuilder::Bin(b) => b.append_null(),
            ColumnBuilder::Fixed(b) => b.append_null(),
            ColumnBuilder::Unkept(rows) => *rows += 1,
        }
    }

    fn append(&mut self, plan: &ColumnPlan, bytes: &[u8], text: &mut TextRun) -> Result<()> {
        self.append_cells(plan, std::iter::once(Some(bytes)), text).map(|_| ())
    }

    /// Appends the stored bytes of a run of cells of this column (`None` for NULL), with one
    /// dispatch on the column's type for the whole run; returns the stored bytes appended. Every
    /// value goes through here, one cell at a time from [`BatchBuilder::append`] or a page's worth
    /// from [`crate::plain_pages`], so both paths convert identically.
    pub(crate) fn append_cells<'a>(
        &mut self,
        plan: &ColumnPlan,
        cells: impl ExactSizeIterator<Item = Option<&'a [u8]>> + Clone,
        text: &mut TextRun,
    ) -> Result<usize> {
        let t = &plan.column.type_info;
        let bad = |bytes: &[u8]| unconvertible(plan, bytes);
        let mut total = 0usize;
        // Fixed-width values count their type's storage length (as `append_integers` does).
        let width = t.fixed_length().unwrap_or(1);
        // One typed loop per builder: NULL cells append a null, the others convert with `$convert`.
        macro_rules! each_cell {
            ($builder:expr, |$bytes:ident| $convert:expr) => {
                for cell in cells {
                    match cell {
                        None => $builder.append_null(),
                        Some($bytes) => {
                            total += $bytes.len();
                            let value = $convert.ok_or_else(|| bad($bytes))?;
                            check_array_room(plan, $builder.values_slice().len(), AsRef::<[u8]>::as_ref(&value).len())?;
                            $builder.append_value(value);
                        }
                    }
                }
            };
        }
        match self {
            ColumnBuilder::Bool(b) => {
                let bit = plan.bit_position();
                total = width * b.append_cells(cells, |bytes| bytes.first().map(|byte| byte >> bit & 1 == 1), bad)?
            }
            ColumnBuilder::U8(b) => total = width * b.append_cells(cells, |bytes| bytes.first().copied(), bad)?,
            ColumnBuilder::I16(b) => total = width * b.append_cells(cells, |bytes| read_i16(bytes, 0), bad)?,
            ColumnBuilder::I32(b) => total = width * b.append_cells(cells, |bytes| read_i32(bytes, 0), bad)?,
            ColumnBuilder::I64(b) => total = width * b.append_cells(cells, |bytes| read_i64(bytes, 0), bad)?,
            ColumnBuilder::F32(b) => {
                let f32_of = |bytes: &[u8]| bytes.get(..4).and_then(|v| v.try_into().ok()).map(f32::from_le_bytes);
                total = width * b.append_cells(cells, f32_of, bad)?
            }
            ColumnBuilder::F64(b) => {
                let f64_of = |bytes: &[u8]| bytes.get(..8).and_then(|v| v.try_into().ok()).map(f64::from_le_bytes);
                total = width * b.append_cells(cells, f64_of, bad)?
            }
            ColumnBuilder::Decimal(b) => match t.sql_type {
                SqlType::Money => {
                    total = width * b.append_cells(cells, |bytes| read_i64(bytes, 0).map(i128::from), bad)?
                }
                SqlType::SmallMoney => {
                    total = width * b.append_cells(cells, |bytes| read_i32(bytes, 0).map(i128::from), bad)?
                }
                _ => total = width * b.append_cells(cells, decimal_value, bad)?,
            },
            ColumnBuilder::Date(b) => {
                let days = |bytes: &[u8]| three_byte(bytes).map(|days| (days as i64 - DAYS_0001_TO_1970) as i32);
                total = width * b.append_cells(cells, days, bad)?
            }
            ColumnBuilder::TimeUs(b) => {
                total = width * b.append_cells(cells, |bytes| time_units(bytes).map(|u| scaled(u, t.scale, 6)), bad)?
            }
            ColumnBuilder::TimeNs(b) => {
                total = width * b.append_cells(cells, |bytes| time_units(bytes).map(|u| scaled(u, t.scale, 9)), bad)?
            }
            ColumnBuilder::TsS(b) => total = width * b.append_cells(cells, smalldatetime_seconds, bad)?,
            ColumnBuilder::TsMs(b) => total = width * b.append_cells(cells, datetime_millis, bad)?,
            ColumnBuilder::TsUs(b) => {
                total = width * b.append_cells(cells, |bytes| datetime2(bytes, t.scale, 6), bad)?
            }
            ColumnBuilder::TsNs(b) => {
                total = width * b.append_cells(cells, |bytes| datetime2(bytes, t.scale, 9), bad)?
            }
            ColumnBuilder::Text(b) => match t.sql_type {
                SqlType::Xml => each_cell!(b, |bytes| Some(decode_xml(bytes)?)),
                SqlType::Clr => each_cell!(b, |bytes| Some(crate::clrtypes::hierarchyid_text(bytes)?)),
                _ => {
                    let utf16 = matches!(t.sql_type, SqlType::NChar | SqlType::NVarChar | SqlType::NText);
                    let single_byte = plan.text_codec().single_byte().filter(|_| !utf16);
                    let TextRun { utf8, ends } = text;
                    utf8.clear();
                    ends.clear();
                    // A value that cannot be spelled ends the run: the values before it are
                    // appended, then its error returned.
                    let mut refused = Ok(());
                    for cell in cells {
                        let Some(bytes) = cell else {
                            ends.push(None);
                            continue;
                        };
                        total += bytes.len();
                        if utf16 {
                            crate::bytes::push_utf16le_utf8(bytes, utf8);
                        } else if let Some(single_byte) = single_byte {
                            single_byte.push_utf8(bytes, utf8);
                        } else if let Err(e) = plan.text_codec().decode_into_utf8(bytes, utf8) {
                            refused = Err(e);
                            break;
                        }
                        ends.push(Some(utf8.written().len()));
                    }
                    check_array_room(plan, b.values_slice().len(), utf8.written().len())?;
                    let utf8 = simdutf8::basic::from_utf8(utf8.written())
                        .map_err(|_| Error::corrupt(format!("{} text spelled as invalid UTF-8", t.spelling())))?;
                    let mut start = 0;
                    for end in ends.iter() {
                        match *end {
                            None => b.append_null(),
                            Some(end) => {
                                b.append_value(utf8.get(start..end).unwrap_or_default());
                                start = end;
                            }
                        }
                    }
                    refused?;
                }
            },
            ColumnBuilder::Bin(b) => each_cell!(b, |bytes| Some(bytes)),
            // UTF-16 reads lossily whatever its bytes; char/varchar as `Text` would spell it.
            ColumnBuilder::Unkept(rows) => {
                let code_page = matches!(t.sql_type, SqlType::Char | SqlType::VarChar | SqlType::Text);
                for cell in cells {
                    *rows += 1;
                    if let Some(bytes) = cell {
                        total += bytes.len();
                        if code_page {
                            plan.text_codec().check(bytes)?;
                        }
                    }
                }
            }
            ColumnBuilder::Fixed(b) => {
                for cell in cells {
                    let Some(bytes) = cell else {
                        b.append_null();
                        continue;
                    };
                    total += bytes.len();
                    let appended = if t.sql_type == SqlType::UniqueIdentifier {
                        b.append_value(guid_rfc_order(bytes).ok_or_else(|| bad(bytes))?)
                    } else {
                        b.append_value(bytes.get(..8).ok_or_else(|| bad(bytes))?)
                    };
                    appended.map_err(|e| Error::corrupt(e.to_string()))?;
                }
            }
            // Rare types: each value goes through its own decoder.
            ColumnBuilder::Offset(_) | ColumnBuilder::Variant(_) | ColumnBuilder::Spatial(_) => {
                for cell in cells {
                    match cell {
                        None => self.append_null(),
                        Some(bytes) => {
                            total += bytes.len();
                            self.append_struct(plan, bytes)?;
                        }
                    }
                }
            }
        }
        Ok(total)
    }

    /// Appends one non-NULL value of a struct column (datetimeoffset, sql_variant, geometry,
    /// geography).
    fn append_struct(&mut self, plan: &ColumnPlan, bytes: &[u8]) -> Result<()> {
        let t = &plan.column.type_info;
        let bad = || unconvertible(plan, bytes);
        match self {
            ColumnBuilder::Offset(b) => {
                let split = bytes.len().checked_sub(2).ok_or_else(bad)?;
                let digits = if b.field_builder::<TimestampMicrosecondBuilder>(0).is_some() { 6 } else { 9 };
                let utc = datetime2(&bytes[..split], t.scale, digits).ok_or_else(bad)?;
                append_offset_parts(b, utc, read_i16(bytes, split).ok_or_else(bad)?);
                b.append(true);
            }
            ColumnBuilder::Variant(b) => {
                let collation = plan.column.collation_id;
                let (base, value) =
                    crate::decode::decode_variant(bytes, &|v| crate::collation::decode_text(collation, v))?;
                append_variant_parts(b, &base, &value.to_string());
                b.append(true);
            }
            ColumnBuilder::Spatial(b) => {
                let geography = plan.column.clr_kind() == Some(ClrKind::Geography);
                let (srid, wkb) = crate::spatial::to_wkb(bytes, geography)?;
                if let Some(w) = b.field_builder::<BinaryBuilder>(1) {
                    check_array_room(plan, w.values_slice().len(), wkb.len())?;
                }
                append_spatial_parts(b, srid, &wkb);
                b.append(true);
            }
            _ => return Err(Error::corrupt(format!("{} is not a struct column", t.spelling()))),
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            ColumnBuilder::Bool(b) => b.finish()?,
            ColumnBuilder::U8(b) => b.finish()?,
            ColumnBuilder::I16(b) => b.finish()?,
            ColumnBuilder::I32(b) => b.finish()?,
            ColumnBuilder::I64(b) => b.finish()?,
            ColumnBuilder::F32(b) => b.finish()?,
            ColumnBuilder::F64(b) => b.finish()?,
            ColumnBuilder::Decimal(b) => b.finish()?,
            ColumnBuilder::Date(b) => b.finish()?,
            ColumnBuilder::TimeUs(b) => b.finish()?,
            ColumnBuilder::TimeNs(b) => b.finish()?,
            ColumnBuilder::TsS(b) => b.finish()?,
            ColumnBuilder::TsMs(b) => b.finish()?,
            ColumnBuilder::TsUs(b) => b.finish()?,
            ColumnBuilder::TsNs(b) => b.finish()?,
            ColumnBuilder::Offset(b) | ColumnBuilder::Variant(b) | ColumnBuilder::Spatial(b) => Arc::new(b.finish()),
            ColumnBuilder::Text(b) => Arc::new(b.finish()),
            ColumnBuilder::Bin(b) => Arc::new(b.finish()),
            ColumnBuilder::Fixed(b) => Arc::new(b.finish()),
            ColumnBuilder::Unkept(rows) => Arc::new(NullArray::new(std::mem::take(rows))),
        })
    }
}

/// The xml type is decoded by the text path (`decode::decode`); Arrow reuses it.
fn decode_xml(bytes: &[u8]) -> Result<String> {
    let t = TypeInfo { sql_type: SqlType::Xml, max_length: -1, precision: 0, scale: 0 };
    Ok(crate::decode::decode(&t, bytes, 0, &|_| Ok(String::new()))?.to_string())
}

fn append_offset_parts(b: &mut StructBuilder, utc: i64, offset: i16) {
    match b.field_builder::<TimestampMicrosecondBuilder>(0) {
        Some(ts) => ts.append_value(utc),
        None => {
            if let Some(ts) = b.field_builder::<TimestampNanosecondBuilder>(0) {
                ts.append_value(utc);
            }
        }
    }
    if let Some(o) = b.field_builder::<Int16Builder>(1) {
        o.append_value(offset);
    }
}

fn append_variant_parts(b: &mut StructBuilder, base: &str, value: &str) {
    if let Some(t) = b.field_builder::<StringBuilder>(0) {
        t.append_value(base);
    }
    if let Some(v) = b.field_builder::<StringBuilder>(1) {
        v.append_value(value);
    }
}

fn append_spatial_parts(b: &mut StructBuilder, srid: i32, wkb: &[u8]) {
    if let Some(s) = b.field_builder::<Int32Builder>(0) {
        s.append_value(srid);
    }
    if let Some(w) = b.field_builder::<BinaryBuilder>(1) {
        w.append_value(wkb);
    }
}

/// The most bytes one Arrow string or binary array holds: its offsets are 32-bit.
const ARRAY_BYTES_LIMIT: usize = i32::MAX as usize;

/// Refuses `adding` more bytes to a string or binary array that holds `held`, past
/// [`ARRAY_BYTES_LIMIT`], where Arrow's builder would panic. SQL Server stores values of up to
/// 2 GB - 1 bytes, and text can grow in UTF-8 (a CJK character: 2 bytes in UTF-16, 3 in UTF-8),
/// so one value can pass it, or the values before it in the batch and it.
fn check_array_room(plan: &ColumnPlan, held: usize, adding: usize) -> Result<()> {
    if held.saturating_add(adding) <= ARRAY_BYTES_LIMIT {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "column {}: a {} value of {adding} bytes in Arrow, past the 2 GiB an Arrow string or \
         binary array holds (with {held} bytes of the batch's values before it); CSV and JSON \
         Lines spell values of any length",
        plan.column.name,
        plan.column.type_info.spelling()
    )))
}

/// Sign byte (1 positive, 0 negative), then a little-endian magnitude of up to 16 bytes.
fn decimal_value(bytes: &[u8]) -> Option<i128> {
    let (&sign, magnitude) = bytes.split_first()?;
    // SQL Server stores 4, 8, 12 or 16 bytes (precision 1-9, 10-19, 20-28, 29-38): read as words;
    // any other length byte by byte (a copy into a 16-byte buffer of a variable length costs
    // more than the value).
    let v = match magnitude.len() {
        4 => u128::from(read_u32(magnitude, 0)?),
        8 => u128::from(read_u64(magnitude, 0)?),
        12 => u128::from(read_u64(magnitude, 0)?) | u128::from(read_u32(magnitude, 8)?) << 64,
        16 => u128::from_le_bytes(magnitude.try_into().ok()?),
        n if n > 16 => return None,
        _ => magnitude.iter().rev().fold(0u128, |v, &b| v << 8 | u128::from(b)),
    } as i128;
    Some(if sign == 0 { -v } else { v })
}

/// smalldatetime: minutes since midnight (2 bytes), then days since 1900-01-01 (2 bytes).
fn smalldatetime_seconds(bytes: &[u8]) -> Option<i64> {
    let minutes = i64::from(read_u16(bytes, 0)?);
    let days = i64::from(read_u16(bytes, 2)?);
    Some((days - DAYS_1900_TO_1970) * 86_400 + minutes * 60)
}

/// datetime: 1/300 s ticks since midnight (4 bytes), then days since 1900-01-01 (4 bytes, signed),
/// as milliseconds rounded the way SQL Server prints them.
fn datetime_millis(bytes: &[u8]) -> Option<i64> {
    Some(datetime_millis_of(read_u32(bytes, 0)?, read_i32(bytes, 4)?))
}

/// A datetime of `days` since 1900-01-01 and `ticks` (1/300 s) since midnight, in milliseconds
/// since 1970.
fn datetime_millis_of(ticks: u32, days: i32) -> i64 {
    (i64::from(days) - DAYS_1900_TO_1970) * MS_PER_DAY + (i64::from(ticks) * 10 + 1) / 3
}

/// A uniqueidentifier's 16 bytes (first three groups little endian) in RFC 4122 order.
fn guid_rfc_order(bytes: &[u8]) -> Option<[u8; 16]> {
    let g = bytes.get(..16)?;
    Some([g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]])
}

fn three_byte(b: &[u8]) -> Option<u32> {
    let b = b.get(..3)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], 0]))
}

#[inline]
fn time_units(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 5 {
        return None;
    }
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    Some(i64::from_le_bytes(v))
}

/// Converts `units` of 10^-scale seconds to 10^-digits seconds.
#[inline]
fn scaled(units: i64, scale: u8, digits: u32) -> i64 {
    let scale = u32::from(scale.min(7));
    if digits >= scale {
        units * ten_to(digits - scale)
    } else {
        units / ten_to(scale - digits)
    }
}

/// 10^n, from the table of powers for the differences between scales (0 to 9): `pow` is a
/// loop, which a column loop would run for every value.
#[inline]
fn ten_to(n: u32) -> i64 {
    crate::value::POWERS_OF_TEN.get(n as usize).and_then(|&p| i64::try_from(p).ok()).unwrap_or_else(|| 10i64.pow(n))
}

/// datetime2 bytes (time then 3-byte date) as 10^-digits seconds since 1970-01-01; `None` when
/// the bytes are malformed or the instant does not fit an i64 of that unit (nanoseconds hold
/// only the years 1677 to 2262, datetime2 goes from 0001 to 9999).
#[inline]
fn datetime2(bytes: &[u8], scale: u8, digits: u32) -> Option<i64> {
    let split = bytes.len().checked_sub(3)?;
    let units = scaled(time_units(&bytes[..split])?, scale, digits);
    let days = i64::from(three_byte(&bytes[split..])?) - DAYS_0001_TO_1970;
    days.checked_mul(86_400 * ten_to(digits))?.checked_add(units)
}

/// Why a stored value did not convert to its Arrow type: a datetime2(7) / datetimeoffset(7)
/// outside the nanosecond range (refused by name), or bytes that are no value of the type
/// (damage).
/// The builder of output column `index`.
fn builder_at(builders: &mut [ColumnBuilder], index: usize) -> Result<&mut ColumnBuilder> {
    builders.get_mut(index).ok_or_else(|| Error::corrupt(format!("no output column {index}")))
}

/// The error for a typed run of `what` appended to a column of another type.
fn not_read_as(plan: &ColumnPlan, what: &str) -> Error {
    Error::corrupt(format!("column {} ({}) is not read as {what}", plan.column.name, plan.column.type_info.spelling()))
}

fn unconvertible(plan: &ColumnPlan, bytes: &[u8]) -> Error {
    let t = &plan.column.type_info;
    if nanoseconds_overflow(t, bytes) {
        return Error::unsupported(format!(
            "column {}: a {} value outside the years 1677 to 2262 that Arrow's nanosecond \
             timestamps hold; microsecond timestamps hold every year (`--timestamps us`, Python \
             `timestamps=\"us\"`, the 100 ns digit dropped), and CSV and JSON Lines spell every \
             value exactly",
            plan.column.name,
            t.spelling()
        ));
    }
    Error::corrupt(format!("{} value of {} bytes", t.spelling(), bytes.len()))
}

/// True when `bytes` is a well-formed datetime2(7) or datetimeoffset(7) value that
/// [`datetime2`] refused for its range alone, not for its bytes (in microseconds every
/// well-formed value converts, so this only fires for nanosecond columns).
fn nanoseconds_overflow(t: &TypeInfo, bytes: &[u8]) -> bool {
    let stored = match t.sql_type {
        SqlType::DateTime2 => bytes,
        SqlType::DateTimeOffset => &bytes[..bytes.len().saturating_sub(2)],
        _ => return false,
    };
    fine_unit(t.scale) == TimeUnit::Nanosecond
        && datetime2(stored, t.scale, 9).is_none()
        && datetime2(stored, t.scale, 6).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: TimestampUnit = TimestampUnit::Nanosecond;

    #[test]
    fn maps_types_as_documented() {
        let t = |sql_type, precision, scale| TypeInfo { sql_type, max_length: 0, precision, scale };
        assert_eq!(arrow_type(&t(SqlType::Decimal, 18, 2), NS), DataType::Decimal128(18, 2));
        assert_eq!(arrow_type(&t(SqlType::Money, 19, 4), NS), DataType::Decimal128(19, 4));
        assert_eq!(arrow_type(&t(SqlType::DateTime2, 27, 7), NS), DataType::Timestamp(TimeUnit::Nanosecond, None));
        assert_eq!(arrow_type(&t(SqlType::Time, 10, 2), NS), DataType::Time64(TimeUnit::Microsecond));
        assert_eq!(arrow_type(&t(SqlType::UniqueIdentifier, 0, 0), NS), DataType::FixedSizeBinary(16));
        assert!(matches!(arrow_type(&t(SqlType::DateTimeOffset, 34, 7), NS), DataType::Struct(_)));
        // Microseconds on request: datetime2(7) and datetimeoffset(7) only, time(7) stays exact.
        let us = TimestampUnit::Microsecond;
        assert_eq!(arrow_type(&t(SqlType::DateTime2, 27, 7), us), DataType::Timestamp(TimeUnit::Microsecond, None));
        assert_eq!(
            arrow_type(&t(SqlType::DateTimeOffset, 34, 7), us),
            DataType::Struct(offset_fields(TimeUnit::Microsecond))
        );
        assert_eq!(arrow_type(&t(SqlType::Time, 16, 7), us), DataType::Time64(TimeUnit::Nanosecond));
    }

    #[test]
    fn refuses_values_past_what_an_arrow_array_addresses() {
        let plan = ColumnPlan::declared(
            1,
            "body",
            TypeInfo { sql_type: SqlType::NVarChar, max_length: -1, precision: 0, scale: 0 },
            -1,
            1,
        );
        let last_offset = i32::MAX as usize;
        assert!(check_array_room(&plan, last_offset - 10, 10).is_ok());
        let refused = check_array_room(&plan, last_offset - 10, 11).unwrap_err();
        assert_eq!(refused.kind(), crate::error::ErrorKind::Unsupported);
        assert!(refused.message().starts_with("column body: a nvarchar(max) value of 11 bytes"), "{refused}");
        // The longest value SQL Server stores, 2 GB - 1 bytes of UTF-16, as CJK text in UTF-8.
        let cjk = (i32::MAX as usize) / 2 * 3;
        assert!(check_array_room(&plan, 0, cjk).is_err());
    }

    #[test]
    fn unkept_columns_count_and_verify_their_values_without_spelling_them() {
        use arrow_array::Array;
        let plan = |sql_type| {
            ColumnPlan::declared(1, "c", TypeInfo { sql_type, max_length: -1, precision: 0, scale: 0 }, -1, 1)
        };
        for plan in [plan(SqlType::VarChar), plan(SqlType::NVarChar), plan(SqlType::VarBinary)] {
            let mut builder = ColumnBuilder::new(&plan.column, &DataType::Null, 4);
            let mut spelled = TextRun::default();
            let cells = [Some(&b"caf\xe9"[..]), None, Some(&b"ab"[..])];
            assert_eq!(builder.append_cells(&plan, cells.into_iter(), &mut spelled).unwrap(), 6, "stored bytes");
            builder.append_null();
            let array = builder.finish().unwrap();
            assert_eq!((array.data_type(), array.len()), (&DataType::Null, 4));
            assert!(spelled.utf8.written().is_empty() && spelled.ends.is_empty(), "nothing spelled");
        }
    }

    fn clr_plan(user_type_id: i32) -> ColumnPlan {
        let type_info = TypeInfo { sql_type: SqlType::Clr, max_length: -1, precision: 0, scale: 0 };
        let mut plan = ColumnPlan::declared(1, "c", type_info, -4, 1);
        plan.column.user_type_id = user_type_id;
        plan
    }

    #[test]
    fn clr_columns_by_user_type() {
        use arrow_array::{Array, BinaryArray, Int32Array, StringArray, StructArray};
        // hierarchyid: the path as text.
        let plan = clr_plan(128);
        assert_eq!(column_arrow_type(&plan.column, NS), DataType::Utf8);
        let mut b = ColumnBuilder::new(&plan.column, &DataType::Utf8, 4);
        let mut text = TextRun::default();
        b.append(&plan, &[0x5A, 0xC0], &mut text).unwrap();
        b.append(&plan, &[], &mut text).unwrap();
        b.append_null();
        assert!(b.append(&plan, &[0xFC], &mut text).is_err());
        let a = b.finish().unwrap();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((a.value(0), a.value(1), a.is_null(2)), ("/1/1/", "/", true));

        // geography: SRID and WKB with longitude first.
        let plan = clr_plan(130);
        assert_eq!(column_arrow_type(&plan.column, NS), DataType::Struct(spatial_fields()));
        let mut b = ColumnBuilder::new(&plan.column, &DataType::Struct(spatial_fields()), 4);
        let point = [
            0xE6, 0x10, 0, 0, 1, 0x0C, 0, 0, 0, 0, 0, 0x60, 0x44, 0x40, 0x8F, 0xC2, 0xF5, 0x28, 0x5C, 0x7F, 0x52, 0xC0,
        ];
        b.append(&plan, &point, &mut text).unwrap();
        b.append_null();
        let a = b.finish().unwrap();
        let a = a.as_any().downcast_ref::<StructArray>().unwrap();
        assert!(a.is_valid(0) && a.is_null(1));
        let srid = a.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        let wkb = a.column(1).as_any().downcast_ref::<BinaryArray>().unwrap();
        assert_eq!(srid.value(0), 4326);
        let mut expected = vec![1, 1, 0, 0, 0];
        expected.extend((-73.99f64).to_le_bytes());
        expected.extend(40.75f64.to_le_bytes());
        assert_eq!(wkb.value(0), expected.as_slice());

        // Geometry is the same struct; user CLR types stay binary.
        assert_eq!(column_arrow_type(&clr_plan(129).column, NS), DataType::Struct(spatial_fields()));
        assert_eq!(column_arrow_type(&clr_plan(300).column, NS), DataType::Binary);
    }

    /// A run of text cells, appended in one call as a page's are: every value spelled as it is
    /// alone, NULLs and empty values where they were.
    #[test]
    fn text_runs_read_value_by_value() {
        use arrow_array::{Array, StringArray};
        let utf16 = |s: &str| s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect::<Vec<u8>>();
        let run = |sql_type: SqlType, cells: &[Option<&[u8]>], text: &mut TextRun| {
            let type_info = TypeInfo { sql_type, max_length: -1, precision: 0, scale: 0 };
            let plan = ColumnPlan::declared(1, "c", type_info, -4, 1);
            let mut b = ColumnBuilder::new(&plan.column, &DataType::Utf8, 4);
            let stored = b.append_cells(&plan, cells.iter().copied(), text).unwrap();
            assert_eq!(stored, cells.iter().flatten().map(|c| c.len()).sum::<usize>());
            let a = b.finish().unwrap();
            let a = a.as_any().downcast_ref::<StringArray>().unwrap();
            (0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i).to_string())).collect::<Vec<_>>()
        };
        let mut text = TextRun::default();
        // Latin-1 units whose low bytes would form valid UTF-8 (C3 A9) must not be taken as it.
        let (plain, latin) = (utf16("plain text"), utf16("\u{c3}\u{a9}\u{20ac}\u{1f600}"));
        let lone: &[u8] = &[0x41, 0, 0x00, 0xd8];
        let cells = [Some(&plain[..]), None, Some(&latin[..]), Some(&[][..]), Some(lone)];
        let spelled = ["plain text", "", "\u{c3}\u{a9}\u{20ac}\u{1f600}", "", "A\u{fffd}"];
        let expected: Vec<_> = spelled.iter().enumerate().map(|(i, s)| (i != 1).then(|| s.to_string())).collect();
        assert_eq!(run(SqlType::NVarChar, &cells, &mut text), expected);
        // varchar in the declared collation's code page, 1252; the same buffers reused.
        let cells: [Option<&[u8]>; 4] = [Some(b"caf\xe9"), None, Some(b"\x80 \x9f"), Some(b"plain")];
        let expected = [Some("café"), None, Some("€ Ÿ"), Some("plain")].map(|v| v.map(String::from));
        assert_eq!(run(SqlType::VarChar, &cells, &mut text), expected);
        // A page's worth of mixed values: the run's check goes through SIMD blocks of 64 bytes
        // that values and multi-byte characters cross.
        let words = ["Ελλάδα", "Москва", "東京都", "Zürich", "plain", "😀", ""];
        let values: Vec<String> = (0..60).map(|i| words[i % 7].repeat(i % 5 + 1)).collect();
        let stored: Vec<Vec<u8>> = values.iter().map(|v| utf16(v)).collect();
        let cells: Vec<Option<&[u8]>> = stored.iter().map(|v| Some(&v[..])).collect();
        let expected: Vec<Option<String>> = values.into_iter().map(Some).collect();
        assert_eq!(run(SqlType::NVarChar, &cells, &mut text), expected);
    }

    #[test]
    fn converts_times_exactly() {
        assert_eq!(scaled(123, 3, 6), 123_000);
        assert_eq!(scaled(1_234_567, 7, 9), 123_456_700);
        assert_eq!(scaled(1_234_567, 7, 6), 123_456);
        // One second at every scale, in microseconds and nanoseconds.
        for scale in 0..=7u8 {
            let second = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000][usize::from(scale)];
            assert_eq!(
                (scaled(second, scale, 6), scaled(second, scale, 9)),
                (1_000_000, 1_000_000_000),
                "scale {scale}"
            );
        }
        // 1970-01-02 00:00:01.5 at scale 1.
        let days = (DAYS_0001_TO_1970 + 1) as u32;
        let mut b = 15u32.to_le_bytes()[..3].to_vec();
        b.extend_from_slice(&days.to_le_bytes()[..3]);
        assert_eq!(datetime2(&b, 1, 6), Some(86_400_000_000 + 1_500_000));
        assert_eq!(decimal_value(&[0, 0x10, 0x27, 0, 0]), Some(-10_000));
    }

    #[test]
    fn datetime2_7_outside_nanoseconds_is_refused_by_range_not_as_damage() {
        let t = TypeInfo { sql_type: SqlType::DateTime2, max_length: 8, precision: 27, scale: 7 };
        // datetime2(7): 5 bytes of 100 ns ticks, then 3 bytes of days since 0001-01-01.
        let at = |days: u32| [&[0u8; 5][..], &days.to_le_bytes()[..3]].concat();
        let sentinel = at(3_652_058); // 9999-12-31, a common "no end" value
        assert_eq!(datetime2(&sentinel, 7, 9), None);
        assert!(nanoseconds_overflow(&t, &sentinel));
        assert!(nanoseconds_overflow(&t, &at(0))); // 0001-01-01
        let in_range = at(DAYS_0001_TO_1970 as u32 + 1);
        assert_eq!(datetime2(&in_range, 7, 9), Some(86_400_000_000_000));
        assert!(!nanoseconds_overflow(&t, &in_range));
        // Malformed bytes stay damage.
        assert!(!nanoseconds_overflow(&t, &[1, 2]));
    }
}
