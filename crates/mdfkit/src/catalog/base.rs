//! Reading the system base tables (`sys.sysschobjs`, `sys.syscolpars`, ...) from their pages.
//!
//! The path from the boot page to any table:
//!
//! ```text
//!  boot page 1:9 ──dbi_firstSysIndexes──► sysallocunits (auid 458752 = 7 << 16)
//!        │ auid 196608 (3 << 16)                     │ auid 327680 (5 << 16)
//!        ▼                                           ▼
//!  sysrscols: physical layout of every rowset   sysrowsets: (object id, index id) → rowset id
//!        │                                           │
//!        └──────────► any base table: rowset → allocation unit → first page → leaf chain
//! ```
//!
//! Only three things are hard-wired, because they are needed before the catalog can describe
//! itself: the fixed offsets of the `sysallocunits` columns used to find `sysrscols`, the fixed
//! offsets of `sysrscols` itself (both checked against sysrscols' own rows once read), and the
//! column ids of `sysrowsets` and `syscolpars` that name everything else (checked against
//! syscolpars' own rows for those tables). Every other base table is decoded by column *name*
//! through sysrscols and syscolpars, so a column moved or added in a later version is read from
//! where that version put it; a column a version lacks reads as NULL.
//!
//! SQL Server 2005 (611) has no sysrscols: the same layouts come from `syshobtcolumns` joined with
//! `sysrowsetcolumns` (see [`parse_syshobtcolumns_row`]), whose hard-wired offsets are checked
//! against their own rows in the same way.
//!
//! System base tables are clustered indexes. Their leaf level is read from the allocation unit's
//! first page along the next-page links; each page must belong to the allocation unit and be a
//! leaf data page, and a link that revisits a page is reported as a cycle.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use super::rowset::{
    parse_syshobtcolumns_row, parse_sysrowsetcolumns_row, parse_sysrscols_row, read_column, PhysicalColumn,
    RowsetLayout,
};
use crate::error::{Error, Result};
use crate::page::boot::BootPage;
use crate::page::{PageId, PageType};
use crate::record::{Record, RecordType};
use crate::source::PageReader;
use crate::value::Value;

/// Allocation unit (= rowset) ids of the bootstrap tables: `object id << 16`.
pub const SYSRSCOLS_AUID: i64 = 3 << 16;
/// sysrowsets (object id 5): one row per rowset (partition).
pub const SYSROWSETS_AUID: i64 = 5 << 16;
/// sysallocunits (object id 7): one row per allocation unit; its first page is on the boot page.
pub const SYSALLOCUNITS_AUID: i64 = 7 << 16;
/// SQL Server 2005 (611): the tables sysrscols replaced (see [`parse_syshobtcolumns_row`]).
pub const SYSROWSETCOLUMNS_AUID: i64 = 4 << 16;
/// syshobtcolumns (object id 13, SQL Server 2005): the physical columns of each heap or B-tree.
pub const SYSHOBTCOLUMNS_AUID: i64 = 13 << 16;
/// Object id of syscolpars, the table of column names.
pub const SYSCOLPARS_ID: i32 = 41;

/// sysallocunits: (column id, fixed offset) of the columns used before sysrscols is read.
const ALLOCUNIT_BOOTSTRAP: [(i32, i16); 10] =
    [(1, 4), (2, 12), (3, 13), (5, 25), (6, 27), (7, 33), (8, 39), (9, 45), (10, 53), (11, 61)];
/// sysrscols: (column id, fixed offset) of the columns `parse_sysrscols_row` reads.
const RSCOLS_BOOTSTRAP: [(i32, i16); 12] =
    [(1, 4), (2, 12), (3, 16), (5, 28), (6, 32), (7, 36), (8, 38), (9, 40), (10, 44), (11, 48), (12, 52), (4, 20)];
