//! Delta Lake tables: each exported table appended to the Delta table `SCHEMA.TABLE` in the
//! destination, one commit per export, written here without delta-rs.
//!
//! Layout, from the Delta Transaction Log Protocol (delta-io/delta, `PROTOCOL.md`: "Delta Log
//! Entries", "Actions", "Schema Serialization Format", "Timestamp without timezone"):
//! ```text
//! SCHEMA.TABLE/part-00000-UUID-c000.parquet          data files (Parquet as `export` writes them)
//! SCHEMA.TABLE/_delta_log/00000000000000000000.json  version 0: one JSON action per line
//! SCHEMA.TABLE/_delta_log/00000000000000000001.json  version 1, ...
//! ```
//! - A version's file is named by its number on 20 zero-padded digits. Writers need *mutual
//!   exclusion*: two writers must never both create the same version, so each commit file is
//!   created only where none exists ([`ExportDestination::create_new`]: a local hard link, an
//!   object store's put-if-absent); the loser reads the log again and tries the next version.
//! - Version 0 holds `protocol` (`minReaderVersion` 1, `minWriterVersion` 2; a table with a
//!   `timestamp_ntz` column needs reader 3 / writer 7 with the table feature `timestampNtz` in
//!   `readerFeatures` and `writerFeatures`) and `metaData` (`id` a UUID, `format` `{"provider":
//!   "parquet","options":{}}`, `schemaString` the schema serialised as JSON, `partitionColumns`,
//!   `configuration`, `createdTime` in ms). Every version holds `commitInfo` (free-form:
//!   `timestamp`, `operation`, `operationParameters`, `engineInfo`) and one `add` per data file:
//!   `path` (relative, URI-encoded), `partitionValues`, `size` (bytes), `modificationTime` (ms),
//!   `dataChange` (true), `stats` (a JSON string: `numRecords`, per-column bounds and null
//!   counts, gathered while the file is written: `export/delta_stats.rs`).
//! - Schema: `{"type":"struct","fields":[{"name","type","nullable","metadata"}]}` (metadata
//!   free-form: the reader's `mdfkit.sql_type`), primitive
//!   types spelled `boolean byte short integer long float double string binary date timestamp
//!   timestamp_ntz decimal(P,S)`, nested structs as `{"type":"struct","fields":[...]}`.
//!   `timestamp` is UTC-adjusted, `timestamp_ntz` local; both in microseconds (the reader's
//!   [`crate::TimestampUnit::Microsecond`] is forced, as `export --timestamps us` would).
//!
//! Types Delta lacks are cast to the nearest it has, values kept where the target can hold them
//! (the one home of these casts: Python's `export(format="delta")` writes through this module and
//! its Spark data source reads splits cast by [`delta_batch`]; Spark has the same gaps):
//! tinyint (UInt8) → short (0..255 does not fit a signed byte), uniqueidentifier / rowversion
//! (fixed-size binary) → binary, time → string `HH:MM:SS.ffffff` or `HH:MM:SS.fffffffff` (no
//! time-of-day type; pyarrow's spelling: six or nine digits), datetime / smalldatetime (ms, s)
//! → microseconds (lossless), datetime2(7) / datetimeoffset(7) (ns) → microseconds (the 100 ns
//! digit dropped). Struct columns (datetimeoffset, geometry, sql_variant) are cast field by field.
//!
//! A [`SourceColumn`] may follow the table's columns: a string naming the database each row came
//! from, to tell apart the rows of many databases appended to one table.
//!
//! Appending checks the table first: its schema must be the export's (names, types,
//! nullability), and its protocol one this writer satisfies (writer version 2 at most, or 7
//! with only `appendOnly`, `invariants`, `timestampNtz`). The latest `protocol` and `metaData`
//! are found reading back from the newest commit only as far as needed: down to the newest
//! complete checkpoint at most (other writers make them; this one does not), whose Parquet
//! file(s) hold them (PROTOCOL.md "Checkpoints": `V.checkpoint.parquet`, or the parts
//! `V.checkpoint.PART.PARTS.parquet` with 10-digit part numbers; one action per row, in the
//! columns `protocol` {`minReaderVersion`, `minWriterVersion`, `readerFeatures`,
//! `writerFeatures`} and `metaData` {`schemaString`, ...}; only those two columns are read, once
//! `export/parquet_guard.rs` has checked the file's footer and those columns' page headers, and
//! a file claiming more rows than it has bytes is refused).
//! The listing names every checkpoint, so `_last_checkpoint` (a hint) is not read. A log
//! whose commits before its first checkpoint were cleaned up is read from that checkpoint; one
//! with neither commits nor a complete checkpoint is refused rather than guessed at.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Time64MicrosecondType, Time64NanosecondType};
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type,
};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use serde_json::{json, Value as Json};

