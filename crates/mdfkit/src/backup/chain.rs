//! Several backups of one database given together: a full backup, differential backups and log
//! backups (files or stripes, in any order), read as one database like a restore would.
//!
//! **Which sets are used** (a restore planner's choice, as `RESTORE ... WITH NORECOVERY` chains
//! are built): the latest full database backup (highest checkpoint LSN), then the latest
//! differential backup based on it, then the log backups after that, in LSN order.
//! - A differential backup names its full backup twice in its header (see [`super::header`]):
//!   its differential base LSN, which equals the full's checkpoint LSN, and its differential base
//!   GUID, which equals the full's backup set GUID. Its `database_backup_lsn` carries the same
//!   LSN. Measured on every differential of the corpus: difftest-diff1 and -diff2 (base
//!   24000000006800099 = difftest-full's checkpoint LSN), SimpleBackTest_1 and _2
//!   (21000000007000170), RestoreTimeClean2 (25000000006200170), both cube-query-history
//!   differentials (24000000041900037) and sqltoolsservice's DiffBackup (52000000092000037); the
//!   GUIDs agree the same way. A differential is matched to its full by both when both are
//!   known, by the LSN alone otherwise.
//! - A differential's data stream holds exactly the extents its DCM pages mark changed, in file
//!   order (see [`super::extents`]); those pages replace the full's, every other page is the
//!   full's.
//! - Log backups hold no data pages; their log records (and the log portion of the full or
//!   differential read) are redone onto the pages by [`crate::log::redo`]. The plan lists them: the first log
//!   needed is the one whose LSN range holds the last LSN of the full or differential
//!   (`first_lsn <= last_lsn < its last_lsn`), each next one starts where the previous ended
//!   (`first_lsn == previous last_lsn`), and a log that starts later leaves a gap, named by its
//!   two LSNs. Logs that end before the restore point are not needed.
//!
//! A transaction log file (`.ldf`) given with the backups is the chain's tail: the plan
//! carries what the log layer found of it ([`LogTail`], filled in by
//! [`crate::log::redo::restore`]), as RESTORE's plan would carry a tail-log backup.
//!
//! Sets that cannot be combined are refused by name: a set of another database, a differential
//! whose full backup was not given (when no full of its own is given either), a striped backup
//! with a stripe missing. Sets that are given but not needed (an older full, a differential of
//! an older full, an older differential) are skipped, each with its reason.
//!
//! **Salvage** ([`BackupFiles::into_pages_salvaging`]): a striped backup with stripes missing is
//! read from the stripes given. Each stripe's stream is placed by its page headers in map order
//! (see [`super::extents`]); the extents the map lists that no given stripe holds are
//! [`BackupPages::missing_extents`], and a note names the missing stripes and how many extents
//! are gone. A differential's changed extent in a missing stripe takes the full's copy of those
//! pages away too (it is stale): they are missing, never served old. chinook.bak (stripe 1 of
//! 2) holds 61 extents, its GAM lists 60 more; `sys.sysrscols` has page 1:51 among them, so its
//! catalog cannot be read.
//!
//! Files are grouped into backups by their media set (the TAPE block's RAID stream, see
//! [`super::header`]): stripes of one striped backup share a media set id, each unstriped backup
//! file is a media set of its own. A file may hold several sets (appended backups): each counts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{BackupMedia, BackupPages, BackupSet, BackupType, Lsn, Stripe};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;

/// One backup set of the files given: which media (group of stripes) holds it, and its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedSet {
    /// The files (stripes) that hold it, as given.
    pub files: Vec<PathBuf>,
    /// The set's header.
    pub set: BackupSet,
    media: usize,
}

impl PlannedSet {
    /// The set's files and position, for messages: `a.bak` or `a.bak + b.bak`, with
    /// `(position N)` when the files hold several sets.
    pub fn name(&self) -> String {
        let files: Vec<String> = self.files.iter().map(|f| f.display().to_string()).collect();
        format!("{} (position {})", files.join(" + "), self.set.position)
    }
}

