//! `mdfkit._native`: the small native core of the `mdfkit` Python package.
//!
//! It opens databases, lists their tables and streams table rows out as Arrow record batches
//! through the [Arrow C stream interface] (`__arrow_c_stream__`), so pyarrow, polars, DuckDB and
//! pandas get the Arrow buffers the Rust scan built without a copy or a Python object per value.
//! Everything user-facing (dataclasses, `Table`, `Database`, docstrings) lives in the pure Python
//! package `mdfkit`; this module is not meant to be used directly.
//!
//! A scan runs on its own Rust thread and hands batches over a channel of one slot, so memory stays
//! bounded by a couple of batches whatever the table's size, and the consumer (pyarrow reads C
//! streams with the GIL released) can stop early: dropping the stream stops the scan.
//!
//! With the `cloud` feature, loading the module registers `mdfkit-cloud`'s URL schemes, so every
//! path may be an object URL (`s3://bucket/key`, `az://container/blob`, a signed `https://` link),
//! credentials and endpoint taken from the environment as the CLI takes them; `object_stores`
//! says whether this build has them.
//!
//! [Arrow C stream interface]: https://arrow.apache.org/docs/format/CStreamInterface.html

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, SchemaRef};
use mdfkit::catalog::model::TableInfo;
use mdfkit::export::delta::{delta_arrow_schema, delta_batch, export_delta_tables, SourceColumn};
use mdfkit::export::{export_table, export_tables, ExportDestination, ExportFormat, ExportOptions, LocalOutput};
use mdfkit::log::redo::StopPoint;
use mdfkit::scan::{Flow, ScanStats, Skipped};
use mdfkit::split::ScanSplit;
use mdfkit::value::Value;
use mdfkit::{Database, ErrorKind, ScanOptions, TimestampUnit};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList};

/// Converts a library error into the matching exception of the `mdfkit` package
/// (`mdfkit.NotADatabaseError`, `mdfkit.CorruptPageError`, ...), with the error's context as
/// attributes: `file`, `file_id`, `page_id`, `slot`, `table`, `column`, `feature`, `kind`.
fn to_py_err(py: Python<'_>, e: &mdfkit::Error) -> PyErr {
    to_py_err_in(py, e, None)
}

/// Like [`to_py_err`] for an error met reading `table`: an object named `table.column` is split
/// into the `table` and `column` attributes.
fn to_py_err_in(py: Python<'_>, e: &mdfkit::Error, table: Option<&str>) -> PyErr {
    let class = match e.kind() {
        ErrorKind::NotADatabase => "NotADatabaseError",
        ErrorKind::Corrupt => "CorruptPageError",
        ErrorKind::Unsupported => "UnsupportedFeatureError",
        ErrorKind::MissingFile => "MissingFileError",
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::Io => "IoError",
    };
    let build = || -> PyResult<PyErr> {
        let cls = py.import("mdfkit")?.getattr(class)?;
        let exc = cls.call1((e.to_string(),))?;
        exc.setattr("kind", format!("{:?}", e.kind()))?;
        exc.setattr("message", e.message())?;
        exc.setattr("file", e.file().map(|f| f.display().to_string()))?;
        exc.setattr("file_id", e.page().map(|p| p.file))?;
        exc.setattr("page_id", e.page().map(|p| p.page))?;
        exc.setattr("slot", e.slot())?;
        let object = e.object().or(table);
        let column = match (object, table) {
            (Some(o), Some(t)) => o.strip_prefix(t).and_then(|rest| rest.strip_prefix('.')),
            _ => None,
        };
        exc.setattr("table", if column.is_some() { table } else { object })?;
        exc.setattr("column", column)?;
        if e.kind() == ErrorKind::Unsupported {
            exc.setattr("feature", e.message())?;
        }
        Ok(PyErr::from_value(exc))
    };
    // Without the `mdfkit` package (the module imported on its own) the message still arrives.
    build().unwrap_or_else(|_| PyRuntimeError::new_err(e.to_string()))
}

trait IntoPy<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for mdfkit::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, &e))
    }
}

