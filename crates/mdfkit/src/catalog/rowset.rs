//! Physical rowset layouts (`sys.sysrscols`) and the reader for system base tables.
//!
//! Every rowset (a partition of a heap or index) describes its own physical columns in
//! `sysrscols`, one row per column:
//!
//! | rscolid | column      | type     | meaning                                                   |
//! |--------:|-------------|----------|-----------------------------------------------------------|
//! | 1       | rsid        | bigint   | rowset (partition) id                                     |
//! | 2       | rscolid     | int      | partition column id (= column id for heaps and clustered) |
//! | 3       | hbcolid     | int      | heap/B-tree column id                                     |
//! | 4       | rcmodified  | bigint   | modification counter                                      |
//! | 5       | ti          | int      | type info: type id in bits 0-7, then length or precision/scale |
//! | 6       | cid         | int      | collation id                                              |
//! | 7       | ordkey      | smallint | key ordinal (0 = not a key column)                        |
//! | 8       | maxinrowlen | smallint | maximum in-row length                                     |
//! | 9       | status      | int      | 0x02 dropped, 0x10 uniquifier, 0x100 sparse (no offset of its own) |
//! | 10      | offset      | int      | low 16 bits: leaf offset; high 16 bits: offset in B-tree interior rows |
//! | 11      | nullbit     | int      | low 16 bits: 1-based position in the leaf null bitmap     |
//! | 12      | bitpos      | smallint | bit within the byte, for bit columns                      |
//! | 13      | colguid     | varbinary(16) |                                                      |
//! | 14      | dbfragid    | int      |                                                           |
//!
//! A positive leaf offset is where a fixed-length column starts in the record; a negative one,
//! `-n`, marks the n-th variable-length column. This is how the physical column order differs
//! from declaration order (clustered key columns first, then the rest).
//!
//! The first fixed offsets of `sysrscols` and `sysallocunits` are needed to read `sysrscols`
//! itself; they are the same in every version of the corpus (655 to 998) and, once `sysrscols` is
//! read, checked against its own description of both tables.
//!
//! Columns added to a table after rows were written are absent from those rows (beyond the
//! record's column count or fixed part). Since SQL Server 2012 a column added NOT NULL with a
//! default (or `WITH VALUES`) is a metadata-only change: the value the old rows read is kept in
//! `sys.sysseobjvalues` (object id 9; absent from 655/661 files), one row per column with
//! `valclass` 1 (out-of-row default), `id` = the rowset, `subid` = the column's hbcolid,
//! `valnum` 0, and the value in `value` (sql_variant) — see [`stored_default`].
//!
//! Sources: column list from OrcaMDF's base table definitions and Remus Rusanu, "SQL Server table
//! columns under the hood"; offsets and ti encoding read from the corpus files' sysrscols rows;
//! the sysseobjvalues join from SQL Server's own definition of
//! `sys.system_internals_partition_columns` (2022/2025: `has_default`, `default_value`), its
//! columns (valclass tinyint, id bigint, subid bigint, valnum int, value sql_variant, imageval
//! varbinary(max)) from the corpus' 705-998 files, where no table has such a default.

use super::base::{NamedColumn, TableRows};
use crate::bytes::{read_i16, read_i32, read_i64, read_u32, utf16le};
use crate::error::{Error, Result};
use crate::record::Record;
use crate::types::{SqlType, TypeInfo};
use crate::value::Value;

/// One physical column of a rowset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalColumn {
    /// rscolid: the column's id within the rowset (= the column id for heaps and clustered
    /// indexes).
    pub rowset_column_id: i32,
    /// hbcolid: the column's id within the heap or B-tree.
    pub hb_column_id: i32,
    /// ti: the type, with its length or precision and scale.
    pub type_info: TypeInfo,
    /// cid: the collation id of text columns.
    pub collation_id: u32,
    /// ordkey: position in the index key, 0 for a column not in the key.
    pub key_ordinal: i16,
    /// maxinrowlen: the most bytes the column keeps in the record.
    pub max_inrow_length: i16,
    /// status bits: 0x02 dropped, 0x10 uniquifier, 0x100 sparse.
    pub status: i32,
    /// offset, low 16 bits: a leaf record's fixed offset, or `-n` for the n-th variable-length
    /// column ([`PhysicalColumn::location`]).
    pub leaf_offset: i16,
    /// offset, high 16 bits: the same in B-tree interior records.
    pub internal_offset: i16,
    /// nullbit, low 16 bits: the 1-based position in the leaf record's null bitmap.
    pub null_bit: u16,
    /// nullbit, high 16 bits: the same in B-tree interior records.
    pub internal_null_bit: u16,
    /// bitpos: the bit within its byte of a bit column.
    pub bit_position: i16,
}

