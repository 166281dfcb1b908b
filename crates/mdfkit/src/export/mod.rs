//! Writing a table out: Parquet, Arrow IPC, CSV and JSON Lines, streaming with bounded memory.
//!
//! Parquet and Arrow IPC are written from Arrow batches ([`crate::columnar`]), with the exact
//! logical types listed there (Parquet compressed with zstd by default). CSV and JSON Lines use the values'
//! SQL Server spellings (`19.9900`, `2012-03-15 00:00:00.000`, upper-case GUIDs, `0x…` binary);
//! in CSV a NULL is an empty field, in JSON Lines `null`, integers are JSON numbers and everything
//! else a string.
//!
//! Where the bytes go is not this module's business: a table is written to an [`ExportOutput`]
//! that an [`ExportDestination`] created (a file in a [`LocalFolder`] here; an upload under an
//! object-store prefix in `mdfkit-cloud`), then finished, or dropped on an error, which leaves
//! nothing: a truncated file or object must never pass for the whole table.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowSchemaConverter;
use parquet::arrow::ArrowWriter;
use parquet::basic::Type as PhysicalType;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;

use crate::catalog::model::TableInfo;
use crate::database::Database;
use crate::error::{Error, ErrorKind, Result};
use crate::plain_pages::{PageRow, PlainLayout};
use crate::scan::Flow;
use crate::scans::Backlog;
use crate::value::Value;

pub mod delta;
mod delta_stats;
mod fixed_statistics;
mod parquet_guard;
mod text;

use fixed_statistics::FixedBounds;
use text::{line_columns, LineColumns, Lines};

/// Arrow bytes at which a Parquet row group is written out.
const ROW_GROUP_BYTES: usize = 32 << 20;
/// Distinct values a Parquet column chunk's dictionary may hold before the column is written plain.
const DICTIONARY_BYTES: usize = 64 << 10;
/// Rows at which a Parquet row group is written out (`ArrowWriter`'s default).
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Arrow bytes a Parquet export's scan may have handed the encoders that they have not encoded
/// yet (besides one column of any size): dozens of batches of a narrow table, so no encoder
/// waits for the scan, and a constant however long the table (see docs/PERFORMANCE.md).
const ENCODER_BACKLOG_BYTES: usize = 8 << 20;
/// Finished row groups a Parquet export may have encoding beside the one being filled, at most
/// (see [`row_groups_encoding`]).
const MAX_ROW_GROUPS_ENCODING: usize = 4;

/// Output formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Apache Parquet, from Arrow batches.
    Parquet,
    /// Comma-separated values, RFC 4180 quoting, a header line of column names.
    Csv,
    /// JSON Lines: one JSON object per row.
    Jsonl,
    /// Arrow IPC stream.
    Arrow,
}

impl ExportFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [ExportFormat; 4] =
        [ExportFormat::Csv, ExportFormat::Jsonl, ExportFormat::Arrow, ExportFormat::Parquet];

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

/// How Parquet pages are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParquetCompression {
    /// zstd at this level (1-22). Level 1, the default, is within a few percent of level 3's size
    /// on table data at a fraction of the time.
    Zstd(i32),
    /// Snappy: what most Parquet writers default to; faster, larger files (Wide table of the
    /// benchmark: +26%, Fact: +53%).
    Snappy,
    /// LZ4 (the `LZ4_RAW` codec).
    Lz4,
    /// No compression.
    None,
}

impl Default for ParquetCompression {
    fn default() -> Self {
        ParquetCompression::Zstd(1)
    }
}

impl std::str::FromStr for ParquetCompression {
    type Err = String;

    /// `zstd`, `zstd:LEVEL`, `snappy`, `lz4` or `none`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        match lower.split_once(':') {
            None if lower == "zstd" => Ok(ParquetCompression::default()),
            None if lower == "snappy" => Ok(ParquetCompression::Snappy),
            None if lower == "lz4" => Ok(ParquetCompression::Lz4),
            None if lower == "none" || lower == "uncompressed" => Ok(ParquetCompression::None),
            Some(("zstd", level)) => match level.parse::<i32>() {
                Ok(l) if (1..=22).contains(&l) => Ok(ParquetCompression::Zstd(l)),
                _ => Err(format!("zstd levels go from 1 to 22, not {level:?}")),
            },
            _ => Err(format!("unknown Parquet compression {s:?}: use zstd, zstd:LEVEL (1-22), snappy, lz4 or none")),
        }
    }
}

