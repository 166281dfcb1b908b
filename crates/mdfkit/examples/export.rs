//! Exports every user table of a database to Parquet (or CSV, JSON Lines, Arrow IPC), one file
//! per table named `SCHEMA.TABLE.EXT`, with the library's export API (what `mdfkit export --all`
//! does):
//!
//! ```sh
//! cargo run -p mdfkit --example export -- db.mdf [more.ndf ...] out/ [parquet|csv|jsonl|arrow]
//! cargo run -p mdfkit --example export     # the demo's shop database, to CSV in a temp folder
//! ```
//!
//! With no argument it forges the demo's shop database (`mdfkit-forge`) into a temporary folder
//! and exports it to CSV (its `sales.EventLog` holds datetime2(7) values outside the years
//! 1677-2262 that Arrow's nanosecond timestamps, hence Parquet and Arrow IPC, can hold).

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

use mdfkit::export::{all_cores, export_tables, ExportEvent, ExportFormat, ExportOptions, LocalFolder};
use mdfkit::Database;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let format = match args.last().map(String::as_str) {
        Some("parquet" | "csv" | "jsonl" | "arrow") => args.pop().as_deref().map(parse_format),
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if args.len() < 2 {
        let dir = std::env::temp_dir().join("mdfkit-example-export");
        let paths = mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::shop(), &dir)?;
        eprintln!("no file and folder given: the demo's shop database, forged into {}", dir.display());
        return export(&paths, &dir.join("out"), format.unwrap_or(ExportFormat::Csv), &mut out);
    }
    let format = format.unwrap_or(ExportFormat::Parquet);
    let folder = PathBuf::from(args.pop().unwrap_or_default());
    let paths: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    export(&paths, &folder, format, &mut out)
}

fn parse_format(name: &str) -> ExportFormat {
    match name {
        "csv" => ExportFormat::Csv,
        "jsonl" => ExportFormat::Jsonl,
        "arrow" => ExportFormat::Arrow,
        _ => ExportFormat::Parquet,
    }
}

/// Writes every user table into `folder` and a line per table to `out`. A table that fails
/// leaves no file and does not stop the others; the run fails at the end if any did.
fn export(paths: &[PathBuf], folder: &Path, format: ExportFormat, out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    let db = Database::open(paths)?;
    let tables = db.catalog().tables(false);
    // Decoding on every core; Parquet compressed with zstd (ExportOptions::compression).
    let options = ExportOptions { threads: all_cores(), ..Default::default() };
    let destination = LocalFolder::create(folder)?;
    let mut write_error = None;
    let report = export_tables(&db, &tables, format, &destination, &options, |event| {
        if let ExportEvent::Finished(table) = event {
            let line = match &table.result {
                Ok(stats) => format!("{:<30} {:>10} rows -> {}", table.table, stats.rows, stats.location.display()),
                Err(e) => format!("{:<30} not exported: {e}", table.table),
            };
            if let Err(e) = writeln!(out, "{line}") {
                write_error.get_or_insert(e);
            }
        }
    })?;
    if let Some(e) = write_error {
        return Err(e.into());
    }
    match report.failed().as_slice() {
        [] => Ok(()),
        failed => Err(format!("not exported: {}", failed.join(", ")).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("mdfkit-example-export-{name}-{}", std::process::id()))
    }

    #[test]
    fn exports_each_forged_table_to_csv_with_every_row() {
        let dir = scratch("csv");
        let spec = mdfkit_forge::samples::shop();
        let paths = mdfkit_forge::forge_to_dir(&spec, &dir).unwrap();
        let mut out = Vec::new();
        export(&paths, &dir.join("out"), ExportFormat::Csv, &mut out).unwrap();
        for (i, table) in spec.tables.iter().enumerate() {
            let file = dir.join("out").join(format!("{}.{}.csv", table.schema, table.name));
            let csv = std::fs::read_to_string(&file).unwrap();
            let header = table.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(",");
            assert_eq!(csv.lines().next(), Some(header.as_str()));
            // The forge's text is words and spaces: no quoted line breaks, one line per row.
            assert_eq!(csv.lines().count() - 1, mdfkit_forge::live_rows(&spec, i).count(), "{}", file.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), spec.tables.len());
    }

    #[test]
    fn exports_each_forged_table_to_parquet_with_every_row() {
        let dir = scratch("parquet");
        let mut spec = mdfkit_forge::samples::shop();
        // sales.EventLog's datetime2(7) values are out of Timestamp(ns)'s range (see the top).
        spec.tables.retain(|t| t.schema == "dbo");
        let paths = mdfkit_forge::forge_to_dir(&spec, &dir).unwrap();
        let mut out = Vec::new();
        export(&paths, &dir.join("out"), ExportFormat::Parquet, &mut out).unwrap();
        // Each file's row count from its own Parquet footer, against the rows the forge wrote.
        for (i, table) in spec.tables.iter().enumerate() {
            let file = dir.join("out").join(format!("{}.{}.parquet", table.schema, table.name));
            let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
            let rows = mdfkit_forge::live_rows(&spec, i).count() as i64;
            assert_eq!(reader.metadata().file_metadata().num_rows(), rows, "{}", file.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
