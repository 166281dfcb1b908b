//! Writing an object as a stream: an S3 multipart upload / Azure block blob with parts in flight.
//!
//! [`Upload`] is a `std::io::Write`: bytes are cut into parts of [`PART_SIZE`] and each part is
//! sent as soon as it is full, up to [`PARTS_IN_FLIGHT`] at once (`object_store`'s
//! `WriteMultipart`, with its retries and backoff per request). The object appears only when
//! [`Upload::finish`] completes the upload (CompleteMultipartUpload / Put Block List); an upload
//! dropped unfinished, or failed, is aborted, so a failed export leaves no object behind.
//!
//! Not yet: a Content-MD5 per part (object_store sends none), part sizes from the expected size.

use std::io::Write;

use object_store::{ObjectStoreExt, WriteMultipart};

use super::{block_on, runtime, store_error, store_for, ObjectUrl};
use crate::error::{Error, Result};

/// Bytes per part (S3 wants at least 5 MiB for every part but the last).
pub const PART_SIZE: usize = 8 << 20;
/// Parts uploaded at once.
pub const PARTS_IN_FLIGHT: usize = 8;

/// A streaming upload to an object URL.
pub struct Upload {
    url: ObjectUrl,
    inner: Option<WriteMultipart>,
    written: u64,
}

impl Upload {
    /// Starts an upload to `url` (nothing is visible there until [`Upload::finish`]).
    pub fn create(url: &str) -> Result<Self> {
        let url = ObjectUrl::parse(url)?;
        let store = store_for(&url)?;
        let path = url.path();
        let upload = block_on(store.put_multipart(&path)).map_err(|e| store_error(&url, e))?;
        Ok(Upload { url, inner: Some(WriteMultipart::new_with_chunk_size(upload, PART_SIZE)), written: 0 })
    }

    pub fn url(&self) -> &ObjectUrl {
        &self.url
    }

    /// Sends the last part and completes the upload; returns the object's size.
    pub fn finish(mut self) -> Result<u64> {
        let inner = self.inner.take().ok_or_else(|| Error::new(crate::ErrorKind::Io, "upload already ended"))?;
        let _enter = runtime().enter();
        block_on(inner.finish()).map_err(|e| store_error(&self.url, e))?;
        Ok(self.written)
    }

    /// Abandons the upload: the parts sent are deleted and no object appears.
    pub fn abort(mut self) {
        self.abort_inner();
    }

    fn abort_inner(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _enter = runtime().enter();
            let _ = block_on(inner.abort());
        }
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let inner = self.inner.as_mut().ok_or_else(|| std::io::Error::other("upload already ended"))?;
        let _enter = runtime().enter();
        block_on(inner.wait_for_capacity(PARTS_IN_FLIGHT)).map_err(|e| std::io::Error::other(e.to_string()))?;
        inner.write(buf);
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
