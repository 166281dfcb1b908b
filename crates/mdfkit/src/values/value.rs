//! Values of catalog rows and views, spelled the way SQL Server prints them.

use std::fmt;

/// A single value of a catalog row or view.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// Any integer type, and bit (0 or 1).
    Int(i64),
    /// Text, decoded from the column's code page or UTF-16.
    Text(String),
    /// Bytes (binary, varbinary, and values kept as stored).
    Binary(Vec<u8>),
    /// `datetime`: days since 1900-01-01 and 1/300-second ticks since midnight.
    DateTime {
        /// Days since 1900-01-01.
        days: i32,
        /// 1/300-second ticks since midnight.
        ticks: u32,
    },
    /// The bytes of a pointer to a value stored off-row (LOB or row-overflow).
    OffRow(Vec<u8>),
}

impl Value {
    /// The value's JSON spelling, the one every JSON output uses (`cat --format json|jsonl`,
    /// `export --format jsonl`, the studio's `.json` views): NULL is null, integers (and bit)
    /// are numbers, everything else is its SQL Server spelling as a string (decimals and money
    /// keep their exact digits that way).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Int(v) => (*v).into(),
            other => other.to_string().into(),
        }
    }

    /// The integer, or `None` for any other kind of value.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The text, or `None` for any other kind of value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the value is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A text value.
    pub fn text(s: impl Into<String>) -> Self {
        Value::Text(s.into())
    }

    /// A bit, as the integer 0 or 1.
    pub fn bit(b: bool) -> Self {
        Value::Int(b as i64)
    }

    /// A text value, or NULL when empty.
    pub fn text_or_null(s: &str) -> Self {
        if s.is_empty() {
            Value::Null
        } else {
            Value::Text(s.to_string())
        }
    }
}

impl fmt::Display for Value {
    /// SQL Server's spellings: `NULL`, `0x` + upper-case hex, `YYYY-MM-DD HH:MM:SS.mmm`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => f.write_str(itoa::Buffer::new().format(*v)),
            Value::Text(s) => f.write_str(s),
            Value::Binary(b) | Value::OffRow(b) => {
                f.write_str("0x")?;
                write_upper_hex(f, b)
            }
            Value::DateTime { days, ticks } => write_datetime(f, *days, *ticks),
        }
    }
}

/// Writes a `datetime` (days since 1900-01-01, 1/300-second ticks) as `YYYY-MM-DD HH:MM:SS.mmm`.
pub fn write_datetime(f: &mut impl fmt::Write, days: i32, ticks: u32) -> fmt::Result {
    write_date(f, i64::from(days) + DAYS_1900_TO_1970_NEG)?;
    let ms_total = (u64::from(ticks) * 10 + 1) / 3;
    f.write_char(' ')?;
    write_time(f, ms_total, 3)
}

/// Writes a date (days since 1970-01-01) as `YYYY-MM-DD`.
pub fn write_date(f: &mut impl fmt::Write, days_since_1970: i64) -> fmt::Result {
    if let Some(text) = date_text(days_since_1970) {
        return f.write_str(ascii(&text));
    }
    let (y, m, d) = civil_from_days(days_since_1970);
    write_padded_signed(f, y, 4)?;
    f.write_char('-')?;
    write_padded(f, u64::from(m), 2)?;
    f.write_char('-')?;
    write_padded(f, u64::from(d), 2)
}

/// Writes a time of day in units of 10^-`scale` seconds as `HH:MM:SS` and, for a scale above 0,
/// `.` and `scale` digits of fraction.
pub fn write_time(f: &mut impl fmt::Write, units: u64, scale: u8) -> fmt::Result {
    let per_second = 10u64.pow(u32::from(scale.min(19)));
    let (secs, frac) = (units / per_second, units % per_second);
    let hours = secs / 3600;
    if hours >= 100 || scale > 7 {
        write_padded(f, hours, 2)?;
        f.write_char(':')?;
        write_padded(f, secs / 60 % 60, 2)?;
        f.write_char(':')?;
        write_padded(f, secs % 60, 2)?;
        if scale > 0 {
            f.write_char('.')?;
            write_padded(f, frac, usize::from(scale))?;
        }
        return Ok(());
    }
    // `HH:MM:SS.fffffff` at most (SQL Server's scales go to 7), built in place.
    let mut text = *b"00:00:00.0000000";
    put_two_digits(&mut text[0..2], hours as u32);
    put_two_digits(&mut text[3..5], (secs / 60 % 60) as u32);
    put_two_digits(&mut text[6..8], (secs % 60) as u32);
    let scale = usize::from(scale);
    let mut rest = frac;
    for digit in text[9..9 + scale].iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    f.write_str(ascii(&text[..if scale == 0 { 8 } else { 9 + scale }]))
}

