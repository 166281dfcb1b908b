//! Turning a table's records into values: which stored column feeds which declared column.
//!
//! For a heap or clustered index the partition column id in sysrscols equals the column id in
//! syscolpars, so each declared column is found in the partition's physical layout by id (dropped
//! physical columns and the hidden uniquifier are never returned). Its leaf offset says where its
//! bytes are: the physical order, not the declaration order (clustered key columns come first).
//! Computed columns that are not persisted have no stored bytes and are not returned.
//!
//! Sparse columns (sysrscols status 0x100) have no offset or null bit: a row's non-NULL sparse
//! values are kept in its sparse vector, the last variable-length column of the record, flagged
//! complex:
//!
//! ```text
//!  | 05 00 | count (2) | column ids (2 each) | end offsets (2 each) | values |
//! ```
//!
//! The header 5 marks a sparse vector; the column ids are syscolpars column ids; each end offset
//! counts from the start of the vector, the first value starting right after the offsets. Fixed-
//! and variable-length values are stored alike, in their usual storage form (bit as one byte). A
//! row without a vector has every sparse column NULL. A column set (`xml COLUMN_SET FOR
//! ALL_SPARSE_COLUMNS`) is not stored: it is the XML fragment of the row's non-NULL sparse
//! columns, `<Name>value</Name>` in column order, NULL when there is none (`column_set_xml`).
//!
//! A decimal column stored as a variable-length column (sysrscols leaf offset negative) is in the
//! vardecimal storage format ([`crate::compressed::vardecimal`]), expanded to the decimal storage
//! form before it is decoded; such columns always take the row-by-row path.
//!
//! In a ROW or PAGE compressed partition ([`RecordFormat::Cd`]) every column has a negative leaf
//! offset, `-n` for the n-th entry of the CD record's column array (the corpus' PAGE compressed
//! ledger history tables of SQL Server 2025: uniquifier -1, then the key columns, then the rest,
//! leaf null bit = n). Each value is expanded from its compressed storage form to the ordinary one
//! ([`crate::compressed::values`]) and decoded like any other; long values flagged complex are
//! LOB roots and pointers, read by [`crate::lob`] (off-row data is not compressed). Bit columns
//! expand to one byte, so their bit position is 0.
//!
//! A column added after a row was written is absent from it: it reads as the column's stored
//! default when sysseobjvalues has one (`catalog/rowset.rs`), else NULL.
//!
//! Sources: Remus Rusanu, "SQL Server table columns under the hood"; checked on the corpus, where
//! every stored column's sysrscols type equals its syscolpars type and the expected rows of pubs
//! and products are reproduced exactly. Sparse vector: Mark S. Rasmussen, "Sparse Column Storage
//! & the Sparse Vector" (improve.dk, 2011) and Qingsong Yao, "Sparse Column Storage" (MSDN blog,
//! 2008); the corpus has sparse columns (sharepoint_config's dbo.SiteMap) but no non-NULL value.
//! Column sets: Microsoft, "Use column sets" (an untyped XML fragment of the non-NULL sparse
//! columns); values spelled as SQL Server serializes xml (`xmlbin.rs`).

use crate::bytes::read_u16;
use crate::catalog::model::{ColumnInfo, TableInfo};
use crate::catalog::rowset::{stored_default, ColumnLocation, PhysicalColumn};
use crate::catalog::Catalog;
use crate::collation::TextCodec;
use crate::compressed::{values, vardecimal};
use crate::decode::{decode_column, variant_parts};
use crate::error::{Error, Result};
use crate::lob;
use crate::page::compression_info::{CompressionInfo, PageValue};
use crate::record::cd::{CdRecord, CdValue};

thread_local! {
    /// An anchor prefix joined with a value's suffix, before its expansion.
    static JOINED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}
use crate::record::{Record, RecordFormat, RecordType};
use crate::source::PageReader;
use crate::types::{SqlType, TypeInfo};
use crate::value::{guid_text, Value};

