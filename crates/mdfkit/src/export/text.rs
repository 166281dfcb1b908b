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
//! A page's records of one shape (`plain_pages::RecordShape`: the same status byte, fixed part
//! and column count, no variable-length column) come as their bytes ([`PageRow::Alike`]), each
//! value at its column's [`FixedPlace`], with no [`Record`] parsed and no check that the layout
//! takes the record. Where every column of such a line has a [`Bounded`] spelling (integers,
//! bit, money, decimals of up to 8 bytes of magnitude, date, uniqueidentifier: each value at most
//! a known length), the line is written into room reserved once for its longest
//! (`LineColumns::bounded_line`), with no length check or commit per value; a value that does not
//! fit its spelling (which the column lengths rule out) sends the line the value-by-value way.
//! Every other record is spelled value by value through the layout or the decoder, as before.
//!
//! The chunk is a [`Utf8Writer`]: bytes that are UTF-8 because every writer of them writes
//! UTF-8 (ASCII digits and separators, the text decoders' output, escaped text from a `str`),
//! written to the output file as they are. Only a value to be quoted or escaped is checked, to
//! be taken as a `str`.

use crate::bytes::{push_utf16le_utf8, Utf8Writer};
use crate::decode::Spelled;
use crate::error::{Error, Result};
use crate::plain_pages::{AlikeRecord, FixedPlace, PageRow, PlainLayout};
use crate::record::Record;
use crate::rows::{ColumnPlan, RowDecoder};
use crate::types::SqlType;
use crate::value::{POWERS_OF_TEN, TWO_DIGITS};

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
                    push_array(out, &guid_text(&b));
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

/// Decimal digits of `v`: 1 for 0. From its bit length (1233 / 4096 is just over log10 2: the
/// guess is the count or one more) and one comparison, without `ilog10`'s call and its chain
/// of comparisons. `v | 1` has as many digits as `v` (no power of ten above 1 is odd).
#[inline(always)]
fn digit_count(v: u64) -> usize {
    let w = v | 1;
    let guess = (((64 - w.leading_zeros()) * 1233) >> 12) as usize;
    // At most 64 * 1233 >> 12 = 19.
    guess + 1 - usize::from(POWERS_OF_TEN.get(guess).is_some_and(|&power| w < power))
}

/// Writes the last `out.len()` decimal digits of `v` into `out`, zeros on the left where `v`
/// has fewer, two digits at a time.
#[inline(always)]
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

/// The upper-case text of a uniqueidentifier: the first three groups little endian, the last
/// two as stored.
#[inline]
fn guid_text(b: &[u8; 16]) -> [u8; 36] {
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
    text
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
    /// Where the value lies in a record of one shape ([`PageRow::Alike`]), where the
    /// partition's layout is plain and reads no variable-length column.
    place: Option<FixedPlace>,
    /// The column's bounded spelling and its longest value, where it has a place.
    bounded: Option<(Bounded, usize)>,
}

/// The [`LineColumn`] of each of the decoder's columns, and the most bytes a line of a record
/// of one shape takes where each of its values has a [`Bounded`] spelling.
pub(super) struct LineColumns {
    columns: Vec<LineColumn>,
    bounded_line: Option<usize>,
}

/// The [`LineColumns`] of the decoder's columns; `plain` is the decoder's [`PlainLayout`], where
/// it has one (it says where a record of one shape holds each column).
pub(super) fn line_columns(format: ExportFormat, decoder: &RowDecoder, plain: Option<&PlainLayout>) -> LineColumns {
    let json = format != ExportFormat::Csv;
    let columns: Vec<LineColumn> = decoder
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
            let place = plain.and_then(|layout| layout.fixed_place(i));
            let spelling = Spelling::of(plan);
            // A JSON value is quoted where its kind says, as `push_value` does it.
            let bounded = place
                .and_then(|place| Bounded::of(spelling, place.stored_len()))
                .filter(|&(bounded, _)| !json || quoted == bounded.is_quoted());
            LineColumn { prefix, prefix_len, quoted, spelling, place, bounded }
        })
        .collect();
    // Each column's padded prefix (copied whole), its longest value and a closing quote; the
    // line's end.
    let bounded_line = columns
        .iter()
        .try_fold(2, |sum, c| Some(sum + c.prefix.len() + c.bounded?.1 + 1))
        .filter(|_| !columns.is_empty());
    LineColumns { columns, bounded_line }
}

