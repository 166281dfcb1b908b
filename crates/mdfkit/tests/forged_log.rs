//! The forge's transaction log read back (mdfkit-forge `log`: begin / commit, inserted, deleted
//! and modified heap rows on every page of a 40,000-row table): a forged full backup and log
//! backup restored as a chain, every row compared with the forge's inputs and the changes the
//! forge logged (one transaction left open, whose change undo takes back out); and the same log
//! written as an `.ldf` (its VLFs out of sequence order, unused VLFs after them) listing the same
//! records as the `.trn` (each once when both are given), and its inserted and deleted rows
//! decoded (`mdfkit log --changes`) being the forge's.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use mdfkit::backup::{FromBackup, Lsn};
use mdfkit::log::listing::{list_log, ListedRecord, LogFilter};
use mdfkit::log::redo::StopPoint;
use mdfkit::log::Operation;
use mdfkit::Database;
use mdfkit_forge::backup::{full_backup_with_header, log_backup, SetHeader};
use mdfkit_forge::log::{context, page_id_bytes, Change, ForgedLog, LogTime, LogWriter, PageChange, Transaction};
use mdfkit_forge::page::FORGED_PAGE_LSN;
use mdfkit_forge::record::{Cell, Kind, RecordLayout};
use mdfkit_forge::{forge, live_rows_text, table_units, ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec};

const ROWS: u64 = 40_000;
const PAGE: usize = 8192;
/// Small VLFs, so that the log spans several.
const VLF_SIZE: usize = 16 * 1024;

fn spec() -> Spec {
    let col = |name: &str, ty, gen| ColumnSpec::new(name, ty, gen, Nulls::Never);
    Spec::new("ledger", mdfkit_forge::Version::V904, 11).table(
        TableSpec::new("dbo", "Stock", Layout::Heap, ROWS)
            .column(col("Id", ColType::Int, Gen::Sequence { start: 1, step: 1 }))
            .column(col("Qty", ColType::Int, Gen::Range { lo: 0, hi: 1_000_000 }))
            .column(col("Name", ColType::VarChar(Some(30)), Gen::Length { min: 3, max: 25 })),
    )
}

/// One heap page of the table as the forge wrote it: its rows in slot order.
struct HeapPage {
    id: (u16, u32),
    free_data: usize,
    rows: Vec<Vec<u8>>,
}

/// The table's data pages in the forged files (page type 1, the table's allocation unit in the
/// header), each row cut from its slot offset to the next (the forge writes them one after the
/// other).
fn heap_pages(files: &[mdfkit_forge::ForgedFile], unit: i64) -> Vec<HeapPage> {
    let mut pages = Vec::new();
    for f in files {
        for (n, p) in f.bytes.chunks_exact(PAGE).enumerate() {
            if p[1] != 1 || page_unit(p) != unit {
                continue;
            }
            let (slots, free_data) = (u16_at(p, 22), u16_at(p, 30));
            let offsets: Vec<usize> = (0..slots).map(|s| slot_offset(p, s)).collect();
            let rows =
                (0..slots).map(|s| p[offsets[s]..offsets.get(s + 1).copied().unwrap_or(free_data)].to_vec()).collect();
            pages.push(HeapPage { id: (f.file_id, n as u32), free_data, rows });
        }
    }
    pages
}

fn u16_at(p: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([p[at], p[at + 1]]))
}

/// Where the record in `slot` of a page starts.
fn slot_offset(page: &[u8], slot: usize) -> usize {
    u16_at(page, PAGE - 2 * (slot + 1))
}

/// The allocation unit in a page's header (its index id and object id).
fn page_unit(p: &[u8]) -> i64 {
    (u16_at(p, 6) as i64) << 48 | i64::from(u32::from_le_bytes(p[24..28].try_into().unwrap())) << 16
}

fn int_at(row: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(row[at..at + 4].try_into().unwrap())
}

/// What the forge logged, and the table it leaves (by Id, each row spelled as the forge does).
struct Workload {
    log: ForgedLog,
    expected: BTreeMap<i32, Vec<String>>,
    inserted: usize,
    deleted: usize,
    modified: usize,
    pages: usize,
    /// The rows deleted and inserted, as the forge spells them.
    deleted_rows: Vec<Vec<String>>,
    inserted_rows: Vec<Vec<String>>,
    /// Each committed transaction: its commit's LSN and the rows it set (by Id; `None`: deleted).
    commits: Vec<Commit>,
    /// Where a log backup taken half way through the page transactions ends.
    mid: mdfkit_forge::log::Lsn,
}

/// A committed transaction: its commit's LSN and the rows it set (by Id; `None`: deleted).
type Commit = (mdfkit_forge::log::Lsn, Vec<(i32, Option<Vec<String>>)>);

