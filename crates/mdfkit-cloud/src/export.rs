//! Exports into object stores: a bucket or container prefix as an `mdfkit` export destination.
//!
//! [`ObjectPrefix`] uploads each output as `PREFIX/NAME` through a streaming [`Upload`]: the
//! object appears only when the export finishes it, and an export that fails drops it, which
//! aborts the upload, so a failed table leaves nothing, as a local export leaves no file.
//! [`destination`] picks where `-o` points: a prefix for a bucket URL, else a local folder.
//! A prefix also holds Delta Lake tables: it lists, reads, and creates a commit only where none
//! exists (a conditional put, `If-None-Match: *`; a store that cannot is refused by name).

use std::io::Write;
use std::path::{Path, PathBuf};

use mdfkit::export::{ExportDestination, ExportOutput, LocalFolder};
use mdfkit::{Error, ErrorKind, Result};

use object_store::{ObjectStoreExt, PutMode, PutOptions};

use super::writer::Upload;
use super::{block_on, is_link, is_url, store_error, store_for, ObjectUrl};

/// The destination for `output`: a prefix for `s3://` / `az://` URLs, otherwise a local folder
/// (created when missing). Links are refused: they can only be read.
pub fn destination(output: &Path) -> Result<Box<dyn ExportDestination>> {
    match output.to_str() {
        Some(url) if is_url(url) => Ok(Box::new(ObjectPrefix { prefix: output.to_path_buf() })),
        Some(link) if is_link(link) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "{}: a link is read-only: export to s3://bucket/prefix or az://container/prefix",
                super::reader::link_name(link)
            ),
        )),
        _ => Ok(Box::new(LocalFolder::create(output)?)),
    }
}

/// A prefix in a bucket or container (`s3://lake/shop/`): output `NAME` is uploaded as
/// `s3://lake/shop/NAME`.
pub struct ObjectPrefix {
    prefix: PathBuf,
}

impl ObjectPrefix {
    /// The URL of `name` under the prefix.
    fn url_of(&self, name: &str) -> Result<ObjectUrl> {
        ObjectUrl::parse(&self.prefix.join(name).to_string_lossy())
    }
}

impl ExportDestination for ObjectPrefix {
    fn create(&self, name: &str) -> Result<Box<dyn ExportOutput>> {
        let location = self.prefix.join(name);
        let url = location.to_string_lossy().into_owned();
        Ok(Box::new(UploadOutput { upload: Upload::create(&url)?, location }))
    }

    fn list(&self, folder: &str) -> Result<Vec<String>> {
        let url = self.url_of(folder)?;
        let prefix = url.path();
        let found = block_on(async {
            store_for(&url)?.list_with_delimiter(Some(&prefix)).await.map_err(|e| store_error(&url, e))
        })?;
        Ok(found.objects.iter().filter_map(|o| o.location.filename().map(str::to_string)).collect())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        let url = self.url_of(name)?;
        let store = store_for(&url)?;
        block_on(async { store.get(&url.path()).await?.bytes().await })
            .map(|b| b.to_vec())
            .map_err(|e| store_error(&url, e))
    }

    fn create_new(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let url = self.url_of(name)?;
        let store = store_for(&url)?;
        let options = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        match block_on(store.put_opts(&url.path(), bytes.to_vec().into(), options)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => Err(Error::new(
                ErrorKind::Unsupported,
                format!("{url}: this store cannot create an object only where none exists, which Delta commits need"),
            )),
            Err(e) => Err(store_error(&url, e)),
        }
    }
}

/// An upload as an export output.
struct UploadOutput {
    upload: Upload,
    location: PathBuf,
}

impl Write for UploadOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.upload.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.upload.flush()
    }
}

impl ExportOutput for UploadOutput {
    fn location(&self) -> &Path {
        &self.location
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        self.upload.finish()
    }
}
