//! Several backups given together: `mdfkit backups FILES... [--plan]`, and the notice every
//! other command prints on stderr when it reads a restore chain (which full, which differential,
//! which logs are rolled forward, which sets are skipped and why).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use mdfkit::backup::chain::{BackupFiles, PlannedSet};
use mdfkit::backup::FromBackup;
use mdfkit::log::ldf::{is_log_file, LogFile};
use mdfkit::log::redo::{plan_tail, StopPoint};
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
    announce_plan(db.reader().source());
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
    let source = mdfkit::database::open_source_until(files, position, stop_point())?;
    announce_plan(source.as_ref());
    Ok(source)
}

/// `mdfkit backups`: one row per backup set of every file given; with `plan`, the restore plan.
pub fn backups(files: &[PathBuf], position: Option<u16>, plan: bool, format: Format) -> Outcome {
    let (logs, files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.iter().cloned().partition(|f| is_log_file(f).unwrap_or(false));
    if logs.len() > 1 {
        return Err(Error::unsupported(format!(
            "{} transaction log files (.ldf) given: a chain's tail is read from one log file",
            logs.len()
        ))
        .into());
    }
    let backups = BackupFiles::open(&files)?;
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
        let tail = logs.first().map(|l| plan_tail(&plan, &LogFile::open(l)?)).transpose()?;
        for (s, why) in &plan.skipped {
            row(Some("skipped"), s, why);
        }
        gaps = plan.log_gaps;
        if let Some(tail) = tail {
            // The log file holds no backup set: its LSNs and what it adds, nothing else.
            let lsn = |l: Option<mdfkit::backup::Lsn>| l.map_or(Value::Null, |l| Value::text(l.to_string()));
            let mut r = vec![Value::Null; columns.len()];
            r[0] = Value::text("tail");
            r[1] = Value::text(tail.file.display().to_string());
            r[3] = Value::text("LOG FILE");
            r[8] = lsn(tail.first_lsn);
            r[9] = lsn(tail.last_lsn);
            r[columns.len() - 1] = Value::text(tail.describe());
            rows.push(r);
            gaps.extend(tail.gap);
        }
    } else {
        for l in &logs {
            eprintln!("note: {}: a transaction log file, no backup set (--plan shows what it adds)", l.display());
        }
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
        eprintln!("note: log gap: no file given holds the log from LSN {after} to LSN {next}");
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

/// Says on stderr which backup sets the restore read and which it skipped, and the gaps in
/// their log, when the files held more than one set: the plan the library opened `source` by.
pub fn announce_plan(source: &dyn PageSource) {
    let Some(plan) = source.restore_plan().filter(|p| p.chose_among_several()) else { return };
    for line in plan.notices() {
        eprintln!("note: {line}");
    }
    for (after, next) in plan.log_gaps.iter().chain(plan.tail.as_ref().and_then(|t| t.gap.as_ref())) {
        eprintln!("note: log gap: no file given holds the log from LSN {after} to LSN {next}");
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
    announce_plan(source);
    let missing = source.parts_not_given();
    if missing.is_empty() {
        return Ok(db);
    }
    for note in missing {
        eprintln!("note: {note}");
    }
    for table in db.catalog().tables(false) {
        match db.in_row_pages_present(&table) {
            Ok(pages) => {
                eprintln!(
                    "note: {}: {} of {} in-row pages present",
                    table.qualified_name(),
                    pages.present,
                    pages.listed
                )
            }
            Err(e) => eprintln!("note: {}: pages unknown: {e}", table.qualified_name()),
        }
    }
    Ok(db)
}
