//! The transaction log in the corpus backups (`MDFKIT_CORPUS`): the log portion of every full
//! and differential backup and every log backup of `chains/` reads block by block, and what the
//! records say agrees with facts known without our reader: the backup headers' LSNs and dates,
//! the boot page's address, the marked transaction `dbatoolstest` of the StopAt chain (and
//! EXPECTED.json's `AFTER '2020-05-12 13:33:35'` for its second mark), and the allocation unit
//! of `dbo.steps` in the catalog.

mod common;

use std::path::{Path, PathBuf};

use mdfkit::backup::{BackupMedia, BackupType, Lsn};
use mdfkit::log::redo::{Commits, StopPoint};
use mdfkit::log::{for_each_record, BackupLog, Context, Operation};
use mdfkit::{Database, PageId};

struct Seen {
    lsn: Lsn,
    op: Operation,
    context: Context,
    page: Option<PageId>,
    partition: Option<u64>,
    name: Option<String>,
    time: Option<String>,
    images_fit: bool,
}

/// The records of the backup set in `file` that belong to it, and the set's header.
fn records(file: &Path) -> (mdfkit::backup::BackupSet, Vec<Seen>) {
    let media = BackupMedia::open(&[file]).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let position = media.sets().last().unwrap().position;
    let log = BackupLog::new(&media, position).unwrap();
    let set = log.backup_set().clone();
    let mut seen = Vec::new();
    let mut held = Vec::new();
    for block in BackupLog::new(&media, position).unwrap() {
        let block = block.unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for_each_record(&block, |r| {
            held.push(r.lsn);
            if log.holds(r.lsn) {
                seen.push(Seen {
                    lsn: r.lsn,
                    op: r.operation(),
                    context: r.context(),
                    page: r.page_id(),
                    partition: r.partition_id(),
                    name: r.transaction_name(),
                    time: r.time().map(|t| t.to_string()),
                    images_fit: r.row_images().is_ok(),
                });
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    // LSNs rise through the stream, record after record.
    assert!(held.windows(2).all(|w| w[0] < w[1]), "{}: LSNs out of order", file.display());
    (set, seen)
}

fn chain(dir: &Path, folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir.join("chains").join(folder)).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Every log portion of the 2008 R2 and later chains reads, each record's row images end inside
/// it, records lie within their backup's LSN range, and boot page checkpoint records name 1:9.
#[test]
fn every_chain_log_reads_within_its_backups_lsns() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut total = 0;
    for folder in ["restoretimeclean", "stopat", "stopat-later-logs", "simplerecovery", "difftest", "stripe"] {
        for file in chain(&dir, folder) {
            let (set, seen) = records(&file);
            for r in &seen {
                assert!(
                    r.lsn < set.last_lsn,
                    "{}: {:?} at or past the last LSN {}",
                    file.display(),
                    r.lsn,
                    set.last_lsn
                );
                if set.backup_type == BackupType::Log {
                    assert!(r.lsn >= set.first_lsn, "{}: {:?} before the first LSN", file.display(), r.lsn);
                }
                assert!(
                    r.images_fit,
                    "{}: {:?} {}: row images run past the record",
                    file.display(),
                    r.lsn,
                    r.op.name()
                );
                if r.context.name() == "LCX_BOOT_PAGE_CKPT" {
                    assert_eq!(r.page, Some(PageId::new(1, 9)), "{}: {:?}", file.display(), r.lsn);
                }
            }
            if set.backup_type == BackupType::Log && set.first_lsn < set.last_lsn && set.family_count == 1 {
                assert!(!seen.is_empty(), "{}: a log backup with no records", file.display());
            }
            total += seen.len();
        }
    }
    assert!(total > 1000, "only {total} records in the chains");
}

/// Commits recorded in each RestoreTimeClean log backup happened after the previous log backup
/// began and no later than this one finished (the headers' dates, to the second).
#[test]
fn commit_times_fall_between_consecutive_log_backups() {
    let Some(dir) = common::corpus_dir() else { return };
    let folder = dir.join("chains/restoretimeclean");
    for (previous, this) in [
        ("RestoreTimeClean_1.trn", "RestoreTimeClean_2.trn"),
        ("RestoreTimeClean_2.trn", "RestoreTimeClean_3.trn"),
        ("RestoreTimeClean2_1.trn", "RestoreTimeClean2_2.trn"),
        ("RestoreTimeClean2_2.trn", "RestoreTimeClean2_3.trn"),
    ] {
        let (before, _) = records(&folder.join(previous));
        let (set, seen) = records(&folder.join(this));
        assert_eq!(before.last_lsn, set.first_lsn);
        let from = before.start.unwrap().to_string();
        let to = set.finish.unwrap().to_string();
        let commits: Vec<&str> =
            seen.iter().filter(|r| r.op == Operation::COMMIT_XACT).filter_map(|r| r.time.as_deref()).collect();
        assert!(!commits.is_empty(), "{this}: no commits");
        for t in commits {
            assert!(t[..19] >= from[..19] && t[..19] <= to[..19], "{this}: commit at {t}, outside {from} .. {to}");
        }
    }
}

/// The StopAt chain's marked transaction: `BEGIN TRAN dbatoolstest WITH MARK` in StopAt_21.trn,
/// between the previous log backup's finish and its own, and again in StopAt_23.trn after
/// 2020-05-12 13:33:35 (EXPECTED.json's STOPATMARK ... AFTER).
#[test]
fn the_marked_transaction_appears_with_its_name_and_time() {
    let Some(dir) = common::corpus_dir() else { return };
    let later = dir.join("chains/stopat-later-logs");
    let (previous, _) = records(&dir.join("chains/stopat/StopAt_2.trn"));
    let (set, seen) = records(&later.join("StopAt_21.trn"));
    let marks: Vec<&Seen> = seen.iter().filter(|r| r.name.as_deref() == Some("dbatoolstest")).collect();
    assert_eq!(marks.len(), 1, "StopAt_21.trn");
    assert_eq!(marks[0].op, Operation::BEGIN_XACT);
    let begin = marks[0].time.as_deref().unwrap();
    assert!(
        begin[..19] >= previous.finish.unwrap().to_string()[..19]
            && begin[..19] <= set.finish.unwrap().to_string()[..19]
    );
    let (_, seen) = records(&later.join("StopAt_23.trn"));
    let after: Vec<&str> = seen
        .iter()
        .filter(|r| r.name.as_deref() == Some("dbatoolstest"))
        .filter_map(|r| r.time.as_deref())
        .filter(|t| t[..19] >= *"2020-05-12 13:33:35")
        .collect();
    assert!(!after.is_empty(), "StopAt_23.trn: no dbatoolstest transaction after 13:33:35");
}

/// Row inserts into `dbo.steps` in the log backups carry the partition id the catalog gives
/// dbo.steps (`sys.partitions`), and land on pages of its file.
#[test]
fn inserts_into_steps_name_its_partition() {
    let Some(dir) = common::corpus_dir() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let db = Database::open(&[folder.join("RestoreTimeClean.bak")]).unwrap();
    let names = mdfkit::log_changes::partition_names(&db);
    let steps = db.catalog().find_table("dbo.steps").unwrap().partitions[0].partition_id as u64;
    assert_eq!(names.get(&steps).map(String::as_str), Some("dbo.steps"));
    let mut inserts = 0;
    for file in ["RestoreTimeClean_1.trn", "RestoreTimeClean_2.trn", "RestoreTimeClean_3.trn"] {
        let (_, seen) = records(&folder.join(file));
        for r in seen.iter().filter(|r| r.op == Operation::INSERT_ROWS && r.context.name() == "LCX_HEAP") {
            if r.partition == Some(steps) {
                inserts += 1;
                assert_eq!(r.page.unwrap().file, 1);
            }
        }
    }
    assert!(inserts > 0, "no insert into dbo.steps in the log backups");
    // StopAt's log creates dbo.steps' first pages: its LOP_ROOT_CHANGE records name its rowset.
    let stopat = Database::open_until(&[dir.join("chains/stopat/StopAt.bak")], None, StopPoint::NoLog).unwrap();
    let steps = stopat.catalog().find_table("dbo.steps").unwrap().partitions[0].partition_id as u64;
    let (_, seen) = records(&dir.join("chains/stopat/StopAt_1.trn"));
    let roots: Vec<Option<u64>> = seen.iter().filter(|r| r.op == Operation::ROOT_CHANGE).map(|r| r.partition).collect();
    assert_eq!(roots, [Some(steps); 3]);
}

/// The chain's EXPECTED.json entry for `folder`.
fn expected(dir: &Path, folder: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    all["chains"].as_array().unwrap().iter().filter(|c| c["folder"] == folder).cloned().collect()
}

/// The rows RestoreTimeClean's whole log inserted into dbo.steps (the full backup holds it
/// empty, nothing is deleted): their `dt` span what a real restore of the chain holds, and those
/// of transactions committed by STOPAT '2017-06-01 13:22:44' what the point-in-time restore
/// holds (EXPECTED.json, to the second).
#[test]
fn the_log_inserts_the_rows_a_restore_of_the_chain_holds() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = chain(&dir, "restoretimeclean");
    let db = Database::open(&[dir.join("chains/restoretimeclean/RestoreTimeClean.bak")]).unwrap();
    let (columns, changes) = mdfkit::log_changes::table_changes(&db, &files, "dbo.steps").unwrap();
    let dt = columns.iter().position(|c| c == "dt").unwrap();
    assert!(changes.iter().all(|c| c.kind == "insert" && c.note.is_none() && c.committed == Some(true)));
    let seconds = |c: &mdfkit::log_changes::RowChange| c.values[dt].to_string()[..19].to_string();
    for case in expected(&dir, "restoretimeclean") {
        let stopat = case["stopat"].as_str();
        let mut dts: Vec<String> = changes
            .iter()
            .filter(|c| stopat.is_none_or(|s| c.end_time.as_ref().unwrap().to_string()[..19] <= *s))
            .map(seconds)
            .collect();
        dts.sort();
        assert_eq!(dts.first().map(String::as_str), case["min_dt"].as_str(), "{case}");
        assert_eq!(dts.last().map(String::as_str), case["max_dt"].as_str(), "{case}");
    }
}

/// The StopAt chain's marks, from the rows the log inserted into dbo.steps: the largest `step`
/// committed up to the mark transaction `dbatoolstest` (STOPATMARK), before it
/// (STOPBEFOREMARK), and up to its second use after 2020-05-12 13:33:35 (STOPATMARK ... AFTER):
/// EXPECTED.json's max_step values.
#[test]
fn the_marks_split_the_stopat_rows_as_expected() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut files = chain(&dir, "stopat");
    files.extend(chain(&dir, "stopat-later-logs"));
    let db = Database::open(&[dir.join("chains/stopat/StopAt.bak")]).unwrap();
    let (columns, changes) = mdfkit::log_changes::table_changes(&db, &files, "dbo.steps").unwrap();
    let step = columns.iter().position(|c| c == "step").unwrap();
    let marks: Vec<&mdfkit::log_changes::RowChange> =
        changes.iter().filter(|c| c.transaction_name.as_deref() == Some("dbatoolstest")).collect();
    let first = marks.first().unwrap();
    let after =
        marks.iter().find(|c| c.begin_time.as_ref().unwrap().to_string()[..19] >= *"2020-05-12 13:33:35").unwrap();
    let max_step = |until: Lsn, inclusive: bool| {
        changes
            .iter()
            .filter(|c| c.committed == Some(true))
            .filter(|c| if inclusive { c.end_lsn.unwrap() <= until } else { c.end_lsn.unwrap() < until })
            .map(|c| match c.values[step] {
                mdfkit::value::Value::Int(v) => v,
                ref v => panic!("step {v:?}"),
            })
            .max()
            .unwrap()
    };
    let case = &expected(&dir, "stopat + stopat-later-logs")[0]["expect"];
    assert_eq!(max_step(first.end_lsn.unwrap(), true), case["STOPATMARK 'dbatoolstest'"]["max_step"].as_i64().unwrap());
    assert_eq!(
        max_step(first.end_lsn.unwrap(), false),
        case["STOPBEFOREMARK 'dbatoolstest'"]["max_step"].as_i64().unwrap()
    );
    assert_eq!(
        max_step(after.end_lsn.unwrap(), true),
        case["STOPATMARK 'dbatoolstest' AFTER '2020-05-12 13:33:35'"]["max_step"].as_i64().unwrap()
    );
}

/// The mark stop points of the redo ([`StopPoint::Mark`]) keep exactly the transactions whose
/// inserts give EXPECTED.json's max_step for STOPATMARK, STOPBEFOREMARK and STOPATMARK ... AFTER
/// (from the log's own row images; `the_stopat_chain_reads_each_marks_rows` reads the pages).
#[test]
fn mark_stop_points_keep_the_expected_transactions() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut files = chain(&dir, "stopat");
    files.extend(chain(&dir, "stopat-later-logs"));
    let logs: Vec<&PathBuf> = files.iter().filter(|f| f.extension().is_some_and(|x| x == "trn")).collect();
    let db = Database::open_until(&[dir.join("chains/stopat/StopAt.bak")], None, StopPoint::NoLog).unwrap();
    let (columns, changes) = mdfkit::log_changes::table_changes(&db, &files, "dbo.steps").unwrap();
    let step = columns.iter().position(|c| c == "step").unwrap();
    let case = &expected(&dir, "stopat + stopat-later-logs")[0]["expect"];
    let mark = |before: bool, after: Option<&str>| StopPoint::Mark {
        name: "dbatoolstest".to_string(),
        before,
        after: after.map(|t| match StopPoint::parse_time(t).unwrap() {
            StopPoint::Time { days, ticks } => (days, ticks),
            _ => unreachable!(),
        }),
    };
    for (stop, key) in [
        (mark(false, None), "STOPATMARK 'dbatoolstest'"),
        (mark(true, None), "STOPBEFOREMARK 'dbatoolstest'"),
        (mark(false, Some("2020-05-12 13:33:35")), "STOPATMARK 'dbatoolstest' AFTER '2020-05-12 13:33:35'"),
    ] {
        let mut commits = Commits::default();
        for file in &logs {
            let media = BackupMedia::open(&[file.as_path()]).unwrap();
            let held = BackupLog::new(&media, 1).unwrap();
            for block in BackupLog::new(&media, 1).unwrap() {
                for_each_record(&block.unwrap(), |r| {
                    if held.holds(r.lsn) {
                        commits.see(&stop, &r);
                    }
                    Ok(())
                })
                .unwrap();
            }
        }
        assert!(commits.stopped(), "{key}: the mark was not found");
        let max = changes
            .iter()
            .filter(|c| c.kind == "insert" && commits.keeps_transaction(c.transaction_id, c.lsn))
            .map(|c| match c.values[step] {
                mdfkit::value::Value::Int(v) => v,
                ref v => panic!("step {v:?}"),
            })
            .max();
        assert_eq!(max, case[key]["max_step"].as_i64(), "{key}");
    }
    // A mark that is not in the log is refused by name.
    let stop = StopPoint::Mark { name: "nosuchmark".to_string(), before: false, after: None };
    let e = Database::open_until(&[dir.join("chains/stopat/StopAt.bak")], None, stop).err().unwrap();
    assert!(e.to_string().contains("no mark \"nosuchmark\""), "{e}");
}

