//! Delta Lake per-file statistics: the `stats` of an `add` action, gathered batch by batch while
//! the data file is written (no second pass over the file).
//!
//! From the Delta Transaction Log Protocol (delta-io/delta `PROTOCOL.md`, "Per-file
//! Statistics"): `stats` is a JSON object (stored as a string) with `numRecords` and, per column
//! (nested objects for struct columns), `nullCount`, `minValues` and `maxValues`. A minimum must
//! be no larger, a maximum no smaller, than every non-null value in the file: readers skip the
//! file for a filter those bounds rule out, so a bound may be looser, never tighter. Here:
//! - Bounds for integers, floating point, decimals (their exact digits), dates (`YYYY-MM-DD`),
//!   timestamps (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC; without the `Z` for `timestamp_ntz`) and
//!   strings (compared as UTF-8 bytes, the order Delta's readers compare in).
//! - A string minimum is cut to its first 32 characters (a prefix sorts before the value; 32 is
//!   Spark's `dataSkippingStringPrefixLength`); a longer maximum is cut too, its last character
//!   then raised by one (so it sorts after every string that starts with the cut), dropping
//!   trailing U+10FFFF first; a maximum of 32 U+10FFFF is left out. (A maximum left out makes
//!   `deltalake` 1.x drop the file for an equality filter, so long maxima are bounded, not left out.)
//! - A floating-point column holding NaN or an infinity gets no bounds: JSON cannot spell them.
//! - Booleans and binary get a null count only, as Spark's writer gives them.
//! - A struct's child is null where the struct is (Arrow leaves its slot undefined).

use std::fmt::Write as _;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Fields, TimeUnit};

use crate::values::value::{civil_from_days, push_scaled};

type Json = serde_json::Value;

/// Characters a string minimum keeps.
const STRING_PREFIX_CHARS: usize = 32;
const MICROS_PER_DAY: i128 = 86_400_000_000;

/// The statistics of one data file, fed each batch written to it.
pub(super) struct FileStats {
    rows: u64,
    columns: Vec<(String, Column)>,
}

enum Column {
    Leaf { nulls: u64, bounds: Bounds },
    Struct(Vec<(String, Column)>),
}

/// The smallest and largest non-null value seen, for the types that get bounds.
enum Bounds {
    /// No bounds for this type (booleans, binary).
    Unranged,
    /// Integers, decimals (unscaled), dates (days) and timestamps (microseconds) as one integer.
    Whole { spelling: Spelling, range: Option<(i128, i128)> },
    /// `spoiled` once a NaN or an infinity was seen.
    Float { range: Option<(f64, f64)>, spoiled: bool },
    /// `min` is cut to [`STRING_PREFIX_CHARS`]; `max` is whole.
    Text { min: Option<String>, max: Option<String> },
}

#[derive(Clone, Copy)]
enum Spelling {
    Number,
    Decimal(u8),
    Date,
    Timestamp { utc: bool },
}

#[derive(Clone, Copy)]
enum Part {
    Min,
    Max,
    Nulls,
}

impl FileStats {
    /// Statistics for a file of `fields` (Delta's types: after [`super::delta::delta_batch`]).
    pub(super) fn new(fields: &Fields) -> Self {
        FileStats { rows: 0, columns: columns(fields) }
    }

    /// Counts `batch` in.
    pub(super) fn add(&mut self, batch: &RecordBatch) {
        self.rows += batch.num_rows() as u64;
        for ((_, column), array) in self.columns.iter_mut().zip(batch.columns()) {
            column.add(array.as_ref(), None);
        }
    }

    /// The `stats` JSON of the `add` action.
    pub(super) fn to_json(&self) -> String {
        let mut out = format!("{{\"numRecords\":{}", self.rows);
        for (key, part) in [("minValues", Part::Min), ("maxValues", Part::Max), ("nullCount", Part::Nulls)] {
            let _ = write!(out, ",\"{key}\":{}", object(&self.columns, part).unwrap_or_else(|| "{}".into()));
        }
        out.push('}');
        out
    }
}

fn columns(fields: &Fields) -> Vec<(String, Column)> {
    fields.iter().map(|f| (f.name().clone(), Column::new(f.data_type()))).collect()
}

impl Column {
    fn new(data_type: &DataType) -> Column {
        let whole = |spelling| Bounds::Whole { spelling, range: None };
        let bounds = match data_type {
            DataType::Struct(fields) => return Column::Struct(columns(fields)),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => whole(Spelling::Number),
            DataType::Decimal128(_, scale) => match u8::try_from(*scale) {
                Ok(scale) => whole(Spelling::Decimal(scale)),
                Err(_) => Bounds::Unranged,
            },
            DataType::Date32 => whole(Spelling::Date),
            DataType::Timestamp(TimeUnit::Microsecond, tz) => whole(Spelling::Timestamp { utc: tz.is_some() }),
            DataType::Float32 | DataType::Float64 => Bounds::Float { range: None, spoiled: false },
            DataType::Utf8 | DataType::LargeUtf8 => Bounds::Text { min: None, max: None },
            _ => Bounds::Unranged,
        };
        Column::Leaf { nulls: 0, bounds }
    }