impl ParquetCompression {
    fn codec(self) -> Compression {
        match self {
            ParquetCompression::Zstd(level) => Compression::ZSTD(ZstdLevel::try_new(level).unwrap_or_default()),
            ParquetCompression::Snappy => Compression::SNAPPY,
            ParquetCompression::Lz4 => Compression::LZ4_RAW,
            ParquetCompression::None => Compression::UNCOMPRESSED,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportStats {
    /// Rows written.
    pub rows: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Wall-clock time of the table's export.
    pub seconds: f64,
    /// Ghost (deleted) records skipped.
    pub ghost_records: u64,
    /// Damaged pages and records a salvage export skipped.
    pub skipped: Vec<crate::scan::Skipped>,
    /// Where the output went (a path or a URL).
    pub location: PathBuf,
}

/// How to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Only these columns (all stored columns when `None`).
    pub columns: Option<Vec<String>>,
    /// Decoding threads (for CSV and JSON Lines, formatting threads too). With more than one,
    /// rows come in page allocation order (for a clustered table, not key order); salvage
    /// exports of CSV and JSON Lines run on one.
    pub threads: usize,
    /// Skip damaged pages and records; they are listed in [`ExportStats::skipped`].
    pub salvage: bool,
    /// Parquet's page compression (other formats ignore it).
    pub compression: ParquetCompression,
    /// The unit of datetime2(7) / datetimeoffset(7) timestamps in Parquet and Arrow (see
    /// [`crate::TimestampUnit`]; CSV and JSON Lines spell every value exactly).
    pub timestamps: crate::TimestampUnit,
}

/// Writes `table` to `out` in `format`, calling `progress` with the rows written so far. On an
/// error nothing is left behind: `out` is dropped unfinished (a file removed, an upload aborted).
pub fn export_table(
    db: &Database,
    table: &TableInfo,
    format: ExportFormat,
    mut out: Box<dyn ExportOutput>,
    export: &ExportOptions,
    mut progress: impl FnMut(u64),
) -> Result<ExportStats> {
    let started = Instant::now();
    let location = out.location().to_path_buf();
    let (rows, scan) = write_table(db, table, format, &location, export, out.as_mut(), &mut progress)?;
    let bytes = out.finish()?;
    Ok(ExportStats {
        rows,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        ghost_records: scan.ghost_records,
        skipped: scan.skipped,
        location,
    })
}

/// Threads to decode with when a front end is not told: one per core.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The name of `table`'s output in `format`: `SCHEMA.TABLE.EXT`.
pub fn output_name(table: &TableInfo, format: ExportFormat) -> String {
    format!("{}.{}.{}", table.schema, table.name, format.extension())
}

/// The inverse of [`output_name`]: `dbo.Orders.parquet` → (`dbo.Orders`, Parquet), the way the
/// studio's download URLs name a table and a format; `None` when no format's extension ends
/// `name` (or nothing is left before it).
pub fn split_output_name(name: &str) -> Option<(&str, ExportFormat)> {
    ExportFormat::ALL.into_iter().find_map(|format| {
        let table = name.strip_suffix(format.extension())?.strip_suffix('.')?;
        (!table.is_empty()).then_some((table, format))
    })
}

/// What happened to one table of [`export_tables`].
#[derive(Debug)]
pub struct TableExport {
    /// `schema.table`.
    pub table: String,
    /// The output's name in the destination ([`output_name`]).
    pub name: String,
    /// What was written, or why the table was not (nothing of it is left).
    pub result: Result<ExportStats>,
    /// Where the salvage report went (`NAME.skipped.csv`), when damage was skipped.
    pub skip_report: Option<PathBuf>,
}

/// What [`export_tables`] did: each table's outcome, in the order given.
#[derive(Debug)]
pub struct ExportReport {
    /// Each table's outcome, in the order given.
    pub tables: Vec<TableExport>,
    /// Wall-clock time of the whole run.
    pub seconds: f64,
}

impl ExportReport {
    /// The statistics of the tables written.
    pub fn written(&self) -> impl Iterator<Item = &ExportStats> {
        self.tables.iter().filter_map(|t| t.result.as_ref().ok())
    }

    /// The tables not written, by name.
    pub fn failed(&self) -> Vec<&str> {
        self.tables.iter().filter(|t| t.result.is_err()).map(|t| t.table.as_str()).collect()
    }
}

/// What a front end hears while [`export_tables`] runs (progress bars, a line per table).
pub enum ExportEvent<'a> {
    /// `table` is about to be written.
    Started(&'a TableInfo),
    /// Rows of the current table written so far.
    Rows(u64),
    /// A table is done, written or not.
    Finished(&'a TableExport),
}

/// Exports `tables` one after the other into `destination`, each as [`output_name`], decoding on
/// `options.threads` threads; a salvage export that skipped damage writes its report
/// (`table,page,slot,reason` per skipped page or record) beside it as `NAME.skipped.csv`.
///
/// A table that fails leaves nothing and does not stop the others: its error is in its
/// [`TableExport::result`], and [`ExportReport::failed`] names it. Only a salvage report that
/// cannot be written ends the run with an error.
pub fn export_tables(
    db: &Database,
    tables: &[TableInfo],
    format: ExportFormat,
    destination: &dyn ExportDestination,
    options: &ExportOptions,
    on_event: impl FnMut(ExportEvent<'_>),
) -> Result<ExportReport> {
    export_each(
        tables,
        destination,
        |table| output_name(table, format),
        |table, name, progress| export_table(db, table, format, destination.create(name)?, options, progress),
        on_event,
    )
}

/// The loop of [`export_tables`] (and of `delta::export_delta_tables`): each table named by
/// `name_of` and written by `export_one` (which calls its progress function with the rows
/// written), its salvage report beside it, events sent on the way.
fn export_each(
    tables: &[TableInfo],
    destination: &dyn ExportDestination,
    name_of: impl Fn(&TableInfo) -> String,
    mut export_one: impl FnMut(&TableInfo, &str, &mut dyn FnMut(u64)) -> Result<ExportStats>,
    mut on_event: impl FnMut(ExportEvent<'_>),
) -> Result<ExportReport> {
    let started = Instant::now();
    let mut done = Vec::with_capacity(tables.len());
    for table in tables {
        on_event(ExportEvent::Started(table));
        let name = name_of(table);
        let result = export_one(table, &name, &mut |rows| on_event(ExportEvent::Rows(rows)));
        let skip_report = match &result {
            Ok(stats) if !stats.skipped.is_empty() => Some(write_skip_report(
                destination,
                &format!("{name}.skipped.csv"),
                &table.qualified_name(),
                &stats.skipped,
            )?),
            _ => None,
        };
        let outcome = TableExport { table: table.qualified_name(), name, result, skip_report };
        on_event(ExportEvent::Finished(&outcome));
        done.push(outcome);
    }
    Ok(ExportReport { tables: done, seconds: started.elapsed().as_secs_f64() })
}

/// Writes the salvage report `name` (`table,page,slot,reason` per skipped page or record) into
/// `destination`; returns where it went.
fn write_skip_report(
    destination: &dyn ExportDestination,
    name: &str,
    table: &str,
    skipped: &[crate::scan::Skipped],
) -> Result<PathBuf> {
    let mut text = String::from("table,page,slot,reason\n");
    for s in skipped {
        let page = s.page.map(|p| p.to_string());
        let slot = s.slot.map(|s| s.to_string());
        write_csv_row(&mut text, [Some(table), page.as_deref(), slot.as_deref(), Some(s.reason.as_str())].into_iter());
    }
    let mut report = destination.create(name)?;
    let location = report.location().to_path_buf();
    report.write_all(text.as_bytes()).map_err(|e| Error::io(&location, "cannot write the salvage report", e))?;
    report.finish()?;
    Ok(location)
}

/// Where an export's outputs go: a local folder ([`LocalFolder`]), or a prefix in an object
/// store (`mdfkit-cloud`'s `ObjectPrefix`).
///
/// A Delta Lake table ([`delta`]) needs three more things of a destination: listing, reading,
/// and creating a small object only where none exists (the protocol's mutual exclusion of
/// commits). A destination that cannot do them refuses Delta tables by the default methods.
pub trait ExportDestination: Send + Sync {
    /// Starts the output called `name` (`dbo.Orders.parquet`, or `dbo.Orders/part-1.parquet`
    /// inside a folder of its own): complete only once [`ExportOutput::finish`]ed; dropped
    /// unfinished, nothing of it is left.
    fn create(&self, name: &str) -> Result<Box<dyn ExportOutput>>;

    /// The names of the outputs directly in folder `folder` (`dbo.Orders/_delta_log`), without
    /// the folder; empty when it does not exist.
    fn list(&self, folder: &str) -> Result<Vec<String>> {
        Err(no_delta_support(folder))
    }

    /// The bytes of output `name`.
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        Err(no_delta_support(name))
    }

    /// Writes `bytes` as output `name` in one step if no output has that name: `Ok(false)`, and
    /// nothing written, if one has.
    fn create_new(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let _ = bytes;
        Err(no_delta_support(name))
    }
}

fn no_delta_support(name: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!(
            "{name}: this destination cannot hold a Delta table (it cannot create an object only where none exists)"
        ),
    )
}

/// One output being written.
pub trait ExportOutput: Write + Send {
    /// Where the output goes (a path or a URL), for messages.
    fn location(&self) -> &Path;

    /// Completes the output (a file closed, an upload committed); returns its size in bytes.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A folder on local disk.
pub struct LocalFolder {
    path: PathBuf,
}

impl LocalFolder {
    /// The folder at `path`, created with its parents when missing.
    pub fn create(path: &Path) -> Result<Self> {
        refuse_url(path)?;
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, "cannot create the output folder", e))?;
        Ok(LocalFolder { path: path.to_path_buf() })
    }
}

impl LocalFolder {
    /// `name`'s path, its folders created.
    fn path_of(&self, name: &str) -> Result<PathBuf> {
        let path = self.path.join(name);
        if let Some(folder) = path.parent().filter(|folder| *folder != self.path) {
            std::fs::create_dir_all(folder).map_err(|e| Error::io(folder, "cannot create the output folder", e))?;
        }
        Ok(path)
    }
}

impl ExportDestination for LocalFolder {
    fn create(&self, name: &str) -> Result<Box<dyn ExportOutput>> {
        Ok(Box::new(LocalOutput::create(&self.path_of(name)?)?))
    }

    fn list(&self, folder: &str) -> Result<Vec<String>> {
        let path = self.path.join(folder);
        let entries = match std::fs::read_dir(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            entries => entries.map_err(|e| Error::io(&path, "cannot list", e))?,
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&path, "cannot list", e))?;
            names.extend(entry.file_name().to_str().map(str::to_string));
        }
        Ok(names)
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.path.join(name);
        std::fs::read(&path).map_err(|e| Error::io(&path, "cannot read", e))
    }

