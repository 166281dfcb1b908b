//! One remote object read by ranged GETs: a block cache with read-ahead, and sparse prefetch.
//!
//! Reads are served from 16 KiB blocks (two pages). A block is fetched by a ranged GET, started
//! on the runtime and shared: a reader that needs a block another read or a prefetch already
//! asked for waits for that same request. When a read lands in the block after the one read
//! before, or a little further within the read-ahead (a forward scan), the next blocks are
//! fetched ahead; the window starts at 2 blocks and
//! doubles on each forward step up to the read-ahead ([`READ_AHEAD`] unless set); a jump starts
//! a new scan. The window is cut into GETs of at most [`RANGE`] bytes sent in parallel, so a long
//! scan keeps read-ahead / range requests in flight: one stream is slow on an object store,
//! many fill the link (see `tests/transfer.rs`: 16 in flight beat 1 by 5x on a 40 ms link).
//! Each thread's reads are followed apart (up to [`MAX_SCANS`] threads, the most recent), each
//! with its own window: a parallel table scan's threads read one object each through its own
//! run of pages, their reads interleaved (followed as one stream, every read was a jump and
//! nothing was read ahead: a GET a block). Their windows share half the cache. One thread's
//! jumps still end its window, so a catalog read hopping between system tables is not read
//! ahead.
//! At most [`CACHE_BLOCKS`] blocks are kept (least recently used go first).
//!
//! An object is named by a bucket URL (`s3://`, `az://`: `object_store`, credentials from the
//! environment) or by a link that carries its own authorisation (`https://` S3 presigned URL,
//! Azure SAS URL, CloudFront signed URL): plain GETs with a `Range` header, the size taken from
//! the `Content-Range` of a first one-byte GET (a presigned URL is signed for GET only, so no
//! HEAD). A server that answers a ranged GET with the whole object is refused by name rather than
//! read whole. Links are shown without their query string, which holds the signature.
//!
//! [`RemoteObject::prefetch_ranges`] serves another access pattern: many small reads far apart
//! (the page headers a backup's index is built from). The ranges are fetched as they are, up to
//! [`SPARSE_CONCURRENCY`] at once, and kept until the next call; reads of exactly those ranges
//! are then answered from memory.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::ThreadId;

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};

use mdfkit::io::ByteSource;
use mdfkit::{Error, ErrorKind, Result};

use super::{block_on, is_link, runtime, store_error, store_for, ObjectUrl};

/// Bytes per cached block (two pages).
pub const BLOCK: u64 = 16 << 10;
/// Bytes per GET of a forward scan, by default: small enough that a 2 MiB window is 8 requests
/// in flight, large enough that per-request latency is paid once per 16 pages.
pub const RANGE: u64 = 256 << 10;
/// Bytes read ahead of a forward scan at most, by default (as before requests were split: the
/// same bytes are fetched, in parallel).
pub const READ_AHEAD: u64 = 2 << 20;
/// Blocks kept in memory.
pub const CACHE_BLOCKS: usize = 1024;
/// Threads whose scans of one object are followed at once (a parallel scan's workers).
pub const MAX_SCANS: usize = 8;
/// Sparse ranges fetched at once.
pub const SPARSE_CONCURRENCY: usize = 32;

type Fetch = Shared<BoxFuture<'static, std::result::Result<Bytes, Arc<String>>>>;

/// What reading one object cost.
#[derive(Debug, Default)]
pub struct FetchStats {
    /// The object's size in bytes.
    pub size: u64,
    bytes: AtomicU64,
    requests: AtomicU64,
}

impl FetchStats {
    /// Bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// GET requests sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

type Registry = Vec<(String, Arc<FetchStats>)>;

/// Every object opened in this process, by URL (opening one twice shares its counters).
pub(crate) fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Vec::new()))
}

fn stats_for(url: &str, size: u64) -> Arc<FetchStats> {
    let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, s)) = r.iter().find(|(u, s)| u == url && s.size == size) {
        return Arc::clone(s);
    }
    let s = Arc::new(FetchStats { size, ..FetchStats::default() });
    r.push((url.to_string(), Arc::clone(&s)));
    s
}

/// The reads of one thread through an object, as they show a forward scan or not.
#[derive(Clone, Copy)]
struct ForwardScan {
    thread: ThreadId,
    /// The last block it read.
    last_block: u64,
    /// Blocks it reads ahead.
    window: u64,
}