/// Days from 0000-01-01 and to 9999-12-31, counted from 1970-01-01: the dates [`date_text`] spells.
const FIRST_FOUR_DIGIT_DAY: i64 = -719_528;
const LAST_FOUR_DIGIT_DAY: i64 = 2_932_896;

/// The powers of ten a u64 holds, 10^0 to 10^19: for digit counts and scales, read in loops
/// over values where `pow` (a loop itself) would run once a value.
pub(crate) const POWERS_OF_TEN: [u64; 20] = {
    let mut powers = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        powers[i] = powers[i - 1] * 10;
        i += 1;
    }
    powers
};

/// `YYYY-MM-DD` of a date (days since 1970-01-01) in the years 0000-9999 (every date SQL Server
/// stores); `None` for any other. Built in place: this runs for every date of a text export.
///
/// The calendar arithmetic is Neri and Schneider's ("Euclidean affine functions and their
/// application to calendar algorithms", Software: Practice and Experience 53(4), 2023): the
/// day counted from a March 1st far enough back that every number is unsigned, then divisions
/// by constants only (the compiler's multiplications). Held to [`civil_from_days`] for every day
/// of those years by a test.
pub fn date_text(days_since_1970: i64) -> Option<[u8; 10]> {
    if !(FIRST_FOUR_DIGIT_DAY..=LAST_FOUR_DIGIT_DAY).contains(&days_since_1970) {
        return None;
    }
    // 82 cycles of 400 years before 0000-03-01 (0000-03-01 is 719,468 days before 1970-01-01).
    const CYCLES_BACK: u32 = 82;
    const SHIFT: i64 = 719_468 + 146_097 * CYCLES_BACK as i64;
    let n = u32::try_from(days_since_1970 + SHIFT).ok()?;
    // Century, then the year in it, then the month and day of a year that starts in March.
    let n1 = 4 * n + 3;
    let century = n1 / 146_097;
    let day_of_century = n1 % 146_097 / 4;
    let p2 = 2_939_745 * u64::from(4 * day_of_century + 3);
    let year_of_century = (p2 >> 32) as u32;
    let day_of_year = (p2 as u32) / 2_939_745 / 4;
    let n3 = 2_141 * day_of_year + 197_913;
    let (month, day) = (n3 >> 16, (n3 & 0xffff) / 2_141 + 1);
    // January and February belong to the year after the one that started in March.
    let january_or_february = day_of_year >= 306;
    let year = (100 * century + year_of_century + u32::from(january_or_february)).checked_sub(400 * CYCLES_BACK)?;
    let month = if january_or_february { month - 12 } else { month };
    let mut text = *b"0000-00-00";
    put_two_digits(&mut text[0..2], year / 100);
    put_two_digits(&mut text[2..4], year % 100);
    put_two_digits(&mut text[5..7], month);
    put_two_digits(&mut text[8..10], day);
    Some(text)
}

/// Two decimal digits of each value below 100: dates and times, and the text exports' integers.
pub(crate) const TWO_DIGITS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Puts the two digits of `v` (below 100) into `out` (two bytes).
fn put_two_digits(out: &mut [u8], v: u32) {
    let at = (v as usize % 100) * 2;
    out.copy_from_slice(&TWO_DIGITS[at..at + 2]);
}

/// Bytes this module built from ASCII digits and separators, as text.
fn ascii(text: &[u8]) -> &str {
    std::str::from_utf8(text).unwrap_or_default()
}

/// Writes `v` with leading zeros up to `width` digits, as `{v:0width$}` does, without the
/// formatting machinery (this runs for every date and time of a text export).
pub fn write_padded(f: &mut impl fmt::Write, v: u64, width: usize) -> fmt::Result {
    // Digits from the last, by hand: a u64 has at most 20.
    let mut digits = [b'0'; 20];
    let (mut rest, mut first) = (v, digits.len());
    loop {
        first -= 1;
        digits[first] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 && digits.len() - first >= width.min(digits.len()) {
            break;
        }
    }
    for _ in digits.len()..width {
        f.write_char('0')?;
    }
    f.write_str(ascii(&digits[first..]))
}

