//! The DBA's catalog views (`sys.objects`, `sys.columns`, ...), rebuilt from the base tables the
//! way SQL Server defines them. Each view keeps SQL Server's column names; columns whose source
//! is not in the data file (server-level state, permissions) are left out rather than invented.
//!
//! Status-bit meanings are listed in [`super::model`]; see there for sources.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema};

use super::base::{NamedColumn, RowRef, TableRows};
use super::model::{compression_name, index_type_name};
use super::Catalog;
use crate::error::{Error, Result};
use crate::value::Value;

/// The rows of a view, with its column names.
#[derive(Debug, Clone, Default)]
pub struct ViewRows {
    /// Column names, in the view's order.
    pub columns: Vec<String>,
    /// Rows, one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl ViewRows {
    /// The rows as one Arrow record batch: a column whose values are all integers (or NULL) is
    /// int64, all binary is binary, anything else is text in SQL Server's spelling.
    pub fn to_record_batch(&self) -> Result<RecordBatch> {
        let rows = &self.rows;
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for (i, name) in self.columns.iter().enumerate() {
            let values = rows.iter().map(|r| r.get(i).unwrap_or(&Value::Null));
            let non_null = || values.clone().filter(|v| !v.is_null());
            if non_null().all(|v| matches!(v, Value::Int(_))) {
                let mut b = Int64Builder::with_capacity(rows.len());
                values.clone().for_each(|v| b.append_option(v.as_i64()));
                fields.push(Field::new(name, DataType::Int64, true));
                arrays.push(Arc::new(b.finish()));
            } else if non_null().all(|v| matches!(v, Value::Binary(_) | Value::OffRow(_))) {
                let mut b = BinaryBuilder::new();
                for v in values.clone() {
                    match v {
                        Value::Binary(x) | Value::OffRow(x) => b.append_value(x),
                        _ => b.append_null(),
                    }
                }
                fields.push(Field::new(name, DataType::Binary, true));
                arrays.push(Arc::new(b.finish()));
            } else {
                let mut b = StringBuilder::new();
                for v in values.clone() {
                    if v.is_null() {
                        b.append_null()
                    } else {
                        b.append_value(v.to_string())
                    }
                }
                fields.push(Field::new(name, DataType::Utf8, true));
                arrays.push(Arc::new(b.finish()));
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(|e| Error::corrupt(format!("building a batch of view rows: {e}")))
    }
}

/// Every view `Catalog::view` knows, for `--help` and error messages.
pub const VIEW_NAMES: &[&str] = &[
    "sys.schemas",
    "sys.objects",
    "sys.tables",
    "sys.views",
    "sys.columns",
    "sys.types",
    "sys.indexes",
    "sys.index_columns",
    "sys.partitions",
    "sys.allocation_units",
    "sys.system_internals_allocation_units",
    "sys.system_internals_partitions",
    "sys.system_internals_partition_columns",
    "sys.database_files",
    "sys.filegroups",
    "sys.sql_modules",
    "sys.foreign_keys",
    "sys.default_constraints",
    "sys.check_constraints",
];

/// `sys.objects.type_desc` for each object type code.
pub fn object_type_desc(code: &str) -> &'static str {
    match code {
        "U" => "USER_TABLE",
        "S" => "SYSTEM_TABLE",
        "IT" => "INTERNAL_TABLE",
        "V" => "VIEW",
        "P" => "SQL_STORED_PROCEDURE",
        "FN" => "SQL_SCALAR_FUNCTION",
        "IF" => "SQL_INLINE_TABLE_VALUED_FUNCTION",
        "TF" => "SQL_TABLE_VALUED_FUNCTION",
        "TR" => "SQL_TRIGGER",
        "PK" => "PRIMARY_KEY_CONSTRAINT",
        "UQ" => "UNIQUE_CONSTRAINT",
        "F" => "FOREIGN_KEY_CONSTRAINT",
        "C" => "CHECK_CONSTRAINT",
        "D" => "DEFAULT_CONSTRAINT",
        "SQ" => "SERVICE_QUEUE",
        "TT" => "TYPE_TABLE",
        "SN" => "SYNONYM",
        "X" => "EXTENDED_STORED_PROCEDURE",
        "PC" => "CLR_STORED_PROCEDURE",
        "FS" => "CLR_SCALAR_FUNCTION",
        "FT" => "CLR_TABLE_VALUED_FUNCTION",
        "AF" => "AGGREGATE_FUNCTION",
        "TA" => "CLR_TRIGGER",
        "R" => "RULE",
        "PG" => "PLAN_GUIDE",
        "SO" => "SEQUENCE_OBJECT",
        "EC" => "EDGE_CONSTRAINT",
        "ET" => "EXTERNAL_TABLE",
        _ => "UNKNOWN",
    }
}

const MODULE_TYPES: &[&str] = &["V", "P", "FN", "IF", "TF", "TR", "R", "D"];

/// How a view column is computed from a row of the base table it reads (borrowed for `'t`);
/// the function may borrow what the view built for `'f`.
type ColFn<'t, 'f> = Box<dyn Fn(RowRef<'t>) -> Value + 'f>;

/// A view column: its name and how to compute it from a base-table row.
type Col<'t, 'f> = (&'static str, ColFn<'t, 'f>);

/// Boxes `(name, function)` pairs into an array of view columns.
macro_rules! cols {
    ($(($name:expr, $f:expr)),* $(,)?) => { [$(($name, Box::new($f) as ColFn<'_, '_>)),*] };
}

/// Builds rows from view columns over a filtered base table.
fn project<'t>(rows: impl Iterator<Item = RowRef<'t>>, columns: &[Col<'t, '_>]) -> ViewRows {
    ViewRows {
        columns: columns.iter().map(|(n, _)| n.to_string()).collect(),
        rows: rows.map(|r| columns.iter().map(|(_, f)| f(r)).collect()).collect(),
    }
}

/// Column `name` as stored (the name says what most are; any value is copied as it is).
fn int<'t>(name: &'static str) -> impl Fn(RowRef<'t>) -> Value {
    let field = NamedColumn::new(name);
    move |r| field.get(r).clone()
}

fn bit<'t>(name: &'static str, mask: i64) -> impl Fn(RowRef<'t>) -> Value {
    from_int(name, move |v| Value::bit(v & mask != 0))
}

