//! What happened to a table, from the log: the row images of its inserts and deletes decoded
//! into rows of the table's own columns (with the record decoder the table's pages use), with
//! their transaction's name, begin and commit times and user SID.
//!
//! A LOP_INSERT_ROWS or LOP_DELETE_ROWS on the table's heap or clustered index (LCX_HEAP,
//! LCX_CLUSTERED) carries the whole row as its first row image: the row inserted, or the row as
//! it was before the delete (how deleted rows come back). A LOP_MODIFY_ROW carries only the bytes
//! that changed (before and after images at an offset in the row): it is listed, and said not to
//! be decoded, rather than guessed at. Index rows (other contexts) are not the table's rows and
//! are left out.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::backup::Lsn;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::record::Record;
use crate::value::Value;
use crate::Database;

use crate::log::listing::{list_log, ListedRecord, LogFilter};
use crate::log::{Operation, TransactionId};

/// One change to a row.
#[derive(Debug, Clone)]
pub struct RowChange {
    /// The LSN of the insert or delete.
    pub lsn: Lsn,
    /// `insert`, `delete` or `update`.
    pub kind: &'static str,
    /// The transaction that made the change.
    pub transaction_id: TransactionId,
    /// Its name, from its LOP_BEGIN_XACT where the log given holds it.
    pub transaction_name: Option<String>,
    /// Its begin time, from the same record.
    pub begin_time: Option<Value>,
    /// The commit (or abort) time of the transaction, where the log given holds it.
    pub end_time: Option<Value>,
    /// `Some(true)` committed, `Some(false)` rolled back, `None` not ended in the log given.
    pub committed: Option<bool>,
    /// LSN of the transaction's LOP_COMMIT_XACT / LOP_ABORT_XACT, where the log given holds it.
    pub end_lsn: Option<Lsn>,
    /// The SID of the login that began the transaction.
    pub user_sid: Option<String>,
    /// The page the row was on.
    pub page: Option<PageId>,
    /// Its slot.
    pub slot: Option<u16>,
    /// The row's values in the table's column order; empty when `note` says why not.
    pub values: Vec<Value>,
    /// Why the row was not decoded (an update logs only the bytes it changed).
    pub note: Option<String>,
}

/// The changes to `table` (`schema.name`) in the log portions of `paths`, in LSN order, and the
/// table's column names. `db` is the database whose catalog describes the table (a full backup
/// of it).
pub fn table_changes(db: &Database, paths: &[PathBuf], table: &str) -> Result<(Vec<String>, Vec<RowChange>)> {
    let t = db.catalog().find_table(table).ok_or_else(|| Error::not_found(format!("no table {table}")))?;
    let mut decoders = HashMap::new();
    for p in &t.partitions {
        decoders.insert(p.partition_id as u64, db.row_decoder(&t, p.partition_id, None)?);
    }
    let columns = decoders.values().next().map(|d| d.column_names()).unwrap_or_default();
    let filter = LogFilter { partitions: Some(decoders.keys().copied().collect()), ..LogFilter::default() };
    // Transactions' ends come after their changes: gather them all, then fill the ends in.
    let mut changes = Vec::new();
    let mut ends: HashMap<TransactionId, (Option<Value>, bool, Lsn)> = HashMap::new();
    let mut begins: HashMap<TransactionId, (Option<Value>, Option<String>)> = HashMap::new();
    let all = LogFilter::default();
    list_log(paths, None, &all, |r| {
        match r.operation {
            Operation::BEGIN_XACT => {
                begins.insert(r.transaction_id, (r.begin_time.clone(), r.user_sid.clone()));
            }
            Operation::COMMIT_XACT | Operation::ABORT_XACT => {
                ends.insert(r.transaction_id, (r.end_time.clone(), r.operation == Operation::COMMIT_XACT, r.lsn));
            }
            _ => {}
        }
        Ok(())
    })?;
    list_with_images(paths, &filter, |r, image| {
        let data_row = matches!(r.context.name().as_str(), "LCX_HEAP" | "LCX_CLUSTERED");
        let kind = match r.operation {
            Operation::INSERT_ROWS if data_row => "insert",
            Operation::DELETE_ROWS if data_row => "delete",
            Operation::MODIFY_ROW | Operation::MODIFY_COLUMNS if data_row => "update",
            _ => return Ok(()),
        };
        let mut values = Vec::new();
        let mut note = None;
        if kind == "update" {
            note = Some(format!(
                "{}: only the changed bytes are logged (offset {} in the row); not decoded",
                r.operation.name(),
                r.offset_in_row.unwrap_or(0)
            ));
        } else {
            let decoder = r.partition_id.and_then(|p| decoders.get(&p));
            let decoded = match (decoder, image) {
                (Some(d), Some(image)) => Record::parse(image).and_then(|rec| d.decode(&rec, &mut values)),
                _ => Err(Error::corrupt("no row image")),
            };
            if let Err(e) = decoded {
                values.clear();
                note = Some(format!("row image not decoded: {e}"));
            }
        }
        changes.push(RowChange {
            lsn: r.lsn,
            kind,
            transaction_id: r.transaction_id,
            transaction_name: r.transaction_name.clone(),
            begin_time: None,
            end_time: None,
            committed: None,
            end_lsn: None,
            user_sid: None,
            page: r.page,
            slot: r.slot,
            values,
            note,
        });
        Ok(())
    })?;
    for c in &mut changes {
        if let Some((time, sid)) = begins.get(&c.transaction_id) {
            c.begin_time = time.clone();
            c.user_sid = sid.clone();
        }
        if let Some((time, committed, lsn)) = ends.get(&c.transaction_id) {
            c.end_time = time.clone();
            c.committed = Some(*committed);
            c.end_lsn = Some(*lsn);
        }
    }
    Ok((columns, changes))
}

/// Lists records passing `filter`, each with its first row image.
fn list_with_images(
    paths: &[PathBuf],
    filter: &LogFilter,
    mut each: impl FnMut(&ListedRecord, Option<&[u8]>) -> Result<()>,
) -> Result<()> {
    crate::log::listing::list_log_with(paths, None, filter, |listed, record| {
        let image = record.row_images().ok().and_then(|mut i| i.next());
        each(&listed, image)
    })
}

/// The table (`schema.name`, with `:index id` for an index other than the heap or clustered
/// index) each partition id (rowset) of a database belongs to, from its catalog: what log
/// records' partition ids name.
pub fn partition_names(db: &Database) -> std::collections::HashMap<u64, String> {
    let catalog = db.catalog();
    let tables = catalog.tables(true);
    let mut names = std::collections::HashMap::new();
    for ((object_id, index_id), rowsets) in &catalog.base().rowsets_by_owner {
        let Some(table) = tables.iter().find(|t| t.object_id == *object_id) else { continue };
        let name =
            if *index_id > 1 { format!("{}:{index_id}", table.qualified_name()) } else { table.qualified_name() };
        for rowset in rowsets {
            names.insert(*rowset as u64, name.clone());
        }
    }
    names
}
