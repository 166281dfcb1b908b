//! The storage form of each SQL type, decoded to the spelling SQL Server prints.
//!
//! | type                 | bytes | storage                                                            |
//! |----------------------|------:|--------------------------------------------------------------------|
//! | bit                  | 1 bit | packed: bit `bitpos` of the byte at the column's offset            |
//! | tinyint              | 1     | unsigned                                                           |
//! | smallint/int/bigint  | 2/4/8 | signed little endian                                               |
//! | real / float         | 4/8   | IEEE 754                                                           |
//! | money                | 8     | signed 64-bit count of 1/10000, little endian                      |
//! | smallmoney           | 4     | signed 32-bit count of 1/10000                                     |
//! | decimal / numeric    | 5-17  | sign byte (1 positive, 0 negative), then a little-endian magnitude |
//! | datetime             | 8     | 1/300-second ticks since midnight (4), days since 1900-01-01 (4)   |
//! | smalldatetime        | 4     | minutes since midnight (2), days since 1900-01-01 (2)              |
//! | date                 | 3     | days since 0001-01-01                                              |
//! | time(n)              | 3-5   | units of 10^-n seconds since midnight                              |
//! | datetime2(n)         | 6-8   | time(n), then date                                                 |
//! | datetimeoffset(n)    | 8-10  | time(n) and date in UTC, then the offset in minutes (2, signed)    |
//! | uniqueidentifier     | 16    | first three groups little endian, the last 8 bytes as stored       |
//! | char/varchar         | n     | the collation's code page                                          |
//! | nchar/nvarchar       | 2n    | UTF-16LE                                                           |
//! | xml                  | any   | binary XML, decoded to text by [`crate::xmlbin`]                   |
//! | hierarchyid (CLR)    | 0-892 | bit fields of [MS-SSCLRT] 2.2; the path `/1/3/` ([`crate::clrtypes`]) |
//! | geometry, geography (CLR) | any | [MS-SSCLRT] 2.1; WKT as `ToString()` prints it ([`crate::spatial`]) |
//! | user CLR types       | any   | not decoded: `0x` + hex, like varbinary                            |
//!
//! Sources: SQL Server documentation of each type's storage size; Kalen Delaney, "SQL Server
//! Internals" (decimal layout); money's byte order taken from the corpus (pubs `titles.price`); checked against the expected values of the corpus
//! (`tests/corpus.rs` compares whole rows of pubs, products and AdventureWorksLT).

use crate::bytes::{read_i16, read_i32, read_i64, read_u16, read_u32};
use crate::catalog::model::ColumnInfo;
use crate::clrtypes::ClrKind;
use crate::error::{Error, Result};
use crate::types::{SqlType, TypeInfo};
use std::fmt::Write as _;

use crate::value::{push_guid, push_scaled, write_date, write_padded, write_time, write_upper_hex, Value};

/// Days from 0001-01-01 to 1970-01-01.
const DAYS_0001_TO_1970: i64 = 719_162;
/// Days from 1900-01-01 to 1970-01-01.
const DAYS_1900_TO_1970: i64 = 25_567;

/// Decodes one stored value of `column`: [`decode`], except that CLR columns are decoded by the
/// CLR type their user type id names (system type 240 alone does not say which).
pub fn decode_column(
    column: &ColumnInfo,
    bytes: &[u8],
    bit_position: u8,
    code_page_text: &dyn Fn(&[u8]) -> Result<String>,
) -> Result<Value> {
    match column.clr_kind() {
        Some(kind) => decode_clr(kind, bytes),
        None => decode(&column.type_info, bytes, bit_position, code_page_text),
    }
}

/// A CLR value: hierarchyid as its path, geometry and geography as WKT, user types as bytes.
pub fn decode_clr(kind: ClrKind, bytes: &[u8]) -> Result<Value> {
    Ok(match kind {
        ClrKind::HierarchyId => Value::Text(crate::clrtypes::hierarchyid_text(bytes)?),
        ClrKind::User => Value::Binary(bytes.to_vec()),
        ClrKind::Geometry => Value::Text(crate::spatial::to_wkt(bytes, false)?),
        ClrKind::Geography => Value::Text(crate::spatial::to_wkt(bytes, true)?),
    })
}