/// The restore a set of backups makes: which full, which differential, which logs, and why the
/// other sets are not used.
#[derive(Debug, Clone)]
pub struct RestorePlan {
    /// The full database backup the restore starts from.
    pub full: PlannedSet,
    /// The latest differential based on that full backup, if any was given.
    pub differential: Option<PlannedSet>,
    /// Log backups after the full (or differential), in LSN order.
    pub logs: Vec<PlannedSet>,
    /// Missing log ranges: (last LSN of the set before the gap, first LSN of the log after it).
    pub log_gaps: Vec<(Lsn, Lsn)>,
    /// Sets given but not used, each with the reason.
    pub skipped: Vec<(PlannedSet, String)>,
    /// A transaction log file (`.ldf`) given as the chain's tail, once the log layer has read
    /// it ([`crate::log::redo::plan_tail`]): what a tail-log backup of it would add.
    pub tail: Option<LogTail>,
}

/// A transaction log file (`.ldf`) read after a restore chain's backups, as a tail-log backup
/// and its restore would: its records from where the backups' log ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTail {
    /// The log file, as given.
    pub file: PathBuf,
    /// Where the backups' log ends (the last LSN of the full or differential, or of the last log
    /// backup before any gap): the tail's records are those from this LSN on.
    pub follows: Lsn,
    /// The LSN of the file's first record (`None`: the file holds no log).
    pub first_lsn: Option<Lsn>,
    /// The LSN of the file's last record.
    pub last_lsn: Option<Lsn>,
    /// How many of its records come at or after `follows` (those a restore of the tail redoes).
    pub records_after: usize,
    /// The log missing between the backups and the file's records, or inside the file (a virtual
    /// log file of the sequence not in it): the LSN where the log read ends, and the next LSN
    /// the file holds. Nothing of the file past it is applied.
    pub gap: Option<(Lsn, Lsn)>,
}

impl LogTail {
    /// What the tail adds to the restore, for the plan's notices.
    pub fn describe(&self) -> String {
        let name = self.file.display();
        match (self.gap, self.first_lsn, self.last_lsn) {
            (Some((from, to)), _, _) => format!(
                "log file {name}: not applied past LSN {from}: the log from LSN {from} to LSN {to} is in no file given (log gap)"
            ),
            (None, Some(_), Some(last)) if self.records_after > 0 => format!(
                "rolled forward with the tail of the log file {name}: {} record(s) from LSN {} to LSN {last}",
                self.records_after, self.follows
            ),
            (None, _, Some(last)) => format!(
                "log file {name}: nothing to apply: its log ends at LSN {last}, before the backups' (LSN {})",
                self.follows
            ),
            _ => format!("log file {name}: nothing to apply: it holds no log"),
        }
    }
}

impl RestorePlan {
    /// True when the files held more than one backup set, so that the plan chose among them
    /// (then its [`RestorePlan::notices`] are worth telling).
    pub fn chose_among_several(&self) -> bool {
        self.differential.is_some() || !self.logs.is_empty() || !self.skipped.is_empty() || self.tail.is_some()
    }

    /// Why a log backup of the plan cannot be applied: it comes after a gap in the log.
    pub fn after_gap(&self, log: &PlannedSet) -> Option<String> {
        let (from, to) = self.log_gaps.first()?;
        (log.set.first_lsn >= *to).then(|| format!("it follows the log gap from LSN {from} to LSN {to}"))
    }

    /// What the plan reads and skips, one line each (the log backups are named as not applied).
    pub fn notices(&self) -> Vec<String> {
        let mut out = vec![format!("reading the full backup {}", self.full.name())];
        if let Some(d) = &self.differential {
            out.push(format!("with the differential backup {} laid over it", d.name()));
        }
        for l in &self.logs {
            out.push(match self.after_gap(l) {
                Some(gap) => format!("log backup {}: not applied: {gap}", l.name()),
                None => format!("rolled forward with the log backup {}", l.name()),
            });
        }
        if let Some(tail) = &self.tail {
            out.push(tail.describe());
        }
        for (s, why) in &self.skipped {
            out.push(format!("skipped {}: {why}", s.name()));
        }
        out
    }

    /// Where the backups' log ends: the restore point (the last LSN of the full or
    /// differential), then each log backup's last LSN up to the first gap.
    pub fn log_end(&self) -> Lsn {
        let mut reached = self.differential.as_ref().unwrap_or(&self.full).set.last_lsn;
        for l in &self.logs {
            if l.set.first_lsn > reached {
                break;
            }
            reached = reached.max(l.set.last_lsn);
        }
        reached
    }
}

