//! [`Database`]: one SQL Server database opened from its files, the library's entry point.
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("mdfkit-doc-database-{}", std::process::id()));
//! # mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::shop(), &dir)?;
//! // shop.mdf: the demo's database, written by mdfkit-forge in SQL Server 2019's format.
//! let db = mdfkit::Database::open(&[dir.join("shop.mdf")])?;
//! println!("{} (version {})", db.name(), db.catalog().boot.version);
//! assert_eq!((db.name(), db.catalog().boot.version), ("shop", 904));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::backup::chain::BackupFiles;
use crate::catalog::base::AllocationUnit;
use crate::catalog::model::{compression_name, PartitionInfo, TableInfo};
use crate::catalog::Catalog;
use crate::columnar::{self, TimestampUnit};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::log::ldf::LogFile;
use crate::log::redo::StopPoint;
use crate::page::file_header::FileHeader;
use crate::page::{PageId, PageType};
use crate::record::RecordFormat;
use crate::rows::RowDecoder;
use crate::sniff::{self, FileFormat};
use crate::source::{DataFiles, PageReader, PageSource};

/// An open database.
pub struct Database {
    reader: PageReader,
    file_headers: Vec<FileHeader>,
    catalog: Catalog,
    missing_files: Vec<MissingFile>,
    /// How far a chain's log was rolled forward (`End` for data files).
    stop: StopPoint,
}

/// A data file the catalog lists but that was not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFile {
    /// The file id the catalog gives it (sysprufiles.fileid).
    pub file_id: u16,
    /// Its logical name (`sys.database_files.name`).
    pub logical_name: String,
    /// The path it had where the database ran (`sys.database_files.physical_name`).
    pub physical_name: String,
}

/// A table's in-row pages: those the allocation maps list, and those of them the source holds
/// ([`Database::in_row_pages_present`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InRowPages {
    /// Pages the source holds.
    pub present: usize,
    /// Pages the table's IAM pages list and its PFS pages mark allocated.
    pub listed: usize,
}

/// sysprufiles.filetype of data (ROWS) files.
const ROWS_FILE: i64 = 0;

