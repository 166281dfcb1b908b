//! [`TableScan`]: the one way to read a table's rows, built from [`Database::scan`] and finished
//! by what the caller wants back:
//!
//! ```
//! # let files = mdfkit_forge::forge(&mdfkit_forge::samples::shop())?;
//! # let source = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())?;
//! # let db = mdfkit::Database::from_source(std::sync::Arc::new(source))?;
//! // The demo's shop database (mdfkit-forge): dbo.Orders holds 5,000 rows.
//! let table = db.catalog().find_table("dbo.Orders").expect("the shop's orders");
//! let mut rows = 0;
//! let stats = db.scan(&table).limit(Some(100)).threads(4).batches(|batch| {
//!     rows += batch.num_rows();
//!     Ok(mdfkit::scan::Flow::Continue)
//! })?;
//! assert_eq!((rows, stats.rows), (100, 100));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It knows which partitions a table scan walks, in which order, and which path decodes them:
//! record by record in key order ([`TableScan::records`]), Arrow batches a page at a time where the
//! layout is plain ([`crate::plain_pages`]) or ROW / PAGE compressed ([`crate::cd_pages`]), or in tasks of pages on several threads
//! (`parallel`) for batches and for text built row by row ([`TableScan::chunks`]).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::catalog::base::AllocationUnit;
use crate::catalog::model::{PartitionInfo, TableInfo};
use crate::cd_pages::CdLayout;
use crate::columnar::BatchBuilder;
use crate::database::{check_has_storage, Database, ScanOptions};
use crate::error::{Error, Result};
use crate::page::{Page, PageId, PageType};
use crate::plain_pages::{PageRow, PageSlots, PlainLayout};
use crate::record::Record;
use crate::rows::RowDecoder;
use crate::scan::{self, Direction, Flow, MappedPages, RowLocation, ScanMode, ScanPosition, ScanStats};
use crate::scans::parallel::{run_in_task_order, Tasks, PAGES_PER_TASK};
use crate::source::{contiguous_pages, PageRun};

/// A scan of one table being set up; see the module documentation.
#[derive(Clone)]
pub struct TableScan<'a> {
    db: &'a Database,
    table: &'a TableInfo,
    options: ScanOptions,
    include_ghosts: bool,
    threads: usize,
}

impl Database {
    /// A scan of `table`: every stored column, every live row, one thread, until set otherwise.
    pub fn scan<'a>(&'a self, table: &'a TableInfo) -> TableScan<'a> {
        TableScan { db: self, table, options: ScanOptions::default(), include_ghosts: false, threads: 1 }
    }
}

impl<'a> TableScan<'a> {
    /// Only these columns, in table order (all stored columns when `None`); for batches and
    /// chunks (records come whole).
    pub fn columns(mut self, columns: Option<Vec<String>>) -> Self {
        self.options.columns = columns;
        self
    }

    /// Stop after this many rows (batches and records).
    pub fn limit(mut self, limit: Option<u64>) -> Self {
        self.options.limit = limit;
        self
    }

