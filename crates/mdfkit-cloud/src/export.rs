//! Exports into object stores: a bucket or container prefix as an `mdfkit` export destination.
//!
//! [`ObjectPrefix`] uploads each output as `PREFIX/NAME` through a streaming [`Upload`]: the
//! object appears only when the export finishes it, and an export that fails drops it, which
//! aborts the upload, so a failed table leaves nothing, as a local export leaves no file.
//! [`destination`] picks where `-o` points: a prefix for a bucket URL, else a local folder.

use std::io::Write;
use std::path::{Path, PathBuf};

use mdfkit::export::{ExportDestination, ExportOutput, LocalFolder};
use mdfkit::{Error, ErrorKind, Result};

use super::writer::Upload;
use super::{is_link, is_url};

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

impl ExportDestination for ObjectPrefix {
    fn create(&self, name: &str) -> Result<Box<dyn ExportOutput>> {
        let location = self.prefix.join(name);
        let url = location.to_string_lossy().into_owned();
        Ok(Box::new(UploadOutput { upload: Upload::create(&url)?, location }))
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
