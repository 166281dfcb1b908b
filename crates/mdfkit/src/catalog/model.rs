//! The user-facing model of tables, columns and indexes, built from the base tables the way the
//! `sys.*` views define them.
//!
//! Bit meanings (from SQL Server's own view definitions as reproduced by OrcaMDF's DMVs, and
//! checked against the corpus schemas):
//! - sysschobjs.status: 0x1 is_ms_shipped, 0x4 is_system_named.
//! - syscolpars.status: 0x1 NOT NULL, 0x4 identity, 0x8 rowguidcol, 0x10 computed,
//!   0x1000000 sparse, 0x2000000 column set. Columns of tables have `number = 0`.
//! - sysidxstats.status: 0x1 an index (not a statistic), 0x8 unique, 0x20 primary key,
//!   0x40 unique constraint, 0x80 disabled. `type`: 0 heap, 1 clustered, 2 nonclustered, ...
//! - sysiscols.status: 0x2 an index column (not a statistic's), 0x4 descending, 0x10 included;
//!   `intprop` is the column id, `tinyprop1` the key ordinal.
//! - sysrowsets.cmprlevel: 0 NONE, 1 ROW, 2 PAGE, 3 COLUMNSTORE, 4 COLUMNSTORE_ARCHIVE.

use std::collections::HashMap;

use super::base::{NamedColumn, RowRef};
use super::rowset::ColumnLocation;
use super::Catalog;
use crate::types::{SqlType, TypeInfo};
use crate::value::Value;

/// A user table as `mdfkit tables` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// `sys.objects.object_id` (sysschobjs.id).
    pub object_id: i32,
    /// The schema's name (sysclsobjs class 50, by sysschobjs.nsid).
    pub schema: String,
    /// The table's name (sysschobjs.name).
    pub name: String,
    /// `U` user table, `S` system base table, `IT` internal table.
    pub object_type: String,
    /// Created by SQL Server itself (sysschobjs.status bit 0x1: `sys.objects.is_ms_shipped`).
    pub is_ms_shipped: bool,
    /// Clustered (index 1) or heap (index 0).
    pub is_heap: bool,
    /// The partitions of the heap or clustered index (sysrowsets with index id 0 or 1), by
    /// partition number.
    pub partitions: Vec<PartitionInfo>,
    /// Holds LOB data: an allocation unit of type 2 (LOB_DATA) with pages.
    pub has_lob: bool,
    /// Holds row-overflow data: an allocation unit of type 3 (ROW_OVERFLOW_DATA) with pages.
    pub has_row_overflow: bool,
    /// In the vardecimal storage format (OBJECTPROPERTY's `TableHasVarDecimalStorageFormat`),
    /// found as a DBA would: an uncompressed partition stores a decimal or numeric column as a
    /// variable-length column (negative leaf offset in
    /// `sys.system_internals_partition_columns`; `rows.rs` reads such values). In ROW and PAGE
    /// compressed partitions every column has a negative offset and decimals are always
    /// vardecimal: they do not count.
    pub has_vardecimal: bool,
}

/// One partition of a table's heap or clustered index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// `sys.partitions.partition_id` (sysrowsets.rowsetid), the owner id of its allocation units.
    pub partition_id: i64,
    /// 1-based position in the partition scheme; 1 for a table that is not partitioned.
    pub partition_number: i32,
    /// Row count as recorded in the catalog (`sys.partitions.rows`).
    pub rows: i64,
    /// sysrowsets.cmprlevel: 0 NONE, 1 ROW, 2 PAGE, 3 COLUMNSTORE, 4 COLUMNSTORE_ARCHIVE
    /// ([`compression_name`]).
    pub data_compression: u8,
    /// Pages in use across its allocation units (sysallocunits.pcused).
    pub used_pages: i64,
    /// Pages reserved across its allocation units (sysallocunits.pcreserved).
    pub total_pages: i64,
}

impl TableInfo {
    /// The columns of a table list (`mdfkit tables`, the studio's tables view).
    pub const LISTING_COLUMNS: [&'static str; 11] = [
        "table",
        "object_id",
        "type",
        "layout",
        "partitions",
        "rows",
        "used_pages",
        "compression",
        "lob",
        "row_overflow",
        "vardecimal",
    ];