    /// Counts `array` in; `parent` are the nulls of the structs around it.
    fn add(&mut self, array: &dyn Array, parent: Option<&NullBuffer>) {
        let nulls = NullBuffer::union(parent, array.nulls());
        let nulls = nulls.as_ref();
        match self {
            Column::Struct(children) => {
                for ((_, child), child_array) in children.iter_mut().zip(array.as_struct().columns()) {
                    child.add(child_array.as_ref(), nulls);
                }
            }
            Column::Leaf { nulls: count, bounds } => {
                *count += nulls.map_or(0, |n| n.null_count() as u64);
                bounds.add(array, nulls);
            }
        }
    }

    /// This column's value for `part` in the JSON, if it has one.
    fn value(&self, part: Part) -> Option<String> {
        match self {
            Column::Struct(children) => object(children, part),
            Column::Leaf { nulls, .. } if matches!(part, Part::Nulls) => Some(nulls.to_string()),
            Column::Leaf { bounds, .. } => bounds.spell(part),
        }
    }
}

/// `{"NAME":VALUE,...}` of the columns with a value for `part`; `None` when none has one.
fn object(columns: &[(String, Column)], part: Part) -> Option<String> {
    let mut out = String::from("{");
    for (name, column) in columns {
        if let Some(value) = column.value(part) {
            if out.len() > 1 {
                out.push(',');
            }
            let _ = write!(out, "{}:{value}", Json::from(name.as_str()));
        }
    }
    out.push('}');
    (out.len() > 2).then_some(out)
}

impl Bounds {
    fn add(&mut self, array: &dyn Array, nulls: Option<&NullBuffer>) {
        match self {
            Bounds::Unranged => {}
            Bounds::Whole { range, .. } => {
                let seen = match array.data_type() {
                    DataType::Int8 => whole_range::<Int8Type>(array, nulls, i128::from),
                    DataType::Int16 => whole_range::<Int16Type>(array, nulls, i128::from),
                    DataType::Int32 => whole_range::<Int32Type>(array, nulls, i128::from),
                    DataType::Int64 => whole_range::<Int64Type>(array, nulls, i128::from),
                    DataType::Decimal128(..) => whole_range::<Decimal128Type>(array, nulls, |v| v),
                    DataType::Date32 => whole_range::<Date32Type>(array, nulls, i128::from),
                    DataType::Timestamp(..) => whole_range::<TimestampMicrosecondType>(array, nulls, i128::from),
                    _ => None,
                };
                *range = widen(*range, seen, i128::min, i128::max);
            }
            Bounds::Float { range, spoiled } => {
                let seen = match array.data_type() {
                    DataType::Float32 => float_range::<Float32Type>(array, nulls, f64::from),
                    _ => float_range::<Float64Type>(array, nulls, |v| v),
                };
                match seen {
                    Err(()) => *spoiled = true,
                    Ok(seen) => *range = widen(*range, seen, f64::min, f64::max),
                }
            }
            Bounds::Text { min, max } => match array.data_type() {
                DataType::LargeUtf8 => text_bounds(array.as_string::<i64>().iter(), nulls, min, max),
                _ => text_bounds(array.as_string::<i32>().iter(), nulls, min, max),
            },
        }
    }

    fn spell(&self, part: Part) -> Option<String> {
        let low = matches!(part, Part::Min);
        match self {
            Bounds::Unranged | Bounds::Float { spoiled: true, .. } => None,
            Bounds::Whole { spelling, range } => range.map(|(l, h)| spell_whole(if low { l } else { h }, *spelling)),
            Bounds::Float { range, .. } => range.map(|(l, h)| Json::from(if low { l } else { h }).to_string()),
            Bounds::Text { min, max } => {
                let text = if low {
                    min.as_deref()
                } else {
                    return max.as_deref().and_then(upper_bound).map(|t| Json::from(t).to_string());
                };
                text.map(|t| Json::from(t).to_string())
            }
        }
    }
}

/// The smallest and largest non-null value of a primitive array, widened to `i128`.
pub(super) fn whole_range<T: ArrowPrimitiveType>(
    array: &dyn Array,
    nulls: Option<&NullBuffer>,
    to_whole: impl Fn(T::Native) -> i128,
) -> Option<(i128, i128)> {
    let mut range: Option<(i128, i128)> = None;
    for (i, &value) in array.as_primitive::<T>().values().iter().enumerate() {
        if nulls.is_none_or(|n| n.is_valid(i)) {
            let v = to_whole(value);
            range = Some(range.map_or((v, v), |(low, high)| (low.min(v), high.max(v))));
        }
    }
    range
}