/// syshobtcolumns (2005): (column id, fixed offset) of the columns `parse_syshobtcolumns_row` reads.
const HOBTCOLS_BOOTSTRAP: [(i32, i16); 13] = [
    (1, 4),
    (2, 12),
    (4, 20),
    (5, 22),
    (6, 23),
    (7, 25),
    (8, 26),
    (9, 27),
    (10, 31),
    (11, 33),
    (12, 35),
    (14, 37),
    (15, 39),
];
/// sysrowsetcolumns (2005): (column id, fixed offset) of the columns `parse_sysrowsetcolumns_row` reads.
const ROWSETCOLS_BOOTSTRAP: [(i32, i16); 4] = [(1, 4), (2, 12), (3, 16), (6, 32)];
/// sysrowsets column ids: rowsetid, ownertype, idmajor, idminor.
const ROWSETS_COLUMNS: [(&str, i32); 4] = [("rowsetid", 1), ("ownertype", 2), ("idmajor", 3), ("idminor", 4)];
/// syscolpars column ids: id, number, colid, name.
const COLPARS_COLUMNS: [(&str, i32); 4] = [("id", 1), ("number", 2), ("colid", 3), ("name", 4)];

// One row of sysallocunits: defined with the page walks that follow it, below the catalog.
pub use crate::page::allocation::AllocationUnit;

/// The base-table reader: page access plus the layouts learned so far.
pub struct BaseTables {
    reader: PageReader,
    /// Every row of sysallocunits.
    pub allocation_units: Vec<AllocationUnit>,
    /// Rowset id → its physical columns, from sysrscols.
    pub layouts: HashMap<i64, RowsetLayout>,
    /// (object id, index id) → rowset ids, in partition order.
    pub rowsets_by_owner: HashMap<(i32, i32), Vec<i64>>,
    /// Base table object id → column names by column id.
    column_names: HashMap<i32, HashMap<i32, String>>,
}

/// A base table's rows, with its column names.
#[derive(Debug, Clone, Default)]
pub struct TableRows {
    /// Column names, in column id order.
    pub names: Vec<String>,
    /// The rows, one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl TableRows {
    /// The position of column `name`, its case ignored. Names are looked up for every value
    /// read, and SQL Server spells system columns as the callers do (lower case): the exact
    /// spelling is tried first (a plain byte comparison), any other case after.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names
            .iter()
            .position(|n| n == name)
            .or_else(|| self.names.iter().position(|n| n.eq_ignore_ascii_case(name)))
    }

    /// Iterates the rows with access by column name.
    pub fn iter(&self) -> impl Iterator<Item = RowRef<'_>> {
        self.rows.iter().map(move |values| RowRef { table: self, values })
    }

    /// Row `index`, with access by column name.
    pub fn row(&self, index: usize) -> Option<RowRef<'_>> {
        self.rows.get(index).map(|values| RowRef { table: self, values })
    }
}

/// One row of a base table, read by column name; a column the version lacks reads as NULL.
#[derive(Clone, Copy)]
pub struct RowRef<'a> {
    table: &'a TableRows,
    values: &'a [Value],
}

impl<'a> RowRef<'a> {
    /// The value of column `name`; NULL when the version's table has no such column.
    pub fn get(&self, name: &str) -> &'a Value {
        self.table.column(name).and_then(|i| self.values.get(i)).unwrap_or(&Value::Null)
    }

    /// The integer value of column `name`; 0 when NULL or absent.
    pub fn int(&self, name: &str) -> i64 {
        self.get(name).as_i64().unwrap_or(0)
    }

    /// The integer value of column `name`; `None` when NULL or absent.
    pub fn opt_int(&self, name: &str) -> Option<i64> {
        self.get(name).as_i64()
    }

    /// The text value of column `name`; empty when NULL or absent.
    pub fn text(&self, name: &str) -> &'a str {
        self.get(name).as_str().unwrap_or("")
    }
}

/// A column of a base table read row after row by name: found among the table's column names
/// on the first row, then read by position for every row of the same table. A view or a model
/// builder reads a dozen columns of every row, and a lookup by name compares strings (the
/// catalog's largest cost on a small database before this).
pub struct NamedColumn<'t> {
    name: &'static str,
    /// The table the name was last looked up in, and the position found there. Holding the
    /// table borrowed keeps its address from being reused by another table while cached.
    found: Cell<Option<(&'t TableRows, Option<usize>)>>,
}

impl<'t> NamedColumn<'t> {
    /// The column named `name` (case ignored, as [`TableRows::column`]).
    pub const fn new(name: &'static str) -> Self {
        NamedColumn { name, found: Cell::new(None) }
    }