/// Backup files given together, grouped into backups (media sets).
pub struct BackupFiles {
    media: Vec<BackupMedia>,
}

impl BackupFiles {
    /// Reads the headers of every file (descriptor blocks and configuration streams only).
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        Self::from_sources(super::open_paths(paths)?)
    }

    /// Reads the headers of backup files already open (each with the name used in messages).
    pub fn from_sources(sources: Vec<(PathBuf, Box<dyn ByteSource>)>) -> Result<Self> {
        if sources.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, "no backup file given"));
        }
        let mut groups: Vec<BackupMedia> = Vec::new();
        for (path, bytes) in sources {
            let one = BackupMedia::build(vec![Stripe::new(path, bytes)?])?;
            let striped = one.scans[0].family.filter(|f| f.family_count > 1);
            let same = striped.and_then(|f| {
                groups.iter().position(|g| g.scans[0].family.is_some_and(|h| h.media_set_id == f.media_set_id))
            });
            match same {
                Some(i) => {
                    let group = groups.remove(i);
                    let mut stripes = group.stripes;
                    let mut scans = group.scans;
                    stripes.extend(one.stripes);
                    scans.extend(one.scans);
                    groups.insert(i, BackupMedia::assemble(stripes, scans)?);
                }
                None => groups.push(one),
            }
        }
        Ok(BackupFiles { media: groups })
    }

    /// Reads backups held in memory, each file with the name used in messages.
    pub fn from_bytes(files: Vec<(PathBuf, Vec<u8>)>) -> Result<Self> {
        Self::from_sources(files.into_iter().map(|(p, b)| (p, Box::new(b) as Box<dyn ByteSource>)).collect())
    }

    /// The backups given (stripes of one backup together), in the order first given.
    pub fn media(&self) -> &[BackupMedia] {
        &self.media
    }

    /// The backup (media) that holds a planned set.
    pub fn media_of(&self, set: &PlannedSet) -> Option<&BackupMedia> {
        self.media.get(set.media)
    }

    /// Every set of every backup given.
    pub fn sets(&self) -> Vec<PlannedSet> {
        let mut out = Vec::new();
        for (media, m) in self.media.iter().enumerate() {
            let files: Vec<PathBuf> = m.stripes.iter().map(|s| s.path.clone()).collect();
            for set in m.sets() {
                out.push(PlannedSet { files: files.clone(), set: set.clone(), media });
            }
        }
        out
    }

    /// The restore plan of the sets given: the latest full backup and what goes with it, or
    /// with `position` (a single backup file only) the set at that position and its full backup.
    pub fn plan(&self, position: Option<u16>) -> Result<RestorePlan> {
        let sets = self.sets();
        let (Some(any), Some(media)) = (sets.first(), self.media.first()) else {
            return Err(Error::not_a_database("no backup set in the files given"));
        };
        let first = media.first_path().to_path_buf();
        let target = match position {
            Some(p) if self.media.len() > 1 => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "--position {p} picks a set of one backup file, but {} backups were given: without it the restore chain is chosen (`mdfkit backups FILES --plan` shows it)",
                        self.media.len()
                    ),
                ))
            }
            Some(p) => Some(sets.iter().find(|s| s.set.position == p).cloned().ok_or_else(|| {
                let held: Vec<String> = sets.iter().map(|s| s.set.position.to_string()).collect();
                Error::not_found(format!(
                    "no backup set at position {p} (the file holds position{} {}; `mdfkit backups` lists them)",
                    if held.len() == 1 { "" } else { "s" },
                    held.join(", ")
                ))
                .in_file(&first)
            })?),
            None => None,
        };
        let (full, differential) = match &target {
            Some(t) if t.set.backup_type == BackupType::Differential => match sets.iter().find(|f| is_base_of(f, t)) {
                Some(f) => (f.clone(), Some(t.clone())),
                None => return Err(no_full_for(t)),
            },
            Some(t) => (t.clone(), None),
            None => {
                let fulls = sets.iter().filter(|s| s.set.backup_type == BackupType::Full);
                let Some(full) = fulls.max_by_key(|s| (s.set.checkpoint_lsn, s.set.start)).cloned() else {
                    return Err(match sets.iter().find(|s| s.set.backup_type == BackupType::Differential) {
                        Some(d) => no_full_for(d),
                        None => refusal(
                            any,
                            ErrorKind::NotADatabase,
                            format!(
                                "no full database backup is among the {} set(s) given, and log backups hold log records, no data pages; give the full backup too",
                                sets.len()
                            ),
                        ),
                    });
                };
                let diff = sets
                    .iter()
                    .filter(|d| d.set.backup_type == BackupType::Differential && is_base_of(&full, d))
                    .max_by_key(|d| (d.set.checkpoint_lsn, d.set.start))
                    .cloned();
                (full, diff)
            }
        };
        let mut skipped = Vec::new();
        let mut logs = Vec::new();
        let restore_point = differential.as_ref().unwrap_or(&full).set.last_lsn;
        let used = |s: &PlannedSet| {
            (s.media, s.set.position) == (full.media, full.set.position)
                || differential.as_ref().is_some_and(|d| (s.media, s.set.position) == (d.media, d.set.position))
        };
        for s in sets.iter().filter(|s| !used(s)) {
            if !same_database(&full.set, &s.set) {
                return Err(Error::not_a_database(format!(
                    "{} is a backup of database {:?} (created {}), but the full backup {} is of {:?} (created {}): give the backups of one database",
                    s.name(),
                    s.set.database_name,
                    date(&s.set),
                    full.name(),
                    full.set.database_name,
                    date(&full.set)
                )));
            }
            let why = match s.set.backup_type {
                BackupType::Full => format!(
                    "{} full backup (checkpoint LSN {}; the one read is {})",
                    if s.set.checkpoint_lsn < full.set.checkpoint_lsn { "an older" } else { "another" },
                    s.set.checkpoint_lsn,
                    full.set.checkpoint_lsn
                ),
                BackupType::Differential if is_base_of(&full, s) && differential.is_none() => {
                    "a differential of the full backup read, which --position asked for alone".to_string()
                }
                BackupType::Differential if is_base_of(&full, s) => format!(
                    "an older differential of the same full backup (checkpoint LSN {}; the one read is {})",
                    s.set.checkpoint_lsn,
                    differential.as_ref().map_or(Lsn::default(), |d| d.set.checkpoint_lsn)
                ),
                BackupType::Differential => match sets.iter().find(|f| is_base_of(f, s)) {
                    Some(f) => format!("a differential of another full backup ({})", f.name()),
                    None if target.is_some() => format!(
                        "a differential of another full backup (differential base LSN {}), not given",
                        s.set.differential_base_lsn.unwrap_or(s.set.database_backup_lsn)
                    ),
                    None => return Err(no_full_for(s)),
                },
                BackupType::Log if s.set.last_lsn <= restore_point => {
                    format!(
                        "a log backup that ends (LSN {}) before the restore point (LSN {restore_point})",
                        s.set.last_lsn
                    )
                }
                BackupType::Log => {
                    logs.push(s.clone());
                    continue;
                }
                BackupType::Other(_) => format!("{}: not part of a restore chain", s.set.backup_type.described()),
            };
            skipped.push((s.clone(), why));
        }
        logs.sort_by_key(|l| (l.set.first_lsn, l.set.last_lsn));
        let mut log_gaps = Vec::new();
        let mut reached = restore_point;
        for l in &logs {
            if l.set.first_lsn > reached {
                log_gaps.push((reached, l.set.first_lsn));
            }
            reached = reached.max(l.set.last_lsn);
        }
        Ok(RestorePlan { full, differential, logs, log_gaps, skipped, tail: None })
    }

    /// The database the plan restores: the full backup's pages with the differential's laid
    /// over them (every stripe of each must be given), and the plan itself.
    pub fn into_pages(self, position: Option<u16>) -> Result<(BackupPages, RestorePlan)> {
        self.read(position, true)
    }

    /// Like [`BackupFiles::into_pages`], but a striped backup with stripes missing is read from
    /// the stripes given (salvage): the pages in the others are missing
    /// ([`BackupPages::missing_extents`]; a note names the stripes).
    pub fn into_pages_salvaging(self, position: Option<u16>) -> Result<(BackupPages, RestorePlan)> {
        self.read(position, false)
    }

    /// The plan's base pages (full with the differential over it) without taking the files:
    /// their media still serve the log ([`BackupFiles::media_of`]). `all_stripes`: every stripe
    /// must be given (otherwise salvage, see [`BackupFiles::into_pages_salvaging`]).
    pub fn read(&self, position: Option<u16>, all_stripes: bool) -> Result<(BackupPages, RestorePlan)> {
        let plan = self.plan(position)?;
        let media = |s: &PlannedSet| {
            self.media
                .get(s.media)
                .ok_or_else(|| Error::not_found("the restore plan names a backup that was not given"))
        };
        let full = media(&plan.full)?.pages_of(Some(plan.full.set.position), all_stripes, false)?;
        let pages = match &plan.differential {
            Some(d) => full.overlay(media(d)?.pages_of(Some(d.set.position), all_stripes, true)?),
            None => full,
        };
        Ok((pages, plan))
    }

    /// The plan's pages as a page source, with the plan's notices in its notes; `salvage`: see
    /// [`BackupFiles::into_pages_salvaging`].
    pub fn into_source(self, position: Option<u16>, salvage: bool) -> Result<Arc<BackupPages>> {
        Ok(Arc::new(self.read_noted(position, salvage)?.0))
    }

    /// Like [`BackupFiles::read`] (`salvage`: not every stripe needed), with the plan's notices
    /// first in the pages' notes.
    pub fn read_noted(&self, position: Option<u16>, salvage: bool) -> Result<(BackupPages, RestorePlan)> {
        let (mut pages, plan) = self.read(position, !salvage)?;
        if plan.chose_among_several() {
            let mut notes = plan.notices();
            notes.append(&mut pages.notes);
            pages.notes = notes;
        }
        Ok((pages, plan))
    }
}