use super::delta_stats::FileStats;
use super::parquet_guard;
use super::{export_each, ExportDestination, ExportEvent, ExportOptions, ExportReport, ExportStats};
use crate::catalog::model::TableInfo;
use crate::database::Database;
use crate::error::{Error, ErrorKind, Result};

/// The folder of the log inside a table's folder.
const LOG_FOLDER: &str = "_delta_log";
/// Commits tried before giving up when other writers keep taking the next version.
const COMMIT_ATTEMPTS: u32 = 16;
/// Writer table features an append by this writer respects.
const WRITER_FEATURES_KNOWN: [&str; 3] = ["appendOnly", "invariants", "timestampNtz"];

/// A column added after a table's own, naming the database its rows came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceColumn {
    /// The column's name.
    pub name: String,
    /// Its value in every row of the export (the database's first file, say).
    pub value: String,
}

/// The Delta table a table goes to: `SCHEMA.TABLE` (a folder of the destination).
pub fn table_folder(table: &TableInfo) -> String {
    table.qualified_name()
}

/// Appends each of `tables` to its Delta table ([`table_folder`]) in `destination`, created by the
/// first export, one commit per table; like [`super::export_tables`] otherwise (a failed table
/// leaves no commit and does not stop the others; a salvage report goes beside the folder).
/// With `source`, its column follows each table's columns.
pub fn export_delta_tables(
    db: &Database,
    tables: &[TableInfo],
    destination: &dyn ExportDestination,
    options: &ExportOptions,
    source: Option<&SourceColumn>,
    on_event: impl FnMut(ExportEvent<'_>),
) -> Result<ExportReport> {
    let options = ExportOptions { timestamps: crate::TimestampUnit::Microsecond, ..options.clone() };
    export_each(
        tables,
        destination,
        table_folder,
        |table, folder, progress| {
            append_table(db, table, destination, folder, &options, source, progress).map_err(|e| {
                if e.object().is_none() {
                    e.in_object(table.qualified_name())
                } else {
                    e
                }
            })
        },
        on_event,
    )
}

/// Writes `table` as a data file in `folder`, then commits it as the table's next version.
fn append_table(
    db: &Database,
    table: &TableInfo,
    destination: &dyn ExportDestination,
    folder: &str,
    options: &ExportOptions,
    source: Option<&SourceColumn>,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportStats> {
    let started = std::time::Instant::now();
    let scan = db
        .scan(table)
        .columns(options.columns.clone())
        .salvage(options.salvage)
        .threads(options.threads.max(1))
        .timestamps(options.timestamps);
    let cast = delta_arrow_schema(scan.schema()?.as_ref());
    let schema = match source {
        None => cast.clone(),
        Some(source) => {
            let mut fields = cast.fields().to_vec();
            fields.push(Arc::new(Field::new(&source.name, DataType::Utf8, true)));
            Arc::new(Schema::new_with_metadata(fields, cast.metadata().clone()))
        }
    };
    let schema_json = delta_schema(&schema)?;
    // Refused before a row is read when the table exists with another schema.
    let log = read_log(destination, folder)?;
    check_appendable(&log, &schema_json, folder)?;

    let file_name = format!("part-00000-{}-c000.parquet", unique_id());
    let mut out = destination.create(&format!("{folder}/{file_name}"))?;
    let location = out.location().parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let mut rows = 0u64;
    let mut file_stats = FileStats::new(schema.fields());
    let stats =
        super::write_parquet(&scan, out.as_mut(), schema.clone(), options, &mut rows, &mut |n| progress(n), |batch| {
            let mut batch = delta_batch(&batch, &cast)?;
            if let Some(source) = source {
                let mut columns = batch.columns().to_vec();
                columns.push(Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                    source.value.as_str(),
                    batch.num_rows(),
                ))));
                batch = RecordBatch::try_new(schema.clone(), columns).map_err(cast_error)?;
            }
            file_stats.add(&batch);
            Ok(batch)
        })?;
    let size = out.finish()?;
    let add = json!({"add": {
        "path": file_name,
        "partitionValues": {},
        "size": size,
        "modificationTime": now_ms(),
        "dataChange": true,
        "stats": file_stats.to_json(),
    }});
    commit(destination, folder, &schema_json, add, log)?;
    Ok(ExportStats {
        rows,
        bytes: size,
        seconds: started.elapsed().as_secs_f64(),
        ghost_records: stats.ghost_records,
        skipped: stats.skipped,
        location,
    })
}

