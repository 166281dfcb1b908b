//! [`Database`]: one SQL Server database opened from its files, the library's entry point.
//!
//! ```no_run
//! let db = mdfkit::Database::open(&["shop.mdf"])?;
//! println!("{} (version {})", db.name(), db.catalog().boot.version);
//! # Ok::<(), mdfkit::Error>(())
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::backup::chain::BackupFiles;
use crate::catalog::base::AllocationUnit;
use crate::catalog::model::{compression_name, PartitionInfo, TableInfo};
use crate::catalog::Catalog;
use crate::columnar::{self, BatchBuilder};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::page::file_header::FileHeader;
use crate::page::PageId;
use crate::plain_pages::PlainLayout;
use crate::record::Record;
use crate::rows::RowDecoder;
use crate::scan::{self, Flow, RowLocation, ScanMode, ScanStats};
use crate::sniff::{self, FileFormat};
use crate::source::{DataFiles, PageReader, PageSource};

/// An open database.
pub struct Database {
    reader: PageReader,
    file_headers: Vec<FileHeader>,
    catalog: Catalog,
    missing_files: Vec<MissingFile>,
}

/// A data file the catalog lists but that was not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFile {
    pub file_id: u16,
    pub logical_name: String,
    pub physical_name: String,
}

/// sysprufiles.filetype of data (ROWS) files.
const ROWS_FILE: i64 = 0;

