//! `mdfkit demo`: the sample database forged, then shown by the other commands.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use mdfkit::export::{ExportFormat, ExportOptions};
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::{Database, Error};

use super::{export, info, schema, tables, Outcome};
use crate::output::Format;

/// `mdfkit demo`: forges the sample shop database, then shows it like a user would.
pub fn demo(dir: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("mdfkit-demo"));
    let started = Instant::now();
    let spec = mdfkit_forge::samples::demo();
    let files =
        mdfkit_forge::forge_to_dir(&spec, &dir).map_err(|e| Error::io(&dir, "cannot write the sample database", e))?;
    let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    println!(
        "== sample database written: {} ({} bytes, {:.2} s)",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
        bytes,
        started.elapsed().as_secs_f64()
    );
    println!("\n== mdfkit info {}", files[0].display());
    io::stdout().flush()?;
    info(&files, None, Format::Table)?;
    println!("\n== mdfkit tables {}", files[0].display());
    io::stdout().flush()?;
    tables(&files, None, false, Format::Table)?;
    compression_side_by_side(&files)?;
    let mut args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.push("dbo.Orders".into());
    println!("\n== mdfkit schema {} dbo.Orders", files[0].display());
    io::stdout().flush()?;
    schema(&args, None)?;
    let out = dir.join("export");
    println!("\n== mdfkit export {} --table dbo.Orders --format parquet -o {}", files[0].display(), out.display());
    io::stdout().flush()?;
    let options = ExportOptions { threads: mdfkit::export::all_cores(), ..ExportOptions::default() };
    export(&files, None, &["dbo.Orders".to_string()], false, Some(ExportFormat::Parquet), &out, &options)?;
    println!("\nfiles: database {}, Parquet {}", dir.display(), out.join("dbo.Orders.parquet").display());
    println!("try:   mdfkit cat {} sales.EventLog --limit 5", files[0].display());
    Ok(())
}

/// The sample's one table stored three times (plain, ROW, PAGE): pages used side by side, and
/// whether the compressed copies read the rows of the plain one.
fn compression_side_by_side(files: &[PathBuf]) -> Outcome {
    println!("\n== one table three times: uncompressed, ROW and PAGE compressed");
    let db = Database::open(files)?;
    let rows_of = |name: &str| -> mdfkit::Result<(i64, Vec<Vec<Value>>)> {
        let table =
            db.catalog().find_table(name).ok_or_else(|| Error::not_found(format!("no table {name} in the sample")))?;
        let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None)?;
        let (mut rows, mut values) = (Vec::new(), Vec::new());
        db.scan(&table).records(|record, _| {
            decoder.decode(record, &mut values)?;
            rows.push(values.clone());
            Ok(Flow::Continue)
        })?;
        Ok((table.used_pages(), rows))
    };
    let (plain_pages, plain) = rows_of("sales.Readings")?;
    println!("{:<20} {:>6} pages  {:>6} rows", "sales.Readings", plain_pages, plain.len());
    for name in ["sales.ReadingsRow", "sales.ReadingsPage"] {
        let (pages, rows) = rows_of(name)?;
        let same = if rows == plain { "the same rows" } else { "DIFFERENT rows" };
        let share = 100.0 * pages as f64 / plain_pages.max(1) as f64;
        println!("{name:<20} {pages:>6} pages  {:>6} rows  ({share:.0}% of the pages, {same})", rows.len());
    }
    Ok(())
}