    /// Rows per Arrow batch.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.options.batch_size = rows;
        self
    }

    /// The unit of datetime2(7) / datetimeoffset(7) timestamps in batches (see
    /// [`crate::TimestampUnit`]; records are unaffected).
    pub fn timestamps(mut self, unit: crate::TimestampUnit) -> Self {
        self.options.timestamps = unit;
        self
    }

    /// Columns, batch size, limit, salvage and timestamp unit at once.
    pub fn options(mut self, options: &ScanOptions) -> Self {
        self.options = options.clone();
        self
    }

    /// Pass ghost (deleted) records too, marked in their [`RowLocation`] (records only).
    pub fn include_ghosts(mut self, yes: bool) -> Self {
        self.include_ghosts = yes;
        self
    }

    /// Skip damaged pages and records instead of stopping at the first; they are listed in
    /// [`ScanStats::skipped`]. A salvage scan runs on one thread.
    pub fn salvage(mut self, yes: bool) -> Self {
        self.options.salvage = yes;
        self
    }

    /// Decoding threads for batches and chunks. With more than one, pages are taken in allocation
    /// order from the IAM chains (for a clustered index: not key order).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    pub(crate) fn database(&self) -> &'a Database {
        self.db
    }

    pub(crate) fn table(&self) -> &'a TableInfo {
        self.table
    }

    /// The scan's options (columns, batch size, limit, salvage, timestamp unit).
    pub(crate) fn scan_options(&self) -> &ScanOptions {
        &self.options
    }

    /// The columns asked for (`None`: all stored columns).
    pub(crate) fn column_plan(&self) -> Option<&[String]> {
        self.options.columns.as_deref()
    }

    /// The Arrow schema [`TableScan::batches`] produces.
    pub fn schema(&self) -> Result<SchemaRef> {
        self.db.arrow_schema(self.table, self.options.columns.as_deref(), self.options.timestamps)
    }

    fn mode(&self, partition: &PartitionInfo) -> Result<ScanMode> {
        let format = Database::record_format(self.table, partition)?;
        Ok(ScanMode { include_ghosts: self.include_ghosts, salvage: self.options.salvage, format })
    }

    /// Calls `each` for every record of the table, partition by partition (IAM order for heaps,
    /// key order for clustered indexes), until it returns [`Flow::Stop`] or the limit is reached.
    /// Tables whose storage this version does not decode are refused by name.
    pub fn records(&self, mut each: impl FnMut(&Record, RowLocation) -> Result<Flow>) -> Result<ScanStats> {
        check_has_storage(self.table)?;
        let mut total = ScanStats::default();
        let mut remaining = self.options.limit.unwrap_or(u64::MAX);
        for partition in &self.table.partitions {
            if remaining == 0 {
                break;
            }
            let mut stopped = false;
            let stats = self.partition_records(partition, |record, location| {
                let flow = each(record, location)?;
                remaining -= 1;
                stopped = flow == Flow::Stop;
                Ok(if stopped || remaining == 0 { Flow::Stop } else { Flow::Continue })
            })?;
            total += stats;
            if stopped {
                break;
            }
        }
        Ok(total)
    }

    /// Like [`TableScan::records`], resuming after the position `after` (a keyset cursor on the
    /// physical address: `after` is the position the previous call passed with its last row, and
    /// nothing before it is read again), passing each row's position too. Damage stops it (no
    /// salvage). A position on a page no partition of the table owns is refused.
    pub fn records_after(
        &self,
        after: Option<ScanPosition>,
        each: impl FnMut(&Record, RowLocation, ScanPosition) -> Result<Flow>,
    ) -> Result<ScanStats> {
        self.records_from(after, Direction::Forward, each)
    }

    /// [`TableScan::records_after`] in either direction: with [`Direction::Backward`], the rows
    /// before `from` (from the table's end when `None`), last first, partitions from the last;
    /// the limit counts as forward.
    pub fn records_from(
        &self,
        from: Option<ScanPosition>,
        direction: Direction,
        mut each: impl FnMut(&Record, RowLocation, ScanPosition) -> Result<Flow>,
    ) -> Result<ScanStats> {
        check_has_storage(self.table)?;
        let name = self.table.qualified_name();
        let mut units = self.units()?;
        if direction == Direction::Backward {
            units.reverse();
        }
        let start = match from {
            None => 0,
            Some(a) => self.unit_of(&units, a)?,
        };
        let mut total = ScanStats::default();
        let mut remaining = self.options.limit.unwrap_or(u64::MAX);
        for (i, &(partition, unit)) in units.iter().enumerate().skip(start) {
            if remaining == 0 {
                break;
            }
            let mut stopped = false;
            let from = if i == start { from } else { None };
            let stats = scan::for_each_row_from(
                self.db.reader(),
                unit,
                self.table.is_heap,
                ScanMode { salvage: false, ..self.mode(partition)? },
                from,
                direction,
                |r, l, p| {
                    let flow = each(r, l, p)?;
                    remaining -= 1;
                    stopped = flow == Flow::Stop;
                    Ok(if stopped || remaining == 0 { Flow::Stop } else { Flow::Continue })
                },
            )
            .map_err(|e| e.in_object(name.clone()))?;
            total += stats;
            if stopped {
                break;
            }
        }
        Ok(total)
    }

    /// Calls `each` with the row a scan visits at `at` (a forwarding stub's position gives its
    /// forwarded row; a ghost only when ghosts are included): one row read without a scan.
    /// Returns whether there was one.
    pub fn record_at(
        &self,
        at: ScanPosition,
        mut each: impl FnMut(&Record, RowLocation) -> Result<()>,
    ) -> Result<bool> {
        check_has_storage(self.table)?;
        let units = self.units()?;
        let (partition, unit) = units[self.unit_of(&units, at)?];
        let mut found = false;
        scan::visit_position(
            self.db.reader(),
            unit,
            self.table.is_heap,
            ScanMode { salvage: false, ..self.mode(partition)? },
            at,
            |r, l| {
                found = true;
                each(r, l)?;
                Ok(Flow::Stop)
            },
        )
        .map_err(|e| e.in_object(self.table.qualified_name()))?;
        Ok(found)
    }

    /// Each partition of the table with the allocation unit a scan reads.
    fn units(&self) -> Result<Vec<(&'a PartitionInfo, &'a AllocationUnit)>> {
        self.table.partitions.iter().map(|p| Ok((p, self.db.scannable_unit(self.table, p)?))).collect()
    }

    /// The index in `units` of the one owning position `at`'s page.
    fn unit_of(&self, units: &[(&PartitionInfo, &AllocationUnit)], at: ScanPosition) -> Result<usize> {
        let name = self.table.qualified_name();
        let page = self.db.reader().read(at.page).map_err(|e| e.in_object(name.clone()))?;
        units
            .iter()
            .position(|(_, u)| page.header().belongs_to(u.id))
            .ok_or_else(|| Error::not_found(format!("page {} holds no row of the table", at.page)).in_object(name))
    }

    /// Like [`TableScan::records`], for one partition of the table (no limit).
    pub fn partition_records(
        &self,
        partition: &PartitionInfo,
        each: impl FnMut(&Record, RowLocation) -> Result<Flow>,
    ) -> Result<ScanStats> {
        let unit = self.db.scannable_unit(self.table, partition)?;
        scan::for_each_row(self.db.reader(), unit, self.table.is_heap, self.mode(partition)?, each)
            .map_err(|e| e.in_object(self.table.qualified_name()))
    }

    /// [`TableScan::partition_records`], a page at a time through `plain` (the partition's
    /// layout, [`PlainLayout::visit_page`]): records of one shape as their bytes, others as a
    /// [`Record`]. Without a layout, or with salvage, every row is a [`Record`].
    pub fn partition_rows(
        &self,
        partition: &PartitionInfo,
        plain: Option<&PlainLayout>,
        mut each: impl FnMut(PageRow) -> Result<Flow>,
    ) -> Result<ScanStats> {
        let mode = self.mode(partition)?;
        let Some(plain) = plain.filter(|_| !mode.salvage) else {
            return self.partition_records(partition, |record, _| each(PageRow::Record(record)));
        };
        let (db, table) = (self.db, self.table);
        let unit = db.scannable_unit(table, partition)?;
        let mut stats = ScanStats::default();
        // `scan::for_each_row` without salvage: the same pages in the same order.
        scan::for_each_page(db.reader(), unit, table.is_heap, |page| {
            plain.visit_page(db.reader(), page, table.is_heap, mode, &mut stats, &mut each)
        })
        .map_err(|e| e.in_object(table.qualified_name()))?;
        Ok(stats)
    }

    /// Reads the table as Arrow record batches, passing each to `each` until it returns
    /// [`Flow::Stop`] or the limit is reached. On several threads (not with salvage), memory stays
    /// bounded: each worker holds at most three batches.
    pub fn batches(&self, each: impl FnMut(RecordBatch) -> Result<Flow>) -> Result<ScanStats> {
        if self.threads <= 1 || self.options.salvage {
            self.serial_batches(each)
        } else {
            self.parallel_batches(each)
        }
    }

    fn serial_batches(&self, mut each: impl FnMut(RecordBatch) -> Result<Flow>) -> Result<ScanStats> {
        let (db, table, options) = (self.db, self.table, &self.options);
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        let batch_size = options.batch_size.max(1);
        let mut remaining = options.limit.unwrap_or(u64::MAX);
        for partition in &table.partitions {
            if remaining == 0 {
                break;
            }
            let decoder = db.row_decoder(table, partition.partition_id, options.columns.as_deref())?;
            // Small tables should not pay for a full-size batch up front; builders grow as needed.
            let capacity = batch_size.min(usize::try_from(partition.rows.max(0)).unwrap_or(0) + 1);
            let mut batch = BatchBuilder::new(&decoder, capacity, options.timestamps);
            let mut stopped = false;
            let plain = PageColumns::of(&decoder).filter(|_| !options.salvage);
            let stats = if let Some(plain) = plain {
                let unit = db.scannable_unit(table, partition)?;
                let mut stats = ScanStats::default();
                scan::for_each_page(db.reader(), unit, table.is_heap, |page| {
                    stats.pages += 1;
                    let mut slot = 0;
                    while slot < page.slot_count() {
                        let room = batch_size.saturating_sub(batch.len()).max(1);
                        let room = room.min(usize::try_from(remaining).unwrap_or(usize::MAX));
                        let rows_before = stats.rows;
                        let slots = PageSlots {
                            decoder: &decoder,
                            reader: db.reader(),
                            page,
                            is_heap: table.is_heap,
                            first_slot: slot,
                            max_rows: room,
                        };
                        slot = plain.append_slots(slots, &mut batch, &mut stats)?;
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
                let live = TableScan { include_ghosts: false, ..self.clone() };
                let mut check = Vec::new();
                live.partition_records(partition, |record, _| {
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

    fn parallel_batches(&self, mut each: impl FnMut(RecordBatch) -> Result<Flow>) -> Result<ScanStats> {
        let (db, table, options) = (self.db, self.table, &self.options);
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        let mut remaining = options.limit.unwrap_or(u64::MAX);
        for partition in &table.partitions {
            let unit = db.scannable_unit(table, partition)?;
            // The IAM chains' allocated pages, handed out as the scan goes; each task keeps the
            // data pages of the unit, so every page is read once.
            let pages = MappedPages::new(db.reader(), unit).map_err(|e| e.in_object(table.qualified_name()))?;
            // Hands a batch on, cut to the limit: false once no more rows are wanted.
            let mut delivered = 0u64;
            let mut deliver = |batch: RecordBatch| -> Result<bool> {
                let rows = batch.num_rows() as u64;
                let batch = if rows > remaining { batch.slice(0, remaining as usize) } else { batch };
                remaining -= (batch.num_rows() as u64).min(remaining);
                delivered += batch.num_rows() as u64;
                Ok(each(batch)? == Flow::Continue && remaining > 0)
            };
            let rows_before = total.rows;
            let finished = self.page_batches(
                partition,
                Tasks::mapped(pages, pages_per_task(partition, unit)),
                &mut deliver,
                &mut total,
            )?;
            // The tasks count the rows they decoded; a scan cut short by the limit or by `each`
            // returned fewer, and the task it stopped in never reports.
            total.rows = rows_before + delivered;
            if !finished {
                return Ok(total);
            }
        }
        Ok(total)
    }

    /// Decodes the rows of the data pages of `partition`'s in-row unit among the pages of `tasks`
    /// (other pages are skipped) into batches, a task at a time on the scan's threads, handing
    /// them to `deliver` in page order until it answers false (then returns false). A table's
    /// parallel scan gives it all the partition's pages, a split ([`crate::split`]) its own.
    pub(crate) fn page_batches(
        &self,
        partition: &PartitionInfo,
        tasks: Tasks<'_>,
        deliver: &mut dyn FnMut(RecordBatch) -> Result<bool>,
        total: &mut ScanStats,
    ) -> Result<bool> {
        let (db, table, options) = (self.db, self.table, &self.options);
        let unit = db.scannable_unit(table, partition)?;
        // An empty partition (most system tables) starts no thread.
        if tasks.is_empty() {
            return Ok(true);
        }
        // Salvage (a split's) skips a damaged page or record, as a serial salvage scan does: rows
        // are then decoded whole before they reach the builders, never column by column.
        let live = ScanMode { include_ghosts: false, ..self.mode(partition)? };
        let decoder = db.row_decoder(table, partition.partition_id, options.columns.as_deref())?;
        let rows = PageRows::with_mode(db, table, &decoder, live);
        // Builders are sized for a task's rows, as the catalog counts them (over the partition's
        // pages: a split's pages are a part of them).
        let partition_pages = usize::try_from(unit.data_pages).unwrap_or(0).max(tasks.pages_at_most()).max(1);
        let rows_per_page = usize::try_from(partition.rows.max(0)).unwrap_or(0) / partition_pages + 1;
        let shared = TaskShared {
            db,
            unit,
            rows: &rows,
            batch_size: options.batch_size.max(1),
            timestamps: options.timestamps,
            rows_per_page,
        };
        let work = |pages: &[PageId], send: &mut dyn FnMut(RecordBatch) -> bool| shared.decode_pages(pages, send);
        let weigh = |batch: &RecordBatch| batch.get_array_memory_size();
        run_in_task_order(&table.qualified_name(), tasks, self.threads, &work, &weigh, deliver, total)
    }

    /// Visits the live records of the table on the scan's threads, for outputs built row by row
    /// (CSV, JSON Lines): each worker gathers its task's records into chunks, `new_chunk` making
    /// one for a partition's decoder and `append` adding a row to it (answering true when the
    /// chunk is full): records of one shape as their bytes where the partition's layout is plain
    /// ([`PlainLayout::visit_page`]), others as a [`Record`]. `each` receives the chunks on the
    /// calling thread, in page allocation order (for a clustered index: not key order); `weigh`
    /// says the bytes a chunk holds (a worker holds a few MB of chunks at most that `each` has
    /// not taken). Use [`TableScan::records`] for key order, ghosts or salvage.
    pub fn chunks<C: Send>(
        &self,
        new_chunk: impl Fn(&RowDecoder) -> C + Sync,
        append: impl Fn(&mut C, &RowDecoder, PageRow) -> Result<bool> + Sync,
        weigh: impl Fn(&C) -> usize + Sync,
        mut each: impl FnMut(C) -> Result<Flow>,
    ) -> Result<ScanStats> {
        let (db, table) = (self.db, self.table);
        check_has_storage(table)?;
        let mut total = ScanStats::default();
        for partition in &table.partitions {
            let unit = db.scannable_unit(table, partition)?;
            let live = ScanMode { include_ghosts: false, salvage: false, ..self.mode(partition)? };
            let decoder = db.row_decoder(table, partition.partition_id, self.options.columns.as_deref())?;
            let pages = MappedPages::new(db.reader(), unit).map_err(|e| e.in_object(table.qualified_name()))?;
            let plain = PlainLayout::of(&decoder);
            let work = |pages: &[PageId], send: &mut dyn FnMut(C) -> bool| -> Result<ScanStats> {
                let mut stats = ScanStats::default();
                let (mut chunk, mut pending) = (new_chunk(&decoder), false);
                let mut run = PageRun::new();
                for at in 0..pages.len() {
                    let Some(page) = task_data_page(db, unit, &mut run, &pages[at..])? else { continue };
                    let mut wanted = true;
                    let mut each = |row: PageRow| {
                        pending = true;
                        if append(&mut chunk, &decoder, row)? {
                            pending = false;
                            wanted = send(std::mem::replace(&mut chunk, new_chunk(&decoder)));
                        }
                        Ok(if wanted { Flow::Continue } else { Flow::Stop })
                    };
                    let reader = db.reader();
                    match &plain {
                        Some(layout) => layout.visit_page(reader, &page, table.is_heap, live, &mut stats, &mut each)?,
                        None => scan::visit_page(reader, &page, table.is_heap, live, &mut stats, &mut |r, _| {
                            each(PageRow::Record(r))
                        })?,
                    };
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
            if !run_in_task_order(
                &table.qualified_name(),
                Tasks::mapped(pages, pages_per_task(partition, unit)),
                self.threads,
                &work,
                &weigh,
                &mut deliver,
                &mut total,
            )? {
                break;
            }
        }
        Ok(total)
    }
}

/// What the tasks of a parallel batch scan of one partition share.
#[derive(Clone, Copy)]
struct TaskShared<'a> {
    db: &'a Database,
    unit: &'a AllocationUnit,
    /// How a data page's rows go into a batch (live records only; with salvage, damaged pages
    /// and records are skipped and listed).
    rows: &'a PageRows<'a>,
    /// Rows per batch at most.
    batch_size: usize,
    timestamps: crate::TimestampUnit,
    /// Rows a page holds on average (the catalog's row count over the pages).
    rows_per_page: usize,
}

/// In-row pages a parallel task of `partition` decodes: [`PAGES_PER_TASK`], fewer where its LOB
/// and row-overflow pages outnumber its in-row pages (`unit`'s), so that a task brings about as
/// many pages of values as 64 in-row pages would. Output comes back in task order and a worker
/// holds at most `AHEAD_BYTES` (4 MB) of it ahead of the consumer: a task of a LOB table's 64
/// in-row pages (pointers: `dbo.Documents` of the forged 1 GB database has 187 of them and 44,672
/// pages of values) brought about 100 MB of values, so the workers took turns, one core busy.
/// The page counts are the catalog's; where they are missing, as many pages as usual.
pub(crate) fn pages_per_task(partition: &PartitionInfo, unit: &AllocationUnit) -> usize {
    match (u64::try_from(unit.used_pages), u64::try_from(partition.used_pages)) {
        (Ok(in_row @ 1..), Ok(all)) if all > in_row => {
            let share = (PAGES_PER_TASK as u64).saturating_mul(in_row).div_ceil(all);
            usize::try_from(share).unwrap_or(PAGES_PER_TASK).clamp(1, PAGES_PER_TASK)
        }
        _ => PAGES_PER_TASK,
    }
}

impl TaskShared<'_> {
    /// Decodes the rows of the data pages of the task's unit among `pages` into batches (other
    /// pages of an allocated extent are skipped), handing each to `send` (which answers false
    /// when nobody wants more).
    fn decode_pages(&self, pages: &[PageId], send: &mut dyn FnMut(RecordBatch) -> bool) -> Result<ScanStats> {
        let TaskShared { db, unit, rows, batch_size, timestamps, rows_per_page } = *self;
        let mut stats = ScanStats::default();
        let mut batch =
            BatchBuilder::new(rows.decoder, batch_size.min(rows_per_page.saturating_mul(pages.len())), timestamps);
        let mut whole_row = Vec::new();
        let mut run = PageRun::new();
        for at in 0..pages.len() {
            let page = match task_data_page(db, unit, &mut run, &pages[at..]) {
                Ok(Some(page)) => page,
                Ok(None) => continue,
                Err(e) if rows.live.salvage => {
                    stats.skipped.push(scan::Skipped::from_error(&e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            rows.append(&page, &mut batch, &mut stats, &mut whole_row)?;
            if batch.is_full(batch_size) && !send(batch.finish()?) {
                return Ok(stats);
            }
        }
        if !batch.is_empty() {
            send(batch.finish()?);
        }
        Ok(stats)
    }
}

/// How the live rows of a partition's data pages go into batches, a page at a time: column by
/// column where the layout allows ([`PageColumns`]), record by record otherwise. Parallel scans
/// and `check` (which verifies every row this way) use it.
pub(crate) struct PageRows<'a> {
    reader: &'a crate::source::PageReader,
    is_heap: bool,
    decoder: &'a RowDecoder,
    plain: Option<PageColumns>,
    /// Live records only, in the partition's record format; with salvage, record by record.
    live: ScanMode,
}

impl<'a> PageRows<'a> {
    /// The live rows of `partition` of `table`, decoded by `decoder` (no salvage).
    pub(crate) fn new(
        db: &'a Database,
        table: &TableInfo,
        partition: &PartitionInfo,
        decoder: &'a RowDecoder,
    ) -> Result<Self> {
        let format = Database::record_format(table, partition)?;
        Ok(Self::with_mode(db, table, decoder, ScanMode { include_ghosts: false, salvage: false, format }))
    }

    fn with_mode(db: &'a Database, table: &TableInfo, decoder: &'a RowDecoder, live: ScanMode) -> Self {
        let plain = PageColumns::of(decoder).filter(|_| !live.salvage);
        PageRows { reader: db.reader(), is_heap: table.is_heap, decoder, plain, live }
    }

    /// The decoder the rows go through.
    pub(crate) fn decoder(&self) -> &RowDecoder {
        self.decoder
    }

    /// Appends the live rows of data page `page` to `batch` (following a heap's forwarding
    /// stubs). With salvage, each row is decoded whole into `whole_row` first, so a row that
    /// fails is skipped before any of its columns reaches the builders.
    pub(crate) fn append(
        &self,
        page: &Page,
        batch: &mut BatchBuilder,
        stats: &mut ScanStats,
        whole_row: &mut Vec<crate::Value>,
    ) -> Result<()> {
        let PageRows { reader, is_heap, decoder, ref plain, live } = *self;
        if let Some(plain) = plain {
            stats.pages += 1;
            let slots = PageSlots { decoder, reader, page, is_heap, first_slot: 0, max_rows: usize::MAX };
            plain.append_slots(slots, batch, stats)?;
        } else {
            let mut append = |record: &Record, _: RowLocation| {
                if live.salvage {
                    decoder.decode(record, whole_row)?;
                }
                batch.append(decoder, record)?;
                Ok(Flow::Continue)
            };
            scan::visit_page(reader, page, is_heap, live, stats, &mut append)?;
        }
        Ok(())
    }
}

/// How a partition's pages go into batches a page at a time, column by column, where they can.
enum PageColumns {
    /// Uncompressed records.
    Plain(PlainLayout),
    /// ROW and PAGE compressed (CD) records.
    Compressed(CdLayout),
}

impl PageColumns {
    fn of(decoder: &RowDecoder) -> Option<Self> {
        PlainLayout::of(decoder).map(Self::Plain).or_else(|| CdLayout::of(decoder).map(Self::Compressed))
    }

    /// [`PlainLayout::append_slots`] or [`CdLayout::append_slots`].
    fn append_slots(&self, slots: PageSlots, batch: &mut BatchBuilder, stats: &mut ScanStats) -> Result<u16> {
        match self {
            Self::Plain(p) => p.append_slots(slots, batch, stats),
            Self::Compressed(c) => c.append_slots(slots, batch, stats),
        }
    }
}

/// The first of a task's `pages` of `unit`, if it is one of the unit's data pages (the other
/// pages of an allocated extent, and pages not formatted yet, are `None`); read in `run` with
/// the pages that follow it in the file.
fn task_data_page(db: &Database, unit: &AllocationUnit, run: &mut PageRun, pages: &[PageId]) -> Result<Option<Page>> {
    let Some(&id) = pages.first() else { return Ok(None) };
    let page = match db.reader().read_in_run(run, id, || contiguous_pages(pages)) {
        Ok(page) => page,
        // Pages of an allocated extent not formatted yet are all zero.
        Err(e) if e.message().contains("says it is page 0:0") => return Ok(None),
        Err(e) => return Err(e),
    };
    let h = page.header();
    let data = h.page_type == PageType::Data && h.level == 0 && h.belongs_to(unit.id);
    Ok(data.then_some(page))
}

/// A decoder for each partition of a table (partitions can differ in layout: a column added or
/// dropped after some were built), and the one for the rows of a page: what a reader of single
/// rows by position needs (the studio's grid, [`crate::compare`]).
pub struct TableDecoders(Vec<(i64, RowDecoder)>);

impl TableDecoders {
    /// The decoders of `table`'s partitions, every stored column, by in-row allocation unit.
    pub fn of(db: &Database, table: &TableInfo) -> Result<Self> {
        let mut decoders = Vec::new();
        for p in &table.partitions {
            if let Some(unit) = db.catalog().base().in_row_unit(p.partition_id) {
                decoders.push((unit.id, db.row_decoder(table, p.partition_id, None)?));
            }
        }
        Ok(TableDecoders(decoders))
    }

    /// The stored columns' names (the first partition's).
    pub fn columns(&self) -> Vec<String> {
        self.0.first().map(|(_, d)| d.column_names()).unwrap_or_default()
    }

    /// The index of the decoder for the rows of `page` (the first when no unit claims it).
    pub fn index_for_page(&self, db: &Database, page: PageId) -> Result<usize> {
        let page = db.reader().read(page)?;
        Ok(self.0.iter().position(|(unit, _)| page.header().belongs_to(*unit)).unwrap_or(0))
    }

    /// The decoder at `index` ([`TableDecoders::index_for_page`]); `None` for a table without
    /// rowsets.
    pub fn get(&self, index: usize) -> Option<&RowDecoder> {
        self.0.get(index).map(|(_, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::PageId;

    #[test]
    fn tasks_of_a_lob_table_take_fewer_in_row_pages() {
        let partition = |used_pages| PartitionInfo {
            partition_id: 1,
            partition_number: 1,
            rows: 10_000,
            data_compression: 0,
            used_pages,
            total_pages: used_pages,
        };
        let unit = |used_pages| AllocationUnit {
            id: 1,
            kind: 1,
            owner_id: 1,
            filegroup_id: 1,
            first_page: PageId::default(),
            root_page: PageId::default(),
            first_iam_page: PageId::default(),
            used_pages,
            data_pages: used_pages,
            total_pages: used_pages,
        };
        // In-row pages only: the usual 64.
        assert_eq!(pages_per_task(&partition(5_000), &unit(5_000)), 64);
        // Half the pages hold values elsewhere: 32 in-row pages bring 64 pages.
        assert_eq!(pages_per_task(&partition(2_000), &unit(1_000)), 32);
        // 50 in-row pages pointing at 40,000 pages of values: one page a task.
        assert_eq!(pages_per_task(&partition(40_050), &unit(50)), 1);
        // Counts missing or inconsistent: the usual 64.
        assert_eq!(pages_per_task(&partition(0), &unit(0)), 64);
        assert_eq!(pages_per_task(&partition(100), &unit(0)), 64);
        assert_eq!(pages_per_task(&partition(10), &unit(50)), 64);
        assert_eq!(pages_per_task(&partition(-1), &unit(-1)), 64);
    }
}
