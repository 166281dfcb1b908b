//! The commands: each opens the database, asks the library, and renders the answer.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use mdfkit::export::{ExportDestination, ExportFormat, ExportOptions};
use mdfkit::scan::{ScanMode, Skipped};

use mdfkit::backup::chain::BackupFiles;
use mdfkit::backup::{BackupSet, FileKind};
use mdfkit::catalog::model::TableInfo;
use mdfkit::page::boot::product_name;
use mdfkit::rows::RowDecoder;
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::{Database, Error, PageId};

use crate::output::{write_rows, write_rows_without_header, Format};

/// Why a command failed: the library said no, stdout went away, or some of the work was done and
/// the rest was reported on stderr.
pub enum Failure {
    Library(Error),
    Output(io::Error),
    Partial,
    /// `check` found problems and listed them.
    ProblemsFound,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Library(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Output(e)
    }
}

pub type Outcome = Result<(), Failure>;

fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

pub(crate) fn date_value(d: Option<mdfkit::backup::BackupDate>) -> Value {
    d.map_or(Value::Null, |d| Value::text(d.to_string()))
}

/// The header fields of one backup set, as name / value pairs.
fn backup_set_fields(s: &BackupSet) -> Vec<(&'static str, Value)> {
    let lsn = |l: Option<mdfkit::backup::Lsn>| l.map_or(Value::Null, |l| Value::text(l.to_string()));
    vec![
        ("backup_position", Value::Int(s.position.into())),
        ("backup_type", Value::text(s.backup_type.name())),
        ("backup_name", Value::text(&s.name)),
        ("backup_description", Value::text(&s.description)),
        ("backup_start", date_value(s.start)),
        ("backup_finish", date_value(s.finish)),
        ("backup_size", Value::Int(i64::try_from(s.backup_size).unwrap_or(i64::MAX))),
        ("backup_database", Value::text(&s.database_name)),
        ("backup_db_version", Value::Int(s.database_version.into())),
        ("backup_compat_level", Value::Int(s.compatibility_level.into())),
        ("backup_collation", Value::text(&s.collation)),
        ("backup_db_created", date_value(s.database_creation_date)),
        ("server_name", Value::text(&s.server_name)),
        ("machine_name", Value::text(&s.machine_name)),
        ("user_name", Value::text(&s.user_name)),
        ("software_version", Value::text(&s.software_version)),
        ("first_lsn", Value::text(s.first_lsn.to_string())),
        ("last_lsn", Value::text(s.last_lsn.to_string())),
        ("checkpoint_lsn", Value::text(s.checkpoint_lsn.to_string())),
        ("database_backup_lsn", Value::text(s.database_backup_lsn.to_string())),
        ("differential_base_lsn", lsn(s.differential_base_lsn)),
        ("differential_base_guid", s.differential_base_guid.as_deref().map_or(Value::Null, Value::text)),
        ("backup_set_guid", Value::text(&s.backup_set_guid)),
        ("compressed", Value::bit(s.compressed)),
        ("checksums", Value::bit(s.checksums)),
        ("encrypted", Value::bit(s.encrypted)),
        ("media_password", Value::bit(s.media_password)),
        ("stripes", Value::text(format!("{} of {}", s.family_number, s.family_count))),
    ]
}

/// The header and file list of the chosen backup set when `files` are a backup.
fn backup_header(files: &[PathBuf], position: Option<u16>) -> Result<Option<BackupSet>, Error> {
    if files.is_empty() || !files.iter().all(|f| mdfkit::database::is_backup(f)) {
        return Ok(None);
    }
    let backups = BackupFiles::open(files)?;
    // The set whose state is read: the differential laid over the full backup, if any. Where no
    // restore plan can be made, the set asked for is still shown (reading it then says why not).
    if let Ok(plan) = backups.plan(position) {
        return Ok(Some(plan.differential.unwrap_or(plan.full).set));
    }
    let Some(media) = backups.media().first() else { return Ok(None) };
    let chosen = position.or(media.default_position());
    Ok(chosen.and_then(|p| media.set(p)).cloned())
}