/// One transaction a page: Qty of slot 1 + 7; on every third page slot 0 deleted; a short
/// row inserted where the page has room for it (into slot 0 where it was just emptied). Then
/// one allocating a new extent to the table and filling its eight pages, and one left open,
/// changing Qty of the first page's slot 2: undo takes it back out.
fn workload(spec: &Spec, files: &[mdfkit_forge::ForgedFile]) -> Workload {
    let (partition, unit) = table_units(0);
    let pages = heap_pages(files, unit);
    let mut expected: BTreeMap<i32, Vec<String>> =
        live_rows_text(spec, 0).map(|r| (r[0].parse().unwrap(), r)).collect();
    let layout = RecordLayout::sequential(&[(Some(4), false), (Some(4), false), (None, false)]);
    let mut log = LogWriter::new(FORGED_PAGE_LSN.vlf + 1, VLF_SIZE);
    let time = |k: usize| LogTime { days: 45_000, ticks: 300 * (9 * 3600 + k as u32) };
    let (mut inserted, mut deleted, mut modified) = (0, 0, 0);
    let (mut deleted_rows, mut inserted_rows) = (Vec::new(), Vec::new());
    let mut next_id = 1_000_000i32;
    let (mut commits, mut mid) = (Vec::new(), None);
    for (i, page) in pages.iter().enumerate() {
        if i == pages.len() / 2 {
            mid = Some(log.backup_point());
        }
        let mut step = Vec::new();
        let change = |slot: u16, change: Change| PageChange {
            page: page.id,
            slot,
            context: context::HEAP,
            unit,
            partition,
            change,
        };
        let mut t = log.begin(&format!("page {i}"), time(2 * i));
        if let Some(row) = page.rows.get(1) {
            let (id, qty) = (int_at(row, 4), int_at(row, 8));
            let after = (qty + 7).to_le_bytes().to_vec();
            log.change(&mut t, &change(1, Change::Modify { offset: 8, before: row[8..12].to_vec(), after }));
            expected.get_mut(&id).unwrap()[1] = (qty + 7).to_string();
            step.push((id, expected.get(&id).cloned()));
            modified += 1;
        }
        let emptied = i % 3 == 0;
        if emptied {
            log.change(&mut t, &change(0, Change::Delete(page.rows[0].clone())));
            deleted_rows.push(expected.remove(&int_at(&page.rows[0], 4)).unwrap());
            step.push((int_at(&page.rows[0], 4), None));
            deleted += 1;
        }
        let name = format!("n{i}");
        let mut row = Vec::new();
        let cells =
            [Cell::Bytes(&next_id.to_le_bytes()), Cell::Bytes(&(i as i32).to_le_bytes()), Cell::Bytes(name.as_bytes())];
        layout.encode(&cells, Kind::Primary, &mut row);
        let (slot, entries) = if emptied { (0, page.rows.len()) } else { (page.rows.len(), page.rows.len() + 1) };
        if page.free_data + row.len() <= PAGE - 2 * entries {
            log.change(&mut t, &change(slot as u16, Change::Insert(row)));
            inserted_rows.push(vec![next_id.to_string(), i.to_string(), name.clone()]);
            expected.insert(next_id, vec![next_id.to_string(), i.to_string(), name]);
            step.push((next_id, expected.get(&next_id).cloned()));
            next_id += 1;
            inserted += 1;
        }
        commits.push((log.commit(t, time(2 * i + 1)), step));
    }
    // A free extent of the primary file (GAM 1:2's bit set) becomes the table's: its GAM bit
    // cleared, its IAM bit set, its pages allocated in PFS 1:1 and formatted, then filled.
    let mut t = log.begin("new extent", time(2 * pages.len()));
    let mut new_rows = Vec::new();
    let extent = allocate_extent(&mut log, &mut t, &files[0].bytes, unit);
    for page in extent * 8..extent * 8 + 8 {
        allocate_page(&mut log, &mut t, &files[0].bytes, page);
        let new_page = |slot: u16, change| PageChange {
            page: (1, page as u32),
            slot,
            context: context::HEAP,
            unit,
            partition,
            change,
        };
        log.change(&mut t, &new_page(0, Change::Format { page_type: 1, pminlen: 12, prev: (0, 0), next: (0, 0) }));
        let (mut used, mut slot) = (96, 0u16);
        loop {
            let name = format!("new {next_id}");
            let cells = [
                Cell::Bytes(&next_id.to_le_bytes()),
                Cell::Bytes(&(page as i32).to_le_bytes()),
                Cell::Bytes(name.as_bytes()),
            ];
            let mut row = Vec::new();
            layout.encode(&cells, Kind::Primary, &mut row);
            if used + row.len() > PAGE - 2 * (usize::from(slot) + 1) {
                break;
            }
            used += row.len();
            log.change(&mut t, &new_page(slot, Change::Insert(row)));
            inserted_rows.push(vec![next_id.to_string(), page.to_string(), name.clone()]);
            expected.insert(next_id, vec![next_id.to_string(), page.to_string(), name.clone()]);
            new_rows.push((next_id, Some(vec![next_id.to_string(), page.to_string(), name])));
            (next_id, slot, inserted) = (next_id + 1, slot + 1, inserted + 1);
        }
    }
    commits.push((log.commit(t, time(2 * pages.len() + 1)), new_rows));
    let first = &pages[0];
    let mut open = log.begin("left open", time(2 * pages.len() + 2));
    let row = &first.rows[2];
    let after = 0i32.to_le_bytes().to_vec();
    log.change(
        &mut open,
        &PageChange {
            page: first.id,
            slot: 2,
            context: context::HEAP,
            unit,
            partition,
            change: Change::Modify { offset: 8, before: row[8..12].to_vec(), after },
        },
    );
    Workload {
        log: log.finish(),
        expected,
        inserted,
        deleted,
        modified,
        pages: pages.len(),
        deleted_rows,
        inserted_rows,
        commits,
        mid: mid.expect("a table of several pages"),
    }
}