trait IntoPyIn<T> {
    fn py_err_in(self, py: Python<'_>, table: &TableInfo) -> PyResult<T>;
}

impl<T> IntoPyIn<T> for mdfkit::Result<T> {
    fn py_err_in(self, py: Python<'_>, table: &TableInfo) -> PyResult<T> {
        self.map_err(|e| to_py_err_in(py, &e, Some(&table.qualified_name())))
    }
}

/// A value of a catalog view as a Python object: int, str, bytes or None; `datetime` values as
/// their SQL Server spelling (`2012-03-15 00:00:00.000`).
fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Text(s) => s.into_pyobject(py)?.into_any(),
        Value::Binary(b) | Value::OffRow(b) => PyBytes::new(py, b).into_any(),
        Value::DateTime { .. } => v.to_string().into_pyobject(py)?.into_any(),
    })
}

/// An open database (`mdfkit.Database` wraps it).
#[pyclass(frozen, module = "mdfkit._native")]
struct NativeDatabase {
    db: Arc<Database>,
}

impl NativeDatabase {
    fn find(&self, py: Python<'_>, name: &str) -> PyResult<TableInfo> {
        self.db.catalog().find_table(name).ok_or_else(|| {
            to_py_err(py, &mdfkit::Error::not_found(format!("no table named {name}; `Database.tables` lists them")))
        })
    }
}