    fn create_new(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let path = self.path_of(name)?;
        // Written beside, then linked to its name: `link` fails where the name exists, and a
        // reader never sees a half-written file under it. The temporary name is this process's
        // and this call's alone.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temporary = path.with_extension(format!("tmp-{}-{call}", std::process::id()));
        std::fs::write(&temporary, bytes).map_err(|e| Error::io(&temporary, "cannot write", e))?;
        let linked = std::fs::hard_link(&temporary, &path);
        std::fs::remove_file(&temporary).ok();
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(&path, "cannot create", e)),
        }
    }
}

/// A local file being written; removed when dropped unfinished, so that a partial file never
/// passes for the whole table.
pub struct LocalOutput {
    /// `None` once finished.
    file: Option<File>,
    path: PathBuf,
}

impl LocalOutput {
    /// Creates (or truncates) the file at `path`; a URL is refused.
    pub fn create(path: &Path) -> Result<Self> {
        refuse_url(path)?;
        let file = File::create(path).map_err(|e| Error::io(path, "cannot create", e))?;
        Ok(LocalOutput { file: Some(file), path: path.to_path_buf() })
    }

    fn file(&mut self) -> std::io::Result<&mut File> {
        self.file.as_mut().ok_or_else(|| std::io::Error::other("the output is finished"))
    }
}

/// A URL is not a local path: `s3://b/k` must not become a folder called `s3:`.
fn refuse_url(path: &Path) -> Result<()> {
    match path.to_str().and_then(crate::location::url_scheme) {
        Some(scheme) => Err(crate::location::unsupported_url(path, scheme)),
        None => Ok(()),
    }
}

impl Write for LocalOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file()?.flush()
    }
}

impl ExportOutput for LocalOutput {
    fn location(&self) -> &Path {
        &self.path
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        drop(self.file.take());
        Ok(std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0))
    }
}