/// sysrscols status bits.
const RSCOL_DROPPED: i32 = 0x02;
/// sysrscols status 0x10: the uniquifier of a non-unique clustered index.
pub const RSCOL_UNIQUIFIER: i32 = 0x10;
const RSCOL_SPARSE: i32 = 0x100;

impl PhysicalColumn {
    /// Dropped (status 0x02): its bytes may still be in old records but it is not a column any
    /// more.
    pub fn is_dropped(&self) -> bool {
        self.status & RSCOL_DROPPED != 0
    }

    /// The uniquifier SQL Server adds to the rows of a non-unique clustered index (status 0x10).
    pub fn is_uniquifier(&self) -> bool {
        self.status & RSCOL_UNIQUIFIER != 0
    }

    /// A sparse column (status 0x100): in the record's sparse vector, with no offset of its own.
    pub fn is_sparse(&self) -> bool {
        self.status & RSCOL_SPARSE != 0
    }

    /// Where the column's bytes are in a leaf record.
    pub fn location(&self) -> ColumnLocation {
        if self.leaf_offset < 0 {
            ColumnLocation::Variable(usize::from(self.leaf_offset.unsigned_abs()) - 1)
        } else {
            ColumnLocation::Fixed(self.leaf_offset as usize)
        }
    }
}

/// Where a column lives in a FixedVar leaf record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnLocation {
    /// Byte offset from the start of the record.
    Fixed(usize),
    /// 0-based index among the variable-length columns.
    Variable(usize),
}

/// The physical columns of one rowset, ordered by rowset column id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowsetLayout {
    /// The columns, by rowset column id.
    pub columns: Vec<PhysicalColumn>,
}

impl RowsetLayout {
    /// The column with rowset column id `rowset_column_id`.
    pub fn column(&self, rowset_column_id: i32) -> Option<&PhysicalColumn> {
        self.columns.iter().find(|c| c.rowset_column_id == rowset_column_id)
    }
}

/// sysseobjvalues.valclass of the values old rows read for a column added later.
const OUT_OF_ROW_DEFAULT: i64 = 1;

/// The stored default of column `hb_column_id` of `rowset` in `sysseobjvalues`: `None` when there
/// is none, else the sql_variant bytes of the value (an error for a value kept in `imageval`,
/// which the corpus has no sample of).
pub fn stored_default(seobjvalues: &TableRows, rowset: i64, hb_column_id: i32) -> Option<Result<&[u8]>> {
    let [valclass, id, subid, valnum, value, imageval] =
        ["valclass", "id", "subid", "valnum", "value", "imageval"].map(NamedColumn::new);
    let row = seobjvalues.iter().find(|&r| {
        valclass.int(r) == OUT_OF_ROW_DEFAULT
            && id.int(r) == rowset
            && subid.int(r) == i64::from(hb_column_id)
            && valnum.int(r) == 0
    })?;
    Some(match (value.get(row), imageval.get(row)) {
        (Value::Binary(variant), _) => Ok(variant.as_slice()),
        (Value::Null, Value::Null) => return None,
        _ => Err(Error::unsupported(
            "the stored default of this added column is kept in sysseobjvalues.imageval (a long value): not read yet",
        )),
    })
}

