//! Splits: a table scan cut into independent parts that other processes or machines read (Spark
//! and Dask workers), each described by a small [`ScanSplit`] that travels as JSON.
//!
//! ```no_run
//! # let db = mdfkit::Database::open(&["shop.mdf"])?;
//! # let table = db.catalog().find_table("dbo.Orders").unwrap();
//! // On the driver: plan.
//! let splits = db.scan(&table).splits(&["shop.mdf"], None, 256 << 20)?;
//! let wire: Vec<String> = splits.iter().map(|s| s.to_json()).collect();
//! // On a worker: re-open the source (catalog pages only) and read the split's pages.
//! let split = mdfkit::split::ScanSplit::from_json(&wire[0])?;
//! let db = split.open()?;
//! split.read(&db, 65_536, |batch| { println!("{} rows", batch.num_rows()); Ok(mdfkit::scan::Flow::Continue) })?;
//! # Ok::<(), mdfkit::Error>(())
//! ```
//!
//! What a split holds (JSON, one object):
//!
//! ```text
//! { "sources":   ["s3://bk/prod.bak"]    files or URLs of the database, as the planner was given them
//!   "position":  null | 3                backup set position
//!   "stop":      "End" | {"Time": ...}   how far a chain's log was rolled forward (STOPAT and
//!                                        the like, `StopPoint`); the worker opens to the same
//!                                        point (absent: the end)
//!   "database":  "prod"                  checked on open: the same database
//!   "table":     "dbo.Orders", "object_id": 245575913,
//!   "partition_id": 72057594043236352, "allocation_unit": 72057594049527808   (checked on read)
//!   "pages":     [[1, 264, 8], [1, 280, 16]]   runs: file id, first page, page count
//!   "columns":   null | ["OrderID", ...]  the column plan (all stored columns when null)
//!   "timestamps": "ns" | "us"            unit of datetime2(7) / datetimeoffset(7) (absent: ns)
//!   "salvage":   false | true            skip damaged pages and records, listed in the read's
//!                                        `ScanStats::skipped` (absent: false)
//!   "index": 0, "count": 12,             which split of how many the plan made
//!   "placement": null | {...} }          a full backup's page placement (absent: none)
//! ```
//!
//! The pages are those a parallel scan of the partition takes ([`crate::scan::heap_pages`]: the
//! allocated pages of the in-row unit's IAM chains), cut in order into runs of about
//! `target_bytes / 8 KB` pages. A split reads only the data pages of its unit among them (index
//! pages of a clustered index, pages not formatted yet and other units' pages are skipped), and a
//! heap's forwarded record is read through its stub, wherever the forwarded record lies: every row
//! is returned by exactly one split. LOB and row-overflow values are read where their pointers
//! lead, outside the split's pages. Rows come in allocation order, not key order.
//!
//! A split from JSON is untrusted: each run must lie inside its file (so a split never makes a
//! reader expand more pages than the file holds), and the table, partition and allocation unit
//! must be the ones the planner saw, or the read is refused by name.
//!
//! Opening a split's source reads the file headers and the catalog (a backup: its descriptor
//! blocks and page index first, see [`crate::backup`]); a worker reading several splits of one
//! source should keep the [`Database`] open between them. A split of a full backup carries where
//! each page lies in the backup's stripes ([`PagePlacement`], found once on the planner: a few
//! runs per file), so a worker opens it without placing the pages again (the page-header votes
//! that decompress every piece of a compressed backup). It is checked against the backup it
//! opens (the backup set's GUID and position, every run inside its stripe and file); one that
//! does not fit is ignored and the pages are placed as without it.

use std::path::Path;

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::backup::{FromBackup, PagePlacement};
use crate::catalog::model::{PartitionInfo, TableInfo};
use crate::database::{check_has_storage, Database};
use crate::error::{Error, ErrorKind, Result};
use crate::log::redo::StopPoint;
use crate::page::PageId;
use crate::scan::{Flow, MappedPages, ScanStats};
use crate::scans::parallel::Tasks;
use crate::scans::table_scan::pages_per_task;
use crate::table_scan::TableScan;