/// The StopAt chain read through the library at each of EXPECTED.json's mark stop points holds
/// its max_step. Its log backups create dbo.steps' first page (LOP_FORMAT_PAGE of an IAM and a
/// data page, LOP_ROOT_CHANGE of its sys.sysallocunits row, PFS and SGAM bits, the file
/// header's differential base), so this reads only if redo does every one of them.
#[test]
fn the_stopat_chain_reads_each_marks_rows() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut files = chain(&dir, "stopat");
    files.extend(chain(&dir, "stopat-later-logs"));
    let case = &expected(&dir, "stopat + stopat-later-logs")[0]["expect"];
    for (stopatmark, stopbeforemark, after, key) in [
        (Some("dbatoolstest"), None, None, "STOPATMARK 'dbatoolstest'"),
        (None, Some("dbatoolstest"), None, "STOPBEFOREMARK 'dbatoolstest'"),
        (
            Some("dbatoolstest"),
            None,
            Some("2020-05-12 13:33:35"),
            "STOPATMARK 'dbatoolstest' AFTER '2020-05-12 13:33:35'",
        ),
    ] {
        let stop = StopPoint::from_options(None, stopatmark, stopbeforemark, after, None).unwrap().unwrap();
        let db = Database::open_until(&files, None, stop).unwrap_or_else(|e| panic!("{key}: {e}"));
        let max = common::step_rows(&db).iter().filter_map(|(step, _)| *step).max();
        assert_eq!(max, case[key]["max_step"].as_i64(), "{key}");
    }
    pages_redone_agree(&files);
}