    /// The table's row in a table list, one value per [`Self::LISTING_COLUMNS`].
    pub fn listing_row(&self) -> Vec<Value> {
        vec![
            Value::text(self.qualified_name()),
            Value::Int(self.object_id.into()),
            Value::text(&self.object_type),
            Value::text(if self.is_heap { "heap" } else { "clustered" }),
            Value::Int(self.partitions.len() as i64),
            Value::Int(self.rows()),
            Value::Int(self.used_pages()),
            Value::text(self.compression_names().join(",")),
            Value::bit(self.has_lob),
            Value::bit(self.has_row_overflow),
            Value::bit(self.has_vardecimal),
        ]
    }

    /// `schema.name`, unquoted.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }

    /// Rows of all partitions, as the catalog counts them.
    pub fn rows(&self) -> i64 {
        self.partitions.iter().map(|p| p.rows).sum()
    }

    /// Pages in use by all partitions.
    pub fn used_pages(&self) -> i64 {
        self.partitions.iter().map(|p| p.used_pages).sum()
    }

    /// Compression of each partition, deduplicated: `NONE`, `ROW`, `PAGE`, ...
    pub fn compression_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> =
            self.partitions.iter().map(|p| compression_name(p.data_compression)).collect();
        names.dedup();
        names
    }
}

/// `sys.partitions.data_compression_desc`.
pub fn compression_name(level: u8) -> &'static str {
    match level {
        0 => "NONE",
        1 => "ROW",
        2 => "PAGE",
        3 => "COLUMNSTORE",
        4 => "COLUMNSTORE_ARCHIVE",
        _ => "UNKNOWN",
    }
}

/// A column as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// `sys.columns.column_id` (syscolpars.colid).
    pub column_id: i32,
    /// The column's name.
    pub name: String,
    /// The system type the values are stored as, with length, precision, scale.
    pub type_info: TypeInfo,
    /// The declared type's name: the alias type's name for user-defined types.
    pub type_name: String,
    /// syscolpars.utype: the system type id, or the alias or CLR type's id (above 256).
    pub user_type_id: i32,
    /// syscolpars.collationid: the collation of char/varchar/text values (see
    /// [`crate::collation`]); 0 for other types.
    pub collation_id: u32,
    /// syscolpars.status bit 0x1 clear: NULL allowed.
    pub is_nullable: bool,
    /// Seed and increment of an identity column (status bit 0x4).
    pub identity: Option<Identity>,
    /// `ROWGUIDCOL` (status bit 0x8).
    pub is_rowguidcol: bool,
    /// The T-SQL of a computed column (sysobjvalues valclass 2).
    pub computed_definition: Option<String>,
    /// A computed column (status bit 0x10); persisted or not, only persisted ones are stored.
    pub is_computed: bool,
    /// `SPARSE` (status bit 0x1000000): stored in the record's sparse vector, not in its fixed or
    /// variable part.
    pub is_sparse: bool,
    /// The `COLUMN_SET FOR ALL_SPARSE_COLUMNS` column (status bit 0x2000000): computed from the
    /// sparse columns, not stored.
    pub is_column_set: bool,
    /// syscolpars.dflt: the object id of the column's default constraint, 0 for none.
    pub default_object_id: i32,
}

impl ColumnInfo {
    /// For a CLR column (system type 240), which CLR type it holds; `None` for other columns.
    pub fn clr_kind(&self) -> Option<crate::clrtypes::ClrKind> {
        (self.type_info.sql_type == SqlType::Clr)
            .then(|| crate::clrtypes::ClrKind::from_user_type_id(self.user_type_id))
    }
}

/// Identity seed and increment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The seed, as SQL Server prints it (`sys.identity_columns.seed_value`).
    pub seed: String,
    /// The increment, as SQL Server prints it (`sys.identity_columns.increment_value`).
    pub increment: String,
}

/// An index of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    /// `sys.indexes.index_id` (sysidxstats.indid): 1 clustered, above 1 nonclustered.
    pub index_id: i32,
    /// The index's name.
    pub name: String,
    /// sysidxstats.type: `sys.indexes.type` ([`index_type_name`]).
    pub index_type: u8,
    /// `UNIQUE` (sysidxstats.status bit 0x8).
    pub is_unique: bool,
    /// Backs a `PRIMARY KEY` constraint (status bit 0x20).
    pub is_primary_key: bool,
    /// Backs a `UNIQUE` constraint (status bit 0x40).
    pub is_unique_constraint: bool,
    /// `ALTER INDEX ... DISABLE`d (status bit 0x80).
    pub is_disabled: bool,
    /// (column name, descending) in key order.
    pub key_columns: Vec<(String, bool)>,
    /// `INCLUDE` columns of a nonclustered index (sysiscols status bit 0x10).
    pub included_columns: Vec<String>,
}