/// Decodes one sysrscols record with the fixed offsets every known version uses.
pub fn parse_sysrscols_row(record: &Record) -> Result<(i64, PhysicalColumn)> {
    let short = || Error::corrupt("sysrscols row's fixed part is shorter than every known version's");
    let b = record.fixed(4, 50).ok_or_else(short)?;
    let ti = read_u32(b, 24).ok_or_else(short)?;
    let offset = read_u32(b, 40).ok_or_else(short)?;
    let null_bit = read_u32(b, 44).ok_or_else(short)?;
    let column = PhysicalColumn {
        rowset_column_id: read_i32(b, 8).ok_or_else(short)?,
        hb_column_id: read_i32(b, 12).ok_or_else(short)?,
        type_info: TypeInfo::from_ti(ti),
        collation_id: read_u32(b, 28).ok_or_else(short)?,
        key_ordinal: read_i16(b, 32).ok_or_else(short)?,
        max_inrow_length: read_i16(b, 34).ok_or_else(short)?,
        status: read_i32(b, 36).ok_or_else(short)?,
        leaf_offset: (offset & 0xffff) as u16 as i16,
        internal_offset: (offset >> 16) as u16 as i16,
        null_bit: (null_bit & 0xffff) as u16,
        internal_null_bit: (null_bit >> 16) as u16,
        bit_position: read_i16(b, 48).ok_or_else(short)?,
    };
    Ok((read_i64(b, 0).ok_or_else(short)?, column))
}

/// SQL Server 2005 (611) keeps a rowset's physical layout in two tables that 2008 merged into
/// `sysrscols`: `sys.syshobtcolumns` (object id 13: the columns of a heap or B-tree) and
/// `sys.sysrowsetcolumns` (object id 4: which hobt column each rowset column is). Their columns,
/// all fixed-length, as their own rows describe them in every 611 file of the corpus (checked at
/// bootstrap):
///
/// | syshobtcolumns | offset | type | sysrowsetcolumns | offset | type |
/// |---|---|---|---|---|---|
/// | 1 hobtid | 4 | bigint | 1 rowsetid | 4 | bigint |
/// | 2 hobtcolid | 12 | int | 2 rowsetcolid | 12 | int |
/// | 3 status | 16 | int | 3 hobtcolid | 16 | int |
/// | 4 ordkey | 20 | smallint | 4 status | 20 | int |
/// | 5 type id | 22 | tinyint | 5 rcmodified | 24 | bigint |
/// | 6 max length | 23 | smallint | 6 maxinrowlen | 32 | smallint |
/// | 7 precision, 8 scale | 25, 26 | tinyint | | | |
/// | 9 collation id | 27 | int | | | |
/// | 10, 11 leaf / interior offset | 31, 33 | smallint | | | |
/// | 12, 13 leaf / interior bit position | 35, 36 | tinyint | | | |
/// | 14, 15 leaf / interior null bit | 37, 39 | smallint | | | |
///
/// That is sysrscols' `ti`, `offset`, `nullbit` and `bitpos` split into their parts. A rowset's id
/// is its hobt's id (every 611 file: the same ids in sysrowsets and syshobts). The status bits of
/// syshobtcolumns are not sysrscols' (0x20 on most columns, 0x02 on B-tree key columns of some
/// internal tables) and are not decoded: a 2005 column is never taken for dropped, a uniquifier or
/// sparse (2005 has no sparse columns).
pub fn parse_syshobtcolumns_row(record: &Record) -> Result<(i64, PhysicalColumn)> {
    let short = || Error::corrupt("syshobtcolumns row's fixed part is shorter than SQL Server 2005's (37 bytes)");
    let b = record.fixed(4, 37).ok_or_else(short)?;
    let byte = |at: usize| b.get(at).copied().ok_or_else(short);
    let hobt_column_id = read_i32(b, 8).ok_or_else(short)?;
    let column = PhysicalColumn {
        rowset_column_id: hobt_column_id,
        hb_column_id: hobt_column_id,
        type_info: TypeInfo::from_ti(ti_of_parts(byte(18)?, read_i16(b, 19).ok_or_else(short)?, byte(21)?, byte(22)?)),
        collation_id: read_u32(b, 23).ok_or_else(short)?,
        key_ordinal: read_i16(b, 16).ok_or_else(short)?,
        max_inrow_length: 0,
        status: 0,
        leaf_offset: read_i16(b, 27).ok_or_else(short)?,
        internal_offset: read_i16(b, 29).ok_or_else(short)?,
        null_bit: read_i16(b, 33).ok_or_else(short)? as u16,
        internal_null_bit: read_i16(b, 35).ok_or_else(short)? as u16,
        bit_position: i16::from(byte(31)?),
    };
    Ok((read_i64(b, 0).ok_or_else(short)?, column))
}