/// A stop point inside a transaction (`--stopatlsn` at its insert, its commit after) rolls
/// forward the insert, then undoes it as restore recovery does: the StopAt chain stopped at the
/// insert of the marked transaction `dbatoolstest` holds EXPECTED.json's STOPBEFOREMARK rows
/// (max_step), and RestoreTimeClean stopped at the insert of the first transaction that
/// commits after 13:22:44 holds its STOPAT '2017-06-01 13:22:44' rows (min_dt, max_dt).
#[test]
fn a_stop_point_inside_a_transaction_undoes_it() {
    let Some(dir) = common::corpus_dir() else { return };
    let undone = |db: &Database| {
        let notes = db.reader().source().notes();
        assert!(
            notes.iter().any(|n| n.contains(", 1 record(s) of transactions open at the stop point undone")),
            "{notes:?}"
        );
        let (pages, _) = mdfkit::check::check_pages(db.reader().source(), |_| {});
        assert!(pages.is_empty(), "{pages:?}");
    };
    let mut files = chain(&dir, "stopat");
    files.extend(chain(&dir, "stopat-later-logs"));
    let full = Database::open_until(&[dir.join("chains/stopat/StopAt.bak")], None, StopPoint::NoLog).unwrap();
    let (_, changes) = mdfkit::log_changes::table_changes(&full, &files, "dbo.steps").unwrap();
    let insert = changes.iter().find(|c| c.transaction_name.as_deref() == Some("dbatoolstest")).unwrap();
    assert!(insert.end_lsn.unwrap() > insert.lsn);
    let db = Database::open_until(&files, None, StopPoint::Lsn { at: insert.lsn, included: true }).unwrap();
    let max = common::step_rows(&db).iter().filter_map(|(step, _)| *step).max();
    let case = &expected(&dir, "stopat + stopat-later-logs")[0]["expect"];
    assert_eq!(max, case["STOPBEFOREMARK 'dbatoolstest'"]["max_step"].as_i64());
    undone(&db);

    let files = chain(&dir, "restoretimeclean");
    let full =
        Database::open_until(&[dir.join("chains/restoretimeclean/RestoreTimeClean.bak")], None, StopPoint::NoLog)
            .unwrap();
    let (_, changes) = mdfkit::log_changes::table_changes(&full, &files, "dbo.steps").unwrap();
    let case = expected(&dir, "restoretimeclean").into_iter().find(|c| c["stopat"].is_string()).unwrap();
    let stopat = case["stopat"].as_str().unwrap();
    let insert = changes
        .iter()
        .filter(|c| c.end_time.as_ref().unwrap().to_string()[..19] > *stopat)
        .min_by_key(|c| c.end_lsn)
        .unwrap();
    let db = Database::open_until(&files, None, StopPoint::Lsn { at: insert.lsn, included: true }).unwrap();
    let rows = common::step_rows(&db);
    assert_eq!(rows.first().map(|r| r.1.as_str()), case["min_dt"].as_str());
    assert_eq!(rows.last().map(|r| r.1.as_str()), case["max_dt"].as_str());
    undone(&db);
}

