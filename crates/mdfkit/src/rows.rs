//! Turning a table's records into values: which stored column feeds which declared column.
//!
//! For a heap or clustered index the partition column id in sysrscols equals the column id in
//! syscolpars, so each declared column is found in the partition's physical layout by id (dropped
//! physical columns and the hidden uniquifier are never returned). Its leaf offset says where its
//! bytes are: the physical order, not the declaration order (clustered key columns come first).
//! Computed columns that are not persisted have no stored bytes and are not returned.
//!
//! Sources: Remus Rusanu, "SQL Server table columns under the hood"; checked on the corpus, where
//! every stored column's sysrscols type equals its syscolpars type and the expected rows of pubs
//! and products are reproduced exactly.

use crate::catalog::model::{ColumnInfo, TableInfo};
use crate::catalog::rowset::{ColumnLocation, PhysicalColumn};
use crate::database::Database;
use crate::decode::decode_column;
use crate::error::{Error, Result};
use crate::lob;
use crate::record::Record;
use crate::source::PageReader;
use crate::types::{SqlType, TypeInfo};
use crate::value::Value;

/// The collation assumed for text in a declared (schema-less) layout: code page 1252.
const DECLARED_COLLATION: u32 = 0x3400_D008;

/// One output column and where its bytes are stored.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    pub column: ColumnInfo,
    pub physical: PhysicalColumn,
    /// Bytes the value takes in the fixed part, worked out once (`None` for variable-length).
    fixed_len: Option<usize>,
}

/// Decodes the records of one partition into rows of values.
#[derive(Clone)]
pub struct RowDecoder {
    table: String,
    columns: Vec<ColumnPlan>,
    /// Variable-length columns in the partition's layout; a row's sparse vector, when it has one,
    /// is stored after them.
    layout_var_columns: usize,
    /// Reads off-row (LOB and row-overflow) values.
    reader: PageReader,
}

impl RowDecoder {
    /// The decoder for partition `partition_id` of `table`, returning the columns named in `only`
    /// (all stored columns when `None`) in declaration order.
    pub fn new(db: &Database, table: &TableInfo, partition_id: i64, only: Option<&[String]>) -> Result<Self> {
        let catalog = db.catalog();
        let name = table.qualified_name();
        let layout = catalog.base().layouts.get(&partition_id).ok_or_else(|| {
            Error::corrupt(format!("sys.sysrscols has no layout for partition {partition_id}")).in_object(name.clone())
        })?;
        let mut columns = Vec::new();
        for column in catalog.columns(table.object_id) {
            if let Some(only) = only {
                if !only.iter().any(|o| o.eq_ignore_ascii_case(&column.name)) {
                    continue;
                }
            }
            let physical = layout.columns.iter().find(|p| p.rowset_column_id == column.column_id && !p.is_dropped());
            let Some(physical) = physical else {
                if column.is_computed {
                    continue;
                }
                return Err(Error::corrupt(format!(
                    "column {} has no stored column in partition {partition_id}",
                    column.name
                ))
                .in_object(name));
            };
            // A column set is computed from the sparse vector: not a stored column.
            if column.is_column_set {
                return Err(Error::unsupported(format!(
                    "column {} is a sparse column set: not supported yet",
                    column.name
                ))
                .in_object(name));
            }
            // Decimals are fixed-length; stored as a variable-length column they are in the
            // vardecimal storage format (SQL Server 2005 SP2's sp_tableoption 'vardecimal
            // storage format'), whose encoding is not read yet.
            if matches!(column.type_info.sql_type, SqlType::Decimal | SqlType::Numeric) && physical.leaf_offset < 0 {
                return Err(Error::unsupported(format!(
                    "column {} uses the vardecimal storage format: not supported yet",
                    column.name
                ))
                .in_object(name));
            }
            if physical.type_info.sql_type != column.type_info.sql_type {
                return Err(Error::corrupt(format!(
                    "column {} is declared {} but stored as {}",
                    column.name,
                    column.type_info.sql_type.name(),
                    physical.type_info.sql_type.name()
                ))
                .in_object(name));
            }
            columns.push(ColumnPlan::new(column, physical.clone()));
        }
        if let Some(only) = only {
            for wanted in only {
                if !columns.iter().any(|c| c.column.name.eq_ignore_ascii_case(wanted)) {
                    return Err(Error::not_found(format!("no stored column named {wanted}")).in_object(name));
                }
            }
        }
        let layout_var_columns = layout.columns.iter().filter(|c| c.leaf_offset < 0).count();
        Ok(RowDecoder { table: name, columns, layout_var_columns, reader: db.reader().clone() })
    }