impl Database {
    /// Opens a database from its data files (`.mdf` first or not: files are matched by the ids in
    /// their own headers), or from a backup (`.bak`, or the stripes of one backup set).
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        Self::open_at(paths, None)
    }

    /// Like [`Database::open`]; for a backup, reads the backup set at `position` of a single
    /// backup file (`None`: the restore chain, as [`open_source`]). A position with data files is
    /// an error.
    pub fn open_at<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Self> {
        Self::from_source(open_source(paths, position)?)
    }

    /// The tables of [`Catalog::tables`], with the row count of each partition whose pages the
    /// source changed in memory (a restore chain's log) counted on its pages: the catalog
    /// holds counts as of its last checkpoint, which the log moves on from (`sys.partitions`'
    /// `rows` after a restore). A partition that cannot be read fails, naming it.
    pub fn tables_counted(&self, include_system: bool) -> Result<Vec<TableInfo>> {
        let mut tables = self.catalog.tables(include_system);
        let units: HashSet<i64> = self
            .reader
            .source()
            .changed_pages()
            .into_iter()
            .filter_map(|id| self.reader.read(id).ok())
            .filter(|page| matches!(page.header().page_type, PageType::Data | PageType::Index))
            .map(|page| page.header().allocation_unit_id())
            .collect();
        if units.is_empty() {
            return Ok(tables);
        }
        for table in &mut tables {
            let listed = table.clone();
            for partition in &mut table.partitions {
                let Some(unit) = self.scannable_unit(&listed, partition).ok().filter(|u| units.contains(&u.id)) else {
                    continue;
                };
                let format = Self::record_format(&listed, partition)?;
                let mode = crate::scan::ScanMode { format, include_ghosts: false, salvage: false };
                let mut rows = 0;
                crate::scan::for_each_row(&self.reader, unit, listed.is_heap, mode, |_, _| {
                    rows += 1;
                    Ok(crate::scan::Flow::Continue)
                })
                .map_err(|e| e.in_object(listed.qualified_name()))?;
                partition.rows = rows;
            }
        }
        Ok(tables)
    }

    /// Like [`Database::open_at`], with the backups' log rolled forward only up to `stop`
    /// (`RESTORE ... WITH STOPAT`; see [`crate::log::redo`]).
    pub fn open_until<P: AsRef<Path>>(paths: &[P], position: Option<u16>, stop: StopPoint) -> Result<Self> {
        let db = Self::from_source(open_source_until(paths, position, stop.clone())?)?;
        Ok(Database { stop, ..db })
    }

    /// Like [`Database::open_at`], for salvage: a striped backup with stripes missing is read
    /// from the stripes given ([`open_source_salvaging`]). Its tables' pages in the missing
    /// stripes cannot be read (salvage scans skip them and say so); when the catalog itself has
    /// pages there, the error names the catalog page and the extents missing.
    pub fn open_salvaging<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Self> {
        Self::open_salvaging_until(paths, position, StopPoint::End)
    }

    /// Like [`Database::open_salvaging`], with the backups' log rolled forward only up to
    /// `stop`; a log backup damaged before it is rolled forward up to its last good LSN
    /// (see [`crate::log::redo::restore`]).
    pub fn open_salvaging_until<P: AsRef<Path>>(paths: &[P], position: Option<u16>, stop: StopPoint) -> Result<Self> {
        let source = open_source_reading(paths, position, true, stop.clone())?;
        let not_given = source.parts_not_given().to_vec();
        let db = Self::from_source(source).map_err(|e| match not_given.first() {
            Some(missing) => {
                Error::new(e.kind(), format!("the catalog is incomplete, nothing can be read: {e} ({missing})"))
            }
            None => e,
        })?;
        Ok(Database { stop, ..db })
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
        Ok(Database { reader, file_headers, catalog, missing_files, stop: StopPoint::End })
    }

    /// Data files the catalog lists that were not given: what lives in them cannot be read, the
    /// rest can.
    pub fn missing_files(&self) -> &[MissingFile] {
        &self.missing_files
    }

    /// How far the backups' log was rolled forward ([`Database::open_until`]; `End` for data
    /// files and a whole chain).
    pub fn stop_point(&self) -> &StopPoint {
        &self.stop
    }

    /// The database's name, from the boot page.
    pub fn name(&self) -> &str {
        &self.catalog.boot.name
    }

    /// The catalog: system base tables, views and the table model.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The page reader everything reads through (checksums and page addresses checked).
    pub fn reader(&self) -> &PageReader {
        &self.reader
    }

    /// The file header of each file given, in file id order.
    pub fn file_headers(&self) -> &[FileHeader] {
        &self.file_headers
    }

    /// The record format of a partition's rows; columnstore partitions are refused by name.
    pub(crate) fn record_format(table: &TableInfo, partition: &PartitionInfo) -> Result<RecordFormat> {
        RecordFormat::of_compression(partition.data_compression).ok_or_else(|| {
            Error::unsupported(format!(
                "uses {} compression (a columnstore index): not supported",
                compression_name(partition.data_compression)
            ))
            .in_object(table.qualified_name())
        })
    }

    /// The in-row allocation unit of a partition whose storage this version decodes.
    pub(crate) fn scannable_unit(&self, table: &TableInfo, partition: &PartitionInfo) -> Result<&AllocationUnit> {
        let name = table.qualified_name();
        Self::record_format(table, partition)?;
        self.catalog.base().in_row_unit(partition.partition_id).ok_or_else(|| {
            Error::corrupt(format!("partition {} has no in-row allocation unit", partition.partition_id))
                .in_object(name)
        })
    }

    /// A decoder for partition `partition_id` of `table`, returning the columns named in
    /// `columns` (all stored columns when `None`).
    pub fn row_decoder(&self, table: &TableInfo, partition_id: i64, columns: Option<&[String]>) -> Result<RowDecoder> {
        RowDecoder::new(&self.catalog, &self.reader, table, partition_id, columns)
    }

    /// How many of `table`'s in-row pages (those its IAM pages list and its PFS pages mark
    /// allocated) the source holds: for a backup read with stripes missing
    /// ([`Database::open_salvaging`]), what a salvage scan can still read of the table.
    pub fn in_row_pages_present(&self, table: &TableInfo) -> Result<InRowPages> {
        let mut counts = InRowPages::default();
        let mut page = vec![0u8; crate::page::PAGE_SIZE];
        for partition in &table.partitions {
            let Some(unit) = self.catalog.base().in_row_unit(partition.partition_id) else { continue };
            crate::scan::MappedPages::new(&self.reader, unit)?.for_each(|id| {
                counts.present += usize::from(self.reader.source().read_raw(id, &mut page).is_ok());
                counts.listed += 1;
            });
        }
        Ok(counts)
    }

    /// The Arrow schema a scan of `table` produces ([`crate::table_scan::TableScan::schema`]),
    /// datetime2(7) / datetimeoffset(7) in `timestamps`.
    pub fn arrow_schema(
        &self,
        table: &TableInfo,
        columns: Option<&[String]>,
        timestamps: TimestampUnit,
    ) -> Result<SchemaRef> {
        let partition = table
            .partitions
            .first()
            .ok_or_else(|| Error::corrupt("has no partition").in_object(table.qualified_name()))?;
        Ok(columnar::schema(&self.row_decoder(table, partition.partition_id, columns)?, timestamps))
    }
}