/// Logs a free extent of the primary file (`primary`: its bytes; GAM 1:2's bit set) becoming
/// the allocation unit `unit`'s: its GAM bit cleared, its bit set in the unit's IAM page.
/// Returns the extent's number.
fn allocate_extent(log: &mut LogWriter, t: &mut Transaction, primary: &[u8], unit: i64) -> usize {
    let page_at = |n: usize| &primary[n * PAGE..(n + 1) * PAGE];
    let gam = page_at(2);
    let free = |e: &usize| gam[slot_offset(gam, 1) + 4 + e / 8] >> (e % 8) & 1 == 1;
    let extent = (0..primary.len() / PAGE / 8).find(free).expect("a free extent");
    let iam_page = (0..primary.len() / PAGE).find(|&n| page_at(n)[1] == 10 && page_unit(page_at(n)) == unit).unwrap();
    let iam = page_at(iam_page);
    let gam_bit = Change::SetBits { first: 32 + extent as u16, count: 1, value: false };
    log.change(t, &allocation_change(primary, 2, 1, context::GAM, gam_bit));
    let iam_byte = 4 + extent / 8;
    let at = slot_offset(iam, 1) + iam_byte;
    let (before, after) = (vec![iam[at]], vec![iam[at] | 1 << (extent % 8)]);
    let iam_bit = Change::Modify { offset: iam_byte as u16, before, after };
    log.change(t, &allocation_change(primary, iam_page, 1, context::IAM, iam_bit));
    extent
}

/// Logs page `page` of the primary file allocated in PFS 1:1 (its byte 0x40).
fn allocate_page(log: &mut LogWriter, t: &mut Transaction, primary: &[u8], page: usize) {
    let pfs = &primary[PAGE..2 * PAGE];
    let offset = 4 + page;
    let before = vec![pfs[slot_offset(pfs, 0) + offset]];
    let change = Change::Modify { offset: offset as u16, before, after: vec![0x40] };
    log.change(t, &allocation_change(primary, 1, 0, context::PFS, change));
}

/// A change of slot `slot` of allocation page `page` (of the primary file, `primary`).
fn allocation_change(primary: &[u8], page: usize, slot: u16, context: u8, change: Change) -> PageChange {
    let unit = page_unit(&primary[page * PAGE..(page + 1) * PAGE]);
    PageChange { page: (1, page as u32), slot, context, unit, partition: 0, change }
}

/// The forged full backup, log backup (.trn) and log file (.ldf: its VLFs in reverse sequence
/// order, two unused ones after them) in a temporary folder.
struct Forged {
    dir: PathBuf,
    full: PathBuf,
    trn: PathBuf,
    /// The log backup of the log's first half (up to [`Workload::mid`]).
    half: PathBuf,
    ldf: PathBuf,
    work: Workload,
}

