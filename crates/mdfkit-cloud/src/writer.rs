//! Writing an object as a stream: an S3 multipart upload / Azure block blob with parts in flight
//! and a checksum on every part that the server verifies.
//!
//! [`Upload`] is a `std::io::Write`: bytes are cut into parts and each part is sent as soon as it
//! is full, up to [`UploadOptions::parts_in_flight`] at once ([`PARTS_IN_FLIGHT`] by default,
//! within the [`MAX_BYTES_IN_FLIGHT`] memory budget that ranged reads keep too), each with its `Content-MD5` (S3 UploadPart through
//! [`super::s3`], also with its CRC32C; Azure Put Block through [`super::azure`]); the server
//! recomputes them and refuses a part damaged on the way (`BadDigest` / `Md5Mismatch`), which is then sent again
//! (up to `rest::RETRIES` times, with backoff, like any 5xx or dropped connection).
//! The object appears only when [`Upload::finish`] completes the upload (CompleteMultipartUpload
//! / Put Block List). An upload that fails or is dropped unfinished is aborted on S3 (the parts
//! are deleted); on Azure uncommitted blocks are never visible and the service discards them
//! after a week. Either way no half-written object is left.
//!
//! Part sizes (S3 wants at least 5 MiB for every part but the last, and at most 10,000 parts;
//! Azure allows 50,000 blocks of up to 4,000 MiB): [`PART_SIZE`] or the caller's
//! [`UploadOptions::part_size`] (kept within those limits), or, when the caller knows the
//! size ([`UploadOptions::expected_size`]), the smallest whole number of MiB at least that large which
//! fits the object in [`PLANNED_PARTS`] parts. Past the plan, parts double in size (every 1,000
//! parts when the size is unknown, every 20 past the planned 8,000 when it was wrong), so a
//! stream of any size up to the services' limits fits in 10,000 parts. Memory stays near
//! `parts_in_flight + 1` parts.
//!
//! Progress: [`parts_in_flight_now`] and [`bytes_uploaded`] count every upload of the process
//! (like `super::fetch_report` for reads), so a front end can draw them without holding the
//! uploads.
//!
//! Azure credentials that are neither an account key nor a SAS token (service principal, managed
//! identity) are served by `object_store`'s uploader, which sends no MD5 per block.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use object_store::{ObjectStoreExt, WriteMultipart};
use tokio::task::JoinHandle;

use super::azure::Azure;
use super::copy::MAX_BYTES_IN_FLIGHT;
use super::s3::{Part, MAX_PARTS, MIN_PART_SIZE, S3};
use super::{block_on, runtime, store_error, store_for, ObjectUrl, Scheme};
use mdfkit::{Error, ErrorKind, Result};

/// Bytes per part when the size is not known.
pub const PART_SIZE: usize = 8 << 20;
/// Parts uploaded at once unless asked otherwise.
pub const PARTS_IN_FLIGHT: usize = 8;
/// Parts that an object of the announced size is cut into at most.
pub const PLANNED_PARTS: u32 = 8_000;
/// The largest part (Azure's block limit, under S3's 5 GiB).
pub const MAX_PART_SIZE: usize = 4000 << 20;

/// How an upload runs.
#[derive(Debug, Clone, Copy)]
pub struct UploadOptions {
    /// The object's size when known: parts are made large enough for it (see the module notes).
    pub expected_size: Option<u64>,
    /// Parts sent at once (at least 1, at most [`MAX_BYTES_IN_FLIGHT`] bytes of them).
    pub parts_in_flight: usize,
    /// The size of the parts (`None`: [`PART_SIZE`]); raised to S3's 5 MiB minimum and to what
    /// fits `expected_size` in [`PLANNED_PARTS`] parts; below [`PART_SIZE`] only when
    /// `expected_size` is known.
    pub part_size: Option<usize>,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions { expected_size: None, parts_in_flight: PARTS_IN_FLIGHT, part_size: None }
    }
}

/// Upload parts being sent now, by every upload of the process.
static PARTS_SENDING: AtomicUsize = AtomicUsize::new(0);
/// Bytes of parts the stores took, by every upload of the process.
static BYTES_SENT: AtomicU64 = AtomicU64::new(0);

/// Upload parts in flight now (every upload of this process; see the module notes).
pub fn parts_in_flight_now() -> usize {
    PARTS_SENDING.load(Ordering::Relaxed)
}