#[pymethods]
impl NativeDatabase {
    /// Opens the data files (`.mdf`, `.ndf`, any order) or the backup files of one database
    /// (a restore chain), its log rolled forward up to the stop point the options give
    /// ([`StopPoint::from_options`]; a bad one is a `ValueError`).
    #[new]
    #[pyo3(signature = (paths, stopat=None, stopatmark=None, stopbeforemark=None, after=None, stopatlsn=None))]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        stopat: Option<&str>,
        stopatmark: Option<&str>,
        stopbeforemark: Option<&str>,
        after: Option<&str>,
        stopatlsn: Option<&str>,
    ) -> PyResult<Self> {
        if paths.is_empty() {
            return Err(PyValueError::new_err("give at least one file"));
        }
        let stop = StopPoint::from_options(stopat, stopatmark, stopbeforemark, after, stopatlsn)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .unwrap_or_default();
        let db = py.detach(|| Database::open_until(&paths, None, stop)).py_err(py)?;
        Ok(NativeDatabase { db: Arc::new(db) })
    }

    /// The database's description ([`Database::info`]): name, versions, options, page counts,
    /// files.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = self.db.info().py_err(py)?;
        let d = PyDict::new(py);
        d.set_item("name", &info.name)?;
        d.set_item("version", info.version)?;
        d.set_item("product", info.product)?;
        d.set_item("create_version", info.create_version)?;
        d.set_item("create_product", info.create_product)?;
        d.set_item("compatibility_level", info.compatibility_level)?;
        d.set_item("collation", &info.collation)?;
        d.set_item("page_verify", info.page_verify)?;
        d.set_item("recovery_model", info.recovery_model)?;
        d.set_item("created", value_to_py(py, &info.created)?)?;
        d.set_item("pages_in_files", info.pages_in_files)?;
        d.set_item("pages_allocated", info.pages_allocated)?;
        d.set_item("pages_used", info.pages_used)?;
        d.set_item("user_tables", info.user_tables)?;
        let files = PyList::empty(py);
        for row in &info.files.rows {
            let f = PyDict::new(py);
            for (name, value) in info.files.columns.iter().zip(row) {
                f.set_item(name, value_to_py(py, value)?)?;
            }
            let file_id = row.first().and_then(Value::as_i64).unwrap_or(-1);
            f.set_item("location", info.location_of(file_id).map(|l| l.display().to_string()))?;
            files.append(f)?;
        }
        d.set_item("files", files)?;
        Ok(d)
    }

    /// The tables as dicts, user tables only unless `system`.
    #[pyo3(signature = (system = false))]
    fn tables<'py>(&self, py: Python<'py>, system: bool) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for t in self.db.tables_counted(system).py_err(py)? {
            let d = PyDict::new(py);
            d.set_item("schema", &t.schema)?;
            d.set_item("name", &t.name)?;
            d.set_item("object_id", t.object_id)?;
            d.set_item("type", &t.object_type)?;
            d.set_item("is_heap", t.is_heap)?;
            d.set_item("partitions", t.partitions.len())?;
            d.set_item("rows", t.rows())?;
            d.set_item("used_pages", t.used_pages())?;
            d.set_item("total_pages", t.partitions.iter().map(|p| p.total_pages).sum::<i64>())?;
            d.set_item("compression", t.compression_names())?;
            d.set_item("has_lob", t.has_lob)?;
            d.set_item("has_row_overflow", t.has_row_overflow)?;
            d.set_item("has_vardecimal", t.has_vardecimal)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// `schema.name` of the table `name` resolves to (case-insensitive, `dbo` preferred).
    fn resolve(&self, py: Python<'_>, name: &str) -> PyResult<(String, String)> {
        let t = self.find(py, name)?;
        Ok((t.schema, t.name))
    }

    /// The table's CREATE TABLE statement.
    fn ddl(&self, py: Python<'_>, table: &str) -> PyResult<String> {
        let t = self.find(py, table)?;
        Ok(self.db.catalog().create_table_sql(&t))
    }

    /// The Arrow schema of `table` (only `columns` when given), as an `__arrow_c_schema__` holder;
    /// with `delta_types`, the types Delta Lake and Spark hold ([`delta_arrow_schema`]).
    #[pyo3(signature = (table, columns = None, timestamps = "ns", delta_types = false))]
    fn schema(
        &self,
        py: Python<'_>,
        table: &str,
        columns: Option<Vec<String>>,
        timestamps: &str,
        delta_types: bool,
    ) -> PyResult<ArrowSchema> {
        let timestamps = parse_timestamps(timestamps)?;
        let t = self.find(py, table)?;
        let schema = self.db.arrow_schema(&t, columns.as_deref(), timestamps).py_err_in(py, &t)?;
        Ok(ArrowSchema { schema: if delta_types { delta_arrow_schema(&schema) } else { schema } })
    }

    /// A one-shot stream of the rows of `table` as Arrow record batches.
    #[pyo3(signature = (table, columns = None, limit = None, batch_size = 65_536, timestamps = "ns"))]
    fn scan(
        &self,
        py: Python<'_>,
        table: &str,
        columns: Option<Vec<String>>,
        limit: Option<u64>,
        batch_size: usize,
        timestamps: &str,
    ) -> PyResult<Stream> {
        if batch_size == 0 {
            return Err(PyValueError::new_err("batch_size must be at least 1"));
        }
        let timestamps = parse_timestamps(timestamps)?;
        let t = self.find(py, table)?;
        // The schema is computed now so that an unknown column or an undecodable type is raised
        // here, as the right exception, before any consumer sees the stream.
        let schema = self.db.arrow_schema(&t, columns.as_deref(), timestamps).py_err_in(py, &t)?;
        let options = ScanOptions { columns, batch_size, limit, salvage: false, timestamps };
        let name = t.qualified_name();
        let mut stream = Stream::new(schema, Source::Scan { db: Arc::clone(&self.db), table: t, options });
        stream.table = Some(name);
        Ok(stream)
    }

    /// The scan of `table` cut into splits of about `target_bytes` of pages
    /// ([`mdfkit::split`]), each as JSON; `sources` are the database's files as a worker will
    /// open them. Each split carries the timestamp unit and whether to salvage.
    #[pyo3(signature = (table, sources, target_bytes, columns = None, timestamps = "ns", salvage = false))]
    #[allow(clippy::too_many_arguments)]
    fn splits(
        &self,
        py: Python<'_>,
        table: &str,
        sources: Vec<String>,
        target_bytes: u64,
        columns: Option<Vec<String>>,
        timestamps: &str,
        salvage: bool,
    ) -> PyResult<Vec<String>> {
        let timestamps = parse_timestamps(timestamps)?;
        let t = self.find(py, table)?;
        let db = &self.db;
        let splits = py
            .detach(|| {
                db.scan(&t).columns(columns).timestamps(timestamps).salvage(salvage).splits(
                    &sources,
                    None,
                    target_bytes,
                )
            })
            .py_err_in(py, &t)?;
        Ok(splits.iter().map(ScanSplit::to_json).collect())
    }

    /// Page `id` (`1:153`) taken apart ([`mdfkit::anatomy::PageAnatomy::to_json`]): the JSON
    /// `mdfkit page --format json` prints, as text.
    fn page(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        let id = mdfkit::anatomy::parse_page_id(id).py_err(py)?;
        let db = &self.db;
        let page = py.detach(|| mdfkit::anatomy::read_database_page(db, id)).py_err(py)?;
        Ok(page.to_json().to_string())
    }

    /// The rows of a catalog view (`sys.columns`) or system base table, as a one-batch stream:
    /// integer columns as int64, binary as binary, everything else as its SQL Server spelling.
    fn view(&self, py: Python<'_>, name: &str) -> PyResult<Stream> {
        let rows = py.detach(|| self.db.catalog().view(name)).py_err(py)?;
        let batch = rows.to_record_batch().py_err(py)?;
        Ok(Stream::new(batch.schema(), Source::Batches(vec![batch])))
    }

    /// Writes `table` to `path` as `format` (parquet, arrow, csv, jsonl); returns rows, bytes,
    /// seconds and ghost records skipped. The GIL is released while writing.
    #[pyo3(signature = (table, format, path, columns = None, compression = "zstd", threads = None, timestamps = "ns"))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn export<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        format: &str,
        path: PathBuf,
        columns: Option<Vec<String>>,
        compression: &str,
        threads: Option<usize>,
        timestamps: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (format, options) = export_settings(format, columns, compression, threads, timestamps)?;
        let format = format.ok_or_else(|| PyValueError::new_err("a Delta Lake table is written by export_tables"))?;
        let t = self.find(py, table)?;
        let db = &self.db;
        let stats = py
            .detach(|| export_table(db, &t, format, Box::new(LocalOutput::create(&path)?), &options, |_| {}))
            .py_err_in(py, &t)?;
        let d = PyDict::new(py);
        d.set_item("rows", stats.rows)?;
        d.set_item("bytes", stats.bytes)?;
        d.set_item("seconds", stats.seconds)?;
        d.set_item("ghost_records", stats.ghost_records)?;
        Ok(d)
    }

    /// Writes `tables` (all user tables when `None`) into `out` as `SCHEMA.TABLE.EXT`
    /// ([`mdfkit::export::export_tables`]), or for `delta` appends each to the Delta table
    /// `SCHEMA.TABLE` ([`export_delta_tables`]; `source_column`: a column's name and value naming
    /// the database): a folder, or with the `cloud` feature an object prefix. A failed table does
    /// not stop the others; returns a dict per table: `table`, `name`, `rows`, `bytes`,
    /// `seconds`, `error` (the exception, or None). The GIL is released while writing.
    #[pyo3(signature = (out, format, tables = None, compression = "zstd", threads = None, timestamps = "ns", source_column = None))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn export_tables<'py>(
        &self,
        py: Python<'py>,
        out: PathBuf,
        format: &str,
        tables: Option<Vec<String>>,
        compression: &str,
        threads: Option<usize>,
        timestamps: &str,
        source_column: Option<(String, String)>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (format, options) = export_settings(format, None, compression, threads, timestamps)?;
        let source = source_column.map(|(name, value)| SourceColumn { name, value });
        let chosen = match tables {
            Some(names) => names.iter().map(|n| self.find(py, n)).collect::<PyResult<Vec<_>>>()?,
            None => self.db.catalog().tables(false),
        };
        let db = &self.db;
        let report = py
            .detach(|| {
                let destination = export_destination(&out)?;
                match format {
                    Some(format) => export_tables(db, &chosen, format, destination.as_ref(), &options, |_| {}),
                    None => export_delta_tables(db, &chosen, destination.as_ref(), &options, source.as_ref(), |_| {}),
                }
            })
            .py_err(py)?;
        let results = PyList::empty(py);
        for done in &report.tables {
            let d = PyDict::new(py);
            d.set_item("table", &done.table)?;
            d.set_item("name", &done.name)?;
            match &done.result {
                Ok(stats) => {
                    d.set_item("rows", stats.rows)?;
                    d.set_item("bytes", stats.bytes)?;
                    d.set_item("seconds", stats.seconds)?;
                    d.set_item("error", py.None())?;
                }
                Err(e) => d.set_item("error", to_py_err_in(py, e, Some(&done.table)).value(py))?,
            }
            results.append(d)?;
        }
        Ok(results)
    }
}

