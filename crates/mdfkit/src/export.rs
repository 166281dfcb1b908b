//! Writing a table out: Parquet, Arrow IPC, CSV and JSON Lines, streaming with bounded memory.
//!
//! Parquet and Arrow IPC are written from Arrow batches ([`crate::columnar`]), with the exact
//! logical types listed there (Parquet compressed with zstd). CSV and JSON Lines use the values'
//! SQL Server spellings (`19.9900`, `2012-03-15 00:00:00.000`, upper-case GUIDs, `0x…` binary);
//! in CSV a NULL is an empty field, in JSON Lines `null`, integers are JSON numbers and everything
//! else a string.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::catalog::model::TableInfo;
use crate::database::{Database, ScanOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::scan::Flow;
use crate::value::Value;

/// Arrow bytes at which a Parquet row group is written out.
const ROW_GROUP_BYTES: usize = 32 << 20;
/// Distinct values a Parquet column chunk's dictionary may hold before the column is written plain.
const DICTIONARY_BYTES: usize = 64 << 10;
/// Rows at which a Parquet row group is written out (`ArrowWriter`'s default).
const ROW_GROUP_ROWS: usize = 1 << 20;

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
            let schema = db.arrow_schema(table, columns)?;
            std::thread::scope(|scope| -> Result<crate::scan::ScanStats> {
                let mut parquet = ParquetOutput::new(scope, file, schema, threads)?;
                let stats = db.scan_batches_parallel(table, &options, threads, |batch| {
                    rows += batch.num_rows() as u64;
                    parquet.write(&batch)?;
                    progress(rows);
                    Ok(Flow::Continue)
                })?;
                parquet.close()?;
                Ok(stats)
            })?
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
            let mut field = String::new();
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
                        for (i, value) in values.iter().enumerate() {
                            if i > 0 {
                                line.push(',');
                            }
                            if !value.is_null() {
                                // One spelling buffer for every value of the export.
                                field.clear();
                                write!(field, "{value}").map_err(|e| Error::corrupt(e.to_string()))?;
                                push_csv_field(&mut line, &field);
                            }
                        }
                        line.push('\n');
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

/// A Parquet file whose column chunks are encoded on `threads` threads: leaf column `i` of each
/// row group goes to encoder `i % threads`, fed batch by batch over small channels, so a row
/// group is never held unencoded. (`ArrowWriter` encodes every column on the calling thread.)
struct ParquetOutput<'f, 's, 'e> {
    writer: SerializedFileWriter<&'f mut Output>,
    scope: &'s std::thread::Scope<'s, 'e>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    threads: usize,
    row_groups: usize,
    /// The encoders of the row group being written (empty between row groups).
    encoders: Vec<Encoder<'s>>,
    /// Arrow bytes and rows sent to the current row group.
    group_bytes: usize,
    group_rows: usize,
}

/// One encoding thread: the leaves it is sent, and the chunks it returns when its channel closes.
struct Encoder<'s> {
    leaves: std::sync::mpsc::SyncSender<(usize, ArrowLeafColumn)>,
    done: std::thread::ScopedJoinHandle<'s, parquet::errors::Result<Vec<(usize, ArrowColumnChunk)>>>,
}