impl Database {
    /// Opens a database from its data files (`.mdf` first or not: files are matched by the ids in
    /// their own headers), or from a backup (`.bak`, or the stripes of one backup set).
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        Self::open_at(paths, None)
    }

    /// Like [`Database::open`]; for a backup, reads the backup set at `position` (`None`: the
    /// last full database backup in the file). A position with data files is an error.
    pub fn open_at<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Self> {
        Self::from_source(open_source(paths, position)?)
    }

    /// Like [`Database::open_at`], for salvage: a striped backup with stripes missing is read
    /// from the stripes given ([`open_source_salvaging`]). Its tables' pages in the missing
    /// stripes cannot be read (salvage scans skip them and say so); when the catalog itself has
    /// pages there, the error names the catalog page and the extents missing.
    pub fn open_salvaging<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Self> {
        let source = open_source_salvaging(paths, position)?;
        let notes = source.notes().to_vec();
        Self::from_source(source).map_err(|e| match notes.iter().find(|n| n.contains(" not given: ")) {
            Some(missing) => {
                Error::new(e.kind(), format!("the catalog is incomplete, nothing can be read: {e} ({missing})"))
            }
            None => e,
        })
    }

    /// Opens a database from any page source.
    pub fn from_source(source: Arc<dyn PageSource>) -> Result<Self> {
        let reader = PageReader::new(source);
        let mut file_headers = Vec::new();
        for file in reader.source().files() {
            let page = reader.read(PageId::new(file.file_id, 0))?;
            file_headers.push(FileHeader::parse(&page).map_err(|e| e.in_file(&file.location))?);
        }
        let primary = reader.source().file(1).ok_or_else(|| {
            let given: Vec<String> = reader
                .source()
                .files()
                .iter()
                .map(|f| format!("{} (file id {})", f.location.display(), f.file_id))
                .collect();
            Error::new(
                ErrorKind::MissingFile,
                format!("the primary data file (file id 1, the .mdf) was not given; given: {}", given.join(", ")),
            )
        })?;
        let primary_binding = file_headers.iter().find(|h| h.file_id == 1).map(|h| h.binding_id);
        for (file, header) in reader.source().files().iter().zip(&file_headers) {
            if Some(header.binding_id) != primary_binding {
                return Err(Error::not_a_database(format!(
                    "belongs to another database than {} (their file headers carry different database ids)",
                    primary.location.display()
                ))
                .in_file(&file.location));
            }
        }
        let catalog = Catalog::load(reader.clone())?;
        let mut missing_files = Vec::new();
        let mut names = HashMap::new();
        for f in catalog.files().iter().filter(|f| f.int("filetype") == ROWS_FILE) {
            let file_id = f.int("fileid") as u16;
            let missing = MissingFile {
                file_id,
                logical_name: f.text("lname").to_string(),
                physical_name: f.text("pname").to_string(),
            };
            names.insert(file_id, format!("{} ({})", missing.logical_name, missing.physical_name));
            if reader.source().file(file_id).is_none() {
                missing_files.push(missing);
            }
        }
        reader.name_files(names);
        Ok(Database { reader, file_headers, catalog, missing_files })
    }

    /// Data files the catalog lists that were not given: what lives in them cannot be read, the
    /// rest can.
    pub fn missing_files(&self) -> &[MissingFile] {
        &self.missing_files
    }

    pub fn name(&self) -> &str {
        &self.catalog.boot.name
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn reader(&self) -> &PageReader {
        &self.reader
    }

    /// The file header of each file given, in file id order.
    pub fn file_headers(&self) -> &[FileHeader] {
        &self.file_headers
    }

    /// Calls `each` for every live row record of `table`, partition by partition, until it
    /// returns [`Flow::Stop`]. Tables whose storage this version does not decode are refused by
    /// name.
    pub fn for_each_row(
        &self,
        table: &TableInfo,
        mut each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
    ) -> Result<ScanStats> {
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        for partition in &table.partitions {
            let mut stopped = false;
            let stats = self.for_each_row_in_partition(table, partition, |record, location| {
                let flow = each(record, location)?;
                stopped = flow == Flow::Stop;
                Ok(flow)
            })?;
            total += stats;
            if stopped {
                break;
            }
        }
        Ok(total)
    }

    /// Like [`Database::for_each_row`], for one partition of the table.
    pub fn for_each_row_in_partition(
        &self,
        table: &TableInfo,
        partition: &PartitionInfo,
        each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
    ) -> Result<ScanStats> {
        self.for_each_record_in_partition(table, partition, ScanMode::default(), each)
    }

    /// Like [`Database::for_each_row_in_partition`], with ghost records and damage treated as
    /// `mode` says: ghosts passed too (marked in their [`RowLocation`]), damaged pages and records
    /// skipped and listed in the returned [`ScanStats::skipped`].
    pub fn for_each_record_in_partition(
        &self,
        table: &TableInfo,
        partition: &PartitionInfo,
        mode: ScanMode,
        each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
    ) -> Result<ScanStats> {
        let unit = self.scannable_unit(table, partition)?;
        scan::for_each_row(&self.reader, unit, table.is_heap, mode, each)
            .map_err(|e| e.in_object(table.qualified_name()))
    }

    /// The in-row allocation unit of a partition whose storage this version decodes.
    fn scannable_unit(&self, table: &TableInfo, partition: &PartitionInfo) -> Result<&AllocationUnit> {
        let name = table.qualified_name();
        if partition.data_compression != 0 {
            return Err(Error::unsupported(format!(
                "uses {} compression: not supported yet",
                compression_name(partition.data_compression)
            ))
            .in_object(name));
        }
        self.catalog.base().in_row_unit(partition.partition_id).ok_or_else(|| {
            Error::corrupt(format!("partition {} has no in-row allocation unit", partition.partition_id))
                .in_object(name)
        })
    }

    /// A decoder for partition `partition_id` of `table`, returning the columns named in
    /// `columns` (all stored columns when `None`).
    pub fn row_decoder(&self, table: &TableInfo, partition_id: i64, columns: Option<&[String]>) -> Result<RowDecoder> {
        RowDecoder::new(self, table, partition_id, columns)
    }

    /// Reads `table` as Arrow record batches of `options.batch_size` rows, passing each to `each`
    /// until it returns [`Flow::Stop`] or `options.limit` rows were read.
    pub fn scan_batches(
        &self,
        table: &TableInfo,
        options: &ScanOptions,
        mut each: impl FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<ScanStats> {
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        let batch_size = options.batch_size.max(1);
        let mut remaining = options.limit.unwrap_or(u64::MAX);
        for partition in &table.partitions {
            if remaining == 0 {
                break;
            }
            let decoder = self.row_decoder(table, partition.partition_id, options.columns.as_deref())?;
            // Small tables should not pay for a full-size batch up front; builders grow as needed.
            let capacity = batch_size.min(usize::try_from(partition.rows.max(0)).unwrap_or(0) + 1);
            let mut batch = BatchBuilder::new(&decoder, capacity);
            let mut stopped = false;
            let plain = PlainLayout::of(&decoder).filter(|_| !options.salvage);
            let stats = if let Some(plain) = plain {
                let unit = self.scannable_unit(table, partition)?;
                let mut stats = ScanStats::default();
                scan::for_each_page(&self.reader, unit, table.is_heap, |page| {
                    stats.pages += 1;
                    let mut slot = 0;
                    while slot < page.slot_count() {
                        let room = batch_size.saturating_sub(batch.len()).max(1);
                        let room = room.min(usize::try_from(remaining).unwrap_or(usize::MAX));
                        let rows_before = stats.rows;
                        slot = plain.append_slots(
                            &decoder,
                            &mut batch,
                            &self.reader,
                            page,
                            table.is_heap,
                            slot,
                            room,
                            &mut stats,
                        )?;
                        remaining -= stats.rows - rows_before;
                        if batch.is_full(batch_size) && each(batch.finish()?)? == Flow::Stop {
                            stopped = true;
                        }
                        if stopped || remaining == 0 {
                            return Ok(Flow::Stop);
                        }
                    }
                    Ok(Flow::Continue)
                })
                .map_err(|e| e.in_object(table.qualified_name()))?;
                stats
            } else {
                let mode = ScanMode { salvage: options.salvage, ..ScanMode::default() };
                let mut check = Vec::new();
                self.for_each_record_in_partition(table, partition, mode, |record, _| {
                    if options.salvage {
                        // A row that fails to decode must be skipped whole, before any of its
                        // columns reach the builders.
                        decoder.decode(record, &mut check)?;
                    }
                    batch.append(&decoder, record)?;
                    remaining -= 1;
                    if batch.is_full(batch_size) && each(batch.finish()?)? == Flow::Stop {
                        stopped = true;
                    }
                    Ok(if stopped || remaining == 0 { Flow::Stop } else { Flow::Continue })
                })?
            };
            if !batch.is_empty() && !stopped {
                stopped = each(batch.finish()?)? == Flow::Stop;
            }
            total += stats;
            if stopped {
                break;
            }
        }
        Ok(total)
    }

    /// Like [`Database::scan_batches`], decoding on `threads` threads. Pages are taken in
    /// allocation order from the IAM chains and split among the threads; batches come back in that
    /// order (for a clustered index: page allocation order, not key order). Memory stays bounded:
    /// `threads` workers decode, each holding at most three batches.
    pub fn scan_batches_parallel(
        &self,
        table: &TableInfo,
        options: &ScanOptions,
        threads: usize,
        mut each: impl FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<ScanStats> {
        if threads <= 1 || options.salvage {
            return self.scan_batches(table, options, each);
        }
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        let mut remaining = options.limit.unwrap_or(u64::MAX);
        for partition in &table.partitions {
            let unit = self.scannable_unit(table, partition)?;
            let decoder = self.row_decoder(table, partition.partition_id, options.columns.as_deref())?;
            // The IAM chains' allocated pages; each task keeps the data pages of the unit, so every
            // page is read once.
            let pages = scan::heap_pages(&self.reader, unit).map_err(|e| e.in_object(table.qualified_name()))?;
            let tasks: Vec<&[PageId]> = pages.chunks(PAGES_PER_TASK).collect();
            // An empty partition (most system tables) starts no thread.
            if tasks.is_empty() {
                continue;
            }
            let plain = PlainLayout::of(&decoder);
            // Builders are sized for a task's rows, as the catalog counts them.
            let rows_per_page = usize::try_from(partition.rows.max(0)).unwrap_or(0) / pages.len().max(1) + 1;
            let shared = TaskShared {
                table,
                unit,
                decoder: &decoder,
                plain: plain.as_ref(),
                batch_size: options.batch_size,
                rows_per_page,
            };
            // Hands a batch on, cut to the limit: false once no more rows are wanted.
            let mut deliver = |batch: RecordBatch| -> Result<bool> {
                let rows = batch.num_rows() as u64;
                let batch = if rows > remaining { batch.slice(0, remaining as usize) } else { batch };
                remaining -= (batch.num_rows() as u64).min(remaining);
                Ok(each(batch)? == Flow::Continue && remaining > 0)
            };
            let work =
                |pages: &[PageId], send: &mut dyn FnMut(RecordBatch) -> bool| self.decode_pages(&shared, pages, send);
            if !run_in_task_order(table, &tasks, threads, &work, &mut deliver, &mut total)? {
                return Ok(total);
            }
        }
        Ok(total)
    }

    /// Decodes the rows of the data pages of the task's unit among `pages` into batches (other
    /// pages of an allocated extent are skipped), handing each to `send` (which answers false when
    /// nobody wants more).
    fn decode_pages(
        &self,
        shared: &TaskShared,
        pages: &[PageId],
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<ScanStats> {
        let TaskShared { table, unit, decoder, plain, batch_size, rows_per_page } = *shared;
        let mut stats = ScanStats::default();
        let mut batch = BatchBuilder::new(decoder, batch_size.min(rows_per_page.saturating_mul(pages.len())));
        for &id in pages {
            let Some(page) = self.task_data_page(unit, id)? else { continue };
            if let Some(plain) = plain {
                stats.pages += 1;
                plain.append_slots(
                    decoder,
                    &mut batch,
                    &self.reader,
                    &page,
                    table.is_heap,
                    0,
                    usize::MAX,
                    &mut stats,
                )?;
            } else {
                let mut append = |record: &Record, _: RowLocation| {
                    batch.append(decoder, record)?;
                    Ok(Flow::Continue)
                };
                scan::visit_page(&self.reader, &page, table.is_heap, ScanMode::default(), &mut stats, &mut append)?;
            }
            if batch.is_full(batch_size) && !send(batch.finish()?) {
                return Ok(stats);
            }
        }
        if !batch.is_empty() {
            send(batch.finish()?);
        }
        Ok(stats)
    }

    /// Page `id` of a task of `unit`, if it is one of the unit's data pages (the other pages of an
    /// allocated extent, and pages not formatted yet, are `None`).
    fn task_data_page(&self, unit: &AllocationUnit, id: PageId) -> Result<Option<crate::page::Page>> {
        let page = match self.reader.read(id) {
            Ok(page) => page,
            // Pages of an allocated extent not formatted yet are all zero.
            Err(e) if e.message().contains("says it is page 0:0") => return Ok(None),
            Err(e) => return Err(e),
        };
        let h = page.header();
        let data = h.page_type == crate::page::PageType::Data && h.level == 0 && h.belongs_to(unit.id);
        Ok(data.then_some(page))
    }

    /// Visits the records of `table` on `threads` threads, for outputs built row by row (CSV,
    /// JSON Lines): each worker gathers its task's records into chunks, `new_chunk` making one
    /// for a partition's decoder and `append` adding a record to it (answering true when the
    /// chunk is full). `each` receives the chunks on the calling thread, in page allocation order
    /// (for a clustered index: not key order). Live rows only, as [`Database::scan_batches`]
    /// reads them; use [`Database::for_each_record_in_partition`] for key order, ghosts or salvage.
    pub fn scan_chunks_parallel<C: Send>(
        &self,
        table: &TableInfo,
        columns: Option<&[String]>,
        threads: usize,
        new_chunk: impl Fn(&RowDecoder) -> C + Sync,
        append: impl Fn(&mut C, &RowDecoder, &Record) -> Result<bool> + Sync,
        mut each: impl FnMut(C) -> Result<Flow>,
    ) -> Result<ScanStats> {
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        for partition in &table.partitions {
            let unit = self.scannable_unit(table, partition)?;
            let decoder = self.row_decoder(table, partition.partition_id, columns)?;
            let pages = scan::heap_pages(&self.reader, unit).map_err(|e| e.in_object(table.qualified_name()))?;
            let tasks: Vec<&[PageId]> = pages.chunks(PAGES_PER_TASK).collect();
            let work = |pages: &[PageId], send: &mut dyn FnMut(C) -> bool| -> Result<ScanStats> {
                let mut stats = ScanStats::default();
                let (mut chunk, mut pending) = (new_chunk(&decoder), false);
                for &id in pages {
                    let Some(page) = self.task_data_page(unit, id)? else { continue };
                    let mut wanted = true;
                    scan::visit_page(
                        &self.reader,
                        &page,
                        table.is_heap,
                        ScanMode::default(),
                        &mut stats,
                        &mut |r, _| {
                            pending = true;
                            if append(&mut chunk, &decoder, r)? {
                                pending = false;
                                wanted = send(std::mem::replace(&mut chunk, new_chunk(&decoder)));
                            }
                            Ok(if wanted { Flow::Continue } else { Flow::Stop })
                        },
                    )?;
                    if !wanted {
                        return Ok(stats);
                    }
                }
                if pending {
                    send(chunk);
                }
                Ok(stats)
            };
            let mut deliver = |chunk: C| Ok(each(chunk)? == Flow::Continue);
            if !run_in_task_order(table, &tasks, threads, &work, &mut deliver, &mut total)? {
                break;
            }
        }
        Ok(total)
    }

    /// The Arrow schema `scan_batches` produces for `table`.
    pub fn arrow_schema(&self, table: &TableInfo, columns: Option<&[String]>) -> Result<SchemaRef> {
        let partition = table
            .partitions
            .first()
            .ok_or_else(|| Error::corrupt("has no partition").in_object(table.qualified_name()))?;
        Ok(columnar::schema(&self.row_decoder(table, partition.partition_id, columns)?))
    }
}

/// What the tasks of a parallel scan of one partition share.
#[derive(Clone, Copy)]
struct TaskShared<'a> {
    table: &'a TableInfo,
    unit: &'a AllocationUnit,
    decoder: &'a RowDecoder,
    plain: Option<&'a PlainLayout>,
    /// Rows per batch at most.
    batch_size: usize,
    /// Rows a page holds on average (the catalog's row count over the pages).
    rows_per_page: usize,
}

/// What a parallel scan task sends its consumer: its output, piece by piece, then how it ended.
enum TaskMessage<T> {
    Output(T),
    Done(Result<ScanStats>),
}

/// Runs `work` over `tasks` (pages of `table`) on up to `threads` threads (no more than there are
/// tasks: an idle thread costs more than it saves) and hands what it sends to `deliver`, in task
/// order; adds each task's statistics to `total`, and names the table in a task's error. Returns
/// false when `deliver` wanted no more.
///
/// Worker `w` runs tasks w, w + workers, ... in order and hands its output over a channel of one:
/// a worker ahead of the consumer waits instead of piling up output (LOB tables make batches
/// large). The consumer reads task i from worker i % workers, so output comes back in page order.
/// With one worker (a single task: most small tables) the tasks run on this thread, without a
/// thread and a channel.
fn run_in_task_order<T: Send>(
    table: &TableInfo,
    tasks: &[&[PageId]],
    threads: usize,
    work: &(dyn Fn(&[PageId], &mut dyn FnMut(T) -> bool) -> Result<ScanStats> + Sync),
    deliver: &mut dyn FnMut(T) -> Result<bool>,
    total: &mut ScanStats,
) -> Result<bool> {
    let workers = threads.min(tasks.len());
    if workers <= 1 {
        for pages in tasks {
            let mut wanted = Ok(true);
            let result = work(pages, &mut |output| {
                wanted = deliver(output);
                matches!(wanted, Ok(true))
            });
            if !wanted? {
                return Ok(false);
            }
            *total += result.map_err(|e| e.in_object(table.qualified_name()))?;
        }
        return Ok(true);
    }
    std::thread::scope(|scope| -> Result<bool> {
        let receivers: Vec<_> = (0..workers)
            .map(|w| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<TaskMessage<T>>(1);
                scope.spawn(move || {
                    for pages in tasks.iter().skip(w).step_by(workers) {
                        let result = work(pages, &mut |output| tx.send(TaskMessage::Output(output)).is_ok());
                        let failed = result.is_err();
                        if tx.send(TaskMessage::Done(result)).is_err() || failed {
                            break;
                        }
                    }
                });
                rx
            })
            .collect();
        for task in 0..tasks.len() {
            let rx = &receivers[task % workers];
            loop {
                match rx.recv() {
                    Ok(TaskMessage::Output(output)) => {
                        if !deliver(output)? {
                            return Ok(false);
                        }
                    }
                    Ok(TaskMessage::Done(result)) => {
                        *total += result.map_err(|e| e.in_object(table.qualified_name()))?;
                        break;
                    }
                    Err(_) => return Err(Error::corrupt("a scan thread stopped without a result")),
                }
            }
        }
        Ok(true)
    })
}

/// Pages one parallel task decodes (512 KB).
const PAGES_PER_TASK: usize = 64;

/// How to read a table as Arrow batches.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Only these columns, in table order (all stored columns when `None`).
    pub columns: Option<Vec<String>>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Stop after this many rows.
    pub limit: Option<u64>,
    /// Skip damaged pages and records instead of stopping at the first (see [`ScanMode`]).
    pub salvage: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions { columns: None, batch_size: 65_536, limit: None, salvage: false }
    }
}

