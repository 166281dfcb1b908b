//! Two states of one database side by side (the studio's `--compare`): two backups, two data
//! files, or one backup chain restored to two points.
//!
//! - [`compare_tables`]: each table of either side with its row and page counts on both: rows from
//!   the catalog (`sys.partitions.rows`, no scan), except the partitions a restore chain's log
//!   changed, whose rows are counted on their pages ([`Database::tables_counted`], as `mdfkit
//!   tables` does: the catalog keeps the full backup's counts there, as the StopAt chain shows);
//!   pages from the allocation units' IAM chains (the pages they map that PFS marks allocated:
//!   what the log's redo changed shows there).
//! - [`compare_rows`]: one table's rows inserted, deleted and changed. Rows are matched by the
//!   clustered index's key (a row whose key is on both sides with other values is changed); a
//!   heap has no key, so its rows are matched whole, every column taken as key (as multisets: a
//!   row whose values changed counts as one deleted and one inserted). Keys compare as SQL
//!   Server compares them (`KeyText`): text without its trailing spaces, and without regard to
//!   case under a case-insensitive collation, so a key that only changed case is the same row,
//!   changed (a heap's row too, as `EXCEPT` would match it). No key order is assumed
//!   (collations order text in ways a reader cannot rebuild): the first side's keys are kept as
//!   64-bit hashes with their row's hash and
//!   position (about 40 bytes a row, tables over [`MAX_ROWS_COMPARED`] rows are refused), the
//!   second side is scanned against them, and the first side's keys left over are its deleted
//!   rows, read back by position. Counts are complete; the rows listed stop at a limit and go on
//!   from a cursor on the last one listed ([`After`]: a physical position, never an offset).
//! - [`compare_pages`]: the pages whose bytes differ (or that one side holds and the other does
//!   not), in page order, as each side's source serves them (a chain's pages as its redo left
//!   them); a listing stops at a limit and goes on after the last page listed.

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::catalog::model::TableInfo;
use crate::database::Database;
use crate::error::{Error, Result};
use crate::page::{PageHeader, PageId, PAGE_SIZE};
use crate::scan::{Flow, ScanPosition};
use crate::table_scan::TableDecoders;
use crate::value::Value;

/// Tables with more rows than this on either side (by the catalog) are not compared row by row:
/// the first side's hashes would take more than about 200 MB.
pub const MAX_ROWS_COMPARED: i64 = 5_000_000;

/// A table's counts on both sides; `None` where the table is not on that side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCounts {
    /// `schema.table`.
    pub name: String,
    /// Rows, first and second side: the catalog's (`sys.partitions.rows`), counted on the pages
    /// for partitions a restore chain's log changed ([`Database::tables_counted`]).
    pub rows: [Option<i64>; 2],
    /// Pages the table's allocation units' IAM chains map and PFS marks allocated (in-row, LOB
    /// and row-overflow), first and second side.
    pub pages: [Option<i64>; 2],
}

impl TableCounts {
    /// Whether the counts differ (or the table is on one side only).
    pub fn differs(&self) -> bool {
        self.rows[0] != self.rows[1] || self.pages[0] != self.pages[1]
    }
}

/// Every table of either side (user tables, or all with `include_system`), by name, with its
/// counts on both.
pub fn compare_tables(first: &Database, second: &Database, include_system: bool) -> Result<Vec<TableCounts>> {
    let mut by_name: std::collections::BTreeMap<String, TableCounts> = Default::default();
    for (side, db) in [first, second].into_iter().enumerate() {
        for t in db.tables_counted(include_system)? {
            let name = t.qualified_name();
            let pages = allocated_pages(db, &t).map_err(|e| e.in_object(name.clone()))?;
            let counts = by_name.entry(name.clone()).or_insert(TableCounts { name, rows: [None; 2], pages: [None; 2] });
            counts.rows[side] = Some(t.rows());
            counts.pages[side] = Some(pages);
        }
    }
    Ok(by_name.into_values().collect())
}

