//! The catalog's commands: `tables`, `sys` (any catalog view or system base table) and `schema`
//! (CREATE TABLE statements).

use std::io::Write;
use std::path::PathBuf;

use mdfkit::catalog::model::TableInfo;
use mdfkit::value::Value;
use mdfkit::Error;

use super::{split_files_and_name, stdout, Outcome};
use crate::output::{write_rows, Format};

pub fn tables(files: &[PathBuf], position: Option<u16>, system: bool, format: Format) -> Outcome {
    let db = crate::chain::open(files, position)?;
    let columns: Vec<String> = TableInfo::LISTING_COLUMNS.iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<Value>> = db.tables_counted(system)?.iter().map(TableInfo::listing_row).collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}

pub fn sys(args: &[String], position: Option<u16>, format: Format) -> Outcome {
    let (files, view) = split_files_and_name(args, true);
    let db = crate::chain::open(&files, position)?;
    let rows = db.catalog().view(view.as_deref().unwrap_or_default())?;
    let mut out = stdout();
    write_rows(&mut out, format, &rows.columns, &rows.rows)?;
    out.flush()?;
    Ok(())
}

pub fn schema(args: &[String], position: Option<u16>) -> Outcome {
    let (files, table) = split_files_and_name(args, false);
    let db = crate::chain::open(&files, position)?;
    let catalog = db.catalog();
    let tables = match &table {
        Some(name) => vec![catalog
            .find_table(name)
            .ok_or_else(|| Error::not_found(format!("no table named {name}; `mdfkit tables` lists them")))?],
        None => catalog.tables(false),
    };
    let mut out = stdout();
    for t in &tables {
        writeln!(out, "{}", catalog.create_table_sql(t))?;
    }
    out.flush()?;
    Ok(())
}