/// Where an export into `out` goes: with the `cloud` feature an object prefix for bucket URLs;
/// otherwise (and for paths) a local folder, which refuses URLs by name.
fn export_destination(out: &Path) -> mdfkit::Result<Box<dyn ExportDestination>> {
    #[cfg(feature = "cloud")]
    return mdfkit_cloud::export::destination(out);
    #[cfg(not(feature = "cloud"))]
    Ok(Box::new(mdfkit::export::LocalFolder::create(out)?))
}

/// The format (`None`: Delta Lake) and options of an export from the Python arguments
/// (`threads`: all cores when `None`); a bad argument is a `ValueError`.
fn export_settings(
    format: &str,
    columns: Option<Vec<String>>,
    compression: &str,
    threads: Option<usize>,
    timestamps: &str,
) -> PyResult<(Option<ExportFormat>, ExportOptions)> {
    if threads == Some(0) {
        return Err(PyValueError::new_err("threads must be at least 1"));
    }
    let format = parse_format(format)?;
    let compression = compression.parse().map_err(PyValueError::new_err)?;
    let threads = threads.unwrap_or_else(mdfkit::export::all_cores);
    let timestamps = parse_timestamps(timestamps)?;
    Ok((format, ExportOptions { columns, threads, salvage: false, compression, timestamps }))
}

