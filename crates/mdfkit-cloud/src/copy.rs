//! Verified copies between local files and objects (`mdfkit cp`).
//!
//! A copy is a pipeline of chunks in order: a source produces them, the SHA-256 of the stream is
//! computed on the way, a sink writes them; then the destination is read back the same way and its
//! SHA-256 compared with the source's. Reading back costs a second pass, but it is the only check
//! that covers every hop (our buffers, the network, the server, the disk), and SHA-256 is what
//! `sha256sum` prints, so a user can check either side with the tools they have. CRC32C would be
//! faster, but it is not collision resistant and no standard tool prints it for a local file.
//!
//! - Local files are read and written with `O_DIRECT` (Linux `open(2)`): the bytes bypass the page
//!   cache, so copying a 500 GB backup does not evict everything else the machine had cached. Such
//!   I/O needs buffers, offsets and lengths aligned to the device's logical block size; [`ALIGN`]
//!   (4 KiB) covers every common device. Buffers are carved at an aligned offset out of a larger
//!   `Vec`. Two buffers turn between a reader thread and its consumer (a writer thread likewise),
//!   so the next block is read while the last is written. A tail shorter than [`ALIGN`] is written
//!   padded with zeros and the file then cut to its length (`set_len`). A filesystem that refuses
//!   `O_DIRECT` (procfs, tmpfs before Linux 6.6: `EINVAL`) gets ordinary buffered I/O and a notice.
//! - Objects are read by ranged GETs of [`CopyOptions::range_size`], [`CopyOptions::concurrency`]
//!   in flight (at most [`MAX_BYTES_IN_FLIGHT`] bytes of them), consumed in order; a range that fails (connection reset, short body) is asked again
//!   up to [`RANGE_ATTEMPTS`] times with backoff. Objects are written by [`Upload`] (multipart),
//!   [`CopyOptions::concurrency`] parts in flight, parts sized for the source's size.
//! - `--recursive` lists the source prefix or folder and copies [`CopyOptions::files_in_flight`]
//!   files at once, keeping their paths relative to the prefix.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Mutex;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};

use super::sign::hex;
use super::writer::{Upload, UploadOptions};
use super::{block_on, is_url, runtime, store_error, store_for, ObjectUrl};
use mdfkit::{Error, ErrorKind, Result};

/// Alignment of buffers, offsets and lengths for `O_DIRECT` I/O.
pub const ALIGN: usize = 4096;
/// Tries per ranged GET before a copy fails.
pub const RANGE_ATTEMPTS: u32 = 6;
/// Failed files named in the error of a recursive copy.
pub const MAX_FAILURES_SHOWN: usize = 10;
/// Most bytes of ranged GETs in flight for one object: fewer ranges fly when they are large.
pub const MAX_BYTES_IN_FLIGHT: usize = 1 << 30;

/// How a copy runs.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    /// Bytes per ranged GET and per local read or write (rounded up to [`ALIGN`]).
    pub range_size: usize,
    /// Requests in flight per object: ranged GETs reading it, upload parts writing it (for
    /// `--recursive`, shared by the files in flight).
    pub concurrency: usize,
    /// Upload parts' size (`None`: chosen from the object's size; see [`super::writer`]).
    pub part_size: Option<usize>,
    /// Files copied at once by a recursive copy.
    pub files_in_flight: usize,
    /// Local files without the page cache (`O_DIRECT`) where the filesystem allows it.
    pub direct_io: bool,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions { range_size: 8 << 20, concurrency: 16, part_size: None, files_in_flight: 8, direct_io: true }
    }
}

impl CopyOptions {
    fn chunk(&self) -> usize {
        self.range_size.clamp(ALIGN, MAX_BYTES_IN_FLIGHT).div_ceil(ALIGN) * ALIGN
    }

    /// Ranges in flight: as asked, within [`MAX_BYTES_IN_FLIGHT`].
    fn ranges_in_flight(&self) -> usize {
        self.concurrency.clamp(1, (MAX_BYTES_IN_FLIGHT / self.chunk()).max(1))
    }
}