/// The collation assumed for text in a declared (schema-less) layout: code page 1252.
const DECLARED_COLLATION: u32 = 0x3400_D008;

/// The value of a uniquifier a record does not store.
const ZERO_UNIQUIFIER: [u8; 4] = [0; 4];

/// The complex-column header of a sparse vector.
const SPARSE_VECTOR_HEADER: u16 = 5;
/// Top bit of a sparse vector's end offset; no sample shows one set (an off-row sparse value?).
const SPARSE_OFFSET_FLAG: u16 = 0x8000;

/// One output column and where its bytes are stored.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// The column as declared (name, type, collation).
    pub column: ColumnInfo,
    /// Where the column is stored in this rowset's records.
    pub physical: PhysicalColumn,
    /// Bytes the value takes in the fixed part, worked out once (`None` for variable-length).
    fixed_len: Option<usize>,
    /// What rows written before the column was added read (its stored default, in the column's
    /// storage form); `None`: NULL, or refused when the column is NOT NULL.
    absent_value: Option<Vec<u8>>,
    /// A column set: its value is composed from these sparse columns, in column order.
    column_set: Option<Vec<ColumnPlan>>,
    /// The code page of the column's char/varchar text, resolved from its collation once.
    text: TextCodec,
}

/// Decodes the records of one partition into rows of values.
#[derive(Clone)]
pub struct RowDecoder {
    table: String,
    columns: Vec<ColumnPlan>,
    /// Whether the layout has sparse columns: a record's last complex variable-length column may
    /// then be its sparse vector.
    has_sparse: bool,
    /// The partition's record format: CD for ROW and PAGE compressed rows.
    format: RecordFormat,
    /// Reads off-row (LOB and row-overflow) values.
    reader: PageReader,
}

impl RowDecoder {
    /// The decoder for partition `partition_id` of `table` as `catalog` describes it, returning the
    /// columns named in `only` (all stored columns when `None`) in declaration order and reading
    /// off-row values through `reader`. `Database::row_decoder` is the usual way in.
    pub fn new(
        catalog: &Catalog,
        reader: &PageReader,
        table: &TableInfo,
        partition_id: i64,
        only: Option<&[String]>,
    ) -> Result<Self> {
        let name = table.qualified_name();
        let layout = catalog.base().layouts.get(&partition_id).ok_or_else(|| {
            Error::corrupt(format!("sys.sysrscols has no layout for partition {partition_id}")).in_object(name.clone())
        })?;
        let declared = catalog.columns(table.object_id);
        let partition = table.partitions.iter().find(|p| p.partition_id == partition_id);
        let format = match partition {
            Some(p) => RecordFormat::of_compression(p.data_compression).ok_or_else(|| {
                Error::unsupported(format!(
                    "partition {partition_id} is a columnstore ({}): not supported",
                    crate::catalog::model::compression_name(p.data_compression)
                ))
                .in_object(name.clone())
            })?,
            None => RecordFormat::FixedVar,
        };
        let stored_in = |column: &ColumnInfo| {
            layout.columns.iter().find(|p| p.rowset_column_id == column.column_id && !p.is_dropped())
        };
        let sparse: Vec<ColumnPlan> = declared
            .iter()
            .filter_map(|c| stored_in(c).filter(|p| p.is_sparse()).map(|p| ColumnPlan::new(c.clone(), p.clone())))
            .collect();
        let mut columns = Vec::new();
        for column in declared {
            if let Some(only) = only {
                if !only.iter().any(|o| o.eq_ignore_ascii_case(&column.name)) {
                    continue;
                }
            }
            if column.is_column_set {
                columns.push(ColumnPlan::column_set(column, sparse.clone()));
                continue;
            }
            let Some(physical) = stored_in(&column) else {
                if column.is_computed {
                    continue;
                }
                return Err(Error::corrupt(format!(
                    "column {} has no stored column in partition {partition_id}",
                    column.name
                ))
                .in_object(name));
            };
            if physical.type_info.sql_type != column.type_info.sql_type {
                return Err(Error::corrupt(format!(
                    "column {} is declared {} but stored as {}",
                    column.name,
                    column.type_info.sql_type.name(),
                    physical.type_info.sql_type.name()
                ))
                .in_object(name));
            }
            let mut physical = physical.clone();
            if format == RecordFormat::Cd {
                // A compressed bit is expanded to a byte of its own.
                physical.bit_position = 0;
            }
            let mut plan = ColumnPlan::new(column, physical);
            plan.absent_value = absent_value(catalog.table("sysseobjvalues"), partition_id, &plan)
                .map_err(|e| e.in_object(format!("{name}.{}", plan.column.name)))?;
            columns.push(plan);
        }
        if let Some(only) = only {
            for wanted in only {
                if !columns.iter().any(|c| c.column.name.eq_ignore_ascii_case(wanted)) {
                    return Err(Error::not_found(format!("no stored column named {wanted}")).in_object(name));
                }
            }
        }
        let has_sparse = layout.columns.iter().any(|c| c.is_sparse() && !c.is_dropped());
        Ok(RowDecoder { table: name, columns, has_sparse, format, reader: reader.clone() })
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
        Ok(RowDecoder { table: table.to_string(), columns, has_sparse: false, format: RecordFormat::FixedVar, reader })
    }