/// The unit of datetime2(7) / datetimeoffset(7) timestamps by name: `ns` (exact, years 1677 to
/// 2262) or `us` (every year, the 100 ns digit dropped).
fn parse_timestamps(unit: &str) -> PyResult<TimestampUnit> {
    match unit {
        "ns" => Ok(TimestampUnit::Nanosecond),
        "us" => Ok(TimestampUnit::Microsecond),
        other => Err(PyValueError::new_err(format!("timestamps must be \"ns\" or \"us\", not {other:?}"))),
    }
}

/// An export format by name: parquet, arrow (Arrow IPC stream), csv, jsonl, or delta (`None`).
fn parse_format(format: &str) -> PyResult<Option<ExportFormat>> {
    Ok(Some(match format.to_ascii_lowercase().as_str() {
        "parquet" => ExportFormat::Parquet,
        "arrow" | "arrows" | "ipc" => ExportFormat::Arrow,
        "csv" => ExportFormat::Csv,
        "jsonl" | "json" => ExportFormat::Jsonl,
        "delta" => return Ok(None),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown format {other:?}: use parquet, arrow, csv, jsonl or delta"
            )))
        }
    }))
}

/// An Arrow schema exported through `__arrow_c_schema__`.
#[pyclass(frozen, module = "mdfkit._native")]
struct ArrowSchema {
    schema: SchemaRef,
}

#[pymethods]
impl ArrowSchema {
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi =
            FFI_ArrowSchema::try_from(self.schema.as_ref()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyCapsule::new(py, ffi, Some(CString::from(c"arrow_schema")))
    }
}

/// Where a stream's batches come from.
enum Source {
    /// A table scan, started on its own thread when the consumer asks for the first batch.
    Scan { db: Arc<Database>, table: TableInfo, options: ScanOptions },
    /// One split of a table scan, read on its own thread like a scan; with `delta_types`, its
    /// batches cast to the types Delta Lake and Spark hold ([`delta_batch`]).
    Split { db: Arc<Database>, split: ScanSplit, batch_size: usize, delta_types: bool },
    /// Batches already built (catalog views).
    Batches(Vec<RecordBatch>),
}

/// The error of a scan, kept for the Python side to raise as the right exception: through the C
/// stream interface a consumer sees only a message.
type ErrorSlot = Arc<Mutex<Option<mdfkit::Error>>>;

/// The pages and records a salvage read skipped, kept for the Python side once the stream ends.
type SkippedSlot = Arc<Mutex<Vec<Skipped>>>;

/// A one-shot stream of record batches, exported through `__arrow_c_stream__`.
#[pyclass(frozen, module = "mdfkit._native")]
struct Stream {
    schema: SchemaRef,
    source: Mutex<Option<Source>>,
    error: ErrorSlot,
    skipped: SkippedSlot,
    /// The table scanned, for the errors' `table` attribute.
    table: Option<String>,
}

impl Stream {
    fn new(schema: SchemaRef, source: Source) -> Self {
        Stream { schema, source: Mutex::new(Some(source)), error: Arc::default(), skipped: Arc::default(), table: None }
    }
}