/// The pages the IAM chains of `t`'s allocation units map and PFS marks allocated.
fn allocated_pages(db: &Database, t: &TableInfo) -> Result<i64> {
    let mut pages = 0;
    for p in &t.partitions {
        for unit in db.catalog().base().allocation_units.iter().filter(|u| u.owner_id == p.partition_id) {
            crate::scan::MappedPages::new(db.reader(), unit)?.for_each(|_| pages += 1);
        }
    }
    Ok(pages)
}

/// How a row differs between the sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// On the second side only.
    Inserted,
    /// On the first side only.
    Deleted,
    /// Its key on both sides, with other values.
    Changed,
}

/// One row that differs: its values on each side where it is there, and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct RowChange {
    /// Inserted, deleted or changed.
    pub change: Change,
    /// The row on the first side (deleted and changed rows).
    pub before: Option<(ScanPosition, Vec<Value>)>,
    /// The row on the second side (inserted and changed rows).
    pub after: Option<(ScanPosition, Vec<Value>)>,
}

/// One table's rows compared ([`compare_rows`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RowComparison {
    /// The table's columns, as both sides store them.
    pub columns: Vec<String>,
    /// The columns rows are matched by: the clustered key, or every column of a heap.
    pub key: Vec<String>,
    /// Rows on the second side only.
    pub inserted: u64,
    /// Rows on the first side only.
    pub deleted: u64,
    /// Rows whose key is on both sides with other values.
    pub changed: u64,
    /// Rows the same on both sides.
    pub unchanged: u64,
    /// The first `limit` rows that differ after the cursor: changed and inserted in the second
    /// side's scan order, then deleted in the first side's page order.
    pub rows: Vec<RowChange>,
    /// Where the next rows that differ start, when more are left than were listed.
    pub next: Option<After>,
}

/// A cursor in the listing of rows that differ: after the row at this position of the second
/// side's scan (inserted and changed rows), or of the first side (deleted rows, listed after all
/// the others). Spelled `other:1:2:3` and `this:1:2:3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// After this row of the second side.
    Other(ScanPosition),
    /// After this deleted row of the first side.
    This(ScanPosition),
}

impl std::fmt::Display for After {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            After::Other(p) => write!(f, "other:{p}"),
            After::This(p) => write!(f, "this:{p}"),
        }
    }
}

impl std::str::FromStr for After {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text.split_once(':') {
            Some(("other", p)) => Ok(After::Other(p.parse()?)),
            Some(("this", p)) => Ok(After::This(p.parse()?)),
            _ => Err(Error::unsupported(format!("cursor {text:?}: write other:FILE:PAGE:SLOT or this:FILE:PAGE:SLOT"))),
        }
    }
}

impl RowChange {
    /// The cursor that resumes a listing after this row.
    pub fn cursor(&self) -> Option<After> {
        match (self.change, &self.before, &self.after) {
            (Change::Deleted, Some((p, _)), _) => Some(After::This(*p)),
            (_, _, Some((p, _))) => Some(After::Other(*p)),
            _ => None,
        }
    }
}

/// What the first side's scan keeps of a row: its whole-row hash, its position, and how many
/// rows share its key (heaps: identical rows).
struct Kept {
    row: u64,
    position: ScanPosition,
    count: u32,
}