impl IndexInfo {
    /// `sys.indexes.type_desc`: `CLUSTERED`, `NONCLUSTERED`, ...
    pub fn type_desc(&self) -> &'static str {
        index_type_name(self.index_type)
    }
}

/// `sys.indexes.type_desc`.
pub fn index_type_name(t: u8) -> &'static str {
    match t {
        0 => "HEAP",
        1 => "CLUSTERED",
        2 => "NONCLUSTERED",
        3 => "XML",
        4 => "SPATIAL",
        5 => "CLUSTERED COLUMNSTORE",
        6 => "NONCLUSTERED COLUMNSTORE",
        7 => "NONCLUSTERED HASH",
        _ => "UNKNOWN",
    }
}

const COLUMN_NOT_NULL: i64 = 0x1;
const COLUMN_IDENTITY: i64 = 0x4;
const COLUMN_ROWGUIDCOL: i64 = 0x8;
const COLUMN_COMPUTED: i64 = 0x10;
const COLUMN_SPARSE: i64 = 0x1000000;
const COLUMN_SET: i64 = 0x2000000;
const INDEX_IS_INDEX: i64 = 0x1;
const INDEX_UNIQUE: i64 = 0x8;
const INDEX_PRIMARY_KEY: i64 = 0x20;
const INDEX_UNIQUE_CONSTRAINT: i64 = 0x40;
const INDEX_DISABLED: i64 = 0x80;
const ISCOL_INDEX: i64 = 0x2;
const ISCOL_DESCENDING: i64 = 0x4;
const ISCOL_INCLUDED: i64 = 0x10;
const OBJECT_MS_SHIPPED: i64 = 0x1;
/// sysallocunits.type values.
const LOB_DATA: i64 = 2;
const ROW_OVERFLOW_DATA: i64 = 3;

impl Catalog {
    /// Schema id → name (`sys.schemas`: sysclsobjs rows of class 50).
    pub fn schema_names(&self) -> HashMap<i64, String> {
        let [class, id, name] = ["class", "id", "name"].map(NamedColumn::new);
        self.table("sysclsobjs")
            .iter()
            .filter(|&r| class.int(r) == 50)
            .map(|r| (id.int(r), name.text(r).to_string()))
            .collect()
    }

    /// Tables of the database: user tables, and with `include_system` also the system base
    /// tables and internal tables. Microsoft-shipped tables in the `sys` schema (such as
    /// `sys.trace_xe_action_map`) count as system tables.
    pub fn tables(&self, include_system: bool) -> Vec<TableInfo> {
        self.all_tables()
            .iter()
            .filter(|t| include_system || (t.object_type == "U" && !(t.is_ms_shipped && t.schema == "sys")))
            .cloned()
            .collect()
    }

    /// Every table (user, system base and internal), built once from the base tables.
    fn all_tables(&self) -> &[TableInfo] {
        self.table_cache.get_or_init(|| self.build_tables())
    }