/// [`write_padded`] for a signed value: the sign counts in the width, as `{v:0width$}` counts it.
fn write_padded_signed(f: &mut impl fmt::Write, v: i64, width: usize) -> fmt::Result {
    if v < 0 {
        f.write_char('-')?;
        return write_padded(f, v.unsigned_abs(), width.saturating_sub(1));
    }
    write_padded(f, v as u64, width)
}

/// Upper-case hex digits, as SQL Server prints binary values and GUIDs.
const HEX_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

/// Writes `bytes` as upper-case hex digits, a stack buffer at a time: a `write!` per byte was
/// two thirds of a LOB table's CSV export.
pub fn write_upper_hex(f: &mut impl fmt::Write, bytes: &[u8]) -> fmt::Result {
    let mut buf = [0u8; 1024];
    for chunk in bytes.chunks(buf.len() / 2) {
        for (pair, &x) in buf.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX_DIGITS[usize::from(x >> 4)];
            pair[1] = HEX_DIGITS[usize::from(x & 0x0f)];
        }
        f.write_str(std::str::from_utf8(&buf[..chunk.len() * 2]).map_err(|_| fmt::Error)?)?;
    }
    Ok(())
}

/// 1900-01-01 is 25,567 days before 1970-01-01.
const DAYS_1900_TO_1970_NEG: i64 = -25_567;

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Howard Hinnant's `civil_from_days` algorithm.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `value / 10^scale` with exactly `scale` decimals, as SQL Server prints decimal and money.
pub fn scaled_text(value: i128, scale: u8) -> String {
    let mut out = String::new();
    push_scaled(&mut out, value, scale);
    out
}

/// Appends [`scaled_text`]'s spelling to `out` (no allocation: this runs for every money and
/// decimal value of a text export).
pub fn push_scaled(out: &mut String, value: i128, scale: u8) {
    let mut digits = itoa::Buffer::new();
    // 64-bit digits where the value fits (every money value, decimals up to 19 digits): 128-bit
    // division is several times slower.
    let digits = match u64::try_from(value.unsigned_abs()) {
        Ok(small) => digits.format(small),
        Err(_) => digits.format(value.unsigned_abs()),
    };
    let scale = usize::from(scale);
    // Sign, digits, point and leading zeros at once: one allocation for a value spelled into a
    // string of its own, not one a part.
    out.reserve(3 + digits.len().max(scale));
    if value < 0 {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(digits);
        return;
    }
    let (int, frac) = digits.split_at(digits.len().saturating_sub(scale));
    out.push_str(if int.is_empty() { "0" } else { int });
    out.push('.');
    out.extend(std::iter::repeat_n('0', scale - frac.len()));
    out.push_str(frac);
}

/// The canonical upper-case text of a uniqueidentifier.
pub fn guid_text(b: &[u8]) -> String {
    let mut out = String::with_capacity(36);
    push_guid(&mut out, b);
    out
}