/// Like [`whole_range`] for floating point; `Err` when a NaN or an infinity is among the values.
fn float_range<T: ArrowPrimitiveType>(
    array: &dyn Array,
    nulls: Option<&NullBuffer>,
    to_float: impl Fn(T::Native) -> f64,
) -> Result<Option<(f64, f64)>, ()> {
    let mut range: Option<(f64, f64)> = None;
    for (i, &value) in array.as_primitive::<T>().values().iter().enumerate() {
        if nulls.is_none_or(|n| n.is_valid(i)) {
            let v = to_float(value);
            if !v.is_finite() {
                return Err(());
            }
            range = Some(range.map_or((v, v), |(low, high)| (low.min(v), high.max(v))));
        }
    }
    Ok(range)
}

fn widen<T: Copy>(
    known: Option<(T, T)>,
    seen: Option<(T, T)>,
    min: impl Fn(T, T) -> T,
    max: impl Fn(T, T) -> T,
) -> Option<(T, T)> {
    match (known, seen) {
        (Some((a, b)), Some((c, d))) => Some((min(a, c), max(b, d))),
        (known, seen) => known.or(seen),
    }
}

/// Lowers `min` (cut to its prefix) and raises `max` by the non-null strings of `values`; only a
/// new bound is copied.
fn text_bounds<'a>(
    values: impl Iterator<Item = Option<&'a str>>,
    nulls: Option<&NullBuffer>,
    min: &mut Option<String>,
    max: &mut Option<String>,
) {
    for (i, value) in values.enumerate() {
        let Some(value) = value.filter(|_| nulls.is_none_or(|n| n.is_valid(i))) else {
            continue;
        };
        // Below the cut minimum is below the true one; at or above it, the cut stays the same
        // (every string between a prefix and the value it was cut from starts with the prefix).
        if min.as_deref().is_none_or(|m| value < m) {
            let cut = value.char_indices().nth(STRING_PREFIX_CHARS).map_or(value.len(), |(at, _)| at);
            *min = Some(value[..cut].to_string());
        }
        if max.as_deref().is_none_or(|m| value > m) {
            *max = Some(value.to_string());
        }
    }
}

/// `max` if it is short, else its cut raised past every string that starts with the cut.
fn upper_bound(max: &str) -> Option<String> {
    if max.chars().nth(STRING_PREFIX_CHARS).is_none() {
        return Some(max.to_string());
    }
    let mut cut: Vec<char> = max.chars().take(STRING_PREFIX_CHARS).collect();
    while let Some(last) = cut.pop() {
        // The next scalar value (past the surrogates), if any.
        if let Some(next) = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32) {
            cut.push(next);
            return Some(cut.into_iter().collect());
        }
    }
    None
}

fn spell_whole(value: i128, spelling: Spelling) -> String {
    match spelling {
        Spelling::Number => value.to_string(),
        Spelling::Decimal(scale) => {
            let mut out = String::new();
            push_scaled(&mut out, value, scale);
            out
        }
        Spelling::Date => format!("\"{}\"", ymd(value)),
        Spelling::Timestamp { utc } => {
            let (days, micros) = (value.div_euclid(MICROS_PER_DAY), value.rem_euclid(MICROS_PER_DAY));
            let seconds = micros / 1_000_000;
            format!(
                "\"{}T{:02}:{:02}:{:02}.{:06}{}\"",
                ymd(days),
                seconds / 3600,
                seconds / 60 % 60,
                seconds % 60,
                micros % 1_000_000,
                if utc { "Z" } else { "" }
            )
        }
    }
}

