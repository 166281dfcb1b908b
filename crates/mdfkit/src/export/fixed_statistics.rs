//! Minimum, maximum and null count of a Parquet export's fixed-length columns, gathered from
//! their Arrow values instead of by parquet-rs.
//!
//! Parquet stores a decimal of more than 18 digits (`money`: decimal(19,4); `decimal(19..38)`)
//! and a fixed-size binary (`uniqueidentifier`, `rowversion`) as FIXED_LEN_BYTE_ARRAY: a decimal
//! as the last `width` bytes of its big-endian two's complement, `width` the fewest bytes its
//! precision needs (Parquet's LogicalTypes.md, "DECIMAL"), ordered as signed numbers; a binary
//! as its bytes, ordered as unsigned bytes. parquet-rs compares such values one `Bytes` slice at
//! a time to keep a column's bounds: for `money` that was 40% of the column's encoding (on
//! 2026-11-28, `Fact`'s export without compression: 220 of 560 ms of CPU for its 7 M amounts).
//! Here the bounds are kept as `i128` or byte strings over whole arrays, and the chunk's
//! statistics set to what parquet-rs would have written (the unit test compares the two). The
//! bounds are bytes of their own: parquet-rs's are slices of a batch's buffer, which the file
//! writer would keep alive until the footer (18 MB over `Fact`'s 8 GB export).
//! What is lost: the page-level bounds of these columns (their column index), which engines
//! use to skip pages; the row groups' bounds, that they skip row groups by, stay.

use arrow_array::cast::AsArray;
use arrow_array::types::Decimal128Type;
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::arrow::arrow_writer::ArrowColumnChunk;
use parquet::data_type::FixedLenByteArray;
use parquet::file::statistics::{Statistics, ValueStatistics};

use super::delta_stats::whole_range;

/// Bounds of one fixed-length column chunk, fed each Arrow array written to it.
#[derive(Debug, Clone)]
pub(super) enum FixedBounds {
    /// A decimal stored in `width` bytes, compared as a number.
    Decimal { width: usize, range: Option<(i128, i128)>, nulls: u64 },
    /// A fixed-size binary, compared as unsigned bytes.
    Binary { range: Option<(Vec<u8>, Vec<u8>)>, nulls: u64 },
}

impl FixedBounds {
    /// The bounds to keep for a flat column of Arrow type `data_type` that Parquet stores in
    /// `width`-byte fixed-length values; `None` for the types parquet-rs is left to bound.
    pub(super) fn of(data_type: &DataType, width: usize) -> Option<Self> {
        match data_type {
            DataType::Decimal128(..) if (1..=16).contains(&width) => {
                Some(FixedBounds::Decimal { width, range: None, nulls: 0 })
            }
            DataType::FixedSizeBinary(_) => Some(FixedBounds::Binary { range: None, nulls: 0 }),
            _ => None,
        }
    }