    /// A decoder of the records of an index's rowset (`crate::index_rows`), stored as `columns`
    /// say, in `format`.
    pub(crate) fn from_plans(
        reader: &PageReader,
        table: String,
        columns: Vec<ColumnPlan>,
        format: RecordFormat,
    ) -> Self {
        RowDecoder { table, columns, has_sparse: false, format, reader: reader.clone() }
    }

    /// The planned columns, in output order.
    pub fn columns(&self) -> &[ColumnPlan] {
        &self.columns
    }

    /// The names of the columns it returns, in order.
    pub fn column_names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.column.name.clone()).collect()
    }

    /// Whether the partition's layout has sparse columns (chosen or not): its rows may end with
    /// a sparse vector, even where an older row lacks a variable-length column added later.
    pub fn has_sparse(&self) -> bool {
        self.has_sparse
    }

    /// The record format of the partition's rows.
    pub fn format(&self) -> RecordFormat {
        self.format
    }

    /// Decodes `record` into `out` (cleared first), one value per planned column.
    pub fn decode(&self, record: &Record, out: &mut Vec<Value>) -> Result<()> {
        out.clear();
        let mut off_row = Vec::new();
        for plan in &self.columns {
            out.push(self.decode_one(record, plan, &mut off_row)?);
        }
        Ok(())
    }

    /// The value of `plan`'s column in `record` (`off_row` is scratch for off-row values).
    pub fn decode_one(&self, record: &Record, plan: &ColumnPlan, off_row: &mut Vec<u8>) -> Result<Value> {
        self.column_value(record, plan, off_row).map_err(|e| self.in_column(e, plan))
    }

    /// [`Self::decode_one`] with an error that does not name the column: for a caller that shows
    /// it beside its column (a page's anatomy), and so spends no text on naming it.
    pub fn column_value(&self, record: &Record, plan: &ColumnPlan, off_row: &mut Vec<u8>) -> Result<Value> {
        match self.stored(record, plan, off_row)? {
            None => Ok(Value::Null),
            Some(bytes) => decode_column(&plan.column, bytes, plan.bit_position(), &|b| plan.text.decode(b)),
        }
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
        plan: &'a ColumnPlan,
        off_row: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>> {
        match (record.cd(), self.format) {
            (Some(cd), RecordFormat::Cd) => return self.compressed_value(cd, record.compression_info(), plan, off_row),
            (None, RecordFormat::FixedVar) => {}
            (Some(_), RecordFormat::FixedVar) => {
                return Err(Error::corrupt("a compressed (CD format) record in an uncompressed partition"))
            }
            (None, RecordFormat::Cd) => return Err(Error::corrupt("an uncompressed record in a compressed partition")),
        }
        let p = &plan.physical;
        if p.is_sparse() {
            return self.sparse_value(record, plan);
        }
        if let Some(sparse) = &plan.column_set {
            let any = self.column_set_xml(record, sparse, off_row)?;
            let xml: &'a Vec<u8> = off_row;
            return Ok(any.then_some(xml.as_slice()));
        }
        // An index record without a null bitmap holds no NULL (sharepoint_config's PK_Classes:
        // non-leaf records of a NOT NULL uniqueidentifier key with interior null bit 1, status 0x06).
        let index_record = matches!(record.record_type(), RecordType::Index | RecordType::GhostIndex);
        let null_bit = if index_record && record.column_count() == 0 { 0 } else { usize::from(p.null_bit) };
        // A column the record predates (added to the table after the row was written).
        if null_bit > record.column_count() {
            return self.absent(plan);
        }
        if null_bit > 0 && record.is_null(null_bit) {
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
            // Decimals are fixed-length; stored as a variable-length column they are in the
            // vardecimal storage format (SQL Server 2005 SP2's sp_tableoption 'vardecimal storage
            // format'), expanded here to the decimal storage form. Zero is stored empty.
            ColumnLocation::Variable(index) if plan.is_vardecimal() => {
                let stored = match record.var(index)? {
                    Some(v) if self.has_sparse && index + 1 == record.var_column_count() && is_sparse_vector(v) => {
                        return self.absent(plan)
                    }
                    Some(v) if !v.complex => v.bytes,
                    Some(_) => return Err(Error::corrupt("a vardecimal value flagged as an off-row pointer")),
                    None if p.null_bit > 0 => &[],
                    None => return self.absent(plan),
                };
                let storage_len = ty.fixed_length().unwrap_or(0);
                off_row.clear();
                vardecimal::to_decimal_storage(stored, ty.precision, ty.scale, storage_len, off_row)?;
                off_row
            }
            // A uniquifier not stored, or stored empty, is 0: the first row of its key (Mark S.
            // Rasmussen, "Determining the Uniquifier Column Ordinal": DBCC PAGE prints 0).
            ColumnLocation::Variable(index) if p.is_uniquifier() => match record.var(index)? {
                Some(v) if !v.bytes.is_empty() => v.bytes,
                _ => &ZERO_UNIQUIFIER,
            },
            ColumnLocation::Variable(index) => match record.var(index)? {
                // A row written before this column was added can have its sparse vector here.
                Some(v) if self.has_sparse && index + 1 == record.var_column_count() && is_sparse_vector(v) => {
                    return self.absent(plan)
                }
                None if p.null_bit > 0 => &[],
                None => return self.absent(plan),
                Some(v) if lob::is_text_pointer(ty.sql_type, v.complex, v.bytes.len()) => {
                    off_row.clear();
                    if !lob::read_text_pointer(&self.reader, v.bytes, off_row)? {
                        return Ok(None);
                    }
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
    /// The stored bytes of `plan`'s column in a CD record (on a page with CI structure `ci`: its
    /// anchor prefix and dictionary symbol resolved), in the type's ordinary storage form
    /// (expanded into `off_row`), `None` for NULL.
    fn compressed_value<'a>(
        &self,
        cd: &CdRecord<'a>,
        ci: Option<&CompressionInfo<'a>>,
        plan: &'a ColumnPlan,
        off_row: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>> {
        if plan.column_set.is_some() || plan.physical.is_sparse() {
            return Err(Error::unsupported("sparse columns and column sets in a compressed partition"));
        }
        let index = match plan.physical.location() {
            ColumnLocation::Variable(index) => index,
            ColumnLocation::Fixed(offset) => {
                return Err(Error::corrupt(format!(
                    "a column at leaf offset {offset} in a compressed partition, whose columns are numbered by negative offsets"
                )))
            }
        };
        // A column added after the row was written.
        let Some(value) = cd.value(index) else { return self.absent(plan) };
        off_row.clear();
        let value = match ci.map(|ci| ci.resolve(index, value)).transpose()? {
            None => value,
            Some(PageValue::Stored(value)) => value,
            Some(PageValue::Prefixed { prefix, suffix }) => {
                // Joined in a reused buffer: no allocation per value.
                JOINED.with_borrow_mut(|joined| {
                    joined.clear();
                    joined.extend_from_slice(prefix);
                    joined.extend_from_slice(suffix);
                    values::expand(&plan.column.type_info, CdValue::Bytes(joined), off_row)
                })?;
                return Ok(Some(off_row));
            }
        };
        match value {
            CdValue::Null => return Ok(None),
            // Text pointers (text, ntext, image; large value types out of row) are 16 bytes;
            // in-row LOB roots and row-overflow pointers 12 + 12n.
            CdValue::Complex(bytes)
                if matches!(plan.column.type_info.sql_type, SqlType::Text | SqlType::NText | SqlType::Image)
                    || (plan.column.type_info.max_length < 0 && bytes.len() == lob::TEXT_POINTER_SIZE) =>
            {
                if !lob::read_text_pointer(&self.reader, bytes, off_row)? {
                    return Ok(None);
                }
            }
            CdValue::Complex(bytes) => lob::read_complex(&self.reader, bytes, off_row)?,
            value => values::expand(&plan.column.type_info, value, off_row)?,
        }
        Ok(Some(off_row))
    }

    /// The value of a column a record does not store: its stored default, else NULL.
    fn absent<'a>(&self, plan: &'a ColumnPlan) -> Result<Option<&'a [u8]>> {
        match &plan.absent_value {
            Some(value) => Ok(Some(value)),
            None if plan.column.is_nullable => Ok(None),
            None => Err(Error::unsupported(
                "NOT NULL column added after this row was written, and sys.sysseobjvalues holds no default \
                 for it (SQL Server 2008 files keep none): the value of this row is unknown",
            )),
        }
    }

    /// The stored bytes of sparse column `plan` in `record`: `None` when the row's sparse vector
    /// (or the row) has no value for it.
    fn sparse_value<'a>(&self, record: &Record<'a>, plan: &ColumnPlan) -> Result<Option<&'a [u8]>> {
        let Some(vector) = sparse_vector(record)? else { return Ok(None) };
        let id = u16::try_from(plan.column.column_id)
            .map_err(|_| Error::corrupt(format!("sparse column id {} out of range", plan.column.column_id)))?;
        sparse_vector_value(vector, id)
    }

    /// Writes the column set of `record` (the non-NULL `sparse` columns as XML) into `out` as
    /// UTF-16LE; `false` when every sparse column is NULL (the column set is then NULL).
    fn column_set_xml(&self, record: &Record, sparse: &[ColumnPlan], out: &mut Vec<u8>) -> Result<bool> {
        let mut xml = String::new();
        for plan in sparse {
            let Some(bytes) = self.sparse_value(record, plan).map_err(|e| self.in_column(e, plan))? else { continue };
            let value =
                decode_column(&plan.column, bytes, 0, &|b| plan.text.decode(b)).map_err(|e| self.in_column(e, plan))?;
            let name = &plan.column.name;
            xml.push('<');
            xml.push_str(name);
            xml.push('>');
            xml.push_str(&column_set_text(&plan.column, bytes, &value).map_err(|e| self.in_column(e, plan))?);
            xml.push_str("</");
            xml.push_str(name);
            xml.push('>');
        }
        out.clear();
        out.extend(xml.encode_utf16().flat_map(u16::to_le_bytes));
        Ok(!xml.is_empty())
    }
}