/// A column computed from integer column `name` (0 when NULL).
fn from_int<'t>(name: &'static str, compute: impl Fn(i64) -> Value) -> impl Fn(RowRef<'t>) -> Value {
    let field = NamedColumn::new(name);
    move |r| compute(field.int(r))
}

fn text_or_null<'t>(name: &'static str) -> impl Fn(RowRef<'t>) -> Value {
    let field = NamedColumn::new(name);
    move |r| Value::text_or_null(field.text(r))
}

fn trimmed<'t>(name: &'static str) -> impl Fn(RowRef<'t>) -> Value {
    let field = NamedColumn::new(name);
    move |r| Value::text(field.text(r).trim())
}

/// Rows whose integer column `name` passes `keep`: a view's filter, its column found once.
fn rows_where_int<'t>(
    rows: impl Iterator<Item = RowRef<'t>>,
    name: &'static str,
    keep: impl Fn(i64) -> bool,
) -> impl Iterator<Item = RowRef<'t>> {
    let field = NamedColumn::new(name);
    rows.filter(move |r| keep(field.int(*r)))
}

impl Catalog {
    /// Rows of a `sys.*` view by name (`sys.columns` or `columns`), or of a system base table
    /// (`sys.sysschobjs`).
    pub fn view(&self, name: &str) -> Result<ViewRows> {
        let lower = name.trim().to_ascii_lowercase();
        let key = lower.strip_prefix("sys.").unwrap_or(&lower);
        Ok(match key {
            "schemas" => self.view_schemas(),
            "objects" => self.view_objects(|_| true),
            "tables" => self.view_tables(),
            "views" => self.view_objects(|t| t == "V"),
            "columns" => self.view_columns(),
            "types" => self.view_types(),
            "indexes" => self.view_indexes(),
            "index_columns" => self.view_index_columns(),
            "partitions" => self.view_partitions(),
            "allocation_units" => self.view_allocation_units(false),
            "system_internals_allocation_units" => self.view_allocation_units(true),
            "system_internals_partitions" => self.view_internals_partitions(),
            "system_internals_partition_columns" => self.view_partition_columns(),
            "database_files" => self.view_database_files(),
            "filegroups" => self.view_filegroups(),
            "sql_modules" => self.view_sql_modules(),
            "foreign_keys" => self.view_foreign_keys(),
            "default_constraints" => self.view_constraints("D"),
            "check_constraints" => self.view_constraints("C"),
            other if other.starts_with("sys") && self.base_table_names().iter().any(|n| n == other) => {
                table_rows_view(self.read_base_table(other)?.into_owned())
            }
            _ => {
                return Err(Error::not_found(format!(
                    "no view named {name}; known views: {}, and the system base tables (sys.sysschobjs, ...)",
                    VIEW_NAMES.join(", ")
                )))
            }
        })
    }

