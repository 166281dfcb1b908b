//! SQL Server's system types: ids, names, storage sizes and how a declared type is spelled.
//!
//! The ids are `sys.types.system_type_id` (the same numbers the TDS protocol and `syscolpars.xtype`
//! use). In `sysrscols.ti` the type id is the low byte; for variable-length types bits 8-23 are
//! the maximum length in bytes (0 = `max`), for decimal/numeric bits 8-15 are the precision and
//! 16-23 the scale, and for time/datetime2/datetimeoffset bits 8-15 are the fractional-second scale.
//!
//! Sources: SQL Server documentation for `sys.types`; the ti encoding from OrcaMDF's
//! `SysrscolTIParser` and the corpus files' sysrscols rows.

/// A system (built-in) type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlType {
    /// 34 `image`: binary stored off-row (deprecated LOB type).
    Image,
    /// 35 `text`: single-byte text stored off-row (deprecated LOB type).
    Text,
    /// 36 `uniqueidentifier`: a 16-byte GUID, first three groups little endian.
    UniqueIdentifier,
    /// 40 `date`: 3 bytes, days since 0001-01-01.
    Date,
    /// 41 `time(n)`: 3 to 5 bytes of 10^-n second units since midnight.
    Time,
    /// 42 `datetime2(n)`: a `time(n)` then a 3-byte `date`.
    DateTime2,
    /// 43 `datetimeoffset(n)`: a UTC `datetime2(n)` then a 2-byte offset in minutes.
    DateTimeOffset,
    /// 48 `tinyint`: 1 byte, unsigned.
    TinyInt,
    /// 52 `smallint`: 2 bytes.
    SmallInt,
    /// 56 `int`: 4 bytes.
    Int,
    /// 58 `smalldatetime`: u16 minutes since midnight, u16 days since 1900-01-01.
    SmallDateTime,
    /// 59 `real`: IEEE 754 single precision.
    Real,
    /// 60 `money`: 8 bytes, 1/10000 units, high 4 bytes first.
    Money,
    /// 61 `datetime`: u32 1/300-second ticks since midnight, i32 days since 1900-01-01.
    DateTime,
    /// 62 `float`: IEEE 754 double precision.
    Float,
    /// 98 `sql_variant`: a base type id, its properties and a value of that type.
    SqlVariant,
    /// 99 `ntext`: UTF-16 text stored off-row (deprecated LOB type).
    NText,
    /// 104 `bit`: one bit of a byte shared by up to 8 bit columns.
    Bit,
    /// 106 `decimal(p,s)`: a sign byte then a little-endian integer of 4, 8, 12 or 16 bytes.
    Decimal,
    /// 108 `numeric(p,s)`: stored as `decimal`.
    Numeric,
    /// 122 `smallmoney`: 4 bytes, 1/10000 units.
    SmallMoney,
    /// 127 `bigint`: 8 bytes.
    BigInt,
    /// 165 `varbinary(n|max)`.
    VarBinary,
    /// 167 `varchar(n|max)`: text in the column collation's code page.
    VarChar,
    /// 173 `binary(n)`.
    Binary,
    /// 175 `char(n)`: text in the column collation's code page, padded with spaces.
    Char,
    /// 189 `timestamp` / `rowversion`: 8 bytes, the database's row version counter.
    Timestamp,
    /// 231 `nvarchar(n|max)`: UTF-16LE (or SCSU in compressed rows).
    NVarChar,
    /// 239 `nchar(n)`: UTF-16LE, padded with spaces.
    NChar,
    /// 241 `xml`: SQL Server's binary XML ([`crate::xmlbin`]).
    Xml,
    /// CLR types (hierarchyid, geometry, geography and user CLR types) share id 240.
    Clr,
    /// A type id not listed in `sys.types`, kept as read.
    Unknown(u8),
}