/// Whether a variable-length column is a sparse vector: complex, with header 5.
fn is_sparse_vector(v: crate::record::VarField) -> bool {
    v.complex && read_u16(v.bytes, 0) == Some(SPARSE_VECTOR_HEADER)
}

/// The record's sparse vector: its last variable-length column, when that is one.
fn sparse_vector<'a>(record: &Record<'a>) -> Result<Option<&'a [u8]>> {
    let Some(last) = record.var_column_count().checked_sub(1) else { return Ok(None) };
    Ok(record.var(last)?.filter(|v| is_sparse_vector(*v)).map(|v| v.bytes))
}

/// The value of column `column_id` in a sparse vector, every offset checked.
fn sparse_vector_value(vector: &[u8], column_id: u16) -> Result<Option<&[u8]>> {
    let bad = |what: String| Error::corrupt(format!("sparse vector of {} bytes: {what}", vector.len()));
    if read_u16(vector, 0) != Some(SPARSE_VECTOR_HEADER) {
        return Err(bad("no sparse vector header (5)".into()));
    }
    let count = usize::from(read_u16(vector, 2).ok_or_else(|| bad("no column count".into()))?);
    let ids_at = 4;
    let ends_at = ids_at + 2 * count;
    let mut start = ends_at + 2 * count;
    if start > vector.len() {
        return Err(bad(format!("{count} columns' ids and offsets run past its end")));
    }
    for i in 0..count {
        let id = read_u16(vector, ids_at + 2 * i).unwrap_or(0);
        let end = read_u16(vector, ends_at + 2 * i).unwrap_or(0);
        if end & SPARSE_OFFSET_FLAG != 0 {
            return Err(Error::unsupported(format!(
                "sparse column {id}'s offset has its top bit set (a value stored off-row?): not supported"
            )));
        }
        let end = usize::from(end);
        if end < start || end > vector.len() {
            return Err(bad(format!("column {id}'s value ends at {end}, outside {start}..={}", vector.len())));
        }
        if id == column_id {
            return Ok(Some(&vector[start..end]));
        }
        start = end;
    }
    Ok(None)
}