impl ForwardScan {
    /// A read of blocks `first..=last` goes on with this scan: the next block, a skip ahead that
    /// lands within the read-ahead (a scan passing over unallocated pages or pages of other
    /// tables), or a read from the last block into the next.
    fn goes_on_with(&self, first: u64, last: u64) -> bool {
        let l = self.last_block;
        (first > l && first <= l + 1 + self.window) || (first == l && last > l)
    }
}

struct Cache {
    /// Block index → the fetch holding it and the byte offset that fetch starts at.
    blocks: HashMap<u64, (Fetch, u64)>,
    /// Block indexes, least recently used first.
    order: VecDeque<u64>,
    /// Each reading thread's scan, the most recently read first.
    scans: VecDeque<ForwardScan>,
    sparse: HashMap<u64, Bytes>,
}

/// Where an object's bytes come from.
#[derive(Clone)]
enum Backend {
    /// A bucket or container, through `object_store`.
    Store { url: ObjectUrl, store: Arc<dyn ObjectStore>, path: object_store::path::Path },
    /// A self-authorising link, read with plain ranged GETs.
    Link { url: String },
}

impl Backend {
    async fn get_range(&self, range: std::ops::Range<u64>) -> std::result::Result<Bytes, String> {
        match self {
            Backend::Store { url, store, path } => {
                store.get_range(path, range).await.map_err(|e| store_error(url, e).to_string())
            }
            Backend::Link { url } => {
                let wanted = range.end - range.start;
                let response = link_get(url, range.start, range.end - 1).await?;
                match response.body.len() as u64 {
                    n if n == wanted => Ok(response.body),
                    n => Err(format!("{}: asked for {wanted} bytes, got {n}", link_name(url))),
                }
            }
        }
    }
}

/// A link as shown in messages: without its query string (the signature).
pub(crate) fn link_name(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => url.to_string(),
    }
}

/// One ranged GET of a link (bytes `first..=last`), which must come back as a partial answer.
async fn link_get(url: &str, first: u64, last: u64) -> std::result::Result<super::rest::Response, String> {
    let name = link_name(url);
    let response = super::rest::send(|| async {
        Ok(super::rest::client().get(url).header(reqwest::header::RANGE, format!("bytes={first}-{last}")))
    })
    .await
    .map_err(|e| format!("{name}: {e}"))?;
    if response.header("content-range").is_none() {
        return Err(format!(
            "{name}: the server ignores ranged requests (no Content-Range in its answer): \
             download the file first"
        ));
    }
    Ok(response)
}

/// The size of a link's object, from the `Content-Range` (`bytes 0-0/SIZE`) of a one-byte GET.
async fn link_size(url: &str) -> std::result::Result<u64, String> {
    let response = link_get(url, 0, 0).await?;
    let range = response.header("content-range").unwrap_or_default();
    range
        .rsplit_once('/')
        .and_then(|(_, size)| size.trim().parse().ok())
        .ok_or_else(|| format!("{}: no object size in Content-Range {range:?}", link_name(url)))
}

/// A remote object as random-access bytes.
pub struct RemoteObject {
    name: String,
    backend: Backend,
    size: u64,
    /// Blocks per GET of a forward scan.
    range_blocks: u64,
    /// Blocks read ahead at most (within half the cache).
    read_ahead_blocks: u64,
    stats: Arc<FetchStats>,
    cache: Mutex<Cache>,
}

/// Objects open in this process: opening a URL again shares the first one's cache.
fn open_objects() -> &'static Mutex<HashMap<String, Weak<RemoteObject>>> {
    static OPEN: OnceLock<Mutex<HashMap<String, Weak<RemoteObject>>>> = OnceLock::new();
    OPEN.get_or_init(|| Mutex::new(HashMap::new()))
}

impl RemoteObject {
    /// Opens `url` (one HEAD request for its size; a one-byte GET for a link), or shares the
    /// object already open for it.
    pub fn open(url: &str) -> Result<Arc<Self>> {
        if let Some(open) = open_objects().lock().unwrap_or_else(|e| e.into_inner()).get(url).and_then(Weak::upgrade) {
            return Ok(open);
        }
        let (name, backend, size) = if is_link(url) {
            let size = block_on(link_size(url)).map_err(|e| Error::new(ErrorKind::Io, e))?;
            (link_name(url), Backend::Link { url: url.to_string() }, size)
        } else {
            let parsed = ObjectUrl::parse(url)?;
            let store = store_for(&parsed)?;
            let path = parsed.path();
            let meta = block_on(store.head(&path)).map_err(|e| store_error(&parsed, e))?;
            (parsed.to_string(), Backend::Store { url: parsed, store, path }, meta.size)
        };
        let stats = stats_for(&name, size);
        let (range, read_ahead) = super::read_options();
        let range_blocks = range.unwrap_or(RANGE).div_ceil(BLOCK).max(1);
        let read_ahead_blocks = read_ahead.unwrap_or(READ_AHEAD).div_ceil(BLOCK).clamp(1, CACHE_BLOCKS as u64 / 2);
        let object = Arc::new(RemoteObject {
            name,
            backend,
            size,
            range_blocks,
            read_ahead_blocks,
            stats,
            cache: Mutex::new(Cache {
                blocks: HashMap::new(),
                order: VecDeque::new(),
                scans: VecDeque::new(),
                sparse: HashMap::new(),
            }),
        });
        open_objects().lock().unwrap_or_else(|e| e.into_inner()).insert(url.to_string(), Arc::downgrade(&object));
        Ok(object)
    }

