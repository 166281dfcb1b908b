//! Several backups given together: `mdfkit backups FILES... [--plan]`, and the notice every
//! other command prints on stderr when it reads a restore chain (which full, which differential,
//! which logs are rolled forward, which sets are skipped and why).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use mdfkit::backup::chain::{BackupFiles, PlannedSet};
use mdfkit::log::redo::StopPoint;
use mdfkit::source::PageSource;
use mdfkit::value::Value;
use mdfkit::Error;

use crate::commands::{date_value, Outcome};
use crate::output::{write_rows, Format};

/// The stop point `--stopat` gives, for every command that opens files (set once, by `main`).
static STOP_POINT: OnceLock<StopPoint> = OnceLock::new();

pub fn set_stop_point(stop: StopPoint) {
    let _ = STOP_POINT.set(stop);
}

fn stop_point() -> StopPoint {
    STOP_POINT.get().cloned().unwrap_or_default()
}

/// Opens the database the files hold, a backup chain rolled forward to the stop point.
/// Says on stderr what the roll forward could not do (a log that cannot be read).
pub fn open(files: &[PathBuf], position: Option<u16>) -> Result<mdfkit::Database, Error> {
    let db = mdfkit::Database::open_until(files, position, stop_point())?;
    print_warnings(&db);
    Ok(db)
}

/// Says on stderr what the roll forward could not do.
fn print_warnings(db: &mdfkit::Database) {
    for note in db.reader().source().notes().iter().filter(|n| n.starts_with(mdfkit::log::redo::WARNING)) {
        eprintln!("{note}");
    }
}

/// The page source of the files, a backup chain rolled forward to the stop point.
pub fn open_source(files: &[PathBuf], position: Option<u16>) -> Result<Arc<dyn PageSource>, Error> {
    mdfkit::database::open_source_until(files, position, stop_point())
}