    /// The value of this column in `row`; NULL when its table has no such column.
    pub fn get(&self, row: RowRef<'t>) -> &'t Value {
        let at = match self.found.get() {
            Some((table, at)) if std::ptr::eq(table, row.table) => at,
            _ => {
                let at = row.table.column(self.name);
                self.found.set(Some((row.table, at)));
                at
            }
        };
        at.and_then(|i| row.values.get(i)).unwrap_or(&Value::Null)
    }

    /// The integer value of this column in `row`; 0 when NULL or absent.
    pub fn int(&self, row: RowRef<'t>) -> i64 {
        self.get(row).as_i64().unwrap_or(0)
    }

    /// The text value of this column in `row`; empty when NULL or absent.
    pub fn text(&self, row: RowRef<'t>) -> &'t str {
        self.get(row).as_str().unwrap_or("")
    }
}

impl BaseTables {
    /// Reads sysallocunits, sysrscols, sysrowsets and the names in syscolpars.
    pub fn bootstrap(reader: PageReader, boot: &BootPage) -> Result<Self> {
        let mut tables = BaseTables {
            reader,
            allocation_units: Vec::new(),
            layouts: HashMap::new(),
            rowsets_by_owner: HashMap::new(),
            column_names: HashMap::new(),
        };
        let mut units = Vec::new();
        tables.scan_leaf_chain(boot.first_sys_indexes, SYSALLOCUNITS_AUID, "sys.sysallocunits", |record| {
            units.push(parse_allocation_unit_bootstrap(record)?);
            Ok(())
        })?;
        tables.allocation_units = units;

        if let Some(rscols) = tables.in_row_unit(SYSRSCOLS_AUID).map(|u| u.first_page) {
            tables.layouts = tables.read_sysrscols(rscols)?;
            tables.check_bootstrap_layout(SYSRSCOLS_AUID, "sys.sysrscols", &RSCOLS_BOOTSTRAP)?;
        } else {
            tables.layouts = tables.read_2005_layouts()?;
            tables.check_bootstrap_layout(SYSHOBTCOLUMNS_AUID, "sys.syshobtcolumns", &HOBTCOLS_BOOTSTRAP)?;
            tables.check_bootstrap_layout(SYSROWSETCOLUMNS_AUID, "sys.sysrowsetcolumns", &ROWSETCOLS_BOOTSTRAP)?;
        }
        tables.check_bootstrap_layout(SYSALLOCUNITS_AUID, "sys.sysallocunits", &ALLOCUNIT_BOOTSTRAP)?;

        // sysrowsets, by column id.
        let rowsets_layout = tables.layout(SYSROWSETS_AUID, "sys.sysrowsets")?.clone();
        let rowset_columns = pick_columns(&rowsets_layout, &ROWSETS_COLUMNS, "sys.sysrowsets")?;
        let first = tables
            .in_row_unit(SYSROWSETS_AUID)
            .map(|u| u.first_page)
            .ok_or_else(|| Error::corrupt("sys.sysallocunits has no allocation unit for sys.sysrowsets (5 << 16)"))?;
        let mut owners: Vec<((i32, i32), i64)> = Vec::new();
        tables.scan_leaf_chain(first, SYSROWSETS_AUID, "sys.sysrowsets", |record| {
            let v: Vec<Value> = rowset_columns.iter().map(|c| read_column(record, c)).collect::<Result<_>>()?;
            let int = |i: usize| v[i].as_i64().unwrap_or(0);
            owners.push(((int(2) as i32, int(3) as i32), int(0)));
            Ok(())
        })?;
        for (owner, rowset) in owners {
            tables.rowsets_by_owner.entry(owner).or_default().push(rowset);
        }

        // syscolpars names every base table's columns, including its own.
        let colpars_rowset = tables.clustered_rowset(SYSCOLPARS_ID, "sys.syscolpars")?;
        let colpars_layout = tables.layout(colpars_rowset, "sys.syscolpars")?.clone();
        let name_columns = pick_columns(&colpars_layout, &COLPARS_COLUMNS, "sys.syscolpars")?;
        let first = tables.first_page_of(colpars_rowset, "sys.syscolpars")?;
        let mut names: HashMap<i32, HashMap<i32, String>> = HashMap::new();
        tables.scan_leaf_chain(first, colpars_rowset, "sys.syscolpars", |record| {
            let v: Vec<Value> = name_columns.iter().map(|c| read_column(record, c)).collect::<Result<_>>()?;
            let (id, number, colid) =
                (v[0].as_i64().unwrap_or(0), v[1].as_i64().unwrap_or(0), v[2].as_i64().unwrap_or(0));
            // Base tables have object ids below 100; their columns have number 0.
            if (1..100).contains(&id) && number == 0 {
                names.entry(id as i32).or_default().insert(colid as i32, v[3].as_str().unwrap_or("").to_string());
            }
            Ok(())
        })?;
        for (id, table, expected) in
            [(SYSCOLPARS_ID, "sys.syscolpars", &COLPARS_COLUMNS), (5, "sys.sysrowsets", &ROWSETS_COLUMNS)]
        {
            for (name, colid) in expected.iter() {
                let found = names.get(&id).and_then(|m| m.get(colid)).map(String::as_str);
                if found.is_some_and(|f| !f.eq_ignore_ascii_case(name)) {
                    return Err(Error::unsupported(format!(
                        "{table} column {colid} is named {:?}, expected {name:?}: an on-disk layout this version of mdfkit does not know",
                        found.unwrap_or_default()
                    )));
                }
            }
        }
        tables.column_names = names;
        Ok(tables)
    }

    /// The physical layout of every rowset, from sysrscols (SQL Server 2008 on).
    fn read_sysrscols(&self, first: PageId) -> Result<HashMap<i64, RowsetLayout>> {
        let mut layouts: HashMap<i64, RowsetLayout> = HashMap::new();
        self.scan_leaf_chain(first, SYSRSCOLS_AUID, "sys.sysrscols", |record| {
            let (rowset, column) = parse_sysrscols_row(record)?;
            layouts.entry(rowset).or_default().columns.push(column);
            Ok(())
        })?;
        for layout in layouts.values_mut() {
            layout.columns.sort_by_key(|c| c.rowset_column_id);
        }
        Ok(layouts)
    }

    /// The physical layout of every rowset in a SQL Server 2005 database: each sysrowsetcolumns
    /// row joined with the syshobtcolumns row of its hobt column.
    fn read_2005_layouts(&self) -> Result<HashMap<i64, RowsetLayout>> {
        let first_of = |auid: i64, table: &str| {
            self.in_row_unit(auid).map(|u| u.first_page).ok_or_else(|| {
                Error::corrupt(format!(
                    "sys.sysallocunits has no allocation unit for sys.sysrscols (3 << 16), nor for {table} ({} << 16) as SQL Server 2005 has",
                    auid >> 16
                ))
            })
        };
        let hobts_first = first_of(SYSHOBTCOLUMNS_AUID, "sys.syshobtcolumns")?;
        let rowsets_first = first_of(SYSROWSETCOLUMNS_AUID, "sys.sysrowsetcolumns")?;
        let mut hobt_columns: HashMap<(i64, i32), PhysicalColumn> = HashMap::new();
        self.scan_leaf_chain(hobts_first, SYSHOBTCOLUMNS_AUID, "sys.syshobtcolumns", |record| {
            let (hobt, column) = parse_syshobtcolumns_row(record)?;
            hobt_columns.insert((hobt, column.hb_column_id), column);
            Ok(())
        })?;
        let mut layouts: HashMap<i64, RowsetLayout> = HashMap::new();
        self.scan_leaf_chain(rowsets_first, SYSROWSETCOLUMNS_AUID, "sys.sysrowsetcolumns", |record| {
            let c = parse_sysrowsetcolumns_row(record)?;
            let hobt_column = hobt_columns.get(&(c.rowset, c.hobt_column_id)).ok_or_else(|| {
                Error::corrupt(format!(
                    "rowset {} column {} is hobt column {}, which sys.syshobtcolumns lacks",
                    c.rowset, c.rowset_column_id, c.hobt_column_id
                ))
            })?;
            let column = PhysicalColumn {
                rowset_column_id: c.rowset_column_id,
                max_inrow_length: c.max_inrow_length,
                ..hobt_column.clone()
            };
            layouts.entry(c.rowset).or_default().columns.push(column);
            Ok(())
        })?;
        for layout in layouts.values_mut() {
            layout.columns.sort_by_key(|c| c.rowset_column_id);
        }
        Ok(layouts)
    }

    /// The page reader the base tables are read through.
    pub fn reader(&self) -> &PageReader {
        &self.reader
    }

    /// The in-row allocation unit owned by a rowset.
    pub fn in_row_unit(&self, rowset: i64) -> Option<&AllocationUnit> {
        self.allocation_units.iter().find(|u| u.owner_id == rowset && u.kind == 1)
    }

    fn layout(&self, rowset: i64, table: &str) -> Result<&RowsetLayout> {
        self.layouts
            .get(&rowset)
            .ok_or_else(|| Error::corrupt(format!("sys.sysrscols has no columns for rowset {rowset} ({table})")))
    }

    /// The rowset of a base table's clustered index (index id 1).
    pub fn clustered_rowset(&self, object_id: i32, table: &str) -> Result<i64> {
        self.rowsets_by_owner
            .get(&(object_id, 1))
            .and_then(|r| r.first().copied())
            .ok_or_else(|| Error::corrupt(format!("sys.sysrowsets has no rowset for {table} (object {object_id})")))
    }

    /// The first leaf page of a base table's rowset (checked, or found from the root when the
    /// recorded one is stale: see [`crate::scan::first_leaf`]).
    fn first_page_of(&self, rowset: i64, table: &str) -> Result<PageId> {
        let unit = self.in_row_unit(rowset).ok_or_else(|| {
            Error::corrupt(format!("sys.sysallocunits has no in-row allocation unit for {table} (rowset {rowset})"))
        })?;
        crate::scan::first_leaf(&self.reader, unit).map_err(|e| e.in_object(table))
    }
    /// Reads every row of the base table with object id `object_id`, columns named.
    pub fn read_table(&self, object_id: i32, table: &str) -> Result<TableRows> {
        let rowset = self.clustered_rowset(object_id, table)?;
        let layout = self.layout(rowset, table)?;
        let names = self.column_names.get(&object_id);
        let columns: Vec<&PhysicalColumn> = layout.columns.iter().filter(|c| !c.is_dropped()).collect();
        let column_names: Vec<String> = columns
            .iter()
            .map(|c| {
                names
                    .and_then(|n| n.get(&c.rowset_column_id))
                    .cloned()
                    .unwrap_or_else(|| format!("column{}", c.rowset_column_id))
            })
            .collect();
        let first = self.first_page_of(rowset, table)?;
        let mut rows = Vec::new();
        self.scan_leaf_chain(first, rowset, table, |record| {
            // One allocation a row: a collect through `Result` cannot size its vector up front.
            let mut row = Vec::with_capacity(columns.len());
            for c in &columns {
                row.push(read_column(record, c)?);
            }
            rows.push(row);
            Ok(())
        })?;
        Ok(TableRows { names: column_names, rows })
    }

    /// Walks a clustered index's leaf level from `first` along next-page links, calling `each`
    /// for every live data record.
    pub fn scan_leaf_chain(
        &self,
        first: PageId,
        allocation_unit: i64,
        table: &str,
        mut each: impl FnMut(&Record) -> Result<()>,
    ) -> Result<()> {
        let mut seen = HashSet::new();
        let mut next = first;
        while !next.is_null() {
            if !seen.insert(next) {
                return Err(Error::corrupt(format!("leaf page chain returns to page {next}: a cycle")).in_object(table));
            }
            let page = self.reader.read(next).map_err(|e| e.in_object(table))?;
            let header = page.header();
            if header.page_type != PageType::Data || header.level != 0 || header.allocation_unit_id() != allocation_unit
            {
                return Err(Error::corrupt(format!(
                    "expected a leaf data page of allocation unit {allocation_unit}, found a {} page (level {}) of allocation unit {}",
                    header.page_type.name(),
                    header.level,
                    header.allocation_unit_id()
                ))
                .at_page(next)
                .in_object(table));
            }
            for slot in 0..page.slot_count() {
                let Some(bytes) = page.slot_bytes(slot).map_err(|e| e.in_object(table))? else {
                    continue;
                };
                let status = bytes[0];
                if RecordType::from_status(status) != RecordType::Primary {
                    continue;
                }
                let record = Record::parse(bytes).map_err(|e| e.at_page(next).at_slot(slot).in_object(table))?;
                each(&record).map_err(|e| e.at_page(next).at_slot(slot).in_object(table))?;
            }
            next = header.next_page;
        }
        Ok(())
    }

    fn check_bootstrap_layout(&self, rowset: i64, table: &str, expected: &[(i32, i16)]) -> Result<()> {
        let layout = self.layout(rowset, table)?;
        for &(column, offset) in expected {
            let found = layout.column(column).map(|c| c.leaf_offset);
            if found != Some(offset) {
                return Err(Error::unsupported(format!(
                    "{table} column {column} is stored at offset {found:?}, mdfkit expects {offset}: an on-disk layout this version of mdfkit does not know"
                )));
            }
        }
        Ok(())
    }
}

/// The physical columns with the given column ids, in the given order.
fn pick_columns(layout: &RowsetLayout, wanted: &[(&str, i32)], table: &str) -> Result<Vec<PhysicalColumn>> {
    wanted
        .iter()
        .map(|&(name, id)| {
            layout
                .column(id)
                .cloned()
                .ok_or_else(|| Error::corrupt(format!("sys.sysrscols lacks column {id} ({name}) of {table}")))
        })
        .collect()
}

/// Decodes a sysallocunits row with the bootstrap offsets.
fn parse_allocation_unit_bootstrap(record: &Record) -> Result<AllocationUnit> {
    let short = || Error::corrupt("sysallocunits row's fixed part is shorter than every known version's");
    let b = record.fixed(4, 65).ok_or_else(short)?;
    let i64_at = |o: usize| i64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let page_at = |o: usize| PageId::from_bytes(&b[o..o + 6]).unwrap_or_default();
    Ok(AllocationUnit {
        id: i64_at(0),
        kind: b[8],
        owner_id: i64_at(9),
        filegroup_id: i16::from_le_bytes([b[21], b[22]]),
        first_page: page_at(23),
        root_page: page_at(29),
        first_iam_page: page_at(35),
        used_pages: i64_at(41),
        data_pages: i64_at(49),
        total_pages: i64_at(57),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_columns_by_name_any_case() {
        let names = ["id", "Name", "status", "a_column_name_longer_than_16", "a_column_name_longer_than_17", "Zz@[`{"];
        let rows = TableRows { names: names.iter().map(|n| n.to_string()).collect(), rows: Vec::new() };
        for (i, n) in names.iter().enumerate() {
            assert_eq!(rows.column(n), Some(i), "{n}");
            assert_eq!(rows.column(&n.to_ascii_uppercase()), Some(i), "{n} in upper case");
            assert_eq!(rows.column(&n.to_ascii_lowercase()), Some(i), "{n} in lower case");
        }
        // `@`, `[` neighbour `A`, `Z` and `` ` ``, `{` neighbour `a`, `z`: they have no other case.
        for absent in ["", "i", "idx", "name ", "zz`{`{", "a_column_name_longer_than_18", "ID\u{e9}"] {
            assert_eq!(rows.column(absent), None, "{absent}");
        }
    }

    #[test]
    fn fields_read_each_table_at_its_own_position() {
        let table = |names: &[&str], values: Vec<Value>| TableRows {
            names: names.iter().map(|n| n.to_string()).collect(),
            rows: vec![values.clone(), values],
        };
        let a = table(&["id", "name"], vec![Value::Int(7), Value::text("seven")]);
        let b = table(&["Name", "status", "ID"], vec![Value::text("nine"), Value::Int(1), Value::Int(9)]);
        let c = table(&["status"], vec![Value::Int(3)]);
        let (id, name) = (NamedColumn::new("id"), NamedColumn::new("name"));
        // Alternating tables: each read finds the column where that table has it.
        for _ in 0..2 {
            for row in a.iter() {
                assert_eq!((id.int(row), name.text(row)), (7, "seven"));
            }
            for row in b.iter() {
                assert_eq!((id.int(row), name.text(row)), (9, "nine"));
            }
            let row = c.row(1).unwrap();
            assert_eq!((id.get(row), name.text(row)), (&Value::Null, ""));
        }
    }
}