/// Compares table `name` on both sides row by row (see the module documentation), listing at most
/// `limit` of the rows that differ after `after` (from the first when `None`). The table must be
/// on both sides with the same columns.
pub fn compare_rows(
    first: &Database,
    second: &Database,
    name: &str,
    after: Option<After>,
    limit: usize,
) -> Result<RowComparison> {
    let find = |db: &Database, side: &str| {
        db.catalog()
            .find_table(name)
            .ok_or_else(|| Error::not_found(format!("no table named {name} on the {side} side")))
    };
    let (ta, tb) = (find(first, "first")?, find(second, "second")?);
    for t in [&ta, &tb] {
        if t.rows() > MAX_ROWS_COMPARED {
            return Err(Error::unsupported(format!(
                "{} holds {} rows: row comparison stops at {MAX_ROWS_COMPARED}",
                t.qualified_name(),
                t.rows()
            )));
        }
    }
    let columns = column_names(first, &ta)?;
    if columns != column_names(second, &tb)? {
        return Err(Error::unsupported(format!(
            "{}: the sides have different columns ({} and {})",
            ta.qualified_name(),
            columns.join(", "),
            column_names(second, &tb)?.join(", ")
        )));
    }
    let key: Vec<String> = if ta.is_heap {
        columns.clone()
    } else {
        let clustered = first.catalog().indexes(ta.object_id).into_iter().find(|i| i.index_id == 1);
        clustered.map(|i| i.key_columns.into_iter().map(|(c, _)| c).collect()).unwrap_or_else(|| columns.clone())
    };
    let declared = first.catalog().columns(ta.object_id);
    let key_at: Vec<(usize, KeyText)> = key
        .iter()
        .map(|k| {
            let at = columns.iter().position(|c| c == k).ok_or_else(|| {
                Error::corrupt(format!("{}: key column {k} is not a stored column", ta.qualified_name()))
            })?;
            Ok((at, declared.iter().find(|c| &c.name == k).map_or(KeyText::Exact, KeyText::of)))
        })
        .collect::<Result<_>>()?;
    let mut out =
        RowComparison { columns, key, inserted: 0, deleted: 0, changed: 0, unchanged: 0, rows: Vec::new(), next: None };
    // Whether the second side's rows are listed yet: from the start, after the cursor's row, or
    // not at all when the cursor is among the deleted rows.
    let mut listing = after.is_none();
    let mut cursor_met = !matches!(after, Some(After::Other(_)));
    let mut cut = false;

    let mut kept: HashMap<u64, Kept> = HashMap::with_capacity(usize::try_from(ta.rows().max(0)).unwrap_or(0));
    each_row(first, &ta, |position, values| {
        // The catalog's count can be stale (a chain rolled forward): the rows read are bounded too.
        if kept.len() as i64 >= MAX_ROWS_COMPARED {
            return Err(Error::unsupported(format!(
                "{} holds more than {MAX_ROWS_COMPARED} rows: row comparison stops there",
                ta.qualified_name()
            )));
        }
        match kept.entry(hash_key(&key_at, values)) {
            Entry::Occupied(mut e) => e.get_mut().count += 1,
            Entry::Vacant(e) => {
                e.insert(Kept { row: hash_values(values.iter()), position, count: 1 });
            }
        }
        Ok(())
    })?;
    each_row(second, &tb, |position, values| {
        let at_cursor = after == Some(After::Other(position));
        if at_cursor {
            (listing, cursor_met) = (true, true);
        }
        let key_hash = hash_key(&key_at, values);
        let change = match kept.get_mut(&key_hash) {
            Some(k) if k.count > 0 => {
                k.count -= 1;
                if k.row == hash_values(values.iter()) {
                    out.unchanged += 1;
                    return Ok(());
                }
                out.changed += 1;
                RowChange { change: Change::Changed, before: Some((k.position, Vec::new())), after: None }
            }
            _ => {
                out.inserted += 1;
                RowChange { change: Change::Inserted, before: None, after: None }
            }
        };
        if !listing || at_cursor {
            return Ok(());
        }
        if out.rows.len() < limit {
            out.rows.push(RowChange { after: Some((position, values.to_vec())), ..change });
        } else {
            cut = true;
        }
        Ok(())
    })?;
    if let (false, Some(a)) = (cursor_met, after) {
        return Err(Error::not_found(format!("{}: the cursor {a} is no row of the other side", ta.qualified_name())));
    }
    let order = |p: &ScanPosition| (p.page.file, p.page.page, p.slot);
    let mut gone: Vec<(ScanPosition, u32)> =
        kept.values().filter(|k| k.count > 0).map(|k| (k.position, k.count)).collect();
    gone.sort_by_key(|(p, _)| order(p));
    out.deleted = gone.iter().map(|(_, n)| u64::from(*n)).sum();
    let from = match after {
        Some(After::This(a)) => gone.partition_point(|(p, _)| order(p) <= order(&a)),
        _ => 0,
    };
    for (position, _) in &gone[from..] {
        if out.rows.len() == limit {
            cut = true;
            break;
        }
        out.rows.push(RowChange { change: Change::Deleted, before: Some((*position, Vec::new())), after: None });
    }
    out.next = if cut { out.rows.last().and_then(RowChange::cursor) } else { None };
    // The first side's values of the rows listed, read back by position.
    let decoders = TableDecoders::of(first, &ta)?;
    for row in &mut out.rows {
        if let Some((position, values)) = &mut row.before {
            let decoder = decoders.get(decoders.index_for_page(first, position.page)?);
            let decoder = decoder.ok_or_else(|| Error::not_found(format!("{}: no rowset", ta.qualified_name())))?;
            first.scan(&ta).record_at(*position, |record, _| decoder.decode(record, values))?;
        }
    }
    Ok(out)
}