/// Bytes the stores have taken so far (every upload of this process), counted as parts complete.
pub fn bytes_uploaded() -> u64 {
    BYTES_SENT.load(Ordering::Relaxed)
}

/// Counts a part in [`PARTS_SENDING`] while it lives, whether the part completes, fails or is
/// aborted.
struct Sending;

impl Sending {
    fn start() -> Self {
        PARTS_SENDING.fetch_add(1, Ordering::Relaxed);
        Sending
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        PARTS_SENDING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The size of the part that follows `parts_sent` parts, for parts of `chosen` bytes (if the
/// caller chose) and an object of `expected` bytes (if known); see the module notes.
pub fn part_size(chosen: Option<usize>, expected: Option<u64>, parts_sent: u32) -> usize {
    const MIB: u64 = 1 << 20;
    let chosen = chosen.map_or(PART_SIZE, |c| c.clamp(MIN_PART_SIZE, MAX_PART_SIZE)) as u64;
    let (base, doublings) = match expected {
        Some(size) => {
            let planned = size.div_ceil(u64::from(PLANNED_PARTS)).div_ceil(MIB) * MIB;
            (planned.max(chosen), parts_sent.saturating_sub(PLANNED_PARTS).div_ceil(20))
        }
        // A stream of unknown size needs parts of PART_SIZE to reach 5 TiB in 10,000 parts.
        None => (chosen.max(PART_SIZE as u64), parts_sent / 1000),
    };
    let size = base.checked_shl(doublings.min(32)).unwrap_or(u64::MAX).min(MAX_PART_SIZE as u64);
    size as usize
}

/// Where the parts go.
enum Target {
    S3 {
        client: Arc<S3>,
        key: String,
        upload_id: String,
    },
    Azure {
        client: Arc<Azure>,
        blob: String,
    },
    /// Azure with credentials only `object_store` can use.
    Store(Box<WriteMultipart>),
}

/// A part the store took.
enum Sent {
    S3(Part),
    Azure { number: u32, block_id: String },
}

impl Sent {
    fn number(&self) -> u32 {
        match self {
            Sent::S3(p) => p.number,
            Sent::Azure { number, .. } => *number,
        }
    }
}

/// A part being sent.
type PartTask = JoinHandle<Result<Sent>>;

/// A streaming upload to an object URL.
pub struct Upload {
    url: ObjectUrl,
    /// `None` once finished or aborted.
    target: Option<Target>,
    options: UploadOptions,
    buffer: Vec<u8>,
    part_size: usize,
    parts_started: u32,
    in_flight: VecDeque<PartTask>,
    /// The parts sent, in no particular order.
    done: Vec<Sent>,
    written: u64,
}

impl Upload {
    /// Starts an upload to `url` (nothing is visible there until [`Upload::finish`]).
    pub fn create(url: &str) -> Result<Self> {
        Self::create_with(url, UploadOptions::default())
    }

    /// Starts an upload of about `expected_size` bytes (it chooses the part size; writing more
    /// still works, with larger parts past the plan).
    pub fn create_sized(url: &str, expected_size: u64) -> Result<Self> {
        Self::create_with(url, UploadOptions { expected_size: Some(expected_size), ..UploadOptions::default() })
    }

    /// Starts an upload as `options` say.
    pub fn create_with(url: &str, options: UploadOptions) -> Result<Self> {
        let url = ObjectUrl::parse(url)?;
        let part_size = part_size(options.part_size, options.expected_size, 0);
        let target = match url.scheme {
            Scheme::S3 => {
                let client = S3::for_url(&url)?;
                let upload_id = block_on(client.create_multipart(&url.key))?;
                Target::S3 { client, key: url.key.clone(), upload_id }
            }
            Scheme::Azure => match Azure::for_url(&url)? {
                Some(client) => Target::Azure { client, blob: url.key.clone() },
                None => {
                    let store = store_for(&url)?;
                    let upload = block_on(store.put_multipart(&url.path())).map_err(|e| store_error(&url, e))?;
                    Target::Store(Box::new(WriteMultipart::new_with_chunk_size(upload, part_size)))
                }
            },
        };
        Ok(Upload {
            url,
            target: Some(target),
            options,
            buffer: Vec::new(),
            part_size,
            parts_started: 0,
            in_flight: VecDeque::new(),
            done: Vec::new(),
            written: 0,
        })
    }

    pub fn url(&self) -> &ObjectUrl {
        &self.url
    }

    /// Sends the last part and completes the upload; returns the object's size.
    pub fn finish(mut self) -> Result<u64> {
        let result = self.finish_inner();
        if result.is_err() {
            self.abort_inner();
        }
        result.map(|()| self.written)
    }

    fn finish_inner(&mut self) -> Result<()> {
        match self.target.take() {
            None => return Err(Error::new(ErrorKind::Io, format!("{}: upload already ended", self.url))),
            Some(Target::Store(inner)) => {
                let _enter = runtime().enter();
                return block_on(inner.finish()).map(|_| ()).map_err(|e| store_error(&self.url, e));
            }
            other => self.target = other,
        }
        // S3 needs at least one part, even an empty one; Azure commits an empty list.
        let s3 = matches!(self.target, Some(Target::S3 { .. }));
        if !self.buffer.is_empty() || (s3 && self.parts_started == 0) {
            self.send_part()?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        self.done.sort_by_key(Sent::number);
        let url = self.url.clone();
        match self.target.take() {
            Some(Target::S3 { client, key, upload_id }) => {
                let parts: Vec<Part> = self
                    .done
                    .iter()
                    .filter_map(|s| match s {
                        Sent::S3(p) => Some(p.clone()),
                        Sent::Azure { .. } => None,
                    })
                    .collect();
                let result = block_on(client.complete(&key, &upload_id, &parts));
                if result.is_err() {
                    self.target = Some(Target::S3 { client, key, upload_id });
                }
                result
            }
            Some(Target::Azure { client, blob }) => {
                let ids: Vec<String> = self
                    .done
                    .iter()
                    .filter_map(|s| match s {
                        Sent::Azure { block_id, .. } => Some(block_id.clone()),
                        Sent::S3(_) => None,
                    })
                    .collect();
                block_on(client.put_block_list(&blob, &ids))
            }
            _ => Err(Error::new(ErrorKind::Io, format!("{url}: upload already ended"))),
        }
    }

    /// Abandons the upload: the parts sent are deleted and no object appears.
    pub fn abort(mut self) {
        self.abort_inner();
    }

    fn abort_inner(&mut self) {
        for task in self.in_flight.drain(..) {
            task.abort();
        }
        match self.target.take() {
            Some(Target::S3 { client, key, upload_id }) => {
                let _ = block_on(client.abort(&key, &upload_id));
            }
            Some(Target::Store(inner)) => {
                let _enter = runtime().enter();
                let _ = block_on(inner.abort());
            }
            // Uncommitted blocks are never visible.
            Some(Target::Azure { .. }) | None => {}
        }
    }

    /// Parts sent at once: as asked, within [`MAX_BYTES_IN_FLIGHT`] for parts of this size.
    fn parts_in_flight(&self) -> usize {
        self.options.parts_in_flight.clamp(1, (MAX_BYTES_IN_FLIGHT / self.part_size).max(1))
    }

    /// Starts sending the buffer as the next part, after waiting for room.
    fn send_part(&mut self) -> Result<()> {
        while self.in_flight.len() >= self.parts_in_flight() {
            self.wait_oldest()?;
        }
        if self.parts_started >= MAX_PARTS {
            return Err(Error::new(
                ErrorKind::Io,
                format!("{}: more than {MAX_PARTS} parts; the object is larger than the store takes", self.url),
            ));
        }
        self.parts_started += 1;
        let number = self.parts_started;
        self.part_size = part_size(self.options.part_size, self.options.expected_size, number);
        let body = Bytes::from(std::mem::take(&mut self.buffer));
        let len = body.len() as u64;
        let sending = Sending::start();
        let task = match self.target.as_ref() {
            Some(Target::S3 { client, key, upload_id }) => {
                let (client, key, upload_id) = (Arc::clone(client), key.clone(), upload_id.clone());
                runtime().spawn(async move {
                    let part = client.upload_part(&key, &upload_id, number, body).await?;
                    BYTES_SENT.fetch_add(len, Ordering::Relaxed);
                    drop(sending);
                    Ok(Sent::S3(part))
                })
            }
            Some(Target::Azure { client, blob }) => {
                let (client, blob) = (Arc::clone(client), blob.clone());
                runtime().spawn(async move {
                    let block_id = client.put_block(&blob, number, body).await?;
                    BYTES_SENT.fetch_add(len, Ordering::Relaxed);
                    drop(sending);
                    Ok(Sent::Azure { number, block_id })
                })
            }
            _ => return Err(Error::new(ErrorKind::Io, format!("{}: upload already ended", self.url))),
        };
        self.in_flight.push_back(task);
        Ok(())
    }

    fn wait_oldest(&mut self) -> Result<()> {
        let Some(task) = self.in_flight.pop_front() else { return Ok(()) };
        let part = block_on(task)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: a part upload stopped: {e}", self.url)))??;
        self.done.push(part);
        Ok(())
    }

    fn write_inner(&mut self, mut buf: &[u8]) -> Result<()> {
        if let Some(Target::Store(inner)) = self.target.as_mut() {
            let _enter = runtime().enter();
            block_on(inner.wait_for_capacity(self.options.parts_in_flight.max(1)))
                .map_err(|e| store_error(&self.url, e))?;
            inner.write(buf);
            return Ok(());
        }
        while !buf.is_empty() {
            let room = self.part_size - self.buffer.len();
            let (now, rest) = buf.split_at(room.min(buf.len()));
            if self.buffer.capacity() == 0 {
                self.buffer.reserve_exact(self.part_size.min(1 << 20).max(now.len()));
            }
            self.buffer.extend_from_slice(now);
            if self.buffer.len() == self.part_size {
                self.send_part()?;
            }
            buf = rest;
        }
        Ok(())
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.target.is_none() {
            return Err(std::io::Error::other(format!("{}: upload already ended", self.url)));
        }
        if let Err(e) = self.write_inner(buf) {
            self.abort_inner();
            return Err(std::io::Error::other(e.to_string()));
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        self.abort_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn part_sizes_follow_the_expected_size() {
        assert_eq!(part_size(None, None, 0), PART_SIZE);
        assert_eq!(part_size(None, Some(1000), 0), PART_SIZE);
        // 1 TiB in at most 8,000 parts: 132 MiB parts (131.07 rounded up).
        assert_eq!(part_size(None, Some(1 << 40), 0) as u64, 132 * MIB);
        assert_eq!(part_size(None, Some(1 << 40), 7_999) as u64, 132 * MIB);
        // Past the plan, parts grow.
        assert_eq!(part_size(None, Some(1000), 8_001), 2 * PART_SIZE);
        assert_eq!(part_size(None, Some(1000), 8_021), 4 * PART_SIZE);
        assert_eq!(part_size(None, None, 999), PART_SIZE);
        assert_eq!(part_size(None, None, 1000), 2 * PART_SIZE);
        assert_eq!(part_size(None, None, 9_999), MAX_PART_SIZE);
        // Chosen sizes: S3's minimum at least, and large enough for the expected size.
        assert_eq!(part_size(Some(5 << 20), Some(80 << 20), 15), 5 << 20);
        assert_eq!(part_size(Some(1), Some(80 << 20), 0), MIN_PART_SIZE);
        assert_eq!(part_size(Some(5 << 20), Some(1 << 40), 0) as u64, 132 * MIB);
        assert_eq!(part_size(Some(usize::MAX), None, 0), MAX_PART_SIZE);
        assert_eq!(part_size(Some(5 << 20), None, 0), PART_SIZE);
    }

    /// Whatever is written, S3's limits hold: every part but the last at least 5 MiB, and 5 TiB
    /// (S3's largest object) fits in 10,000 parts with or without an announced size.
    #[test]
    fn part_sizes_fit_s3_limits() {
        let cases = [None, Some(0), Some(10 * MIB), Some(1 << 40), Some(5 << 40)];
        for (chosen, expected) in [None, Some(1), Some(MIN_PART_SIZE)].into_iter().flat_map(|c| cases.map(|e| (c, e))) {
            let mut total = 0u64;
            for n in 0..MAX_PARTS {
                let size = part_size(chosen, expected, n);
                assert!((MIN_PART_SIZE..=MAX_PART_SIZE).contains(&size));
                total += size as u64;
            }
            assert!(total >= expected.unwrap_or(5 << 40).max(5 << 40), "{chosen:?} {expected:?}: {total}");
        }
    }
}