/// Bytes of a page: the unit target sizes are counted in.
const PAGE_BYTES: u64 = 8192;

/// One independent part of a table scan; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSplit {
    /// The database's files (or one backup's stripes), local paths or object URLs.
    pub sources: Vec<String>,
    /// The backup set position the planner read (`None`: the default set, or data files).
    pub position: Option<u16>,
    /// How far the planner's chain was rolled forward (`STOPAT` and the like): a worker opening
    /// the chain to its end would read other rows than those planned.
    #[serde(default, skip_serializing_if = "is_end")]
    pub stop: StopPoint,
    /// The database's name, as its boot page gives it.
    pub database: String,
    /// The table, `schema.name`.
    pub table: String,
    /// The table's `object_id` (`sys.objects`): a split of another table is refused.
    pub object_id: i32,
    /// The partition (`sys.partitions.partition_id`) the pages belong to.
    pub partition_id: i64,
    /// The partition's in-row allocation unit, whose data pages the split reads.
    pub allocation_unit: i64,
    /// Runs of pages: file id, first page, count.
    pub pages: Vec<(u16, u32, u32)>,
    /// Only these columns, in table order (all stored columns when `None`).
    pub columns: Option<Vec<String>>,
    /// The unit of datetime2(7) / datetimeoffset(7) timestamps.
    #[serde(default)]
    pub timestamps: crate::TimestampUnit,
    /// Skip damaged pages and records (listed in the read's [`ScanStats::skipped`]) instead of
    /// stopping at the first.
    #[serde(default)]
    pub salvage: bool,
    /// This split's place among the `count` the plan made for the table.
    pub index: usize,
    /// How many splits the plan made for the table.
    pub count: usize,
    /// Where the pages of a full backup lie (see the module), for the worker's open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PagePlacement>,
}

fn is_end(stop: &StopPoint) -> bool {
    *stop == StopPoint::End
}