/// Decodes one stored value of a fixed- or variable-length column to its SQL Server spelling.
/// `bit_position` applies to bit columns; `code_page_text` decodes char/varchar bytes.
pub fn decode(
    ty: &TypeInfo,
    bytes: &[u8],
    bit_position: u8,
    code_page_text: &dyn Fn(&[u8]) -> Result<String>,
) -> Result<Value> {
    if let Some(v) = integer_value(ty, bytes, bit_position)? {
        return Ok(Value::Int(v));
    }
    if ty.sql_type == SqlType::DateTime {
        let ticks = read_u32(bytes, 0).ok_or_else(|| bad_value(ty, bytes))?;
        let days = read_i32(bytes, 4).ok_or_else(|| bad_value(ty, bytes))?;
        return Ok(Value::DateTime { days, ticks });
    }
    let mut text = String::new();
    if push_fixed_text(ty, bytes, &mut text)? {
        return Ok(Value::Text(text));
    }
    Ok(match ty.sql_type {
        SqlType::Char | SqlType::VarChar | SqlType::Text => Value::Text(code_page_text(bytes)?),
        SqlType::NChar | SqlType::NVarChar | SqlType::NText => Value::Text(crate::bytes::utf16le(bytes)),
        SqlType::Binary | SqlType::VarBinary | SqlType::Image | SqlType::Timestamp | SqlType::Clr => {
            Value::Binary(bytes.to_vec())
        }
        SqlType::Xml => Value::Text(crate::xmlbin::decode_xml(bytes)?),
        SqlType::SqlVariant => decode_variant(bytes, code_page_text)?.1,
        other => return Err(Error::unsupported(format!("values of type {} are not decoded yet", other.name()))),
    })
}

/// What a spelled value is, for CSV quoting and JSON: a number, fixed-form text, or free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelled {
    /// An integer (and bit): a JSON number.
    Number,
    /// Text of a fixed form that holds no comma, quote, backslash or control character
    /// (decimals, dates and times, GUIDs, `0x` hex): a JSON string as it is.
    Plain,
    /// Any other text: quoted or escaped where it needs it.
    Text,
}

/// Appends the SQL Server spelling of a column's stored value to `out` (char/varchar text decoded
/// by the column's `text` codec): the text of [`decode_column`]'s value, without building the
/// value for the types tables are made of. CSV and JSON Lines exports spell the common types as
/// bytes themselves (`export::text`, held to this function by its tests) and the others here.
pub fn spell_column(
    column: &ColumnInfo,
    text: &crate::collation::TextCodec,
    bytes: &[u8],
    bit_position: u8,
    out: &mut String,
) -> Result<Spelled> {
    let ty = &column.type_info;
    if column.clr_kind().is_none() {
        if let Some(v) = integer_value(ty, bytes, bit_position)? {
            match u8::try_from(v) {
                // Bits and small counts: one digit, without copying it out of a buffer.
                Ok(digit @ 0..=9) => out.push(char::from(b'0' + digit)),
                _ => out.push_str(itoa::Buffer::new().format(v)),
            }
            return Ok(Spelled::Number);
        }
        if push_fixed_text(ty, bytes, out)? {
            return Ok(Spelled::Plain);
        }
        match ty.sql_type {
            SqlType::Char | SqlType::VarChar | SqlType::Text => {
                text.decode_into(bytes, out)?;
                return Ok(Spelled::Text);
            }
            SqlType::NChar | SqlType::NVarChar | SqlType::NText => {
                crate::bytes::push_utf16le(bytes, out);
                return Ok(Spelled::Text);
            }
            SqlType::Binary | SqlType::VarBinary | SqlType::Image | SqlType::Timestamp | SqlType::Clr => {
                out.push_str("0x");
                let _ = write_upper_hex(out, bytes);
                return Ok(Spelled::Plain);
            }
            _ => {}
        }
    }
    let value = decode_column(column, bytes, bit_position, &|b| crate::collation::decode_text(column.collation_id, b))?;
    let _ = write!(out, "{value}");
    Ok(if matches!(value, Value::Int(_)) { Spelled::Number } else { Spelled::Text })
}

