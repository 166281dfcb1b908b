//! Where pages come from.
//!
//! Everything above this module asks for pages by [`PageId`] through the [`PageSource`] trait and
//! never learns whether they come from `.mdf`/`.ndf` files on disk, from inside a backup, or from
//! an object store. [`DataFiles`] is the source for data files, read through any
//! [`ByteSource`]: each file is told from backups and logs by [`crate::sniff`] and identified by
//! the file id recorded in its own file header page (page 0), so the files may be given in any
//! order.
//!
//! [`PageReader`] sits on a source and turns raw bytes into validated [`Page`]s: torn-page bits
//! restored, checksums verified, and the page's own address checked against the one asked for.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::page::protection::{self, Verdict};
use crate::page::{Page, PageHeader, PageId, PAGE_SIZE};
use crate::sniff::{self, FileFormat};

/// One file of the database as a source knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The file id, from the file's own header page.
    pub file_id: u16,
    /// Where the file was read from (a path, or a name inside a container).
    pub location: PathBuf,
    /// Pages in the file.
    pub page_count: u32,
}

/// A provider of raw 8 KB pages by address.
pub trait PageSource: Send + Sync {
    /// Fills `buf` (8192 bytes) with the raw bytes of page `id`.
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()>;

    /// The files this source holds, by file id.
    fn files(&self) -> &[SourceFile];

    /// The file a page id refers to, if this source has it.
    fn file(&self, file_id: u16) -> Option<&SourceFile> {
        self.files().iter().find(|f| f.file_id == file_id)
    }

    /// What opening the source had to resolve that a check should mention (a backup's data
    /// stream against its allocation maps); none by default.
    fn notes(&self) -> &[String] {
        &[]
    }

    /// Those of [`PageSource::notes`] that name parts of the source that were not given (the
    /// stripes of a backup read for salvage): their pages cannot be read. None by default.
    fn parts_not_given(&self) -> &[String] {
        &[]
    }

    /// Pages this source changed in memory from what its files hold (a restore chain's redo
    /// and undo): the catalog's cached counts for the tables they belong to are stale.
    fn changed_pages(&self) -> Vec<PageId> {
        Vec::new()
    }

    /// What the layer that built the source knows of where its pages come from, kept for that
    /// layer to read back: a backup source's set and restore plan (`backup::BackupOrigin`, read
    /// through `backup::FromBackup`). Opaque here, so that this layer names no layer above it;
    /// none by default.
    fn origin(&self) -> Option<&(dyn Any + Send + Sync)> {
        None
    }
}

/// Data files (`.mdf` and `.ndf`) on local disk or in memory.
pub struct DataFiles {
    handles: Vec<Box<dyn ByteSource>>,
    files: Vec<SourceFile>,
}

impl DataFiles {
    /// Opens the given files and identifies each by the file id in its file header page.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        let mut inputs: Vec<(PathBuf, Box<dyn ByteSource>)> = Vec::new();
        for path in paths {
            let path = path.as_ref();
            inputs.push((path.to_path_buf(), crate::location::open(path)?));
        }
        Self::from_inputs(inputs)
    }

    /// Data files held in memory, each with the name to use in messages.
    pub fn from_memory(files: Vec<(String, Vec<u8>)>) -> Result<Self> {
        Self::from_inputs(
            files
                .into_iter()
                .map(|(name, bytes)| (PathBuf::from(name), Box::new(bytes) as Box<dyn ByteSource>))
                .collect(),
        )
    }

    /// Data files from any random-access bytes, each with the name to use in messages.
    pub fn from_inputs(inputs: Vec<(PathBuf, Box<dyn ByteSource>)>) -> Result<Self> {
        if inputs.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, "no data file given"));
        }
        let mut by_id: BTreeMap<u16, (Box<dyn ByteSource>, SourceFile)> = BTreeMap::new();
        for (path, file) in inputs {
            let path = path.as_path();
            let info = Self::identify(file.as_ref(), path).map_err(|e| e.in_file(path))?;
            if let Some((_, other)) = by_id.get(&info.file_id) {
                return Err(Error::new(
                    ErrorKind::NotADatabase,
                    format!(
                        "file id {} is also the id of {}: give each file of the database once",
                        info.file_id,
                        other.location.display()
                    ),
                )
                .in_file(path));
            }
            by_id.insert(info.file_id, (file, info));
        }
        let (handles, files) = by_id.into_values().unzip();
        Ok(DataFiles { handles, files })
    }

    /// Checks that `file` is a data file and finds its file id.
    fn identify(file: &dyn ByteSource, path: &Path) -> Result<SourceFile> {
        let head = sniff::read_head(file).map_err(|e| Error::io(path, "cannot read", e))?;
        let kind = sniff::sniff(&head);
        match kind {
            FileFormat::Backup => return Err(Error::not_a_database(
                "this is a SQL Server backup (Microsoft Tape Format), not a data file; backups are read by the backup commands",
            )),
            FileFormat::CompressedBackup => return Err(Error::not_a_database(
                "this is a compressed SQL Server backup, not a data file; backups are read by the backup commands",
            )),
            _ => {}
        }
        let len = file.len();
        if len < PAGE_SIZE as u64 * 2 {
            return Err(Error::not_a_database(format!(
                "file is {len} bytes, too small for a data file (at least 2 pages of 8192 bytes)"
            )));
        }
        if !len.is_multiple_of(PAGE_SIZE as u64) {
            return Err(Error::not_a_database(format!(
                "file is {len} bytes, not a whole number of 8192-byte pages: truncated, or not a data file"
            )));
        }
        let page_count = u32::try_from(len / PAGE_SIZE as u64)
            .map_err(|_| Error::not_a_database(format!("file is {len} bytes, larger than any data file can be")))?;
        match kind {
            FileFormat::DataFile { file_id } => Ok(SourceFile { file_id, location: path.to_path_buf(), page_count }),
            FileFormat::TransactionLog => Err(Error::not_a_database(
                "page 1 is not a PFS page: this looks like a transaction log (.ldf); give the data files (.mdf, .ndf)",
            )),
            _ => {
                let header = PageHeader::parse(&head)?;
                Err(Error::not_a_database(format!(
                    "page 0 is not a file header page (type byte {}, address {}): not a SQL Server data file",
                    head[1], header.this_page
                )))
            }
        }
    }
}