    /// The name to use in messages (the URL; a link without its signature).
    pub fn location(&self) -> PathBuf {
        PathBuf::from(&self.name)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn stats(&self) -> &Arc<FetchStats> {
        &self.stats
    }

    fn fetch(&self, range: std::ops::Range<u64>) -> Fetch {
        let backend = self.backend.clone();
        let stats = Arc::clone(&self.stats);
        let task = runtime().spawn(async move {
            stats.requests.fetch_add(1, Ordering::Relaxed);
            let bytes = backend.get_range(range).await?;
            stats.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            Ok(bytes)
        });
        async move {
            match task.await {
                Ok(r) => r.map_err(Arc::new),
                Err(e) => Err(Arc::new(format!("request task failed: {e}"))),
            }
        }
        .boxed()
        .shared()
    }

    /// Starts GETs for the blocks `first..end` that are neither cached nor in flight, one per
    /// range of at most `range_blocks` missing blocks in a row (blocks held are not fetched
    /// again: scans reading ahead next to each other would otherwise fetch each other's).
    fn fetch_blocks(&self, cache: &mut Cache, first: u64, end: u64) {
        let end = end.min(self.size.div_ceil(BLOCK));
        let mut range_start = first;
        while range_start < end {
            if cache.blocks.contains_key(&range_start) {
                range_start += 1;
                continue;
            }
            let longest = end.min(range_start + self.range_blocks);
            let range_end = (range_start..longest).find(|i| cache.blocks.contains_key(i)).unwrap_or(longest);
            let start = range_start * BLOCK;
            let f = self.fetch(start..(range_end * BLOCK).min(self.size));
            for i in range_start..range_end {
                cache.blocks.insert(i, (f.clone(), start));
                cache.order.push_back(i);
            }
            range_start = range_end;
        }
        while cache.order.len() > CACHE_BLOCKS {
            if let Some(old) = cache.order.pop_front() {
                if !cache.order.contains(&old) {
                    cache.blocks.remove(&old);
                }
            }
        }
    }

    /// Reads into `buf` from `offset` (short only at the end of the object).
    pub fn read(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        if offset >= self.size || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(self.size - offset) as usize;
        let first = offset / BLOCK;
        let last = (offset + want as u64 - 1) / BLOCK;
        let fetches: Vec<(u64, Fetch, u64)> = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(b) = cache.sparse.get(&offset) {
                if b.len() >= want {
                    buf[..want].copy_from_slice(&b[..want]);
                    return Ok(want);
                }
            }
            let thread = std::thread::current().id();
            let mut scan = cache
                .scans
                .iter()
                .position(|scan| scan.thread == thread)
                .and_then(|i| cache.scans.remove(i))
                .unwrap_or(ForwardScan { thread, last_block: last, window: 0 });
            let forward = scan.goes_on_with(first, last);
            let same = scan.last_block == first && last == first;
            // A read elsewhere of blocks already held (a PFS or catalog page looked up in the
            // middle of a scan) leaves the scan's window alone; a jump ends it.
            let aside = !forward && !same && (first..=last).all(|i| cache.blocks.contains_key(&i));
            if forward {
                // Windows share half the cache: scans ahead of each other's blocks would
                // otherwise evict them before they are read.
                let most = self.read_ahead_blocks.min(CACHE_BLOCKS as u64 / 2 / (cache.scans.len() as u64 + 1));
                scan.window = (scan.window.max(1) * 2).min(most);
            } else if !same && !aside {
                scan.window = 0;
            }
            self.fetch_blocks(&mut cache, first, last + 1);
            // Read ahead once less than half the window ahead is cached or in flight.
            let window = scan.window;
            if window > 0 && !aside {
                let ahead = (last + 1..last + 1 + window).take_while(|i| cache.blocks.contains_key(i)).count() as u64;
                if ahead < window / 2 + 1 {
                    self.fetch_blocks(&mut cache, last + 1 + ahead, last + 1 + window);
                }
            }
            if !aside {
                scan.last_block = last;
            }
            cache.scans.push_front(scan);
            cache.scans.truncate(MAX_SCANS);
            (first..=last)
                .filter_map(|i| {
                    let (f, start) = cache.blocks.get(&i)?.clone();
                    if let Some(p) = cache.order.iter().rposition(|&b| b == i) {
                        cache.order.remove(p);
                    }
                    cache.order.push_back(i);
                    Some((i, f, start))
                })
                .collect()
        };
        let mut done = 0usize;
        for (index, f, fetch_start) in fetches {
            let bytes = block_on(f).map_err(|e| std::io::Error::other(e.to_string()))?;
            let pos = offset + done as u64;
            if pos >= (index + 1) * BLOCK {
                continue;
            }
            let from = (pos - fetch_start) as usize;
            let block_end = (((index + 1) * BLOCK).min(self.size) - fetch_start) as usize;
            let n = (want - done).min(block_end.min(bytes.len()).saturating_sub(from));
            if n == 0 {
                break;
            }
            buf[done..done + n].copy_from_slice(&bytes[from..from + n]);
            done += n;
        }
        Ok(done)
    }