/// Commits `add` as the next version of the table in `folder` after `log` (with the protocol
/// and metadata when it is the first), reading the log again and trying the version after when
/// another writer took one.
fn commit(destination: &dyn ExportDestination, folder: &str, schema: &Json, add: Json, log: LogState) -> Result<u64> {
    let mut log = log;
    for attempt in 0..COMMIT_ATTEMPTS {
        if attempt > 0 {
            log = read_log(destination, folder)?;
            check_appendable(&log, schema, folder)?;
        }
        let version = log.latest.map_or(0, |v| v + 1);
        let mut lines = vec![json!({"commitInfo": {
            "timestamp": now_ms(),
            "operation": "WRITE",
            "operationParameters": {"mode": "Append"},
            "isBlindAppend": true,
            "engineInfo": concat!("mdfkit/", env!("CARGO_PKG_VERSION")),
        }})];
        if log.latest.is_none() {
            lines.push(json!({"protocol": protocol_for(schema)}));
            lines.push(json!({"metaData": {
                "id": unique_id(),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema.to_string(),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": now_ms(),
            }}));
        }
        lines.push(add.clone());
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        if destination.create_new(&commit_name(folder, version), text.as_bytes())? {
            return Ok(version);
        }
    }
    Err(Error::new(
        ErrorKind::Io,
        format!("{folder}: other writers took {COMMIT_ATTEMPTS} versions in a row; the data file is written but not committed"),
    ))
}

/// The name of version `version`'s commit file.
pub fn commit_name(folder: &str, version: u64) -> String {
    format!("{folder}/{LOG_FOLDER}/{version:020}.json")
}

/// What the log of an existing table says (all `None` for a table not created yet).
#[derive(Debug, Default)]
struct LogState {
    latest: Option<u64>,
    /// The latest `protocol` and `metaData` actions.
    protocol: Option<Json>,
    metadata: Option<Json>,
}

/// Reads the log of the table in `folder`: the latest version, then the commits from the latest
/// back until the protocol and the metadata are known, then the newest complete checkpoint if
/// they are not (see the module).
fn read_log(destination: &dyn ExportDestination, folder: &str) -> Result<LogState> {
    let log_folder = format!("{folder}/{LOG_FOLDER}");
    let names = destination.list(&log_folder)?;
    let checkpoint = newest_checkpoint(&names);
    let floor = checkpoint.as_ref().map(|(version, _)| *version);
    let mut versions: Vec<u64> =
        names.iter().filter_map(|name| commit_version(name)).filter(|&v| floor.is_none_or(|f| v > f)).collect();
    versions.sort_unstable();
    let mut state = LogState { latest: versions.last().copied().or(floor), ..LogState::default() };
    if state.latest.is_none() && names.iter().any(|n| n.contains(".checkpoint")) {
        return Err(unsupported_table(folder, "its log holds no commit and no complete checkpoint"));
    }
    for &version in versions.iter().rev() {
        let name = commit_name(folder, version);
        let bytes = destination.read(&name)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| Error::corrupt(format!("{name}: not UTF-8")))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Json = serde_json::from_str(line)
                .map_err(|e| Error::corrupt(format!("{name}: a line is not a JSON action: {e}")))?;
            if state.protocol.is_none() {
                state.protocol = action.get("protocol").cloned();
            }
            if state.metadata.is_none() {
                state.metadata = action.get("metaData").cloned();
            }
        }
        if state.protocol.is_some() && state.metadata.is_some() {
            return Ok(state);
        }
    }
    if let Some((version, parts)) = checkpoint {
        for part in parts {
            read_checkpoint(destination, &format!("{log_folder}/{part}"), &mut state)?;
            if state.protocol.is_some() && state.metadata.is_some() {
                return Ok(state);
            }
        }
        return Err(Error::corrupt(format!("{folder}: checkpoint {version} holds no protocol and metadata")));
    }
    match state.latest {
        None => Ok(state),
        Some(_) => Err(unsupported_table(folder, "its log has no protocol and metadata before a checkpoint")),
    }
}

/// The newest checkpoint all of whose parts are in `names` (the log folder's listing): its
/// version and its files.
fn newest_checkpoint(names: &[String]) -> Option<(u64, Vec<String>)> {
    use std::collections::BTreeMap;
    // (version, parts) → the parts present, by number.
    let mut found: BTreeMap<(u64, u64), BTreeMap<u64, &String>> = BTreeMap::new();
    for name in names {
        if let Some((version, part, parts)) = checkpoint_part(name) {
            found.entry((version, parts)).or_default().insert(part, name);
        }
    }
    found
        .into_iter()
        .rev()
        .find(|((_, parts), present)| present.len() as u64 == *parts)
        .map(|((version, _), present)| (version, present.into_values().cloned().collect()))
}