    fn view_schemas(&self) -> ViewRows {
        project(
            rows_where_int(self.table("sysclsobjs").iter(), "class", |class| class == 50),
            &cols![("name", int("name")), ("schema_id", int("id"))],
        )
    }

    fn object_columns<'t>() -> Vec<Col<'t, 't>> {
        let type_code = NamedColumn::new("type");
        cols![
            ("name", int("name")),
            ("object_id", int("id")),
            ("schema_id", int("nsid")),
            ("parent_object_id", int("pid")),
            ("type", trimmed("type")),
            ("type_desc", move |r| Value::text(object_type_desc(type_code.text(r).trim()))),
            ("create_date", int("created")),
            ("modify_date", int("modified")),
            ("is_ms_shipped", bit("status", 0x1)),
            ("is_published", bit("status", 0x10)),
            ("is_schema_published", bit("status", 0x40)),
        ]
        .into()
    }

    /// The objects of `sys.objects` (in a schema: not the ones of other classes) whose type
    /// code passes `keep`.
    fn objects_in_namespace(&self, keep: impl Fn(&str) -> bool) -> impl Iterator<Item = RowRef<'_>> {
        let (nsclass, pclass, type_code) =
            (NamedColumn::new("nsclass"), NamedColumn::new("pclass"), NamedColumn::new("type"));
        self.objects()
            .iter()
            .filter(move |&o| nsclass.int(o) == 0 && pclass.int(o) == 1 && keep(type_code.text(o).trim()))
    }

    fn view_objects(&self, keep: impl Fn(&str) -> bool) -> ViewRows {
        let cols = Self::object_columns();
        project(self.objects_in_namespace(keep), &cols)
    }

    fn view_tables(&self) -> ViewRows {
        let (indid, id) = (NamedColumn::new("indid"), NamedColumn::new("id"));
        let heap_or_clustered: HashMap<i64, RowRef> =
            self.table("sysidxstats").iter().filter(|&i| indid.int(i) <= 1).map(|i| (id.int(i), i)).collect();
        let (lobds, intprop) = (NamedColumn::new("lobds"), NamedColumn::new("intprop"));
        let lob_ds = from_int("id", |id| heap_or_clustered.get(&id).map_or(Value::Null, |&i| lobds.get(i).clone()));
        let text_in_row =
            from_int("id", |id| heap_or_clustered.get(&id).map_or(Value::Null, |&i| intprop.get(i).clone()));
        let mut cols = Self::object_columns();
        cols.push(("lob_data_space_id", Box::new(lob_ds)));
        cols.push(("max_column_id_used", Box::new(int("intprop"))));
        cols.push(("uses_ansi_nulls", Box::new(bit("status", 0x40000))));
        cols.push(("text_in_row_limit", Box::new(text_in_row)));
        cols.push(("large_value_types_out_of_row", Box::new(bit("status", 0x2000000))));
        cols.push(("is_tracked_by_cdc", Box::new(bit("status", 0x1000000))));
        cols.push(("lock_escalation", Box::new(from_int("status", |status| Value::Int((status & 0x30000000) >> 28)))));
        project(self.objects_in_namespace(|t| t == "U"), &cols)
    }

    fn view_columns(&self) -> ViewRows {
        project(
            rows_where_int(self.table("syscolpars").iter(), "number", |number| number == 0),
            &cols![
                ("object_id", int("id")),
                ("name", int("name")),
                ("column_id", int("colid")),
                ("system_type_id", int("xtype")),
                ("user_type_id", int("utype")),
                ("max_length", int("length")),
                ("precision", int("prec")),
                ("scale", int("scale")),
                ("collation_name", from_int("collationid", collation_value)),
                ("is_nullable", from_int("status", |status| Value::bit(status & 0x1 == 0))),
                ("is_ansi_padded", bit("status", 0x2)),
                ("is_rowguidcol", bit("status", 0x8)),
                ("is_identity", bit("status", 0x4)),
                ("is_computed", bit("status", 0x10)),
                ("is_filestream", bit("status", 0x20)),
                ("is_xml_document", bit("status", 0x800)),
                ("xml_collection_id", int("xmlns")),
                ("default_object_id", int("dflt")),
                ("rule_object_id", int("chk")),
                ("is_sparse", bit("status", 0x1000000)),
                ("is_column_set", bit("status", 0x2000000)),
            ],
        )
    }

    fn view_types(&self) -> ViewRows {
        project(
            self.table("sysscalartypes").iter(),
            &cols![
                ("name", int("name")),
                ("system_type_id", int("xtype")),
                ("user_type_id", int("id")),
                ("schema_id", int("schid")),
                ("max_length", int("length")),
                ("precision", int("prec")),
                ("scale", int("scale")),
                ("collation_name", from_int("collationid", collation_value)),
                ("is_nullable", from_int("status", |status| Value::bit(status & 0x1 == 0))),
                ("is_user_defined", from_int("id", |id| Value::bit(id > 256))),
                ("is_assembly_type", from_int("xtype", |xtype| Value::bit(xtype == 240))),
                ("default_object_id", int("dflt")),
                ("rule_object_id", int("chk")),
            ],
        )
    }

    fn view_indexes(&self) -> ViewRows {
        project(
            rows_where_int(self.table("sysidxstats").iter(), "status", |status| status & 0x1 != 0),
            &cols![
                ("object_id", int("id")),
                ("name", text_or_null("name")),
                ("index_id", int("indid")),
                ("type", int("type")),
                ("type_desc", from_int("type", |code| Value::text(index_type_name(code as u8)))),
                ("is_unique", bit("status", 0x8)),
                ("data_space_id", int("dataspace")),
                ("is_primary_key", bit("status", 0x20)),
                ("is_unique_constraint", bit("status", 0x40)),
                ("fill_factor", int("fillfact")),
                ("is_padded", bit("status", 0x10)),
                ("is_disabled", bit("status", 0x80)),
                ("is_hypothetical", bit("status", 0x100)),
                ("allow_row_locks", from_int("status", |status| Value::bit(status & 0x200 == 0))),
                ("allow_page_locks", from_int("status", |status| Value::bit(status & 0x400 == 0))),
                ("has_filter", bit("status", 0x20000)),
            ],
        )
    }

    fn view_index_columns(&self) -> ViewRows {
        project(
            rows_where_int(self.table("sysiscols").iter(), "status", |status| status & 0x2 != 0),
            &cols![
                ("object_id", int("idmajor")),
                ("index_id", int("idminor")),
                ("index_column_id", int("subid")),
                ("column_id", int("intprop")),
                ("key_ordinal", int("tinyprop1")),
                ("partition_ordinal", int("tinyprop2")),
                ("is_descending_key", bit("status", 0x4)),
                ("is_included_column", bit("status", 0x10)),
            ],
        )
    }

    fn view_partitions(&self) -> ViewRows {
        project(
            rows_where_int(self.table("sysrowsets").iter(), "ownertype", |owner| owner == 1),
            &cols![
                ("partition_id", int("rowsetid")),
                ("object_id", int("idmajor")),
                ("index_id", int("idminor")),
                ("partition_number", int("numpart")),
                ("hobt_id", int("rowsetid")),
                ("rows", int("rcrows")),
                ("data_compression", int("cmprlevel")),
                ("data_compression_desc", from_int("cmprlevel", |level| Value::text(compression_name(level as u8)))),
            ],
        )
    }

    fn view_internals_partitions(&self) -> ViewRows {
        project(
            self.table("sysrowsets").iter(),
            &cols![
                ("partition_id", int("rowsetid")),
                ("object_id", int("idmajor")),
                ("index_id", int("idminor")),
                ("partition_number", int("numpart")),
                ("rows", int("rcrows")),
                ("filestream_filegroup_id", int("fgidfs")),
                ("ownertype", int("ownertype")),
                ("status", int("status")),
                ("data_compression", int("cmprlevel")),
                ("fill_factor", int("fillfact")),
                ("max_null_bit_used", int("maxnullbit")),
                ("max_leaf_length", int("maxleaf")),
                ("min_leaf_length", int("minleaf")),
                ("max_internal_length", int("maxint")),
                ("min_internal_length", int("minint")),
            ],
        )
    }

    fn view_allocation_units(&self, internals: bool) -> ViewRows {
        let type_desc = from_int("type", |code| Value::text(crate::page::allocation::unit_kind_name(code)));
        let mut cols: Vec<Col> = cols![
            ("allocation_unit_id", int("auid")),
            ("type", int("type")),
            ("type_desc", type_desc),
            ("container_id", int("ownerid")),
            ("data_space_id", int("fgid")),
            ("total_pages", int("pcreserved")),
            ("used_pages", int("pcused")),
            ("data_pages", int("pcdata")),
        ]
        .into();
        if internals {
            cols.extend(cols![
                ("first_page", int("pgfirst")),
                ("root_page", int("pgroot")),
                ("first_iam_page", int("pgfirstiam"))
            ]);
        }
        project(self.table("sysallocunits").iter(), &cols)
    }

    fn view_partition_columns(&self) -> ViewRows {
        let layouts = &self.base().layouts;
        let mut rowsets: Vec<&i64> = layouts.keys().collect();
        rowsets.sort();
        let mut out = ViewRows {
            columns: [
                "partition_id",
                "partition_column_id",
                "system_type_id",
                "max_inrow_length",
                "max_length",
                "precision",
                "scale",
                "collation_name",
                "key_ordinal",
                "is_dropped",
                "is_uniqueifier",
                "is_sparse",
                "leaf_offset",
                "internal_offset",
                "leaf_bit_position",
                "leaf_null_bit",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for rowset in rowsets {
            for c in &layouts[rowset].columns {
                out.rows.push(vec![
                    Value::Int(*rowset),
                    Value::Int(c.rowset_column_id.into()),
                    Value::Int(c.type_info.sql_type.id().into()),
                    Value::Int(c.max_inrow_length.into()),
                    Value::Int(c.type_info.max_length.into()),
                    Value::Int(c.type_info.precision.into()),
                    Value::Int(c.type_info.scale.into()),
                    collation_value(c.collation_id.into()),
                    Value::Int(c.key_ordinal.into()),
                    Value::bit(c.is_dropped()),
                    Value::bit(c.is_uniquifier()),
                    Value::bit(c.is_sparse()),
                    Value::Int(c.leaf_offset.into()),
                    Value::Int(c.internal_offset.into()),
                    Value::Int(c.bit_position.into()),
                    Value::Int(c.null_bit.into()),
                ]);
            }
        }
        out
    }

    fn view_database_files(&self) -> ViewRows {
        let type_desc = from_int("filetype", |file_type| {
            Value::text(match file_type {
                0 => "ROWS",
                1 => "LOG",
                2 => "FILESTREAM",
                4 => "FULLTEXT",
                _ => "UNKNOWN",
            })
        });
        project(
            self.files().iter(),
            &cols![
                ("file_id", int("fileid")),
                ("file_guid", int("fileguid")),
                ("type", int("filetype")),
                ("type_desc", type_desc),
                ("data_space_id", int("grpid")),
                ("name", int("lname")),
                ("physical_name", int("pname")),
                ("state", int("filestate")),
                ("size", int("size")),
                ("max_size", int("maxsize")),
                ("growth", int("growth")),
                ("is_percent_growth", bit("status", 0x100000)),
            ],
        )
    }

    fn view_filegroups(&self) -> ViewRows {
        project(
            rows_where_int(self.table("sysclsobjs").iter(), "class", |class| class == 31),
            &cols![
                ("name", int("name")),
                ("data_space_id", int("id")),
                ("type", trimmed("type")),
                ("is_default", bit("status", 0x1)),
            ],
        )
    }

    fn view_sql_modules(&self) -> ViewRows {
        let (id, type_code) = (NamedColumn::new("id"), NamedColumn::new("type"));
        let types: HashMap<i64, &str> = self.objects().iter().map(|o| (id.int(o), type_code.text(o).trim())).collect();
        let (valclass, objid) = (NamedColumn::new("valclass"), NamedColumn::new("objid"));
        project(
            self.table("sysobjvalues").iter().filter(|&v| {
                valclass.int(v) == 1 && types.get(&objid.int(v)).is_some_and(|t| MODULE_TYPES.contains(t) && *t != "D")
            }),
            &cols![("object_id", int("objid")), ("definition", definition_value(self.boot.collation_id))],
        )
    }

    fn view_foreign_keys(&self) -> ViewRows {
        // syssingleobjrefs class 27 links a foreign key (depid) to the referenced table (indepid)
        // and the referenced key's index (indepsubid); classes 28 and 29 hold its columns.
        // Seen in pubs: FK__titles__pub_id → publishers, index 1 (UPKCL_pubind).
        let [class, depsubid, depid, indepid, indepsubid] =
            ["class", "depsubid", "depid", "indepid", "indepsubid"].map(NamedColumn::new);
        let referenced: HashMap<i64, (i64, i64)> = self
            .table("syssingleobjrefs")
            .iter()
            .filter(|&r| class.int(r) == 27 && depsubid.int(r) == 0)
            .map(|r| (depid.int(r), (indepid.int(r), indepsubid.int(r))))
            .collect();
        let key_index = referenced.clone();
        let mut cols = Self::object_columns();
        cols.push((
            "referenced_object_id",
            Box::new(from_int("id", move |id| referenced.get(&id).map_or(Value::Null, |v| Value::Int(v.0)))),
        ));
        cols.push((
            "key_index_id",
            Box::new(from_int("id", move |id| key_index.get(&id).map_or(Value::Null, |v| Value::Int(v.1)))),
        ));
        cols.push(("is_disabled", Box::new(bit("status", 0x100))));
        cols.push(("is_not_trusted", Box::new(bit("status", 0x400))));
        cols.push(("delete_referential_action", Box::new(from_int("status", |status| Value::Int((status >> 14) & 3)))));
        cols.push(("update_referential_action", Box::new(from_int("status", |status| Value::Int((status >> 12) & 3)))));
        project(self.objects_in_namespace(|t| t == "F"), &cols)
    }

    fn view_constraints(&self, code: &'static str) -> ViewRows {
        let definition = from_int("id", |id| self.definition(id, None).map_or(Value::Null, Value::Text));
        let mut cols = Self::object_columns();
        cols.push(("parent_column_id", Box::new(int("intprop"))));
        cols.push(("definition", Box::new(definition)));
        cols.push(("is_system_named", Box::new(bit("status", 0x4))));
        if code == "C" {
            cols.push(("is_disabled", Box::new(bit("status", 0x100))));
            cols.push(("is_not_trusted", Box::new(bit("status", 0x400))));
        }
        project(self.objects_in_namespace(|t| t == code), &cols)
    }
}

/// Definitions are stored single-byte, in the database's code page (its collation's).
fn definition_value<'t>(database_collation: u32) -> impl Fn(RowRef<'t>) -> Value {
    let imageval = NamedColumn::new("imageval");
    move |r| match imageval.get(r) {
        Value::Binary(b) => crate::collation::decode_text(database_collation, b).map_or(Value::Null, Value::Text),
        Value::OffRow(_) => Value::text("(definition stored off-row: not read by this version)"),
        _ => Value::Null,
    }
}

