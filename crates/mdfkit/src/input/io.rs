//! Random-access bytes: what every reader of a file stands on.
//!
//! [`ByteSource`] is a file's bytes at any offset, its length known up front. Data files and
//! backups are read through it and never learn where the bytes are: a local file
//! ([`LocalFile`]), a buffer in memory (`Vec<u8>`), the decompressed stream of a compressed
//! backup (`backup::mssqlbak`), or an object in a store (the `mdfkit-cloud` crate, opened through
//! [`crate::location`]). A reader that knows which small ranges it needs next says so
//! ([`ByteSource::prefetch_ranges`]): a remote source fetches them in parallel instead of one
//! request at a time, a local one ignores the hint.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};

/// Bytes that can be read at any offset.
pub trait ByteSource: Send + Sync {
    /// Length in bytes.
    fn len(&self) -> u64;

    /// Whether there are no bytes at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` from `offset`; a range past [`ByteSource::len`] is `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;

    /// A hint that exactly these `(offset, length)` ranges are read next: a remote source fetches
    /// them in parallel instead of one by one (and without the bytes between them).
    fn prefetch_ranges(&self, _ranges: &[(u64, usize)]) {}

    /// Reads as much of `buf` as the source holds from `offset`; returns the number of bytes read.
    fn read_at_most(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let available = usize::try_from(self.len().saturating_sub(offset)).unwrap_or(usize::MAX);
        let n = buf.len().min(available);
        if n > 0 {
            self.read_exact_at(&mut buf[..n], offset)?;
        }
        Ok(n)
    }
}

/// A file on local disk.
pub struct LocalFile {
    file: File,
    len: u64,
}

impl LocalFile {
    /// Opens the file at `path` for reading.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
        let len = file.metadata().map_err(|e| Error::io(path, "cannot read metadata", e))?.len();
        Ok(LocalFile { file, len })
    }
}

impl ByteSource for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        read_exact_with(buf, offset, |part, at| read_file_at(&self.file, part, at))
    }
}

/// Fills `buf` from `offset` by calling `read_at` (which may read fewer bytes than asked, and
/// none at the end) until it is full: [`ByteSource::read_exact_at`] for sources whose reads come
/// back short.
pub fn read_exact_with(
    buf: &mut [u8],
    offset: u64,
    mut read_at: impl FnMut(&mut [u8], u64) -> std::io::Result<usize>,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

#[cfg(unix)]
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

impl ByteSource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end() {
        let bytes: Vec<u8> = (0..10).collect();
        let mut buf = [0u8; 4];
        assert_eq!(bytes.read_at_most(&mut buf, 8).unwrap(), 2);
        assert_eq!(&buf[..2], &[8, 9]);
        assert_eq!(bytes.read_at_most(&mut buf, 12).unwrap(), 0);
        assert_eq!(bytes.read_exact_at(&mut buf, 7).unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn local_files_read_at_any_offset() {
        let path = std::env::temp_dir().join(format!("mdfkit-io-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let file = LocalFile::open(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let mut buf = [0u8; 3];
        file.read_exact_at(&mut buf, 4).unwrap();
        assert_eq!((file.len(), &buf), (10, b"456"));
        assert_eq!(file.read_exact_at(&mut buf, 8).unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