impl Drop for LocalOutput {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            drop(file);
            std::fs::remove_file(&self.path).ok();
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
    file: &mut (dyn Write + Send),
    progress: &mut impl FnMut(u64),
) -> Result<(u64, crate::scan::ScanStats)> {
    let io = |e: std::io::Error| Error::io(path, "cannot write", e);
    let columns = export.columns.as_deref();
    let threads = export.threads.max(1);
    let scan = db
        .scan(table)
        .columns(export.columns.clone())
        .salvage(export.salvage)
        .threads(threads)
        .timestamps(export.timestamps);
    let mut rows = 0u64;
    let stats = match format {
        ExportFormat::Parquet => {
            let schema = scan.schema()?;
            write_parquet(&scan, file, schema, export, &mut rows, progress, Ok)?
        }
        ExportFormat::Arrow => {
            let schema = scan.schema()?;
            let mut writer = StreamWriter::try_new(BufWriter::new(file), &schema).map_err(arrow_error)?;
            let stats = scan.batches(|batch| {
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
            if format == ExportFormat::Csv {
                let mut header = String::new();
                let names = scan.schema()?;
                write_csv_row(&mut header, names.fields().iter().map(|f| Some(f.name().as_str())));
                out.write_all(header.as_bytes()).map_err(io)?;
            }
            let total = if threads > 1 && !export.salvage {
                // Rows are formatted on the scan's threads, a chunk of text at a time. A chunk's
                // buffer goes back to the workers once written (a fresh one is zeroed first).
                let written: std::sync::Mutex<Vec<Lines>> = std::sync::Mutex::default();
                let new_chunk = |decoder: &crate::rows::RowDecoder| {
                    let lines = written.lock().ok().and_then(|mut buffers| buffers.pop());
                    TextChunk::new(format, decoder, lines)
                };
                let append = |chunk: &mut TextChunk, decoder: &crate::rows::RowDecoder, row: PageRow| {
                    chunk.lines.push_page_row(format, &chunk.columns, chunk.plain.as_ref(), decoder, row)?;
                    chunk.rows += 1;
                    Ok(chunk.lines.text.len() >= TEXT_CHUNK_BYTES)
                };
                let weigh = |chunk: &TextChunk| chunk.lines.text.room();
                scan.chunks(new_chunk, append, weigh, |mut chunk| {
                    out.write_all(chunk.lines.text.written()).map_err(io)?;
                    chunk.lines.text.clear();
                    if let Ok(mut buffers) = written.lock() {
                        buffers.push(chunk.lines);
                    }
                    rows += chunk.rows;
                    progress(rows);
                    Ok(Flow::Continue)
                })?
            } else {
                // Lines gathered and written a chunk at a time, as the scan threads' are (a row at
                // a time, each was copied into the writer's buffer and written 8 KB at a time).
                let mut lines = Lines::with_room(TEXT_CHUNK_BYTES + (64 << 10));
                let mut total = crate::scan::ScanStats::default();
                for partition in &table.partitions {
                    let decoder = db.row_decoder(table, partition.partition_id, columns)?;
                    let plain = PlainLayout::of(&decoder);
                    let line_columns = line_columns(format, &decoder, plain.as_ref());
                    total += scan.partition_rows(partition, plain.as_ref(), |row| {
                        lines.push_page_row(format, &line_columns, plain.as_ref(), &decoder, row)?;
                        if lines.text.len() >= TEXT_CHUNK_BYTES {
                            out.write_all(lines.text.written()).map_err(io)?;
                            lines.text.clear();
                        }
                        rows += 1;
                        if rows.is_multiple_of(65_536) {
                            progress(rows);
                        }
                        Ok(Flow::Continue)
                    })?;
                }
                out.write_all(lines.text.written()).map_err(io)?;
                total
            };
            out.flush().map_err(io)?;
            progress(rows);
            total
        }
    };
    Ok((rows, stats))
}

/// Writes `scan`'s batches, each passed through `convert` (into `schema`), as one Parquet file
/// to `file`; counts the rows in `rows`.
fn write_parquet(
    scan: &crate::TableScan<'_>,
    file: &mut (dyn Write + Send),
    schema: SchemaRef,
    export: &ExportOptions,
    rows: &mut u64,
    progress: &mut impl FnMut(u64),
    mut convert: impl FnMut(RecordBatch) -> Result<RecordBatch>,
) -> Result<crate::scan::ScanStats> {
    std::thread::scope(|scope| -> Result<crate::scan::ScanStats> {
        let mut parquet = ParquetOutput::new(scope, file, schema, export.threads.max(1), export.compression)?;
        let stats = scan.batches(|batch| {
            *rows += batch.num_rows() as u64;
            parquet.write(&convert(batch)?)?;
            progress(*rows);
            Ok(Flow::Continue)
        })?;
        parquet.close()?;
        Ok(stats)
    })
}

/// Text a CSV or JSON Lines export's scan thread formats before handing it on.
const TEXT_CHUNK_BYTES: usize = 1 << 20;

/// Rows a scan thread of a CSV or JSON Lines export has formatted.
struct TextChunk {
    lines: Lines,
    rows: u64,
    /// What goes before each of the decoder's columns, and how its values are spelled.
    columns: LineColumns,
    /// Where the values of the partition's plain records are ([`PlainLayout`]).
    plain: Option<PlainLayout>,
}

impl TextChunk {
    /// A chunk of `decoder`'s rows, written into `lines` (emptied) where given.
    fn new(format: ExportFormat, decoder: &crate::rows::RowDecoder, lines: Option<Lines>) -> Self {
        let plain = PlainLayout::of(decoder);
        TextChunk {
            lines: lines.unwrap_or_else(|| Lines::with_room(TEXT_CHUNK_BYTES + (64 << 10))),
            rows: 0,
            columns: line_columns(format, decoder, plain.as_ref()),
            plain,
        }
    }
}

/// A Parquet file whose column chunks are encoded on `threads` threads: each row group's columns
/// are shared out among the encoders by size and fed to them batch by batch; an encoder computes
/// a column's Parquet levels itself, so they live only while it encodes that column. A finished
/// row group goes to a writer thread, which waits for its encoders and appends their chunks to
/// the file while the next row group is being filled ([`row_groups_encoding`] finished row
/// groups may be encoding where the threads outnumber a row group's columns). What is held does
/// not grow with the table: at most [`ENCODER_BACKLOG_BYTES`] of Arrow columns waiting for the
/// encoders (and a row group's [`ROW_GROUP_BYTES`] more for each finished row group past the
/// first), and the encoded chunks of the row groups in flight. (`ArrowWriter` encodes every column on the calling thread.)
struct ParquetOutput<'s, 'e> {
    scope: &'s std::thread::Scope<'s, 'e>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The column (the schema's field) each Parquet leaf column belongs to, in leaf order.
    column_of_leaf: Vec<usize>,
    /// Each leaf's bounds where they are kept here ([`FixedBounds`]), empty, in leaf order.
    fixed_bounds: Vec<Option<FixedBounds>>,
    threads: usize,
    row_groups: usize,
    /// The encoders of the row group being filled (empty between row groups).
    encoders: Vec<Encoder<'s>>,
    /// Which encoder each column of the current row group goes to.
    encoder_of_column: Vec<usize>,
    /// The Arrow bytes sent to encoders and not yet encoded, bounded.
    backlog: std::sync::Arc<Backlog>,
    /// Arrow bytes and rows sent to the current row group.
    group_bytes: usize,
    group_rows: usize,
    /// Where a row group ends: ROW_GROUP_BYTES and ROW_GROUP_ROWS (smaller in tests).
    row_group_limits: (usize, usize),
    /// Finished row groups to the writer thread. Bounded: handing one over waits while the
    /// writer has [`row_groups_encoding`] less one waiting (none: until it has written the one
    /// before).
    /// (Both `None` once the writer thread has been waited for.)
    finished: Option<std::sync::mpsc::SyncSender<ToWriter<'s>>>,
    writer: Option<std::thread::ScopedJoinHandle<'s, Result<()>>>,
}

/// What the writer thread is sent: a row group's encoders, or the word that the file is complete.
/// A file that is never said complete (an export that failed) gets no footer, so no reader takes
/// its first row groups for the whole table.
enum ToWriter<'s> {
    RowGroup(Vec<EncoderResult<'s>>),
    Close,
}

/// A leaf column's writer in a row group, with the bounds kept for it here.
struct LeafWriter {
    leaf: usize,
    writer: ArrowColumnWriter,
    bounds: Option<FixedBounds>,
}

impl LeafWriter {
    /// The finished chunk, by leaf index.
    fn close(self) -> parquet::errors::Result<(usize, ArrowColumnChunk)> {
        let mut chunk = self.writer.close()?;
        if let Some(bounds) = self.bounds {
            bounds.set_on(&mut chunk)?;
        }
        Ok((self.leaf, chunk))
    }
}

type EncoderResult<'s> = std::thread::ScopedJoinHandle<'s, parquet::errors::Result<Vec<(usize, ArrowColumnChunk)>>>;

/// One encoding thread: the columns it is sent (with their Arrow bytes), and the chunks it
/// returns, by leaf index, when its channel closes.
struct Encoder<'s> {
    columns: std::sync::mpsc::Sender<(usize, ArrayRef, usize)>,
    done: EncoderResult<'s>,
}

/// Closes the backlog when an encoder stops before its channel closes (on an error or a panic):
/// the scan may be waiting for room only that encoder would have made.
struct CloseBacklogUnlessDrained<'a> {
    backlog: &'a Backlog,
    drained: bool,
}

impl Drop for CloseBacklogUnlessDrained<'_> {
    fn drop(&mut self) {
        if !self.drained {
            self.backlog.close();
        }
    }
}