/// `mdfkit tables` of a restored chain lists the rows the restore holds, not the counts its
/// catalog had at the last checkpoint: RestoreTimeClean's dbo.steps at the end of the chain and
/// at EXPECTED.json's STOPAT holds one row per insert the log commits by then (the full
/// backup holds it empty, nothing is deleted), and so many rows are read.
#[test]
fn a_restored_chain_lists_the_row_counts_its_log_leaves() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = chain(&dir, "restoretimeclean");
    let full =
        Database::open_until(&[dir.join("chains/restoretimeclean/RestoreTimeClean.bak")], None, StopPoint::NoLog)
            .unwrap();
    let (_, changes) = mdfkit::log_changes::table_changes(&full, &files, "dbo.steps").unwrap();
    for case in expected(&dir, "restoretimeclean") {
        let stopat = case["stopat"].as_str();
        let inserts = changes
            .iter()
            .filter(|c| c.kind == "insert" && c.committed == Some(true))
            .filter(|c| stopat.is_none_or(|s| c.end_time.as_ref().unwrap().to_string()[..19] <= *s))
            .count();
        let stop = stopat.map_or(StopPoint::End, |s| StopPoint::parse_time(s).unwrap());
        let db = Database::open_until(&files, None, stop).unwrap();
        let steps = db.tables_counted(false).unwrap().into_iter().find(|t| t.name == "steps").unwrap();
        let listed: i64 = steps.partitions.iter().map(|p| p.rows).sum();
        assert_eq!(listed, inserts as i64, "{case}");
        assert_eq!(common::step_rows(&db).len(), inserts, "{case}");
        let catalog: i64 = db.catalog().find_table("dbo.steps").unwrap().partitions.iter().map(|p| p.rows).sum();
        assert_ne!(catalog, listed, "{case}: the catalog's own count already agrees; this test proves nothing");
    }
}