impl SqlType {
    /// The type of a `sys.types.system_type_id` (`syscolpars.xtype`, the low byte of
    /// `sysrscols.ti`).
    pub fn from_id(id: u8) -> Self {
        use SqlType::*;
        match id {
            34 => Image,
            35 => Text,
            36 => UniqueIdentifier,
            40 => Date,
            41 => Time,
            42 => DateTime2,
            43 => DateTimeOffset,
            48 => TinyInt,
            52 => SmallInt,
            56 => Int,
            58 => SmallDateTime,
            59 => Real,
            60 => Money,
            61 => DateTime,
            62 => Float,
            98 => SqlVariant,
            99 => NText,
            104 => Bit,
            106 => Decimal,
            108 => Numeric,
            122 => SmallMoney,
            127 => BigInt,
            165 => VarBinary,
            167 => VarChar,
            173 => Binary,
            175 => Char,
            189 => Timestamp,
            231 => NVarChar,
            239 => NChar,
            241 => Xml,
            240 => Clr,
            other => Unknown(other),
        }
    }

    /// The `sys.types.system_type_id`.
    pub fn id(self) -> u8 {
        use SqlType::*;
        match self {
            Image => 34,
            Text => 35,
            UniqueIdentifier => 36,
            Date => 40,
            Time => 41,
            DateTime2 => 42,
            DateTimeOffset => 43,
            TinyInt => 48,
            SmallInt => 52,
            Int => 56,
            SmallDateTime => 58,
            Real => 59,
            Money => 60,
            DateTime => 61,
            Float => 62,
            SqlVariant => 98,
            NText => 99,
            Bit => 104,
            Decimal => 106,
            Numeric => 108,
            SmallMoney => 122,
            BigInt => 127,
            VarBinary => 165,
            VarChar => 167,
            Binary => 173,
            Char => 175,
            Timestamp => 189,
            NVarChar => 231,
            NChar => 239,
            Clr => 240,
            Xml => 241,
            Unknown(id) => id,
        }
    }

    /// The type's name as `sys.types` spells it.
    pub fn name(self) -> String {
        use SqlType::*;
        match self {
            Image => "image",
            Text => "text",
            UniqueIdentifier => "uniqueidentifier",
            Date => "date",
            Time => "time",
            DateTime2 => "datetime2",
            DateTimeOffset => "datetimeoffset",
            TinyInt => "tinyint",
            SmallInt => "smallint",
            Int => "int",
            SmallDateTime => "smalldatetime",
            Real => "real",
            Money => "money",
            DateTime => "datetime",
            Float => "float",
            SqlVariant => "sql_variant",
            NText => "ntext",
            Bit => "bit",
            Decimal => "decimal",
            Numeric => "numeric",
            SmallMoney => "smallmoney",
            BigInt => "bigint",
            VarBinary => "varbinary",
            VarChar => "varchar",
            Binary => "binary",
            Char => "char",
            Timestamp => "timestamp",
            NVarChar => "nvarchar",
            NChar => "nchar",
            Xml => "xml",
            Clr => "clr",
            Unknown(id) => return format!("type{id}"),
        }
        .to_string()
    }

    /// Types whose declared length is part of their spelling (`varchar(50)`).
    pub fn has_length(self) -> bool {
        use SqlType::*;
        matches!(self, VarBinary | VarChar | Binary | Char | NVarChar | NChar)
    }

    /// Types stored as UTF-16, whose byte length is twice their declared character length.
    pub fn is_unicode(self) -> bool {
        matches!(self, SqlType::NVarChar | SqlType::NChar | SqlType::NText)
    }

    /// Types with a fractional-seconds scale in their spelling (`datetime2(3)`).
    pub fn has_time_scale(self) -> bool {
        matches!(self, SqlType::Time | SqlType::DateTime2 | SqlType::DateTimeOffset)
    }
}