/// What a checkpoint file's name says: version, part and parts (`1, 1` for a single file).
fn checkpoint_part(name: &str) -> Option<(u64, u64, u64)> {
    let (digits, rest) = name.split_once(".checkpoint.")?;
    let number = |text: &str, width: usize| {
        (text.len() == width && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse::<u64>().ok())?
    };
    let version = number(digits, 20)?;
    if rest == "parquet" {
        return Some((version, 1, 1));
    }
    let (part, parts) = rest.strip_suffix(".parquet")?.split_once('.')?;
    let (part, parts) = (number(part, 10)?, number(parts, 10)?);
    (1..=parts).contains(&part).then_some((version, part, parts))
}

/// Takes the `protocol` and `metaData` of checkpoint file `name` into `state` where it has none.
fn read_checkpoint(destination: &dyn ExportDestination, name: &str, state: &mut LogState) -> Result<()> {
    use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ProjectionMask;
    use parquet::file::metadata::PageIndexPolicy;
    let unreadable = |e: &dyn std::fmt::Display| Error::corrupt(format!("{name}: not a readable checkpoint: {e}"));
    let bytes = bytes::Bytes::from(destination.read(name)?);
    // The crate decodes the footer and page headers of a file from anywhere in time unbounded
    // by its size unless checked first (`parquet_guard.rs`); it reads no page index (the
    // guard does not check one) and no embedded Arrow schema (the Parquet types suffice).
    parquet_guard::check_footer(&bytes).map_err(|e| unreadable(&e))?;
    let options =
        ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Skip).with_skip_arrow_metadata(true);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(bytes.clone(), options).map_err(|e| unreadable(&e))?;
    // Only the two actions' columns: the `add` rows are most of a checkpoint.
    let roots: Vec<usize> = builder
        .parquet_schema()
        .root_schema()
        .get_fields()
        .iter()
        .enumerate()
        .filter(|(_, field)| matches!(field.name(), "protocol" | "metaData"))
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    parquet_guard::check_pages(&bytes, builder.metadata(), &mask).map_err(|e| unreadable(&e))?;
    // The reader's work grows with the rows, and a run of nulls takes a few bytes whatever its
    // length; a checkpoint row is an action holding strings (an add's path, ...).
    let row_counts = || builder.metadata().row_groups().iter().map(|group| group.num_rows());
    let rows: i128 = row_counts().map(i128::from).sum();
    if row_counts().any(|n| n < 0) || rows > bytes.len() as i128 {
        return Err(unreadable(&format!("its row groups claim {rows} rows in {} bytes", bytes.len())));
    }
    for batch in builder.with_projection(mask).build().map_err(|e| unreadable(&e))? {
        let batch = batch.map_err(|e| unreadable(&e))?;
        let action = |column: &str| batch.column_by_name(column).and_then(|a| a.as_struct_opt()).cloned();
        if state.protocol.is_none() {
            state.protocol = action("protocol").and_then(|p| checkpoint_protocol(&p));
        }
        if state.metadata.is_none() {
            state.metadata = action("metaData").and_then(|m| checkpoint_metadata(&m));
        }
    }
    Ok(())
}

/// The first `protocol` action of a checkpoint's column, as the JSON action a commit holds.
fn checkpoint_protocol(column: &StructArray) -> Option<Json> {
    let row = (0..column.len()).find(|&i| column.is_valid(i))?;
    let version = |name: &str| {
        let array = column.column_by_name(name)?;
        array.is_valid(row).then_some(())?;
        match array.data_type() {
            DataType::Int32 => Some(i64::from(array.as_primitive::<arrow_array::types::Int32Type>().value(row))),
            DataType::Int64 => Some(array.as_primitive::<arrow_array::types::Int64Type>().value(row)),
            _ => None,
        }
    };
    let mut protocol =
        json!({"minReaderVersion": version("minReaderVersion")?, "minWriterVersion": version("minWriterVersion")?});
    for key in ["readerFeatures", "writerFeatures"] {
        let Some(list) = column.column_by_name(key).and_then(|a| a.as_list_opt::<i32>()) else { continue };
        if list.is_valid(row) {
            let features = list.value(row);
            let names: Vec<Json> =
                features.as_string_opt::<i32>()?.iter().flatten().map(|f| Json::String(f.to_string())).collect();
            protocol[key] = Json::Array(names);
        }
    }
    Some(protocol)
}

/// The first `metaData` action of a checkpoint's column: its `schemaString` (all that is checked).
fn checkpoint_metadata(column: &StructArray) -> Option<Json> {
    let row = (0..column.len()).find(|&i| column.is_valid(i))?;
    let schema = column.column_by_name("schemaString")?.as_string_opt::<i32>()?;
    schema.is_valid(row).then(|| json!({"schemaString": schema.value(row)}))
}

/// The version a log file name holds (`00000000000000000007.json` → 7).
fn commit_version(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".json")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
}