    fn build_tables(&self) -> Vec<TableInfo> {
        let schemas = self.schema_names();
        let mut partitions: HashMap<i32, Vec<(i32, PartitionInfo)>> = HashMap::new();
        let mut unit_kinds: HashMap<i64, Vec<(i64, i64, i64)>> = HashMap::new();
        let [ownerid, unit_type, pcused, pcreserved, pgfirst] =
            ["ownerid", "type", "pcused", "pcreserved", "pgfirst"].map(NamedColumn::new);
        for unit in self.table("sysallocunits").iter() {
            unit_kinds.entry(ownerid.int(unit)).or_default().push((
                unit_type.int(unit),
                pcused.int(unit),
                pcreserved.int(unit),
            ));
        }
        let [idminor, idmajor, rowsetid, numpart, rcrows, cmprlevel] =
            ["idminor", "idmajor", "rowsetid", "numpart", "rcrows", "cmprlevel"].map(NamedColumn::new);
        for rs in self.table("sysrowsets").iter() {
            let index_id = idminor.int(rs) as i32;
            if index_id > 1 {
                continue;
            }
            let units = unit_kinds.get(&rowsetid.int(rs)).map_or(&[][..], Vec::as_slice);
            partitions.entry(idmajor.int(rs) as i32).or_default().push((
                index_id,
                PartitionInfo {
                    partition_id: rowsetid.int(rs),
                    partition_number: numpart.int(rs) as i32,
                    rows: rcrows.int(rs),
                    data_compression: cmprlevel.int(rs) as u8,
                    used_pages: units.iter().map(|u| u.1).sum(),
                    total_pages: units.iter().map(|u| u.2).sum(),
                },
            ));
        }
        let mut lob_owners = std::collections::HashSet::new();
        let mut overflow_owners = std::collections::HashSet::new();
        for unit in self.table("sysallocunits").iter() {
            let null_first_page = matches!(pgfirst.get(unit), Value::Binary(b) if b.iter().all(|&x| x == 0));
            if pcreserved.int(unit) > 0 || pcused.int(unit) > 0 || !null_first_page {
                match unit_type.int(unit) {
                    LOB_DATA => lob_owners.insert(ownerid.int(unit)),
                    ROW_OVERFLOW_DATA => overflow_owners.insert(ownerid.int(unit)),
                    _ => false,
                };
            }
        }
        let mut out = Vec::new();
        let [type_code, nsid, status, nsclass, id, name] =
            ["type", "nsid", "status", "nsclass", "id", "name"].map(NamedColumn::new);
        for obj in self.objects().iter() {
            let object_type = type_code.text(obj).trim();
            let wanted = matches!(object_type, "U" | "S" | "IT");
            if !wanted || nsclass.int(obj) != 0 {
                continue;
            }
            let object_type = object_type.to_string();
            let schema = schemas.get(&nsid.int(obj)).cloned().unwrap_or_else(|| format!("schema{}", nsid.int(obj)));
            let is_ms_shipped = status.int(obj) & OBJECT_MS_SHIPPED != 0;
            let object_id = id.int(obj) as i32;
            let mut parts = partitions.remove(&object_id).unwrap_or_default();
            let is_heap = parts.iter().all(|(index_id, _)| *index_id == 0);
            parts.sort_by_key(|(_, p)| p.partition_number);
            let has_lob = parts.iter().any(|(_, p)| lob_owners.contains(&p.partition_id));
            let has_row_overflow = parts.iter().any(|(_, p)| overflow_owners.contains(&p.partition_id));
            let has_vardecimal = parts.iter().any(|(_, p)| {
                p.data_compression == 0
                    && self.base().layouts.get(&p.partition_id).is_some_and(|layout| {
                        layout.columns.iter().any(|c| {
                            !c.is_dropped()
                                && matches!(c.type_info.sql_type, SqlType::Decimal | SqlType::Numeric)
                                && matches!(c.location(), ColumnLocation::Variable(_))
                        })
                    })
            });
            out.push(TableInfo {
                object_id,
                schema,
                name: name.text(obj).to_string(),
                object_type,
                is_ms_shipped,
                is_heap,
                partitions: parts.into_iter().map(|(_, p)| p).collect(),
                has_lob,
                has_row_overflow,
                has_vardecimal,
            });
        }
        out.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
        out
    }

    /// Finds a table by `schema.name` or `name` (case-insensitive, brackets allowed).
    pub fn find_table(&self, name: &str) -> Option<TableInfo> {
        let (schema, table) = split_table_name(name);
        let matches = |t: &TableInfo| {
            t.name.eq_ignore_ascii_case(table) && schema.is_none_or(|s| t.schema.eq_ignore_ascii_case(s))
        };
        // Prefer dbo when no schema is given and several schemas have the name.
        let found: Vec<&TableInfo> = self.all_tables().iter().filter(|t| matches(t)).collect();
        found.iter().find(|t| t.schema == "dbo").or(found.first()).map(|t| (*t).clone())
    }

    /// The columns of an object, in column id order: built on the object's first call (a scan,
    /// its decoders and its schema each ask for them).
    pub fn columns(&self, object_id: i32) -> Vec<ColumnInfo> {
        let mut built = self.columns_by_object.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        built.entry(object_id).or_insert_with(|| self.build_columns(object_id)).clone()
    }

