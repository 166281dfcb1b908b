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
//!
//! Scans read runs of contiguous pages of one file in one call ([`PageSource::read_raw_run`],
//! up to [`RUN_PAGES`] into a [`PageRun`]) instead of one read and one copy a page: a local file
//! gives a run with one positioned read, a backup with one where the run's pages lie one after
//! another in a stripe. Each page of a run is still verified on its own when it is taken
//! ([`PageReader::read_in_run`]), and a run that cannot be read is read again page by page, so a
//! damaged or missing page is reported as a page read alone reports it.

use std::any::Any;
use std::cell::RefCell;
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

    /// Fills the first `count` × 8192 bytes of `buf` with the raw bytes of the `count` pages of
    /// file `first.file` from `first` on. By default page by page with [`PageSource::read_raw`];
    /// sources that can read contiguous pages in one call do.
    fn read_raw_run(&self, first: PageId, count: u32, buf: &mut [u8]) -> Result<()> {
        let run = run_bytes(first, count, buf)?;
        for (page, bytes) in (first.page..).zip(run.chunks_exact_mut(PAGE_SIZE)) {
            self.read_raw(PageId::new(first.file, page), bytes)?;
        }
        Ok(())
    }

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

/// Pages a run ([`PageSource::read_raw_run`], [`PageRun`]) holds at most: 256 KB, which stays
/// in a core's second-level cache while its pages are decoded.
pub const RUN_PAGES: u32 = 32;