/// Refuses to append to a table whose schema or protocol this export does not match.
fn check_appendable(log: &LogState, schema: &Json, folder: &str) -> Result<()> {
    let (Some(protocol), Some(metadata)) = (&log.protocol, &log.metadata) else {
        return Ok(());
    };
    let features = |key: &str| -> Vec<String> {
        protocol
            .get(key)
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .map(String::from)
            .collect()
    };
    let reader = protocol.get("minReaderVersion").and_then(Json::as_u64).unwrap_or(0);
    let writer = protocol.get("minWriterVersion").and_then(Json::as_u64).unwrap_or(0);
    let unknown: Vec<String> =
        features("writerFeatures").into_iter().filter(|f| !WRITER_FEATURES_KNOWN.contains(&f.as_str())).collect();
    let readable = reader <= 1 || (reader == 3 && features("readerFeatures").iter().all(|f| f == "timestampNtz"));
    if !readable || !(writer <= 2 || (writer == 7 && unknown.is_empty())) {
        return Err(unsupported_table(
            folder,
            &format!(
                "its protocol (reader {reader}, writer {writer}, features {unknown:?}) asks more than this writer does"
            ),
        ));
    }
    let theirs: Json =
        metadata.get("schemaString").and_then(Json::as_str).and_then(|s| serde_json::from_str(s).ok()).ok_or_else(
            || Error::corrupt(format!("{folder}: the Delta table's metadata has no readable schemaString")),
        )?;
    match schema_difference(&theirs, schema) {
        None => Ok(()),
        Some(difference) => Err(Error::new(
            ErrorKind::Unsupported,
            format!("{folder}: the Delta table exists with another schema ({difference}); export to another folder"),
        )),
    }
}

fn unsupported_table(folder: &str, why: &str) -> Error {
    Error::unsupported(format!("{folder}: cannot append to this Delta table: {why}"))
}

/// The first difference between two Delta schemas (names, types, nullability; field metadata
/// is not compared), spelled for a message.
fn schema_difference(theirs: &Json, ours: &Json) -> Option<String> {
    let fields = |s: &Json| s.get("fields").and_then(Json::as_array).cloned().unwrap_or_default();
    let (theirs, ours) = (fields(theirs), fields(ours));
    for (i, mine) in ours.iter().enumerate() {
        let name = mine.get("name").and_then(Json::as_str).unwrap_or("?");
        let Some(other) = theirs.get(i) else {
            return Some(format!("column {name} is not in the table"));
        };
        for key in ["name", "type", "nullable"] {
            let (a, b) = (other.get(key), mine.get(key));
            let same = match (a, b) {
                (Some(a @ Json::Object(_)), Some(b @ Json::Object(_))) if key == "type" => {
                    schema_difference(a, b).is_none()
                }
                _ => a == b,
            };
            if !same {
                return Some(format!("column {} {key}: {} in the table, {} here", i + 1, show(a), show(b)));
            }
        }
    }
    (theirs.len() > ours.len()).then(|| format!("the table has {} columns, this export {}", theirs.len(), ours.len()))
}

fn show(value: Option<&Json>) -> String {
    value.map_or_else(|| "nothing".to_string(), Json::to_string)
}

/// The protocol a table of `schema` needs: reader 1 / writer 2, or 3 / 7 with `timestampNtz`.
fn protocol_for(schema: &Json) -> Json {
    if schema.to_string().contains("\"timestamp_ntz\"") {
        json!({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]})
    } else {
        json!({"minReaderVersion": 1, "minWriterVersion": 2})
    }
}

/// `schema` with each type Delta lacks replaced by the one it is cast to (see the module).
pub fn delta_arrow_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_data_type(delta_arrow_type(f.data_type())))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

fn delta_arrow_type(t: &DataType) -> DataType {
    match t {
        DataType::UInt8 => DataType::Int16,
        DataType::FixedSizeBinary(_) => DataType::Binary,
        DataType::Time64(_) => DataType::Utf8,
        DataType::Timestamp(_, tz) => DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
        DataType::Struct(fields) => DataType::Struct(delta_fields(fields)),
        other => other.clone(),
    }
}

fn delta_fields(fields: &Fields) -> Fields {
    fields.iter().map(|f| f.as_ref().clone().with_data_type(delta_arrow_type(f.data_type()))).collect()
}

/// `batch` cast to `schema` (its [`delta_arrow_schema`]).
pub fn delta_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(array, field)| delta_array(array, field.data_type()))
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema.clone(), columns).map_err(cast_error)
}

