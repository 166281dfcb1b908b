//! Each type's storage form in ROW and PAGE compressed records, expanded to the type's ordinary
//! storage form (so that [`crate::decode`] and [`crate::columnar`] read it as they read any value).
//!
//! | type                          | compressed form                                                   |
//! |-------------------------------|-------------------------------------------------------------------|
//! | tinyint                       | the byte; 0 stored as no bytes                                    |
//! | smallint, int, bigint, smallmoney, money | big endian in the fewest bytes, top bit flipped (value + 2^(8n-1)); 0 as no bytes |
//! | datetime                      | one integer `days << 32 \| ticks`, compressed as bigint           |
//! | decimal, numeric              | vardecimal ([`super::vardecimal`])                                |
//! | real, float                   | the little-endian bytes without their low-order zero bytes       |
//! | date, time, datetime2, datetimeoffset | the little-endian bytes without their high-order zero bytes |
//! | char, binary                  | without trailing spaces / zero bytes                              |
//! | nchar, nvarchar(n)            | Unicode compressed ([`super::scsu`]), nchar without trailing spaces |
//! | timestamp                     | without leading zero bytes                                        |
//! | bit                           | CD code: empty for 0, "true bit" for 1                            |
//! | uniqueidentifier, varchar, varbinary, (max) types, text, ntext, image, xml, CLR | as is |
//! | smalldatetime, sql_variant    | not confirmed: refused by name                                    |
//!
//! Sources: Microsoft, "Row Compression Implementation" (which types are compressed and how in
//! words); Mark S. Rasmussen, "The Anatomy of Row & Page Compressed Integers" (improve.dk, 2012:
//! smallint -2, -1, 1, 2 stored as 7E, 7F, 81, 82; tinyint as is) and OrcaMDF's
//! `IntegerCompressionTests` and `DateCompressionTests` (records SQL Server wrote, with the
//! values; the datetime layout is read from them: 2012-01-29 23:57:42.997 is
//! `80 9FE7 018AE173`); rsleedbx/mssqlbak-tests `docs/spec/04_ROWSTORE_COMPRESSED.md` (money as
//! integers, float/real and the 2008 time types, checked there against SQL Server 2022 backups;
//! no bytes of these are at hand, so they are not yet checked here on real values); the
//! Business Central records (`fragments/bc-compressed-records`: timestamps 03FB83 and 03FB84 of
//! two rows written together, so big endian without leading zeros; luticm/SQLServer's dumps of one
//! row compressed and not: `07 D1` and `00000000 000007D1`); DBCC PAGE dumps with SQL
//! Server's values: Dmitri Korotkevitch, "Pro SQL Server Internals" listing 4-27 (int, varchar,
//! bit, char) and danny-sg/internals-viewer `CdDataRecordLoaderTests.cs` (int, varchar, char).

use crate::compressed::{scsu, vardecimal};
use crate::error::{Error, Result};
use crate::record::cd::CdValue;
use crate::types::{SqlType, TypeInfo};
use crate::value::Value;