/// The pages redo built agree with each other and with the rest of the database: page and
/// catalog checks (IAM chains and PFS bytes against the pages, sys.sysallocunits against the
/// IAM pages, like DBCC CHECKDB PHYSICAL_ONLY) find no problem in the database `files` restore.
fn pages_redone_agree(files: &[PathBuf]) {
    let db = Database::open(files).unwrap();
    let (pages, _) = mdfkit::check::check_pages(db.reader().source(), |_| {});
    let (catalog, _) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(pages.is_empty() && catalog.is_empty(), "{pages:?} {catalog:?}");
}

/// The striped chain (full and log backup, each over two files) reads: its log creates
/// dbo.steps' first page as StopAt's does. Ground truth: the script that made it (dbatools'
/// lab build, `RestoreTimeStripe.sql`) inserts steps 0 to 9, one row each, between the full
/// backup and the first log backup; every `dt` lies between the two backups' start and finish
/// (their headers).
#[test]
fn the_striped_chain_reads_the_rows_its_first_log_inserts() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = chain(&dir, "stripe");
    let db = Database::open(&files).unwrap();
    let rows = common::step_rows(&db);
    let steps: Vec<i64> = rows.iter().filter_map(|(step, _)| *step).collect();
    assert_eq!(steps, (0..10).collect::<Vec<_>>());
    let header = |file: &str| {
        let media = BackupMedia::open(&[dir.join("chains/stripe").join(file)]).unwrap();
        media.sets()[0].clone()
    };
    let start = header("RestoreTimeStripe.bak").start.unwrap().to_string();
    let finish = header("RestoreTimeStripe_1.trn").finish.unwrap().to_string();
    assert!(
        rows.iter().all(|(_, dt)| dt[..19] >= start[..19] && dt[..19] <= finish[..19]),
        "{rows:?} {start} {finish}"
    );
    pages_redone_agree(&files);
}

