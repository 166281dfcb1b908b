//! Writing a table out: Parquet, Arrow IPC, CSV and JSON Lines, streaming with bounded memory.
//!
//! Parquet and Arrow IPC are written from Arrow batches ([`crate::columnar`]), with the exact
//! logical types listed there (Parquet compressed with zstd). CSV and JSON Lines use the values'
//! SQL Server spellings (`19.9900`, `2012-03-15 00:00:00.000`, upper-case GUIDs, `0x…` binary);
//! in CSV a NULL is an empty field, in JSON Lines `null`, integers are JSON numbers and everything
//! else a string.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use arrow_ipc::writer::StreamWriter;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::catalog::model::TableInfo;
use crate::database::{Database, ScanOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::scan::Flow;
use crate::value::Value;

/// In-memory size at which a Parquet row group is written out.
const ROW_GROUP_BYTES: usize = 64 << 20;

/// Output formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
    Csv,
    Jsonl,
    /// Arrow IPC stream.
    Arrow,
}

impl ExportFormat {
    /// The file extension for this format.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Parquet => "parquet",
            ExportFormat::Csv => "csv",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Arrow => "arrows",
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportStats {
    pub rows: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Ghost (deleted) records skipped.
    pub ghost_records: u64,
    /// Damaged pages and records a salvage export skipped.
    pub skipped: Vec<crate::scan::Skipped>,
}

/// How to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Only these columns (all stored columns when `None`).
    pub columns: Option<Vec<String>>,
    /// Decoding threads for Parquet and Arrow IPC (their rows then come in page allocation order).
    pub threads: usize,
    /// Skip damaged pages and records; they are listed in [`ExportStats::skipped`].
    pub salvage: bool,
}

/// Writes `table` to `path` in `format`, calling `progress` with the rows written so far.
pub fn export_table(
    db: &Database,
    table: &TableInfo,
    format: ExportFormat,
    path: &Path,
    export: &ExportOptions,
    mut progress: impl FnMut(u64),
) -> Result<ExportStats> {
    let started = Instant::now();
    let mut out = Output::create(path)?;
    let written = write_table(db, table, format, path, export, &mut out, &mut progress);
    let (rows, scan) = match written {
        Ok(r) => r,
        Err(e) => {
            out.abort();
            return Err(e);
        }
    };
    let bytes = out.finish(path)?;
    Ok(ExportStats {
        rows,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        ghost_records: scan.ghost_records,
        skipped: scan.skipped,
    })
}

/// Where an export's bytes go: a local file, or with the `cloud` feature a streaming upload to
/// an object URL (visible only once finished; aborted on failure).
enum Output {
    File(File),
    #[cfg(feature = "cloud")]
    Upload(Box<crate::cloud::writer::Upload>),
}

impl Output {
    fn create(path: &Path) -> Result<Self> {
        #[cfg(feature = "cloud")]
        if let Some(url) = path.to_str().filter(|s| crate::cloud::is_url(s)) {
            return Ok(Output::Upload(Box::new(crate::cloud::writer::Upload::create(url)?)));
        }
        crate::source::refuse_url_without_cloud(path)?;
        Ok(Output::File(File::create(path).map_err(|e| Error::io(path, "cannot create", e))?))
    }

    /// Completes the output; returns its size in bytes.
    fn finish(self, path: &Path) -> Result<u64> {
        match self {
            Output::File(f) => {
                drop(f);
                Ok(std::fs::metadata(path).map(|m| m.len()).unwrap_or(0))
            }
            #[cfg(feature = "cloud")]
            Output::Upload(u) => u.finish(),
        }
    }