/// A spelling whose every value is at most a known number of bytes long, for columns of the
/// length their type stores: a line of a record of one shape whose every column has one is
/// written into room reserved once for the line ([`Lines::push_bounded`]).
#[derive(Debug, Clone, Copy)]
enum Bounded {
    Bit(u8),
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Money,
    SmallMoney,
    /// A sign byte and a magnitude of up to 8 bytes, at this scale.
    Decimal(u8),
    Date,
    UniqueIdentifier,
}

impl Bounded {
    /// The bounded spelling of values of `len` bytes spelled as `spelling`, and their longest.
    fn of(spelling: Spelling, len: usize) -> Option<(Bounded, usize)> {
        Some(match (spelling, len) {
            (Spelling::Bit(position), 1) => (Bounded::Bit(position), 1),
            // `write_integer`'s window: a sign and 20 digits.
            (Spelling::TinyInt, 1) => (Bounded::TinyInt, 21),
            (Spelling::SmallInt, 2) => (Bounded::SmallInt, 21),
            (Spelling::Int, 4) => (Bounded::Int, 21),
            (Spelling::BigInt, 8) => (Bounded::BigInt, 21),
            // A sign, 15 digits, the point and 4 decimals; SmallMoney: 6 digits.
            (Spelling::Money, 8) => (Bounded::Money, 21),
            (Spelling::SmallMoney, 4) => (Bounded::SmallMoney, 12),
            // A sign, up to 20 digits before the point (1 at least), the point, the scale's.
            (Spelling::Decimal(scale), 2..=9) => (Bounded::Decimal(scale), 22 + usize::from(scale)),
            // `date_text`'s 10 bytes; past year 9999 (3 bytes reach year 45,000) `write_date`'s 11.
            (Spelling::Date, 3) => (Bounded::Date, 11),
            (Spelling::UniqueIdentifier, 16) => (Bounded::UniqueIdentifier, 36),
            _ => return None,
        })
    }

    /// Whether `push_value` quotes the value in JSON (`Spelled::Plain`), not only integers.
    fn is_quoted(self) -> bool {
        !matches!(self, Bounded::Bit(_) | Bounded::TinyInt | Bounded::SmallInt | Bounded::Int | Bounded::BigInt)
    }

    /// Writes the spelling of `bytes` at `out[at..]`; returns where it ends, `None` where `out`
    /// has not the room or `bytes` is not of the length the spelling reads (never, for the
    /// columns `of` chose and the room `bounded_line` reserves: the caller then spells the
    /// line value by value). `field` is room for a date past year 9999.
    #[inline(always)]
    fn write(self, bytes: &[u8], out: &mut [u8], at: usize, field: &mut String) -> Option<usize> {
        match self {
            Bounded::Bit(position) => {
                *out.get_mut(at)? = b'0' + (bytes.first()? >> position & 1);
                Some(at + 1)
            }
            Bounded::TinyInt => write_integer(out, at, false, (*bytes.first()?).into()),
            Bounded::SmallInt => {
                let v = i16::from_le_bytes(fixed::<2>(bytes)?);
                write_integer(out, at, v < 0, v.unsigned_abs().into())
            }
            Bounded::Int => {
                let v = i32::from_le_bytes(fixed::<4>(bytes)?);
                write_integer(out, at, v < 0, v.unsigned_abs().into())
            }
            Bounded::BigInt => {
                let v = i64::from_le_bytes(fixed::<8>(bytes)?);
                write_integer(out, at, v < 0, v.unsigned_abs())
            }
            Bounded::Money => {
                let v = i64::from_le_bytes(fixed::<8>(bytes)?);
                write_scaled(out, at, v < 0, v.unsigned_abs(), 4)
            }
            Bounded::SmallMoney => {
                let v = i32::from_le_bytes(fixed::<4>(bytes)?);
                write_scaled(out, at, v < 0, v.unsigned_abs().into(), 4)
            }
            Bounded::Decimal(scale) => {
                // As `Spelling::spell` reads it: a sign byte (0: negative), then the magnitude.
                let (&sign, magnitude) = bytes.split_first().filter(|(_, m)| m.len() <= 8)?;
                let mut m = [0u8; 8];
                m[..magnitude.len()].copy_from_slice(magnitude);
                let magnitude = u64::from_le_bytes(m);
                write_scaled(out, at, sign == 0 && magnitude != 0, magnitude, scale)
            }
            Bounded::Date => {
                let [a, b, c] = fixed::<3>(bytes)?;
                let days = i64::from(u32::from_le_bytes([a, b, c, 0])) - DAYS_0001_TO_1970;
                match crate::value::date_text(days) {
                    Some(text) => write_array(out, at, &text),
                    None => {
                        field.clear();
                        crate::value::write_date(field, days).ok()?;
                        let end = at + field.len();
                        out.get_mut(at..end)?.copy_from_slice(field.as_bytes());
                        Some(end)
                    }
                }
            }
            Bounded::UniqueIdentifier => write_array(out, at, &guid_text(&fixed::<16>(bytes)?)),
        }
    }
}

