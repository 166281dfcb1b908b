//! Measuring a link to an object store (`mdfkit bench transfer`): throughput of GETs and PUTs
//! for a matrix of object sizes × requests in flight, and the settings it recommends.
//!
//! The lesson of measuring object stores: one request at a time leaves most of the link idle
//! (each request pays a round trip and a slow TCP start), small objects are bound by requests per
//! second and large ones by bytes per second, and throughput grows with requests in flight until
//! the link or the server is full. The matrix finds where that happens for the link at hand.
//!
//! For each size, [`BenchOptions::objects_per_size`] objects are uploaded under a fresh prefix;
//! then for each concurrency `c`, `c` workers GET them round robin for [`BenchOptions::duration`]
//! (bodies are counted as they stream in, never held whole), and `c` workers PUT objects of that
//! size over `c` keys for as long. Every object is deleted at the end, also after a failure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::{block_on, runtime, store_error, store_for, ObjectUrl};
use mdfkit::{Error, ErrorKind, Result};

/// S3's smallest part but the last: a part size is never recommended below it.
pub const MIN_PART_SIZE: u64 = 5 << 20;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Object sizes in bytes.
    pub sizes: Vec<u64>,
    /// Requests in flight to try.
    pub concurrency: Vec<usize>,
    /// How long each (size, concurrency) cell runs, for GETs and again for PUTs.
    pub duration: Duration,
    /// Distinct objects read per size.
    pub objects_per_size: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            sizes: vec![1 << 10, 64 << 10, 1 << 20, 16 << 20],
            concurrency: vec![1, 4, 16, 64, 256],
            duration: Duration::from_secs(2),
            objects_per_size: 16,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Get,
    Put,
}

/// One measurement: `requests` of `size` bytes with `concurrency` in flight took `seconds`.
#[derive(Debug, Clone)]
pub struct Cell {
    pub operation: Operation,
    pub size: u64,
    pub concurrency: usize,
    pub requests: u64,
    pub bytes: u64,
    pub seconds: f64,
}

impl Cell {
    /// Megabytes (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    pub fn requests_per_s(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }
}

/// Settings for the link: ranges and GETs in flight for reads, parts and parts in flight for writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recommendation {
    pub range_size: u64,
    pub read_concurrency: usize,
    pub part_size: u64,
    pub parts_in_flight: usize,
}

/// Runs the matrix against the prefix `url`, calling `on_cell` as each cell is measured.
pub fn run(url: &str, options: &BenchOptions, on_cell: &mut dyn FnMut(&Cell)) -> Result<Vec<Cell>> {
    if options.sizes.is_empty() || options.concurrency.is_empty() || options.concurrency.contains(&0) {
        return Err(Error::not_found("bench transfer needs at least one size and concurrencies of 1 or more"));
    }
    let base = ObjectUrl::parse(url)?;
    let store = store_for(&base)?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let parent = base.key.trim_end_matches('/');
    let prefix =
        format!("{parent}{}mdfkit-bench-{}-{stamp}", if parent.is_empty() { "" } else { "/" }, std::process::id());
    let prefix_url = base.with_key(&prefix);
    let measured = measure(&store, &prefix_url, options, on_cell);
    let cleaned = delete_prefix(&store, &prefix_url);
    let cells = measured?;
    cleaned?;
    Ok(cells)
}

fn measure(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectUrl,
    options: &BenchOptions,
    on_cell: &mut dyn FnMut(&Cell),
) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for &size in &options.sizes {
        let payload = Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
        let objects: Vec<ObjectPath> = (0..options.objects_per_size.max(1))
            .map(|i| ObjectPath::from(format!("{}/get/{size}/{i}", prefix.key)))
            .collect();
        block_on(
            futures::stream::iter(objects.iter().map(|path| {
                let payload = PutPayload::from_bytes(payload.clone());
                async move { store.put(path, payload).await }
            }))
            .buffer_unordered(16)
            .try_collect::<Vec<_>>(),
        )
        .map_err(|e| store_error(prefix, e))?;
        let objects = Arc::new(objects);
        for &concurrency in &options.concurrency {
            for operation in [Operation::Get, Operation::Put] {
                let cell = run_cell(store, prefix, &objects, &payload, operation, concurrency, options.duration)?;
                on_cell(&cell);
                cells.push(cell);
            }
        }
    }
    Ok(cells)
}