    fn abort(self) {
        match self {
            Output::File(_) => {}
            #[cfg(feature = "cloud")]
            Output::Upload(u) => u.abort(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::File(f) => f.write(buf),
            #[cfg(feature = "cloud")]
            Output::Upload(u) => u.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::File(f) => f.flush(),
            #[cfg(feature = "cloud")]
            Output::Upload(u) => u.flush(),
        }
    }
}

/// Writes the table's rows to `file`; returns the rows written and the scan's statistics.
fn write_table(
    db: &Database,
    table: &TableInfo,
    format: ExportFormat,
    path: &Path,
    export: &ExportOptions,
    file: &mut Output,
    progress: &mut impl FnMut(u64),
) -> Result<(u64, crate::scan::ScanStats)> {
    let io = |e: std::io::Error| Error::io(path, "cannot write", e);
    let columns = export.columns.as_deref();
    let threads = export.threads.max(1);
    let options = ScanOptions { columns: export.columns.clone(), salvage: export.salvage, ..ScanOptions::default() };
    let mut rows = 0u64;
    let scan = match format {
        ExportFormat::Parquet => {
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
                .build();
            let schema = db.arrow_schema(table, columns)?;
            let mut writer = ArrowWriter::try_new(file, schema, Some(props)).map_err(parquet_error)?;
            let stats = db.scan_batches_parallel(table, &options, threads, |batch| {
                rows += batch.num_rows() as u64;
                writer.write(&batch).map_err(parquet_error)?;
                // Close the row group once it holds this much: LOB tables would otherwise buffer a
                // million rows of large values before writing any.
                if writer.in_progress_size() >= ROW_GROUP_BYTES {
                    writer.flush().map_err(parquet_error)?;
                }
                progress(rows);
                Ok(Flow::Continue)
            })?;
            writer.close().map_err(parquet_error)?;
            stats
        }
        ExportFormat::Arrow => {
            let schema = db.arrow_schema(table, columns)?;
            let mut writer = StreamWriter::try_new(BufWriter::new(file), &schema).map_err(arrow_error)?;
            let stats = db.scan_batches_parallel(table, &options, threads, |batch| {
                rows += batch.num_rows() as u64;
                writer.write(&batch).map_err(arrow_error)?;
                progress(rows);
                Ok(Flow::Continue)
            })?;
            writer.finish().map_err(arrow_error)?;
            stats
        }
        ExportFormat::Csv | ExportFormat::Jsonl => {
            let mut out = BufWriter::new(file);
            let mut values = Vec::new();
            let mut line = String::new();
            let mut total = crate::scan::ScanStats::default();
            for partition in &table.partitions {
                let decoder = db.row_decoder(table, partition.partition_id, columns)?;
                let names: Vec<String> = decoder.columns().iter().map(|c| c.column.name.clone()).collect();
                if rows == 0 && format == ExportFormat::Csv {
                    line.clear();
                    write_csv_row(&mut line, names.iter().map(|n| Some(n.as_str())));
                    out.write_all(line.as_bytes()).map_err(io)?;
                }
                let mode = crate::scan::ScanMode { salvage: export.salvage, ..Default::default() };
                let stats = db.for_each_record_in_partition(table, partition, mode, |record, _| {
                    decoder.decode(record, &mut values)?;
                    line.clear();
                    if format == ExportFormat::Csv {
                        let texts: Vec<Option<String>> =
                            values.iter().map(|v| (!v.is_null()).then(|| v.to_string())).collect();
                        write_csv_row(&mut line, texts.iter().map(|t| t.as_deref()));
                    } else {
                        write_json_object(&mut line, &names, &values);
                    }
                    out.write_all(line.as_bytes()).map_err(io)?;
                    rows += 1;
                    if rows.is_multiple_of(65_536) {
                        progress(rows);
                    }
                    Ok(Flow::Continue)
                })?;
                total += stats;
            }
            out.flush().map_err(io)?;
            progress(rows);
            total
        }
    };
    Ok((rows, scan))
}

fn parquet_error(e: parquet::errors::ParquetError) -> Error {
    Error::new(ErrorKind::Io, format!("writing Parquet: {e}"))
}

fn arrow_error(e: arrow_schema::ArrowError) -> Error {
    Error::new(ErrorKind::Io, format!("writing Arrow IPC: {e}"))
}

/// Appends one CSV line (RFC 4180 quoting; `None` is an empty field).
pub fn write_csv_row<'a>(line: &mut String, fields: impl Iterator<Item = Option<&'a str>>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            line.push(',');
        }
        let Some(f) = field else { continue };
        if f.contains([',', '"', '\n', '\r']) {
            line.push('"');
            line.push_str(&f.replace('"', "\"\""));
            line.push('"');
        } else {
            line.push_str(f);
        }
    }
    line.push('\n');
}

/// Appends one JSON object line: integers as numbers, NULL as null, the rest as strings.
pub fn write_json_object(line: &mut String, names: &[String], values: &[Value]) {
    line.push('{');
    for (i, (name, value)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            line.push(',');
        }
        json_string(line, name);
        line.push(':');
        match value {
            Value::Null => line.push_str("null"),
            Value::Int(v) => line.push_str(&v.to_string()),
            other => json_string(line, &other.to_string()),
        }
    }
    line.push_str("}\n");
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let mut line = String::new();
        write_csv_row(&mut line, [Some("a"), None, Some("b,\"c\""), Some("")].into_iter());
        assert_eq!(line, "a,,\"b,\"\"c\"\"\",\n");
    }

    #[test]
    fn json_lines_escape_and_type_values() {
        let mut line = String::new();
        let names = vec!["id".to_string(), "name".to_string(), "gone".to_string()];
        write_json_object(&mut line, &names, &[Value::Int(7), Value::text("a\"b\n\u{1}"), Value::Null]);
        assert_eq!(line, "{\"id\":7,\"name\":\"a\\\"b\\n\\u0001\",\"gone\":null}\n");
    }
}
