//! Opens a database and prints its description of itself and its user tables (what `mdfkit info`
//! and `mdfkit tables` show, in short):
//!
//! ```sh
//! cargo run -p mdfkit --example open -- db.mdf [more.ndf ...]   # or the stripes of a .bak
//! cargo run -p mdfkit --example open                            # the demo's shop database
//! ```
//!
//! With no argument it forges the demo's shop database (`mdfkit-forge`, SQL Server 2019's format)
//! into a temporary folder and opens that, so it runs on a machine without SQL Server files.

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;

use mdfkit::Database;

fn main() -> Result<(), Box<dyn Error>> {
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        let dir = std::env::temp_dir().join("mdfkit-example-open");
        paths = mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::shop(), &dir)?;
        eprintln!("no file given: opening the demo's shop database, forged into {}", dir.display());
    }
    describe(&paths, &mut std::io::stdout().lock())
}

/// Writes the database's name, versions and sizes, then one line per user table.
fn describe(paths: &[PathBuf], out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    // The files may come in any order: each is identified by the file id in its own header.
    let db = Database::open(paths)?;
    let info = db.info()?;
    writeln!(out, "database       {}", info.name)?;
    writeln!(out, "version        {} ({})", info.version, info.product)?;
    writeln!(out, "compatibility  {}", info.compatibility_level)?;
    writeln!(out, "collation      {}", info.collation)?;
    writeln!(out, "recovery model {}", info.recovery_model)?;
    writeln!(out, "pages          {} in the files, {} used", info.pages_in_files, info.pages_used)?;
    for missing in &info.missing_files {
        writeln!(out, "not given      file {} ({})", missing.file_id, missing.physical_name)?;
    }
    // Row counts are the catalog's (sys.partitions.rows): no page of the table is read.
    for table in db.catalog().tables(false) {
        let layout = if table.is_heap { "heap" } else { "clustered" };
        writeln!(
            out,
            "{:<30} {:>10} rows {:>8} pages  {layout}",
            table.qualified_name(),
            table.rows(),
            table.used_pages()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_the_forged_shop_as_it_was_forged() {
        let dir = std::env::temp_dir().join(format!("mdfkit-example-open-test-{}", std::process::id()));
        let spec = mdfkit_forge::samples::shop();
        let paths = mdfkit_forge::forge_to_dir(&spec, &dir).unwrap();
        let mut out = Vec::new();
        describe(&paths, &mut out).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("database       shop\nversion        904 (SQL Server 2019)\n"), "{text}");
        for (i, table) in spec.tables.iter().enumerate() {
            let name = format!("{}.{}", table.schema, table.name);
            let line = text
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name.as_str()))
                .unwrap_or_else(|| panic!("{name} not listed: {text}"));
            let rows = mdfkit_forge::live_rows(&spec, i).count();
            assert!(line.contains(&format!(" {rows} rows ")), "{line}");
        }
    }
}