#[pymethods]
impl Stream {
    /// The stream as an `arrow_array_stream` PyCapsule; `requested_schema` is not honoured (the
    /// interface allows that): the batches come with the table's own types.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let source =
            self.source.lock().unwrap_or_else(PoisonError::into_inner).take().ok_or_else(|| {
                PyRuntimeError::new_err("this stream was already consumed; ask the table for a new one")
            })?;
        let reader = BatchReader {
            schema: Arc::clone(&self.schema),
            state: ReaderState::NotStarted(Box::new(source)),
            error: Arc::clone(&self.error),
            skipped: Arc::clone(&self.skipped),
        };
        let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, ffi, Some(CString::from(c"arrow_array_stream")))
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        ArrowSchema { schema: Arc::clone(&self.schema) }.__arrow_c_schema__(py)
    }

    /// What a salvage read skipped, once the stream ended: `(file_id, page_id, slot, reason)`
    /// each (ids and slot `None` where the damage had none).
    fn skipped(&self) -> Vec<SkippedPlace> {
        let skipped = self.skipped.lock().unwrap_or_else(PoisonError::into_inner);
        skipped.iter().map(|s| (s.page.map(|p| p.file), s.page.map(|p| p.page), s.slot, s.reason.clone())).collect()
    }

    /// The error that ended the scan, as the matching `mdfkit` exception (None if none).
    fn take_error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        let e = self.error.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Some(to_py_err_in(py, &e, self.table.as_deref()).into_value(py).into_any())
    }
}

/// One thing a salvage read skipped, as Python gets it: file id, page id, slot and reason.
type SkippedPlace = (Option<u16>, Option<u32>, Option<u16>, String);

enum ReaderState {
    NotStarted(Box<Source>),
    Scanning { rx: Receiver<Result<RecordBatch, ArrowError>>, thread: Option<JoinHandle<()>> },
    Batches(std::vec::IntoIter<RecordBatch>),
    Done,
}

/// The `RecordBatchReader` behind the C stream: batches from the scan thread, in order.
struct BatchReader {
    schema: SchemaRef,
    state: ReaderState,
    error: ErrorSlot,
    skipped: SkippedSlot,
}

impl BatchReader {
    fn start(&mut self, source: Source) {
        self.state = match source {
            Source::Batches(batches) => ReaderState::Batches(batches.into_iter()),
            Source::Scan { db, table, options } => {
                self.spawn(move |send| db.scan(&table).options(&options).batches(send))
            }
            Source::Split { db, split, batch_size, delta_types: false } => {
                self.spawn(move |send| split.read(&db, batch_size, send))
            }
            Source::Split { db, split, batch_size, delta_types: true } => {
                let schema = Arc::clone(&self.schema);
                self.spawn(move |send| split.read(&db, batch_size, |batch| send(delta_batch(&batch, &schema)?)))
            }
        };
    }

    /// Runs `read` on a thread of its own, its batches handed over a channel of one slot (the
    /// reader builds the next batch while the consumer holds the last one); its error is kept for
    /// `take_error`, what it skipped for `skipped`.
    fn spawn(
        &self,
        read: impl FnOnce(&mut dyn FnMut(RecordBatch) -> mdfkit::Result<Flow>) -> mdfkit::Result<ScanStats> + Send + 'static,
    ) -> ReaderState {
        let (tx, rx) = sync_channel(1);
        let slot = Arc::clone(&self.error);
        let skipped = Arc::clone(&self.skipped);
        let spawned = std::thread::Builder::new().name("mdfkit-scan".into()).spawn(move || {
            // A send fails when the consumer dropped the stream: stop reading.
            let result = read(&mut |batch| Ok(if tx.send(Ok(batch)).is_ok() { Flow::Continue } else { Flow::Stop }));
            match result {
                // Kept before the channel closes: the consumer asks once it saw the end.
                Ok(stats) => *skipped.lock().unwrap_or_else(PoisonError::into_inner) = stats.skipped,
                Err(e) => {
                    let message = e.to_string();
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    tx.send(Err(ArrowError::ExternalError(message.into()))).ok();
                }
            }
        });
        match spawned {
            Ok(thread) => ReaderState::Scanning { rx, thread: Some(thread) },
            Err(e) => {
                let (tx, rx) = sync_channel(1);
                tx.send(Err(ArrowError::ExternalError(format!("cannot start the scan thread: {e}").into()))).ok();
                ReaderState::Scanning { rx, thread: None }
            }
        }
    }
}