fn delta_array(array: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if array.data_type() == to {
        return Ok(array.clone());
    }
    let nulls = array.nulls().cloned();
    Ok(match (array.data_type(), to) {
        (DataType::UInt8, DataType::Int16) => {
            Arc::new(array.as_primitive::<UInt8Type>().unary::<_, Int16Type>(i16::from))
        }
        (DataType::FixedSizeBinary(width), DataType::Binary) => {
            let fixed = array.as_fixed_size_binary();
            let lengths = std::iter::repeat_n(usize::try_from(*width).unwrap_or(0), fixed.len());
            Arc::new(BinaryArray::new(OffsetBuffer::from_lengths(lengths), fixed.values().clone(), nulls))
        }
        (DataType::Time64(unit), DataType::Utf8) => Arc::new(time_strings(array, *unit)),
        (DataType::Timestamp(unit, _), DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
            let micros = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().unary(|s| s.saturating_mul(1_000_000)),
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().unary(|ms| ms.saturating_mul(1_000))
                }
                TimeUnit::Nanosecond => {
                    array.as_primitive::<TimestampNanosecondType>().unary(|ns| ns.div_euclid(1_000))
                }
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().clone(),
            };
            Arc::new(micros.with_timezone_opt(tz.clone()))
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let children = array
                .as_struct()
                .columns()
                .iter()
                .zip(fields)
                .map(|(child, field)| delta_array(child, field.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fields.clone(), children, nulls).map_err(cast_error)?)
        }
        (from, to) => return Err(Error::unsupported(format!("no Delta cast from {from} to {to}"))),
    })
}

/// Times of day as `HH:MM:SS.ffffff` (microseconds) or `HH:MM:SS.fffffffff` (nanoseconds).
fn time_strings(array: &ArrayRef, unit: TimeUnit) -> StringArray {
    let (ticks, digits): (Vec<Option<i64>>, usize) = match unit {
        TimeUnit::Nanosecond => (array.as_primitive::<Time64NanosecondType>().iter().collect(), 9),
        _ => (array.as_primitive::<Time64MicrosecondType>().iter().collect(), 6),
    };
    let per_second = 10i64.pow(digits as u32);
    let mut out = arrow_array::builder::StringBuilder::with_capacity(ticks.len(), ticks.len() * (9 + digits));
    for tick in ticks {
        match tick {
            None => out.append_null(),
            Some(t) => {
                let (seconds, fraction) = (t.div_euclid(per_second), t.rem_euclid(per_second));
                // Writing into the builder allocates nothing per value.
                let _ = write!(
                    out,
                    "{:02}:{:02}:{:02}.{fraction:0digits$}",
                    seconds / 3600,
                    seconds / 60 % 60,
                    seconds % 60
                );
                out.append_value("");
            }
        }
    }
    out.finish()
}

/// `schema` (already [`delta_arrow_schema`]) in Delta's JSON schema serialisation; a type Delta
/// has no name for is refused with its column.
pub fn delta_schema(schema: &Schema) -> Result<Json> {
    struct_type(schema.fields())
}