/// Appends the ordinary storage form of a compressed value of type `ty` to `out` (bit columns:
/// one byte, bit 0 the value).
pub fn expand(ty: &TypeInfo, value: CdValue, out: &mut Vec<u8>) -> Result<()> {
    let bytes = match value {
        CdValue::Null => return Err(Error::corrupt("a NULL has no storage form")),
        CdValue::TrueBit if ty.sql_type == SqlType::Bit => {
            out.push(1);
            return Ok(());
        }
        CdValue::TrueBit => return Err(Error::corrupt(format!("a {} column stored as a true bit", ty.spelling()))),
        CdValue::Complex(_) => {
            return Err(Error::unsupported("an off-row value in a compressed record: not resolved here"))
        }
        CdValue::Symbol(n) => {
            return Err(Error::corrupt(format!("dictionary symbol {n} on a page without a dictionary")))
        }
        CdValue::Bytes(b) => b,
    };
    let overlong = || too_long(ty, bytes.len());
    let fixed = || ty.fixed_length().ok_or_else(|| Error::corrupt(format!("{} has no fixed length", ty.spelling())));
    match ty.sql_type {
        SqlType::Bit if bytes.is_empty() => out.push(0),
        SqlType::TinyInt if bytes.len() <= 1 => out.push(bytes.first().copied().unwrap_or(0)),
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::SmallMoney | SqlType::Money => {
            let width = fixed()?;
            let value = compressed_integer(bytes, width).ok_or_else(overlong)?;
            // Copies of a constant size: no call to memmove per value.
            match width {
                2 => out.extend_from_slice(&(value as i16).to_le_bytes()),
                4 => out.extend_from_slice(&(value as i32).to_le_bytes()),
                _ => out.extend_from_slice(&value.to_le_bytes()[..width]),
            }
        }
        SqlType::DateTime => {
            let value = compressed_integer(bytes, 8).ok_or_else(overlong)?;
            out.extend_from_slice(&(value as u32).to_le_bytes());
            out.extend_from_slice(&((value >> 32) as i32).to_le_bytes());
        }
        SqlType::Decimal | SqlType::Numeric => {
            vardecimal::to_decimal_storage(bytes, ty.precision, ty.scale, fixed()?, out)?
        }
        SqlType::Real | SqlType::Float => {
            let zeros = fixed()?.checked_sub(bytes.len()).ok_or_else(overlong)?;
            out.resize(out.len() + zeros, 0);
            out.extend_from_slice(bytes);
        }
        SqlType::Date | SqlType::Time | SqlType::DateTime2 | SqlType::DateTimeOffset => {
            let zeros = fixed()?.checked_sub(bytes.len()).ok_or_else(overlong)?;
            out.extend_from_slice(bytes);
            out.resize(out.len() + zeros, 0);
        }
        SqlType::Timestamp => {
            let zeros = 8usize.checked_sub(bytes.len()).ok_or_else(overlong)?;
            out.resize(out.len() + zeros, 0);
            out.extend_from_slice(bytes);
        }
        SqlType::Char | SqlType::Binary => {
            let pad = fixed()?.checked_sub(bytes.len()).ok_or_else(overlong)?;
            out.extend_from_slice(bytes);
            out.resize(out.len() + pad, if ty.sql_type == SqlType::Char { b' ' } else { 0 });
        }
        SqlType::NChar => {
            let start = out.len();
            scsu::unicode_value(bytes, out)?;
            let pad = fixed()?.checked_sub(out.len() - start).ok_or_else(overlong)?;
            for _ in 0..pad / 2 {
                out.extend_from_slice(&[b' ', 0]);
            }
        }
        SqlType::NVarChar if ty.max_length >= 0 => scsu::unicode_value(bytes, out)?,
        SqlType::UniqueIdentifier if bytes.len() == 16 => out.extend_from_slice(bytes),
        _ if stored_as_is(ty) => out.extend_from_slice(bytes),
        SqlType::SmallDateTime | SqlType::SqlVariant | SqlType::Unknown(_) => {
            return Err(Error::unsupported(format!(
                "{} values in compressed records: storage form not confirmed, not read",
                ty.spelling()
            )))
        }
        _ => return Err(overlong()),
    }
    Ok(())
}

/// Whether compressed values of type `ty` are stored in their ordinary storage form, so that
/// [`expand`] copies their bytes as they are (the table's "as is" row, less uniqueidentifier,
/// whose length is checked, and nvarchar(n), which is Unicode compressed).
pub fn stored_as_is(ty: &TypeInfo) -> bool {
    use SqlType::*;
    matches!(ty.sql_type, VarChar | VarBinary | Text | NText | Image | Xml | Clr)
        || (ty.sql_type == NVarChar && ty.max_length < 0)
}

/// The error for a compressed value of type `ty` longer (`len` bytes) than the type holds.
pub fn too_long(ty: &TypeInfo, len: usize) -> Error {
    Error::corrupt(format!("compressed {} value of {len} bytes", ty.spelling()))
}

/// A compressed integer: big endian in `bytes.len()` (0-`width`) bytes with the top bit flipped,
/// sign-extended; `None` when longer than `width`.
fn compressed_integer(bytes: &[u8], width: usize) -> Option<i64> {
    IntegerForm::Flipped(width).value(bytes, &[])
}

