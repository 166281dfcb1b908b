//! `mdfkit demo`: the sample database forged, then shown by the other commands.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use mdfkit::export::{ExportFormat, ExportOptions};
use mdfkit::Error;

use super::{export, info, schema, tables, Outcome};
use crate::output::Format;

/// `mdfkit demo`: forges the sample shop database, then shows it like a user would.
pub fn demo(dir: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("mdfkit-demo"));
    let started = Instant::now();
    let spec = mdfkit_forge::samples::shop();
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
    let mut args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.push("dbo.Orders".into());
    println!("\n== mdfkit schema {} dbo.Orders", files[0].display());
    io::stdout().flush()?;
    schema(&args, None)?;
    let out = dir.join("export");
    println!("\n== mdfkit export {} --table dbo.Orders --format parquet -o {}", files[0].display(), out.display());
    io::stdout().flush()?;
    let options = ExportOptions { threads: mdfkit::export::all_cores(), ..ExportOptions::default() };
    export(&files, None, &["dbo.Orders".to_string()], false, ExportFormat::Parquet, &out, &options)?;
    println!("\nfiles: database {}, Parquet {}", dir.display(), out.join("dbo.Orders.parquet").display());
    println!("try:   mdfkit cat {} sales.EventLog --limit 5", files[0].display());
    Ok(())
}