/// Counters a front end polls to draw progress (shared by every file of a copy).
#[derive(Debug, Default)]
pub struct Progress {
    bytes: AtomicU64,
    total: AtomicU64,
    in_flight: AtomicUsize,
    retries: AtomicU64,
}

impl Progress {
    /// Bytes copied (or checksummed by [`checksum`]) so far; a copy's read-back is not counted.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Bytes to copy in all, once known.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Ranged GETs in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Ranged GETs asked again after a failure.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
}

/// A local path or an object URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Local(PathBuf),
    Object(ObjectUrl),
}

impl Location {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(if is_url(s) { Location::Object(ObjectUrl::parse(s)?) } else { Location::Local(PathBuf::from(s)) })
    }

    /// The same kind of location with `relative` (a `/`-separated path) appended.
    fn join(&self, relative: &str) -> Location {
        match self {
            Location::Local(p) => Location::Local(relative.split('/').fold(p.clone(), |p, part| p.join(part))),
            Location::Object(u) => {
                let key = u.key.trim_end_matches('/');
                Location::Object(u.with_key(&if key.is_empty() {
                    relative.to_string()
                } else {
                    format!("{key}/{relative}")
                }))
            }
        }
    }

    /// The last path segment (a file name).
    fn name(&self) -> Option<String> {
        match self {
            Location::Local(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Location::Object(u) => u.key.rsplit('/').next().filter(|n| !n.is_empty()).map(str::to_string),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Local(p) => write!(f, "{}", p.display()),
            Location::Object(u) => write!(f, "{u}"),
        }
    }
}

/// One file copied and verified.
#[derive(Debug, Clone)]
pub struct CopyReport {
    pub source: String,
    pub destination: String,
    pub bytes: u64,
    /// SHA-256 of the bytes read from the source, in hex.
    pub source_sha256: String,
    /// SHA-256 of the bytes read back from the destination, in hex (equal, or the copy failed).
    pub destination_sha256: String,
}

/// The size and SHA-256 (hex) of a file or object, read the way a copy reads it (and counted
/// in `progress`).
pub fn checksum(
    location: &str,
    options: &CopyOptions,
    progress: &Progress,
    notices: &Notices,
) -> Result<(u64, String)> {
    let location = Location::parse(location)?;
    let size = size_of(&location)?;
    progress.total.fetch_add(size, Ordering::Relaxed);
    let mut hash = Sha256::new();
    let size = read_chunks(&location, Some(size), options, progress, notices, true, &mut |chunk| {
        hash.update(chunk);
        Ok(())
    })?;
    Ok((size, hex(&hash.finalize())))
}

/// Messages for the user that are not errors (e.g. `O_DIRECT` refused), each said once.
#[derive(Debug, Default)]
pub struct Notices(Mutex<Vec<String>>);

impl Notices {
    fn add(&self, message: String) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !all.contains(&message) {
            all.push(message);
        }
    }

    /// The notices so far.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Copies one file or object to `destination` (a folder, a bucket, or a name ending in `/`
/// receives it under its own name), then reads the destination back and compares SHA-256s.
pub fn copy(
    source: &str,
    destination: &str,
    options: &CopyOptions,
    progress: &Progress,
    notices: &Notices,
) -> Result<CopyReport> {
    let from = Location::parse(source)?;
    if matches!(&from, Location::Local(p) if p.is_dir()) {
        return Err(Error::not_found(format!("{source} is a folder: copy it with --recursive")));
    }
    let mut to = Location::parse(destination)?;
    let into_folder = destination.ends_with('/')
        || match &to {
            Location::Local(p) => p.is_dir(),
            Location::Object(u) => u.key.is_empty(),
        };
    if into_folder {
        let name = from.name().ok_or_else(|| Error::not_found(format!("{source}: names no file to copy")))?;
        to = to.join(&name);
    }
    let size = size_of(&from)?;
    progress.total.fetch_add(size, Ordering::Relaxed);
    copy_one(&from, size, &to, options, progress, notices)
}