/// What [`spell_column`] returns for every value of `column`, where the type alone says it (all
/// but `sql_variant`, whose values are of many types): lets a writer put a JSON string's opening
/// quote before the value instead of moving the value to make room for it.
pub fn spelled_kind(column: &ColumnInfo) -> Option<Spelled> {
    if column.clr_kind().is_some() {
        // hierarchyid and spatial values as text, user types as bytes: none is an integer.
        return Some(Spelled::Text);
    }
    Some(match column.type_info.sql_type {
        SqlType::Bit | SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt => Spelled::Number,
        SqlType::Real
        | SqlType::Float
        | SqlType::Money
        | SqlType::SmallMoney
        | SqlType::Decimal
        | SqlType::Numeric
        | SqlType::SmallDateTime
        | SqlType::DateTime
        | SqlType::Date
        | SqlType::Time
        | SqlType::DateTime2
        | SqlType::DateTimeOffset
        | SqlType::UniqueIdentifier
        | SqlType::Binary
        | SqlType::VarBinary
        | SqlType::Image
        | SqlType::Timestamp => Spelled::Plain,
        SqlType::Char
        | SqlType::VarChar
        | SqlType::Text
        | SqlType::NChar
        | SqlType::NVarChar
        | SqlType::NText
        | SqlType::Xml => Spelled::Text,
        _ => return None,
    })
}

/// The error for a value whose bytes do not fit its type.
fn bad_value(ty: &TypeInfo, bytes: &[u8]) -> Error {
    Error::corrupt(format!("{} value of {} bytes", ty.spelling(), bytes.len()))
}

/// The value of an integer type (bit included); `None` for any other type.
fn integer_value(ty: &TypeInfo, bytes: &[u8], bit_position: u8) -> Result<Option<i64>> {
    let bad = || bad_value(ty, bytes);
    Ok(Some(match ty.sql_type {
        SqlType::Bit => i64::from(bytes.first().ok_or_else(bad)? >> (bit_position & 7) & 1),
        SqlType::TinyInt => i64::from(*bytes.first().ok_or_else(bad)?),
        SqlType::SmallInt => read_i16(bytes, 0).ok_or_else(bad)?.into(),
        SqlType::Int => read_i32(bytes, 0).ok_or_else(bad)?.into(),
        SqlType::BigInt => read_i64(bytes, 0).ok_or_else(bad)?,
        _ => return Ok(None),
    }))
}