fn table_rows_view(t: TableRows) -> ViewRows {
    ViewRows { columns: t.names, rows: t.rows }
}

/// A collation id as a name where known, else `collation id N`.
fn collation_value(id: i64) -> Value {
    if id == 0 {
        return Value::Null;
    }
    Value::Text(crate::collation::name(id as u32))
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    use super::*;

    #[test]
    fn view_rows_become_one_batch_typed_by_their_values() {
        let rows = ViewRows {
            columns: vec!["object_id".into(), "name".into(), "sid".into(), "mixed".into()],
            rows: vec![
                vec![Value::Int(5), Value::text("sysrowsets"), Value::Binary(vec![1, 2]), Value::Int(7)],
                vec![Value::Null, Value::Null, Value::Null, Value::text("x")],
            ],
        };
        let batch = rows.to_record_batch().unwrap();
        assert_eq!(batch.num_rows(), 2);
        let types: Vec<DataType> = batch.schema().fields().iter().map(|f| f.data_type().clone()).collect();
        assert_eq!(types, [DataType::Int64, DataType::Utf8, DataType::Binary, DataType::Utf8]);
        let ids = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!((ids.value(0), ids.is_null(1)), (5, true));
        assert_eq!(batch.column(3).as_string::<i32>().value(0), "7");
        assert_eq!(batch.column(2).as_binary::<i32>().value(0), [1, 2]);
    }
}