/// The compressed forms that hold one integer, which [`IntegerForm::value`] reads straight from
/// the stored bytes (the column-at-a-time path, [`crate::scans::cd_pages`], puts it into Arrow
/// with no ordinary storage form in between). The integer is the one the ordinary form holds:
/// a date's days since 0001-01-01, a datetime's `days << 32 | ticks`, money in ten-thousandths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegerForm {
    /// tinyint: the byte; 0 stored as no bytes.
    Byte,
    /// smallint, int, bigint, smallmoney, money, datetime: big endian in at most this many bytes,
    /// top bit flipped.
    Flipped(usize),
    /// date: little endian in at most this many bytes, high zero bytes dropped.
    LittleEndian(usize),
    /// bit: no bytes for 0 (a 1 is the CD code for a true bit, which stores none).
    Bit,
}

impl IntegerForm {
    /// The form of type `ty`'s compressed values, `None` when they are not one integer.
    pub fn of(ty: &TypeInfo) -> Option<Self> {
        Some(match ty.sql_type {
            SqlType::TinyInt => IntegerForm::Byte,
            SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::SmallMoney | SqlType::Money => {
                IntegerForm::Flipped(ty.fixed_length()?)
            }
            SqlType::DateTime => IntegerForm::Flipped(8),
            SqlType::Date => IntegerForm::LittleEndian(3),
            SqlType::Bit => IntegerForm::Bit,
            _ => return None,
        })
    }

    /// The integer stored as `head` followed by `tail` (an anchor prefix and the record's suffix,
    /// or the whole value and nothing), `None` when they are longer than the form holds.
    #[inline]
    pub fn value(self, head: &[u8], tail: &[u8]) -> Option<i64> {
        let n = head.len() + tail.len();
        if n > 8 {
            return None;
        }
        // Big endian: each byte shifts the ones before it up.
        let raw = head.iter().chain(tail).fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        self.from_word(raw, n)
    }

    /// The integer stored as the `n` (at most 8) bytes whose big endian reading is `word`, `None`
    /// when they are more than the form holds: [`Self::value`] once its bytes are read.
    #[inline]
    pub fn from_word(self, word: u64, n: usize) -> Option<i64> {
        match self {
            IntegerForm::Flipped(width) if n <= width.min(8) => {
                if n == 0 {
                    return Some(0);
                }
                let bits = 8 * n as u32;
                let flipped = word ^ (1u64 << (bits - 1));
                // Move the value's sign bit to bit 63 and shift back, extending it.
                Some(((flipped << (64 - bits)) as i64) >> (64 - bits))
            }
            IntegerForm::Byte if n <= 1 => Some(word as i64),
            IntegerForm::LittleEndian(width) if n <= width.min(8) => {
                // Reversed, the bytes read big endian end up at the top of the word.
                Some(if n == 0 { 0 } else { (word.swap_bytes() >> (64 - 8 * n as u32)) as i64 })
            }
            IntegerForm::Bit if n == 0 => Some(0),
            _ => None,
        }
    }
}