impl PageSource for DataFiles {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let index = self.files.iter().position(|f| f.file_id == id.file).ok_or_else(|| {
            Error::new(ErrorKind::MissingFile, format!("page {id} is in file id {}, which was not given", id.file))
        })?;
        let info = &self.files[index];
        if id.page >= info.page_count {
            return Err(Error::corrupt(format!("page {id} is beyond the end of the file ({} pages)", info.page_count))
                .in_file(&info.location));
        }
        let got = self.handles[index]
            .read_at_most(buf, id.page as u64 * PAGE_SIZE as u64)
            .map_err(|e| Error::io(&info.location, "cannot read", e))?;
        if got != PAGE_SIZE {
            return Err(
                Error::corrupt(format!("page {id}: file ended after {got} bytes of the page")).in_file(&info.location)
            );
        }
        Ok(())
    }

    fn files(&self) -> &[SourceFile] {
        &self.files
    }
}

/// Reads pages from a source and validates them.
#[derive(Clone)]
pub struct PageReader {
    source: Arc<dyn PageSource>,
    /// File id → "logical (physical)" names from the catalog, for errors about missing files.
    file_names: Arc<OnceLock<HashMap<u16, String>>>,
}

impl PageReader {
    /// A reader over `source`.
    pub fn new(source: Arc<dyn PageSource>) -> Self {
        PageReader { source, file_names: Arc::new(OnceLock::new()) }
    }

    /// Records the catalog's names of the files, so that errors can name a file not given.
    pub fn name_files(&self, names: HashMap<u16, String>) {
        let _ = self.file_names.set(names);
    }

    /// The source the pages come from.
    pub fn source(&self) -> &dyn PageSource {
        self.source.as_ref()
    }

    /// Reads page `id`, restores torn bits, verifies its checksum and its address.
    pub fn read(&self, id: PageId) -> Result<Page> {
        let mut buf = vec![0u8; PAGE_SIZE].into_boxed_slice();
        self.source.read_raw(id, &mut buf).map_err(|e| self.locate(e, id))?;
        let verdict = protection::verify_and_restore(&mut buf);
        self.validate(id, buf, verdict)
    }

    /// What [`Self::read`] returns for page `id` once its raw bytes are in `buf`, torn bits
    /// restored, and `verdict` is what [`protection::verify_and_restore`] said of them: for a
    /// caller that looked at the raw bytes itself (a check), so that the page is read once.
    pub fn validate(&self, id: PageId, buf: Box<[u8]>, verdict: Verdict) -> Result<Page> {
        match verdict {
            Verdict::ChecksumMismatch { stored, computed } => {
                return Err(self.locate(
                    Error::corrupt(format!(
                        "checksum mismatch: page says {stored:#010x}, its bytes give {computed:#010x}"
                    )),
                    id,
                ))
            }
            Verdict::Torn { sector } => {
                return Err(self
                    .locate(Error::corrupt(format!("torn page: sector {sector} was not written with the rest")), id))
            }
            _ => {}
        }
        Page::new(buf, id).map_err(|e| self.locate(e, id))
    }

    /// The number of pages of the file page `id` is in, or, when the source does not hold that
    /// file, the error reading `id` gives.
    pub fn file_page_count(&self, id: PageId) -> Result<u32> {
        match self.source.file(id.file) {
            Some(f) => Ok(f.page_count),
            None => Err(self.locate(
                Error::new(ErrorKind::MissingFile, format!("page {id} is in file id {}, which was not given", id.file)),
                id,
            )),
        }
    }

    fn locate(&self, e: Error, id: PageId) -> Error {
        if e.kind() == ErrorKind::MissingFile {
            if let Some(name) = self.file_names.get().and_then(|n| n.get(&id.file)) {
                return Error::new(
                    ErrorKind::MissingFile,
                    format!(
                        "page {id} is in file id {}, {name}, which was not given: add it to the files to read",
                        id.file
                    ),
                );
            }
        }
        let e = e.at_page(id);
        match self.source.file(id.file) {
            Some(f) => e.in_file(&f.location),
            None => e,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;

    /// Pages held in memory, by page number in file 1 (a file of 100 pages).
    struct Pages(HashMap<PageId, Vec<u8>>, Vec<SourceFile>);

    impl PageSource for Pages {
        fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
            buf.copy_from_slice(self.0.get(&id).ok_or_else(|| Error::corrupt("no such page"))?);
            Ok(())
        }

        fn files(&self) -> &[SourceFile] {
            &self.1
        }
    }

    /// A reader over `pages` (page number, bytes) of file 1, for unit tests.
    pub(crate) fn reader(pages: Vec<(u32, Vec<u8>)>) -> PageReader {
        let files = vec![SourceFile { file_id: 1, location: PathBuf::from("t.mdf"), page_count: 100 }];
        PageReader::new(Arc::new(Pages(pages.into_iter().map(|(p, b)| (PageId::new(1, p), b)).collect(), files)))
    }
}
