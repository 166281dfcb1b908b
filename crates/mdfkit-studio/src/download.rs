//! Downloads: a table as CSV, JSON Lines, Arrow IPC stream or Parquet, written by the library's
//! own export ([`mdfkit::export::export_table`], the bytes `mdfkit export` writes) on the blocking
//! pool and streamed to the browser as it is written, in chunks through a bounded channel (memory
//! stays flat whatever the table's size). A failure mid-way ends the response with an error, so a
//! cut download is never taken for the whole table.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use mdfkit::export::{export_table, ExportFormat, ExportOptions, ExportOutput};
use mdfkit::Error;
use tokio::sync::mpsc;

use crate::views::Failure;
use crate::Studio;

/// Bytes gathered before a chunk is sent.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the writer and the connection.
const CHUNKS_IN_FLIGHT: usize = 4;

/// The export's output: chunks into the response's channel.
struct ChannelOutput {
    location: PathBuf,
    buffer: Vec<u8>,
    sent: u64,
    to_client: mpsc::Sender<io::Result<Bytes>>,
}

impl ChannelOutput {
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK)));
        self.sent += chunk.len() as u64;
        self.to_client.blocking_send(Ok(chunk)).map_err(|_| io::Error::other("the browser closed the download"))
    }
}

impl Write for ChannelOutput {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ExportOutput for ChannelOutput {
    fn location(&self) -> &Path {
        &self.location
    }

    fn finish(mut self: Box<Self>) -> mdfkit::Result<u64> {
        self.send().map_err(|e| Error::new(mdfkit::ErrorKind::Io, e.to_string()))?;
        Ok(self.sent)
    }
}

/// `schema.table.ext` → the table name and the format.
fn parse(name: &str) -> mdfkit::Result<(String, ExportFormat)> {
    mdfkit::export::split_output_name(name)
        .map(|(table, format)| (table.to_string(), format))
        .ok_or_else(|| Error::not_found(format!("{name}: ask for TABLE.csv, .jsonl, .arrows or .parquet")))
}

/// `/download/dbo.Orders.parquet`.
pub async fn download(State(studio): State<Arc<Studio>>, UrlPath(name): UrlPath<String>) -> Result<Response, Failure> {
    let (table_name, format) = parse(&name)?;
    let table = studio
        .db
        .catalog()
        .find_table(&table_name)
        .ok_or_else(|| Error::not_found(format!("no table named {table_name}")))?;
    let file_name = mdfkit::export::output_name(&table, format);
    let (to_client, mut from_export) = mpsc::channel::<io::Result<Bytes>>(CHUNKS_IN_FLIGHT);
    let errors = to_client.clone();
    let location = PathBuf::from(&file_name);
    tokio::task::spawn_blocking(move || {
        let out = Box::new(ChannelOutput { location, buffer: Vec::with_capacity(CHUNK), sent: 0, to_client });
        // As many threads as `mdfkit export` takes by default, so the download is its bytes
        // (Parquet's row groups depend on the thread count) at its speed.
        let options = ExportOptions { threads: mdfkit::export::all_cores(), ..ExportOptions::default() };
        // A panic in the export must not end the body as if the table were whole.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            export_table(&studio.db, &table, format, out, &options, |_| {})
        }));
        let failure = match result {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("exporting {} failed (a bug: see the server's stderr)", table.qualified_name())),
        };
        if let Some(why) = failure {
            let _ = errors.blocking_send(Err(io::Error::other(why)));
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| from_export.poll_recv(cx));
    let content_type = match format {
        ExportFormat::Csv => "text/csv; charset=utf-8",
        ExportFormat::Jsonl => "application/jsonl",
        ExportFormat::Arrow => "application/vnd.apache.arrow.stream",
        ExportFormat::Parquet => "application/vnd.apache.parquet",
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{}\"", file_name.replace('"', "_"))),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}