/// `YYYY-MM-DD` of days since 1970-01-01.
fn ymd(days: i128) -> String {
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{BooleanArray, TimestampMicrosecondArray};
    use arrow_array::{Date32Array, Decimal128Array, Float64Array, Int32Array, StringArray, StructArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn stats(batches: &[RecordBatch]) -> Json {
        let mut stats = FileStats::new(batches[0].schema().fields());
        for batch in batches {
            stats.add(batch);
        }
        serde_json::from_str(&stats.to_json()).unwrap()
    }

    #[test]
    fn bounds_and_null_counts_over_batches() {
        let long_low = "a".repeat(40);
        let long_high = format!("z{}", "y".repeat(40));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("price", DataType::Decimal128(9, 2), true),
            Field::new("day", DataType::Date32, true),
            Field::new("at", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("name", DataType::Utf8, true),
            Field::new("flag", DataType::Boolean, true),
            Field::new("x", DataType::Float64, true),
        ]));
        let batch = |ids: Vec<Option<i32>>, prices: Vec<Option<i128>>, days, ats, names, xs| {
            let n = ids.len();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int32Array::from(ids)),
                    Arc::new(Decimal128Array::from(prices).with_precision_and_scale(9, 2).unwrap()),
                    Arc::new(Date32Array::from(days)),
                    Arc::new(TimestampMicrosecondArray::from(ats)),
                    Arc::new(StringArray::from(names)),
                    Arc::new(BooleanArray::from(vec![Some(true); n])),
                    Arc::new(Float64Array::from(xs)),
                ],
            )
            .unwrap()
        };
        let first = batch(
            vec![Some(5), None, Some(-3)],
            vec![Some(-1050), Some(7), None],
            vec![Some(0), None, Some(-1)],
            vec![Some(1_500_000), Some(-1), None],
            vec![Some("m"), None, Some(long_low.as_str())],
            vec![Some(1.5), None, Some(-2.0)],
        );
        let second = batch(
            vec![Some(9), Some(0), None],
            vec![None, None, Some(12_345)],
            vec![Some(19_000), None, None],
            vec![None, None, Some(86_400_000_000)],
            vec![Some(long_high.as_str()), Some("b"), None],
            vec![Some(f64::NAN), None, None],
        );
        let got = stats(&[first, second]);
        assert_eq!(got["numRecords"], 6);
        let (min, max, nulls) = (&got["minValues"], &got["maxValues"], &got["nullCount"]);
        assert_eq!((min["id"].clone(), max["id"].clone(), nulls["id"].clone()), (json(-3), json(9), json(2)));
        // Decimals keep their scale, unrounded: -10.50 and 123.45.
        assert_eq!((min["price"].to_string(), max["price"].to_string()), ("-10.5".into(), "123.45".into()));
        assert_eq!((min["day"].clone(), max["day"].clone()), (json("1969-12-31"), json("2022-01-08")));
        assert_eq!(
            (min["at"].clone(), max["at"].clone()),
            (json("1969-12-31T23:59:59.999999"), json("1970-01-02T00:00:00.000000"))
        );
        // The 40-character minimum is cut to 32; the 41-character maximum is cut and raised.
        assert_eq!(min["name"], json("a".repeat(32)));
        assert_eq!(max["name"], json(format!("z{}z", "y".repeat(30))));
        assert_eq!(nulls["name"], 2);
        assert!(min.get("flag").is_none() && nulls["flag"] == 0);
        // A NaN takes the float column's bounds away, not its null count.
        assert!(min.get("x").is_none() && max.get("x").is_none());
        assert_eq!(nulls["x"], 3);
    }

    #[test]
    fn struct_children_are_null_where_the_struct_is() {
        let fields = Fields::from(vec![
            Field::new("utc", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
            Field::new("offset_minutes", DataType::Int16, true),
        ]);
        let seen = StructArray::try_new(
            fields.clone(),
            vec![
                Arc::new(TimestampMicrosecondArray::from(vec![10, 999_999_999_999, 20]).with_timezone("UTC")),
                Arc::new(arrow_array::Int16Array::from(vec![60, -600, -60])),
            ],
            Some(NullBuffer::from(vec![true, false, true])),
        )
        .unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("seen", DataType::Struct(fields), true)]));
        let got = stats(&[RecordBatch::try_new(schema, vec![Arc::new(seen)]).unwrap()]);
        assert_eq!(got["minValues"]["seen"]["utc"], "1970-01-01T00:00:00.000010Z");
        assert_eq!(got["maxValues"]["seen"]["utc"], "1970-01-01T00:00:00.000020Z");
        assert_eq!(got["maxValues"]["seen"]["offset_minutes"], 60);
        assert_eq!(got["minValues"]["seen"]["offset_minutes"], -60);
        assert_eq!(got["nullCount"]["seen"], serde_json::json!({"utc": 1, "offset_minutes": 1}));
    }

    #[test]
    fn a_cut_maximum_sorts_after_the_value() {
        let top = char::MAX.to_string();
        let value = format!("{}{}{}", "a".repeat(30), top.repeat(3), "b");
        let bound = upper_bound(&value).unwrap();
        assert_eq!(bound, format!("{}b", "a".repeat(29)));
        assert!(bound.as_str() > value.as_str());
        assert_eq!(upper_bound(&top.repeat(40)), None);
        let surrogate_edge = format!("{}{}", "\u{d7ff}".repeat(33), "x");
        assert_eq!(upper_bound(&surrogate_edge).unwrap(), format!("{}\u{e000}", "\u{d7ff}".repeat(31)));
    }

    fn json(v: impl Into<Json>) -> Json {
        v.into()
    }
}