    /// A decoder for records of a table the catalog cannot describe (schema-less recovery): the
    /// columns as declared, in order, for a table created with them and never altered. SQL Server
    /// then stores the fixed-length columns first in declaration order from offset 4 (consecutive
    /// bit columns share a byte), the variable-length ones after them in declaration order, and
    /// gives null bits in declaration order. Text uses code page 1252.
    pub fn from_declaration(reader: PageReader, table: &str, declared: &[(String, TypeInfo)]) -> Result<Self> {
        let mut columns = Vec::new();
        let (mut offset, mut var_index, mut bits_in_byte) = (4usize, 0i16, 8u8);
        for (i, (name, type_info)) in declared.iter().enumerate() {
            let (leaf_offset, bit_position) = match type_info.fixed_length() {
                _ if type_info.sql_type == SqlType::Bit => {
                    if bits_in_byte == 8 {
                        offset += 1;
                        bits_in_byte = 0;
                    }
                    bits_in_byte += 1;
                    ((offset - 1) as i16, i16::from(bits_in_byte - 1))
                }
                Some(len)
                    if !matches!(type_info.sql_type, SqlType::Text | SqlType::NText | SqlType::Image)
                        && type_info.max_length >= 0 =>
                {
                    let at = offset;
                    offset += len;
                    (at as i16, 0)
                }
                _ => {
                    var_index += 1;
                    (-var_index, 0)
                }
            };
            let column_id = i as i32 + 1;
            let mut plan = ColumnPlan::declared(column_id, name, *type_info, leaf_offset, column_id as u16);
            plan.physical.bit_position = bit_position;
            columns.push(plan);
            if offset > 8060 {
                return Err(Error::not_found(format!(
                    "the declared fixed-length columns take {offset} bytes, more than a row holds"
                )));
            }
        }
        let layout_var_columns = var_index as usize;
        Ok(RowDecoder { table: table.to_string(), columns, layout_var_columns, reader })
    }

    pub fn columns(&self) -> &[ColumnPlan] {
        &self.columns
    }

    /// Decodes `record` into `out` (cleared first), one value per planned column.
    pub fn decode(&self, record: &Record, out: &mut Vec<Value>) -> Result<()> {
        out.clear();
        let mut off_row = Vec::new();
        for plan in &self.columns {
            let value = self
                .stored(record, plan, &mut off_row)
                .and_then(|bytes| match bytes {
                    None => Ok(Value::Null),
                    Some(bytes) => {
                        let collation = plan.column.collation_id;
                        decode_column(&plan.column, bytes, plan.bit_position(), &|b| {
                            crate::collation::decode_text(collation, b)
                        })
                    }
                })
                .map_err(|e| self.in_column(e, plan))?;
            out.push(value);
        }
        Ok(())
    }

    /// Names the column in an error about one of its values.
    pub fn in_column(&self, e: Error, plan: &ColumnPlan) -> Error {
        e.in_object(format!("{}.{}", self.table, plan.column.name))
    }

