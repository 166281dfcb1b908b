//! `mdfkit export`: [`mdfkit::export::export_tables`] (or, for Delta Lake tables,
//! [`mdfkit::export::delta::export_delta_tables`]) into the destination `-o` names, with a
//! progress bar per table and a line per table on stderr.

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use mdfkit::catalog::model::TableInfo;
use mdfkit::export::delta::export_delta_tables;
use mdfkit::export::{export_tables, ExportEvent, ExportFormat, ExportOptions};
use mdfkit::Error;

use super::{Failure, Outcome};

pub fn export(
    files: &[PathBuf],
    position: Option<u16>,
    names: &[String],
    all: bool,
    // `None`: Delta Lake tables.
    format: Option<ExportFormat>,
    output: &Path,
    options: &ExportOptions,
) -> Outcome {
    let columns = options.columns.as_deref();
    if names.is_empty() && !all {
        return Err(Error::not_found("name the tables to export with --table, or use --all").into());
    }
    if columns.is_some() && names.len() != 1 {
        return Err(Error::not_found("--columns goes with exactly one --table").into());
    }
    let db = if options.salvage {
        crate::chain::open_for_salvage(files, position)?
    } else {
        crate::chain::open(files, position)?
    };
    let catalog = db.catalog();
    let tables = if all {
        catalog.tables(false)
    } else {
        names
            .iter()
            .map(|n| {
                catalog
                    .find_table(n)
                    .ok_or_else(|| Error::not_found(format!("no table named {n}; `mdfkit tables` lists them")))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    // An object URL is a prefix: each table is uploaded as PREFIX/SCHEMA.TABLE.EXT.
    let uploading = output.to_str().is_some_and(mdfkit_cloud::is_url);
    let destination = mdfkit_cloud::export::destination(output)?;
    let terminal = io::stderr().is_terminal();
    let (mut bar, mut uploaded_before) = (ProgressBar::hidden(), 0);
    let on_event = |event: ExportEvent<'_>| match event {
        ExportEvent::Started(t) => {
            bar = if terminal { progress_bar(t, uploading) } else { ProgressBar::hidden() };
            uploaded_before = mdfkit_cloud::writer::bytes_uploaded();
        }
        ExportEvent::Rows(n) => {
            bar.set_position(n);
            if uploading {
                let uploaded = mdfkit_cloud::writer::bytes_uploaded() - uploaded_before;
                bar.set_prefix(indicatif::HumanBytes(uploaded).to_string());
            }
        }
        ExportEvent::Finished(done) => {
            bar.finish_and_clear();
            match &done.result {
                Ok(stats) => {
                    eprintln!(
                        "{:<40} {:>10} rows {:>12} bytes  {}",
                        done.table,
                        stats.rows,
                        stats.bytes,
                        stats.location.display()
                    );
                    if let Some(report) = &done.skip_report {
                        eprintln!("  {} damaged pages or records skipped: {}", stats.skipped.len(), report.display());
                    }
                }
                Err(e) => eprintln!("mdfkit: skipped {e}"),
            }
        }
    };
    let report = match format {
        Some(format) => export_tables(&db, &tables, format, destination.as_ref(), options, on_event)?,
        None => export_delta_tables(&db, &tables, destination.as_ref(), options, None, on_event)?,
    };
    let rows: u64 = report.written().map(|s| s.rows).sum();
    let bytes: u64 = report.written().map(|s| s.bytes).sum();
    let failed = report.failed();
    eprintln!(
        "exported {} of {} tables, {rows} rows, {bytes} bytes in {:.2} s ({:.0} rows/s)",
        tables.len() - failed.len(),
        tables.len(),
        report.seconds,
        rows as f64 / report.seconds.max(1e-9)
    );
    if failed.is_empty() {
        Ok(())
    } else {
        eprintln!("not exported: {}", failed.join(", "));
        Err(Failure::Partial)
    }
}

/// A table's export bar: rows, and for an upload the bytes the store has taken (in the prefix).
fn progress_bar(t: &TableInfo, uploading: bool) -> ProgressBar {
    let bar = ProgressBar::new(t.rows().max(0) as u64);
    let template = if uploading {
        "{msg:30} [{bar:30}] {pos}/{len} rows {per_sec}, {prefix} uploaded ETA {eta}"
    } else {
        "{msg:30} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}"
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "),
    );
    bar.set_message(t.qualified_name());
    bar
}