impl Drop for Forged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn forged(name: &str) -> Forged {
    let spec = spec();
    let files = forge(&spec).unwrap();
    let work = workload(&spec, &files);
    let dir = std::env::temp_dir().join(format!("mdfkit-forged-log-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = |first, last| set_header(&spec, first, last);
    let (full, trn, ldf) = (dir.join("ledger.bak"), dir.join("ledger_1.trn"), dir.join("ledger_log.ldf"));
    let half = dir.join("ledger_half.trn");
    let first_half = work.log.stream_between(work.log.first_lsn, work.mid);
    std::fs::write(&half, log_backup(&header(work.log.first_lsn, work.mid), &first_half)).unwrap();
    std::fs::write(&full, full_backup_with_header(&files, &header(FORGED_PAGE_LSN, work.log.first_lsn))).unwrap();
    std::fs::write(&trn, log_backup(&header(work.log.first_lsn, work.log.end_lsn), &work.log.stream())).unwrap();
    let order: Vec<usize> = (0..work.log.vlf_count()).rev().collect();
    std::fs::write(&ldf, work.log.ldf(2, &order, 2)).unwrap();
    Forged { dir, full, trn, half, ldf, work }
}

/// Every row of dbo.Stock, by Id.
fn table_rows(db: &Database) -> BTreeMap<i32, Vec<String>> {
    common::table_rows_text(db, "dbo.Stock").into_iter().map(|r| (r[0].parse().unwrap(), r)).collect()
}

#[test]
fn a_forged_chain_restores_every_logged_change() {
    let f = forged("chain");
    let w = &f.work;
    assert!(w.pages > 160 && w.log.vlf_count() > 3, "{} pages, {} VLFs", w.pages, w.log.vlf_count());
    assert!(w.inserted > 1500 && w.deleted > 50 && w.modified > 160, "{} / {} / {}", w.inserted, w.deleted, w.modified);
    println!(
        "{} pages, {} VLFs, {} log records: {} rows inserted, {} deleted, {} modified",
        w.pages,
        w.log.vlf_count(),
        w.log.records,
        w.inserted,
        w.deleted,
        w.modified
    );
    let before = Database::open(std::slice::from_ref(&f.full)).unwrap();
    assert_eq!(table_rows(&before).len(), ROWS as usize, "the full backup alone holds the forged rows");
    let db = Database::open(&[f.full.clone(), f.trn.clone()]).unwrap();
    let rows = table_rows(&db);
    assert_eq!(rows.len(), w.expected.len(), "{} rows", ROWS as usize + w.inserted - w.deleted);
    let wrong: Vec<_> = w.expected.iter().filter(|(id, row)| rows.get(id) != Some(row)).take(5).collect();
    assert!(wrong.is_empty(), "rows differing from the forge's: {wrong:?}");
}

fn listed(paths: &[PathBuf]) -> Vec<ListedRecord> {
    let mut out = Vec::new();
    list_log(paths, None, &LogFilter::default(), |r| {
        out.push(r);
        Ok(())
    })
    .unwrap();
    out
}

/// What a listing says of a record, the file it came from aside.
fn summary(r: &ListedRecord) -> String {
    format!(
        "{:?} {} {} {} {:?} {:?} {:?} {} {:?} {:?}",
        r.lsn,
        r.operation.name(),
        r.context.name(),
        r.transaction_id,
        r.transaction_name,
        r.page,
        r.slot,
        r.length,
        r.previous_lsn,
        r.end_time
    )
}

#[test]
fn the_ldf_lists_the_records_of_the_trn() {
    let f = forged("ldf");
    let w = &f.work;
    let from_trn = listed(std::slice::from_ref(&f.trn));
    let from_ldf = listed(std::slice::from_ref(&f.ldf));
    assert_eq!(from_trn.len(), w.log.records, "every forged record from the .trn");
    let count = |op| from_ldf.iter().filter(|r| r.operation == op).count();
    assert_eq!(count(Operation::INSERT_ROWS), w.inserted);
    assert_eq!(count(Operation::DELETE_ROWS), w.deleted);
    assert_eq!(count(Operation::MODIFY_ROW), w.modified + 1 + 1 + 8, "rows, the open one, IAM, PFS");
    assert_eq!((count(Operation::BEGIN_XACT), count(Operation::COMMIT_XACT)), (w.pages + 2, w.pages + 1));
    assert_eq!((count(Operation::FORMAT_PAGE), count(Operation::SET_BITS)), (8, 1));
    let trn: Vec<String> = from_trn.iter().map(summary).collect();
    let ldf: Vec<String> = from_ldf.iter().map(summary).collect();
    assert!(trn == ldf, "the .ldf lists the .trn's records");
    assert!(from_ldf.iter().all(|r| r.file == f.ldf));
    assert_eq!(from_ldf.last().unwrap().transaction_name.as_deref(), Some("left open"));

    let both = listed(&[f.trn.clone(), f.ldf.clone()]);
    assert!(both.iter().map(summary).eq(trn.iter().cloned()), "the .trn and .ldf together: each record once");

    // `mdfkit log --changes`: the rows the log inserted and deleted, decoded with the full
    // backup's catalog, are the forge's.
    let db = Database::open(std::slice::from_ref(&f.full)).unwrap();
    let (_, changes) = mdfkit::log_changes::table_changes(&db, std::slice::from_ref(&f.ldf), "dbo.Stock").unwrap();
    let rows_of = |kind: &str| {
        let mut rows: Vec<Vec<String>> = changes
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| c.values.iter().map(|v| v.to_string()).collect())
            .collect();
        rows.sort();
        rows
    };
    let sorted = |rows: &[Vec<String>]| {
        let mut rows = rows.to_vec();
        rows.sort();
        rows
    };
    assert_eq!(rows_of("delete"), sorted(&w.deleted_rows), "deleted rows from the .ldf");
    assert_eq!(rows_of("insert"), sorted(&w.inserted_rows), "inserted rows from the .ldf");

    let file = mdfkit::log::ldf::LogFile::open(&f.ldf).unwrap();
    let vlfs = file.vlfs();
    assert_eq!(vlfs.len(), w.log.vlf_count() + 2);
    let sequences: Vec<u32> = vlfs.iter().map(|v| v.sequence).collect();
    let first = FORGED_PAGE_LSN.vlf + 1;
    let mut wanted: Vec<u32> = (first..first + w.log.vlf_count() as u32).rev().collect();
    wanted.extend([0, 0]);
    assert_eq!(sequences, wanted, "VLF sequence numbers in file order");
    assert!(vlfs.iter().all(|v| v.size == VLF_SIZE as u64 && v.parity == (v.sequence != 0).then_some(0x40)));
    assert_eq!(file.file_id(), 2);
}

fn lsn(l: mdfkit_forge::log::Lsn) -> Lsn {
    Lsn { vlf: l.vlf, block: l.block, slot: l.slot }
}

/// The table as the forge's inputs leave it after its first `n` committed transactions.
fn expected_after(w: &Workload, n: usize) -> BTreeMap<i32, Vec<String>> {
    let mut rows: BTreeMap<i32, Vec<String>> = live_rows_text(&spec(), 0).map(|r| (r[0].parse().unwrap(), r)).collect();
    for (id, row) in w.commits[..n].iter().flat_map(|(_, step)| step) {
        match row {
            Some(row) => rows.insert(*id, row.clone()),
            None => rows.remove(id),
        };
    }
    rows
}

fn assert_rows(db: &Database, expected: &BTreeMap<i32, Vec<String>>, what: &str) {
    let rows = table_rows(db);
    let wrong: Vec<_> = expected.iter().filter(|(id, row)| rows.get(id) != Some(row)).take(3).collect();
    assert!(
        rows.len() == expected.len() && wrong.is_empty(),
        "{what}: {} rows, {} expected; {wrong:?}",
        rows.len(),
        expected.len()
    );
}

#[test]
fn an_ldf_is_the_tail_of_a_chain() {
    let f = forged("tail");
    let w = &f.work;
    assert_eq!(expected_after(w, w.commits.len()), w.expected, "the forge's steps add up to its end state");
    // Full + the first half's log backup + the log file (holding the whole log): the rows the
    // whole log as a log backup gives, which are the forge's.
    let db = Database::open(&[f.full.clone(), f.half.clone(), f.ldf.clone()]).unwrap();
    assert_rows(&db, &w.expected, "full + half .trn + .ldf");
    let plan = db.reader().source().restore_plan().unwrap();
    let tail = plan.tail.as_ref().expect("the plan names the log file");
    assert_eq!((tail.file.as_path(), tail.follows, tail.gap), (f.ldf.as_path(), lsn(w.mid), None));
    assert_eq!((tail.first_lsn, tail.last_lsn.map(|l| l > lsn(w.mid))), (Some(lsn(w.log.first_lsn)), Some(true)));
    assert!(tail.records_after > 0 && tail.records_after < w.log.records, "{tail:?}");
    assert!(
        plan.notices().iter().any(|n| n.contains("rolled forward with the tail of the log file")),
        "{:?}",
        plan.notices()
    );
    let without_tail = Database::open(&[f.full.clone(), f.half.clone()]).unwrap();
    assert_rows(&without_tail, &expected_after(w, w.pages / 2), "full + half .trn");

    // A full backup and the log file alone (the file's log starts where the backup ends).
    let db = Database::open(&[f.full.clone(), f.ldf.clone()]).unwrap();
    assert_rows(&db, &w.expected, "full + .ldf");

    // Stop points inside the tail: at a commit's LSN, and at a commit's time.
    // (A page transaction that deletes a row and inserts one into its slot: undone at the stop
    // before its commit, the deleted row goes back where the page is reorganized for it.)
    let k = (w.commits.len() * 3 / 4) / 3 * 3;
    let at = lsn(w.commits[k].0);
    assert!(at > lsn(w.mid));
    let files = [f.full.clone(), f.half.clone(), f.ldf.clone()];
    let db = Database::open_until(&files, None, StopPoint::Lsn { at, included: true }).unwrap();
    assert_rows(&db, &expected_after(w, k + 1), "--stopatlsn inside the .ldf");
    let before = Database::open_until(&files, None, StopPoint::Lsn { at, included: false }).unwrap();
    assert_rows(&before, &expected_after(w, k), "--stopbeforemark lsn: inside the .ldf");
    let ticks = 300 * (9 * 3600 + 2 * k as u32 + 1);
    let db = Database::open_until(&files, None, StopPoint::Time { days: 45_000, ticks }).unwrap();
    assert_rows(&db, &expected_after(w, k + 1), "--stopat inside the .ldf");

    // The log file without the VLF holding the log after the half backup (reused): the gap is
    // named by its LSNs and nothing of the file past it is applied.
    let first_vlf = FORGED_PAGE_LSN.vlf + 1;
    let reused = (w.mid.vlf - first_vlf) as usize;
    let order: Vec<usize> = (0..w.log.vlf_count()).filter(|&v| v != reused).collect();
    let gapped = f.dir.join("ledger_gapped.ldf");
    std::fs::write(&gapped, w.log.ldf(2, &order, 1)).unwrap();
    let db = Database::open(&[f.full.clone(), f.half.clone(), gapped.clone()]).unwrap();
    assert_rows(&db, &expected_after(w, w.pages / 2), "full + half .trn + an .ldf after a gap");
    let tail = db.reader().source().restore_plan().unwrap().tail.clone().unwrap();
    let next = Lsn { vlf: w.mid.vlf + 1, block: 0x10, slot: 1 };
    assert_eq!((tail.gap, tail.records_after), (Some((lsn(w.mid), next)), 0));
    assert!(tail.describe().contains(&format!("the log from LSN {} to LSN {next}", lsn(w.mid))), "{}", tail.describe());
    assert!(db.reader().source().notes().iter().any(|n| n.contains("(log gap)")));

    // Two log files are refused by name, not read as one.
    let err = Database::open(&[f.full.clone(), f.ldf.clone(), gapped]).err().expect("refused").to_string();
    assert!(err.contains("2 transaction log files (.ldf) given"), "{err}");
}

/// A page split of a clustered index, logged as SQL Server logs one (its transaction in the
/// cube-query-history chain, LSN 18:118): the new page allocated (GAM, IAM, PFS) and formatted
/// linked between the page and its next one, the upper half of the page's rows inserted into it
/// in one LOP_INSERT_ROWS, LOP_DELETE_SPLIT taking them off the page, both neighbours' links
/// changed (LOP_MODIFY_HEADER), the new page's index row inserted into the parent; then a user
/// transaction changing a moved row and a row left behind. The chain restores every row.
#[test]
fn a_page_split_is_rolled_forward() {
    let col = |name: &str, ty, gen| ColumnSpec::new(name, ty, gen, Nulls::Never);
    let spec = Spec::new("split", mdfkit_forge::Version::V904, 12).table(
        TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 6_000)
            .column(col("Id", ColType::Int, Gen::Sequence { start: 1, step: 1 }))
            .column(col("Qty", ColType::Int, Gen::Range { lo: 0, hi: 1_000_000 }))
            .column(col("Name", ColType::VarChar(Some(30)), Gen::Length { min: 3, max: 25 })),
    );
    let files = forge(&spec).unwrap();
    let (partition, unit) = table_units(0);
    let leaves = heap_pages(&files, unit);
    let primary = &files[0].bytes;
    let page_at = |(file, n): (u16, u32)| {
        let f = files.iter().find(|f| f.file_id == file).unwrap();
        &f.bytes[n as usize * PAGE..(n as usize + 1) * PAGE]
    };
    let link = |p: &[u8], at: usize| (u16_at(p, at + 4) as u16, u32::from_le_bytes(p[at..at + 4].try_into().unwrap()));
    // A leaf page in the middle of the chain, its next page, and the index page that points at it.
    let split = &leaves[leaves.len() / 2];
    let next = link(page_at(split.id), 16);
    assert_ne!(next, (0, 0), "the split page has a next page");
    let child = page_id_bytes(split.id);
    let (parent, parent_slot) = (0..primary.len() / PAGE)
        .filter(|&n| primary[n * PAGE + 1] == 2 && page_unit(&primary[n * PAGE..(n + 1) * PAGE]) == unit)
        .find_map(|n| {
            let p = &primary[n * PAGE..(n + 1) * PAGE];
            (0..u16_at(p, 22))
                .find(|&s| {
                    let end = if s + 1 < u16_at(p, 22) { slot_offset(p, s + 1) } else { u16_at(p, 30) };
                    p[end - 6..end] == child
                })
                .map(|s| ((1u16, n as u32), s))
        })
        .expect("the index row of the split page");