/// Appends [`guid_text`]'s spelling of the first 16 bytes of `b` (fewer: as many as there are).
pub fn push_guid(out: &mut String, b: &[u8]) {
    // The first three groups are little endian, the last two as stored.
    const ORDER: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    for (i, &at) in ORDER.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        if let Some(&x) = b.get(at) {
            out.push(char::from(HEX_DIGITS[usize::from(x >> 4)]));
            out.push(char::from(HEX_DIGITS[usize::from(x & 0x0f)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_datetime_like_sql_server() {
        // 2012-03-15 is 40,981 days after 1900-01-01; ticks are 1/300 s.
        assert_eq!(Value::DateTime { days: 40_981, ticks: 0 }.to_string(), "2012-03-15 00:00:00.000");
        assert_eq!(Value::DateTime { days: 0, ticks: 1 }.to_string(), "1900-01-01 00:00:00.003");
        assert_eq!(Value::DateTime { days: 0, ticks: 2 }.to_string(), "1900-01-01 00:00:00.007");
        let last_tick = 24 * 3600 * 300 - 1;
        assert_eq!(Value::DateTime { days: 2_958_463, ticks: last_tick }.to_string(), "9999-12-31 23:59:59.997");
        assert_eq!(Value::DateTime { days: -53_690, ticks: 0 }.to_string(), "1753-01-01 00:00:00.000");
    }

    #[test]
    fn dates_and_times_are_what_format_spells() {
        // 0001-01-01, 0999-12-31, 1970-01-01, 9999-12-31, and years outside SQL Server's.
        for days in [-719_162, -354_286, -1, 0, 2_932_896, -800_000, 3_000_000] {
            let (y, m, d) = civil_from_days(days);
            let mut out = String::new();
            write_date(&mut out, days).unwrap();
            assert_eq!(out, format!("{y:04}-{m:02}-{d:02}"));
        }
        for scale in 0..=9u8 {
            let per_second = 10u64.pow(u32::from(scale));
            for secs in [0u64, 59, 3_599, 86_399, 100 * 3_600 + 1] {
                let units = secs * per_second + per_second.saturating_sub(1) / 3;
                let (h, m, s, f) = (secs / 3600, secs / 60 % 60, secs % 60, units % per_second);
                let mut out = String::new();
                write_time(&mut out, units, scale).unwrap();
                let width = usize::from(scale);
                let fraction = if scale == 0 { String::new() } else { format!(".{f:0width$}") };
                assert_eq!(out, format!("{h:02}:{m:02}:{s:02}{fraction}"), "scale {scale}");
            }
        }
    }

    #[test]
    fn date_text_is_the_civil_date_of_every_day_of_years_0000_to_9999() {
        for days in FIRST_FOUR_DIGIT_DAY..=LAST_FOUR_DIGIT_DAY {
            let (y, m, d) = civil_from_days(days);
            let text = date_text(days).unwrap();
            let expected = [y / 1000, y / 100 % 10, y / 10 % 10, y % 10];
            assert_eq!(text[..4], expected.map(|digit| b'0' + digit as u8), "{days}");
            assert_eq!(
                text[4..],
                [
                    b'-',
                    b'0' + (m / 10) as u8,
                    b'0' + (m % 10) as u8,
                    b'-',
                    b'0' + (d / 10) as u8,
                    b'0' + (d % 10) as u8
                ],
                "{days}"
            );
        }
        // Known days: 0001-01-01, a leap day, the last day SQL Server stores.
        assert_eq!(&date_text(-719_162).unwrap(), b"0001-01-01");
        assert_eq!(&date_text(11_016).unwrap(), b"2000-02-29");
        assert_eq!(&date_text(-25_508).unwrap(), b"1900-03-01");
        assert_eq!(&date_text(-719_528).unwrap(), b"0000-01-01");
        assert_eq!(&date_text(2_932_896).unwrap(), b"9999-12-31");
        assert_eq!(date_text(2_932_897), None);
        assert_eq!(date_text(-719_529), None);
        assert_eq!(date_text(i64::MIN), None);
    }

    #[test]
    fn padded_digits_are_what_format_pads() {
        for v in [0, 1, 9, 10, 99, 100, 12_345, 9_999_999, u64::MAX] {
            for width in [0, 1, 2, 3, 4, 7, 20, 23] {
                let mut out = String::new();
                write_padded(&mut out, v, width).unwrap();
                assert_eq!(out, format!("{v:0width$}"));
            }
        }
        for v in [-1i64, -999, -10_000, 0, 2012] {
            let mut out = String::new();
            write_padded_signed(&mut out, v, 4).unwrap();
            assert_eq!(out, format!("{v:04}"));
        }
    }

    #[test]
    fn spells_binary_and_null() {
        assert_eq!(Value::Binary(vec![0x0a, 0xff]).to_string(), "0x0AFF");
        assert_eq!(Value::Binary(vec![]).to_string(), "0x");
        // Across the writer's 512-byte steps.
        let long: Vec<u8> = (0..1300u32).map(|i| (i * 7) as u8).collect();
        let expected: String = long.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(Value::Binary(long).to_string(), format!("0x{expected}"));
        assert_eq!(Value::Int(i64::MIN).to_string(), "-9223372036854775808");
        assert_eq!(Value::Int(0).to_string(), "0");
        assert_eq!(Value::Null.to_string(), "NULL");
    }
}