/// A column's type with its length, precision and scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// The system type.
    pub sql_type: SqlType,
    /// Maximum length in bytes; -1 for `(max)` types.
    pub max_length: i16,
    /// Digits for decimal/numeric; as `sys.columns.precision` for other types.
    pub precision: u8,
    /// Digits after the point for decimal/numeric; fractional-second digits for time, datetime2 and
    /// datetimeoffset.
    pub scale: u8,
}

impl TypeInfo {
    /// Parses a T-SQL type spelling such as `int`, `varchar(50)`, `nvarchar(max)`,
    /// `decimal(10,2)` or `datetime2(3)` (what `spelling` prints reads back).
    pub fn parse(spelling: &str) -> Option<Self> {
        let text = spelling.trim().to_ascii_lowercase();
        let (name, args) = match text.split_once('(') {
            Some((n, rest)) => (n.trim().to_string(), Some(rest.strip_suffix(')')?.to_string())),
            None => (text.clone(), None),
        };
        let sql_type =
            (0..=255u8).map(SqlType::from_id).find(|t| !matches!(t, SqlType::Unknown(_)) && t.name() == name)?;
        let mut info =
            TypeInfo { sql_type, max_length: fixed_storage(sql_type).unwrap_or(0) as i16, precision: 0, scale: 0 };
        let numbers: Vec<&str> = args.as_deref().map(|a| a.split(',').map(str::trim).collect()).unwrap_or_default();
        match sql_type {
            t if t.has_length() => {
                let n = numbers.first().copied().unwrap_or("1");
                info.max_length = if n == "max" {
                    -1
                } else {
                    let chars: i16 = n.parse().ok()?;
                    if t.is_unicode() {
                        chars.checked_mul(2)?
                    } else {
                        chars
                    }
                };
            }
            SqlType::Decimal | SqlType::Numeric => {
                info.precision = numbers.first().map_or(Some(18), |p| p.parse().ok())?;
                info.scale = numbers.get(1).map_or(Some(0), |s| s.parse().ok())?;
                if info.precision == 0 || info.precision > 38 || info.scale > info.precision {
                    return None;
                }
                info.max_length = decimal_storage(info.precision) as i16;
            }
            t if t.has_time_scale() => {
                info.scale = numbers.first().map_or(Some(7), |s| s.parse().ok())?;
                if info.scale > 7 {
                    return None;
                }
                info.max_length = time_storage(t, info.scale) as i16;
            }
            SqlType::Text | SqlType::NText | SqlType::Image => info.max_length = 16,
            _ if !numbers.is_empty() => return None,
            _ => {}
        }
        Some(info)
    }

    /// Decodes `sysrscols.ti`.
    pub fn from_ti(ti: u32) -> Self {
        let sql_type = SqlType::from_id((ti & 0xff) as u8);
        let b1 = ((ti >> 8) & 0xff) as u8;
        let b2 = ((ti >> 16) & 0xff) as u8;
        let mut info = TypeInfo { sql_type, max_length: 0, precision: 0, scale: 0 };
        use SqlType::*;
        match sql_type {
            Decimal | Numeric => {
                info.precision = b1;
                info.scale = b2;
                info.max_length = decimal_storage(b1) as i16;
            }
            Time | DateTime2 | DateTimeOffset => {
                info.scale = b1;
                info.max_length = time_storage(sql_type, b1) as i16;
            }
            VarBinary | VarChar | Binary | Char | NVarChar | NChar | Xml | Clr | SqlVariant => {
                let len = ((ti >> 8) & 0xffff) as i16;
                info.max_length = if len == 0 { -1 } else { len };
            }
            Image | Text | NText => info.max_length = 16,
            _ => info.max_length = fixed_storage(sql_type).unwrap_or(0) as i16,
        }
        info
    }

    /// Bytes the value takes when stored in the fixed-length part of a record.
    pub fn fixed_length(&self) -> Option<usize> {
        use SqlType::*;
        match self.sql_type {
            Binary | Char | NChar => usize::try_from(self.max_length).ok(),
            Decimal | Numeric => Some(decimal_storage(self.precision)),
            Time | DateTime2 | DateTimeOffset => Some(time_storage(self.sql_type, self.scale)),
            other => fixed_storage(other),
        }
    }