fn struct_type(fields: &Fields) -> Result<Json> {
    let fields = fields
        .iter()
        .map(|f| {
            let t = delta_type(f).map_err(|e| e.in_object(f.name().clone()))?;
            let metadata: serde_json::Map<String, Json> =
                f.metadata().iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect();
            // The reader's field metadata (`mdfkit.sql_type`: the declared T-SQL type), kept
            // as the `deltalake` package keeps it.
            Ok(json!({"name": f.name(), "type": t, "nullable": f.is_nullable(), "metadata": metadata}))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({"type": "struct", "fields": fields}))
}

fn delta_type(field: &Field) -> Result<Json> {
    let name = match field.data_type() {
        DataType::Boolean => "boolean",
        DataType::Int8 => "byte",
        DataType::Int16 => "short",
        DataType::Int32 => "integer",
        DataType::Int64 => "long",
        DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Utf8 | DataType::LargeUtf8 => "string",
        DataType::Binary | DataType::LargeBinary => "binary",
        DataType::Date32 => "date",
        DataType::Timestamp(TimeUnit::Microsecond, None) => "timestamp_ntz",
        DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => "timestamp",
        DataType::Decimal128(p, s) => return Ok(json!(format!("decimal({p},{s})"))),
        DataType::Struct(fields) => return struct_type(fields),
        other => {
            return Err(Error::unsupported(format!(
                "column {}: Delta tables have no type for Arrow's {other}",
                field.name()
            )))
        }
    };
    Ok(json!(name))
}

fn cast_error(e: arrow_schema::ArrowError) -> Error {
    Error::new(ErrorKind::Io, format!("casting for Delta Lake: {e}"))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A random UUID (version 4 layout) for table ids and data file names: the bits come from the
/// standard library's randomly keyed hasher, mixed with the time, the process and a counter.
fn unique_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let half = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        h.write_u32(std::process::id());
        h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed) ^ salt);
        h.finish()
    };
    let bits = (u128::from(half(0)) << 64 | u128::from(half(u64::MAX))) & !(0xf000u128 << 64) & !(0xc << 60)
        | (0x4000u128 << 64)
        | (0x8u128 << 60);
    let hex = format!("{bits:032x}");
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// For the `delta_log` fuzz target: a table's log made of `data` (up to its first zero byte the
/// JSON lines of version 1, after it a checkpoint file at version 0), read as an append reads it
/// and checked against a one-column schema. Any input must end in a value or an error, never a
/// panic.
#[doc(hidden)]
pub fn fuzz_log(data: &[u8]) {
    /// A destination of two log files, held in memory.
    struct InMemory<'a> {
        commit: &'a [u8],
        checkpoint: &'a [u8],
    }
    impl ExportDestination for InMemory<'_> {
        fn create(&self, name: &str) -> Result<Box<dyn super::ExportOutput>> {
            Err(Error::unsupported(format!("{name}: read-only")))
        }
        fn list(&self, _folder: &str) -> Result<Vec<String>> {
            Ok(vec![format!("{:020}.checkpoint.parquet", 0), format!("{:020}.json", 1)])
        }
        fn read(&self, name: &str) -> Result<Vec<u8>> {
            Ok(if name.ends_with(".json") { self.commit } else { self.checkpoint }.to_vec())
        }
    }
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let destination = InMemory { commit: &data[..split], checkpoint: data.get(split + 1..).unwrap_or_default() };
    let schema = json!({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": true, "metadata": {}}]});
    if let Ok(log) = read_log(&destination, "t") {
        let _ = check_appendable(&log, &schema, "t");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_follows_the_protocols_spelling() {
        let offset = Fields::from(vec![
            Field::new("utc", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
            Field::new("offset_minutes", DataType::Int16, false),
        ]);
        let arrow = Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("tiny", DataType::UInt8, true),
            Field::new("price", DataType::Decimal128(19, 4), true),
            Field::new("guid", DataType::FixedSizeBinary(16), true),
            Field::new("at", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("when", DataType::Time64(TimeUnit::Nanosecond), true),
            Field::new("seen", DataType::Struct(offset), true),
            Field::new("day", DataType::Date32, true),
        ]);
        let schema = delta_schema(&delta_arrow_schema(&arrow)).unwrap();
        let types: Vec<Json> = schema["fields"].as_array().unwrap().iter().map(|f| f["type"].clone()).collect();
        assert_eq!(
            types,
            [
                json!("integer"),
                json!("short"),
                json!("decimal(19,4)"),
                json!("binary"),
                json!("timestamp_ntz"),
                json!("string"),
                json!({"type": "struct", "fields": [
                    {"name": "utc", "type": "timestamp", "nullable": false, "metadata": {}},
                    {"name": "offset_minutes", "type": "short", "nullable": false, "metadata": {}},
                ]}),
                json!("date"),
            ]
        );
        assert_eq!(schema["fields"][0]["nullable"], json!(false));
        assert_eq!(protocol_for(&schema)["readerFeatures"], json!(["timestampNtz"]));
        let plain = delta_schema(&Schema::new(vec![Field::new("x", DataType::Int64, true)])).unwrap();
        assert_eq!(protocol_for(&plain), json!({"minReaderVersion": 1, "minWriterVersion": 2}));
    }

    #[test]
    fn values_are_cast_to_deltas_types() {
        let arrow = Arc::new(Schema::new(vec![
            Field::new("tiny", DataType::UInt8, true),
            Field::new("guid", DataType::FixedSizeBinary(2), true),
            Field::new("when", DataType::Time64(TimeUnit::Nanosecond), true),
            Field::new("at", DataType::Timestamp(TimeUnit::Second, None), true),
        ]));
        let batch = RecordBatch::try_new(
            arrow.clone(),
            vec![
                Arc::new(arrow_array::UInt8Array::from(vec![Some(255), None])),
                Arc::new(arrow_array::FixedSizeBinaryArray::try_from_iter([[1u8, 2], [3, 4]].into_iter()).unwrap()),
                Arc::new(arrow_array::Time64NanosecondArray::from(vec![Some(3_723_000_000_100), None])),
                Arc::new(arrow_array::TimestampSecondArray::from(vec![Some(-1), Some(86_400)])),
            ],
        )
        .unwrap();
        let schema = delta_arrow_schema(&arrow);
        let cast = delta_batch(&batch, &schema).unwrap();
        assert_eq!(cast.column(0).as_primitive::<Int16Type>().value(0), 255);
        assert!(cast.column(0).is_null(1));
        assert_eq!(cast.column(1).as_binary::<i32>().value(1), [3, 4]);
        assert_eq!(cast.column(2).as_string::<i32>().value(0), "01:02:03.000000100");
        assert!(cast.column(2).is_null(1));
        let micros = cast.column(3).as_primitive::<TimestampMicrosecondType>();
        assert_eq!((micros.value(0), micros.value(1)), (-1_000_000, 86_400_000_000));
    }

    #[test]
    fn log_names_and_ids() {
        assert_eq!(commit_name("dbo.T", 7), "dbo.T/_delta_log/00000000000000000007.json");
        assert_eq!(commit_version("00000000000000000012.json"), Some(12));
        assert_eq!(commit_version("00000000000000000012.checkpoint.parquet"), None);
        assert_eq!(commit_version("12.json"), None);
        let (a, b) = (unique_id(), unique_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn a_log_of_any_bytes_is_read_or_refused() {
        let commit = br#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
        for data in [&b""[..], b"\0", b"{\0PAR1", b"not json\0\x01\x02", commit, b"{\"metaData\":{}}\0PAR1\0\0\0\0PAR1"]
        {
            fuzz_log(data);
        }
    }

    #[test]
    fn a_checkpoint_of_more_rows_than_bytes_is_refused() {
        /// A destination holding one file, whatever its name.
        struct OneFile(Vec<u8>);
        impl ExportDestination for OneFile {
            fn create(&self, name: &str) -> Result<Box<dyn super::super::ExportOutput>> {
                Err(Error::unsupported(format!("{name}: read-only")))
            }
            fn list(&self, _folder: &str) -> Result<Vec<String>> {
                Ok(Vec::new())
            }
            fn read(&self, _name: &str) -> Result<Vec<u8>> {
                Ok(self.0.clone())
            }
        }
        // 100,000 null protocol versions: a run of nulls, a few bytes in the file.
        let rows = 100_000;
        let column: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![None; rows]));
        let batch = RecordBatch::try_from_iter([("protocol", column)]).unwrap();
        let mut file = Vec::new();
        let mut writer = parquet::arrow::ArrowWriter::try_new(&mut file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        assert!(file.len() < rows, "{} bytes", file.len());
        let error = read_checkpoint(&OneFile(file.clone()), "c.parquet", &mut LogState::default()).unwrap_err();
        let expected =
            format!("c.parquet: not a readable checkpoint: its row groups claim {rows} rows in {} bytes", file.len());
        assert_eq!(error.message(), expected);
    }

    #[test]
    fn the_newest_complete_checkpoint_is_found_by_its_names() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(checkpoint_part("00000000000000000010.checkpoint.parquet"), Some((10, 1, 1)));
        assert_eq!(checkpoint_part("00000000000000000010.checkpoint.0000000002.0000000003.parquet"), Some((10, 2, 3)));
        assert_eq!(checkpoint_part("00000000000000000010.checkpoint.0000000004.0000000003.parquet"), None);
        assert_eq!(checkpoint_part("00000000000000000010.checkpoint.80f3a2c1-uuid.json"), None);
        assert_eq!(checkpoint_part("10.checkpoint.parquet"), None);
        let log = names(&[
            "00000000000000000009.json",
            "00000000000000000010.checkpoint.parquet",
            "00000000000000000010.json",
            // Version 20's checkpoint lacks its second part: not complete.
            "00000000000000000020.checkpoint.0000000001.0000000002.parquet",
            "_last_checkpoint",
        ]);
        assert_eq!(newest_checkpoint(&log), Some((10, names(&["00000000000000000010.checkpoint.parquet"]))));
        let mut whole = log.clone();
        whole.push("00000000000000000020.checkpoint.0000000002.0000000002.parquet".into());
        assert_eq!(newest_checkpoint(&whole).map(|(v, parts)| (v, parts.len())), Some((20, 2)));
        assert_eq!(newest_checkpoint(&names(&["00000000000000000000.json"])), None);
    }

    #[test]
    fn appends_need_the_same_schema_and_a_known_protocol() {
        let ours = delta_schema(&Schema::new(vec![Field::new("x", DataType::Int64, true)])).unwrap();
        let other = delta_schema(&Schema::new(vec![Field::new("x", DataType::Int32, true)])).unwrap();
        let log = |protocol: Json, schema: &Json| LogState {
            latest: Some(0),
            protocol: Some(protocol),
            metadata: Some(json!({"schemaString": schema.to_string()})),
        };
        let v12 = json!({"minReaderVersion": 1, "minWriterVersion": 2});
        assert!(check_appendable(&log(v12.clone(), &ours), &ours, "t").is_ok());
        let e = check_appendable(&log(v12, &other), &ours, "t").unwrap_err();
        assert!(e.message().contains("\"integer\" in the table, \"long\" here"), "{e}");
        let dv = json!({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]});
        assert!(check_appendable(&log(dv, &ours), &ours, "t").is_err());
        assert!(check_appendable(&LogState::default(), &ours, "t").is_ok());
    }
}