/// Appends the spelling of a value of a type SQL Server prints as text of fixed form (real and
/// float, money, decimal, the date and time types, uniqueidentifier); false,
/// leaving `out` alone, for any other type.
fn push_fixed_text(ty: &TypeInfo, bytes: &[u8], out: &mut String) -> Result<bool> {
    let bad = || bad_value(ty, bytes);
    match ty.sql_type {
        SqlType::Real => {
            let v = f32::from_le_bytes(bytes.get(..4).ok_or_else(bad)?.try_into().unwrap_or_default());
            let _ = write!(out, "{v}");
        }
        SqlType::Float => {
            let v = f64::from_le_bytes(bytes.get(..8).ok_or_else(bad)?.try_into().unwrap_or_default());
            let _ = write!(out, "{v}");
        }
        SqlType::Money => push_scaled(out, read_i64(bytes, 0).ok_or_else(bad)?.into(), 4),
        SqlType::SmallMoney => push_scaled(out, read_i32(bytes, 0).ok_or_else(bad)?.into(), 4),
        SqlType::Decimal | SqlType::Numeric => {
            let (&sign, magnitude) = bytes.split_first().ok_or_else(bad)?;
            if magnitude.len() > 16 {
                return Err(bad());
            }
            let mut m = [0u8; 16];
            m[..magnitude.len()].copy_from_slice(magnitude);
            let value = u128::from_le_bytes(m) as i128;
            push_scaled(out, if sign == 0 { -value } else { value }, ty.scale);
        }
        SqlType::SmallDateTime => {
            let minutes = read_u16(bytes, 0).ok_or_else(bad)?;
            let days = read_u16(bytes, 2).ok_or_else(bad)?;
            let _ = write_date(out, i64::from(days) - DAYS_1900_TO_1970);
            out.push(' ');
            let _ = write_time(out, u64::from(minutes) * 60, 0);
        }
        SqlType::Date => {
            let _ = write_date(out, three_byte_days(bytes).ok_or_else(bad)?);
        }
        SqlType::Time => {
            let _ = write_time(out, time_units(bytes, ty.scale).ok_or_else(bad)?, ty.scale);
        }
        SqlType::DateTime2 => {
            let split = bytes.len().checked_sub(3).ok_or_else(bad)?;
            let units = time_units(&bytes[..split], ty.scale).ok_or_else(bad)?;
            let days = three_byte_days(&bytes[split..]).ok_or_else(bad)?;
            let _ = write_date(out, days);
            out.push(' ');
            let _ = write_time(out, units, ty.scale);
        }
        SqlType::DateTimeOffset => {
            let split = bytes.len().checked_sub(5).ok_or_else(bad)?;
            let units = time_units(&bytes[..split], ty.scale).ok_or_else(bad)?;
            let days = three_byte_days(&bytes[split..split + 3]).ok_or_else(bad)?;
            let offset = read_i16(bytes, split + 3).ok_or_else(bad)?;
            let per_day = 86_400 * 10i128.pow(u32::from(ty.scale));
            let local = i128::from(days) * per_day
                + i128::from(units)
                + i128::from(offset) * 60 * 10i128.pow(u32::from(ty.scale));
            let (d, u) = (local.div_euclid(per_day) as i64, local.rem_euclid(per_day) as u64);
            let _ = write_date(out, d);
            out.push(' ');
            let _ = write_time(out, u, ty.scale);
            out.push_str(if offset < 0 { " -" } else { " +" });
            let o = offset.unsigned_abs();
            let _ = write_padded(out, u64::from(o / 60), 2);
            out.push(':');
            let _ = write_padded(out, u64::from(o % 60), 2);
        }
        SqlType::UniqueIdentifier => push_guid(out, bytes.get(..16).ok_or_else(bad)?),
        SqlType::DateTime => {
            let ticks = read_u32(bytes, 0).ok_or_else(bad)?;
            let days = read_i32(bytes, 4).ok_or_else(bad)?;
            let _ = crate::value::write_datetime(out, days, ticks);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A sql_variant value: its base type's spelling and the value.
///
/// ```text
///  | base type id (1) | version = 1 (1) | properties | value in the base type's storage form |
/// ```
/// Properties: none for fixed-size types; max length (2) and collation id (4) for char, varchar,
/// nchar and nvarchar; max length (2) for binary and varbinary; precision and scale (1 each) for
/// decimal and numeric; scale (1) for time, datetime2 and datetimeoffset. The layouts without
/// properties and the string layout are read from the corpus (sysobjvalues.value holds int,
/// bigint, bit and nvarchar variants); the others follow the TDS SSVARIANT properties.
pub fn decode_variant(bytes: &[u8], code_page_text: &dyn Fn(&[u8]) -> Result<String>) -> Result<(String, Value)> {
    let (ty, collation, value) = variant_parts(bytes)?;
    let decoded = match collation {
        Some(id) => decode(&ty, value, 0, &|b| crate::collation::decode_text(id, b))?,
        None => decode(&ty, value, 0, code_page_text)?,
    };
    Ok((ty.spelling(), decoded))
}

/// A sql_variant's base type (completed by its properties), the collation of a string base type,
/// and the value bytes in the base type's storage form.
pub fn variant_parts(bytes: &[u8]) -> Result<(TypeInfo, Option<u32>, &[u8])> {
    let bad = || Error::corrupt(format!("sql_variant value of {} bytes", bytes.len()));
    let (&base, rest) = bytes.split_first().ok_or_else(bad)?;
    let rest = rest.get(1..).ok_or_else(bad)?;
    let sql_type = SqlType::from_id(base);
    let mut ty = TypeInfo { sql_type, max_length: 0, precision: 0, scale: 0 };
    let (props, collation) = match sql_type {
        SqlType::Char | SqlType::VarChar | SqlType::NChar | SqlType::NVarChar => {
            ty.max_length = read_i16(rest, 0).ok_or_else(bad)?;
            (6, Some(read_u32(rest, 2).ok_or_else(bad)?))
        }
        SqlType::Binary | SqlType::VarBinary => {
            ty.max_length = read_i16(rest, 0).ok_or_else(bad)?;
            (2, None)
        }
        SqlType::Decimal | SqlType::Numeric => {
            ty.precision = *rest.first().ok_or_else(bad)?;
            ty.scale = *rest.get(1).ok_or_else(bad)?;
            (2, None)
        }
        SqlType::Time | SqlType::DateTime2 | SqlType::DateTimeOffset => {
            ty.scale = *rest.first().ok_or_else(bad)?;
            (1, None)
        }
        SqlType::SqlVariant
        | SqlType::Xml
        | SqlType::Text
        | SqlType::NText
        | SqlType::Image
        | SqlType::Clr
        | SqlType::Unknown(_) => return Err(Error::corrupt(format!("sql_variant with base type {}", sql_type.name()))),
        other => {
            ty.max_length = other_fixed_length(other);
            (0, None)
        }
    };
    let value = rest.get(props..).ok_or_else(bad)?;
    Ok((ty, collation, value))
}

fn other_fixed_length(t: SqlType) -> i16 {
    TypeInfo { sql_type: t, max_length: 0, precision: 0, scale: 0 }.fixed_length().unwrap_or(0) as i16
}

fn three_byte_days(b: &[u8]) -> Option<i64> {
    let b = b.get(..3)?;
    Some(i64::from(u32::from_le_bytes([b[0], b[1], b[2], 0])) - DAYS_0001_TO_1970)
}

fn time_units(b: &[u8], scale: u8) -> Option<u64> {
    if b.is_empty() || b.len() > 5 || scale > 7 {
        return None;
    }
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::scaled_text;

    fn ti(t: SqlType, precision: u8, scale: u8, len: i16) -> TypeInfo {
        TypeInfo { sql_type: t, max_length: len, precision, scale }
    }

    fn text(ty: TypeInfo, bytes: &[u8]) -> String {
        decode(&ty, bytes, 0, &|b| Ok(crate::collation::decode_cp1252(b))).unwrap().to_string()
    }

    #[test]
    fn integers_and_bits() {
        assert_eq!(text(ti(SqlType::TinyInt, 3, 0, 1), &[200]), "200");
        assert_eq!(text(ti(SqlType::SmallInt, 5, 0, 2), &(-2i16).to_le_bytes()), "-2");
        assert_eq!(text(ti(SqlType::BigInt, 19, 0, 8), &i64::MIN.to_le_bytes()), i64::MIN.to_string());
        let bit = decode(&ti(SqlType::Bit, 1, 0, 1), &[0b0000_0100], 2, &|_| unreachable!()).unwrap();
        assert_eq!(bit, Value::Int(1));
    }

    #[test]
    fn money_and_decimal_keep_their_scale() {
        assert_eq!(text(ti(SqlType::Money, 19, 4, 8), &199_900i64.to_le_bytes()), "19.9900");
        assert_eq!(text(ti(SqlType::Money, 19, 4, 8), &(-5i64 << 32).to_le_bytes()), "-2147483.6480");
        assert_eq!(text(ti(SqlType::SmallMoney, 10, 4, 4), &(-8565i32).to_le_bytes()), "-0.8565");
        let mut dec = vec![1u8];
        dec.extend_from_slice(&8800u32.to_le_bytes());
        assert_eq!(text(ti(SqlType::Decimal, 9, 2, 5), &dec), "88.00");
        dec[0] = 0;
        assert_eq!(text(ti(SqlType::Decimal, 9, 2, 5), &dec), "-88.00");
        let mut max = vec![1u8];
        max.extend_from_slice(&(10u128.pow(38) - 1).to_le_bytes());
        assert_eq!(text(ti(SqlType::Decimal, 38, 38, 17), &max), format!("0.{}", "9".repeat(38)));
        assert_eq!(text(ti(SqlType::Numeric, 38, 0, 17), &max), "9".repeat(38));
        assert_eq!(scaled_text(5, 3), "0.005");
        assert_eq!(scaled_text(-5, 3), "-0.005");
        assert_eq!(scaled_text(0, 2), "0.00");
        assert_eq!(scaled_text(1234, 4), "0.1234");
        assert_eq!(scaled_text(-12345, 4), "-1.2345");
        assert_eq!(scaled_text(-7, 0), "-7");
        assert_eq!(scaled_text(i128::MIN, 10), "-17014118346046923173168730371.5884105728");
    }

    #[test]
    fn dates_and_times() {
        // 2012-03-15 is 734,576 days after 0001-01-01.
        let d = 734_576u32.to_le_bytes();
        assert_eq!(text(ti(SqlType::Date, 10, 0, 3), &d[..3]), "2012-03-15");
        assert_eq!(text(ti(SqlType::Date, 10, 0, 3), &[0, 0, 0]), "0001-01-01");
        let t7 = (86_399u64 * 10_000_000 + 9_999_999).to_le_bytes();
        assert_eq!(text(ti(SqlType::Time, 16, 7, 5), &t7[..5]), "23:59:59.9999999");
        assert_eq!(text(ti(SqlType::Time, 8, 0, 3), &[1, 0, 0]), "00:00:01");
        let mut dt2 = 45_000u32.to_le_bytes()[..3].to_vec(); // 45.000 s at scale 3
        dt2.extend_from_slice(&d[..3]);
        assert_eq!(text(ti(SqlType::DateTime2, 23, 3, 6), &dt2), "2012-03-15 00:00:45.000");
        let mut sdt = (61u16).to_le_bytes().to_vec();
        sdt.extend_from_slice(&40_981u16.to_le_bytes());
        assert_eq!(text(ti(SqlType::SmallDateTime, 16, 0, 4), &sdt), "2012-03-15 01:01:00");
        let mut dto = 0u32.to_le_bytes()[..3].to_vec(); // midnight UTC, scale 0
        dto.extend_from_slice(&d[..3]);
        dto.extend_from_slice(&(-90i16).to_le_bytes());
        assert_eq!(text(ti(SqlType::DateTimeOffset, 26, 0, 8), &dto), "2012-03-14 22:30:00 -01:30");
    }

    #[test]
    fn guids_in_sql_server_byte_order() {
        let b = [0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
        assert_eq!(text(ti(SqlType::UniqueIdentifier, 0, 0, 16), &b), "00112233-4455-6677-8899-AABBCCDDEEFF");
    }

    #[test]
    fn sql_variants_as_stored_in_sysobjvalues() {
        let cp = |b: &[u8]| Ok(crate::collation::decode_cp1252(b));
        let (t, v) = decode_variant(&[0x38, 0x01, 0x02, 0, 0, 0], &cp).unwrap();
        assert_eq!((t.as_str(), v), ("int", Value::Int(2)));
        let mut nv = vec![0xE7, 0x01, 0x08, 0x02, 0x08, 0xD0, 0x00, 0x34];
        nv.extend("Launcher.dll".encode_utf16().flat_map(|u| u.to_le_bytes()));
        let (t, v) = decode_variant(&nv, &cp).unwrap();
        assert_eq!((t.as_str(), v.to_string().as_str()), ("nvarchar(260)", "Launcher.dll"));
        let (t, v) = decode_variant(&[0x6A, 0x01, 9, 2, 1, 0x10, 0x27, 0, 0], &cp).unwrap();
        assert_eq!((t.as_str(), v.to_string().as_str()), ("decimal(9,2)", "100.00"));
        assert!(decode_variant(&[0x38], &cp).is_err());
        assert!(decode_variant(&[0x62, 0x01, 0], &cp).is_err(), "a variant cannot hold a variant");
    }

    #[test]
    fn clr_values_by_kind() {
        assert_eq!(decode_clr(ClrKind::HierarchyId, &[0x58]).unwrap(), Value::text("/1/"));
        let point = [
            0xE6, 0x10, 0, 0, 1, 0x0C, 0, 0, 0, 0, 0, 0x60, 0x44, 0x40, 0x8F, 0xC2, 0xF5, 0x28, 0x5C, 0x7F, 0x52, 0xC0,
        ];
        assert_eq!(decode_clr(ClrKind::Geography, &point).unwrap(), Value::text("POINT (-73.99 40.75)"));
        assert_eq!(decode_clr(ClrKind::Geometry, &point).unwrap(), Value::text("POINT (40.75 -73.99)"));
        assert_eq!(decode_clr(ClrKind::User, &[1, 2]).unwrap(), Value::Binary(vec![1, 2]));
        // Without the user type id a CLR value is shown as its bytes.
        assert_eq!(text(ti(SqlType::Clr, 0, 0, -1), &[0xAB]), "0xAB");
    }

    #[test]
    fn spellings_are_the_decoded_values_text() {
        let d = 734_576u32.to_le_bytes();
        let mut dto = 12_345u32.to_le_bytes()[..3].to_vec();
        dto.extend_from_slice(&d[..3]);
        dto.extend_from_slice(&(-90i16).to_le_bytes());
        let mut dto_east = dto.clone();
        dto_east[6..].copy_from_slice(&600i16.to_le_bytes());
        let mut dec = vec![0u8];
        dec.extend_from_slice(&123_456_789u32.to_le_bytes());
        let mut sdt = 1439u16.to_le_bytes().to_vec();
        sdt.extend_from_slice(&40_981u16.to_le_bytes());
        let mut variant = vec![0x38, 0x01];
        variant.extend_from_slice(&(-7i32).to_le_bytes());
        let cases: Vec<(TypeInfo, Vec<u8>)> = vec![
            (ti(SqlType::Bit, 1, 0, 1), vec![1]),
            (ti(SqlType::TinyInt, 3, 0, 1), vec![255]),
            (ti(SqlType::SmallInt, 5, 0, 2), (-300i16).to_le_bytes().to_vec()),
            (ti(SqlType::Int, 10, 0, 4), i32::MIN.to_le_bytes().to_vec()),
            (ti(SqlType::BigInt, 19, 0, 8), i64::MAX.to_le_bytes().to_vec()),
            (ti(SqlType::Real, 24, 0, 4), 1.5f32.to_le_bytes().to_vec()),
            (ti(SqlType::Float, 53, 0, 8), (-0.1f64).to_le_bytes().to_vec()),
            (ti(SqlType::Money, 19, 4, 8), (-5i64).to_le_bytes().to_vec()),
            (ti(SqlType::SmallMoney, 10, 4, 4), 199_900i32.to_le_bytes().to_vec()),
            (ti(SqlType::Decimal, 9, 5, 5), dec),
            (ti(SqlType::DateTime, 23, 3, 8), [7_776_000u32.to_le_bytes(), (-1i32).to_le_bytes()].concat()),
            (ti(SqlType::SmallDateTime, 16, 0, 4), sdt),
            (ti(SqlType::Date, 10, 0, 3), d[..3].to_vec()),
            (ti(SqlType::Time, 16, 7, 5), (86_399u64 * 10_000_000 + 42).to_le_bytes()[..5].to_vec()),
            (ti(SqlType::DateTime2, 27, 7, 8), [&(123_456_789u64).to_le_bytes()[..5], &d[..3]].concat()),
            (ti(SqlType::DateTimeOffset, 26, 0, 8), dto),
            (ti(SqlType::DateTimeOffset, 26, 0, 8), dto_east),
            (ti(SqlType::UniqueIdentifier, 0, 0, 16), (0..16).map(|i| i * 17).collect()),
            (ti(SqlType::VarChar, 0, 0, 20), b"caf\xe9 \x80".to_vec()),
            (ti(SqlType::NVarChar, 0, 0, 40), [0x41, 0, 0x3d, 0xd8, 0x00, 0xde, 0x00, 0xd8].to_vec()),
            (ti(SqlType::VarBinary, 0, 0, 10), vec![0, 0xab, 0x7f]),
            (ti(SqlType::SqlVariant, 0, 0, 8016), variant),
        ];
        for (ty, bytes) in cases {
            let column = crate::rows::ColumnPlan::declared(1, "c", ty, 4, 1).column;
            let mut out = String::from("kept,");
            let codec = crate::collation::TextCodec::new(column.collation_id);
            let spelled = spell_column(&column, &codec, &bytes, 0, &mut out).unwrap();
            let value =
                decode_column(&column, &bytes, 0, &|b| crate::collation::decode_text(column.collation_id, b)).unwrap();
            assert_eq!(out, format!("kept,{value}"), "{ty:?}");
            assert_eq!(spelled == Spelled::Number, matches!(value, Value::Int(_)), "{ty:?}");
            match spelled_kind(&column) {
                Some(kind) => assert_eq!(kind, spelled, "{ty:?}"),
                None => assert_eq!(ty.sql_type, SqlType::SqlVariant),
            }
            if spelled == Spelled::Plain {
                assert!(!out[5..].bytes().any(|b| matches!(b, b',' | b'"' | b'\\' | 0..=0x1f)), "{ty:?}: {out}");
            }
        }
    }

    #[test]
    fn short_values_are_errors() {
        for t in [SqlType::Int, SqlType::Money, SqlType::DateTime, SqlType::UniqueIdentifier, SqlType::Date] {
            assert!(decode(&ti(t, 0, 0, 0), &[1], 0, &|_| Ok(String::new())).is_err(), "{t:?}");
        }
    }
}