    /// Fetches many small ranges in parallel and keeps them for the reads that follow (see the
    /// module documentation); replaces the ranges kept before.
    pub fn prefetch_ranges(&self, ranges: &[(u64, usize)]) -> std::io::Result<()> {
        let wanted: Vec<(u64, usize)> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            ranges
                .iter()
                .filter(|(o, _)| *o < self.size && !cache.blocks.contains_key(&(o / BLOCK)))
                .map(|&(o, n)| (o, n.min((self.size - o) as usize)))
                .collect()
        };
        let fetched: Vec<(u64, Bytes)> = block_on(
            futures::stream::iter(wanted.into_iter().map(|(o, n)| {
                let f = self.fetch(o..o + n as u64);
                async move { f.await.map(|b| (o, b)) }
            }))
            .buffer_unordered(SPARSE_CONCURRENCY)
            .try_collect(),
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.sparse = fetched.into_iter().collect();
        Ok(())
    }
}

/// A shared open object as the bytes of a data file or a backup.
pub struct SharedObject(pub Arc<RemoteObject>);

impl ByteSource for SharedObject {
    fn len(&self) -> u64 {
        self.0.size
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        mdfkit::io::read_exact_with(buf, offset, |part, at| self.0.read(part, at))
    }

    fn prefetch_ranges(&self, ranges: &[(u64, usize)]) {
        // A hint: a failure here shows again, with its context, on the read that needs the bytes.
        let _ = self.0.prefetch_ranges(ranges);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A web server on 127.0.0.1 holding `data`, answering `Range: bytes=A-B` with 206 and a
    /// Content-Range (or, when `ranges` is false, every GET with the whole object), until the
    /// test ends. Returns a link with a query string standing in for a signature, and the
    /// lengths of the ranges asked for.
    fn web_server(data: Vec<u8>, ranges: bool) -> (String, Arc<Mutex<Vec<usize>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let link = format!("http://{}/bucket/db.mdf?sig=SECRET", listener.local_addr().unwrap());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&asked);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request).to_ascii_lowercase();
                let range = request.lines().find_map(|l| l.strip_prefix("range: bytes=")).and_then(|r| {
                    let (a, b) = r.trim().split_once('-')?;
                    Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?))
                });
                let head = match range.filter(|_| ranges) {
                    Some((a, b)) => {
                        let b = b.min(data.len() - 1);
                        log.lock().unwrap().push(b + 1 - a);
                        let head = format!(
                            "HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{b}/{}\r\nContent-Length: {}\r\n\
                             Connection: close\r\n\r\n",
                            data.len(),
                            b + 1 - a
                        );
                        (head, &data[a..=b])
                    }
                    None => (
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", data.len()),
                        &data[..],
                    ),
                };
                let _ = stream.write_all(head.0.as_bytes()).and_then(|_| stream.write_all(head.1));
            }
        });
        (link, asked)
    }

    #[test]
    fn links_are_read_by_ranged_gets_and_named_without_their_signature() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let (link, _) = web_server(data.clone(), true);
        let object = RemoteObject::open(&link).unwrap();
        assert_eq!(object.size(), data.len() as u64);
        assert!(!object.location().to_string_lossy().contains("SECRET"));
        for (offset, len) in [(0, 8192), (8192 * 3, 8192), (299_000, 4096), (17, 70_000)] {
            let mut buf = vec![0u8; len];
            let n = object.read(&mut buf, offset as u64).unwrap();
            let end = (offset + len).min(data.len());
            assert_eq!(&buf[..n], &data[offset..end], "{len} bytes at {offset}");
        }
        assert!(object.stats().requests() >= 2);
    }

    #[test]
    fn a_server_ignoring_ranges_is_refused_by_name() {
        let (link, _) = web_server(vec![7u8; 50_000], false);
        let error = RemoteObject::open(&link).err().expect("refused").to_string();
        assert!(error.contains("ignores ranged requests") && error.contains("/bucket/db.mdf?…"), "{error}");
        assert!(!error.contains("SECRET"), "{error}");
    }

    /// A forward scan reads ahead in ranges of at most `RANGE` bytes, several in flight, and
    /// fetches each byte once.
    #[test]
    fn forward_scans_read_ahead_in_parallel_ranges() {
        let data: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
        let (link, asked) = web_server(data.clone(), true);
        let object = RemoteObject::open(&link).unwrap();
        let mut page = vec![0u8; 8192];
        for offset in (0..data.len()).step_by(8192) {
            let n = object.read(&mut page, offset as u64).unwrap();
            assert_eq!(&page[..n], &data[offset..offset + n]);
        }
        let asked = asked.lock().unwrap().clone();
        let ranges = &asked[1..]; // after the one-byte GET for the size
        assert!(ranges.iter().all(|&n| n as u64 <= RANGE), "ranges of {ranges:?} bytes");
        assert_eq!(ranges.iter().sum::<usize>(), data.len(), "every byte fetched once");
        assert!(ranges.len() as u64 >= data.len() as u64 / RANGE, "{} GETs", ranges.len());
    }

    /// One thread hopping between two places (a catalog read going from one system table to
    /// another and back) is not a forward scan: only the blocks it reads are fetched.
    #[test]
    fn a_thread_hopping_between_places_is_not_read_ahead() {
        let data: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
        let (link, asked) = web_server(data.clone(), true);
        let object = RemoteObject::open(&link).unwrap();
        let mut page = vec![0u8; 8192];
        for step in 0..50 {
            for offset in [step * BLOCK, 3_000_000 / BLOCK * BLOCK + step * BLOCK] {
                let n = object.read(&mut page, offset).unwrap();
                assert_eq!(&page[..n], &data[offset as usize..offset as usize + n]);
            }
        }
        let fetched: usize = asked.lock().unwrap()[1..].iter().sum();
        assert_eq!(fetched as u64, 100 * BLOCK, "100 blocks read");
    }

    /// Scan workers on several threads read one object at once, each forward through its own
    /// run of pages, their reads interleaved: each run is read ahead as if it were alone (GETs
    /// of whole ranges, not a block at a time), and every byte is fetched once.
    #[test]
    fn interleaved_forward_scans_each_read_ahead() {
        let data: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
        let (link, asked) = web_server(data.clone(), true);
        let object = RemoteObject::open(&link).unwrap();
        // Four workers, each a quarter of the object, taking turns page by page.
        let quarter = data.len() / 4 / 8192 * 8192;
        let turn = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for worker in 0..4 {
                let (object, data, turn) = (&object, &data, &turn);
                s.spawn(move || {
                    let mut page = vec![0u8; 8192];
                    for step in (0..quarter).step_by(8192) {
                        turn.wait();
                        let offset = worker * quarter + step;
                        let n = object.read(&mut page, offset as u64).unwrap();
                        assert_eq!(&page[..n], &data[offset..offset + n], "worker {worker} at {offset}");
                    }
                });
            }
        });
        let asked = asked.lock().unwrap().clone();
        let ranges = &asked[1..];
        let read = 4 * quarter;
        let fetched: usize = ranges.iter().sum();
        assert!(fetched <= read + 4 * READ_AHEAD as usize, "{fetched} bytes fetched for {read} read");
        // Alone, a forward scan asks for whole ranges once its window has grown: a few
        // blocks at its start, then RANGE bytes a GET.
        let most = 4 * (quarter as u64 / RANGE + 8);
        assert!((ranges.len() as u64) <= most, "{} GETs for 4 runs of {quarter} bytes (at most {most})", ranges.len());
    }
}
