//! The lines of a CSV or JSON Lines export, spelled as bytes straight into the chunk of text a
//! scan thread hands on.
//!
//! Each column's spelling is chosen once per export from its type ([`Spelling`]): the types
//! tables are mostly made of (integers and bit, money, decimal, date, datetime, datetime2,
//! uniqueidentifier, char/varchar and nchar/nvarchar text) are spelled here, digits written
//! in place, without a `String` or a copy per value; any other type (and a value too short for
//! its type, whose error [`crate::decode::spell_column`] words) goes through
//! [`crate::decode::spell_column`]. The spellings are SQL Server's, the same as
//! [`crate::value::Value`]'s `Display` (`19.9900`, `2012-03-15`, upper-case GUIDs); the tests
//! below hold each one to [`crate::decode::spell_column`] over the edge values of its type.
//!
//! The chunk is a [`Utf8Writer`]: bytes that are UTF-8 because every writer of them writes
//! UTF-8 (ASCII digits and separators, the text decoders' output, escaped text from a `str`),
//! written to the output file as they are. Only a value to be quoted or escaped is checked, to
//! be taken as a `str`.

use crate::bytes::{push_utf16le_utf8, Utf8Writer};
use crate::decode::Spelled;
use crate::error::Result;
use crate::plain_pages::PlainLayout;
use crate::record::Record;
use crate::rows::{ColumnPlan, RowDecoder};
use crate::types::SqlType;

use super::{csv_needs_quotes, json_needs_escapes, json_string, push_csv_field, ExportFormat};

/// How a column's values are spelled, chosen once per export from its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// A bit at this position of its byte.
    Bit(u8),
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    /// 64-bit count of 1/10000.
    Money,
    /// 32-bit count of 1/10000.
    SmallMoney,
    /// decimal or numeric of this scale.
    Decimal(u8),
    Date,
    DateTime,
    /// datetime2 of this scale.
    DateTime2(u8),
    UniqueIdentifier,
    /// char, varchar and text in the column's code page.
    CodePage,
    /// nchar, nvarchar and ntext: UTF-16LE.
    Utf16,
    /// Any other type: [`crate::decode::spell_column`].
    General,
}

impl Spelling {
    fn of(plan: &ColumnPlan) -> Spelling {
        let column = &plan.column;
        if column.clr_kind().is_some() {
            return Spelling::General;
        }
        let ty = &column.type_info;
        match ty.sql_type {
            SqlType::Bit => Spelling::Bit(plan.bit_position()),
            SqlType::TinyInt => Spelling::TinyInt,
            SqlType::SmallInt => Spelling::SmallInt,
            SqlType::Int => Spelling::Int,
            SqlType::BigInt => Spelling::BigInt,
            SqlType::Money => Spelling::Money,
            SqlType::SmallMoney => Spelling::SmallMoney,
            SqlType::Decimal | SqlType::Numeric => Spelling::Decimal(ty.scale),
            SqlType::Date => Spelling::Date,
            SqlType::DateTime => Spelling::DateTime,
            SqlType::DateTime2 if ty.scale <= 7 => Spelling::DateTime2(ty.scale),
            SqlType::UniqueIdentifier => Spelling::UniqueIdentifier,
            SqlType::Char | SqlType::VarChar | SqlType::Text => Spelling::CodePage,
            SqlType::NChar | SqlType::NVarChar | SqlType::NText => Spelling::Utf16,
            _ => Spelling::General,
        }
    }

