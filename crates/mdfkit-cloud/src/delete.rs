//! Deleting objects: one, or every object under a prefix.
//!
//! The listing and the deletes go through `object_store`: S3 DeleteObjects with 1,000 keys a
//! request, Azure blob batch with 256 deletes a request, 20 requests in flight on either. Each
//! key's own failure comes back by itself (S3 answers per key inside a successful request; a
//! batch answers per sub-request), so a run reports what was deleted and what was not.

use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::{block_on, store_error, store_for, ObjectUrl};
use mdfkit::Result;

/// What a delete did.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Keys deleted.
    pub deleted: Vec<String>,
    /// Keys (or, when a whole request failed, the request's keys together) not deleted, with
    /// the reason.
    pub failed: Vec<String>,
}

/// The keys of every object under `url`'s key taken as a folder (`a/b` lists `a/b/...`, not
/// `a/bc`), sorted.
pub fn list(url: &ObjectUrl) -> Result<Vec<String>> {
    let store = store_for(url)?;
    let prefix = url.path();
    let prefix = if url.key.is_empty() { None } else { Some(&prefix) };
    let mut keys: Vec<String> = block_on(store.list(prefix).map_ok(|m| m.location.to_string()).try_collect())
        .map_err(|e| store_error(url, e))?;
    keys.sort();
    Ok(keys)
}

/// Deletes the one object `url` names (an error if there is none).
pub fn delete_object(url: &ObjectUrl) -> Result<()> {
    let store = store_for(url)?;
    let path = url.path();
    block_on(async {
        store.head(&path).await?;
        store.delete(&path).await
    })
    .map_err(|e| store_error(url, e))
}

/// Deletes `keys` from `url`'s bucket or container in batches.
pub fn delete_keys(url: &ObjectUrl, keys: &[String]) -> Result<Deleted> {
    let store = store_for(url)?;
    let paths: Vec<_> = keys.iter().map(|k| Ok(Path::from(k.as_str()))).collect();
    let paths = stream::iter(paths).boxed();
    let results: Vec<_> = block_on(store.delete_stream(paths).collect());
    let mut out = Deleted::default();
    for r in results {
        match r {
            Ok(path) => out.deleted.push(path.to_string()),
            Err(e) => out.failed.push(store_error(url, e).to_string()),
        }
    }
    Ok(out)
}