    let mut log = LogWriter::new(FORGED_PAGE_LSN.vlf + 1, VLF_SIZE);
    let time = |k: u32| LogTime { days: 45_000, ticks: 300 * (10 * 3600 + k) };
    let mut t = log.begin("SplitPage", time(0));
    let extent = allocate_extent(&mut log, &mut t, primary, unit);
    let new_page = (1u16, (extent * 8) as u32);
    allocate_page(&mut log, &mut t, primary, extent * 8);
    let change = |page, slot, context, change| PageChange { page, slot, context, unit, partition, change };
    let pminlen = u16_at(page_at(split.id), 14) as u16;
    let format = Change::Format { page_type: 1, pminlen, prev: split.id, next };
    log.change(&mut t, &change(new_page, 0xffff, context::CLUSTERED, format));
    let from = split.rows.len() / 2;
    let moved: Vec<Vec<u8>> = split.rows[from..].to_vec();
    let moved_bytes = moved.iter().map(|r| r.len() + 2).sum::<usize>() as u16;
    log.change(&mut t, &change(new_page, 0, context::CLUSTERED, Change::InsertMoved(moved.clone())));
    let count = moved.len() as u16;
    let delete = Change::DeleteSplit { new_page, count, moved: moved_bytes };
    log.change(&mut t, &change(split.id, from as u16, context::CLUSTERED, delete));
    let relink = |offset: u16, before: (u16, u32)| Change::ModifyHeader {
        offset,
        before: page_id_bytes(before).to_vec(),
        after: page_id_bytes(new_page).to_vec(),
    };
    log.change(&mut t, &change(split.id, 0, context::HEAP, relink(16, next)));
    log.change(&mut t, &change(next, 0, context::HEAP, relink(8, split.id)));
    let mut index_row = vec![3 << 1];
    index_row.extend_from_slice(&moved[0][4..8]);
    index_row.extend_from_slice(&page_id_bytes(new_page));
    log.change(&mut t, &change(parent, parent_slot as u16 + 1, context::INDEX_INTERIOR, Change::Insert(index_row)));
    log.commit(t, time(1));

