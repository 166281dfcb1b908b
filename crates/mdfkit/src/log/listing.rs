//! The log records of several backups and transaction log files as one listing, in LSN order,
//! like `fn_dump_dblog`: each record with its transaction's name and begin time, filtered by
//! operation, transaction, table (partition) and time.
//!
//! Backup sets and log files are read in the order of their first LSN. The log portion of a full or differential
//! backup overlaps the log backups around it: a record already listed (an LSN not above the last
//! one listed) is not listed again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::backup::{BackupMedia, Lsn};
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::value::Value;

use super::ldf::{is_log_file, LogFile};
use super::{for_each_record, BackupLog, Context, LogBlock, LogRecord, Operation, TransactionId};

/// Which records to list; empty fields let everything through.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    /// Records of these operations only (all when empty).
    pub operations: Vec<Operation>,
    /// Records of this transaction only.
    pub transaction: Option<TransactionId>,
    /// Records on pages of these partitions (rowsets) only.
    pub partitions: Option<HashSet<u64>>,
    /// Records of transactions that began at or after / at or before this time
    /// (`YYYY-MM-DD HH:MM:SS[.fff]`); records whose transaction's begin is not in the log
    /// given (system records, transactions begun earlier) are left out when either is set.
    pub from: Option<String>,
    /// The end of the time window that `from` starts, same form.
    pub to: Option<String>,
}

impl LogFilter {
    /// Checks a `--from` / `--to` time: `YYYY-MM-DD HH:MM:SS` with optional fractions.
    pub fn check_time(text: &str) -> Result<String> {
        let digits_at = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
        let b = text.trim().as_bytes();
        let shaped = b.len() >= 19
            && digits_at.iter().all(|&i| b[i].is_ascii_digit())
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b' '
            && b[13] == b':'
            && b[16] == b':'
            && (b.len() == 19 || (b[19] == b'.' && b[20..].iter().all(u8::is_ascii_digit)));
        if !shaped {
            return Err(Error::new(
                crate::ErrorKind::NotFound,
                format!("time {text:?}: expected YYYY-MM-DD HH:MM:SS[.fff], as SQL Server writes datetime"),
            ));
        }
        Ok(text.trim().to_string())
    }
}

/// One listed record: the columns `fn_dump_dblog` shows that the log holds.
#[derive(Debug, Clone)]
pub struct ListedRecord {
    /// The backup file the record was read from (the first that holds it).
    pub file: PathBuf,
    /// Current LSN.
    pub lsn: Lsn,
    /// The transaction's previous record's LSN.
    pub previous_lsn: Lsn,
    /// Operation (`LOP_*`).
    pub operation: Operation,
    /// Context (`LCX_*`).
    pub context: Context,
    /// Transaction ID.
    pub transaction_id: TransactionId,
    /// The transaction's name, from its LOP_BEGIN_XACT when the log given holds it.
    pub transaction_name: Option<String>,
    /// On LOP_BEGIN_XACT records.
    pub begin_time: Option<Value>,
    /// On LOP_COMMIT_XACT / LOP_ABORT_XACT records.
    pub end_time: Option<Value>,
    /// Page ID, on page operations.
    pub page: Option<PageId>,
    /// Slot ID, on page operations.
    pub slot: Option<u16>,
    /// The rowset (`sys.partitions.partition_id`) of the page, on page operations.
    pub partition_id: Option<u64>,
    /// The table the partition belongs to, where a catalog was given.
    pub object: Option<String>,
    /// Log Record Length: bytes up to the next record.
    pub length: usize,
    /// The record's flags as stored.
    pub flags: u16,
    /// On LOP_BEGIN_XACT records.
    pub user_sid: Option<String>,
    /// Offset in Row, on page operations.
    pub offset_in_row: Option<u16>,
    /// Description: what the record changes, where mdfkit decodes it (LOP_COUNT_DELTA: the
    /// system table and its counts, `sys.sysrowsets rcrows +135`).
    pub description: Option<String>,
}

/// What is known of a transaction from its LOP_BEGIN_XACT.
struct Begun {
    name: String,
    time: String,
}

/// Lists the records of the log portions of `paths` (files of one database: full,
/// differential and log backups, and transaction log files, in any order), calling `each` in
/// LSN order. `names` maps partition ids to tables (see [`crate::log_changes::partition_names`]).
pub fn list_log(
    paths: &[PathBuf],
    names: Option<&HashMap<u64, String>>,
    filter: &LogFilter,
    mut each: impl FnMut(ListedRecord) -> Result<()>,
) -> Result<()> {
    list_log_with(paths, names, filter, |listed, _| each(listed))
}

