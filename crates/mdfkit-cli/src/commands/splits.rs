//! `mdfkit splits` and `mdfkit read-split`: the planner's and a worker's halves of a split scan
//! ([`mdfkit::split`]) for engines that run the CLI, such as the JVM Spark data source
//! (`jvm/`): plan on the driver, one split's rows as an Arrow IPC stream on each worker.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use arrow_ipc::writer::StreamWriter;
use mdfkit::export::delta::{delta_arrow_schema, delta_batch};
use mdfkit::scan::Flow;
use mdfkit::{Error, ErrorKind, ScanSplit, TimestampUnit};

use super::{describe_skip, stdout, Outcome};

/// What `mdfkit splits` plans: which table, which columns, how large each split.
pub struct SplitPlan<'a> {
    pub table: &'a str,
    pub columns: Option<Vec<String>>,
    pub target_bytes: u64,
    pub timestamps: TimestampUnit,
    pub salvage: bool,
}

/// Prints the splits of `plan.table` in the database of `files`, one JSON object a line. Local
/// paths are made absolute: a worker may start elsewhere.
pub fn splits(files: &[PathBuf], position: Option<u16>, plan: &SplitPlan) -> Outcome {
    let db = crate::chain::open(files, position)?;
    let table = db
        .catalog()
        .find_table(plan.table)
        .ok_or_else(|| Error::not_found(format!("no table named {}; `mdfkit tables` lists them", plan.table)))?;
    let sources = files
        .iter()
        .map(|f| match f.to_str() {
            Some(url) if mdfkit::location::url_scheme(url).is_some() => Ok(f.clone()),
            _ => std::path::absolute(f),
        })
        .collect::<io::Result<Vec<_>>>()?;
    let splits = db
        .scan(&table)
        .columns(plan.columns.clone())
        .timestamps(plan.timestamps)
        .salvage(plan.salvage)
        .splits(&sources, position, plan.target_bytes)?;
    let mut out = stdout();
    for split in &splits {
        writeln!(out, "{}", split.to_json())?;
    }
    out.flush()?;
    Ok(())
}

/// How `mdfkit read-split` writes a split's rows.
pub struct SplitRead {
    /// Cast to the types Spark and Delta Lake hold (see `mdfkit::export::delta`).
    pub spark_types: bool,
    /// Only the schema: a stream with no batches.
    pub schema_only: bool,
    pub batch_size: usize,
    /// Where the stream goes instead of stdout: a Unix socket someone listens at.
    pub socket: Option<PathBuf>,
}

/// Reads the split whose JSON is on stdin and writes its rows to stdout as an Arrow IPC stream.
/// A failure says what the library says (file, table, page); a salvage split's skipped pages and
/// records are listed on stderr, one a line.
pub fn read_split(options: &SplitRead) -> Outcome {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text)?;
    let split = ScanSplit::from_json(text.trim())?;
    let db = split.open()?;
    let mut schema = split.schema(&db)?;
    if options.spark_types {
        schema = delta_arrow_schema(&schema);
    }
    let out: Box<dyn Write> = match &options.socket {
        Some(path) => Box::new(io::BufWriter::new(connect(path)?)),
        None => Box::new(stdout()),
    };
    let mut writer = StreamWriter::try_new(out, &schema).map_err(arrow_output)?;
    if !options.schema_only {
        let stats = split.read(&db, options.batch_size.max(1), |batch| {
            let batch = if options.spark_types { delta_batch(&batch, &schema)? } else { batch };
            writer.write(&batch).map_err(|e| Error::new(ErrorKind::Io, format!("cannot write the rows: {e}")))?;
            Ok(Flow::Continue)
        })?;
        for skip in &stats.skipped {
            eprintln!(
                "mdfkit: skipped in split {} of {} of {}: {}",
                split.index + 1,
                split.count,
                split.table,
                describe_skip(skip)
            );
        }
    }
    writer.finish().map_err(arrow_output)?;
    writer.into_inner().map_err(arrow_output)?.flush()?;
    Ok(())
}

/// The stream's destination when the reader listens at a Unix socket: data written to a socket
/// lands in the reader's own buffers in one copy, where the JVM reads a pipe through three.
#[cfg(unix)]
fn connect(path: &std::path::Path) -> io::Result<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::connect(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot connect to the socket {}: {e}", path.display())))
}

#[cfg(not(unix))]
fn connect(path: &std::path::Path) -> io::Result<std::fs::File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("--socket {}: Unix sockets are not available on this system; read stdout", path.display()),
    ))
}

fn arrow_output(e: arrow_schema::ArrowError) -> io::Error {
    match e {
        arrow_schema::ArrowError::IoError(_, e) => e,
        other => io::Error::other(other.to_string()),
    }
}