/// How to read a table as Arrow batches.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Only these columns, in table order (all stored columns when `None`).
    pub columns: Option<Vec<String>>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Stop after this many rows.
    pub limit: Option<u64>,
    /// Skip damaged pages and records instead of stopping at the first (see [`crate::scan::ScanMode`]).
    pub salvage: bool,
    /// The unit of datetime2(7) / datetimeoffset(7) timestamps (see [`TimestampUnit`]).
    pub timestamps: TimestampUnit,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            batch_size: 65_536,
            limit: None,
            salvage: false,
            timestamps: TimestampUnit::Nanosecond,
        }
    }
}

/// A table without rowsets in the data file (a memory-optimized table keeps its rows elsewhere, in
/// checkpoint files) must not read as empty.
pub(crate) fn check_has_storage(table: &TableInfo) -> Result<()> {
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
    open_source_reading(paths, position, false, StopPoint::End)
}

/// Like [`open_source`], with the backups' log rolled forward only up to `stop` (`STOPAT`).
pub fn open_source_until<P: AsRef<Path>>(
    paths: &[P],
    position: Option<u16>,
    stop: StopPoint,
) -> Result<Arc<dyn PageSource>> {
    open_source_reading(paths, position, false, stop)
}

/// Like [`open_source`], but a striped backup with stripes missing is read from the stripes
/// given: the pages in the others are missing, and reading them is an error naming them.
pub fn open_source_salvaging<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Arc<dyn PageSource>> {
    open_source_reading(paths, position, true, StopPoint::End)
}

fn open_source_reading<P: AsRef<Path>>(
    paths: &[P],
    position: Option<u16>,
    salvage: bool,
    stop: StopPoint,
) -> Result<Arc<dyn PageSource>> {
    let opened: Vec<(PathBuf, Result<Sniffed>)> =
        paths.iter().map(|p| (p.as_ref().to_path_buf(), open_and_sniff(p.as_ref()))).collect();
    let kind_of = |o: &Result<Sniffed>| o.as_ref().ok().map(|(_, kind)| *kind);
    let backups = opened.iter().filter(|(_, o)| kind_of(o).is_some_and(FileFormat::is_backup)).count();
    let logs = opened.iter().filter(|(_, o)| kind_of(o) == Some(FileFormat::TransactionLog)).count();
    if backups > 0 {
        if backups + logs != paths.len() {
            return Err(Error::new(
                ErrorKind::NotFound,
                "give either the data files of a database or the files of one backup (with its log file), not both",
            ));
        }
        if logs > 1 {
            return Err(Error::unsupported(format!(
                "{logs} transaction log files (.ldf) given: a chain's tail is read from one log file"
            )));
        }
        let (mut stripes, mut tail) = (Vec::new(), None);
        for (path, o) in opened {
            let (bytes, kind) = o?;
            match kind {
                FileFormat::TransactionLog => tail = Some(LogFile::from_source(bytes, &path)?),
                _ => stripes.push((path, bytes)),
            }
        }
        let files = BackupFiles::from_sources(stripes)?;
        return Ok(Arc::new(crate::log::redo::restore(&files, tail.as_ref(), position, salvage, stop)?));
    }
    let inputs = opened.into_iter().map(|(path, o)| o.map(|(bytes, _)| (path, bytes)));
    if stop != StopPoint::End {
        return Err(Error::new(ErrorKind::NotFound, "a stop point is given, but no backup file was given"));
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