impl<'s, 'e> ParquetOutput<'s, 'e> {
    fn new(
        scope: &'s std::thread::Scope<'s, 'e>,
        file: &'e mut (dyn Write + Send),
        schema: SchemaRef,
        threads: usize,
        compression: ParquetCompression,
    ) -> Result<Self> {
        // Dictionaries stay on for columns with few distinct values (they make them
        // small), but a column gives up on its dictionary after 64 KB of distinct values instead
        // of 1 MB: hashing every value of a high-cardinality column was a quarter of the export.
        let mut props = WriterProperties::builder()
            .set_compression(compression.codec())
            .set_dictionary_page_size_limit(DICTIONARY_BYTES);
        // The leaves as `ArrowWriter` lays them out; fixed-length ones get their bounds here.
        let leaves = ArrowSchemaConverter::new().convert(&schema).map_err(parquet_error)?;
        let mut fixed_bounds = Vec::with_capacity(leaves.num_columns());
        for leaf in leaves.columns() {
            let field = schema.fields().get(leaves.get_column_root_idx(fixed_bounds.len()));
            let bounds = match field {
                Some(field)
                    if leaf.physical_type() == PhysicalType::FIXED_LEN_BYTE_ARRAY && leaf.path().parts().len() == 1 =>
                {
                    FixedBounds::of(field.data_type(), usize::try_from(leaf.type_length()).unwrap_or(0))
                }
                _ => None,
            };
            if bounds.is_some() {
                props = props.set_column_statistics_enabled(leaf.path().clone(), EnabledStatistics::None);
            }
            fixed_bounds.push(bounds);
        }
        let props = props.build();
        // `ArrowWriter` sets up the file (schema, Arrow schema in the metadata); its parts then
        // let columns be encoded apart.
        let (writer, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet_error)?;
        let leaves = writer.schema_descr();
        let column_of_leaf = (0..leaves.num_columns()).map(|leaf| leaves.get_column_root_idx(leaf)).collect();
        let threads = threads.max(1);
        let encoding = row_groups_encoding(threads, schema.fields().len());
        let (finished, row_groups) = std::sync::mpsc::sync_channel(encoding - 1);
        let writer = scope.spawn(move || write_row_groups(writer, row_groups));
        Ok(ParquetOutput {
            scope,
            factory,
            schema,
            column_of_leaf,
            fixed_bounds,
            threads,
            row_groups: 0,
            encoders: Vec::new(),
            encoder_of_column: Vec::new(),
            // The scan runs ahead of a row group's slowest encoder by whole row groups, so that
            // the next ones' encoders have their columns.
            backlog: std::sync::Arc::new(Backlog::new(ENCODER_BACKLOG_BYTES + (encoding - 1) * ROW_GROUP_BYTES)),
            group_bytes: 0,
            group_rows: 0,
            row_group_limits: (ROW_GROUP_BYTES, ROW_GROUP_ROWS),
            finished: Some(finished),
            writer: Some(writer),
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.encoders.is_empty() {
            self.start_row_group(batch)?;
        }
        for (column, array) in batch.columns().iter().enumerate() {
            let bytes = array.get_array_memory_size();
            let encoder = &self.encoders[self.encoder_of_column[column]];
            // Either fails only when an encoder stopped on an error: the writer thread reports it.
            if !self.backlog.make_room(bytes) || encoder.columns.send((column, array.clone(), bytes)).is_err() {
                self.finish_row_group();
                return Err(self.abandon());
            }
        }
        self.group_bytes += batch.get_array_memory_size();
        self.group_rows += batch.num_rows();
        // LOB tables would otherwise gather a million rows of large values in one row group.
        let full = self.group_bytes >= self.row_group_limits.0 || self.group_rows >= self.row_group_limits.1;
        if full && !self.finish_row_group() {
            return Err(self.abandon());
        }
        Ok(())
    }

    /// Starts the encoders of a row group, sharing its columns out by the bytes they hold in
    /// `batch` (its first): a table's long text columns would otherwise often share one thread.
    fn start_row_group(&mut self, batch: &RecordBatch) -> Result<()> {
        let writers = self.factory.create_column_writers(self.row_groups).map_err(parquet_error)?;
        let column_bytes: Vec<usize> = batch.columns().iter().map(|array| array.get_buffer_memory_size()).collect();
        let encoders = self.threads.min(column_bytes.len()).max(1);
        self.encoder_of_column = balance(&column_bytes, encoders);
        // Each encoder's columns, each with the writers of its leaves (in leaf order).
        let mut mine: Vec<Vec<(usize, Vec<LeafWriter>)>> = (0..encoders).map(|_| Vec::new()).collect();
        for (leaf, writer) in writers.into_iter().enumerate() {
            let column = self.column_of_leaf.get(leaf).copied().unwrap_or_default();
            let encoder = &mut mine[self.encoder_of_column.get(column).copied().unwrap_or_default()];
            let writer = LeafWriter { leaf, writer, bounds: self.fixed_bounds.get(leaf).cloned().flatten() };
            match encoder.iter_mut().find(|(c, _)| *c == column) {
                Some((_, leaves)) => leaves.push(writer),
                None => encoder.push((column, vec![writer])),
            }
        }
        for mine in mine {
            // Unbounded in count on purpose: the backlog bounds the bytes waiting, and a channel
            // of one left an encoder idle whenever the other held up the sender (Wide: 1.16 s ->
            // 0.80 s).
            let (tx, rx) = std::sync::mpsc::channel::<(usize, ArrayRef, usize)>();
            let (fields, backlog) = (self.schema.fields().clone(), self.backlog.clone());
            let done = self.scope.spawn(move || {
                let mut mine = mine;
                let mut leaving = CloseBacklogUnlessDrained { backlog: &backlog, drained: false };
                for (column, array, bytes) in rx {
                    if let (Some((_, writers)), Some(field)) =
                        (mine.iter_mut().find(|(c, _)| *c == column), fields.get(column))
                    {
                        for (writer, leaf) in writers.iter_mut().zip(compute_leaves(field, &array)?) {
                            if let Some(bounds) = &mut writer.bounds {
                                // Only a flat column's leaf has bounds here: its array is the column's.
                                bounds.add(array.as_ref());
                            }
                            writer.writer.write(&leaf)?;
                        }
                    }
                    drop(array);
                    backlog.taken(bytes);
                }
                leaving.drained = true;
                mine.into_iter().flat_map(|(_, leaves)| leaves).map(LeafWriter::close).collect()
            });
            self.encoders.push(Encoder { columns: tx, done });
        }
        self.row_groups += 1;
        Ok(())
    }

    /// Hands the row group being filled to the writer thread; false if that thread has stopped
    /// (on an error).
    fn finish_row_group(&mut self) -> bool {
        if self.encoders.is_empty() {
            return true;
        }
        // Dropping the senders lets the encoders finish their column chunks.
        let done = self.encoders.drain(..).map(|e| e.done).collect();
        self.group_bytes = 0;
        self.group_rows = 0;
        self.finished.as_ref().is_some_and(|f| f.send(ToWriter::RowGroup(done)).is_ok())
    }

    /// Waits for the writer thread, once no more row groups come: what it wrote or why it stopped.
    fn wait_for_writer(&mut self) -> Result<()> {
        self.finished = None;
        match self.writer.take().map(|w| w.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::new(ErrorKind::Io, "a Parquet writing thread panicked")),
            None => Err(Error::new(ErrorKind::Io, "the Parquet file was already closed")),
        }
    }

    /// The writer thread's error, after it stopped on one.
    fn abandon(&mut self) -> Error {
        match self.wait_for_writer() {
            Err(e) => e,
            Ok(()) => Error::new(ErrorKind::Io, "a Parquet encoding thread stopped"),
        }
    }

    fn close(mut self) -> Result<()> {
        if self.finish_row_group() {
            // An error here is the writer's, which waiting returns.
            self.finished.as_ref().map(|f| f.send(ToWriter::Close));
        }
        self.wait_for_writer()
    }
}

/// Finished row groups a Parquet export on `threads` threads of a table of `columns` columns may
/// have encoding while it fills the next: one where the threads are no more than a row group's
/// columns, more where they outnumber them. A column chunk is encoded on one thread from start to end, so a row group
/// keeps at most its columns' count of threads busy, fewer when one column outweighs the rest
/// (`money`'s 9-byte decimals, a long text): on 16 cores one row group at a time held `Fact`'s
/// export (7 columns) to about the speed of 4 threads (docs/PERFORMANCE.md). On 2 cores a
/// second row group gained nothing for a 3-column table and cost 30 MB.
fn row_groups_encoding(threads: usize, columns: usize) -> usize {
    threads.div_ceil(columns.max(1)).clamp(1, MAX_ROW_GROUPS_ENCODING)
}

/// The writer thread: waits for each row group's encoders and appends their column chunks, in
/// column order, to the file; writes the footer when told the file is complete.
fn write_row_groups(
    mut writer: SerializedFileWriter<&mut (dyn Write + Send)>,
    messages: std::sync::mpsc::Receiver<ToWriter<'_>>,
) -> Result<()> {
    for message in messages {
        let encoders = match message {
            ToWriter::RowGroup(encoders) => encoders,
            ToWriter::Close => {
                writer.close().map_err(parquet_error)?;
                return Ok(());
            }
        };
        let mut chunks = Vec::new();
        for done in encoders {
            match done.join() {
                Ok(result) => chunks.extend(result.map_err(parquet_error)?),
                Err(_) => return Err(Error::new(ErrorKind::Io, "a Parquet encoding thread panicked")),
            }
        }
        chunks.sort_by_key(|(i, _)| *i);
        let mut group = writer.next_row_group().map_err(parquet_error)?;
        for (_, chunk) in chunks {
            chunk.append_to_row_group(&mut group).map_err(parquet_error)?;
        }
        group.close().map_err(parquet_error)?;
    }
    Err(Error::new(ErrorKind::Io, "the export stopped before the Parquet file was complete"))
}

/// Shares items out among `bins` bins so the largest bin is small: largest item first, each to
/// the bin with the least so far. Returns each item's bin.
fn balance(weights: &[usize], bins: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    let mut load = vec![0usize; bins.max(1)];
    let mut bin_of = vec![0; weights.len()];
    for i in order {
        let lightest = (0..load.len()).min_by_key(|&b| load[b]).unwrap_or(0);
        load[lightest] += weights[i];
        bin_of[i] = lightest;
    }
    bin_of
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

/// Whether a CSV field must be quoted: it holds a comma, a quote or a line break.
fn csv_needs_quotes(f: &[u8]) -> bool {
    f.iter().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
}

/// Whether a JSON string needs escapes: it holds a quote, a backslash or a control character.
fn json_needs_escapes(s: &[u8]) -> bool {
    s.iter().any(|b| matches!(b, b'"' | b'\\' | 0..=0x1f))
}

/// Where CSV and JSON text is appended: a `String`, or a text export's bytes.
trait PushText {
    fn push_text(&mut self, s: &str);
}

impl PushText for String {
    fn push_text(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl PushText for crate::bytes::Utf8Writer {
    fn push_text(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }
}

/// Appends one CSV field, quoted only when it holds a comma, a quote or a line break.
fn push_csv_field(line: &mut impl PushText, f: &str) {
    if csv_needs_quotes(f.as_bytes()) {
        line.push_text("\"");
        for (i, part) in f.split('"').enumerate() {
            if i > 0 {
                line.push_text("\"\"");
            }
            line.push_text(part);
        }
        line.push_text("\"");
    } else {
        line.push_text(f);
    }
}

/// Appends one JSON object line, each value spelled as [`Value::to_json`] spells it (written
/// here without building JSON values: this runs for every row of an export).
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
            Value::Int(v) => line.push_str(itoa::Buffer::new().format(*v)),
            Value::Text(text) => json_string(line, text),
            other => json_string(line, &other.to_string()),
        }
    }
    line.push_str("}\n");
}

/// Appends `s` as a JSON string: runs of characters that need no escape are copied whole.
fn json_string(out: &mut impl PushText, s: &str) {
    out.push_text("\"");
    let mut copied = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // An ASCII byte is a whole character: `i` is a character boundary.
        out.push_text(&s[copied..i]);
        if escape.is_empty() {
            const LOWER_HEX: &str = "0123456789abcdef";
            let (high, low) = (usize::from(b >> 4), usize::from(b & 0x0f));
            out.push_text("\\u00");
            out.push_text(&LOWER_HEX[high..high + 1]);
            out.push_text(&LOWER_HEX[low..low + 1]);
        } else {
            out.push_text(escape);
        }
        copied = i + 1;
    }
    out.push_text(&s[copied..]);
    out.push_text("\"");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_split_back_into_table_and_format() {
        for format in ExportFormat::ALL {
            let name = format!("dbo.Order.Lines.{}", format.extension());
            assert_eq!(split_output_name(&name), Some(("dbo.Order.Lines", format)));
        }
        // .arrows is not .arrow; an extension alone or without its dot names no table.
        for bad in ["dbo.Orders.arrow", ".csv", "csv", "dbo.Orderscsv", "dbo.Orders.CSV", ""] {
            assert_eq!(split_output_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn balance_gives_the_long_columns_separate_threads() {
        // The benchmark's Wide table by bytes a row: id, name, street, city, notes, created, token.
        let bins = balance(&[4, 70, 48, 17, 70, 8, 16], 2);
        let load = |b| (0..7).filter(|&i| bins[i] == b).map(|i| [4, 70, 48, 17, 70, 8, 16][i]).sum::<usize>();
        assert_ne!(bins[1], bins[4], "the two 70-byte columns share a thread");
        assert_eq!((load(0), load(1)), (118, 115));
        assert_eq!(balance(&[5, 5, 5], 1), vec![0, 0, 0]);
        assert!(balance(&[], 4).is_empty());
    }

    /// Batches of a flat and a nested column of each kind, with NULLs and long text.
    fn mixed_batches() -> (SchemaRef, Vec<RecordBatch>) {
        use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, StructArray};
        use arrow_schema::{DataType, Field, Fields, Schema};
        let pair = Fields::from(vec![Field::new("a", DataType::Int32, true), Field::new("b", DataType::Utf8, true)]);
        let schema = std::sync::Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("pair", DataType::Struct(pair.clone()), true),
            Field::new("text", DataType::Utf8, true),
            Field::new("flag", DataType::Boolean, true),
        ]));
        let batches = (0..40i64)
            .map(|b| {
                let ids: Vec<i64> = (b * 250..(b + 1) * 250).collect();
                let text = |i: i64| (i % 7 != 0).then(|| format!("{i}:{}", "x".repeat((i % 300) as usize)));
                let columns: Vec<ArrayRef> = vec![
                    std::sync::Arc::new(Int64Array::from(ids.clone())),
                    std::sync::Arc::new(StructArray::new(
                        pair.clone(),
                        vec![
                            std::sync::Arc::new(Int32Array::from_iter(
                                ids.iter().map(|&i| (i % 3 != 0).then_some(i as i32)),
                            )),
                            std::sync::Arc::new(StringArray::from_iter(ids.iter().map(|&i| text(i + 1)))),
                        ],
                        Some(ids.iter().map(|&i| i % 11 != 0).collect()),
                    )),
                    std::sync::Arc::new(StringArray::from_iter(ids.iter().map(|&i| text(i)))),
                    std::sync::Arc::new(BooleanArray::from_iter(
                        ids.iter().map(|&i| (i % 5 != 0).then_some(i % 2 == 0)),
                    )),
                ];
                RecordBatch::try_new(schema.clone(), columns).unwrap()
            })
            .collect();
        (schema, batches)
    }

    #[test]
    fn parquet_comes_back_identical_on_any_number_of_encoders_and_codecs() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let (schema, batches) = mixed_batches();
        let expected = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        let cases = [
            (1, ParquetCompression::default(), Compression::ZSTD(ZstdLevel::try_new(1).unwrap())),
            (2, ParquetCompression::Snappy, Compression::SNAPPY),
            (3, ParquetCompression::Lz4, Compression::LZ4_RAW),
            (8, ParquetCompression::None, Compression::UNCOMPRESSED),
            // Files do not record the level; readers report the default.
            (2, ParquetCompression::Zstd(9), Compression::ZSTD(ZstdLevel::default())),
        ];
        for (threads, compression, codec) in cases {
            let path = std::env::temp_dir().join(format!("mdfkit-parquet-{}-{threads}.parquet", std::process::id()));
            let mut out = File::create(&path).unwrap();
            std::thread::scope(|scope| {
                let mut parquet = ParquetOutput::new(scope, &mut out, schema.clone(), threads, compression).unwrap();
                // Row groups of 1,000 rows, or fewer when the byte limit comes first.
                parquet.row_group_limits = (if threads == 3 { 64 << 10 } else { usize::MAX }, 1000);
                for batch in &batches {
                    parquet.write(batch).unwrap();
                }
                parquet.close().unwrap();
            });
            drop(out);
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
            let groups = reader.metadata().row_groups().to_vec();
            let read: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
            std::fs::remove_file(&path).ok();
            assert_eq!(arrow_select::concat::concat_batches(&schema, &read).unwrap(), expected, "{threads} threads");
            // 10,000 rows: ten groups of 1,000; more where 64 KB of Arrow data comes first.
            let sizes: Vec<i64> = groups.iter().map(|g| g.num_rows()).collect();
            if threads == 3 {
                assert!(sizes.len() > 10 && sizes.iter().all(|&n| n <= 1000), "{sizes:?}");
            } else {
                assert_eq!(sizes, vec![1000; 10]);
            }
            for group in &groups {
                assert_eq!(group.num_columns(), 5, "id, pair.a, pair.b, text, flag");
                assert!(group.columns().iter().all(|c| c.compression() == codec), "{compression:?}");
            }
        }
    }

    /// Row groups encoded side by side (5 threads for 4 columns: two finished ones at once; 16:
    /// four) make the file that one thread makes, byte for byte.
    #[test]
    fn parquet_bytes_do_not_depend_on_the_row_groups_encoded_at_once() {
        let (schema, batches) = mixed_batches();
        let file = |threads: usize| {
            let mut out = Vec::new();
            std::thread::scope(|scope| {
                let mut parquet =
                    ParquetOutput::new(scope, &mut out, schema.clone(), threads, ParquetCompression::default())
                        .unwrap();
                parquet.row_group_limits = (usize::MAX, 700);
                for batch in &batches {
                    parquet.write(batch).unwrap();
                }
                parquet.close().unwrap();
            });
            out
        };
        assert_eq!(row_groups_encoding(1, schema.fields().len()), 1);
        assert_eq!(row_groups_encoding(16, schema.fields().len()), MAX_ROW_GROUPS_ENCODING);
        let one = file(1);
        assert!(one.len() > 100_000, "{} bytes", one.len());
        for threads in [2, 5, 16] {
            assert!(file(threads) == one, "{threads} threads");
        }
    }

    /// A write that fails in the writer thread (here: the device is full) comes back as the
    /// export's error, without a hang or a panic, with one finished row group encoding at a time
    /// or several (16 threads for 4 columns).
    #[cfg(target_os = "linux")]
    #[test]
    fn parquet_write_errors_come_back_from_the_writer_thread() {
        let (schema, batches) = mixed_batches();
        for threads in [2, 16] {
            let full = Path::new("/dev/full");
            let mut out = File::create(full).expect("/dev/full opens for writing");
            let result = std::thread::scope(|scope| -> Result<()> {
                let mut parquet =
                    ParquetOutput::new(scope, &mut out, schema.clone(), threads, ParquetCompression::None)?;
                parquet.row_group_limits = (usize::MAX, 1000);
                for batch in &batches {
                    parquet.write(batch)?;
                }
                parquet.close()
            });
            let error = result.expect_err("writing to a full device fails");
            assert!(error.to_string().contains("No space left on device"), "{threads} threads: {error}");
        }
    }

    #[test]
    fn an_abandoned_parquet_file_gets_no_footer() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let (schema, batches) = mixed_batches();
        let path = std::env::temp_dir().join(format!("mdfkit-parquet-abandoned-{}.parquet", std::process::id()));
        let mut out = File::create(&path).unwrap();
        std::thread::scope(|scope| {
            let mut parquet = ParquetOutput::new(scope, &mut out, schema.clone(), 2, ParquetCompression::None).unwrap();
            parquet.row_group_limits = (usize::MAX, 1000);
            for batch in &batches[..20] {
                parquet.write(batch).unwrap();
            }
            // The scan failed here: no close.
        });
        drop(out);
        let written = std::fs::metadata(&path).unwrap().len();
        let read = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap());
        std::fs::remove_file(&path).ok();
        assert!(written > 100_000, "the first row groups were written ({written} bytes)");
        assert!(read.is_err(), "a reader must not take the first row groups for the whole table");
    }

    #[test]
    fn local_outputs_are_kept_only_when_finished() {
        let folder = std::env::temp_dir().join(format!("mdfkit-local-outputs-{}", std::process::id()));
        let destination = LocalFolder::create(&folder).unwrap();
        let mut kept = destination.create("kept.csv").unwrap();
        kept.write_all(b"a,b\n").unwrap();
        assert_eq!(kept.location(), folder.join("kept.csv"));
        assert_eq!(kept.finish().unwrap(), 4);
        let mut dropped = destination.create("dropped.csv").unwrap();
        dropped.write_all(b"a,b\n").unwrap();
        drop(dropped);
        let left: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
        std::fs::remove_dir_all(&folder).ok();
        assert_eq!(left, vec!["kept.csv"]);
        let refused = LocalFolder::create(Path::new("s3://bucket/prefix")).err().expect("a URL is no folder");
        assert!(refused.to_string().contains("no `s3://` support"), "{refused}");
    }

    #[test]
    fn parquet_compression_names() {
        let parse = |s: &str| s.parse::<ParquetCompression>();
        assert_eq!(parse("zstd"), Ok(ParquetCompression::Zstd(1)));
        assert_eq!(parse("ZSTD:19"), Ok(ParquetCompression::Zstd(19)));
        assert_eq!(parse("snappy"), Ok(ParquetCompression::Snappy));
        assert_eq!(parse("lz4"), Ok(ParquetCompression::Lz4));
        assert_eq!(parse("none"), Ok(ParquetCompression::None));
        assert!(parse("zstd:0").unwrap_err().contains("from 1 to 22"));
        assert!(parse("gzip").unwrap_err().contains("use zstd, zstd:LEVEL (1-22), snappy, lz4 or none"));
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let mut line = String::new();
        write_csv_row(&mut line, [Some("a"), None, Some("b,\"c\""), Some("")].into_iter());
        assert_eq!(line, "a,,\"b,\"\"c\"\"\",\n");
    }

    #[test]
    fn json_lines_spell_values_as_value_to_json_does() {
        let names: Vec<String> = ["n", "i", "t", "b", "d", "c"].iter().map(|s| s.to_string()).collect();
        let values = vec![
            Value::Null,
            Value::Int(-42),
            Value::text("tab\there \"quoted\" \u{1} back\\slash é"),
            Value::Binary(vec![0xde, 0xad]),
            Value::DateTime { days: 40_000, ticks: 300 },
            Value::text("line\r\nbreak"),
        ];
        let mut line = String::new();
        write_json_object(&mut line, &names, &values);
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        for (name, value) in names.iter().zip(&values) {
            assert_eq!(parsed[name], value.to_json(), "{name}");
        }
    }

    #[test]
    fn plain_records_spell_as_the_row_by_row_path() {
        use crate::record::{tests::build_record, Record};
        use crate::types::{SqlType, TypeInfo};
        let ty = |sql_type, max_length| TypeInfo { sql_type, max_length, precision: 0, scale: 0 };
        let declared: Vec<(String, TypeInfo)> = [
            ("id", ty(SqlType::Int, 4)),
            ("amount", TypeInfo { precision: 19, scale: 4, ..ty(SqlType::Money, 8) }),
            ("flag", ty(SqlType::Bit, 1)),
            ("day", ty(SqlType::Date, 3)),
            ("name", ty(SqlType::NVarChar, 40)),
            ("note", ty(SqlType::VarChar, 20)),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect();
        let decoder =
            crate::rows::RowDecoder::from_declaration(crate::source::tests::reader(Vec::new()), "dbo.T", &declared)
                .unwrap();
        let plain = PlainLayout::of(&decoder).expect("a plain layout");
        // 2012-03-15 is day 734,576 after 0001-01-01; 12.3456 is 123,456 ten-thousandths.
        let mut fixed = 7i32.to_le_bytes().to_vec();
        fixed.extend_from_slice(&123_456i64.to_le_bytes());
        fixed.push(1);
        fixed.extend_from_slice(&734_576u32.to_le_bytes()[..3]);
        let name: Vec<u8> = "a,b\u{e9}".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let whole = build_record(&fixed, 6, &[], &[&name, b"x\"y"]);
        let nulls = build_record(&fixed, 6, &[2, 5], &[&[], b""]);
        // Written before the last four columns were added: the row-by-row path reads them NULL.
        let older = build_record(&fixed[..12], 2, &[], &[]);
        let cases = [
            (&whole, true, "7,12.3456,1,2012-03-15,\"a,b\u{e9}\",\"x\"\"y\"\n", Some("a,b\u{e9}")),
            (&nulls, true, "7,,1,2012-03-15,,\n", None),
            (&older, false, "7,12.3456,,,,\n", None),
        ];
        for (bytes, takes, csv, name) in cases {
            let record = Record::parse(bytes).unwrap();
            assert_eq!(plain.takes(&record), takes, "{csv}");
            for format in [ExportFormat::Csv, ExportFormat::Jsonl] {
                let columns = line_columns(format, &decoder, Some(&plain));
                let spell = |layout: Option<&PlainLayout>| {
                    let mut lines = Lines::default();
                    lines.push_row(format, &columns, layout, &decoder, &record).unwrap();
                    String::from_utf8(lines.text.written().to_vec()).unwrap()
                };
                let by_layout = spell(Some(&plain));
                assert_eq!(by_layout, spell(None), "{format:?}");
                if format == ExportFormat::Csv {
                    assert_eq!(by_layout, csv);
                } else {
                    let parsed: serde_json::Value = serde_json::from_str(&by_layout).unwrap();
                    assert_eq!(parsed["id"], 7);
                    assert_eq!(parsed["flag"], if takes { 1.into() } else { serde_json::Value::Null });
                    assert_eq!(parsed["name"], name.map_or(serde_json::Value::Null, Into::into));
                }
            }
        }
    }

    #[test]
    fn json_lines_escape_and_type_values() {
        let mut line = String::new();
        let names = vec!["id".to_string(), "name".to_string(), "gone".to_string()];
        write_json_object(&mut line, &names, &[Value::Int(7), Value::text("a\"b\n\u{1}"), Value::Null]);
        assert_eq!(line, "{\"id\":7,\"name\":\"a\\\"b\\n\\u0001\",\"gone\":null}\n");
    }
}