/// `full` is the full backup `diff` was taken against: the differential base LSN is the full's
/// checkpoint LSN, and the base GUID its backup set GUID where both are known.
fn is_base_of(full: &PlannedSet, diff: &PlannedSet) -> bool {
    let base_lsn = diff.set.differential_base_lsn.unwrap_or(diff.set.database_backup_lsn);
    full.set.backup_type == BackupType::Full
        && diff.set.backup_type == BackupType::Differential
        && !base_lsn.is_zero()
        && base_lsn == full.set.checkpoint_lsn
        && diff.set.differential_base_guid.as_ref().is_none_or(|g| g.eq_ignore_ascii_case(&full.set.backup_set_guid))
}

/// Two sets are of one database: same name (case-insensitive) and the same creation date, each
/// where both headers give it (a set without a readable SCIN record names neither).
fn same_database(a: &BackupSet, b: &BackupSet) -> bool {
    (a.database_name.is_empty() || b.database_name.is_empty() || a.database_name.eq_ignore_ascii_case(&b.database_name))
        && (a.database_creation_date.is_none()
            || b.database_creation_date.is_none()
            || a.database_creation_date == b.database_creation_date)
}

fn date(s: &BackupSet) -> String {
    s.database_creation_date.map_or("on an unknown date".to_string(), |d| d.to_string())
}

/// Names a set the way errors about one file do: `a.bak: position N is ...` (with the other
/// stripes, if any, after the first).
fn refusal(s: &PlannedSet, kind: ErrorKind, message: String) -> Error {
    let others: Vec<String> = s.files.iter().skip(1).map(|f| f.display().to_string()).collect();
    let with = if others.is_empty() { String::new() } else { format!(" (with {})", others.join(", ")) };
    let e =
        Error::new(kind, format!("position {}{with} is {}: {message}", s.set.position, s.set.backup_type.described()));
    match s.files.first() {
        Some(f) => e.in_file(f),
        None => e,
    }
}

fn no_full_for(diff: &PlannedSet) -> Error {
    refusal(
        diff,
        ErrorKind::MissingFile,
        format!(
            "it holds only the extents changed since its full backup ({}), which was not given; give that full backup too",
            super::differential_base(&diff.set)
        ),
    )
}