impl Iterator for BatchReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if matches!(self.state, ReaderState::NotStarted(_)) {
            if let ReaderState::NotStarted(source) = std::mem::replace(&mut self.state, ReaderState::Done) {
                self.start(*source);
            }
        }
        match &mut self.state {
            ReaderState::NotStarted(_) | ReaderState::Done => None,
            ReaderState::Batches(batches) => batches.next().map(Ok),
            ReaderState::Scanning { rx, thread } => match rx.recv() {
                Ok(Ok(batch)) => Some(Ok(batch)),
                Ok(Err(e)) => {
                    self.state = ReaderState::Done;
                    Some(Err(e))
                }
                Err(_) => {
                    // The scan finished (its sender is gone); a panic there is an error, not an end.
                    let panicked = thread.take().map(|t| t.join().is_err()).unwrap_or(false);
                    self.state = ReaderState::Done;
                    panicked.then(|| Err(ArrowError::ExternalError("mdfkit: the scan thread panicked".into())))
                }
            },
        }
    }
}

impl RecordBatchReader for BatchReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

/// Databases this process opened for splits, by their sources, backup set and stop point (a
/// chain read at STOPAT is another database than at its end): a worker reading many splits of
/// one database opens it once. The last few are kept.
static SPLIT_SOURCES: Mutex<Vec<(SplitSource, Arc<Database>)>> = Mutex::new(Vec::new());

/// What [`SPLIT_SOURCES`] knows a database by: a split's sources, position and stop point.
type SplitSource = (Vec<String>, Option<u16>, StopPoint);

/// Databases [`SPLIT_SOURCES`] keeps open.
const SPLIT_SOURCES_KEPT: usize = 4;

/// The database of `split`, from [`SPLIT_SOURCES`] or opened now (and kept).
fn split_database(split: &ScanSplit) -> mdfkit::Result<Arc<Database>> {
    let cache = || SPLIT_SOURCES.lock().unwrap_or_else(PoisonError::into_inner);
    let source = (split.sources.clone(), split.position, split.stop.clone());
    if let Some((_, db)) = cache().iter().find(|(kept, _)| *kept == source) {
        return Ok(Arc::clone(db));
    }
    let db = Arc::new(split.open()?);
    let mut kept = cache();
    kept.push((source, Arc::clone(&db)));
    if kept.len() > SPLIT_SOURCES_KEPT {
        kept.remove(0);
    }
    Ok(db)
}

/// Reads one split (its JSON, from `NativeDatabase.splits`): a one-shot stream of its rows, with
/// `delta_types` cast to the types Delta Lake and Spark hold. The split's database is opened on
/// first use in this process and kept for the next splits.
#[pyfunction]
#[pyo3(signature = (split, batch_size = 65_536, delta_types = false))]
fn read_split(py: Python<'_>, split: &str, batch_size: usize, delta_types: bool) -> PyResult<Stream> {
    if batch_size == 0 {
        return Err(PyValueError::new_err("batch_size must be at least 1"));
    }
    let split = ScanSplit::from_json(split).py_err(py)?;
    let (db, schema) = py
        .detach(|| {
            let db = split_database(&split)?;
            let schema = split.schema(&db)?;
            let schema = if delta_types { delta_arrow_schema(&schema) } else { schema };
            Ok::<_, mdfkit::Error>((db, schema))
        })
        .map_err(|e| to_py_err_in(py, &e, Some(&split.table)))?;
    let mut stream = Stream::new(schema, Source::Split { db, split: split.clone(), batch_size, delta_types });
    stream.table = Some(split.table);
    Ok(stream)
}

/// The native core of the `mdfkit` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    #[cfg(feature = "cloud")]
    mdfkit_cloud::register();
    m.add("object_stores", cfg!(feature = "cloud"))?;
    m.add_class::<NativeDatabase>()?;
    m.add_function(wrap_pyfunction!(read_split, m)?)?;
    m.add_class::<Stream>()?;
    m.add_class::<ArrowSchema>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
