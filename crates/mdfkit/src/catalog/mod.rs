//! The database catalog: the system base tables, and the model a DBA knows built from them.
//!
//! [`Catalog::load`] reads the boot page, bootstraps the base-table reader ([`base`]) and reads
//! the base tables the `sys.*` views are made of. The views themselves are in [`views`]; the
//! user-table model ([`TableInfo`](model::TableInfo), [`ColumnInfo`](model::ColumnInfo),
//! [`IndexInfo`](model::IndexInfo)) in [`model`].

pub mod base;
pub mod ddl;
pub mod model;
pub mod owners;
pub mod rowset;
pub mod scan;
pub mod views;

use std::borrow::Cow;
use std::collections::HashMap;

use base::{BaseTables, RowRef, TableRows};

use crate::error::{Error, Result};
use crate::page::boot::{BootPage, BOOT_PAGE};
use crate::source::PageReader;

/// Object id of sysschobjs, which lists every other base table by name.
const SYSSCHOBJS_ID: i32 = 34;

/// Base tables read at open: the sources of the `sys.*` views.
const CATALOG_TABLES: &[&str] = &[
    "sysrowsets",
    "sysallocunits",
    "sysrscols",
    "syscolpars",
    "sysidxstats",
    "sysiscols",
    "sysclsobjs",
    "sysscalartypes",
    "sysobjvalues",
    "syssingleobjrefs",
    "sysmultiobjrefs",
    "sysprufiles",
    "sysdbfiles",
    "sysseobjvalues",
];

/// Everything read from the catalog of one database.
pub struct Catalog {
    /// The boot page, 1:9: the database's name, versions and options.
    pub boot: BootPage,
    base: BaseTables,
    /// sysschobjs: every object, including the base tables.
    objects: TableRows,
    /// The other base tables, by name.
    tables: HashMap<String, TableRows>,
    /// Base table name → object id, from sysschobjs.
    base_table_ids: HashMap<String, i32>,
    /// Every table, built on first use.
    table_cache: std::sync::OnceLock<Vec<model::TableInfo>>,
    /// Rows by object, built on first use (see [`OBJECT_KEYS`]).
    rows_by_object: std::sync::OnceLock<RowsByObject>,
    /// Each object's columns, built on its first use (see [`Catalog::columns`]).
    columns_by_object: std::sync::Mutex<HashMap<i32, Vec<model::ColumnInfo>>>,
    /// Type id → name (sysscalartypes), built on first use: every table's columns name theirs.
    type_names: std::sync::OnceLock<HashMap<i64, String>>,
    /// Allocation unit id → owner, built on first use.
    owners: std::sync::OnceLock<owners::UnitOwners>,
}

/// (base table, column) → value of the column → positions of the rows holding it.
type RowsByObject = HashMap<(&'static str, &'static str), HashMap<i64, Vec<usize>>>;

/// The base tables read object by object, with the integer column naming the object: indexed
/// once, so that each table's columns, indexes, defaults and definitions cost its own rows
/// rather than a scan of the whole catalog per table (quadratic in the number of tables).
const OBJECT_KEYS: &[(&str, &str)] = &[
    ("syscolpars", "id"),
    ("sysidxstats", "id"),
    ("sysiscols", "idmajor"),
    ("sysobjvalues", "objid"),
    ("sysschobjs", "pid"),
];

impl Catalog {
    /// Reads the boot page and the system base tables.
    pub fn load(reader: PageReader) -> Result<Self> {
        let boot_page = reader.read(BOOT_PAGE)?;
        let boot = BootPage::parse(&boot_page)?;
        let base = match BaseTables::bootstrap(reader.clone(), &boot) {
            Ok(base) => base,
            Err(e) if looks_encrypted(&reader, boot.first_sys_indexes) => {
                return Err(Error::unsupported(format!(
                    "the database is encrypted with Transparent Data Encryption: its boot page is readable but \
                     its pages are not (page {} holds no page header, only ciphertext); mdfkit cannot read \
                     TDE databases ({e})",
                    boot.first_sys_indexes
                )))
            }
            Err(e) => return Err(e),
        };
        let objects = base.read_table(SYSSCHOBJS_ID, "sys.sysschobjs")?;
        let mut base_table_ids = HashMap::new();
        let [type_code, name, id] = ["type", "name", "id"].map(base::NamedColumn::new);
        for row in objects.iter() {
            if type_code.text(row).trim() == "S" {
                base_table_ids.insert(name.text(row).to_ascii_lowercase(), id.int(row) as i32);
            }
        }
        let mut tables = HashMap::new();
        for &name in CATALOG_TABLES {
            if let Some(&id) = base_table_ids.get(name) {
                tables.insert(name.to_string(), base.read_table(id, &format!("sys.{name}"))?);
            }
        }
        Ok(Catalog {
            boot,
            base,
            objects,
            tables,
            base_table_ids,
            table_cache: std::sync::OnceLock::new(),
            rows_by_object: std::sync::OnceLock::new(),
            columns_by_object: std::sync::Mutex::new(HashMap::new()),
            type_names: std::sync::OnceLock::new(),
            owners: std::sync::OnceLock::new(),
        })
    }