fn column_names(db: &Database, t: &TableInfo) -> Result<Vec<String>> {
    Ok(TableDecoders::of(db, t)?.columns())
}

/// Calls `each` with every row of `t` (its position and values), in scan order.
fn each_row(db: &Database, t: &TableInfo, mut each: impl FnMut(ScanPosition, &[Value]) -> Result<()>) -> Result<()> {
    let decoders = TableDecoders::of(db, t)?;
    let mut values = Vec::new();
    let mut current: Option<(PageId, usize)> = None;
    db.scan(t).records_after(None, |record, location, position| {
        if current.is_none_or(|(p, _)| p != location.page) {
            current = Some((location.page, decoders.index_for_page(db, location.page)?));
        }
        let decoder = decoders
            .get(current.map_or(0, |c| c.1))
            .ok_or_else(|| Error::not_found(format!("{}: no rowset", t.qualified_name())))?;
        decoder.decode(record, &mut values)?;
        each(position, &values)?;
        Ok(Flow::Continue)
    })?;
    Ok(())
}

/// How a key column's values compare, as SQL Server compares them.
///
/// - Character values (char, varchar, nchar, nvarchar) compare as if padded with spaces to the
///   same length (ANSI SQL-92 8.2; Microsoft, "How SQL Server compares strings with trailing
///   spaces", KB 316626): `'a'` and `'a  '` are one key, whatever the collation.
/// - Under a case-insensitive collation ([`crate::collation::ignores_case`]) case does not
///   count either: `'abc'` and `'ABC'` are one key (Unicode's lowercase mapping stands for the
///   collation's case rules). Accent-insensitive collations still compare accents (no
///   decomposition tables here): such keys differing only in accents count as two rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyText {
    /// Not character data: the values as decoded.
    Exact,
    /// Character data: trailing spaces ignored.
    Padded,
    /// Character data under a case-insensitive collation: trailing spaces and case ignored.
    CaseFolded,
}

impl KeyText {
    fn of(column: &crate::catalog::model::ColumnInfo) -> Self {
        use crate::types::SqlType::{Char, NChar, NVarChar, VarChar};
        match column.type_info.sql_type {
            Char | VarChar | NChar | NVarChar if crate::collation::ignores_case(column.collation_id) => {
                KeyText::CaseFolded
            }
            Char | VarChar | NChar | NVarChar => KeyText::Padded,
            _ => KeyText::Exact,
        }
    }
}

/// A 64-bit hash of a row's key, its columns at `key_at` compared as each one's [`KeyText`]
/// says (keys SQL Server takes as equal hash the same, in both databases).
fn hash_key(key_at: &[(usize, KeyText)], values: &[Value]) -> u64 {
    let mut h = DefaultHasher::new();
    for &(at, rule) in key_at {
        match (&values[at], rule) {
            (Value::Text(t), KeyText::Padded) => (2u8, t.trim_end_matches(' ')).hash(&mut h),
            (Value::Text(t), KeyText::CaseFolded) => {
                2u8.hash(&mut h);
                // Char by char: no folded copy of the text.
                for c in t.trim_end_matches(' ').chars().flat_map(char::to_lowercase) {
                    c.hash(&mut h);
                }
                0xffu8.hash(&mut h);
            }
            (v, _) => hash_value(v, &mut h),
        }
    }
    h.finish()
}