    /// The type as a DBA writes it: `decimal(18,2)`, `nvarchar(max)`, `datetime2(3)`, `int`.
    pub fn spelling(&self) -> String {
        let name = self.sql_type.name();
        if self.sql_type.has_length() {
            if self.max_length < 0 {
                return format!("{name}(max)");
            }
            let chars = if self.sql_type.is_unicode() { self.max_length / 2 } else { self.max_length };
            return format!("{name}({chars})");
        }
        match self.sql_type {
            SqlType::Decimal | SqlType::Numeric => {
                format!("{name}({},{})", self.precision, self.scale)
            }
            t if t.has_time_scale() => format!("{name}({})", self.scale),
            _ => name,
        }
    }
}

fn fixed_storage(t: SqlType) -> Option<usize> {
    use SqlType::*;
    Some(match t {
        Bit | TinyInt => 1,
        SmallInt => 2,
        Int | SmallDateTime | Real | SmallMoney => 4,
        BigInt | DateTime | Float | Money | Timestamp => 8,
        UniqueIdentifier => 16,
        Date => 3,
        _ => return None,
    })
}

fn decimal_storage(precision: u8) -> usize {
    match precision {
        0..=9 => 5,
        10..=19 => 9,
        20..=28 => 13,
        _ => 17,
    }
}

fn time_storage(t: SqlType, scale: u8) -> usize {
    let time = match scale {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    };
    match t {
        SqlType::Time => time,
        SqlType::DateTime2 => time + 3,
        _ => time + 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_ti_values_seen_in_sysrscols() {
        // Values read from the corpus: bigint, varbinary(16), binary(6), varbinary(8).
        assert_eq!(TypeInfo::from_ti(127).spelling(), "bigint");
        assert_eq!(TypeInfo::from_ti(4261).spelling(), "varbinary(16)");
        let bin6 = TypeInfo::from_ti(1709);
        assert_eq!(bin6.spelling(), "binary(6)");
        assert_eq!(bin6.fixed_length(), Some(6));
        assert_eq!(TypeInfo::from_ti(165).spelling(), "varbinary(max)");
    }

    #[test]
    fn spells_precision_scale_and_unicode_lengths() {
        let dec = TypeInfo::from_ti(106 | (18 << 8) | (2 << 16));
        assert_eq!(dec.spelling(), "decimal(18,2)");
        assert_eq!(dec.fixed_length(), Some(9));
        let nv = TypeInfo::from_ti(231 | (100 << 8));
        assert_eq!(nv.spelling(), "nvarchar(50)");
        let dt2 = TypeInfo::from_ti(42 | (3 << 8));
        assert_eq!(dt2.spelling(), "datetime2(3)");
        assert_eq!(dt2.fixed_length(), Some(7));
        assert_eq!(TypeInfo::from_ti(43 | (7 << 8)).fixed_length(), Some(10));
        assert_eq!(TypeInfo::from_ti(41).fixed_length(), Some(3));
    }

    #[test]
    fn parses_what_it_spells() {
        for spelling in
            ["int", "varchar(50)", "nvarchar(max)", "decimal(10,2)", "datetime2(3)", "char(1)", "uniqueidentifier"]
        {
            assert_eq!(TypeInfo::parse(spelling).unwrap().spelling(), spelling);
        }
        assert_eq!(TypeInfo::parse(" NVarChar(20) ").unwrap().max_length, 40);
        assert_eq!(TypeInfo::parse("decimal").unwrap().spelling(), "decimal(18,0)");
        for bad in ["integer", "decimal(40,2)", "int(4)", "varchar(x)", "time(9)", "varchar(50"] {
            assert!(TypeInfo::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ids_round_trip() {
        for id in 0..=255u8 {
            assert_eq!(SqlType::from_id(id).id(), id);
        }
    }
}