impl TableScan<'_> {
    /// Cuts the scan into splits of about `target_bytes` of pages each (at least one page), for
    /// the database opened from `sources` (with `position` for a backup): every partition's
    /// allocated pages in IAM order, in runs. A table with no pages gets one empty split, so that
    /// a reader still learns its schema. Tables this version does not read are refused by name,
    /// here rather than on a worker.
    pub fn splits<P: AsRef<Path>>(
        &self,
        sources: &[P],
        position: Option<u16>,
        target_bytes: u64,
    ) -> Result<Vec<ScanSplit>> {
        let (db, table) = (self.database(), self.table());
        check_has_storage(table)?;
        let sources = sources
            .iter()
            .map(|p| {
                let p = p.as_ref();
                p.to_str().map(str::to_string).ok_or_else(|| {
                    Error::new(ErrorKind::NotFound, format!("{}: a split needs a UTF-8 path", p.display()))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // The column plan is checked here, once.
        self.schema()?;
        let pages_per_split = usize::try_from((target_bytes / PAGE_BYTES).max(1)).unwrap_or(usize::MAX);
        let placement = db.reader().source().page_placement().map(|p| PagePlacement::clone(p));
        let split = |partition: &PartitionInfo, unit: i64, pages: Vec<(u16, u32, u32)>| ScanSplit {
            sources: sources.clone(),
            position,
            stop: db.stop_point().clone(),
            database: db.name().to_string(),
            table: table.qualified_name(),
            object_id: table.object_id,
            partition_id: partition.partition_id,
            allocation_unit: unit,
            pages,
            columns: self.column_plan().map(<[String]>::to_vec),
            timestamps: self.scan_options().timestamps,
            salvage: self.scan_options().salvage,
            index: 0,
            count: 0,
            placement: placement.clone(),
        };
        let mut splits = Vec::new();
        for partition in &table.partitions {
            let unit = db.scannable_unit(table, partition)?;
            // The pages as the IAM walk hands them out, cut every `pages_per_split` into a split's
            // runs: the driver holds the splits, not a list of the table's pages.
            let (mut runs, mut taken) = (Vec::new(), 0);
            let pages = MappedPages::new(db.reader(), unit).and_then(|pages| {
                pages.try_for_each(|id| {
                    extend_runs(&mut runs, id);
                    taken += 1;
                    if taken == pages_per_split {
                        splits.push(split(partition, unit.id, std::mem::take(&mut runs)));
                        taken = 0;
                    }
                    Ok(Flow::Continue)
                })
            });
            pages.map_err(|e| e.in_object(table.qualified_name()))?;
            if taken > 0 {
                splits.push(split(partition, unit.id, runs));
            }
        }
        if splits.is_empty() {
            let partition = &table.partitions[0];
            splits.push(split(partition, db.scannable_unit(table, partition)?.id, Vec::new()));
        }
        let count = splits.len();
        for (index, split) in splits.iter_mut().enumerate() {
            split.index = index;
            split.count = count;
        }
        Ok(splits)
    }
}

/// Adds page `id` to `runs` of consecutive page ids (file id, first page, count).
fn extend_runs(runs: &mut Vec<(u16, u32, u32)>, id: PageId) {
    match runs.last_mut() {
        Some((file, first, count)) if *file == id.file && first.checked_add(*count) == Some(id.page) => *count += 1,
        _ => runs.push((id.file, id.page, 1)),
    }
}

impl ScanSplit {
    /// The split as JSON, to ship to a worker.
    pub fn to_json(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A split shipped as JSON; a split from elsewhere is untrusted: [`ScanSplit::open`] and the
    /// read check it against the database they open.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::NotFound, format!("not a scan split: {e}")))
    }

    /// Opens the split's database from its sources (as [`Database::open_until`] does, at the
    /// planner's stop point).
    pub fn open(&self) -> Result<Database> {
        if let Some(placement) = &self.placement {
            crate::backup::remember_placement(placement.clone());
        }
        let db = Database::open_until(&self.sources, self.position, self.stop.clone())?;
        if db.name() != self.database {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: holds database {:?}, the split was planned on {:?}",
                    self.sources.join(", "),
                    db.name(),
                    self.database
                ),
            ));
        }
        Ok(db)
    }

    /// The split's table in `db`, checked against what the planner saw.
    pub fn table(&self, db: &Database) -> Result<TableInfo> {
        let table = db
            .catalog()
            .find_table(&self.table)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("no table {} in {}", self.table, db.name())))?;
        if table.object_id != self.object_id {
            return Err(self.changed(format!("object id {} (the split's: {})", table.object_id, self.object_id)));
        }
        Ok(table)
    }

    fn changed(&self, what: String) -> Error {
        Error::new(ErrorKind::NotFound, format!("not the table the split was planned on: {what}"))
            .in_object(&self.table)
    }

    /// The split's pages, each run checked to lie inside its file.
    fn page_ids(&self, db: &Database) -> Result<Vec<PageId>> {
        let mut ids = Vec::new();
        for &(file, first, count) in &self.pages {
            let in_file = db.reader().file_page_count(PageId::new(file, first))?;
            let end = first.checked_add(count).filter(|&end| end <= in_file).ok_or_else(|| {
                Error::corrupt(format!(
                    "split pages {file}:{first} and {} after it lie past the end of file {file} ({in_file} pages)",
                    count.saturating_sub(1)
                ))
                .in_object(&self.table)
            })?;
            ids.extend((first..end).map(|page| PageId::new(file, page)));
        }
        Ok(ids)
    }

    /// Reads the split's rows from `db` (its source, opened with [`ScanSplit::open`]) as Arrow
    /// batches of at most `batch_size` rows, passing each to `each` until it returns
    /// [`Flow::Stop`]. A damaged page stops the read with the page and table named, or, for a
    /// salvage split, is skipped and listed in the returned [`ScanStats::skipped`].
    pub fn read(
        &self,
        db: &Database,
        batch_size: usize,
        mut each: impl FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<ScanStats> {
        let table = self.table(db)?;
        let partition = table
            .partitions
            .iter()
            .find(|p| p.partition_id == self.partition_id)
            .ok_or_else(|| self.changed(format!("no partition {}", self.partition_id)))?;
        let unit = db.scannable_unit(&table, partition)?;
        if unit.id != self.allocation_unit {
            return Err(self.changed(format!("allocation unit {} (the split's: {})", unit.id, self.allocation_unit)));
        }
        let pages = self.page_ids(db)?;
        let scan = db
            .scan(&table)
            .columns(self.columns.clone())
            .batch_size(batch_size)
            .timestamps(self.timestamps)
            .salvage(self.salvage);
        let mut total = ScanStats::default();
        let mut deliver = |batch: RecordBatch| Ok(each(batch)? == Flow::Continue);
        scan.page_batches(partition, Tasks::listed(&pages, pages_per_task(partition, unit)), &mut deliver, &mut total)?;
        Ok(total)
    }

    /// The Arrow schema [`ScanSplit::read`] produces.
    pub fn schema(&self, db: &Database) -> Result<arrow_schema::SchemaRef> {
        db.arrow_schema(&self.table(db)?, self.columns.as_deref(), self.timestamps)
    }

    /// Pages the split names (data pages and others of its extents).
    pub fn page_count(&self) -> u64 {
        self.pages.iter().map(|&(_, _, count)| u64::from(count)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(pages: &[PageId]) -> Vec<(u16, u32, u32)> {
        let mut runs = Vec::new();
        pages.iter().for_each(|&id| extend_runs(&mut runs, id));
        runs
    }

    #[test]
    fn consecutive_pages_make_one_run_and_files_or_gaps_start_another() {
        let ids = [(1, 8), (1, 9), (1, 10), (1, 16), (3, 17), (3, 18), (1, 19)].map(|(f, p)| PageId::new(f, p));
        assert_eq!(runs(&ids), vec![(1, 8, 3), (1, 16, 1), (3, 17, 2), (1, 19, 1)]);
        assert_eq!(runs(&[]), vec![]);
        // A run that would pass u32::MAX starts another instead of wrapping.
        let top = [PageId::new(1, u32::MAX), PageId::new(1, 0)];
        assert_eq!(runs(&top), vec![(1, u32::MAX, 1), (1, 0, 1)]);
    }

    #[test]
    fn a_split_travels_as_json_and_back() {
        let text = r#"{"sources":["a.mdf","b.ndf"],"position":null,"database":"shop","table":"dbo.Orders",
            "object_id":245575913,"partition_id":72057594043236352,"allocation_unit":72057594049527808,
            "pages":[[1,264,8],[3,16,2]],"columns":["OrderID"],"index":1,"count":4}"#;
        let split = ScanSplit::from_json(text).unwrap();
        assert_eq!(split.sources, ["a.mdf", "b.ndf"]);
        assert_eq!(split.pages, [(1, 264, 8), (3, 16, 2)]);
        assert_eq!(split.page_count(), 10);
        assert_eq!(ScanSplit::from_json(&split.to_json()).unwrap(), split);
        // Splits written before the unit and salvage were carried read as nanoseconds, no salvage.
        assert_eq!((split.timestamps, split.salvage), (crate::TimestampUnit::Nanosecond, false));
        let us = text.replace(r#""index""#, r#""timestamps":"us","salvage":true,"index""#);
        let split = ScanSplit::from_json(&us).unwrap();
        assert_eq!((split.timestamps, split.salvage), (crate::TimestampUnit::Microsecond, true));
        assert!(split.to_json().contains(r#""timestamps":"us","salvage":true"#));
        let err = ScanSplit::from_json(r#"{"sources":[]}"#).unwrap_err();
        assert!(err.message().starts_with("not a scan split: missing field"), "{err}");
    }
}