/// A sparse column's value as a column set spells it: as SQL Server serializes xml (integers,
/// decimals, bit `0`/`1`, date `YYYY-MM-DD`, upper-case GUIDs, escaped text, binary as base64).
/// Types whose spelling there is not known (floats, money, times, sql_variant, xml, CLR) are
/// refused rather than guessed.
fn column_set_text(column: &ColumnInfo, bytes: &[u8], value: &Value) -> Result<String> {
    Ok(match (column.type_info.sql_type, value) {
        (SqlType::Binary | SqlType::VarBinary, _) => crate::xmlbin::base64(bytes),
        (SqlType::UniqueIdentifier, _) => guid_text(bytes),
        (
            SqlType::TinyInt
            | SqlType::SmallInt
            | SqlType::Int
            | SqlType::BigInt
            | SqlType::Bit
            | SqlType::Decimal
            | SqlType::Numeric
            | SqlType::Date
            | SqlType::Char
            | SqlType::VarChar
            | SqlType::NChar
            | SqlType::NVarChar,
            value,
        ) => crate::xmlbin::escape_text(&value.to_string()),
        (other, _) => {
            return Err(Error::unsupported(format!(
                "a column set over a {} sparse column: how SQL Server spells it in the XML is not known here",
                other.name()
            )))
        }
    })
}