    /// Appends the spelling of `plan`'s stored value `bytes` to `out`; `field` is room for the
    /// types spelled through [`crate::decode::spell_column`].
    #[inline]
    fn spell(self, plan: &ColumnPlan, bytes: &[u8], out: &mut Utf8Writer, field: &mut String) -> Result<Spelled> {
        match self {
            Spelling::Bit(position) => {
                if let Some(&byte) = bytes.first() {
                    out.push_byte(b'0' + (byte >> position & 1));
                    return Ok(Spelled::Number);
                }
            }
            Spelling::TinyInt => {
                if let Some(&v) = bytes.first() {
                    push_integer(out, false, v.into());
                    return Ok(Spelled::Number);
                }
            }
            Spelling::SmallInt => {
                if let Some(b) = fixed::<2>(bytes) {
                    let v = i16::from_le_bytes(b);
                    push_integer(out, v < 0, v.unsigned_abs().into());
                    return Ok(Spelled::Number);
                }
            }
            Spelling::Int => {
                if let Some(b) = fixed::<4>(bytes) {
                    let v = i32::from_le_bytes(b);
                    push_integer(out, v < 0, v.unsigned_abs().into());
                    return Ok(Spelled::Number);
                }
            }
            Spelling::BigInt => {
                if let Some(b) = fixed::<8>(bytes) {
                    let v = i64::from_le_bytes(b);
                    push_integer(out, v < 0, v.unsigned_abs());
                    return Ok(Spelled::Number);
                }
            }
            Spelling::Money => {
                if let Some(b) = fixed::<8>(bytes) {
                    let v = i64::from_le_bytes(b);
                    push_scaled(out, v < 0, v.unsigned_abs(), 4);
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::SmallMoney => {
                if let Some(b) = fixed::<4>(bytes) {
                    let v = i32::from_le_bytes(b);
                    push_scaled(out, v < 0, v.unsigned_abs().into(), 4);
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::Decimal(scale) => {
                // A sign byte (0: negative), then the magnitude: 64-bit digits where it fits
                // (every decimal of up to 19 digits); larger ones through 128-bit arithmetic.
                if let Some((&sign, magnitude)) = bytes.split_first().filter(|(_, m)| m.len() <= 8) {
                    let mut m = [0u8; 8];
                    m[..magnitude.len()].copy_from_slice(magnitude);
                    let magnitude = u64::from_le_bytes(m);
                    push_scaled(out, sign == 0 && magnitude != 0, magnitude, scale);
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::Date => {
                if let Some([a, b, c]) = fixed::<3>(bytes) {
                    let days = i64::from(u32::from_le_bytes([a, b, c, 0])) - DAYS_0001_TO_1970;
                    match crate::value::date_text(days) {
                        Some(text) => push_array(out, &text),
                        None => crate::value::write_date(out, days).unwrap_or_default(),
                    }
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::DateTime => {
                if let (Some(ticks), Some(days)) = (fixed::<4>(bytes), bytes.get(4..).and_then(fixed::<4>)) {
                    let (ticks, days) = (u32::from_le_bytes(ticks), i32::from_le_bytes(days));
                    crate::value::write_datetime(out, days, ticks).unwrap_or_default();
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::DateTime2(scale) => {
                // The time (3-5 bytes, units of 10^-scale seconds), then the date (3 bytes).
                if let Some((time, &[a, b, c])) =
                    bytes.split_last_chunk::<3>().filter(|(t, _)| (1..=5).contains(&t.len()))
                {
                    let mut units = [0u8; 8];
                    units[..time.len()].copy_from_slice(time);
                    let days = i64::from(u32::from_le_bytes([a, b, c, 0])) - DAYS_0001_TO_1970;
                    match crate::value::date_text(days) {
                        Some(text) => push_array(out, &text),
                        None => crate::value::write_date(out, days).unwrap_or_default(),
                    }
                    out.push_byte(b' ');
                    crate::value::write_time(out, u64::from_le_bytes(units), scale).unwrap_or_default();
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::UniqueIdentifier => {
                if let Some(b) = fixed::<16>(bytes) {
                    push_guid(out, &b);
                    return Ok(Spelled::Plain);
                }
            }
            Spelling::CodePage => {
                // ASCII first, as `TextCodec::decode_into` reads it.
                if bytes.is_ascii() {
                    out.push_bytes(bytes);
                } else {
                    plan.text_codec().decode_into_utf8(bytes, out)?;
                }
                return Ok(Spelled::Text);
            }
            Spelling::Utf16 => {
                push_utf16le_utf8(bytes, out);
                return Ok(Spelled::Text);
            }
            Spelling::General => {}
        }
        field.clear();
        let spelled = crate::decode::spell_column(&plan.column, plan.text_codec(), bytes, plan.bit_position(), field)?;
        out.push_bytes(field.as_bytes());
        Ok(spelled)
    }
}

/// Days from 0001-01-01 to 1970-01-01.
const DAYS_0001_TO_1970: i64 = 719_162;

/// The first `N` bytes of `bytes`, when there are as many.
#[inline]
fn fixed<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    bytes.first_chunk::<N>().copied()
}

/// Appends the bytes of `array` (a copy of a size the compiler knows, not a call to `memcpy`).
#[inline]
fn push_array<const N: usize>(out: &mut Utf8Writer, array: &[u8; N]) {
    if let Some(room) = out.spare(N).first_chunk_mut::<N>() {
        *room = *array;
        out.commit(N);
    }
}

/// Two decimal digits of each value below 100.
const TWO_DIGITS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Decimal digits of `v`: 1 for 0.
#[inline]
fn digit_count(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Writes the last `out.len()` decimal digits of `v` into `out`, zeros on the left where `v`
/// has fewer, two digits at a time.
#[inline]
fn put_digits(out: &mut [u8], mut v: u64) {
    let mut end = out.len();
    while end >= 2 {
        let at = (v % 100) as usize * 2;
        v /= 100;
        out[end - 2..end].copy_from_slice(&TWO_DIGITS[at..at + 2]);
        end -= 2;
    }
    if end == 1 {
        out[0] = b'0' + (v % 10) as u8;
    }
}

/// Appends an integer of magnitude `magnitude`, with a minus sign where `negative`.
#[inline]
fn push_integer(out: &mut Utf8Writer, negative: bool, magnitude: u64) {
    if magnitude < 10 && !negative {
        // Bits and small counts: one digit.
        out.push_byte(b'0' + magnitude as u8);
        return;
    }
    let sign = usize::from(negative);
    let len = sign + digit_count(magnitude);
    if let Some(room) = out.spare(len).get_mut(..len) {
        if negative {
            room[0] = b'-';
        }
        put_digits(&mut room[sign..], magnitude);
        out.commit(len);
    }
}

/// `v` split at its `scale`th digit from the right: (`v / 10^scale`, `v % 10^scale`). The usual
/// scales divide by a constant (a multiplication), not by a value known only at run time.
#[inline]
fn split_at_scale(v: u64, scale: u8) -> (u64, u64) {
    match scale {
        1 => (v / 10, v % 10),
        2 => (v / 100, v % 100),
        3 => (v / 1_000, v % 1_000),
        4 => (v / 10_000, v % 10_000),
        // 10^19 is the largest power of ten a u64 holds; at larger scales every digit is a decimal.
        _ => match 10u64.checked_pow(u32::from(scale)) {
            Some(unit) => (v / unit, v % unit),
            None => (0, v),
        },
    }
}

/// Appends `magnitude / 10^scale` with exactly `scale` decimals (a `0` before the point where
/// the value is below 1), with a minus sign where `negative`: SQL Server's spelling of decimal
/// and money, written in one pass with the point in its place.
#[inline]
fn push_scaled(out: &mut Utf8Writer, negative: bool, magnitude: u64, scale: u8) {
    if scale == 0 {
        push_integer(out, negative, magnitude);
        return;
    }
    let (int, fraction) = split_at_scale(magnitude, scale);
    let scale = usize::from(scale);
    let sign = usize::from(negative);
    let int_len = digit_count(int);
    let len = sign + int_len + 1 + scale;
    if let Some(room) = out.spare(len).get_mut(..len) {
        if negative {
            room[0] = b'-';
        }
        put_digits(&mut room[sign..sign + int_len], int);
        room[sign + int_len] = b'.';
        put_digits(&mut room[sign + int_len + 1..], fraction);
        out.commit(len);
    }
}

/// Appends the upper-case text of a uniqueidentifier: the first three groups little endian, the
/// last two as stored.
fn push_guid(out: &mut Utf8Writer, b: &[u8; 16]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    const ORDER: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    let mut text = [b'-'; 36];
    let mut at = 0;
    for (i, &byte_at) in ORDER.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        let x = b[byte_at];
        text[at] = HEX[usize::from(x >> 4)];
        text[at + 1] = HEX[usize::from(x & 0x0f)];
        at += 2;
    }
    push_array(out, &text);
}

/// What goes before a column's value in a CSV or JSON line, and how the value is spelled.
pub(super) struct LineColumn {
    /// The separator; for JSON the key and colon (`"name":`, escaped once per export) and a JSON
    /// string's opening quote where every value of the column is a string
    /// ([`crate::decode::spelled_kind`]). Zeros after it up to a multiple of 16 bytes, copied
    /// with it 16 bytes at a time.
    prefix: Vec<u8>,
    prefix_len: usize,
    /// Whether `prefix` ends with an opening quote.
    quoted: bool,
    spelling: Spelling,
}

/// The [`LineColumn`] of each of the decoder's columns.
pub(super) fn line_columns(format: ExportFormat, decoder: &RowDecoder) -> Vec<LineColumn> {
    let json = format != ExportFormat::Csv;
    decoder
        .columns()
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let mut text = String::from(match (i, json) {
                (0, true) => "{",
                (0, false) => "",
                _ => ",",
            });
            let quoted =
                json && matches!(crate::decode::spelled_kind(&plan.column), Some(Spelled::Plain | Spelled::Text));
            if json {
                json_string(&mut text, &plan.column.name);
                text.push(':');
                if quoted {
                    text.push('"');
                }
            }
            let prefix_len = text.len();
            let mut prefix = text.into_bytes();
            prefix.resize(prefix_len.next_multiple_of(16), 0);
            LineColumn { prefix, prefix_len, quoted, spelling: Spelling::of(plan) }
        })
        .collect()
}

/// Lines of CSV or JSON Lines text, and the buffers for spelling one value.
#[derive(Default)]
pub(super) struct Lines {
    pub(super) text: Utf8Writer,
    /// A value spelled through [`crate::decode::spell_column`], or one being quoted or escaped.
    field: String,
    /// An off-row value's bytes.
    off_row: Vec<u8>,
}

impl Lines {
    /// Lines with room for `n` bytes of text.
    pub(super) fn with_room(n: usize) -> Self {
        Lines { text: Utf8Writer::with_room(n), ..Lines::default() }
    }

    /// Appends `record` as a CSV line (SQL Server's spellings; NULL is an empty field) or a JSON
    /// object line, each value after its column's prefix. Nothing is allocated per value.
    /// A record the partition's `plain` layout takes has its values read where the layout says
    /// (the record walk of the column-by-column scans), others through the decoder.
    pub(super) fn push_row(
        &mut self,
        format: ExportFormat,
        columns: &[LineColumn],
        plain: Option<&PlainLayout>,
        decoder: &RowDecoder,
        record: &Record,
    ) -> Result<()> {
        let Lines { text, field, off_row } = self;
        let json = format != ExportFormat::Csv;
        if json && columns.is_empty() {
            text.push_byte(b'{');
        }
        let plain = plain.filter(|layout| layout.takes(record));
        for (i, (plan, column)) in decoder.columns().iter().zip(columns).enumerate() {
            match column.prefix_len {
                0 => {}
                1 => text.push_byte(column.prefix[0]),
                len => {
                    let room = text.spare(column.prefix.len());
                    for (to, from) in room.chunks_exact_mut(16).zip(column.prefix.chunks_exact(16)) {
                        to.copy_from_slice(from);
                    }
                    text.commit(len);
                }
            }
            let stored = match plain {
                Some(layout) => layout.stored(i, record),
                None => decoder.stored(record, plan, off_row).map_err(|e| decoder.in_column(e, plan))?,
            };
            let Some(bytes) = stored else {
                if json {
                    if column.quoted {
                        text.truncate(text.len().saturating_sub(1));
                    }
                    text.push_bytes(b"null");
                }
                continue;
            };
            // Spelled straight into the line; moved aside only when it must be quoted or escaped.
            let start = text.len();
            let spelled = column.spelling.spell(plan, bytes, text, field).map_err(|e| decoder.in_column(e, plan))?;
            if spelled == Spelled::Number {
                continue;
            }
            let value = &text.written()[start..];
            let rewrite =
                spelled == Spelled::Text && if json { json_needs_escapes(value) } else { csv_needs_quotes(value) };
            if rewrite {
                // UTF-8 by construction (the module's note): checked only to be taken as a `str`.
                field.clear();
                field.push_str(&String::from_utf8_lossy(value));
                // The opening quote goes too: the escaped string brings its own.
                text.truncate(start - usize::from(column.quoted));
                if json {
                    json_string(text, field);
                } else {
                    push_csv_field(text, field);
                }
            } else if json {
                if !column.quoted {
                    // A sql_variant holding text: the value moves to make room for its quote.
                    field.clear();
                    field.push_str(&String::from_utf8_lossy(value));
                    text.truncate(start);
                    text.push_byte(b'"');
                    text.push_bytes(field.as_bytes());
                }
                text.push_byte(b'"');
            }
        }
        text.push_bytes(if json { b"}\n" } else { b"\n" });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TypeInfo;

    fn ti(t: SqlType, precision: u8, scale: u8, len: i16) -> TypeInfo {
        TypeInfo { sql_type: t, max_length: len, precision, scale }
    }

    /// Each value spelled here and by `decode::spell_column`, which must agree (text and kind).
    fn assert_spelled_as_decode(ty: TypeInfo, values: &[Vec<u8>]) {
        let plan = ColumnPlan::declared(1, "c", ty, 4, 1);
        let spelling = Spelling::of(&plan);
        assert_ne!(spelling, Spelling::General, "{ty:?}");
        for bytes in values {
            let mut expected = String::new();
            let expected_kind =
                crate::decode::spell_column(&plan.column, plan.text_codec(), bytes, plan.bit_position(), &mut expected);
            let mut out = Utf8Writer::default();
            out.push_bytes(b"kept,");
            let kind = spelling.spell(&plan, bytes, &mut out, &mut String::new());
            match (kind, expected_kind) {
                (Ok(kind), Ok(expected_kind)) => {
                    assert_eq!(kind, expected_kind, "{ty:?} {bytes:?}");
                    assert_eq!(
                        std::str::from_utf8(out.written()).unwrap(),
                        format!("kept,{expected}"),
                        "{ty:?} {bytes:?}"
                    );
                }
                (Err(e), Err(expected)) => assert_eq!(e.to_string(), expected.to_string()),
                (kind, expected) => panic!("{ty:?} {bytes:?}: {kind:?} against {expected:?}"),
            }
        }
    }

    #[test]
    fn integers_at_their_edges() {
        let le = |v: i64, n: usize| v.to_le_bytes()[..n].to_vec();
        let edges = |min: i64, max: i64, n: usize| -> Vec<Vec<u8>> {
            let mut values: Vec<i64> =
                vec![min, min + 1, -100, -10, -9, -1, 0, 1, 9, 10, 99, 100, 12_345, max - 1, max];
            values.extend((0..19).map(|p| 10i64.pow(p)).filter(|&v| v <= max).flat_map(|v| [v - 1, v, -v, 1 - v]));
            values.into_iter().filter(|v| (min..=max).contains(v)).map(|v| le(v, n)).collect()
        };
        assert_spelled_as_decode(ti(SqlType::TinyInt, 3, 0, 1), &(0..=255u8).map(|v| vec![v]).collect::<Vec<_>>());
        assert_spelled_as_decode(ti(SqlType::SmallInt, 5, 0, 2), &edges(i16::MIN.into(), i16::MAX.into(), 2));
        assert_spelled_as_decode(ti(SqlType::Int, 10, 0, 4), &edges(i32::MIN.into(), i32::MAX.into(), 4));
        assert_spelled_as_decode(ti(SqlType::BigInt, 19, 0, 8), &edges(i64::MIN, i64::MAX, 8));
        // Too short for the type: the same error.
        assert_spelled_as_decode(ti(SqlType::Int, 10, 0, 4), &[vec![1, 2]]);
        assert_spelled_as_decode(ti(SqlType::BigInt, 19, 0, 8), &[vec![]]);
        for position in 0..8 {
            let plan = ColumnPlan::declared(1, "b", ti(SqlType::Bit, 1, 0, 1), 4, 1);
            let mut out = Utf8Writer::default();
            Spelling::Bit(position).spell(&plan, &[1 << position], &mut out, &mut String::new()).unwrap();
            Spelling::Bit(position).spell(&plan, &[!(1 << position)], &mut out, &mut String::new()).unwrap();
            assert_eq!(out.written(), b"10");
        }
    }

    #[test]
    fn money_and_decimals_at_their_edges() {
        let money: Vec<Vec<u8>> = [i64::MIN, i64::MIN + 1, -10_000, -9_999, -1, 0, 1, 9_999, 10_000, 199_900, i64::MAX]
            .iter()
            .map(|v| v.to_le_bytes().to_vec())
            .collect();
        assert_spelled_as_decode(ti(SqlType::Money, 19, 4, 8), &money);
        let small: Vec<Vec<u8>> =
            [i32::MIN, -1, 0, 1, 10_000, i32::MAX].iter().map(|v| v.to_le_bytes().to_vec()).collect();
        assert_spelled_as_decode(ti(SqlType::SmallMoney, 10, 4, 4), &small);
        // Every scale, magnitudes of 4, 8, 12 and 16 bytes, both signs (a negative zero too).
        let magnitudes: [u128; 12] = [
            0,
            1,
            9,
            10,
            99_999,
            999_999_999,
            u64::MAX as u128 / 10,
            u64::MAX as u128 - 1,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            10u128.pow(28) - 1,
            10u128.pow(38) - 1,
        ];
        for scale in 0..=38u8 {
            for (precision, len) in [(9, 4), (19, 8), (28, 12), (38, 16)] {
                let values: Vec<Vec<u8>> = magnitudes
                    .iter()
                    .filter(|&&m| m.checked_ilog2().map_or(0, |b| b + 1) <= 8 * len as u32)
                    .flat_map(|m| [0u8, 1].map(|sign| [&[sign][..], &m.to_le_bytes()[..len]].concat()))
                    .collect();
                assert_spelled_as_decode(ti(SqlType::Decimal, precision, scale, 1 + len as i16), &values);
            }
        }
        assert_spelled_as_decode(ti(SqlType::Numeric, 9, 2, 5), &[vec![1], vec![]]);
    }

    #[test]
    fn dates_datetimes_and_guids_at_their_edges() {
        let day = |d: u32| d.to_le_bytes()[..3].to_vec();
        // 0001-01-01, 1900-01-01, 1970-01-01, 2000-02-29, 9999-12-31, and past 9999.
        let days = [0, 693_595, 719_162, 730_178, 3_652_058, 3_652_059, 0xff_ffff];
        assert_spelled_as_decode(ti(SqlType::Date, 10, 0, 3), &days.map(day));
        for scale in 0..=7u8 {
            let time_len = match scale {
                0..=2 => 3,
                3..=4 => 4,
                _ => 5,
            };
            let last = 86_400 * 10u64.pow(u32::from(scale)) - 1;
            let values: Vec<Vec<u8>> = [0, 1, last / 2, last]
                .iter()
                .flat_map(|units| days.map(|d| [&units.to_le_bytes()[..time_len], &day(d)[..]].concat()))
                .collect();
            assert_spelled_as_decode(ti(SqlType::DateTime2, 20 + scale, scale, time_len as i16 + 3), &values);
        }
        let datetimes: Vec<Vec<u8>> = [(0u32, 0i32), (1, -53_690), (25_919_999, 2_958_463), (7, -1), (0, i32::MAX)]
            .iter()
            .map(|(ticks, days)| [ticks.to_le_bytes(), days.to_le_bytes()].concat())
            .collect();
        assert_spelled_as_decode(ti(SqlType::DateTime, 23, 3, 8), &datetimes);
        let guids = [[0u8; 16], [0xff; 16], std::array::from_fn(|i| i as u8 * 17)].map(|g| g.to_vec());
        assert_spelled_as_decode(ti(SqlType::UniqueIdentifier, 0, 0, 16), &guids);
    }

    #[test]
    fn text_as_its_codec_decodes_it() {
        let code_page = [b"plain".to_vec(), b"caf\xe9, \"quoted\"".to_vec(), vec![], vec![0x80, 0x9f, 0xff]];
        assert_spelled_as_decode(ti(SqlType::VarChar, 0, 0, 20), &code_page);
        let utf16 = |s: &str| s.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>();
        let units = [utf16("Zürich, \u{1F600}"), vec![0x3d, 0xd8, 0x41, 0], utf16(""), vec![0x41, 0, 0x42]];
        assert_spelled_as_decode(ti(SqlType::NVarChar, 0, 0, 40), &units);
    }
}