/// A damaged log block is named, never read past: a sector whose status byte has the other
/// parity (a stale sector) and a slot entry pointing outside its block stop the read with the
/// byte offset and the block's LSN.
#[test]
fn a_damaged_log_block_is_named() {
    let Some(dir) = common::corpus_dir() else { return };
    let file = dir.join("chains/restoretimeclean/RestoreTimeClean_1.trn");
    let bytes = std::fs::read(&file).unwrap();
    let media = BackupMedia::open(&[&file]).unwrap();
    let piece = media.log_pieces(1)[0];
    let first = piece.offset as usize;
    // The first block is 0x8a00 bytes (its header's size field): it has sectors after the first.
    let size = u16::from_le_bytes([bytes[first + 6], bytes[first + 7]]) as usize;
    assert!(size > 512 && bytes[first + 512] & 0xc0 == 0x40);
    let read_all = |bytes: Vec<u8>| -> Result<usize, String> {
        let media = BackupMedia::from_bytes("damaged.trn", bytes).unwrap();
        let mut n = 0;
        for block in BackupLog::new(&media, 1).unwrap() {
            for_each_record(&block.map_err(|e| e.to_string())?, |_| {
                n += 1;
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        }
        Ok(n)
    };
    assert!(read_all(bytes.clone()).unwrap() > 100);
    let mut stale = bytes.clone();
    stale[first + 512] ^= 0xc0;
    let e = read_all(stale).unwrap_err();
    assert!(e.contains("damaged.trn") && e.contains("torn or stale") && e.contains("00000019:0000003e"), "{e}");
    let mut lying = bytes.clone();
    let array = first + u16::from_le_bytes([bytes[first + 4], bytes[first + 5]]) as usize;
    lying[array - 2..array].copy_from_slice(&0xfff0u16.to_le_bytes());
    let e = read_all(lying).unwrap_err();
    assert!(e.contains("slot 1") && e.contains(&format!("log block at byte {first} of the file")), "{e}");
}

/// A damaged log block: a slot entry pointing outside its block, or its header zeroed (so that it
/// reads as the end of the log).
#[derive(Clone, Copy, Debug)]
enum Damage {
    SlotOutside,
    ZeroHeader,
}

/// A block of a damaged log: its byte offset in the file and its LSN.
struct DamagedBlock {
    offset: usize,
    lsn: Lsn,
    /// The block after it.
    next: (usize, Lsn),
}

/// A copy of the RestoreTimeClean chain in a scratch folder, with `damage` done to a block in the
/// middle of `RestoreTimeClean2_2.trn`'s log: the files, the damaged file and the block (vlf and
/// block from the block header at +0x0c and +0x10, see `log/block.rs`).
fn damaged_chain(dir: &Path, scratch: &Path, damage: Damage) -> (Vec<PathBuf>, PathBuf, DamagedBlock) {
    std::fs::create_dir_all(scratch).unwrap();
    let mut files = Vec::new();
    for file in chain(dir, "restoretimeclean") {
        let copy = scratch.join(file.file_name().unwrap());
        std::fs::copy(&file, &copy).unwrap();
        files.push(copy);
    }
    let damaged = scratch.join("RestoreTimeClean2_2.trn");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let piece = BackupMedia::open(&[&damaged]).unwrap().log_pieces(1)[0];
    let (mut at, end) = (piece.offset as usize, (piece.offset + piece.len) as usize);
    let mut blocks = Vec::new();
    // Block after block while each starts with a first-sector status byte (0x10).
    while at + 0x28 <= end && bytes[at] & 0x10 != 0 {
        let size = usize::from(u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]));
        let lsn = Lsn {
            vlf: u32::from_le_bytes(bytes[at + 0x0c..at + 0x10].try_into().unwrap()),
            block: u32::from_le_bytes(bytes[at + 0x10..at + 0x14].try_into().unwrap()),
            slot: 0,
        };
        blocks.push((at, lsn));
        at += size.max(512);
    }
    assert!(blocks.len() >= 3, "{} blocks", blocks.len());
    let middle = blocks.len() / 2;
    let ((offset, lsn), next) = (blocks[middle], blocks[middle + 1]);
    match damage {
        Damage::SlotOutside => {
            // Slot 1's entry (just below entry 0, whose offset is at block +4) points past the block.
            let array = offset + usize::from(u16::from_le_bytes([bytes[offset + 4], bytes[offset + 5]]));
            bytes[array - 2..array].copy_from_slice(&0xfff0u16.to_le_bytes());
        }
        Damage::ZeroHeader => bytes[offset..offset + 0x28].fill(0),
    }
    std::fs::write(&damaged, bytes).unwrap();
    (files, damaged, DamagedBlock { offset, lsn, next })
}