/// sysrscols' `ti` (see `crate::types`) of a type given as id, maximum length (-1 for `max`),
/// precision and scale.
fn ti_of_parts(type_id: u8, max_length: i16, precision: u8, scale: u8) -> u32 {
    let parameters = match SqlType::from_id(type_id) {
        SqlType::Decimal | SqlType::Numeric => u32::from(precision) | u32::from(scale) << 8,
        SqlType::Time | SqlType::DateTime2 | SqlType::DateTimeOffset => u32::from(scale),
        _ => u32::from(max_length.max(0) as u16),
    };
    u32::from(type_id) | parameters << 8
}

/// One sysrowsetcolumns row (SQL Server 2005, see [`parse_syshobtcolumns_row`]).
pub struct RowsetColumn {
    /// rowsetid: the rowset (partition) id.
    pub rowset: i64,
    /// rowsetcolid: the column's id within the rowset.
    pub rowset_column_id: i32,
    /// hobtcolid: the column's id in syshobtcolumns, which holds its layout.
    pub hobt_column_id: i32,
    /// maxinrowlen: the most bytes the column keeps in the record.
    pub max_inrow_length: i16,
}

/// Decodes a sysrowsetcolumns row (fixed offsets of SQL Server 2005, 611, read from the corpus).
pub fn parse_sysrowsetcolumns_row(record: &Record) -> Result<RowsetColumn> {
    let short = || Error::corrupt("sysrowsetcolumns row's fixed part is shorter than SQL Server 2005's (30 bytes)");
    let b = record.fixed(4, 30).ok_or_else(short)?;
    Ok(RowsetColumn {
        rowset: read_i64(b, 0).ok_or_else(short)?,
        rowset_column_id: read_i32(b, 8).ok_or_else(short)?,
        hobt_column_id: read_i32(b, 12).ok_or_else(short)?,
        max_inrow_length: read_i16(b, 28).ok_or_else(short)?,
    })
}