impl<'f, 's, 'e> ParquetOutput<'f, 's, 'e> {
    fn new(
        scope: &'s std::thread::Scope<'s, 'e>,
        file: &'f mut Output,
        schema: SchemaRef,
        threads: usize,
    ) -> Result<Self> {
        // zstd level 1: within a few percent of level 3's size on table data, at a fraction of
        // the time. Dictionaries stay on for columns with few distinct values (they make them
        // small), but a column gives up on its dictionary after 64 KB of distinct values instead
        // of 1 MB: hashing every value of a high-cardinality column was a quarter of the export.
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
            .set_dictionary_page_size_limit(DICTIONARY_BYTES)
            .build();
        // `ArrowWriter` sets up the file (schema, Arrow schema in the metadata); its parts then
        // let columns be encoded apart.
        let (writer, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet_error)?;
        Ok(ParquetOutput {
            writer,
            scope,
            factory,
            schema,
            threads: threads.max(1),
            row_groups: 0,
            encoders: Vec::new(),
            group_bytes: 0,
            group_rows: 0,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.encoders.is_empty() {
            self.start_row_group()?;
        }
        let mut leaf_index = 0;
        for (array, field) in batch.columns().iter().zip(self.schema.fields()) {
            for leaf in compute_leaves(field, array).map_err(parquet_error)? {
                let encoder = &self.encoders[leaf_index % self.encoders.len()];
                if encoder.leaves.send((leaf_index, leaf)).is_err() {
                    // The encoder stopped on an error: finishing the row group reports it.
                    return self.finish_row_group();
                }
                leaf_index += 1;
            }
        }
        self.group_bytes += batch.get_array_memory_size();
        self.group_rows += batch.num_rows();
        // LOB tables would otherwise gather a million rows of large values in one row group.
        if self.group_bytes >= ROW_GROUP_BYTES || self.group_rows >= ROW_GROUP_ROWS {
            self.finish_row_group()?;
        }
        Ok(())
    }

    fn start_row_group(&mut self) -> Result<()> {
        let mut writers: Vec<Option<ArrowColumnWriter>> =
            self.factory.create_column_writers(self.row_groups).map_err(parquet_error)?.into_iter().map(Some).collect();
        let encoders = self.threads.min(writers.len()).max(1);
        for e in 0..encoders {
            let mine: Vec<(usize, ArrowColumnWriter)> =
                (e..writers.len()).step_by(encoders).filter_map(|i| writers[i].take().map(|w| (i, w))).collect();
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, ArrowLeafColumn)>(1);
            let done = self.scope.spawn(move || {
                let mut mine = mine;
                for (index, leaf) in rx {
                    if let Some((_, writer)) = mine.iter_mut().find(|(i, _)| *i == index) {
                        writer.write(&leaf)?;
                    }
                }
                mine.into_iter().map(|(i, w)| Ok((i, w.close()?))).collect()
            });
            self.encoders.push(Encoder { leaves: tx, done });
        }
        Ok(())
    }

    /// Waits for the encoders and writes their column chunks, in column order, as a row group.
    fn finish_row_group(&mut self) -> Result<()> {
        if self.encoders.is_empty() {
            return Ok(());
        }
        let mut chunks = Vec::new();
        let mut failure = None;
        for Encoder { leaves, done } in self.encoders.drain(..) {
            drop(leaves);
            match done.join() {
                Ok(Ok(c)) => chunks.extend(c),
                Ok(Err(e)) => failure = failure.or(Some(parquet_error(e))),
                Err(_) => failure = failure.or(Some(Error::new(ErrorKind::Io, "a Parquet encoding thread panicked"))),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        chunks.sort_by_key(|(i, _)| *i);
        let mut group = self.writer.next_row_group().map_err(parquet_error)?;
        for (_, chunk) in chunks {
            chunk.append_to_row_group(&mut group).map_err(parquet_error)?;
        }
        group.close().map_err(parquet_error)?;
        self.row_groups += 1;
        self.group_bytes = 0;
        self.group_rows = 0;
        Ok(())
    }

    fn close(mut self) -> Result<()> {
        self.finish_row_group()?;
        self.writer.close().map_err(parquet_error)?;
        Ok(())
    }
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
        if let Some(f) = field {
            push_csv_field(line, f);
        }
    }
    line.push('\n');
}

/// Appends one CSV field, quoted only when it holds a comma, a quote or a line break.
fn push_csv_field(line: &mut String, f: &str) {
    if f.contains([',', '"', '\n', '\r']) {
        line.push('"');
        for (i, part) in f.split('"').enumerate() {
            if i > 0 {
                line.push_str("\"\"");
            }
            line.push_str(part);
        }
        line.push('"');
    } else {
        line.push_str(f);
    }
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
            Value::Int(v) => {
                let _ = write!(line, "{v}");
            }
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