    // A user transaction after the split: Qty of the first moved row (now slot 0 of the new
    // page) and of the split page's first row set to -1.
    let mut expected: BTreeMap<i32, Vec<String>> =
        live_rows_text(&spec, 0).map(|r| (r[0].parse().unwrap(), r)).collect();
    let mut u = log.begin("update", time(2));
    for (page, row) in [(new_page, &moved[0]), (split.id, &split.rows[0])] {
        let modify = Change::Modify { offset: 8, before: row[8..12].to_vec(), after: (-1i32).to_le_bytes().to_vec() };
        log.change(&mut u, &change(page, 0, context::CLUSTERED, modify));
        expected.get_mut(&int_at(row, 4)).unwrap()[1] = "-1".to_string();
    }
    log.commit(u, time(3));
    let log = log.finish();

    let db = restore_forged(&spec, &files, &log);
    let scanned = common::table_rows_text(&db, "dbo.Orders");
    // In key order, through the new page (the leaf chain holds it between its neighbours).
    let ids: Vec<i32> = scanned.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(ids, (1..=6_000).collect::<Vec<_>>());
    let rows: BTreeMap<i32, Vec<String>> = scanned.into_iter().map(|r| (r[0].parse().unwrap(), r)).collect();
    let wrong: Vec<_> = expected.iter().filter(|(id, row)| rows.get(id) != Some(row)).take(3).collect();
    assert!(wrong.is_empty(), "rows differing from the forge's: {wrong:?}");
    let notes = db.reader().source().notes().join("\n");
    assert!(!notes.contains("cannot be read"), "{notes}");
}