/// Writes `array` at `out[at..]` (a copy of a size the compiler knows); returns where it ends.
#[inline(always)]
fn write_array<const N: usize>(out: &mut [u8], at: usize, array: &[u8; N]) -> Option<usize> {
    *out.get_mut(at..)?.first_chunk_mut::<N>()? = *array;
    Some(at + N)
}

/// [`push_integer`] at `out[at..]`; returns where it ends.
#[inline(always)]
fn write_integer(out: &mut [u8], at: usize, negative: bool, magnitude: u64) -> Option<usize> {
    // A sign and 20 digits at most: the digits' places are checked against the window's
    // constant length.
    let window = out.get_mut(at..)?.first_chunk_mut::<21>()?;
    window[0] = b'-';
    let sign = usize::from(negative);
    let len = sign + digit_count(magnitude);
    put_digits(window.get_mut(sign..len)?, magnitude);
    Some(at + len)
}

/// [`push_scaled`] at `out[at..]`; returns where it ends.
#[inline(always)]
fn write_scaled(out: &mut [u8], at: usize, negative: bool, magnitude: u64, scale: u8) -> Option<usize> {
    if scale == 0 {
        return write_integer(out, at, negative, magnitude);
    }
    let (int, fraction) = split_at_scale(magnitude, scale);
    let sign = usize::from(negative);
    let point = sign + digit_count(int);
    let len = point + 1 + usize::from(scale);
    let room = out.get_mut(at..at + len)?;
    room[0] = b'-';
    put_digits(&mut room[sign..point], int);
    room[point] = b'.';
    put_digits(&mut room[point + 1..], fraction);
    Some(at + len)
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
        columns: &LineColumns,
        plain: Option<&PlainLayout>,
        decoder: &RowDecoder,
        record: &Record,
    ) -> Result<()> {
        let json = format != ExportFormat::Csv;
        let columns = &columns.columns[..];
        self.start_line(json, columns);
        let plain = plain.filter(|layout| layout.takes(record));
        for (i, (plan, column)) in decoder.columns().iter().zip(columns).enumerate() {
            let Lines { text, field, off_row } = self;
            let stored = match plain {
                Some(layout) => layout.stored(i, record),
                None => decoder.stored(record, plan, off_row).map_err(|e| decoder.in_column(e, plan))?,
            };
            push_value(text, field, json, column, plan, stored).map_err(|e| decoder.in_column(e, plan))?;
        }
        self.end_line(json);
        Ok(())
    }

    /// Appends `row` as [`Self::push_row`] does; a record of one shape has its values read at
    /// their [`LineColumn::place`] (no [`Record`], no check that the layout takes it: its shape
    /// says so).
    pub(super) fn push_page_row(
        &mut self,
        format: ExportFormat,
        columns: &LineColumns,
        plain: Option<&PlainLayout>,
        decoder: &RowDecoder,
        row: PageRow,
    ) -> Result<()> {
        let record = match row {
            PageRow::Record(record) => return self.push_row(format, columns, plain, decoder, record),
            PageRow::Alike(record) => record,
        };
        let json = format != ExportFormat::Csv;
        if let Some(line) = columns.bounded_line {
            if self.push_bounded(json, &columns.columns, line, record).is_some() {
                return Ok(());
            }
        }
        let columns = &columns.columns[..];
        self.start_line(json, columns);
        let Lines { text, field, .. } = self;
        for (plan, column) in decoder.columns().iter().zip(columns) {
            // Every column of a layout that hands on records of one shape has its place.
            let Some(place) = column.place else {
                return Err(Error::corrupt(format!(
                    "column {} has no place in a record of one shape",
                    plan.column.name
                )));
            };
            push_value(text, field, json, column, plan, record.value(place)).map_err(|e| decoder.in_column(e, plan))?;
        }
        self.end_line(json);
        Ok(())
    }

    /// Writes the line of `record`, whose every column has a [`Bounded`] spelling, into `line`
    /// bytes of room reserved at once; `None` (nothing written) where a value does not fit
    /// its column's spelling, which `bounded_line` rules out: the caller then spells it value
    /// by value, as any other line.
    #[inline]
    fn push_bounded(&mut self, json: bool, columns: &[LineColumn], line: usize, record: AlikeRecord) -> Option<()> {
        let Lines { text, field, .. } = self;
        let out = text.spare(line);
        let mut at = 0;
        for column in columns {
            let (bounded, _) = column.bounded?;
            // The prefix padded to 16 bytes, copied whole; the value goes after its own bytes.
            for (k, from) in column.prefix.chunks_exact(16).enumerate() {
                out.get_mut(at + 16 * k..)?.first_chunk_mut::<16>()?.copy_from_slice(from);
            }
            at += column.prefix_len;
            match record.value(column.place?) {
                Some(bytes) => {
                    at = bounded.write(bytes, out, at, field)?;
                    if json && column.quoted {
                        *out.get_mut(at)? = b'"';
                        at += 1;
                    }
                }
                None if json => {
                    // A quoted column's prefix ends with the opening quote: `null` replaces it.
                    at = at.checked_sub(usize::from(column.quoted))?;
                    at = write_array(out, at, b"null")?;
                }
                None => {}
            }
        }
        at = if json { write_array(out, at, b"}\n")? } else { write_array(out, at, b"\n")? };
        text.commit(at);
        Some(())
    }

    /// What a line starts with: for JSON without columns, the opening brace (otherwise in the
    /// first column's prefix).
    #[inline]
    fn start_line(&mut self, json: bool, columns: &[LineColumn]) {
        if json && columns.is_empty() {
            self.text.push_byte(b'{');
        }
    }

    #[inline]
    fn end_line(&mut self, json: bool) {
        self.text.push_bytes(if json { b"}\n" } else { b"\n" });
    }
}