/// A compressed value of type `ty` spelled as SQL Server prints it (`code_page_text` decodes
/// char / varchar bytes).
pub fn decode_compressed(
    ty: &TypeInfo,
    value: CdValue,
    code_page_text: &dyn Fn(&[u8]) -> Result<String>,
) -> Result<Value> {
    if value == CdValue::Null {
        return Ok(Value::Null);
    }
    let mut stored = Vec::new();
    expand(ty, value, &mut stored)?;
    crate::decode::decode(ty, &stored, 0, code_page_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::cd::tests::{hex, BC_BASE_ROW, BC_EXT_ROW};
    use crate::record::cd::CdRecord;

    fn ty(spelling: &str) -> TypeInfo {
        TypeInfo::parse(spelling).unwrap()
    }

    /// The first column of a one-column CD record, as SQL Server prints it.
    fn first_column(record: &str, spelling: &str) -> String {
        let bytes = hex(record);
        let record = CdRecord::parse(&bytes).unwrap();
        let value = record.value(0).unwrap();
        decode_compressed(&ty(spelling), value, &|b| Ok(crate::collation::decode_cp1252(b))).unwrap().to_string()
    }

    #[test]
    fn integers_from_orcamdf_records() {
        // OrcaMDF IntegerCompressionTests: the record, the value SQL Server returned.
        for (record, spelling, value) in [
            ("01011201", "tinyint", "1"),
            ("0101127f", "tinyint", "127"),
            ("01011280", "tinyint", "128"),
            ("010112ff", "tinyint", "255"),
            ("01011281", "smallint", "1"),
            ("0101127f", "smallint", "-1"),
            ("0101137f 7e", "smallint", "-130"),
            ("010112ff", "smallint", "127"),
            ("01011380 80", "smallint", "128"),
            ("01011380 ff", "smallint", "255"),
            ("01011300 00", "smallint", "-32768"),
            ("010112ff", "int", "127"),
            ("01011380 80", "int", "128"),
            ("010113ff ff", "int", "32767"),
            ("01011480 8000", "int", "32768"),
            ("010114ff ffff", "int", "8388607"),
            ("010115ff ffffff", "int", "2147483647"),
            ("01011200", "int", "-128"),
            ("0101137f 7f", "int", "-129"),
            ("01011400 0000", "int", "-8388608"),
            ("0101157f 7fffff", "int", "-8388609"),
            ("010119ff ffffffff ffffff", "bigint", "9223372036854775807"),
            ("010118ff ffffffff ffff", "bigint", "36028797018963967"),
            ("010117ff ffffffff ff", "bigint", "140737488355327"),
            ("010116ff ffffffff", "bigint", "549755813887"),
            ("010115ff ffffff", "bigint", "2147483647"),
            ("01011100", "int", "0"),
            ("01011084", "int", "NULL"),
        ] {
            assert_eq!(first_column(record, spelling), value, "{record} as {spelling}");
        }
    }

    #[test]
    fn integer_forms_read_a_prefix_and_suffix_as_the_joined_value() {
        // OrcaMDF's -8388609 as an int, and a date of day 0x030201, split at every byte.
        for (form, bytes, value) in [
            (IntegerForm::Flipped(4), &[0x7f, 0x7f, 0xff, 0xff][..], -8_388_609),
            (IntegerForm::LittleEndian(3), &[0x01, 0x02, 0x03][..], 0x030201),
            (IntegerForm::Byte, &[0xff][..], 255),
        ] {
            for split in 0..=bytes.len() {
                assert_eq!(form.value(&bytes[..split], &bytes[split..]), Some(value), "{form:?} split at {split}");
            }
        }
        assert_eq!(IntegerForm::LittleEndian(3).value(&[], &[]), Some(0));
        assert_eq!(IntegerForm::Bit.value(&[], &[]), Some(0));
        assert_eq!(IntegerForm::Bit.value(&[1], &[]), None);
        assert_eq!(IntegerForm::Flipped(2).value(&[0x80], &[1, 2]), None, "three bytes for a smallint");
        assert_eq!(IntegerForm::of(&ty("money")), Some(IntegerForm::Flipped(8)));
        assert_eq!(IntegerForm::of(&ty("datetime")), Some(IntegerForm::Flipped(8)));
        assert_eq!(IntegerForm::of(&ty("decimal(9,2)")), None);
    }

    #[test]
    fn smallints_from_improve_dk() {
        // "The Anatomy of Row & Page Compressed Integers": -2, -1, 1, 2.
        for (byte, value) in [(0x7e, "-2"), (0x7f, "-1"), (0x81, "1"), (0x82, "2")] {
            let v = decode_compressed(&ty("smallint"), CdValue::Bytes(&[byte]), &|_| unreachable!()).unwrap();
            assert_eq!(v.to_string(), value);
        }
    }

    #[test]
    fn datetimes_from_orcamdf_records() {
        // OrcaMDF DateCompressionTests: the record, the value SQL Server returned.
        for (record, value) in [
            ("01011880 9FE7018A E173", "2012-01-29 23:57:42.997"),
            ("01011880 9FE7018A E0CE", "2012-01-29 23:57:42.447"),
            ("01011881 1D58018B 81FF", "2099-12-31 23:59:59.997"),
            ("0101187F 2E460000 0000", "1753-01-01 00:00:00.000"),
            ("01011100", "1900-01-01 00:00:00.000"),
            ("01011681 00000000", "1900-01-02 00:00:00.000"),
            ("01011681 012EB969", "1900-01-02 18:22:11.123"),
            ("01011581 6F50F2", "1900-01-01 22:17:21.447"),
            ("0101177E 94012EB9 69", "1899-01-02 18:22:11.123"),
        ] {
            assert_eq!(first_column(record, "datetime"), value, "{record}");
        }
    }

    #[test]
    fn text_of_the_business_central_records() {
        let bytes = hex(BC_EXT_ROW);
        let record = CdRecord::parse(&bytes).unwrap();
        let code = ty("nvarchar(10)");
        for (column, expected) in [(2, "SALES"), (10, "GENJNL"), (61, "PRODORDER"), (70, "REVALJNL"), (82, "COMPRWHSE")]
        {
            let v = decode_compressed(&code, record.value(column).unwrap(), &|_| unreachable!()).unwrap();
            assert_eq!(v.to_string(), expected, "column {column}");
        }
        let empty = decode_compressed(&code, record.value(6).unwrap(), &|_| unreachable!()).unwrap();
        assert_eq!(empty, Value::text(""));
        // Two rows written together: consecutive row versions.
        let base = hex(BC_BASE_ROW);
        let base = CdRecord::parse(&base).unwrap();
        let version = |r: &CdRecord| {
            let mut out = Vec::new();
            expand(&ty("timestamp"), r.value(1).unwrap(), &mut out).unwrap();
            u64::from_be_bytes(out.try_into().unwrap())
        };
        assert_eq!(version(&base) + 1, version(&record));
    }

    fn spell(ty: &TypeInfo, value: CdValue) -> String {
        decode_compressed(ty, value, &|b| Ok(crate::collation::decode_cp1252(b))).unwrap().to_string()
    }

    #[test]
    fn record_of_a_dbcc_page_dump_in_internals_viewer() {
        // danny-sg/internals-viewer, src/InternalsViewer.Internals.Tests/UnitTests/Loaders/
        // CdDataRecordLoaderTests.cs: the DBCC PAGE dump of a row, with SQL Server's values
        // NumberField = 101, TextField = This is row 1, FixedTextField = Row 1 (char(2000)).
        let bytes = hex("2103a216 e5526f77 20310101 000d0054 68697320 69732072 6f772031");
        let record = CdRecord::parse(&bytes).unwrap();
        assert_eq!(record.bytes().len(), 28, "Record size = 28");
        assert_eq!(spell(&ty("int"), record.value(0).unwrap()), "101");
        assert_eq!(spell(&ty("varchar(100)"), record.value(1).unwrap()), "This is row 1");
        assert_eq!(spell(&ty("char(2000)"), record.value(2).unwrap()), format!("Row 1{}", " ".repeat(1995)));
    }

    #[test]
    fn record_of_a_dbcc_page_dump_in_pro_sql_server_internals() {
        // Dmitri Korotkevitch, "Pro SQL Server Internals" (Apress), listings 4-26 and 4-27:
        // dbo.RowCompressionData WITH (DATA_COMPRESSION = ROW), one row inserted as
        // (0, 2147483647, NULL, 'aaa', replicate('b',1000), 0, 1, NULL, replicate('c',1000),
        // 'dddddddddd'); DBCC PAGE prints Record size = 2033, Int1 = 0, Int2 = 2147483647,
        // Int3 = [NULL]. The dump skips the middle of the runs of b and c, rebuilt here.
        let mut bytes = hex("210a5140 1a0baaff ffffff61 61610103 00e803d0 07da07");
        bytes.extend_from_slice(&[b'b'; 1000]);
        bytes.extend_from_slice(&[b'c'; 1000]);
        bytes.extend_from_slice(b"dddddddddd");
        let record = CdRecord::parse(&bytes).unwrap();
        assert_eq!(record.bytes().len(), 2033);
        let columns = [
            ("int", "0".to_string()),
            ("int", "2147483647".to_string()),
            ("int", "NULL".to_string()),
            ("varchar(1000)", "aaa".to_string()),
            ("varchar(1000)", "b".repeat(1000)),
            ("bit", "0".to_string()),
            ("bit", "1".to_string()),
            ("char(1000)", "NULL".to_string()),
            ("char(1000)", "c".repeat(1000)),
            ("char(1000)", format!("{}{}", "d".repeat(10), " ".repeat(990))),
        ];
        for (i, (spelling, expected)) in columns.iter().enumerate() {
            assert_eq!(&spell(&ty(spelling), record.value(i).unwrap()), expected, "column {}", i + 1);
        }
    }

    #[test]
    fn record_of_a_dbcc_page_dump_in_a_training_script() {
        // luticm/SQLServer, `SQLScripts/Mastering SQL Server training/Modulo10_Demo1.sql`
        // (Luciano Caixeta Moreira, SQL Server 2012): CompressadoDados (Codigo bigint identity,
        // Nome varchar(100), Idade bigint, SeloTempo rowversion) rebuilt WITH (DATA_COMPRESSION =
        // ROW); slot 0 of DBCC PAGE, Record size = 85. The first row inserted: Codigo 1, Idade
        // @I % 100 = 1, Nome two NEWID()s; the script's dump of the same table uncompressed shows
        // Codigo 1, Idade 1 and SeloTempo 00000000000007D1 in its first record.
        let bytes = hex("2104a232 818107d1 01010048 00333332 39393530 422d3846 30372d34 3546372d
             41354238 2d363934 39363542 38413241 34433035 34463033 412d4443 34382d34
             3042352d 42383335 2d333235 39454434 41363034 45");
        let record = CdRecord::parse(&bytes).unwrap();
        assert_eq!(record.bytes().len(), 85);
        assert_eq!(spell(&ty("bigint"), record.value(0).unwrap()), "1");
        assert_eq!(
            spell(&ty("varchar(100)"), record.value(1).unwrap()),
            "3329950B-8F07-45F7-A5B8-694965B8A2A4C054F03A-DC48-40B5-B835-3259ED4A604E"
        );
        assert_eq!(spell(&ty("bigint"), record.value(2).unwrap()), "1");
        assert_eq!(spell(&ty("timestamp"), record.value(3).unwrap()), "0x00000000000007D1");
    }

    #[test]
    fn padded_and_trimmed_types() {
        let text = |spelling: &str, bytes: &[u8]| {
            decode_compressed(&ty(spelling), CdValue::Bytes(bytes), &|b| Ok(crate::collation::decode_cp1252(b)))
                .unwrap()
                .to_string()
        };
        assert_eq!(text("char(5)", b"ab"), "ab   ");
        assert_eq!(text("binary(4)", &[0xab]), "0xAB000000");
        assert_eq!(text("nchar(4)", b"ab\x10"), "ab  ");
        assert_eq!(text("bit", &[]), "0");
        let one = decode_compressed(&ty("bit"), CdValue::TrueBit, &|_| unreachable!()).unwrap();
        assert_eq!(one, Value::Int(1));
        // float 2.0 is 0x4000000000000000: only its high byte is stored.
        assert_eq!(text("float", &[0x40]), "2");
        // date 0001-01-02: day 1, high zero bytes dropped.
        assert_eq!(text("date", &[1]), "0001-01-02");
        assert_eq!(text("decimal(5,2)", &[0xC2, 0x1E, 0xDC, 0x20]), "123.45");
        assert_eq!(text("money", &[0x80, 0x4e, 0x20]), "2.0000", "20000 ten-thousandths");
    }

    #[test]
    fn wrong_lengths_and_unconfirmed_types_are_refused() {
        let err = |spelling: &str, v: CdValue| decode_compressed(&ty(spelling), v, &|_| unreachable!()).unwrap_err();
        use crate::error::ErrorKind;
        assert_eq!(err("smallint", CdValue::Bytes(&[1, 2, 3])).kind(), ErrorKind::Corrupt);
        assert_eq!(err("tinyint", CdValue::Bytes(&[1, 2])).kind(), ErrorKind::Corrupt);
        assert_eq!(err("char(2)", CdValue::Bytes(b"abc")).kind(), ErrorKind::Corrupt);
        assert_eq!(err("int", CdValue::TrueBit).kind(), ErrorKind::Corrupt);
        assert_eq!(err("uniqueidentifier", CdValue::Bytes(&[1; 15])).kind(), ErrorKind::Corrupt);
        let refused = err("smalldatetime", CdValue::Bytes(&[1]));
        assert_eq!(refused.kind(), ErrorKind::Unsupported);
        assert!(refused.message().contains("smalldatetime"));
    }
}