    fn build_columns(&self, object_id: i32) -> Vec<ColumnInfo> {
        let type_names = self.type_names.get_or_init(|| {
            let [id, name] = ["id", "name"].map(NamedColumn::new);
            self.table("sysscalartypes").iter().map(|t| (id.int(t), name.text(t).to_string())).collect()
        });
        let [number, status, utype, colid, name, collationid, dflt] =
            ["number", "status", "utype", "colid", "name", "collationid", "dflt"].map(NamedColumn::new);
        let mut out: Vec<ColumnInfo> = self
            .rows_where("syscolpars", "id", i64::from(object_id))
            .into_iter()
            .filter(|&c| number.int(c) == 0)
            .map(|c| {
                let status = status.int(c);
                let type_info = type_info_from_colpars(c);
                let user_type_id = utype.int(c) as i32;
                let type_name =
                    type_names.get(&(user_type_id as i64)).cloned().unwrap_or_else(|| type_info.sql_type.name());
                let column_id = colid.int(c) as i32;
                ColumnInfo {
                    column_id,
                    name: name.text(c).to_string(),
                    type_info,
                    type_name,
                    user_type_id,
                    collation_id: collationid.int(c) as u32,
                    is_nullable: status & COLUMN_NOT_NULL == 0,
                    identity: (status & COLUMN_IDENTITY != 0).then(|| identity_from(c)).flatten(),
                    is_rowguidcol: status & COLUMN_ROWGUIDCOL != 0,
                    computed_definition: (status & COLUMN_COMPUTED != 0)
                        .then(|| self.definition(object_id as i64, Some(column_id as i64)))
                        .flatten(),
                    is_computed: status & COLUMN_COMPUTED != 0,
                    is_sparse: status & COLUMN_SPARSE != 0,
                    is_column_set: status & COLUMN_SET != 0,
                    default_object_id: dflt.int(c) as i32,
                }
            })
            .collect();
        out.sort_by_key(|c| c.column_id);
        out
    }

    /// The indexes of a table (heap entries excluded), in index id order.
    pub fn indexes(&self, object_id: i32) -> Vec<IndexInfo> {
        let columns: HashMap<i64, String> =
            self.columns(object_id).into_iter().map(|c| (c.column_id as i64, c.name)).collect();
        // Each index column as (index id, key order, column id, status).
        let [idminor, tinyprop1, subid, intprop, status] =
            ["idminor", "tinyprop1", "subid", "intprop", "status"].map(NamedColumn::new);
        let index_columns: Vec<(i64, i64, i64, i64)> = self
            .rows_where("sysiscols", "idmajor", i64::from(object_id))
            .into_iter()
            .filter(|&c| status.int(c) & ISCOL_INDEX != 0)
            .map(|c| {
                // Key columns by key ordinal (tinyprop1), which need not be the sub-id order: pubs'
                // employee_ind on (lname, fname, minit) lists them by column id; included ones
                // (key ordinal 0) after them, by sub-id.
                let ordinal = tinyprop1.int(c);
                let order = if ordinal > 0 { ordinal } else { i64::from(u8::MAX) + subid.int(c) };
                (idminor.int(c), order, intprop.int(c), status.int(c))
            })
            .collect();
        let [indid, name, index_type] = ["indid", "name", "type"].map(NamedColumn::new);
        let index_status = NamedColumn::new("status");
        let mut out: Vec<IndexInfo> = self
            .rows_where("sysidxstats", "id", i64::from(object_id))
            .into_iter()
            .filter(|&i| index_status.int(i) & INDEX_IS_INDEX != 0 && indid.int(i) > 0)
            .map(|i| {
                let index_id = indid.int(i);
                let mut cols: Vec<(i64, i64, i64)> = index_columns
                    .iter()
                    .filter(|c| c.0 == index_id)
                    .map(|&(_, order, column_id, status)| (order, column_id, status))
                    .collect();
                cols.sort();
                let name_of = |id: i64| columns.get(&id).cloned().unwrap_or_else(|| format!("column{id}"));
                let status = index_status.int(i);
                IndexInfo {
                    index_id: index_id as i32,
                    name: name.text(i).to_string(),
                    index_type: index_type.int(i) as u8,
                    is_unique: status & INDEX_UNIQUE != 0,
                    is_primary_key: status & INDEX_PRIMARY_KEY != 0,
                    is_unique_constraint: status & INDEX_UNIQUE_CONSTRAINT != 0,
                    is_disabled: status & INDEX_DISABLED != 0,
                    key_columns: cols
                        .iter()
                        .filter(|c| c.2 & ISCOL_INCLUDED == 0)
                        .map(|c| (name_of(c.1), c.2 & ISCOL_DESCENDING != 0))
                        .collect(),
                    included_columns: cols.iter().filter(|c| c.2 & ISCOL_INCLUDED != 0).map(|c| name_of(c.1)).collect(),
                }
            })
            .collect();
        out.sort_by_key(|i| i.index_id);
        out
    }