/// Decodes the column `column` of `record` into a catalog value.
pub fn read_column(record: &Record, column: &PhysicalColumn) -> Result<Value> {
    if column.null_bit > 0 && record.is_null(column.null_bit as usize) {
        return Ok(Value::Null);
    }
    let ty = column.type_info.sql_type;
    let bytes = match column.location() {
        ColumnLocation::Fixed(offset) => {
            let len = column
                .type_info
                .fixed_length()
                .ok_or_else(|| Error::unsupported(format!("{} column stored at a fixed offset", ty.name())))?;
            match record.fixed(offset, len) {
                Some(b) => b,
                None => return Ok(Value::Null),
            }
        }
        ColumnLocation::Variable(index) => match record.var(index)? {
            None => return Ok(Value::Null),
            Some(v) if v.complex => return Ok(Value::OffRow(v.bytes.to_vec())),
            Some(v) => v.bytes,
        },
    };
    let bad = || Error::corrupt(format!("{} value of {} bytes", ty.name(), bytes.len()));
    Ok(match ty {
        SqlType::Bit => {
            let bit = column.bit_position.clamp(0, 7) as u32;
            Value::Int(i64::from(bytes.first().ok_or_else(bad)? >> bit & 1))
        }
        SqlType::TinyInt => Value::Int(i64::from(*bytes.first().ok_or_else(bad)?)),
        SqlType::SmallInt => Value::Int(i64::from(read_i16(bytes, 0).ok_or_else(bad)?)),
        SqlType::Int => Value::Int(i64::from(read_i32(bytes, 0).ok_or_else(bad)?)),
        SqlType::BigInt => Value::Int(read_i64(bytes, 0).ok_or_else(bad)?),
        SqlType::NVarChar | SqlType::NChar => Value::Text(utf16le(bytes)),
        // System tables keep only ASCII in char columns (object type codes such as "U ").
        SqlType::Char | SqlType::VarChar => Value::Text(bytes.iter().map(|&b| b as char).collect()),
        SqlType::DateTime => {
            Value::DateTime { ticks: read_u32(bytes, 0).ok_or_else(bad)?, days: read_i32(bytes, 4).ok_or_else(bad)? }
        }
        _ => Value::Binary(bytes.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::build_record;

    /// A sysrscols row as the corpus files store it: 50 fixed bytes, then colguid (var).
    fn sysrscols_row(rsid: i64, rscolid: i32, ti: u32, offset: i16, null_bit: u16, status: i32) -> Vec<u8> {
        let mut fixed = Vec::new();
        fixed.extend_from_slice(&rsid.to_le_bytes());
        fixed.extend_from_slice(&rscolid.to_le_bytes());
        fixed.extend_from_slice(&rscolid.to_le_bytes()); // hbcolid
        fixed.extend_from_slice(&0i64.to_le_bytes()); // rcmodified
        fixed.extend_from_slice(&ti.to_le_bytes());
        fixed.extend_from_slice(&872468488u32.to_le_bytes()); // cid
        fixed.extend_from_slice(&0i16.to_le_bytes()); // ordkey
        fixed.extend_from_slice(&0i16.to_le_bytes()); // maxinrowlen
        fixed.extend_from_slice(&status.to_le_bytes());
        fixed.extend_from_slice(&(u32::from(offset as u16) | (9 << 16)).to_le_bytes());
        fixed.extend_from_slice(&u32::from(null_bit).to_le_bytes());
        fixed.extend_from_slice(&3i16.to_le_bytes()); // bitpos
        assert_eq!(fixed.len(), 50);
        build_record(&fixed, 13, &[], &[])
    }

    #[test]
    fn decodes_a_sysrscols_row() {
        let r = sysrscols_row(196608, 4, 231 | (256 << 8), -2, 4, RSCOL_DROPPED);
        let (rowset, c) = parse_sysrscols_row(&Record::parse(&r).unwrap()).unwrap();
        assert_eq!(rowset, 196608);
        assert_eq!(c.rowset_column_id, 4);
        assert_eq!(c.type_info.spelling(), "nvarchar(128)");
        assert_eq!(c.location(), ColumnLocation::Variable(1));
        assert_eq!((c.internal_offset, c.null_bit, c.bit_position), (9, 4, 3));
        assert!(c.is_dropped() && !c.is_uniquifier());
        let r = sysrscols_row(5, 1, 56, 4, 1, 0);
        let (_, c) = parse_sysrscols_row(&Record::parse(&r).unwrap()).unwrap();
        assert_eq!(c.location(), ColumnLocation::Fixed(4));
        assert!(parse_sysrscols_row(&Record::parse(&build_record(&[0; 20], 2, &[], &[])).unwrap()).is_err());
    }

    #[test]
    fn reads_each_kind_of_base_table_column() {
        let column = |ti: u32, offset: i16, null_bit: u16| PhysicalColumn {
            rowset_column_id: 1,
            hb_column_id: 1,
            type_info: TypeInfo::from_ti(ti),
            collation_id: 0,
            key_ordinal: 0,
            max_inrow_length: 0,
            status: 0,
            leaf_offset: offset,
            internal_offset: 0,
            null_bit,
            internal_null_bit: 0,
            bit_position: 0,
        };
        let mut fixed = 34i32.to_le_bytes().to_vec();
        fixed.extend_from_slice(b"U ");
        fixed.extend_from_slice(&[0x2c, 0x01, 0, 0, 0x1a, 0x9c, 0, 0]); // datetime
        let name: Vec<u8> = "sysschobjs".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let r = build_record(&fixed, 5, &[4], &[&name]);
        let rec = Record::parse(&r).unwrap();
        assert_eq!(read_column(&rec, &column(56, 4, 1)).unwrap(), Value::Int(34));
        assert_eq!(read_column(&rec, &column(175 | (2 << 8), 8, 2)).unwrap(), Value::text("U "));
        assert_eq!(read_column(&rec, &column(231 | (256 << 8), -1, 3)).unwrap(), Value::text("sysschobjs"));
        assert_eq!(read_column(&rec, &column(56, 4, 4)).unwrap(), Value::Null, "null bit set");
        assert_eq!(read_column(&rec, &column(56, 40, 5)).unwrap(), Value::Null, "past the fixed part");
        assert_eq!(
            read_column(&rec, &column(61, 10, 5)).unwrap().to_string(),
            "2009-05-31 00:00:01.000",
            "datetime: 300 ticks, 39962 days"
        );
    }
}