/// A LOB value's off-row fragment (text page, LCX_TEXT_MIX) changed in the log, and another's
/// replaced: a new fragment inserted into a free slot of a text page, the row's LOB root
/// pointed at it (LOP_MODIFY_ROW of the data row), the old fragment deleted. The chain
/// restores both values as changed and every other value as forged.
#[test]
fn lob_fragments_changed_in_the_log_are_read() {
    let col = |name: &str, ty, gen| ColumnSpec::new(name, ty, gen, Nulls::Never);
    let spec = Spec::new("docs", mdfkit_forge::Version::V904, 13).table(
        TableSpec::new("dbo", "Docs", Layout::Heap, 200)
            .column(col("Id", ColType::Int, Gen::Sequence { start: 1, step: 1 }))
            .column(col("Body", ColType::VarChar(None), Gen::Length { min: 8_100, max: 8_600 })),
    );
    let files = forge(&spec).unwrap();
    let (partition, unit) = table_units(0);
    let lob_unit = unit + (1 << 16);
    // Each row's LOB root (status 4, level 0, one link a chunk: end offset, page, slot): the
    // second link's place in the row, and the fragment it names.
    struct Lob {
        row_page: (u16, u32),
        row_slot: u16,
        link_at: usize,
        id: i32,
        fragment: ((u16, u32), u16),
    }
    let mut lobs = Vec::new();
    for page in heap_pages(&files, unit) {
        for (slot, row) in page.rows.iter().enumerate() {
            let root = row.windows(8).position(|w| w == [4, 0, 0, 0, 1, 0, 0, 0]).expect("a LOB root");
            let link_at = root + 12 + 12 + 4;
            let fragment = (
                (u16_at(row, link_at + 4) as u16, u32::from_le_bytes(row[link_at..link_at + 4].try_into().unwrap())),
                u16_at(row, link_at + 6) as u16,
            );
            lobs.push(Lob { row_page: page.id, row_slot: slot as u16, link_at, id: int_at(row, 4), fragment });
        }
    }
    let fragment_at = |((file, page), slot): ((u16, u32), u16)| {
        let f = files.iter().find(|f| f.file_id == file).unwrap();
        let p = &f.bytes[page as usize * PAGE..(page as usize + 1) * PAGE];
        assert_eq!((p[1], page_unit(p)), (3, lob_unit), "a text page of the table's LOB unit");
        let at = slot_offset(p, usize::from(slot));
        (p[at..at + u16_at(p, at + 2)].to_vec(), u16_at(p, 22) as u16)
    };
    let mut expected: BTreeMap<i32, Vec<String>> =
        live_rows_text(&spec, 0).map(|r| (r[0].parse().unwrap(), r)).collect();

    let mut log = LogWriter::new(FORGED_PAGE_LSN.vlf + 1, VLF_SIZE);
    let time = |k: u32| LogTime { days: 45_000, ticks: 300 * (11 * 3600 + k) };
    let text =
        |page, slot, change| PageChange { page, slot, context: context::TEXT_MIX, unit: lob_unit, partition, change };
    let mut t = log.begin("UPDATE", time(0));
    // Three bytes of the first value's second fragment (its body from +14) become "~~~".
    let a = &lobs[0];
    let (fragment, _) = fragment_at(a.fragment);
    let modify = Change::Modify { offset: 14, before: fragment[14..17].to_vec(), after: b"~~~".to_vec() };
    log.change(&mut t, &text(a.fragment.0, a.fragment.1, modify));
    // (The values' text is in code page 1252: one character a stored byte.)
    let chars = |text: &str| text.chars().collect::<Vec<char>>();
    let mut value = chars(&expected[&a.id][1]);
    value[8040..8043].copy_from_slice(&['~'; 3]);
    expected.get_mut(&a.id).unwrap()[1] = value.into_iter().collect();
    // The second value's second fragment replaced by one of as many 'Q's in a new slot.
    let b = &lobs[1];
    let (old, slots) = fragment_at(b.fragment);
    let mut new = old[..14].to_vec();
    new.resize(old.len(), b'Q');
    log.change(&mut t, &text(b.fragment.0, slots, Change::Insert(new)));
    let row = |page, slot, change| PageChange { page, slot, context: context::HEAP, unit, partition, change };
    let (link_before, link_after) = (id_and_slot(b.fragment.0, b.fragment.1), id_and_slot(b.fragment.0, slots));
    let modify = Change::Modify { offset: b.link_at as u16, before: link_before.to_vec(), after: link_after.to_vec() };
    log.change(&mut t, &row(b.row_page, b.row_slot, modify));
    log.change(&mut t, &text(b.fragment.0, b.fragment.1, Change::Delete(old.clone())));
    let mut value = chars(&expected[&b.id][1]);
    value[8040..].fill('Q');
    expected.get_mut(&b.id).unwrap()[1] = value.into_iter().collect();
    log.commit(t, time(1));
    let log = log.finish();

    let db = restore_forged(&spec, &files, &log);
    let rows: BTreeMap<i32, Vec<String>> =
        common::table_rows_text(&db, "dbo.Docs").into_iter().map(|r| (r[0].parse().unwrap(), r)).collect();
    assert_eq!(rows.len(), expected.len());
    let wrong: Vec<_> = expected.iter().filter(|(id, row)| rows.get(id) != Some(row)).map(|(id, _)| id).collect();
    assert!(wrong.is_empty(), "values differing from the forge's: Ids {wrong:?}");
}