/// A damaged log backup in a chain (a slot outside its block, or a block header of zeros that
/// would read as the end of the log): the restore fails naming the file, the block's byte offset
/// and an LSN (the block's own, or for a zeroed header the block after it); with salvage it rolls
/// forward up to the last good record, says what it kept, and reads what the undamaged chain reads
/// when stopped just before the damaged block.
#[test]
fn a_damaged_log_backup_fails_the_chain_and_salvage_stops_at_the_last_good_lsn() {
    let Some(dir) = common::corpus_dir() else { return };
    for damage in [Damage::SlotOutside, Damage::ZeroHeader] {
        damaged_chain_is_named_and_salvaged(&dir, damage);
    }
}

fn damaged_chain_is_named_and_salvaged(dir: &Path, damage: Damage) {
    let scratch = std::env::temp_dir().join(format!("mdfkit-damaged-chain-{}-{damage:?}", std::process::id()));
    let (files, damaged, block) = damaged_chain(dir, &scratch, damage);
    let (offset, lsn) = (block.offset, block.lsn);
    let named = match damage {
        Damage::SlotOutside => format!("LSN {}", mdfkit::log::lsn_text(lsn)),
        Damage::ZeroHeader => format!(
            "its header is zeros, as at the end of the log, but a block follows at byte {} (LSN {})",
            block.next.0,
            mdfkit::log::lsn_text(block.next.1)
        ),
    };
    let e = Database::open(&files).err().expect("a damaged log refused").to_string();
    assert!(
        e.contains(damaged.to_str().unwrap())
            && e.contains(&format!("log block at byte {offset} of the file"))
            && e.contains(&named)
            && e.contains("--salvage"),
        "{damage:?}: {e}"
    );
    if let Damage::SlotOutside = damage {
        assert!(e.contains("slot 1 says its record is at +65520"), "{e}");
    }
    let salvaged = Database::open_salvaging_until(&files, None, StopPoint::End).unwrap();
    let notes = salvaged.reader().source().notes().to_vec();
    assert!(notes.iter().any(|n| n.contains(&named) && n.contains("rolled forward up to there only")), "{notes:?}");
    let intact = chain(dir, "restoretimeclean");
    let before = Database::open_until(&intact, None, StopPoint::Lsn { at: lsn, included: false }).unwrap();
    let kept = common::step_times(&salvaged);
    assert_eq!(kept, common::step_times(&before));
    // Less than the whole chain (EXPECTED.json's max), more than the log before the damaged one.
    let whole = expected(dir, "restoretimeclean").into_iter().find(|c| c["stopat"].is_null()).unwrap();
    assert!(kept.last().map(String::as_str) < whole["max_dt"].as_str(), "{kept:?}");
    let first_log = Database::open(&intact[..3]).unwrap();
    assert!(kept.len() > common::step_times(&first_log).len());
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Every LOP_COUNT_DELTA of four corpus backups is decoded, and the system table it names is
/// the one whose page the record changes: the page's header carries that table's allocation
/// unit (SQL Server's fixed ids: sys.sysallocunits 7, sys.sysrowsets 5, sys.sysrscols 3, as
/// m_objId with index id 0).
#[test]
fn count_deltas_name_the_system_table_of_their_page() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = [
        "chains/difftest/difftest-full.bak",
        "chains/cube-query-history/SQL2008_Cube_Query_History_FULL_20170518_041737.bak",
        "bak/ros1991-amigos.api__database.bak",
        "bak/dataplat-appveyor-lab__restoretimeclean.bak",
    ];
    let mut decoded = 0;
    for name in files {
        let file = dir.join(name);
        let db = Database::open_until(std::slice::from_ref(&file), None, StopPoint::NoLog).unwrap();
        let mut listed = Vec::new();
        let filter = mdfkit::log::listing::LogFilter { operations: vec![Operation::COUNT_DELTA], ..Default::default() };
        mdfkit::log::listing::list_log(std::slice::from_ref(&file), None, &filter, |r| {
            listed.push(r);
            Ok(())
        })
        .unwrap();
        assert!(!listed.is_empty(), "{name}: LOP_COUNT_DELTA records");
        for r in listed {
            let description = r.description.unwrap_or_else(|| panic!("{name}: {:?} not decoded", r.lsn));
            let page = db.reader().read(r.page.unwrap()).unwrap();
            let object = match description.split(' ').next() {
                Some("sys.sysallocunits") => 7,
                Some("sys.sysrowsets") => 5,
                Some("sys.sysrscols") => 3,
                other => panic!("{other:?}"),
            };
            assert_eq!(page.header().allocation_unit_id(), object << 16, "{name} {:?}: {description}", r.lsn);
            decoded += 1;
        }
    }
    println!("{decoded} LOP_COUNT_DELTA records decoded");
}