fn write_backup_header(out: &mut impl Write, set: &BackupSet) -> io::Result<()> {
    writeln!(out, "backup set:")?;
    for (k, v) in backup_set_fields(set) {
        writeln!(out, "  {:<24} {v}", format!("{}:", k.replace('_', " ")))?;
    }
    writeln!(out, "\nbackup file list:")?;
    let columns: Vec<String> = ["file_id", "logical_name", "physical_name", "type", "filegroup", "size"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<Value>> = set
        .files
        .iter()
        .map(|f| {
            vec![
                Value::Int(f.file_id.into()),
                Value::text(&f.logical_name),
                Value::text(&f.physical_name),
                Value::text(match f.kind {
                    FileKind::Data => "D".to_string(),
                    FileKind::Log => "L".to_string(),
                    FileKind::Other(n) => format!("type {n}"),
                }),
                Value::text(&f.filegroup),
                Value::Int(i64::try_from(f.size_bytes).unwrap_or(i64::MAX)),
            ]
        })
        .collect();
    write_rows(out, Format::Table, &columns, &rows)?;
    writeln!(out)
}

pub fn info(files: &[PathBuf], position: Option<u16>, format: Format) -> Outcome {
    let header = backup_header(files, position)?;
    if let (Some(set), Format::Table) = (&header, format) {
        let mut out = stdout();
        write_backup_header(&mut out, set)?;
        out.flush()?;
    }
    let db = Database::open_at(files, position)?;
    let catalog = db.catalog();
    let boot = &catalog.boot;
    let units = catalog.table("sysallocunits");
    let allocated: i64 = units.iter().map(|u| u.int("pcreserved")).sum();
    let used: i64 = units.iter().map(|u| u.int("pcused")).sum();
    let file_pages: i64 = db.reader().source().files().iter().map(|f| i64::from(f.page_count)).sum();
    let rows = vec![
        ("database", Value::text(db.name())),
        (
            "version",
            Value::text(format!(
                "{} ({}), created by {} ({})",
                product_name(boot.version),
                boot.version,
                product_name(boot.create_version),
                boot.create_version
            )),
        ),
        ("compatibility_level", Value::Int(boot.compatibility_level.into())),
        ("collation", Value::text(mdfkit::collation::name(boot.collation_id))),
        ("page_verify", Value::text(boot.page_verify().name())),
        ("recovery_model", Value::text(boot.recovery_model().name())),
        ("created", boot.created.clone()),
        ("pages_in_files", Value::Int(file_pages)),
        ("pages_allocated", Value::Int(allocated)),
        ("pages_used", Value::Int(used)),
        ("user_tables", Value::Int(catalog.tables(false).len() as i64)),
        (
            "missing_files",
            Value::text(
                db.missing_files()
                    .iter()
                    .map(|m| format!("file id {} {} ({})", m.file_id, m.logical_name, m.physical_name))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ),
    ];
    let files_view = catalog.view("sys.database_files")?;
    let mut out = stdout();
    match format {
        Format::Table => {
            for (k, v) in &rows {
                writeln!(out, "{:<20} {v}", format!("{}:", k.replace('_', " ")))?;
            }
            writeln!(out, "\nfiles:")?;
            write_rows(&mut out, format, &files_view.columns, &files_view.rows)?;
        }
        _ => {
            let mut rows = rows;
            if let Some(set) = &header {
                rows.extend(backup_set_fields(set));
                rows.push((
                    "backup_files",
                    Value::text(
                        set.files
                            .iter()
                            .map(|f| format!("{}:{}:{}", f.file_id, f.logical_name, f.size_bytes))
                            .collect::<Vec<_>>()
                            .join(";"),
                    ),
                ));
            }
            let mut columns: Vec<String> = rows.iter().map(|(k, _)| k.to_string()).collect();
            let mut values: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
            columns.push("files".into());
            values.push(Value::text(
                files_view
                    .rows
                    .iter()
                    .map(|r| r.get(5).map(|v| v.to_string()).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(";"),
            ));
            write_rows(&mut out, format, &columns, &[values])?;
        }
    }
    out.flush()?;
    Ok(())
}

pub fn tables(files: &[PathBuf], position: Option<u16>, system: bool, format: Format) -> Outcome {
    let db = Database::open_at(files, position)?;
    let columns: Vec<String> = [
        "table",
        "object_id",
        "type",
        "layout",
        "partitions",
        "rows",
        "used_pages",
        "compression",
        "lob",
        "row_overflow",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<Value>> = db.catalog().tables(system).iter().map(table_row).collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}

fn table_row(t: &TableInfo) -> Vec<Value> {
    vec![
        Value::text(t.qualified_name()),
        Value::Int(t.object_id.into()),
        Value::text(&t.object_type),
        Value::text(if t.is_heap { "heap" } else { "clustered" }),
        Value::Int(t.partitions.len() as i64),
        Value::Int(t.rows()),
        Value::Int(t.used_pages()),
        Value::text(t.compression_names().join(",")),
        Value::bit(t.has_lob),
        Value::bit(t.has_row_overflow),
    ]
}

/// Splits `FILE... [NAME]`: the last argument is a name unless it is an existing file or a URL.
fn split_files_and_name(args: &[String], name_required: bool) -> (Vec<PathBuf>, Option<String>) {
    let last_is_file = args.last().is_some_and(|a| Path::new(a).is_file() || mdfkit::location::is_openable_url(a));
    if args.len() > 1 && (name_required || !last_is_file) {
        let (files, name) = args.split_at(args.len() - 1);
        (files.iter().map(PathBuf::from).collect(), Some(name[0].clone()))
    } else {
        (args.iter().map(PathBuf::from).collect(), None)
    }
}

pub fn sys(args: &[String], position: Option<u16>, format: Format) -> Outcome {
    let (files, view) = split_files_and_name(args, true);
    let db = Database::open_at(&files, position)?;
    let rows = db.catalog().view(view.as_deref().unwrap_or_default())?;
    let mut out = stdout();
    write_rows(&mut out, format, &rows.columns, &rows.rows)?;
    out.flush()?;
    Ok(())
}

/// With `--include-ghosts`, the column that says whether a row is a ghost (deleted) record.
const GHOST_COLUMN: &str = "__ghost";

/// Rows shown at most on a terminal without `--limit`, so a big table does not flood it.
const TERMINAL_ROWS: u64 = 1000;

/// Pages given to `cat --where-page`: inclusive ranges of one file's pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRanges(Vec<(u16, u32, u32)>);

impl PageRanges {
    fn contains(&self, page: PageId) -> bool {
        self.0.iter().any(|&(file, first, last)| page.file == file && (first..=last).contains(&page.page))
    }
}

/// Parses `FILE:PAGE` and `FILE:FIRST-LAST`, comma-separated (`1:153,1:200-260`).
pub fn parse_page_ranges(text: &str) -> std::result::Result<PageRanges, String> {
    let mut ranges = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("{part:?} is not FILE:PAGE or FILE:FIRST-LAST (e.g. 1:153 or 1:200-260)");
        let (file, pages) = part.split_once(':').ok_or_else(bad)?;
        let file: u16 = file.parse().map_err(|_| bad())?;
        let (first, last) = match pages.split_once('-') {
            Some((first, last)) => (first.parse().map_err(|_| bad())?, last.parse().map_err(|_| bad())?),
            None => {
                let page: u32 = pages.parse().map_err(|_| bad())?;
                (page, page)
            }
        };
        if first > last {
            return Err(format!("{part:?}: the first page comes after the last"));
        }
        ranges.push((file, first, last));
    }
    if ranges.is_empty() {
        return Err("no pages given".into());
    }
    Ok(PageRanges(ranges))
}

/// The forensic options of `cat`: deleted rows, a page filter, where each row is stored.
pub struct CatForensics {
    pub include_ghosts: bool,
    pub where_page: Option<PageRanges>,
    pub with_location: bool,
}

const PARTITION_COLUMN: &str = "__partition";
const PAGE_COLUMN: &str = "__page";
const SLOT_COLUMN: &str = "__slot";

pub fn cat(
    args: &[String],
    position: Option<u16>,
    limit: Option<u64>,
    columns: Option<&[String]>,
    format: Option<Format>,
    forensics: CatForensics,
    salvage: bool,
) -> Outcome {
    let CatForensics { include_ghosts, where_page, with_location } = forensics;
    let (files, table) = split_files_and_name(args, true);
    let db =
        if salvage { crate::chain::open_for_salvage(&files, position)? } else { Database::open_at(&files, position)? };
    let name = table.unwrap_or_default();
    let table = db
        .catalog()
        .find_table(&name)
        .ok_or_else(|| Error::not_found(format!("no table named {name}; `mdfkit tables` lists them")))?;
    let terminal = io::stdout().is_terminal();
    let format = format.unwrap_or(if terminal { Format::Table } else { Format::Csv });
    let limit = limit.or((terminal && format == Format::Table).then_some(TERMINAL_ROWS));
    let mut out = stdout();
    let mut header: Option<Vec<String>> = None;
    let mut buffered: Vec<Vec<Value>> = Vec::new();
    let mut count = 0u64;
    let mut values = Vec::new();
    let mut first_batch = true;
    let mut ghosts = 0;
    let mut skipped = 0;
    for partition in &table.partitions {
        let decoder = RowDecoder::new(&db, &table, partition.partition_id, columns)?;
        let mut names = decoder.column_names();
        if include_ghosts {
            names.push(GHOST_COLUMN.to_string());
        }
        if with_location {
            names.extend([PARTITION_COLUMN.to_string(), PAGE_COLUMN.to_string(), SLOT_COLUMN.to_string()]);
        }
        header.get_or_insert(names);
        let mode = ScanMode { include_ghosts, salvage };
        let stats = db.for_each_record_in_partition(&table, partition, mode, |record, location| {
            if limit.is_some_and(|l| count >= l) {
                return Ok(Flow::Stop);
            }
            if where_page.as_ref().is_some_and(|pages| !pages.contains(location.page)) {
                return Ok(Flow::Continue);
            }
            decoder.decode(record, &mut values)?;
            if include_ghosts {
                values.push(Value::bit(location.ghost));
            }
            if with_location {
                values.extend([
                    Value::Int(i64::from(partition.partition_number)),
                    Value::text(location.page.to_string()),
                    Value::Int(i64::from(location.slot)),
                ]);
            }
            count += 1;
            buffered.push(values.clone());
            if matches!(format, Format::Csv | Format::Jsonl) && buffered.len() >= 1024 {
                let h = header.as_deref().unwrap_or_default();
                write_batch(&mut out, format, h, &buffered, first_batch)
                    .map_err(|e| Error::new(mdfkit::ErrorKind::Io, e.to_string()))?;
                first_batch = false;
                buffered.clear();
            }
            Ok(Flow::Continue)
        })?;
        ghosts += stats.ghost_records;
        for skip in &stats.skipped {
            eprintln!("mdfkit: skipped {}", describe_skip(skip));
        }
        skipped += stats.skipped.len();
        if limit.is_some_and(|l| count >= l) {
            break;
        }
    }
    let h = header.unwrap_or_default();
    write_batch(&mut out, format, &h, &buffered, first_batch)?;
    out.flush()?;
    if skipped > 0 {
        eprintln!("({skipped} damaged pages or records skipped)");
    }
    if terminal && ghosts > 0 && !include_ghosts {
        eprintln!("({ghosts} ghost (deleted) records skipped)");
    }
    Ok(())
}

/// Writes rows; streaming formats write their header only with the first batch.
fn write_batch(
    out: &mut impl Write,
    format: Format,
    columns: &[String],
    rows: &[Vec<Value>],
    first: bool,
) -> io::Result<()> {
    match format {
        Format::Csv if !first => write_rows_without_header(out, rows),
        _ => write_rows(out, format, columns, rows),
    }
}

pub fn schema(args: &[String], position: Option<u16>) -> Outcome {
    let (files, table) = split_files_and_name(args, false);
    let db = Database::open_at(&files, position)?;
    let catalog = db.catalog();
    let tables = match &table {
        Some(name) => vec![catalog
            .find_table(name)
            .ok_or_else(|| Error::not_found(format!("no table named {name}; `mdfkit tables` lists them")))?],
        None => catalog.tables(false),
    };
    let mut out = stdout();
    for t in &tables {
        writeln!(out, "{}", catalog.create_table_sql(t))?;
    }
    out.flush()?;
    Ok(())
}

pub fn export(
    files: &[PathBuf],
    position: Option<u16>,
    names: &[String],
    all: bool,
    format: ExportFormat,
    output: &Path,
    options: &ExportOptions,
) -> Outcome {
    let columns = options.columns.as_deref();
    if names.is_empty() && !all {
        return Err(Error::not_found("name the tables to export with --table, or use --all").into());
    }
    if columns.is_some() && names.len() != 1 {
        return Err(Error::not_found("--columns goes with exactly one --table").into());
    }
    let db = if options.salvage {
        crate::chain::open_for_salvage(files, position)?
    } else {
        Database::open_at(files, position)?
    };
    let catalog = db.catalog();
    let tables = if all {
        catalog.tables(false)
    } else {
        names
            .iter()
            .map(|n| {
                catalog
                    .find_table(n)
                    .ok_or_else(|| Error::not_found(format!("no table named {n}; `mdfkit tables` lists them")))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    // An object URL is a prefix: each table is uploaded as PREFIX/SCHEMA.TABLE.EXT.
    let uploading = output.to_str().is_some_and(mdfkit_cloud::is_url);
    let destination = mdfkit_cloud::export::destination(output)?;
    let terminal = io::stderr().is_terminal();
    let started = Instant::now();
    let (mut rows, mut bytes, mut failed) = (0u64, 0u64, Vec::new());
    for t in &tables {
        let name = format!("{}.{}.{}", t.schema, t.name, format.extension());
        let bar = if terminal { progress_bar(t, uploading) } else { ProgressBar::hidden() };
        let uploaded_before = mdfkit_cloud::writer::bytes_uploaded();
        let on_rows = |n| {
            bar.set_position(n);
            if uploading {
                let uploaded = mdfkit_cloud::writer::bytes_uploaded() - uploaded_before;
                bar.set_prefix(indicatif::HumanBytes(uploaded).to_string());
            }
        };
        let exported = destination
            .create(&name)
            .and_then(|out| mdfkit::export::export_table(&db, t, format, out, options, on_rows));
        match exported {
            Ok(stats) => {
                bar.finish_and_clear();
                rows += stats.rows;
                bytes += stats.bytes;
                eprintln!(
                    "{:<40} {:>10} rows {:>12} bytes  {}",
                    t.qualified_name(),
                    stats.rows,
                    stats.bytes,
                    stats.location.display()
                );
                if !stats.skipped.is_empty() {
                    let report = format!("{name}.skipped.csv");
                    let report = write_skip_report(destination.as_ref(), &report, &t.qualified_name(), &stats.skipped)?;
                    eprintln!("  {} damaged pages or records skipped: {}", stats.skipped.len(), report.display());
                }
            }
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("mdfkit: skipped {e}");
                failed.push(t.qualified_name());
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "exported {} of {} tables, {rows} rows, {bytes} bytes in {seconds:.2} s ({:.0} rows/s)",
        tables.len() - failed.len(),
        tables.len(),
        rows as f64 / seconds.max(1e-9)
    );
    if failed.is_empty() {
        Ok(())
    } else {
        eprintln!("not exported: {}", failed.join(", "));
        Err(Failure::Partial)
    }
}

/// A table's export bar: rows, and for an upload the bytes the store has taken (in the prefix).
fn progress_bar(t: &TableInfo, uploading: bool) -> ProgressBar {
    let bar = ProgressBar::new(t.rows().max(0) as u64);
    let template = if uploading {
        "{msg:30} [{bar:30}] {pos}/{len} rows {per_sec}, {prefix} uploaded ETA {eta}"
    } else {
        "{msg:30} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}"
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "),
    );
    bar.set_message(t.qualified_name());
    bar
}

pub fn check(files: &[PathBuf], position: Option<u16>, format: Format) -> Outcome {
    let source = mdfkit::database::open_source(files, position)?;
    let total: u64 = source.files().iter().map(|f| u64::from(f.page_count)).sum();
    let bar = if io::stderr().is_terminal() { ProgressBar::new(total) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("checking pages [{bar:30}] {pos}/{len} {per_sec} ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let (mut problems, stats) = mdfkit::check::check_pages(source.as_ref(), |n| bar.set_position(n));
    bar.finish_and_clear();
    // How a backup's data stream was placed where it did not follow its allocation maps.
    for note in source.notes() {
        eprintln!("note: {note}");
    }
    let mut catalog_note = String::new();
    match Database::from_source(source) {
        Ok(db) => {
            let (more, catalog_stats) = mdfkit::check::check_catalog(&db)?;
            problems.extend(more);
            catalog_note = format!(
                ", {} allocation units, {} rows",
                catalog_stats.allocation_units_checked, catalog_stats.rows_checked
            );
        }
        Err(e) => problems.push(mdfkit::check::Problem {
            page: e.page(),
            object: None,
            what: format!("the catalog cannot be read, allocation and B-tree checks skipped: {}", e.message()),
        }),
    }
    let columns: Vec<String> = ["page", "object", "problem"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<Value>> = problems
        .iter()
        .map(|p| {
            vec![
                p.page.map_or(Value::Null, |id| Value::text(id.to_string())),
                p.object.as_deref().map_or(Value::Null, Value::text),
                Value::text(&p.what),
            ]
        })
        .collect();
    let mut out = stdout();
    if !rows.is_empty() || format != Format::Table {
        write_rows(&mut out, format, &columns, &rows)?;
    }
    out.flush()?;
    eprintln!(
        "checked {} pages ({} unallocated skipped){catalog_note}: {} problems",
        stats.pages_checked,
        stats.pages_skipped_unallocated,
        problems.len()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::ProblemsFound)
    }
}

/// `page 1:153 slot 4: reason`, the way a skipped page or record is reported.
fn describe_skip(skip: &Skipped) -> String {
    match (skip.page, skip.slot) {
        (Some(p), Some(s)) => format!("page {p} slot {s}: {}", skip.reason),
        (Some(p), None) => format!("page {p}: {}", skip.reason),
        _ => skip.reason.clone(),
    }
}

/// The salvage report beside an export: one CSV line per skipped page or record.
/// Writes the salvage report `name` (`table,page,slot,reason` per skipped page or record) beside
/// the export; returns where it went.
fn write_skip_report(
    destination: &dyn ExportDestination,
    name: &str,
    table: &str,
    skipped: &[Skipped],
) -> Result<PathBuf, Failure> {
    let mut text = String::from("table,page,slot,reason\n");
    for s in skipped {
        let page = s.page.map(|p| p.to_string());
        let slot = s.slot.map(|s| s.to_string());
        mdfkit::export::write_csv_row(
            &mut text,
            [Some(table), page.as_deref(), slot.as_deref(), Some(s.reason.as_str())].into_iter(),
        );
    }
    let mut report = destination.create(name)?;
    let location = report.location().to_path_buf();
    report.write_all(text.as_bytes()).map_err(|e| Error::io(&location, "cannot write the salvage report", e))?;
    report.finish()?;
    Ok(location)
}

pub fn pages(
    files: &[PathBuf],
    position: Option<u16>,
    object_id: Option<i32>,
    allocation_unit: Option<i64>,
    page_type: Option<&str>,
    format: Format,
) -> Outcome {
    let source = mdfkit::database::open_source(files, position)?;
    let units: Option<Vec<i64>> = match object_id {
        Some(id) => {
            let db = Database::from_source(source.clone()).map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("--object-id needs the catalog, which cannot be read ({e}); use --allocation-unit with ids from the page headers"),
                )
            })?;
            let rowsets: Vec<i64> = db
                .catalog()
                .table("sysrowsets")
                .iter()
                .filter(|r| r.int("idmajor") == i64::from(id))
                .map(|r| r.int("rowsetid"))
                .collect();
            Some(
                db.catalog()
                    .base()
                    .allocation_units
                    .iter()
                    .filter(|u| rowsets.contains(&u.owner_id))
                    .map(|u| u.id)
                    .collect(),
            )
        }
        None => allocation_unit.map(|u| vec![u]),
    };
    let wanted_type = page_type.map(|t| t.replace('-', " ").to_ascii_lowercase());
    let list = mdfkit::recovery::list_pages(source.as_ref(), |p| {
        units.as_ref().is_none_or(|u| u.contains(&p.allocation_unit_id))
            && wanted_type.as_ref().is_none_or(|t| p.page_type.name().to_ascii_lowercase() == *t)
    });
    let columns: Vec<String> =
        ["page", "type", "level", "allocation_unit", "slots", "free_bytes", "prev", "next", "status"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let rows: Vec<Vec<Value>> = list
        .iter()
        .map(|p| {
            vec![
                Value::text(p.id.to_string()),
                Value::text(p.page_type.name()),
                Value::Int(p.level.into()),
                Value::Int(p.allocation_unit_id),
                Value::Int(p.slots.into()),
                Value::Int(p.free_bytes.into()),
                Value::text(p.prev.to_string()),
                Value::text(p.next.to_string()),
                Value::text(&p.status),
            ]
        })
        .collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}

/// Splits `a int, b decimal(10,2), c varchar(5)` into (name, type) pairs.
fn parse_declaration(text: &str) -> Result<Vec<(String, mdfkit::types::TypeInfo)>, Error> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
        .iter()
        .map(|item| {
            let item = item.trim();
            let (name, ty) = item
                .split_once(char::is_whitespace)
                .ok_or_else(|| Error::not_found(format!("column {item:?}: expected `name type`")))?;
            let ty = ty.trim();
            // `NULL` / `NOT NULL` after the type changes nothing here: every column reads NULLs.
            let lower = ty.to_ascii_lowercase();
            let ty = lower.strip_suffix("not null").or_else(|| lower.strip_suffix("null")).unwrap_or(&lower).trim();
            let info = mdfkit::types::TypeInfo::parse(ty).ok_or_else(|| {
                Error::not_found(format!("column {name}: unknown type {ty:?} (e.g. int, varchar(50), decimal(10,2))"))
            })?;
            Ok((name.trim_matches(|c| c == '[' || c == ']').to_string(), info))
        })
        .collect()
}

pub fn decode(
    files: &[PathBuf],
    position: Option<u16>,
    allocation_unit: i64,
    declaration: &str,
    include_ghosts: bool,
    format: Option<Format>,
) -> Outcome {
    let declared = parse_declaration(declaration)?;
    let source = mdfkit::database::open_source(files, position)?;
    let reader = mdfkit::source::PageReader::new(source.clone());
    let pages: Vec<mdfkit::PageId> = mdfkit::recovery::list_pages(source.as_ref(), |p| {
        p.allocation_unit_id == allocation_unit && p.page_type == mdfkit::page::PageType::Data && p.level == 0
    })
    .into_iter()
    .map(|p| p.id)
    .collect();
    if pages.is_empty() {
        return Err(Error::not_found(format!(
            "no data page names allocation unit {allocation_unit}; `mdfkit pages --type data` lists the ones there are"
        ))
        .into());
    }
    let decoder = RowDecoder::from_declaration(reader.clone(), "declared table", &declared)?;
    let mut columns: Vec<String> = declared.iter().map(|(n, _)| n.clone()).collect();
    if include_ghosts {
        columns.push(GHOST_COLUMN.to_string());
    }
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let stats = mdfkit::recovery::decode_pages(&reader, &decoder, &pages, include_ghosts, |values, location| {
        let mut row = values.to_vec();
        if include_ghosts {
            row.push(Value::bit(location.ghost));
        }
        rows.push(row);
        Ok(Flow::Continue)
    })?;
    let format = format.unwrap_or(if io::stdout().is_terminal() { Format::Table } else { Format::Csv });
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    for skip in &stats.skipped {
        eprintln!("mdfkit: skipped {}", describe_skip(skip));
    }
    eprintln!("{} rows from {} pages, {} skipped", rows.len(), pages.len(), stats.skipped.len());
    Ok(())
}

/// On stderr, what each remote object read cost: bytes fetched against its size.
pub fn report_fetches() {
    for (url, size, fetched, requests) in mdfkit_cloud::fetch_report() {
        let share = if size == 0 { 0.0 } else { fetched as f64 * 100.0 / size as f64 };
        eprintln!("mdfkit: {url}: fetched {fetched} of {size} bytes ({share:.1}%) in {requests} requests");
    }
}

/// `mdfkit demo`: forges the sample shop database, then shows it like a user would.
pub fn demo(dir: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("mdfkit-demo"));
    let started = Instant::now();
    let spec = mdfkit_forge::samples::shop();
    let files =
        mdfkit_forge::forge_to_dir(&spec, &dir).map_err(|e| Error::io(&dir, "cannot write the sample database", e))?;
    let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    println!(
        "== sample database written: {} ({} bytes, {:.2} s)",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
        bytes,
        started.elapsed().as_secs_f64()
    );
    println!("\n== mdfkit info {}", files[0].display());
    io::stdout().flush()?;
    info(&files, None, Format::Table)?;
    println!("\n== mdfkit tables {}", files[0].display());
    io::stdout().flush()?;
    tables(&files, None, false, Format::Table)?;
    let mut args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.push("dbo.Orders".into());
    println!("\n== mdfkit schema {} dbo.Orders", files[0].display());
    io::stdout().flush()?;
    schema(&args, None)?;
    let out = dir.join("export");
    println!("\n== mdfkit export {} --table dbo.Orders --format parquet -o {}", files[0].display(), out.display());
    io::stdout().flush()?;
    let options = ExportOptions {
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ..ExportOptions::default()
    };
    export(&files, None, &["dbo.Orders".to_string()], false, ExportFormat::Parquet, &out, &options)?;
    println!("\nfiles: database {}, Parquet {}", dir.display(), out.join("dbo.Orders.parquet").display());
    println!("try:   mdfkit cat {} sales.EventLog --limit 5", files[0].display());
    Ok(())
}

/// `mdfkit share`: prints a time-limited link to one object.
pub fn share(
    url: &str,
    expires: &str,
    ip: Option<String>,
    start: Option<&str>,
    cloudfront: Option<(String, PathBuf)>,
    resource: Option<String>,
) -> Outcome {
    use mdfkit_cloud::share::{CloudFrontKey, ShareOptions};
    let bad = |message: String| Failure::Library(Error::new(mdfkit::ErrorKind::NotFound, message));
    let expires_in = parse_duration(expires)
        .ok_or_else(|| bad(format!("--expires {expires}: give seconds or a number with s, m, h or d (1h, 7d)")))?;
    let start = start
        .map(|t| {
            mdfkit_cloud::sign::UtcTime::parse_iso8601(t)
                .ok_or_else(|| bad(format!("--start {t}: give a UTC time like 2026-01-31T08:00:00Z")))
        })
        .transpose()?;
    let cloudfront = cloudfront
        .map(|(key_pair_id, pem)| {
            std::fs::read_to_string(&pem)
                .map(|private_key_pem| CloudFrontKey { key_pair_id, private_key_pem })
                .map_err(|e| bad(format!("{}: cannot read the CloudFront private key: {e}", pem.display())))
        })
        .transpose()?;
    let options = ShareOptions { expires_in, start, ip, cloudfront, resource };
    let link = mdfkit_cloud::share::share(url, &options)?;
    let mut out = stdout();
    writeln!(out, "{link}")?;
    out.flush()?;
    Ok(())
}

/// Seconds in `90`, `90s`, `30m`, `1h` or `7d`.
fn parse_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_lowercase()),
        _ => (text, 's'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

/// `mdfkit rm`: deletes one object, or every object under a prefix.
pub fn rm(url: &str, recursive: bool, dry_run: bool) -> Outcome {
    let object = mdfkit_cloud::ObjectUrl::parse(url)?;
    let mut out = stdout();
    if !recursive {
        if dry_run {
            writeln!(out, "would delete {object}")?;
        } else {
            mdfkit_cloud::delete::delete_object(&object)?;
            writeln!(out, "deleted {object}")?;
        }
        out.flush()?;
        return Ok(());
    }
    let keys = mdfkit_cloud::delete::list(&object)?;
    if dry_run {
        for key in &keys {
            writeln!(out, "{}", object.with_key(key))?;
        }
        writeln!(out, "would delete {} objects under {object}", keys.len())?;
        out.flush()?;
        return Ok(());
    }
    let report = mdfkit_cloud::delete::delete_keys(&object, &keys)?;
    writeln!(out, "deleted {} of {} objects under {object}", report.deleted.len(), keys.len())?;
    out.flush()?;
    for failure in &report.failed {
        eprintln!("mdfkit: not deleted: {failure}");
    }
    if report.failed.is_empty() && report.deleted.len() == keys.len() {
        Ok(())
    } else {
        Err(Failure::ProblemsFound)
    }
}

#[cfg(test)]
mod cloud_command_tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Some(90));
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("30m"), Some(1800));
        assert_eq!(parse_duration("1h"), Some(3600));
        assert_eq!(parse_duration("7D"), Some(604_800));
        for bad in ["", "h", "1w", "-1h", "1.5h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