/// A table without rowsets in the data file (a memory-optimized table keeps its rows elsewhere, in
/// checkpoint files) must not read as empty.
fn check_has_storage(table: &TableInfo) -> Result<()> {
    if table.partitions.is_empty() {
        return Err(Error::unsupported(
            "has no rowsets in the data files (memory-optimized, or stored outside them): not supported",
        )
        .in_object(table.qualified_name()));
    }
    Ok(())
}

/// The page source for the given files: data files, or backups of one database (the set at
/// `position` of a single backup, by default the restore chain's latest full backup with the
/// latest differential based on it: see [`crate::backup::chain`]). Each file is opened once and
/// told apart by its first bytes.
pub fn open_source<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Arc<dyn PageSource>> {
    open_source_reading(paths, position, false)
}

/// Like [`open_source`], but a striped backup with stripes missing is read from the stripes
/// given: the pages in the others are missing, and reading them is an error naming them.
pub fn open_source_salvaging<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Arc<dyn PageSource>> {
    open_source_reading(paths, position, true)
}

fn open_source_reading<P: AsRef<Path>>(
    paths: &[P],
    position: Option<u16>,
    salvage: bool,
) -> Result<Arc<dyn PageSource>> {
    let opened: Vec<(PathBuf, Result<Sniffed>)> =
        paths.iter().map(|p| (p.as_ref().to_path_buf(), open_and_sniff(p.as_ref()))).collect();
    let backups = opened.iter().filter(|(_, o)| o.as_ref().is_ok_and(|(_, kind)| kind.is_backup())).count();
    let inputs = opened.into_iter().map(|(path, o)| o.map(|(bytes, _)| (path, bytes)));
    if backups > 0 {
        if backups != paths.len() {
            return Err(Error::new(
                ErrorKind::NotFound,
                "give either the data files of a database or the files of one backup, not both",
            ));
        }
        let stripes = inputs.collect::<Result<Vec<_>>>()?;
        return Ok(BackupFiles::from_sources(stripes)?.into_source(position, salvage)?);
    }
    if let Some(p) = position {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("backup set position {p} given, but no backup file was given"),
        ));
    }
    Ok(Arc::new(DataFiles::from_inputs(inputs.collect::<Result<Vec<_>>>()?)?))
}

/// A file's bytes, and what its first bytes say it is.
type Sniffed = (Box<dyn ByteSource>, FileFormat);

/// Opens `path` (a local file or a URL) and reads what its first bytes say it is.
fn open_and_sniff(path: &Path) -> Result<Sniffed> {
    let bytes = crate::location::open(path)?;
    let head = sniff::read_head(bytes.as_ref()).map_err(|e| Error::io(path, "cannot read", e))?;
    Ok((bytes, sniff::sniff(&head)))
}

/// True when `path` starts like a SQL Server backup (MTF or compressed). An object URL's first
/// bytes are read remotely (one small ranged GET).
pub fn is_backup(path: &Path) -> bool {
    open_and_sniff(path).is_ok_and(|(_, kind)| kind.is_backup())
}