/// `mdfkit backups`: one row per backup set of every file given; with `plan`, the restore plan.
pub fn backups(files: &[PathBuf], position: Option<u16>, plan: bool, format: Format) -> Outcome {
    let backups = BackupFiles::open(files)?;
    let several = backups.media().len() > 1;
    let mut columns = vec!["position", "type", "database", "start", "finish", "size", "first_lsn", "last_lsn"];
    columns.extend(["checkpoint_lsn", "database_backup_lsn", "compressed", "checksums", "stripes"]);
    if plan {
        columns.insert(0, "restore");
        columns.push("note");
    }
    if several || plan {
        columns.insert(usize::from(plan), "file");
    }
    let columns: Vec<String> = columns.into_iter().map(String::from).collect();
    let mut rows = Vec::new();
    let mut row = |role: Option<&str>, s: &PlannedSet, note: &str| {
        let set = &s.set;
        let mut r = vec![
            Value::Int(set.position.into()),
            Value::text(set.backup_type.name()),
            Value::text(&set.database_name),
            date_value(set.start),
            date_value(set.finish),
            Value::Int(i64::try_from(set.backup_size).unwrap_or(i64::MAX)),
            Value::text(set.first_lsn.to_string()),
            Value::text(set.last_lsn.to_string()),
            Value::text(set.checkpoint_lsn.to_string()),
            Value::text(set.database_backup_lsn.to_string()),
            Value::bit(set.compressed),
            Value::bit(set.checksums),
            Value::text(format!("{} of {}", set.family_number, set.family_count)),
        ];
        if let Some(role) = role {
            r.insert(0, Value::text(role));
            r.push(Value::text(note));
        }
        if several || role.is_some() {
            let names: Vec<String> = s.files.iter().map(|f| f.display().to_string()).collect();
            r.insert(usize::from(role.is_some()), Value::text(names.join(" + ")));
        }
        rows.push(r);
    };
    let mut gaps = Vec::new();
    if plan {
        let plan = backups.plan(position)?;
        row(Some("full"), &plan.full, "restored");
        if let Some(d) = &plan.differential {
            row(Some("differential"), d, "laid over the full backup");
        }
        for l in &plan.logs {
            match plan.after_gap(l) {
                Some(gap) => row(Some("log"), l, &format!("not applied: {gap}")),
                None => row(Some("log"), l, "rolled forward (committed transactions, up to --stopat)"),
            }
        }
        for (s, why) in &plan.skipped {
            row(Some("skipped"), s, why);
        }
        gaps = plan.log_gaps;
    } else {
        for s in backups.sets().iter().filter(|s| position.is_none_or(|p| s.set.position == p)) {
            row(None, s, "");
        }
        if let Some(p) = position.filter(|_| rows.is_empty()) {
            return Err(Error::not_found(format!("no backup set at position {p}")).into());
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    for (after, next) in gaps {
        eprintln!("note: log gap: no log backup holds the log from LSN {after} to LSN {next}");
    }
    for media in backups.media() {
        let missing = media.missing_stripes();
        if !missing.is_empty() {
            eprintln!(
                "note: the backup was striped over {} files; stripe(s) {} not given",
                media.sets().first().map_or(0, |s| s.family_count),
                missing.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}

/// Before a command reads backups: says on stderr which sets of a restore chain it reads, which
/// log backups it does not apply and which sets it skips, when the files hold more than one set.
/// Arguments that are not backup files (table names, data files) are passed over.
pub fn announce_plan(args: &[PathBuf], position: Option<u16>) {
    let backups: Vec<&Path> = args.iter().map(PathBuf::as_path).filter(|a| mdfkit::database::is_backup(a)).collect();
    if backups.is_empty() {
        return;
    }
    let Ok(files) = BackupFiles::open(&backups) else { return };
    if files.sets().len() < 2 {
        return;
    }
    // A plan that cannot be made is refused by the command itself, with the reason.
    if let Ok(plan) = files.plan(position) {
        for line in plan.notices() {
            eprintln!("note: {line}");
        }
        for (after, next) in &plan.log_gaps {
            eprintln!("note: log gap: no log backup holds the log from LSN {after} to LSN {next}");
        }
    }
}

/// `cat --salvage` and `export --salvage`: opens the database, reading a striped backup with
/// stripes missing from the stripes given, and a damaged log backup up to its last good LSN
/// (stderr says where it stopped and what was kept). Then says on stderr which stripes are missing and,
/// per table, how many of its in-row pages (those its IAM pages list and its PFS pages mark
/// allocated) the stripes given hold; the scan skips the others and lists them.
pub fn open_for_salvage(files: &[PathBuf], position: Option<u16>) -> Result<mdfkit::Database, Error> {
    let db = mdfkit::Database::open_salvaging_until(files, position, stop_point())?;
    print_warnings(&db);
    let source = db.reader().source();
    let missing = source.parts_not_given();
    if missing.is_empty() {
        return Ok(db);
    }
    for note in missing {
        eprintln!("note: {note}");
    }
    let mut page = vec![0u8; mdfkit::page::PAGE_SIZE];
    for table in db.catalog().tables(false) {
        let mut counts = Some((0usize, 0usize));
        let mut unknown = None;
        for p in &table.partitions {
            let Some(unit) = db.catalog().base().in_row_unit(p.partition_id) else { continue };
            match mdfkit::scan::heap_pages(db.reader(), unit) {
                Ok(pages) => {
                    let present = pages.iter().filter(|&&id| source.read_raw(id, &mut page).is_ok()).count();
                    counts = counts.map(|(h, l)| (h + present, l + pages.len()));
                }
                Err(e) => {
                    counts = None;
                    unknown = Some(e);
                }
            }
        }
        match (counts, unknown) {
            (Some((present, listed)), _) => {
                eprintln!("note: {}: {present} of {listed} in-row pages present", table.qualified_name())
            }
            (None, Some(e)) => eprintln!("note: {}: pages unknown: {e}", table.qualified_name()),
            (None, None) => {}
        }
    }
    Ok(db)
}