    /// The stored bytes of `plan`'s column in `record`: `None` for NULL (or a column the record
    /// predates), in-row bytes, or an off-row value read into `off_row`.
    pub fn stored<'a>(
        &self,
        record: &Record<'a>,
        plan: &ColumnPlan,
        off_row: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>> {
        let p = &plan.physical;
        if p.is_sparse() {
            // Sparse values live in the sparse vector after the row's variable-length columns. A
            // row without one has every sparse column NULL; reading the vector itself awaits a
            // corpus sample (sharepoint_config's dbo.SiteMap has only NULL sparse values).
            if record.var_column_count() > self.layout_var_columns {
                return Err(Error::unsupported("sparse column values (the row's sparse vector) are not decoded yet"));
            }
            return Ok(None);
        }
        // A column the record predates (added to the table after the row was written) reads as
        // NULL when it may be NULL; a NOT NULL one holds a default this version does not read.
        if p.null_bit as usize > record.column_count() {
            return self.absent(plan);
        }
        if p.null_bit > 0 && record.is_null(p.null_bit as usize) {
            return Ok(None);
        }
        let ty = &plan.column.type_info;
        Ok(Some(match p.location() {
            ColumnLocation::Fixed(offset) => {
                let len = plan.fixed_len.ok_or_else(|| {
                    Error::unsupported(format!("{} stored in the fixed part of the record", ty.spelling()))
                })?;
                match record.fixed(offset, len) {
                    Some(b) => b,
                    None => return self.absent(plan),
                }
            }
            // Trailing variable-length columns without bytes are not stored. The record knows the
            // column (its null bit is within the record's column count) and says it is not NULL:
            // the value is empty (SQL Server's `0x` / `''`; sharepoint_config's
            // dbo.SiteMap.DeleteTransactionId, a NOT NULL varbinary defaulting to 0x).
            ColumnLocation::Variable(index) => match record.var(index)? {
                None if p.null_bit > 0 => &[],
                None => return self.absent(plan),
                // text/ntext/image hold a 16-byte text pointer (flagged complex too), and so do
                // (max) values of tables with "large value types out of row" set; in-row LOB
                // roots and row-overflow pointers are 12 + 12n bytes, never 16.
                Some(v)
                    if matches!(ty.sql_type, SqlType::Text | SqlType::NText | SqlType::Image)
                        || (v.complex && v.bytes.len() == lob::TEXT_POINTER_SIZE) =>
                {
                    off_row.clear();
                    lob::read_text_pointer(&self.reader, v.bytes, off_row)?;
                    off_row
                }
                Some(v) if v.complex => {
                    off_row.clear();
                    lob::read_complex(&self.reader, v.bytes, off_row)?;
                    off_row
                }
                Some(v) => v.bytes,
            },
        }))
    }
}

impl RowDecoder {
    /// The value of a column a record does not store.
    fn absent(&self, plan: &ColumnPlan) -> Result<Option<&'static [u8]>> {
        if plan.column.is_nullable {
            Ok(None)
        } else {
            Err(Error::unsupported(
                "NOT NULL column added after this row was written: its default value is not read yet",
            ))
        }
    }
}

impl ColumnPlan {
    /// A nullable column stored at `leaf_offset` (negative: the n-th variable-length column)
    /// with null bit `null_bit`, as a declared layout (or a test) describes it.
    pub fn declared(column_id: i32, name: &str, type_info: TypeInfo, leaf_offset: i16, null_bit: u16) -> Self {
        ColumnPlan::new(
            ColumnInfo {
                column_id,
                name: name.to_string(),
                type_info,
                type_name: type_info.sql_type.name(),
                user_type_id: i32::from(type_info.sql_type.id()),
                collation_id: DECLARED_COLLATION,
                is_nullable: true,
                identity: None,
                is_rowguidcol: false,
                computed_definition: None,
                is_computed: false,
                is_sparse: false,
                is_column_set: false,
                default_object_id: 0,
            },
            PhysicalColumn {
                rowset_column_id: column_id,
                hb_column_id: column_id,
                type_info,
                collation_id: DECLARED_COLLATION,
                key_ordinal: 0,
                max_inrow_length: type_info.max_length,
                status: 0,
                leaf_offset,
                internal_offset: 0,
                null_bit,
                bit_position: 0,
            },
        )
    }

    pub fn new(column: ColumnInfo, physical: PhysicalColumn) -> Self {
        let fixed_len = match physical.location() {
            ColumnLocation::Fixed(_) => physical.type_info.fixed_length(),
            ColumnLocation::Variable(_) => None,
        };
        ColumnPlan { column, physical, fixed_len }
    }

    /// Bytes the value takes in the fixed part (`None` for a variable-length column).
    pub fn fixed_len(&self) -> Option<usize> {
        self.fixed_len
    }

    /// The bit within its byte, for bit columns.
    pub fn bit_position(&self) -> u8 {
        self.physical.bit_position.clamp(0, 7) as u8
    }
}