/// Copies every file under the folder or prefix `source` to `destination`, keeping their paths
/// relative to it; each copy verified. Returns the reports in path order, or an error naming the
/// failures (the first [`MAX_FAILURES_SHOWN`] of them) once every file has been tried.
pub fn copy_tree(
    source: &str,
    destination: &str,
    options: &CopyOptions,
    progress: &Progress,
    notices: &Notices,
) -> Result<Vec<CopyReport>> {
    let from = Location::parse(source)?;
    let to = Location::parse(destination)?;
    let files = list_tree(&from)?;
    if files.is_empty() {
        return Err(Error::not_found(format!("{source}: no files under it to copy")));
    }
    progress.total.fetch_add(files.iter().map(|(_, size)| size).sum(), Ordering::Relaxed);
    let workers = options.files_in_flight.clamp(1, files.len());
    let per_file = CopyOptions { concurrency: (options.concurrency / workers).max(2), ..options.clone() };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<CopyReport>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((relative, size)) = files.get(i) else { break };
                let result = copy_one(&from.join(relative), *size, &to.join(relative), &per_file, progress, notices);
                results.lock().unwrap_or_else(|e| e.into_inner()).push((i, result));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let mut reports = Vec::with_capacity(results.len());
    let mut failures = Vec::new();
    for (_, result) in results {
        match result {
            Ok(r) => reports.push(r),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        return Ok(reports);
    }
    // A copy that differs from its source makes the whole run one (exit code 2).
    let kind = if failures.iter().any(|e| e.kind() == ErrorKind::Corrupt) { ErrorKind::Corrupt } else { ErrorKind::Io };
    let shown: Vec<String> = failures.iter().take(MAX_FAILURES_SHOWN).map(ToString::to_string).collect();
    let more = failures.len().saturating_sub(MAX_FAILURES_SHOWN);
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    Err(Error::new(kind, format!("{} of {} files not copied: {}{more}", failures.len(), files.len(), shown.join("; "))))
}

/// Copies `from`, of `size` bytes as listed, to `to`, and verifies the copy.
fn copy_one(
    from: &Location,
    size: u64,
    to: &Location,
    options: &CopyOptions,
    progress: &Progress,
    notices: &Notices,
) -> Result<CopyReport> {
    if from == to {
        return Err(Error::not_found(format!("{from}: source and destination are the same")));
    }
    let mut hash = Sha256::new();
    let mut sink = Sink::create(to, size, options, notices)?;
    let read = read_chunks(from, Some(size), options, progress, notices, true, &mut |chunk| {
        hash.update(chunk);
        sink.write(chunk)
    });
    let bytes = match read {
        Ok(n) => n,
        Err(e) => {
            sink.abort();
            return Err(e);
        }
    };
    sink.finish()?;
    let source_sha256 = hex(&hash.finalize());
    let mut back = Sha256::new();
    let verify_progress = Progress::default();
    let written = read_chunks(to, None, options, &verify_progress, notices, false, &mut |chunk| {
        back.update(chunk);
        Ok(())
    })?;
    progress.retries.fetch_add(verify_progress.retries(), Ordering::Relaxed);
    let destination_sha256 = hex(&back.finalize());
    if written != bytes || destination_sha256 != source_sha256 {
        return Err(Error::new(
            ErrorKind::Corrupt,
            format!(
                "{to}: the copy differs from {from}: {written} bytes with SHA-256 {destination_sha256} read back, \
                 {bytes} bytes with SHA-256 {source_sha256} read; copy it again"
            ),
        ));
    }
    Ok(CopyReport { source: from.to_string(), destination: to.to_string(), bytes, source_sha256, destination_sha256 })
}

fn size_of(location: &Location) -> Result<u64> {
    match location {
        Location::Local(p) => std::fs::metadata(p).map(|m| m.len()).map_err(|e| Error::io(p, "cannot read", e)),
        Location::Object(u) => {
            let store = store_for(u)?;
            Ok(block_on(store.head(&u.path())).map_err(|e| store_error(u, e))?.size)
        }
    }
}

/// The files under a folder or prefix: `(relative path with '/', size)`, sorted.
fn list_tree(root: &Location) -> Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    match root {
        Location::Local(dir) => {
            let mut pending = vec![(dir.clone(), String::new())];
            while let Some((folder, relative)) = pending.pop() {
                let entries =
                    std::fs::read_dir(&folder).map_err(|e| Error::io(&folder, "cannot list the folder", e))?;
                for entry in entries {
                    let entry = entry.map_err(|e| Error::io(&folder, "cannot list the folder", e))?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let path = entry.path();
                    let rel = if relative.is_empty() { name } else { format!("{relative}/{name}") };
                    // Symbolic links are not followed into folders (no cycles); linked files are copied.
                    let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, "cannot read", e))?;
                    if meta.is_dir() && !entry.file_type().is_ok_and(|t| t.is_symlink()) {
                        pending.push((path, rel));
                    } else if meta.is_file() {
                        files.push((rel, meta.len()));
                    }
                }
            }
        }
        Location::Object(url) => {
            let store = store_for(url)?;
            let prefix = url.key.trim_end_matches('/').to_string();
            let prefix_path = object_store::path::Path::from(prefix.as_str());
            let listed: Vec<object_store::ObjectMeta> =
                block_on(store.list(if prefix.is_empty() { None } else { Some(&prefix_path) }).try_collect())
                    .map_err(|e| store_error(url, e))?;
            for meta in listed {
                let key = meta.location.to_string();
                let rel = if prefix.is_empty() { Some(key.as_str()) } else { key.strip_prefix(&format!("{prefix}/")) };
                if let Some(rel) = rel.filter(|r| !r.is_empty()) {
                    files.push((rel.to_string(), meta.size));
                }
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Reads `location` in order, chunk by chunk, into `consume`; returns the bytes read. An object
/// of `known_size` (listed or asked just before) is not asked its size again. `count` adds the
/// bytes to `progress` (the copy pass, not the verification).
fn read_chunks(
    location: &Location,
    known_size: Option<u64>,
    options: &CopyOptions,
    progress: &Progress,
    notices: &Notices,
    count: bool,
    consume: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let mut total = 0u64;
    let mut each = |chunk: &[u8]| -> Result<()> {
        total += chunk.len() as u64;
        if count {
            progress.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        consume(chunk)
    };
    match location {
        Location::Local(path) => read_local(path, options, notices, &mut each)?,
        Location::Object(url) => read_object(url, known_size, options, progress, &mut each)?,
    }
    Ok(total)
}

/// A buffer whose bytes start at an [`ALIGN`]ed address: a slice of a larger `Vec`.
struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let storage = vec![0u8; len + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN);
        AlignedBuf { storage, start, len }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Opens `path` with `O_DIRECT` when asked and allowed; otherwise without, with a notice.
/// Returns the file and whether it is unbuffered.
fn open_local(path: &Path, direct: bool, write: bool, notices: &Notices) -> Result<(File, bool)> {
    let what = if write { "cannot create" } else { "cannot open" };
    let base = || {
        let mut o = OpenOptions::new();
        if write {
            o.write(true).create(true).truncate(true);
        } else {
            o.read(true);
        }
        o
    };
    if direct {
        match base().custom_flags(libc::O_DIRECT).open(path) {
            Ok(f) => return Ok((f, true)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => notices.add(format!(
                "{}: the filesystem refuses unbuffered I/O (O_DIRECT), so the page cache is used",
                path.display()
            )),
            Err(e) => return Err(Error::io(path, what, e)),
        }
    }
    Ok((base().open(path).map_err(|e| Error::io(path, what, e))?, false))
}

/// Reads a local file with two buffers: a thread reads the next while `consume` has the last.
fn read_local(
    path: &Path,
    options: &CopyOptions,
    notices: &Notices,
    consume: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let (file, _) = open_local(path, options.direct_io, false, notices)?;
    let chunk = options.chunk();
    let (full_tx, full_rx) = sync_channel::<std::io::Result<(AlignedBuf, usize)>>(1);
    let (free_tx, free_rx) = channel::<AlignedBuf>();
    for _ in 0..2 {
        free_tx.send(AlignedBuf::new(chunk)).map_err(|_| Error::new(ErrorKind::Io, "reader stopped"))?;
    }
    // The consumer's ends move into the scope's closure: if `consume` fails they are dropped,
    // which stops the reader thread before the scope waits for it.
    std::thread::scope(move |scope| {
        scope.spawn(move || {
            let mut offset = 0u64;
            while let Ok(mut buf) = free_rx.recv() {
                let read = read_full_at(&file, buf.bytes_mut(), offset);
                let last = !matches!(read, Ok(n) if n == chunk);
                if let Ok(n) = read {
                    offset += n as u64;
                }
                if full_tx.send(read.map(|n| (buf, n))).is_err() || last {
                    break;
                }
            }
        });
        while let Ok(read) = full_rx.recv() {
            let (buf, n) = read.map_err(|e| Error::io(path, "cannot read", e))?;
            if n > 0 {
                consume(&buf.bytes()[..n])?;
            }
            // The reader may have stopped (end of file): a refused buffer is simply dropped.
            let _ = free_tx.send(buf);
        }
        Ok(())
    })
}

/// Reads until `buf` is full or the file ends (an `O_DIRECT` read ends short only at the end).
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Reads an object by ranged GETs, [`CopyOptions::ranges_in_flight`] at once, handed on in order.
fn read_object(
    url: &ObjectUrl,
    known_size: Option<u64>,
    options: &CopyOptions,
    progress: &Progress,
    consume: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let store = store_for(url)?;
    let path = url.path();
    let size = match known_size {
        Some(size) => size,
        None => block_on(store.head(&path)).map_err(|e| store_error(url, e))?.size,
    };
    let chunk = options.chunk() as u64;
    let ranges = (0..size.div_ceil(chunk)).map(|i| i * chunk..((i + 1) * chunk).min(size));
    let mut chunks = futures::stream::iter(ranges)
        .map(|range| {
            let (store, path, url) = (store.clone(), path.clone(), url.clone());
            progress.in_flight.fetch_add(1, Ordering::Relaxed);
            let task = runtime().spawn(get_range(store, path, url, range));
            async move {
                let got = task.await.map_err(|e| Error::new(ErrorKind::Io, format!("request task failed: {e}")));
                progress.in_flight.fetch_sub(1, Ordering::Relaxed);
                let (bytes, retries) = got??;
                progress.retries.fetch_add(retries, Ordering::Relaxed);
                Ok::<_, Error>(bytes)
            }
        })
        .buffered(options.ranges_in_flight());
    while let Some(bytes) = block_on(chunks.next()) {
        consume(&bytes?)?;
    }
    Ok(())
}

/// One ranged GET, asked again after a failure or a short body; returns the bytes and the retries.
async fn get_range(
    store: std::sync::Arc<dyn ObjectStore>,
    path: object_store::path::Path,
    url: ObjectUrl,
    range: std::ops::Range<u64>,
) -> Result<(bytes::Bytes, u64)> {
    let want = range.end - range.start;
    let mut attempt = 0;
    loop {
        let error = match store.get_range(&path, range.clone()).await {
            Ok(b) if b.len() as u64 == want => return Ok((b, u64::from(attempt))),
            Ok(b) => {
                format!("{url}: bytes {}..{}: {} bytes received, {want} expected", range.start, range.end, b.len())
            }
            Err(e) => store_error(&url, e).to_string(),
        };
        attempt += 1;
        if attempt >= RANGE_ATTEMPTS {
            return Err(Error::new(ErrorKind::Io, format!("{error} (after {attempt} tries)")));
        }
        tokio::time::sleep(Duration::from_millis(100 << attempt.min(6))).await;
    }
}

/// Where a copy's bytes go: a local file (through a writer thread) or an upload.
enum Sink {
    Local(LocalWriter),
    Object(Upload),
}

impl Sink {
    fn create(to: &Location, size: u64, options: &CopyOptions, notices: &Notices) -> Result<Self> {
        Ok(match to {
            Location::Local(path) => Sink::Local(LocalWriter::create(path, options, notices)?),
            Location::Object(url) => {
                let upload = UploadOptions {
                    expected_size: Some(size),
                    parts_in_flight: options.concurrency,
                    part_size: options.part_size,
                };
                Sink::Object(Upload::create_with(&url.to_string(), upload)?)
            }
        })
    }

    fn write(&mut self, chunk: &[u8]) -> Result<()> {
        match self {
            Sink::Local(w) => w.write(chunk),
            Sink::Object(u) => u.write_all(chunk).map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", u.url()))),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Sink::Local(w) => w.finish(),
            Sink::Object(u) => u.finish().map(|_| ()),
        }
    }

    fn abort(self) {
        match self {
            Sink::Local(w) => w.abort(),
            Sink::Object(u) => u.abort(),
        }
    }
}

/// A local file written by a thread from two aligned buffers: one fills while the other is written.
/// The file is written as `NAME.mdfkit-partial` and renamed when complete.
struct LocalWriter {
    path: PathBuf,
    partial: PathBuf,
    current: AlignedBuf,
    filled: usize,
    to_writer: Option<SyncSender<(AlignedBuf, usize)>>,
    free: Receiver<AlignedBuf>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl LocalWriter {
    fn create(path: &Path, options: &CopyOptions, notices: &Notices) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "cannot create the folder", e))?;
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(".mdfkit-partial");
        let partial = PathBuf::from(partial);
        let (file, direct) = open_local(&partial, options.direct_io, true, notices)?;
        let chunk = options.chunk();
        let (to_writer, from_main) = sync_channel::<(AlignedBuf, usize)>(1);
        let (free_tx, free) = channel::<AlignedBuf>();
        free_tx.send(AlignedBuf::new(chunk)).map_err(|_| Error::new(ErrorKind::Io, "writer stopped"))?;
        let thread = std::thread::spawn(move || write_blocks(file, direct, &from_main, &free_tx));
        Ok(LocalWriter {
            path: path.to_path_buf(),
            partial,
            current: AlignedBuf::new(chunk),
            filled: 0,
            to_writer: Some(to_writer),
            free,
            thread: Some(thread),
        })
    }

    fn write(&mut self, mut chunk: &[u8]) -> Result<()> {
        while !chunk.is_empty() {
            let room = self.current.len - self.filled;
            let n = room.min(chunk.len());
            self.current.bytes_mut()[self.filled..self.filled + n].copy_from_slice(&chunk[..n]);
            self.filled += n;
            chunk = &chunk[n..];
            if self.filled == self.current.len {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Gives the filled buffer to the writer thread and takes the other one back.
    fn hand_over(&mut self) -> Result<()> {
        let next = match self.free.recv() {
            Ok(b) => b,
            Err(_) => return Err(self.writer_failure()),
        };
        let full = std::mem::replace(&mut self.current, next);
        let sent = self.to_writer.as_ref().is_some_and(|tx| tx.send((full, self.filled)).is_ok());
        self.filled = 0;
        if sent {
            Ok(())
        } else {
            Err(self.writer_failure())
        }
    }

    /// The writer thread's error (it stopped early).
    fn writer_failure(&mut self) -> Error {
        self.to_writer = None;
        let result = self.thread.take().map(|t| t.join());
        let e = match result {
            Some(Ok(Err(e))) => e,
            _ => std::io::Error::other("the writer thread stopped"),
        };
        Error::io(&self.partial, "cannot write", e)
    }

    fn finish(mut self) -> Result<()> {
        let written = self.write_rest();
        if written.is_err() {
            let _ = std::fs::remove_file(&self.partial);
        }
        written?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| Error::io(&self.path, "cannot rename the copy to", e))
    }

    /// Hands over the last buffer and waits for the writer thread to write and sync it all.
    fn write_rest(&mut self) -> Result<()> {
        if self.filled > 0 {
            self.hand_over()?;
        }
        self.to_writer = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(Error::io(&self.partial, "cannot write", e)),
            _ => Err(Error::new(ErrorKind::Io, format!("{}: the writer thread failed", self.partial.display()))),
        }
    }

    fn abort(mut self) {
        self.to_writer = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.partial);
    }
}

/// The writer thread: full blocks as they come; a short last block padded to [`ALIGN`] when
/// unbuffered, then the file cut to its length; synced at the end.
fn write_blocks(
    file: File,
    direct: bool,
    from_main: &Receiver<(AlignedBuf, usize)>,
    free: &Sender<AlignedBuf>,
) -> std::io::Result<()> {
    let mut offset = 0u64;
    while let Ok((mut buf, n)) = from_main.recv() {
        if n == buf.len || !direct {
            file.write_all_at(&buf.bytes()[..n], offset)?;
        } else {
            let padded = n.div_ceil(ALIGN) * ALIGN;
            buf.bytes_mut()[n..padded].fill(0);
            file.write_all_at(&buf.bytes()[..padded], offset)?;
            file.set_len(offset + n as u64)?;
        }
        offset += n as u64;
        // Main may be done: then no buffer is wanted back.
        let _ = free.send(buf);
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mdfkit-copy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Bytes that differ at every offset of a chunk (a misplaced block would show).
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 ^ (i / 4096) as u8).collect()
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    #[test]
    fn ranges_in_flight_stay_within_the_memory_budget() {
        let o = |range_size, concurrency| CopyOptions { range_size, concurrency, ..CopyOptions::default() };
        assert_eq!(o(8 << 20, 16).ranges_in_flight(), 16);
        assert_eq!(o(64 << 20, 256).ranges_in_flight(), 16);
        assert_eq!(o(usize::MAX, 8).ranges_in_flight(), 1);
        assert_eq!(o(1, 0).ranges_in_flight(), 1);
        assert_eq!(o(1, 0).chunk(), ALIGN);
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [ALIGN, 3 * ALIGN] {
            let b = AlignedBuf::new(len);
            assert_eq!(b.bytes().as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.bytes().len(), len);
        }
    }

    #[test]
    fn local_copies_are_byte_for_byte_with_the_sha256_of_the_bytes() {
        let dir = temp("local");
        // Options with 8 KiB chunks, so the sizes below cover: empty, 1 byte, exactly one chunk,
        // several chunks and an unaligned tail.
        let options = CopyOptions { range_size: 8192, ..CopyOptions::default() };
        for len in [0usize, 1, 8192, 3 * 8192 + 4097] {
            let data = pattern(len);
            let src = dir.join(format!("src-{len}"));
            std::fs::write(&src, &data).unwrap();
            let dst = dir.join(format!("out/dst-{len}"));
            let progress = Progress::default();
            let notices = Notices::default();
            let report = copy(src.to_str().unwrap(), dst.to_str().unwrap(), &options, &progress, &notices).unwrap();
            assert_eq!(std::fs::read(&dst).unwrap(), data, "{len} bytes");
            assert_eq!(report.bytes, len as u64);
            assert_eq!(report.source_sha256, sha256_hex(&data));
            assert_eq!(report.destination_sha256, report.source_sha256);
            assert_eq!((progress.bytes(), progress.total()), (len as u64, len as u64));
            assert!(!dir.join(format!("out/dst-{len}.mdfkit-partial")).exists());
        }
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        std::fs::write(dir.join("abc"), b"abc").unwrap();
        let (size, sum) =
            checksum(dir.join("abc").to_str().unwrap(), &options, &Progress::default(), &Notices::default()).unwrap();
        assert_eq!((size, sum.as_str()), (3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn local_copies_leave_the_page_cache_alone() {
        let dir = temp("cache");
        let tool = |args: &[&str]| -> Option<String> {
            let out = std::process::Command::new(args[0]).args(&args[1..]).output().ok()?;
            out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let fs = tool(&["stat", "-f", "-c", "%T", dir.to_str().unwrap()]);
        if fs.as_deref() == Some("tmpfs") || tool(&["fincore", "--version"]).is_none() {
            std::fs::remove_dir_all(&dir).unwrap();
            eprintln!("\n*** SKIPPED: no fincore, or the temp folder is tmpfs (all page cache) ***\n");
            return;
        }
        let data = pattern(5 << 20);
        std::fs::write(dir.join("src"), &data).unwrap();
        let notices = Notices::default();
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        copy(src.to_str().unwrap(), dst.to_str().unwrap(), &CopyOptions::default(), &Progress::default(), &notices)
            .unwrap();
        // Written and read back without the cache: none of the copy's pages are resident.
        let resident = tool(&["fincore", "--bytes", "--noheadings", "--output", "RES", dst.to_str().unwrap()]);
        let said = notices.take();
        assert_eq!(std::fs::read(&dst).unwrap(), data);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(said.is_empty(), "{said:?}");
        assert_eq!(resident.as_deref(), Some("0"));
    }

    #[test]
    fn a_folder_destination_receives_the_file_under_its_name() {
        let dir = temp("into");
        std::fs::write(dir.join("a.bak"), b"hello").unwrap();
        std::fs::create_dir_all(dir.join("to")).unwrap();
        let n = Notices::default();
        let src = dir.join("a.bak");
        copy(
            src.to_str().unwrap(),
            dir.join("to").to_str().unwrap(),
            &CopyOptions::default(),
            &Progress::default(),
            &n,
        )
        .unwrap();
        assert_eq!(std::fs::read(dir.join("to/a.bak")).unwrap(), b"hello");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_filesystem_refusing_o_direct_gets_buffered_io_with_a_notice() {
        // procfs refuses O_DIRECT with EINVAL (tmpfs did too before Linux 6.6).
        let proc_file = Path::new("/proc/version");
        if !proc_file.is_file() {
            eprintln!("\n*** SKIPPED: no /proc/version to test the O_DIRECT fallback on ***\n");
            return;
        }
        let dir = temp("fallback");
        let notices = Notices::default();
        let dst = dir.join("version");
        let report =
            copy("/proc/version", dst.to_str().unwrap(), &CopyOptions::default(), &Progress::default(), &notices)
                .unwrap();
        let expected = std::fs::read(proc_file).unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), expected);
        assert_eq!(report.source_sha256, sha256_hex(&expected));
        let said = notices.take();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(said.iter().any(|n| n.contains("/proc/version") && n.contains("O_DIRECT")), "{said:?}");
    }

    #[test]
    fn trees_keep_relative_paths() {
        let dir = temp("tree");
        let files = [("a.mdf", 10_000usize), ("sub/b.ndf", 1), ("sub/deeper/c.bak", 0)];
        for (name, len) in files {
            let p = dir.join("src").join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, pattern(len)).unwrap();
        }
        let options = CopyOptions { range_size: 4096, ..CopyOptions::default() };
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        let reports = copy_tree(
            src.to_str().unwrap(),
            dst.to_str().unwrap(),
            &options,
            &Progress::default(),
            &Notices::default(),
        )
        .unwrap();
        assert_eq!(reports.len(), 3);
        for (name, len) in files {
            assert_eq!(std::fs::read(dir.join("dst").join(name)).unwrap(), pattern(len), "{name}");
        }
        // Into a "folder" that is a file: every copy fails, and the error says how many.
        std::fs::write(dir.join("blocker"), b"x").unwrap();
        let blocked = dir.join("blocker");
        let e = copy_tree(
            src.to_str().unwrap(),
            blocked.to_str().unwrap(),
            &options,
            &Progress::default(),
            &Notices::default(),
        )
        .unwrap_err();
        assert!(e.message().starts_with("3 of 3 files not copied: "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