    /// The system base tables as read, with the physical layouts of every rowset.
    pub fn base(&self) -> &BaseTables {
        &self.base
    }

    /// Who owns each allocation unit (object, index, partition, kind), built on first use: a
    /// page's owner is then one lookup ([`owners::UnitOwners::of_page`]).
    pub fn owners(&self) -> &owners::UnitOwners {
        self.owners.get_or_init(|| owners::UnitOwners::build(self))
    }

    /// sysschobjs.
    pub fn objects(&self) -> &TableRows {
        &self.objects
    }

    /// A base table read at open (see `CATALOG_TABLES`); empty when the version lacks it.
    pub fn table(&self, name: &str) -> &TableRows {
        static EMPTY: TableRows = TableRows { names: Vec::new(), rows: Vec::new() };
        self.tables.get(name).unwrap_or(&EMPTY)
    }

    /// The database's files: sysprufiles, which SQL Server 2005 (611) calls sysdbfiles (the same
    /// columns).
    pub fn files(&self) -> &TableRows {
        match self.tables.get("sysprufiles") {
            Some(files) => files,
            None => self.table("sysdbfiles"),
        }
    }

    /// The rows of base table `table` (sysschobjs or one read at open) whose integer column
    /// `column` is `value`, in table order: through an index built once for the pairs of
    /// `OBJECT_KEYS`, by a scan for any other.
    pub fn rows_where(&self, table: &str, column: &str, value: i64) -> Vec<RowRef<'_>> {
        let rows = if table == "sysschobjs" { &self.objects } else { self.table(table) };
        let indexes = self.rows_by_object.get_or_init(|| {
            OBJECT_KEYS
                .iter()
                .map(|&(t, c)| {
                    let rows = if t == "sysschobjs" { &self.objects } else { self.table(t) };
                    // As `RowRef::int` reads them: NULL (or a column the version lacks) is 0.
                    let mut by_value: HashMap<i64, Vec<usize>> = HashMap::new();
                    let key = base::NamedColumn::new(c);
                    for (i, row) in rows.iter().enumerate() {
                        by_value.entry(key.int(row)).or_default().push(i);
                    }
                    ((t, c), by_value)
                })
                .collect()
        });
        match indexes.get(&(table, column)) {
            Some(by_value) => by_value.get(&value).into_iter().flatten().filter_map(|&i| rows.row(i)).collect(),
            None => rows.iter().filter(|r| r.int(column) == value).collect(),
        }
    }

    /// Names of the system base tables present in this database, sorted.
    pub fn base_table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.base_table_ids.keys().cloned().collect();
        names.sort();
        names
    }

    /// Reads any system base table by name (`sysschobjs`, `sys.syscolpars`, ...): those the
    /// catalog read at open come borrowed (not copied row by row), the others are read now.
    pub fn read_base_table(&self, name: &str) -> Result<Cow<'_, TableRows>> {
        let key = name.trim_start_matches("sys.").to_ascii_lowercase();
        if key == "sysschobjs" {
            return Ok(Cow::Borrowed(&self.objects));
        }
        if let Some(rows) = self.tables.get(&key) {
            return Ok(Cow::Borrowed(rows));
        }
        let id = *self
            .base_table_ids
            .get(&key)
            .ok_or_else(|| Error::not_found(format!("no system base table named {name}")))?;
        self.base.read_table(id, &format!("sys.{key}")).map(Cow::Owned)
    }
}

/// Whether page `id` looks like ciphertext: no valid page header, and its bytes spread over
/// nearly every byte value. TDE encrypts every page but the boot page and file headers, page
/// headers included, so a database whose boot page parses but whose first catalog page is noise
/// is taken to be encrypted (Microsoft: "Database Encryption Key (DEK) management" — the DEK is in
/// the unencrypted boot page; page headers are encrypted too).
fn looks_encrypted(reader: &PageReader, id: crate::page::PageId) -> bool {
    let mut buf = vec![0u8; crate::page::PAGE_SIZE];
    if reader.source().read_raw(id, &mut buf).is_err() {
        return false;
    }
    let header_ok = crate::page::PageHeader::parse(&buf).is_ok_and(|h| buf[0] == 1 && h.this_page == id);
    let mut seen = [false; 256];
    for &b in &buf {
        seen[b as usize] = true;
    }
    !header_ok && seen.iter().filter(|&&s| s).count() > 240
}