    /// The stored definition text of a module or constraint (sysobjvalues valclass 1, the
    /// lowest sub-id), or of a computed column (valclass 2, sub-id = column id). The text is
    /// stored single-byte, in the database's code page.
    pub fn definition(&self, object_id: i64, column_id: Option<i64>) -> Option<String> {
        self.rows_where("sysobjvalues", "objid", object_id)
            .into_iter()
            .filter(|v| match column_id {
                Some(c) => v.int("valclass") == 2 && v.int("subobjid") == c,
                None => v.int("valclass") == 1,
            })
            .min_by_key(|v| v.int("subobjid"))
            .and_then(|v| match v.get("imageval") {
                crate::value::Value::Binary(b) => crate::collation::decode_text(self.boot.collation_id, b).ok(),
                _ => None,
            })
    }
}

/// A table name as a user or a URL writes it, `schema.name` or `name`, each part trimmed and
/// out of its brackets: `[dbo].[Orders]` → (`dbo`, `Orders`). The first dot splits (a table
/// name may hold dots, a schema name given with it may not).
pub fn split_table_name(name: &str) -> (Option<&str>, &str) {
    fn clean(s: &str) -> &str {
        s.trim().trim_start_matches('[').trim_end_matches(']')
    }
    match name.split_once('.') {
        Some((schema, table)) => (Some(clean(schema)), clean(table)),
        None => (None, clean(name)),
    }
}

/// A column's type from syscolpars (xtype, length, prec, scale).
fn type_info_from_colpars(c: RowRef) -> TypeInfo {
    TypeInfo {
        sql_type: SqlType::from_id(c.int("xtype") as u8),
        max_length: c.int("length") as i16,
        precision: c.int("prec") as u8,
        scale: c.int("scale") as u8,
    }
}

/// Identity seed and increment from syscolpars.idtval: three values in the column's storage
/// form (last value used, seed, increment) and a flag byte; e.g. `E7030000 01000000 01000000 00`
/// for an int identity(1,1) whose last value is 999 (AdventureWorksLT `SalesLT.Product`).
/// Decoded for the integer types; others show `?`.
fn identity_from(c: RowRef) -> Option<Identity> {
    let crate::value::Value::Binary(b) = c.get("idtval") else {
        return None;
    };
    let width = match SqlType::from_id(c.int("xtype") as u8) {
        SqlType::TinyInt => 1,
        SqlType::SmallInt => 2,
        SqlType::Int => 4,
        SqlType::BigInt => 8,
        _ => 0,
    };
    if width == 0 || b.len() < 3 * width {
        return Some(Identity { seed: "?".into(), increment: "?".into() });
    }
    let read = |at: usize| -> String {
        let mut v = [0u8; 8];
        v[..width].copy_from_slice(&b[at..at + width]);
        let raw = i64::from_le_bytes(v);
        let shift = 64 - 8 * width as u32;
        if width == 1 {
            raw.to_string()
        } else {
            ((raw << shift) >> shift).to_string()
        }
    };
    Some(Identity { seed: read(width), increment: read(2 * width) })
}

#[cfg(test)]
mod tests {
    use super::split_table_name;

    #[test]
    fn table_names_split_at_the_first_dot_out_of_their_brackets() {
        assert_eq!(split_table_name("Orders"), (None, "Orders"));
        assert_eq!(split_table_name(" [dbo] . [Orders] "), (Some("dbo"), "Orders"));
        assert_eq!(split_table_name("SalesLT.Order.Lines"), (Some("SalesLT"), "Order.Lines"));
        assert_eq!(split_table_name(""), (None, ""));
    }
}