/// The part of `buf` a run of `count` pages from `first` fills: refused when the run is empty,
/// does not fit in `buf`, or passes the last page number there is.
pub fn run_bytes(first: PageId, count: u32, buf: &mut [u8]) -> Result<&mut [u8]> {
    let len = usize::try_from(count).ok().and_then(|c| c.checked_mul(PAGE_SIZE)).filter(|&len| len <= buf.len());
    match len {
        Some(len) if count > 0 && first.page.checked_add(count - 1).is_some() => Ok(&mut buf[..len]),
        _ => Err(Error::corrupt(format!(
            "a run of {count} pages from page {first} does not fit a buffer of {} bytes",
            buf.len()
        ))),
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

impl DataFiles {
    /// Reads pages `first` to `first + count - 1` of one file into `run` (`count` × 8192 bytes)
    /// with one read; they must lie inside the file.
    fn read_pages(&self, first: PageId, count: u32, run: &mut [u8]) -> Result<()> {
        let index = self.files.iter().position(|f| f.file_id == first.file).ok_or_else(|| {
            Error::new(
                ErrorKind::MissingFile,
                format!("page {first} is in file id {}, which was not given", first.file),
            )
        })?;
        let info = &self.files[index];
        if u64::from(first.page) + u64::from(count) > u64::from(info.page_count) {
            let what =
                if count == 1 { format!("page {first} is") } else { format!("{count} pages from page {first} go") };
            return Err(Error::corrupt(format!("{what} beyond the end of the file ({} pages)", info.page_count))
                .in_file(&info.location));
        }
        let got = self.handles[index]
            .read_at_most(run, first.page as u64 * PAGE_SIZE as u64)
            .map_err(|e| Error::io(&info.location, "cannot read", e))?;
        if got != run.len() {
            let page = PageId::new(first.file, first.page + (got / PAGE_SIZE) as u32);
            return Err(Error::corrupt(format!("page {page}: file ended after {} bytes of the page", got % PAGE_SIZE))
                .in_file(&info.location));
        }
        Ok(())
    }
}

impl PageSource for DataFiles {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.read_pages(id, 1, run_bytes(id, 1, buf)?)
    }

    fn read_raw_run(&self, first: PageId, count: u32, buf: &mut [u8]) -> Result<()> {
        self.read_pages(first, count, run_bytes(first, count, buf)?)
    }

    fn files(&self) -> &[SourceFile] {
        &self.files
    }
}

/// Contiguous pages of one file read in one call, taken one by one by
/// [`PageReader::read_in_run`]: the pages taken share its buffer ([`RUN_PAGES`] pages, 256 KB),
/// which is refilled in place once none of them is held (a scan holds one page at a time) and
/// kept for the thread's next run when the run is dropped.
pub struct PageRun {
    bytes: Arc<[u8]>,
    /// The first page held, and how many (none until the first read).
    first: PageId,
    count: u32,
    /// Bit i: page `first + i` was taken (and verified in place) already.
    taken: u32,
}

thread_local! {
    /// The buffer of the thread's last run, for its next one.
    static SPARE_RUN: RefCell<Option<Arc<[u8]>>> = const { RefCell::new(None) };
}

impl PageRun {
    /// An empty run, on the thread's spare buffer when it has one.
    pub fn new() -> Self {
        let bytes = SPARE_RUN.with(|spare| spare.borrow_mut().take()).unwrap_or_else(Self::new_bytes);
        PageRun { bytes, first: PageId::new(0, 0), count: 0, taken: 0 }
    }

    fn new_bytes() -> Arc<[u8]> {
        Arc::from(vec![0u8; RUN_PAGES as usize * PAGE_SIZE])
    }

    /// The index of page `id` in the run, if the run holds it.
    fn index_of(&self, id: PageId) -> Option<u32> {
        let index = id.page.checked_sub(self.first.page)?;
        (id.file == self.first.file && index < self.count).then_some(index)
    }
}

impl Default for PageRun {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PageRun {
    fn drop(&mut self) {
        // A buffer still shared with a page somebody holds is left to that page.
        if Arc::get_mut(&mut self.bytes).is_some() {
            let bytes = std::mem::replace(&mut self.bytes, Arc::from(Vec::new()));
            // A thread being torn down has no spare to keep.
            let _ = SPARE_RUN.try_with(|spare| *spare.borrow_mut() = Some(bytes));
        }
    }
}

/// How many pages of `pages`, from the first on, follow each other in one file (at most
/// [`RUN_PAGES`]): the run a scan of a page list can read at once.
pub fn contiguous_pages(pages: &[PageId]) -> u32 {
    let Some(&first) = pages.first() else { return 0 };
    let follow = pages
        .iter()
        .skip(1)
        .take(RUN_PAGES as usize - 1)
        .zip(1u32..)
        .take_while(|(id, i)| id.file == first.file && first.page.checked_add(*i) == Some(id.page))
        .count();
    1 + follow as u32
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
        self.check_verdict(id, verdict)?;
        Page::new(buf, id).map_err(|e| self.locate(e, id))
    }

    /// Page `id`, taken from `run` when the run holds it, else read with the pages after it into
    /// `run`: `ahead()` says how many pages from `id` on the caller will take next (capped at
    /// [`RUN_PAGES`] and at the file's end). The page is verified as [`Self::read`] does; when
    /// the run cannot be read, or the page was taken from it before, it is read alone, so an
    /// error names the page as [`Self::read`] names it.
    pub fn read_in_run(&self, run: &mut PageRun, id: PageId, ahead: impl FnOnce() -> u32) -> Result<Page> {
        let index = match run.index_of(id) {
            Some(index) if run.taken & (1 << index) == 0 => index,
            Some(_) => return self.read(id),
            None => match self.fill(run, id, ahead()) {
                Ok(()) => 0,
                Err(_) => return self.read(id),
            },
        };
        run.taken |= 1 << index;
        let start = index as usize * PAGE_SIZE;
        match Arc::get_mut(&mut run.bytes) {
            Some(bytes) => {
                let verdict = protection::verify_and_restore(&mut bytes[start..start + PAGE_SIZE]);
                self.check_verdict(id, verdict)?;
                Page::in_run(Arc::clone(&run.bytes), start, id).map_err(|e| self.locate(e, id))
            }
            // A page taken from the run before is still held: this one gets its own copy.
            None => {
                let mut buf: Box<[u8]> = run.bytes[start..start + PAGE_SIZE].into();
                let verdict = protection::verify_and_restore(&mut buf);
                self.validate(id, buf, verdict)
            }
        }
    }

    /// Reads up to `ahead` pages from `first` (no further than its file's end) into `run`.
    fn fill(&self, run: &mut PageRun, first: PageId, ahead: u32) -> Result<()> {
        let in_file = self.file_page_count(first)?.saturating_sub(first.page);
        let count = ahead.clamp(1, RUN_PAGES).min(in_file);
        run.count = 0;
        if Arc::get_mut(&mut run.bytes).is_none() {
            // Pages of the last run are still held: they keep that buffer.
            run.bytes = PageRun::new_bytes();
        }
        let bytes = Arc::get_mut(&mut run.bytes).ok_or_else(|| Error::corrupt("a new run buffer is shared"))?;
        self.source.read_raw_run(first, count, bytes)?;
        (run.first, run.count, run.taken) = (first, count, 0);
        Ok(())
    }

    /// The error a damaged page's `verdict` makes, if any.
    fn check_verdict(&self, id: PageId, verdict: Verdict) -> Result<()> {
        match verdict {
            Verdict::ChecksumMismatch { stored, computed } => Err(self.locate(
                Error::corrupt(format!("checksum mismatch: page says {stored:#010x}, its bytes give {computed:#010x}")),
                id,
            )),
            Verdict::Torn { sector } => {
                Err(self
                    .locate(Error::corrupt(format!("torn page: sector {sector} was not written with the rest")), id))
            }
            _ => Ok(()),
        }
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

#[cfg(test)]
mod run_tests {
    use super::tests::reader;
    use super::*;

    /// The demo's shop database (mdfkit-forge) as data files in memory: its file 1's bytes and
    /// the source.
    fn shop() -> (Vec<u8>, DataFiles) {
        let files = mdfkit_forge::forge(&mdfkit_forge::samples::shop()).unwrap();
        let mdf = files.iter().find(|f| f.name.ends_with(".mdf")).unwrap().bytes.clone();
        let source = DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect()).unwrap();
        (mdf, source)
    }

    fn page_bytes(file: &[u8], page: u32) -> &[u8] {
        &file[page as usize * PAGE_SIZE..(page as usize + 1) * PAGE_SIZE]
    }

    #[test]
    fn a_run_holds_the_file_bytes_of_its_pages() {
        let (mdf, source) = shop();
        let mut buf = vec![0u8; 40 * PAGE_SIZE];
        source.read_raw_run(PageId::new(1, 3), 40, &mut buf).unwrap();
        assert_eq!(buf, mdf[3 * PAGE_SIZE..43 * PAGE_SIZE]);
        // A run of one is a page read.
        source.read_raw_run(PageId::new(1, 9), 1, &mut buf).unwrap();
        assert_eq!(&buf[..PAGE_SIZE], page_bytes(&mdf, 9));
    }

    /// Whether page `id` read from `run` is what reading it alone gives: the same bytes, or
    /// the same error (pages of the file not formatted yet are one); the page when read.
    fn same_as_alone(reader: &PageReader, run: &mut PageRun, id: PageId, ahead: u32) -> Option<Page> {
        match (reader.read_in_run(run, id, || ahead), reader.read(id)) {
            (Ok(page), Ok(alone)) => {
                assert_eq!((page.id(), page.bytes()), (alone.id(), alone.bytes()), "page {id}");
                Some(page)
            }
            (Err(e), Err(alone)) => {
                assert_eq!(e.to_string(), alone.to_string(), "page {id}");
                None
            }
            (page, alone) => panic!("page {id}: {:?} from the run, {:?} alone", page.err(), alone.err()),
        }
    }

    #[test]
    fn a_run_never_reads_past_the_file_or_the_buffer() {
        let (mdf, source) = shop();
        let pages = (mdf.len() / PAGE_SIZE) as u32;
        let mut buf = vec![0u8; 4 * PAGE_SIZE];
        let e = source.read_raw_run(PageId::new(1, pages - 2), 3, &mut buf).unwrap_err();
        assert!(
            e.to_string().contains(&format!("3 pages from page 1:{} go beyond the end of the file", pages - 2)),
            "{e}"
        );
        source.read_raw_run(PageId::new(1, pages - 2), 2, &mut buf).unwrap();
        assert_eq!(&buf[..2 * PAGE_SIZE], &mdf[(pages as usize - 2) * PAGE_SIZE..]);
        let e = source.read_raw_run(PageId::new(1, 0), 5, &mut buf).unwrap_err();
        assert!(e.to_string().contains("a run of 5 pages from page 1:0 does not fit a buffer of 32768 bytes"), "{e}");
        assert!(source.read_raw_run(PageId::new(1, u32::MAX), 2, &mut buf).is_err());
        assert!(source.read_raw_run(PageId::new(1, 0), 0, &mut buf).is_err());
        assert!(source.read_raw(PageId::new(1, 0), &mut buf[..100]).is_err());

        // Read ahead as far as asked, the reader stops at the file's last page.
        let reader = PageReader::new(Arc::new(source));
        let mut run = PageRun::new();
        same_as_alone(&reader, &mut run, PageId::new(1, pages - 1), RUN_PAGES);
        assert_eq!((run.first, run.count), (PageId::new(1, pages - 1), 1));
        let e = reader.read_in_run(&mut run, PageId::new(1, pages), || RUN_PAGES).unwrap_err();
        assert!(e.to_string().contains("beyond the end of the file"), "{e}");
    }

    #[test]
    fn pages_taken_from_a_run_are_the_pages_read_alone() {
        let (mdf, source) = shop();
        let reader = PageReader::new(Arc::new(source));
        let mut run = PageRun::new();
        let mut held = Vec::new();
        for page in 0..200 {
            let Some(page) = same_as_alone(&reader, &mut run, PageId::new(1, page), RUN_PAGES) else { continue };
            // Pages held while the run moves on keep their bytes (the run takes a new buffer).
            if page.id().page % 10 == 0 {
                held.push(page);
            }
        }
        assert_eq!((run.first, run.count), (PageId::new(1, 192), 32));
        assert!(held.len() > 5, "{} pages held", held.len());
        for page in held {
            assert_eq!(page.bytes(), page_bytes(&mdf, page.id().page));
        }
        // Pages of the run asked for again are read again.
        for page in 192..200 {
            same_as_alone(&reader, &mut run, PageId::new(1, page), 1);
        }
    }

    #[test]
    fn a_damaged_page_in_a_run_is_reported_as_read_alone() {
        let (mut mdf, source) = shop();
        let reader = PageReader::new(Arc::new(source));
        // The first formatted page after 8, then damaged.
        let damaged = (9..).find(|&page| reader.read(PageId::new(1, page)).is_ok()).unwrap();
        mdf[damaged as usize * PAGE_SIZE + 200] ^= 0x40;
        let source = DataFiles::from_memory(vec![("shop.mdf".into(), mdf)]).unwrap();
        let reader = PageReader::new(Arc::new(source));
        let mut run = PageRun::new();
        for page in 8..damaged + 8 {
            same_as_alone(&reader, &mut run, PageId::new(1, page), 32);
        }
        let e = reader.read_in_run(&mut run, PageId::new(1, damaged), || 1).unwrap_err().to_string();
        let page = format!("page 1:{damaged}");
        assert!(["shop.mdf", &page, "checksum mismatch"].iter().all(|n| e.contains(n)), "{e}");
    }

    /// A torn-page protected page (no checksum) numbered `page`, whose sectors 1 to 15 end with
    /// the write's stamp 1 and whose original sector bits are `sector % 4`.
    fn torn_protected(page: u32) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        p[0] = 1;
        p[1] = 1;
        p[4..6].copy_from_slice(&0x100u16.to_le_bytes());
        p[32..36].copy_from_slice(&page.to_le_bytes());
        p[36..38].copy_from_slice(&1u16.to_le_bytes());
        let saved = (1..16).fold(1u32, |bits, sector| bits | ((sector % 4) << (2 * sector)));
        p[60..64].copy_from_slice(&saved.to_le_bytes());
        for sector in 1..16 {
            p[sector * 512 + 511] = 0xfc | 1;
        }
        p
    }

    #[test]
    fn torn_bits_are_restored_once_in_a_run() {
        let reader = reader((20..24).map(|page| (page, torn_protected(page))).collect());
        let mut run = PageRun::new();
        for page in 20..24 {
            let id = PageId::new(1, page);
            let from_run = reader.read_in_run(&mut run, id, || 24 - page).unwrap();
            for sector in 1..16 {
                assert_eq!(
                    from_run.bytes()[sector * 512 + 511],
                    0xfc | (sector % 4) as u8,
                    "page {id} sector {sector}"
                );
            }
            // Taken again (read alone), it is restored from the source's bytes, not twice.
            assert_eq!(reader.read_in_run(&mut run, id, || 1).unwrap().bytes(), from_run.bytes());
        }
        // The source holds pages 20 to 23 only: a run asked past them cannot be read, and the
        // page asked for is read alone; a page it lacks gives the error a read alone gives.
        let mut run = PageRun::new();
        assert_eq!(reader.read_in_run(&mut run, PageId::new(1, 21), || RUN_PAGES).unwrap().id(), PageId::new(1, 21));
        let e = reader.read_in_run(&mut run, PageId::new(1, 30), || RUN_PAGES).unwrap_err();
        assert_eq!(e.to_string(), reader.read(PageId::new(1, 30)).unwrap_err().to_string());
    }

    #[test]
    fn runs_follow_the_pages_listed_one_after_another() {
        let ids = |pages: &[(u16, u32)]| pages.iter().map(|&(f, p)| PageId::new(f, p)).collect::<Vec<_>>();
        assert_eq!(contiguous_pages(&ids(&[(1, 5), (1, 6), (1, 7), (1, 9)])), 3);
        assert_eq!(contiguous_pages(&ids(&[(1, 5), (3, 6)])), 1);
        assert_eq!(contiguous_pages(&ids(&[(1, 6), (1, 5)])), 1);
        assert_eq!(contiguous_pages(&ids(&[(1, u32::MAX), (1, 0)])), 1);
        assert_eq!(contiguous_pages(&[]), 0);
        let long: Vec<PageId> = (100..200).map(|p| PageId::new(2, p)).collect();
        assert_eq!(contiguous_pages(&long), RUN_PAGES);
    }
}