/// Where a run of log comes from: a backup set, or a transaction log file (all of whose
/// records belong to it).
enum LogSource {
    Backup(u16),
    File(LogFile),
}

/// [`list_log`], with each record's bytes too (for its row images).
pub fn list_log_with(
    paths: &[PathBuf],
    names: Option<&HashMap<u64, String>>,
    filter: &LogFilter,
    mut each: impl FnMut(ListedRecord, &LogRecord<'_>) -> Result<()>,
) -> Result<()> {
    let mut sources = Vec::new();
    for path in paths {
        if is_log_file(path)? {
            let file = LogFile::open(path)?;
            sources.push((file.first_lsn().unwrap_or_default(), path.clone(), LogSource::File(file)));
            continue;
        }
        let media = BackupMedia::open(std::slice::from_ref(path))?;
        for set in media.sets() {
            sources.push((set.first_lsn, path.clone(), LogSource::Backup(set.position)));
        }
    }
    sources.sort_by_key(|(first, _, _)| *first);
    let mut last_listed: Option<Lsn> = None;
    let mut begun: HashMap<TransactionId, Begun> = HashMap::new();
    let mut list_block = |path: &Path, block: &LogBlock, holds: &dyn Fn(Lsn) -> bool| {
        for_each_record(block, |r| {
            let lsn = r.lsn;
            if !holds(lsn) || last_listed.is_some_and(|l| lsn <= l) {
                return Ok(());
            }
            last_listed = Some(lsn);
            if r.operation() == Operation::BEGIN_XACT {
                begun.insert(
                    r.transaction_id(),
                    Begun {
                        name: r.transaction_name().unwrap_or_default(),
                        time: r.time().map(|t| t.to_string()).unwrap_or_default(),
                    },
                );
            }
            if passes(&r, filter, &begun) {
                each(listed(path, &r, &begun, names), &r)?;
            }
            Ok(())
        })
        .map_err(|e| e.in_file(path))
    };
    for (_, path, source) in sources {
        match source {
            LogSource::File(file) => {
                for block in file.blocks() {
                    list_block(&path, &block?, &|_| true)?;
                }
            }
            LogSource::Backup(position) => {
                let media = BackupMedia::open(std::slice::from_ref(&path))?;
                let bounds = BackupLog::new(&media, position)?;
                for block in BackupLog::new(&media, position)? {
                    list_block(&path, &block?, &|lsn| bounds.holds(lsn))?;
                }
            }
        }
    }
    Ok(())
}

fn passes(r: &LogRecord<'_>, filter: &LogFilter, begun: &HashMap<TransactionId, Begun>) -> bool {
    if !filter.operations.is_empty() && !filter.operations.contains(&r.operation()) {
        return false;
    }
    if filter.transaction.is_some_and(|t| t != r.transaction_id()) {
        return false;
    }
    if let Some(partitions) = &filter.partitions {
        if !r.partition_id().is_some_and(|p| partitions.contains(&p)) {
            return false;
        }
    }
    if filter.from.is_some() || filter.to.is_some() {
        let Some(b) = begun.get(&r.transaction_id()).filter(|b| !b.time.is_empty()) else { return false };
        if filter.from.as_deref().is_some_and(|from| b.time.as_str() < from) {
            return false;
        }
        if filter.to.as_deref().is_some_and(|to| b.time.as_str() > to) {
            return false;
        }
    }
    true
}

fn listed(
    file: &Path,
    r: &LogRecord<'_>,
    begun: &HashMap<TransactionId, Begun>,
    names: Option<&HashMap<u64, String>>,
) -> ListedRecord {
    let op = r.operation();
    let time = r.time();
    let is_begin = op == Operation::BEGIN_XACT;
    ListedRecord {
        file: file.to_path_buf(),
        lsn: r.lsn,
        previous_lsn: r.previous_lsn(),
        operation: op,
        context: r.context(),
        transaction_id: r.transaction_id(),
        transaction_name: begun.get(&r.transaction_id()).map(|b| b.name.clone()).filter(|n| !n.is_empty()),
        begin_time: if is_begin { time.clone() } else { None },
        end_time: if is_begin { None } else { time },
        page: r.page_id(),
        slot: r.slot(),
        partition_id: r.partition_id(),
        object: r.partition_id().and_then(|p| names?.get(&p).cloned()),
        length: r.length(),
        flags: r.flags(),
        user_sid: r.user_sid(),
        offset_in_row: r.offset_in_row(),
        description: r.count_delta().map(|d| d.to_string()),
    }
}