/// The value rows written before `plan`'s column was added read: its stored default in the
/// column's storage form (bit columns: the bit at the column's position).
fn absent_value(
    seobjvalues: &crate::catalog::base::TableRows,
    rowset: i64,
    plan: &ColumnPlan,
) -> Result<Option<Vec<u8>>> {
    let Some(variant) = stored_default(seobjvalues, rowset, plan.physical.hb_column_id) else { return Ok(None) };
    let (ty, _, value) = variant_parts(variant?)?;
    let declared = &plan.column.type_info;
    // Decimals carry precision and scale, the time types their scale: both must match.
    let facets_differ = match ty.sql_type {
        SqlType::Decimal | SqlType::Numeric => (ty.precision, ty.scale) != (declared.precision, declared.scale),
        SqlType::Time | SqlType::DateTime2 | SqlType::DateTimeOffset => ty.scale != declared.scale,
        _ => false,
    };
    if ty.sql_type != declared.sql_type || facets_differ {
        return Err(Error::unsupported(format!(
            "the stored default for rows older than the column is a {} value, the column is {}: not converted",
            ty.spelling(),
            declared.spelling()
        )));
    }
    Ok(Some(match ty.sql_type {
        SqlType::Bit => vec![(value.first().copied().unwrap_or(0) & 1) << plan.bit_position()],
        _ => value.to_vec(),
    }))
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
                internal_null_bit: 0,
                bit_position: 0,
            },
        )
    }

    /// A plan for `column`, stored where `physical` says.
    pub fn new(column: ColumnInfo, physical: PhysicalColumn) -> Self {
        let fixed_len = match physical.location() {
            ColumnLocation::Fixed(_) => physical.type_info.fixed_length(),
            ColumnLocation::Variable(_) => None,
        };
        let text = TextCodec::new(column.collation_id);
        ColumnPlan { column, physical, fixed_len, absent_value: None, column_set: None, text }
    }

    /// A column set over the `sparse` columns: no stored bytes of its own; its XML is returned as
    /// nvarchar(max) text.
    fn column_set(mut column: ColumnInfo, sparse: Vec<ColumnPlan>) -> Self {
        column.type_info = TypeInfo { sql_type: SqlType::NVarChar, max_length: -1, precision: 0, scale: 0 };
        let physical = PhysicalColumn {
            rowset_column_id: column.column_id,
            hb_column_id: column.column_id,
            type_info: column.type_info,
            collation_id: column.collation_id,
            key_ordinal: 0,
            max_inrow_length: -1,
            status: 0,
            leaf_offset: 0,
            internal_offset: 0,
            null_bit: 0,
            internal_null_bit: 0,
            bit_position: 0,
        };
        let mut plan = ColumnPlan::new(column, physical);
        plan.column_set = Some(sparse);
        plan
    }

    /// Bytes the value takes in the fixed part (`None` for a variable-length column).
    pub fn fixed_len(&self) -> Option<usize> {
        self.fixed_len
    }

    /// How the column's char/varchar text is decoded.
    pub fn text_codec(&self) -> &TextCodec {
        &self.text
    }

    /// A decimal stored as a variable-length column: the vardecimal storage format.
    pub fn is_vardecimal(&self) -> bool {
        matches!(self.column.type_info.sql_type, SqlType::Decimal | SqlType::Numeric)
            && matches!(self.physical.location(), ColumnLocation::Variable(_))
    }

    /// The bit within its byte, for bit columns.
    pub fn bit_position(&self) -> u8 {
        self.physical.bit_position.clamp(0, 7) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// The vector of improve.dk's "Sparse Column Storage & the Sparse Vector": columns 3 and 6
    /// (int) hold 3 and 1234.
    const BLOG_VECTOR: [u8; 20] = [5, 0, 2, 0, 3, 0, 6, 0, 0x10, 0, 0x14, 0, 3, 0, 0, 0, 0xd2, 4, 0, 0];

    #[test]
    fn reads_values_of_a_sparse_vector() {
        assert_eq!(sparse_vector_value(&BLOG_VECTOR, 3).unwrap(), Some(&[3, 0, 0, 0][..]));
        assert_eq!(sparse_vector_value(&BLOG_VECTOR, 6).unwrap(), Some(&[0xd2, 4, 0, 0][..]));
        assert_eq!(sparse_vector_value(&BLOG_VECTOR, 4).unwrap(), None, "column 4 is NULL in that row");
        assert_eq!(sparse_vector_value(&[5, 0, 0, 0], 1).unwrap(), None, "an empty vector");
    }

    #[test]
    fn malformed_sparse_vectors_are_corrupt_records() {
        let corrupt = |v: &[u8]| sparse_vector_value(v, 6).unwrap_err().kind() == ErrorKind::Corrupt;
        assert!(corrupt(&BLOG_VECTOR[..15]), "cut inside the last value");
        assert!(corrupt(&BLOG_VECTOR[..10]), "cut inside the offsets");
        assert!(corrupt(&[5]), "cut inside the header");
        assert!(corrupt(&[4, 0, 0, 0]), "not a sparse vector header");
        let mut backwards = BLOG_VECTOR;
        backwards[8] = 0x15; // the first value would end after the second
        assert!(corrupt(&backwards));
        let mut early = BLOG_VECTOR;
        early[8] = 0x0b; // the first value would end inside the offsets
        assert!(corrupt(&early));
        let mut flagged = BLOG_VECTOR;
        flagged[9] = 0x80;
        assert_eq!(sparse_vector_value(&flagged, 6).unwrap_err().kind(), ErrorKind::Unsupported);
    }

    #[test]
    fn reads_vardecimal_columns() {
        // Sunil Agarwal, "Data row before and after vardecimal storage format" (SQL Server Storage
        // Engine blog, 2007): t_simple (c1 char(5), c2 decimal(38,2)) after sp_tableoption
        // 'vardecimal storage format'; DBCC PAGE prints c1 = aaaaa, c2 = 1.00.
        let record = crate::record::cd::tests::hex("30000900 61616161 610200fc 01001200 c019");
        let char5 = TypeInfo::parse("char(5)").unwrap();
        let dec = TypeInfo::parse("decimal(38,2)").unwrap();
        let decoder = RowDecoder {
            table: "dbo.t_simple".into(),
            columns: vec![ColumnPlan::declared(1, "c1", char5, 4, 1), ColumnPlan::declared(2, "c2", dec, -1, 2)],
            has_sparse: false,
            format: RecordFormat::FixedVar,
            reader: crate::source::tests::reader(Vec::new()),
        };
        assert!(decoder.columns()[1].is_vardecimal());
        let mut row = Vec::new();
        decoder.decode(&Record::parse(&record).unwrap(), &mut row).unwrap();
        assert_eq!(row, [Value::text("aaaaa"), Value::text("1.00")]);
        // Zero is stored as an empty value; with no variable-length column stored at all it is
        // still known, not NULL: the null bitmap says so.
        let zero = crate::record::cd::tests::hex("10000900 61616161 610200fc");
        decoder.decode(&Record::parse(&zero).unwrap(), &mut row).unwrap();
        assert_eq!(row[1], Value::text("0.00"));
    }

    #[test]
    fn spells_column_set_values_as_xml_serializes_them() {
        let plan = |t: SqlType, len: i16| {
            let ty = TypeInfo { sql_type: t, max_length: len, precision: 0, scale: 0 };
            ColumnPlan::declared(1, "c", ty, -1, 1).column
        };
        let text = |t: SqlType, len: i16, bytes: &[u8]| {
            let column = plan(t, len);
            let value = decode_column(&column, bytes, 0, &|b| Ok(crate::collation::decode_cp1252(b))).unwrap();
            column_set_text(&column, bytes, &value)
        };
        assert_eq!(text(SqlType::Int, 4, &1234i32.to_le_bytes()).unwrap(), "1234");
        assert_eq!(text(SqlType::Bit, 1, &[1]).unwrap(), "1");
        assert_eq!(text(SqlType::VarChar, 20, b"a<b & c>").unwrap(), "a&lt;b &amp; c&gt;");
        assert_eq!(text(SqlType::VarBinary, 20, b"Man").unwrap(), "TWFu", "base64");
        // xs:date, as the column sets of "Column Set – Basic Examples" (sqlrambling.net) hold dates.
        assert_eq!(text(SqlType::Date, 3, &[0xed, 0x3d, 0xb]).unwrap(), "2018-02-25");
        let refused = text(SqlType::Float, 8, &1.5f64.to_le_bytes()).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Unsupported);
        assert!(refused.message().contains("float"), "{refused}");
    }
}