/// A 64-bit hash of values as decoded (the same values hash the same in both databases).
fn hash_values<'v>(values: impl Iterator<Item = &'v Value>) -> u64 {
    let mut h = DefaultHasher::new();
    for v in values {
        hash_value(v, &mut h);
    }
    h.finish()
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Int(i) => (1u8, i).hash(h),
        Value::Text(t) => (2u8, t).hash(h),
        Value::Binary(b) => (3u8, b).hash(h),
        Value::DateTime { days, ticks } => (4u8, days, ticks).hash(h),
        Value::OffRow(b) => (5u8, b).hash(h),
    }
}

/// One page that differs between the sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageDifference {
    /// The page.
    pub id: PageId,
    /// Its header on each side: `None` where that side does not hold the page (past its file's
    /// end, or a page a backup did not copy), or holds bytes that are no page header.
    pub headers: [Option<PageHeader>; 2],
    /// Whether each side holds the page at all.
    pub held: [bool; 2],
    /// Where the bytes first differ and how many differ, when both sides hold the page.
    pub bytes: Option<(usize, usize)>,
}

impl PageDifference {
    /// What the first (`side` 0) or second side holds at the page: its page type and owning
    /// table, or why there is none (`not held`, `no page header`).
    pub fn describe(&self, db: &Database, side: usize) -> (String, Option<String>) {
        match (self.held[side], &self.headers[side]) {
            (false, _) => ("not held".into(), None),
            (true, None) => ("no page header".into(), None),
            (true, Some(h)) => {
                (h.page_type.name().into_owned(), db.catalog().owners().of_page(h).map(|o| o.object.clone()))
            }
        }
    }
}

/// A listing of the pages that differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageComparison {
    /// The pages that differ, in file and page order, at most the limit asked for.
    pub pages: Vec<PageDifference>,
    /// Pages looked at on both sides by this call.
    pub compared: u64,
    /// The last page listed, when more pages are left to look at.
    pub next: Option<PageId>,
}

/// The pages of either side whose bytes differ, in page order after `after` (from the first
/// when `None`), at most `limit` of them. Each page is read from both sides' sources (8 KB each,
/// one page at a time): the work is bounded by the files' page counts.
pub fn compare_pages(first: &Database, second: &Database, after: Option<PageId>, limit: usize) -> PageComparison {
    let sources = [first.reader().source(), second.reader().source()];
    let mut files: std::collections::BTreeMap<u16, u32> = Default::default();
    for file in sources.iter().flat_map(|s| s.files()) {
        let pages = files.entry(file.file_id).or_default();
        *pages = (*pages).max(file.page_count);
    }
    let limit = limit.max(1);
    let mut out = PageComparison { pages: Vec::new(), compared: 0, next: None };
    let mut bufs = [vec![0u8; PAGE_SIZE], vec![0u8; PAGE_SIZE]];
    for (&file_id, &page_count) in &files {
        let start = match after {
            Some(a) if a.file > file_id => continue,
            Some(a) if a.file == file_id => a.page.saturating_add(1),
            _ => 0,
        };
        for page in start..page_count {
            let id = PageId::new(file_id, page);
            if out.pages.len() == limit {
                out.next = out.pages.last().map(|p| p.id);
                return out;
            }
            out.compared += 1;
            let mut held = [false; 2];
            for side in 0..2 {
                held[side] = sources[side].read_raw(id, &mut bufs[side]).is_ok();
            }
            let bytes = match held {
                [true, true] => {
                    let differing = bufs[0].iter().zip(&bufs[1]).filter(|(a, b)| a != b).count();
                    if differing == 0 {
                        continue;
                    }
                    let first_byte = bufs[0].iter().zip(&bufs[1]).position(|(a, b)| a != b).unwrap_or(0);
                    Some((first_byte, differing))
                }
                [false, false] => continue,
                _ => None,
            };
            let header = |side: usize| {
                PageHeader::parse(&bufs[side]).ok().filter(|h| held[side] && h.header_version == 1 && h.this_page == id)
            };
            out.pages.push(PageDifference { id, headers: [header(0), header(1)], held, bytes });
        }
    }
    out
}