/// Appends a column's prefix and the spelling of its stored value (`None`: NULL) to `text`;
/// `field` is room for a value spelled through [`crate::decode::spell_column`] or to be quoted
/// or escaped.
#[inline(always)]
fn push_value(
    text: &mut Utf8Writer,
    field: &mut String,
    json: bool,
    column: &LineColumn,
    plan: &ColumnPlan,
    stored: Option<&[u8]>,
) -> Result<()> {
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
    let Some(bytes) = stored else {
        if json {
            if column.quoted {
                text.truncate(text.len().saturating_sub(1));
            }
            text.push_bytes(b"null");
        }
        return Ok(());
    };
    // Spelled straight into the line; moved aside only when it must be quoted or escaped.
    let start = text.len();
    let spelled = column.spelling.spell(plan, bytes, text, field)?;
    if spelled == Spelled::Number {
        return Ok(());
    }
    let value = &text.written()[start..];
    let rewrite = spelled == Spelled::Text && if json { json_needs_escapes(value) } else { csv_needs_quotes(value) };
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
    Ok(())
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
                    // The spelling of a line of a record of one shape: the same text, within
                    // the room its bound reserves.
                    if let Some((bounded, longest)) = Bounded::of(spelling, bytes.len()) {
                        assert_eq!(bounded.is_quoted(), kind == Spelled::Plain, "{ty:?}");
                        let mut room = vec![b'x'; 3 + longest];
                        let end = bounded.write(bytes, &mut room, 3, &mut String::new());
                        let end = end.unwrap_or_else(|| panic!("{ty:?} {bytes:?} not written"));
                        assert_eq!(std::str::from_utf8(&room[3..end]).unwrap(), expected, "{ty:?} {bytes:?}");
                    }
                }
                (Err(e), Err(expected)) => assert_eq!(e.to_string(), expected.to_string()),
                (kind, expected) => panic!("{ty:?} {bytes:?}: {kind:?} against {expected:?}"),
            }
        }
    }

    #[test]
    fn digit_counts_around_every_power_of_ten() {
        let mut values = vec![0, 1, u64::MAX, u64::MAX - 1];
        values.extend(POWERS_OF_TEN.iter().flat_map(|&p| [p - 1, p, p + 1, p.saturating_mul(2)]));
        values.extend((0..64).flat_map(|bit| [1u64 << bit, (1u64 << bit) - 1]));
        for v in values {
            assert_eq!(digit_count(v), v.to_string().len(), "{v}");
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

    /// A table of the types lines of one shape spell bounded, with `qty` a decimal(9,2), `big` a
    /// decimal(18,4) (4 and 8 bytes of magnitude), every column nullable.
    fn bounded_table() -> Vec<(String, TypeInfo)> {
        [
            ("id", ti(SqlType::BigInt, 19, 0, 8)),
            ("customer", ti(SqlType::Int, 10, 0, 4)),
            ("t", ti(SqlType::TinyInt, 3, 0, 1)),
            ("s", ti(SqlType::SmallInt, 5, 0, 2)),
            ("day", ti(SqlType::Date, 10, 0, 3)),
            ("amount", ti(SqlType::Money, 19, 4, 8)),
            ("sm", ti(SqlType::SmallMoney, 10, 4, 4)),
            ("qty", ti(SqlType::Decimal, 9, 2, 5)),
            ("big", ti(SqlType::Decimal, 18, 4, 9)),
            ("g", ti(SqlType::UniqueIdentifier, 0, 0, 16)),
            ("returned", ti(SqlType::Bit, 1, 0, 1)),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect()
    }

    /// The fixed part of a `bounded_table` row: each value's stored bytes in declaration order.
    #[allow(clippy::too_many_arguments)]
    fn bounded_fixed(
        id: i64,
        customer: i32,
        t: u8,
        s: i16,
        day: u32,
        amount: i64,
        sm: i32,
        qty: (u8, u32),
        big: (u8, u64),
        g: [u8; 16],
        returned: u8,
    ) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(id.to_le_bytes());
        b.extend(customer.to_le_bytes());
        b.push(t);
        b.extend(s.to_le_bytes());
        b.extend(&day.to_le_bytes()[..3]);
        b.extend(amount.to_le_bytes());
        b.extend(sm.to_le_bytes());
        b.push(qty.0);
        b.extend(qty.1.to_le_bytes());
        b.push(big.0);
        b.extend(big.1.to_le_bytes());
        b.extend(g);
        b.push(returned);
        b
    }

    /// A page's lines through [`PlainLayout::visit_page`] (records of one shape as their bytes)
    /// and through `scan::visit_page` with every value read by the decoder, as the export read
    /// them before: the text (or the error) and the statistics.
    fn page_lines(
        decoder: &RowDecoder,
        reader: &crate::source::PageReader,
        page: &crate::page::Page,
        format: ExportFormat,
    ) -> [(std::result::Result<String, String>, crate::scan::ScanStats); 2] {
        use crate::scan::{Flow, ScanMode, ScanStats};
        let plain = PlainLayout::of(decoder).expect("a plain layout");
        let columns = line_columns(format, decoder, Some(&plain));
        let text = |lines: Lines, result: Result<Flow>| {
            result.map(|_| String::from_utf8(lines.text.written().to_vec()).unwrap()).map_err(|e| e.to_string())
        };
        let (mut lines, mut stats) = (Lines::default(), ScanStats::default());
        let result = plain.visit_page(reader, page, true, ScanMode::default(), &mut stats, &mut |row| {
            lines.push_page_row(format, &columns, Some(&plain), decoder, row)?;
            Ok(Flow::Continue)
        });
        let by_shape = (text(lines, result), stats);
        let (mut lines, mut stats) = (Lines::default(), ScanStats::default());
        let result = crate::scan::visit_page(reader, page, true, ScanMode::default(), &mut stats, &mut |record, _| {
            lines.push_row(format, &columns, None, decoder, record)?;
            Ok(Flow::Continue)
        });
        [by_shape, (text(lines, result), stats)]
    }

    /// Lines of records of one shape, spelled into room reserved once a line, are the lines the
    /// decoder's values spell: every type's edge values, NULLs, and the records that are not of
    /// the shape among them (a ghost, a row written before columns were added, a versioning tag,
    /// a deleted slot, a forwarding stub), and a record of the shape cut by the record area's
    /// end (the same error).
    #[test]
    fn lines_of_one_shape_as_the_decoders() {
        use crate::page::tests::{build_page, build_page_with_cut_record};
        use crate::page::{PageId, PAGE_SIZE};
        use crate::record::tests::build_record;
        let declared = bounded_table();
        let n = declared.len() as u16;
        let all: Vec<usize> = (1..=usize::from(n)).collect();
        let guid: [u8; 16] = std::array::from_fn(|i| i as u8 * 17);
        let mut records = vec![
            build_record(
                &bounded_fixed(
                    i64::MIN,
                    i32::MIN,
                    0,
                    i16::MIN,
                    0,
                    i64::MIN,
                    i32::MIN,
                    (0, 999_999_999),
                    (0, 999_999_999_999_999_999),
                    [0; 16],
                    0,
                ),
                n,
                &[],
                &[],
            ),
            build_record(
                &bounded_fixed(
                    i64::MAX,
                    i32::MAX,
                    255,
                    i16::MAX,
                    3_652_058,
                    i64::MAX,
                    i32::MAX,
                    (1, 999_999_999),
                    (1, 999_999_999_999_999_999),
                    [0xff; 16],
                    1,
                ),
                n,
                &[],
                &[],
            ),
            build_record(&bounded_fixed(0, 0, 0, 0, 719_162, 0, 0, (1, 0), (0, 0), guid, 1), n, &[], &[]),
            build_record(&[0; 61], n, &all, &[]),
        ];
        for r in 4..40u32 {
            let v = i64::from(r) * 1_000_003 - 17;
            let fixed = bounded_fixed(
                v * 7,
                -(v as i32),
                r as u8 * 3,
                r as i16 * -11,
                // Past 9999-12-31 too, which `date_text` leaves to `write_date`.
                if r == 9 { 0xff_ffff } else { 700_000 + r * 97 },
                v * 1_234,
                r as i32 * 99_999,
                (u8::from(r % 3 != 0), r * 12_345),
                (u8::from(r % 2 == 0), u64::from(r) << 40),
                guid.map(|b| b ^ r as u8),
                (r % 2) as u8,
            );
            let nulls: Vec<usize> = (1..=usize::from(n)).filter(|c| (r as usize + c).is_multiple_of(6)).collect();
            records.push(build_record(&fixed, n, &nulls, &[]));
        }
        // A ghost, a row written before the last three columns were added, a versioning tag.
        records[12][0] = (records[12][0] & !0x0e) | (6 << 1);
        records[15] = build_record(&records[15][4..4 + 8 + 4 + 1 + 2 + 3 + 8 + 4 + 5], n - 3, &[2], &[]);
        records[20][0] |= 0x40;
        records[20].extend([7; 14]);
        // A forwarding stub to page 11's slot 0, and the forwarded record.
        records.push(vec![2 << 1, 11, 0, 0, 0, 1, 0, 0, 0]);
        let mut forwarded = records[5].clone();
        forwarded[0] |= 1 << 1;
        records.push(records[6].clone());
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let mut whole_page = build_page(PageId::new(1, 10), 1, &refs);
        // Slot 30 deleted.
        whole_page[PAGE_SIZE - 2 * 31..][..2].copy_from_slice(&[0, 0]);
        // One more slot, pointed at the record area's last 20 bytes: the start of a record.
        let cut_page = build_page_with_cut_record(PageId::new(1, 12), &refs, &records[0]);
        let target = build_page(PageId::new(1, 11), 1, &[&forwarded]);
        let reader = crate::source::tests::reader(vec![(10, whole_page), (11, target), (12, cut_page)]);
        let decoder = RowDecoder::from_declaration(reader.clone(), "dbo.T", &declared).unwrap();
        let plain = PlainLayout::of(&decoder);
        assert!(
            line_columns(ExportFormat::Csv, &decoder, plain.as_ref()).bounded_line.is_some(),
            "every column bounded"
        );

        let page = reader.read(PageId::new(1, 10)).unwrap();
        for format in [ExportFormat::Csv, ExportFormat::Jsonl] {
            let [(by_shape, shape_stats), (expected, expected_stats)] = page_lines(&decoder, &reader, &page, format);
            let (text, expected) = (by_shape.unwrap(), expected.unwrap());
            assert_eq!(text, expected, "{format:?}");
            assert_eq!(shape_stats, expected_stats);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 42 - 1 - 1 - 1 + 1, "no ghost, deleted slot or stub; the forwarded row");
            assert_eq!((expected_stats.ghost_records, expected_stats.forwarded_rows), (1, 1));
            if format == ExportFormat::Csv {
                // The values written above, spelled by hand.
                assert_eq!(
                    lines[0],
                    "-9223372036854775808,-2147483648,0,-32768,0001-01-01,-922337203685477.5808,-214748.3648,\
                     -9999999.99,-99999999999999.9999,00000000-0000-0000-0000-000000000000,0"
                );
                assert_eq!(
                    lines[1],
                    "9223372036854775807,2147483647,255,32767,9999-12-31,922337203685477.5807,214748.3647,\
                     9999999.99,99999999999999.9999,FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF,1"
                );
                assert_eq!(
                    lines[2],
                    "0,0,0,0,1970-01-01,0.0000,0.0000,0.00,0.0000,33221100-5544-7766-8899-AABBCCDDEEFF,1"
                );
                assert_eq!(lines[3], ",,,,,,,,,,");
                assert!(lines[9].contains(",45935-"), "{}", lines[9]);
                // Row 15 has its first eight columns, the second NULL.
                assert!(lines[14].starts_with("105000196,,45,-165,") && lines[14].ends_with(",,,"), "{}", lines[14]);
            } else {
                let row = |i: usize| serde_json::from_str::<serde_json::Value>(lines[i]).unwrap();
                assert_eq!(row(0)["id"], i64::MIN);
                assert_eq!(row(0)["amount"], "-922337203685477.5808");
                assert_eq!(row(1)["qty"], "9999999.99");
                assert!(row(3).as_object().unwrap().values().all(serde_json::Value::is_null));
                assert_eq!(row(14)["big"], serde_json::Value::Null);
            }
        }
        let page = reader.read(PageId::new(1, 12)).unwrap();
        for format in [ExportFormat::Csv, ExportFormat::Jsonl] {
            let [(by_shape, _), (expected, _)] = page_lines(&decoder, &reader, &page, format);
            let (error, expected) = (by_shape.unwrap_err(), expected.unwrap_err());
            assert!(expected.contains("slot 42"), "{expected}");
            assert_eq!(error, expected);
        }
    }
}