/// A LOB link's page id and slot (8 bytes: u32 page, u16 file, u16 slot).
fn id_and_slot(page: (u16, u32), slot: u16) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&page_id_bytes(page));
    b[6..].copy_from_slice(&slot.to_le_bytes());
    b
}

/// The header of a backup set of the forged database `spec` holding the log from `first` to
/// `last` (its checkpoint at the forged pages' LSN).
fn set_header(spec: &Spec, first: mdfkit_forge::log::Lsn, last: mdfkit_forge::log::Lsn) -> SetHeader {
    SetHeader {
        database: spec.name.clone(),
        dbi_version: spec.version.dbi_version(),
        first_lsn: first,
        last_lsn: last,
        checkpoint_lsn: FORGED_PAGE_LSN,
        database_backup_lsn: FORGED_PAGE_LSN,
    }
}

/// `files` (a forged database) as a full backup and `log` as the log backup after it, restored.
fn restore_forged(spec: &Spec, files: &[mdfkit_forge::ForgedFile], log: &ForgedLog) -> Database {
    let dir = std::env::temp_dir().join(format!("mdfkit-forged-{}-{}", spec.name, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (full, trn) = (dir.join("full.bak"), dir.join("log_1.trn"));
    let header = |first, last| set_header(spec, first, last);
    std::fs::write(&full, full_backup_with_header(files, &header(FORGED_PAGE_LSN, log.first_lsn))).unwrap();
    std::fs::write(&trn, log_backup(&header(log.first_lsn, log.end_lsn), &log.stream())).unwrap();
    let db = Database::open(&[full, trn]);
    let _ = std::fs::remove_dir_all(&dir);
    db.unwrap()
}