/// `concurrency` workers sending requests back to back until `duration` has passed.
fn run_cell(
    store: &Arc<dyn ObjectStore>,
    prefix: &ObjectUrl,
    objects: &Arc<Vec<ObjectPath>>,
    payload: &Bytes,
    operation: Operation,
    concurrency: usize,
    duration: Duration,
) -> Result<Cell> {
    let bytes = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let size = payload.len() as u64;
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let (store, objects, payload) = (Arc::clone(store), Arc::clone(objects), payload.clone());
            let (bytes, requests) = (Arc::clone(&bytes), Arc::clone(&requests));
            let put_path = ObjectPath::from(format!("{}/put/{size}/{worker}", prefix.key));
            runtime().spawn(async move {
                let mut next = worker;
                while Instant::now() < deadline {
                    let done = match operation {
                        Operation::Get => {
                            let path = &objects[next % objects.len()];
                            next += 1;
                            let mut body = store.get(path).await?.into_stream();
                            let mut n = 0u64;
                            while let Some(chunk) = body.next().await {
                                n += chunk?.len() as u64;
                            }
                            n
                        }
                        Operation::Put => {
                            store.put(&put_path, PutPayload::from_bytes(payload.clone())).await?;
                            payload.len() as u64
                        }
                    };
                    bytes.fetch_add(done, Ordering::Relaxed);
                    requests.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<(), object_store::Error>(())
            })
        })
        .collect();
    for worker in workers {
        block_on(worker)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{prefix}: benchmark worker failed: {e}")))?
            .map_err(|e| store_error(prefix, e))?;
    }
    Ok(Cell {
        operation,
        size,
        concurrency,
        requests: requests.load(Ordering::Relaxed),
        bytes: bytes.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Deletes every object under `prefix` (many deletes in flight).
fn delete_prefix(store: &Arc<dyn ObjectStore>, prefix: &ObjectUrl) -> Result<()> {
    let listed: Vec<object_store::ObjectMeta> =
        block_on(store.list(Some(&prefix.path())).try_collect()).map_err(|e| store_error(prefix, e))?;
    block_on(
        futures::stream::iter(listed.into_iter().map(|meta| async move { store.delete(&meta.location).await }))
            .buffer_unordered(32)
            .try_collect::<Vec<_>>(),
    )
    .map_err(|e| store_error(prefix, e))?;
    Ok(())
}

/// The settings the cells point to. For each operation: the best throughput over all cells; the
/// smallest size that reaches 80% of it (larger requests only add memory and retry cost); the
/// fewest requests in flight that reach 90% of that size's best.
pub fn recommend(cells: &[Cell]) -> Option<Recommendation> {
    let pick = |operation: Operation| -> Option<(u64, usize)> {
        let of: Vec<&Cell> = cells.iter().filter(|c| c.operation == operation).collect();
        let best = of.iter().map(|c| c.mb_per_s()).fold(0.0, f64::max);
        let best_of_size = |size: u64| of.iter().filter(|c| c.size == size).map(|c| c.mb_per_s()).fold(0.0, f64::max);
        let size = of.iter().map(|c| c.size).filter(|&s| best_of_size(s) >= 0.8 * best).min()?;
        let target = 0.9 * best_of_size(size);
        let concurrency =
            of.iter().filter(|c| c.size == size && c.mb_per_s() >= target).map(|c| c.concurrency).min()?;
        Some((size, concurrency))
    };
    let (range_size, read_concurrency) = pick(Operation::Get)?;
    let (part_size, parts_in_flight) = pick(Operation::Put)?;
    Some(Recommendation { range_size, read_concurrency, part_size: part_size.max(MIN_PART_SIZE), parts_in_flight })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(operation: Operation, size: u64, concurrency: usize, mb_per_s: f64) -> Cell {
        Cell { operation, size, concurrency, requests: 1, bytes: (mb_per_s * 1e6) as u64, seconds: 1.0 }
    }

    #[test]
    fn recommends_the_smallest_size_and_concurrency_near_the_best() {
        let mut cells = Vec::new();
        for (size, rates) in
            [(1u64 << 10, [1.0, 3.0, 8.0]), (1 << 20, [10.0, 70.0, 95.0]), (16 << 20, [20.0, 90.0, 100.0])]
        {
            for (c, rate) in [1usize, 16, 64].into_iter().zip(rates) {
                cells.push(cell(Operation::Get, size, c, rate));
                cells.push(cell(Operation::Put, size, c, rate / 2.0));
            }
        }
        // Best GET 100 MB/s; 1 MiB reaches 95 (>= 80); 90% of 95 is 85.5, first reached at 64.
        // PUTs: the same shape, and 1 MiB parts are raised to S3's 5 MiB minimum.
        assert_eq!(
            recommend(&cells),
            Some(Recommendation { range_size: 1 << 20, read_concurrency: 64, part_size: 5 << 20, parts_in_flight: 64 })
        );
        assert_eq!(recommend(&[]), None);
    }
}
