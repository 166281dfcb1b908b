//! `mdfkit log`: the log records of backups and transaction log files, like `fn_dump_dblog`.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

use mdfkit::log::ldf::is_log_file;
use mdfkit::log::listing::{list_log, ListedRecord, LogFilter};
use mdfkit::log::redo::StopPoint;
use mdfkit::log::{lsn_text, Operation, TransactionId};
use mdfkit::log_changes::partition_names;
use mdfkit::value::Value;
use mdfkit::{Database, Error, ErrorKind};

use super::{stdout, Outcome};
use crate::output::{write_rows, Format};

/// The filters as the command line gives them.
pub struct LogArgs<'a> {
    /// `--changes TABLE`: the table's inserted and deleted rows instead of the records.
    pub changes: Option<&'a str>,
    pub table: Option<&'a str>,
    pub transaction: Option<&'a str>,
    pub operations: &'a [String],
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
}

const COLUMNS: &[&str] = &[
    "current_lsn",
    "operation",
    "context",
    "transaction_id",
    "transaction_name",
    "begin_time",
    "end_time",
    "page_id",
    "slot_id",
    "partition_id",
    "object",
    "log_record_length",
    "previous_lsn",
    "user_sid",
    "description",
    "file",
];

pub fn log(files: &[PathBuf], args: &LogArgs<'_>, format: Format) -> Outcome {
    if let Some(table) = args.changes {
        return changes(files, table, format);
    }
    // The catalog, where a full backup is among the files: it names the tables (as the backups
    // hold it: the log's own records name the tables).
    let names = Database::open_until(&backups_only(files)?, None, StopPoint::NoLog).ok().map(|db| partition_names(&db));
    let mut filter = LogFilter::default();
    for op in args.operations.iter().flat_map(|o| o.split(',')) {
        let operation = Operation::from_name(op).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("unknown operation {op:?} (LOP_INSERT_ROWS, LOP_BEGIN_XACT, ...)"))
        })?;
        filter.operations.push(operation);
    }
    if let Some(t) = args.transaction {
        filter.transaction = Some(t.parse::<TransactionId>().map_err(|m| Error::new(ErrorKind::NotFound, m))?);
    }
    if let Some(table) = args.table {
        let Some(names) = &names else {
            return Err(Error::new(
                ErrorKind::MissingFile,
                format!("--table {table}: naming tables needs the catalog: give a full backup of the database too"),
            )
            .into());
        };
        let wanted = if table.contains('.') { table.to_string() } else { format!("dbo.{table}") };
        let partitions: HashSet<u64> = names
            .iter()
            .filter(|(_, n)| {
                n.eq_ignore_ascii_case(&wanted)
                    || n.to_ascii_lowercase().starts_with(&format!("{}:", wanted.to_ascii_lowercase()))
            })
            .map(|(p, _)| *p)
            .collect();
        if partitions.is_empty() {
            return Err(Error::not_found(format!("no table {table} in the catalog of the full backup given")).into());
        }
        filter.partitions = Some(partitions);
    }
    filter.from = args.from.map(LogFilter::check_time).transpose()?;
    filter.to = args.to.map(LogFilter::check_time).transpose()?;
    let mut rows = Vec::new();
    list_log(files, names.as_ref(), &filter, |r| {
        rows.push(row(&r));
        Ok(())
    })?;
    let columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}

/// The files other than transaction log files (`.ldf`): those a catalog may be read from.
fn backups_only(files: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut backups = Vec::new();
    for file in files {
        if !is_log_file(file)? {
            backups.push(file.clone());
        }
    }
    Ok(backups)
}

fn row(r: &ListedRecord) -> Vec<Value> {
    let text = |s: Option<String>| s.map_or(Value::Null, Value::text);
    vec![
        Value::text(lsn_text(r.lsn)),
        Value::text(r.operation.name()),
        Value::text(r.context.name()),
        Value::text(r.transaction_id.to_string()),
        text(r.transaction_name.clone()),
        r.begin_time.clone().unwrap_or(Value::Null),
        r.end_time.clone().unwrap_or(Value::Null),
        text(r.page.map(|p| format!("{:04x}:{:08x}", p.file, p.page))),
        r.slot.map_or(Value::Null, |s| Value::Int(s.into())),
        r.partition_id.map_or(Value::Null, |p| Value::Int(p as i64)),
        text(r.object.clone()),
        Value::Int(r.length as i64),
        Value::text(if r.previous_lsn.is_zero() { String::new() } else { lsn_text(r.previous_lsn) }),
        text(r.user_sid.clone()),
        text(r.description.clone()),
        Value::text(r.file.display().to_string()),
    ]
}

/// `--changes TABLE`: each insert and delete of the table's rows, decoded, with its transaction.
fn changes(files: &[PathBuf], table: &str, format: Format) -> Outcome {
    let db = Database::open_until(&backups_only(files)?, None, StopPoint::NoLog).map_err(|e| {
        Error::new(
            e.kind(),
            format!("--changes {table}: decoding rows needs the table's catalog: give a full backup of the database too ({e})"),
        )
    })?;
    let table = if table.contains('.') { table.to_string() } else { format!("dbo.{table}") };
    let (table_columns, changes) = mdfkit::log_changes::table_changes(&db, files, &table)?;
    let mut columns: Vec<String> = [
        "current_lsn",
        "change",
        "transaction_id",
        "transaction_name",
        "begin_time",
        "end_time",
        "committed",
        "user_sid",
        "page_id",
        "slot_id",
        "note",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    columns.extend(table_columns.iter().cloned());
    let rows: Vec<Vec<Value>> = changes
        .iter()
        .map(|c| {
            let text = |s: Option<String>| s.map_or(Value::Null, Value::text);
            let mut row = vec![
                Value::text(lsn_text(c.lsn)),
                Value::text(c.kind),
                Value::text(c.transaction_id.to_string()),
                text(c.transaction_name.clone()),
                c.begin_time.clone().unwrap_or(Value::Null),
                c.end_time.clone().unwrap_or(Value::Null),
                c.committed.map_or(Value::Null, Value::bit),
                text(c.user_sid.clone()),
                text(c.page.map(|p| format!("{:04x}:{:08x}", p.file, p.page))),
                c.slot.map_or(Value::Null, |s| Value::Int(s.into())),
                text(c.note.clone()),
            ];
            let mut values = c.values.clone();
            values.resize(table_columns.len(), Value::Null);
            row.extend(values);
            row
        })
        .collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}