    /// Adds `array`'s values (of the type the bounds were made for; others are ignored).
    pub(super) fn add(&mut self, array: &dyn Array) {
        match self {
            FixedBounds::Decimal { range, nulls, .. } => {
                if array.as_primitive_opt::<Decimal128Type>().is_none() {
                    return;
                }
                *nulls += array.null_count() as u64;
                if let Some((low, high)) = whole_range::<Decimal128Type>(array, array.nulls(), |v| v) {
                    *range = Some(range.map_or((low, high), |(l, h)| (l.min(low), h.max(high))));
                }
            }
            FixedBounds::Binary { range, nulls } => {
                let Some(values) = array.as_fixed_size_binary_opt() else { return };
                *nulls += values.null_count() as u64;
                for value in values.iter().flatten() {
                    match range {
                        None => *range = Some((value.to_vec(), value.to_vec())),
                        Some((low, high)) => {
                            if value < low.as_slice() {
                                low.copy_from_slice(value);
                            } else if value > high.as_slice() {
                                high.copy_from_slice(value);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The chunk statistics parquet-rs writes for these values: exact bounds, the null count, no
    /// distinct count; the bounds also in the old `min`/`max` fields where the order is signed.
    fn statistics(self) -> Statistics {
        let (range, nulls, signed) = match self {
            FixedBounds::Decimal { width, range, nulls } => {
                let bytes = |v: i128| v.to_be_bytes()[16 - width..].to_vec();
                (range.map(|(low, high)| (bytes(low), bytes(high))), nulls, true)
            }
            FixedBounds::Binary { range, nulls } => (range, nulls, false),
        };
        let (min, max) = range.map(|(low, high)| (FixedLenByteArray::from(low), FixedLenByteArray::from(high))).unzip();
        Statistics::FixedLenByteArray(
            ValueStatistics::new(min, max, None, Some(nulls), false).with_backwards_compatible_min_max(signed),
        )
    }

    /// Sets `chunk`'s statistics to these bounds.
    pub(super) fn set_on(self, chunk: &mut ArrowColumnChunk) -> parquet::errors::Result<()> {
        let close = chunk.close_mut();
        close.metadata = close.metadata.clone().into_builder().set_statistics(self.statistics()).build()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Decimal128Array, FixedSizeBinaryArray};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::arrow_writer::compute_leaves;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};

    use super::*;

    /// The chunk statistics of `batches` (one column) written with parquet-rs's own statistics,
    /// and with them off and [`FixedBounds`] set in their place.
    fn crate_and_ours(field: Field, batches: &[ArrayRef]) -> (Option<Statistics>, Option<Statistics>) {
        let schema = Arc::new(Schema::new(vec![field.clone()]));
        let chunk_statistics = |props: WriterProperties, ours: bool| {
            let (writer, factory) = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))
                .and_then(ArrowWriter::into_serialized_writer)
                .unwrap();
            let width = writer.schema_descr().column(0).type_length() as usize;
            let mut bounds = FixedBounds::of(field.data_type(), width).expect("a fixed-length type");
            let mut column = factory.create_column_writers(0).unwrap().remove(0);
            for array in batches {
                bounds.add(array.as_ref());
                for leaf in compute_leaves(&field, array).unwrap() {
                    column.write(&leaf).unwrap();
                }
            }
            let mut chunk = column.close().unwrap();
            if ours {
                bounds.set_on(&mut chunk).unwrap();
            }
            chunk.close().metadata.statistics().cloned()
        };
        let theirs = chunk_statistics(WriterProperties::builder().build(), false);
        let off = WriterProperties::builder().set_statistics_enabled(EnabledStatistics::None).build();
        (theirs, chunk_statistics(off, true))
    }

    fn decimals(precision: u8, scale: i8, values: Vec<Option<i128>>) -> ArrayRef {
        Arc::new(Decimal128Array::from(values).with_precision_and_scale(precision, scale).unwrap())
    }

    #[test]
    fn decimal_bounds_are_the_ones_parquet_rs_writes() {
        let money = Field::new("amount", DataType::Decimal128(19, 4), true);
        let (theirs, ours) = crate_and_ours(
            money.clone(),
            &[
                decimals(19, 4, vec![Some(1_999_900), None, Some(-50_000), Some(123_456_789)]),
                decimals(19, 4, vec![None, Some(i64::MIN as i128), Some(i64::MAX as i128), Some(0)]),
            ],
        );
        assert_eq!(ours, theirs);
        let Some(Statistics::FixedLenByteArray(ours)) = ours else { panic!("fixed-length statistics expected") };
        // money's extremes, big-endian two's complement in 9 bytes.
        assert_eq!(ours.min_opt().unwrap().data(), &(i64::MIN as i128).to_be_bytes()[7..]);
        assert_eq!(ours.max_opt().unwrap().data(), &(i64::MAX as i128).to_be_bytes()[7..]);
        assert_eq!(ours.null_count_opt(), Some(2));

        let widest = Field::new("big", DataType::Decimal128(38, 0), true);
        let extreme = 10i128.pow(38) - 1;
        let (theirs, ours) = crate_and_ours(widest, &[decimals(38, 0, vec![Some(-extreme), Some(extreme), Some(-1)])]);
        assert_eq!(ours, theirs, "decimal(38,0): 16 bytes");
        let (theirs, ours) = crate_and_ours(money, &[decimals(19, 4, vec![None, None])]);
        assert_eq!(ours, theirs, "only nulls: no bounds, the null count");
    }

    #[test]
    fn binary_bounds_are_the_ones_parquet_rs_writes() {
        let guid = Field::new("token", DataType::FixedSizeBinary(16), true);
        let guids = |values: Vec<Option<[u8; 16]>>| -> ArrayRef {
            Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size(values.into_iter(), 16).unwrap())
        };
        let (theirs, ours) = crate_and_ours(
            guid.clone(),
            &[
                guids(vec![Some([0x7f; 16]), None, Some([0x80; 16])]),
                guids(vec![Some([0x00; 16]), Some([0xff; 16]), None, Some([0x10; 16])]),
            ],
        );
        assert_eq!(ours, theirs);
        let Some(Statistics::FixedLenByteArray(ours)) = ours else { panic!("fixed-length statistics expected") };
        assert_eq!(ours.min_opt().unwrap().data(), &[0x00; 16], "unsigned: 0x80 sorts after 0x7f");
        assert_eq!(ours.max_opt().unwrap().data(), &[0xff; 16]);
        let (theirs, ours) = crate_and_ours(guid, &[guids(vec![None])]);
        assert_eq!(ours, theirs, "only nulls");
    }
}
