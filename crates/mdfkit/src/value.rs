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
            Value::DateTime { days, ticks } => {
                let (y, m, d) = civil_from_days(i64::from(*days) + DAYS_1900_TO_1970_NEG);
                let ms_total = (u64::from(*ticks) * 10 + 1) / 3;
                let (secs, ms) = (ms_total / 1000, ms_total % 1000);
                write!(f, "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{ms:03}", secs / 3600, secs / 60 % 60, secs % 60)
            }
        }
    }
}

/// Writes `bytes` as upper-case hex digits, a stack buffer at a time: a `write!` per byte was
/// two thirds of a LOB table's CSV export.
fn write_upper_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut buf = [0u8; 1024];
    for chunk in bytes.chunks(buf.len() / 2) {
        for (pair, &x) in buf.chunks_exact_mut(2).zip(chunk) {
            pair[0] = DIGITS[usize::from(x >> 4)];
            pair[1] = DIGITS[usize::from(x & 0x0f)];
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
    // One allocation: this runs for every money and decimal value of a CSV export.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(value.unsigned_abs());
    let scale = usize::from(scale);
    let mut out = String::with_capacity(digits.len() + scale + 3);
    if value < 0 {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(digits);
        return out;
    }
    let (int, frac) = digits.split_at(digits.len().saturating_sub(scale));
    out.push_str(if int.is_empty() { "0" } else { int });
    out.push('.');
    out.extend(std::iter::repeat_n('0', scale - frac.len()));
    out.push_str(frac);
    out
}

/// The canonical upper-case text of a uniqueidentifier.
pub fn guid_text(b: &[u8]) -> String {
    format!(
        "{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}",
        b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
    )
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
