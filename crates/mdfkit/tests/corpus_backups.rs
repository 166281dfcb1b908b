//! Backups over the real corpus (`MDFKIT_CORPUS`, default `../shared/corpus` beside the
//! repository): every `.bak`, compressed (`MSSQLBAK`) or not, opens through [`BackupPages`] with no
//! restore, its boot page agrees with `MANIFEST.tsv` (where the manifest records version and
//! name), its tables agree with the expected-value files, and every sys view renders.
//!
//! Without the corpus the test fails under CI and says loudly that it skipped elsewhere.

mod common;

use std::path::Path;
use std::sync::Arc;

use mdfkit::backup::chain::BackupFiles;
use mdfkit::backup::{BackupMedia, BackupPages, FromBackup};
use mdfkit::catalog::views::VIEW_NAMES;
use mdfkit::log::redo::{StopPoint, WARNING};
use mdfkit::scan::Flow;
use mdfkit::source::PageSource;
use mdfkit::{Database, ErrorKind, PageId};

struct Row {
    file: String,
    /// 0 when the manifest leaves it empty.
    version: u16,
    /// Empty when the manifest leaves it empty.
    name: String,
}

/// The `bak` rows of MANIFEST.tsv and of incoming/MANIFEST.tsv (their paths made relative to the
/// corpus folder).
fn backups(dir: &Path) -> Vec<Row> {
    let mut rows = manifest_backups(dir, "");
    let incoming = manifest_backups(dir, "incoming/");
    assert!(
        incoming.iter().any(|r| r.file.ends_with("improvedk-improve.dk__data.bak")),
        "incoming/MANIFEST.tsv lists improvedk's backup"
    );
    rows.extend(incoming);
    rows
}

fn manifest_backups(dir: &Path, folder: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join(folder).join("MANIFEST.tsv")).expect("read MANIFEST.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (file, kind, version, name) = (col("file"), col("kind"), col("dbi_version"), col("db_name"));
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[kind] == "bak")
        .map(|f| Row {
            file: format!("{folder}{}", f[file]),
            version: f[version].parse().unwrap_or(0),
            name: f[name].to_string(),
        })
        .collect()
}

fn is_compressed(path: &Path) -> bool {
    use mdfkit::io::LocalFile;
    use mdfkit::sniff::{read_head, sniff, FileFormat};
    let head = LocalFile::open(path).ok().and_then(|f| read_head(&f).ok()).unwrap_or_default();
    sniff(&head) == FileFormat::CompressedBackup
}

/// Backups known not to open, with the error they give. chinook.bak (998) is stripe 1 of a backup
/// striped over 2 files (its media header says so, and its header's backup size is about twice
/// the file): the other stripe holds the rest of the extents (1:48 among them: page 1:46, a leaf
/// of sysrscols, links to 1:51, which no page in this file holds). The test insists the error
/// stays exactly this, so a change shows up here.
const KNOWN_GAPS: &[(&str, &str)] =
    &[("bak/mariamahmed08080-chinook_analysis__chinook.bak", "striped over 2 files and stripe 2 is missing")];

fn open(path: &Path) -> mdfkit::Result<Database> {
    Database::from_source(Arc::new(BackupPages::open(path)?))
}

#[test]
fn every_corpus_backup_opens_without_a_restore() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut mismatches = Vec::new();
    let (mut opened, mut compressed, mut views, mut gaps, mut rows) = (0, 0, 0, 0, 0);
    for row in backups(&dir) {
        let path = dir.join(&row.file);
        if is_compressed(&path) {
            compressed += 1;
        }
        let known_gap = KNOWN_GAPS.iter().find(|(f, _)| *f == row.file);
        let db = match (open(&path), known_gap) {
            (Ok(db), None) => db,
            (Err(e), Some((_, expected))) if e.to_string().contains(expected) => {
                println!("known gap: {}: {e}", row.file);
                gaps += 1;
                continue;
            }
            (Ok(_), Some(_)) => {
                mismatches.push(format!("{}: opens now: remove it from KNOWN_GAPS", row.file));
                continue;
            }
            (Err(e), _) => {
                mismatches.push(format!("{}: cannot open: {e}", row.file));
                continue;
            }
        };
        opened += 1;
        let catalog = db.catalog();
        if row.version != 0 && catalog.boot.version != row.version {
            mismatches.push(format!("{}: version {} != manifest {}", row.file, catalog.boot.version, row.version));
        }
        if !row.name.is_empty() && db.name() != row.name {
            mismatches.push(format!("{}: name {:?} != manifest {:?}", row.file, db.name(), row.name));
        }
        // The file list's size agrees with the file header page inside the backup.
        let pages = BackupPages::open(&path).unwrap();
        for header in db.file_headers() {
            let listed = pages.file_list().iter().find(|f| i32::from(f.file_id as i16) == i32::from(header.file_id));
            match listed {
                Some(f) if f.size_bytes == header.size_pages as u64 * 8192 => {}
                other => mismatches.push(format!(
                    "{}: file {} header says {} pages, file list says {:?}",
                    row.file,
                    header.file_id,
                    header.size_pages,
                    other.map(|f| f.size_bytes)
                )),
            }
        }
        let tables = catalog.tables(false);
        if tables.is_empty() {
            mismatches.push(format!("{}: no user tables", row.file));
        }
        for view in VIEW_NAMES {
            match catalog.view(view) {
                Ok(v) if v.rows.iter().all(|r| r.len() == v.columns.len()) => views += 1,
                Ok(_) => mismatches.push(format!("{}: {view} has ragged rows", row.file)),
                Err(e) => mismatches.push(format!("{}: {view}: {e}", row.file)),
            }
        }
        // Every table scans to its catalog row count and every value decodes.
        for t in &tables {
            let scanned = t.partitions.iter().try_fold(0u64, |n, p| {
                let decoder = db.row_decoder(t, p.partition_id, None)?;
                let mut values = Vec::new();
                let stats = db.scan(t).partition_records(p, |record, _| {
                    decoder.decode(record, &mut values)?;
                    Ok(Flow::Continue)
                })?;
                Ok::<_, mdfkit::Error>(n + stats.rows)
            });
            match scanned {
                Ok(n) if n as i64 == t.rows() => rows += n,
                Ok(n) => mismatches.push(format!(
                    "{}: {} scanned {n} rows, catalog says {}",
                    row.file,
                    t.qualified_name(),
                    t.rows()
                )),
                Err(e) => mismatches.push(format!("{}: {e}", row.file)),
            }
        }
    }

    println!("backups: {opened} opened ({compressed} compressed), {gaps} known gaps, {views} views rendered, {rows} rows read");
    assert!(mismatches.is_empty(), "mismatches:\n{}", mismatches.join("\n"));
    assert!(
        opened + gaps >= 13,
        "expected the 7 corpus backups and the 6 of incoming/, saw {opened} open and {gaps} known gaps"
    );
    assert!(compressed >= 1, "expected the compressed corpus backup (sharepoint_config.bak)");
}

#[test]
fn entrepot_tables_match_the_expected_file() {
    let Some(dir) = common::corpus_dir() else { return };
    let expected_path = dir.join("expected/xxxnemesis4xxx-sql_server__entrepot.bak.expected.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(expected_path).unwrap()).unwrap();
    let db = open(&dir.join(json["corpus_file"].as_str().unwrap())).unwrap();
    let tables = db.catalog().tables(false);
    let expected = json["tables"].as_array().unwrap();
    assert!(!expected.is_empty());
    for t in expected {
        let (schema, name) = (t["schema"].as_str().unwrap_or("dbo"), t["name"].as_str().unwrap());
        let found = tables
            .iter()
            .find(|x| x.schema == schema && x.name == name)
            .unwrap_or_else(|| panic!("{schema}.{name} not listed"));
        assert_eq!(found.rows(), t["row_count"].as_i64().unwrap(), "{schema}.{name}");
    }
}

/// chinook.bak (998): its only boot page copy is in the second data block, at an offset that is
/// 4096 mod 8192; the later copy of a re-sent extent is the one served.
#[test]
fn resent_extents_are_read_where_they_are() {
    let Some(dir) = common::corpus_dir() else { return };
    let chinook = dir.join("bak/mariamahmed08080-chinook_analysis__chinook.bak");
    let pages = BackupMedia::open(&[chinook]).unwrap().into_pages_with_stripes_missing(None).unwrap();
    let (_, boot) = pages.page_location(PageId::new(1, 9)).unwrap();
    assert_eq!(boot % 8192, 4096);
    // 2019: the boot page is sent twice; the later copy (in the second data block) wins.
    let banking = BackupPages::open(dir.join("bak/rrieshavv-corewebapi.jwt.banking__database.bak")).unwrap();
    let (_, boot) = banking.page_location(PageId::new(1, 9)).unwrap();
    assert!(boot > 3_800_000, "boot page served from byte {boot}, not the re-sent copy");
    assert!(banking.page_copies() > banking.page_count());
}

/// The 2008 R2 chains: full backups open, a striped pair opens from both files, differential and
/// log backups are explained.
#[test]
fn chain_backups_open_or_are_explained() {
    let Some(dir) = common::corpus_dir() else { return };
    let chains = dir.join("chains");
    if !chains.is_dir() {
        return;
    }
    for full in [
        "difftest/difftest-full.bak",
        "stopat/StopAt.bak",
        "media-password/passwd.bak",
        "cube-query-history/SQL2008_Cube_Query_History_FULL_20170518_041737.bak",
    ] {
        let db = open(&chains.join(full)).unwrap_or_else(|e| panic!("{full}: {e}"));
        assert!(!db.name().is_empty());
        for view in VIEW_NAMES {
            db.catalog().view(view).unwrap_or_else(|e| panic!("{full}: {view}: {e}"));
        }
    }
    let stripes = [chains.join("stripe/RestoreTimeStripe.bak"), chains.join("stripe/RestoreTimeStripe1.bak")];
    let db = Database::from_source(Arc::new(BackupPages::open_stripes(&stripes).unwrap())).unwrap();
    assert_eq!(db.name(), "restoretimestripe");

    let e = BackupPages::open(chains.join("difftest/difftest-diff1.bak")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile, "{e}");
    let e = BackupPages::open(chains.join("stopat/StopAt_1.trn")).err().unwrap();
    assert!(e.to_string().contains("no data pages"), "{e}");
}

/// improvedk's 22 MB SQL Server 2008 R2 backup (incoming/): its data stream holds the extents of
/// PFS pages 1:8088, 1:16176 and 1:24264, which its GAM marks free (random bytes after each PFS
/// page), and 5 extents that are not pages after the last one. It opens, checks clean and reads
/// dbo.Persons to its catalog's 50,000 rows.
#[test]
fn improvedk_backup_opens_checks_clean_and_reads_every_row() {
    let Some(dir) = common::corpus_dir() else { return };
    let path = dir.join("incoming/bak/improvedk-improve.dk__data.bak");
    assert!(path.is_file(), "{} is missing from the corpus", path.display());
    let pages = Arc::new(BackupPages::open(&path).unwrap());
    assert!(pages.notes().is_empty(), "the stream follows the allocation maps: {:?}", pages.notes());
    for pfs in [8088, 16176, 24264] {
        assert!(pages.page_location(PageId::new(1, pfs)).is_some(), "PFS page 1:{pfs}");
    }
    let db = Database::from_source(pages.clone()).unwrap();
    assert_eq!(db.catalog().boot.version, 661);
    let tables = db.catalog().tables(false);
    let names: Vec<String> = tables.iter().map(|t| t.qualified_name()).collect();
    assert_eq!(names, ["dbo.Persons"]);
    let t = &tables[0];
    assert_eq!(t.rows(), 50_000);
    let mut scanned = 0;
    for p in &t.partitions {
        let decoder = db.row_decoder(t, p.partition_id, None).unwrap();
        let mut values = Vec::new();
        scanned += db
            .scan(t)
            .partition_records(p, |record, _| {
                decoder.decode(record, &mut values)?;
                Ok(Flow::Continue)
            })
            .unwrap()
            .rows;
    }
    assert_eq!(scanned, 50_000);
    let (problems, stats) = mdfkit::check::check_pages(pages.as_ref(), |_| {});
    assert!(problems.is_empty(), "{problems:?}");
    assert!(stats.pages_checked > 2_500, "{stats:?}");
    let (problems, _) = mdfkit::check::check_catalog(&db).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
}

/// The rule of `backup::extents` on every single-stripe full backup of the corpus: the data
/// stream holds exactly the extents the GAM marks allocated plus those of PFS pages, in file
/// order (no placement needed anything but the map: no notes).
#[test]
fn backup_extent_census() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut fulls: Vec<String> = backups(&dir).into_iter().map(|r| r.file).collect();
    fulls.retain(|f| !f.contains("chinook"));
    fulls.extend(
        [
            "gt/TutorialDB.bak",
            "chains/difftest/difftest-full.bak",
            "chains/stopat/StopAt.bak",
            "chains/media-password/passwd.bak",
            "chains/restoretimeclean/RestoreTimeClean.bak",
            "chains/simplerecovery/SimpleBacktest.bak",
            "chains/sqltoolsservice-859/FullBackup.bak",
            "chains/cube-query-history/SQL2008_Cube_Query_History_FULL_20170518_041737.bak",
        ]
        .map(String::from),
    );
    let mut failures = Vec::new();
    for f in &fulls {
        let pages = match BackupPages::open(dir.join(f)) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{f}: {e}"));
                continue;
            }
        };
        println!("{f}: {} extents placed, {} page copies", pages.page_count() / 8, pages.page_copies());
        if !pages.notes().is_empty() {
            failures.push(format!("{f}: {:?}", pages.notes()));
        }
        failures.extend(extents_disowned_by_their_headers(&pages).into_iter().map(|e| format!("{f}: {e}")));
    }
    // The striped pair: each stripe's extents are placed by their votes, none skipped.
    let stripes = ["chains/stripe/RestoreTimeStripe.bak", "chains/stripe/RestoreTimeStripe1.bak"].map(|f| dir.join(f));
    let pages = BackupPages::open_stripes(&stripes).unwrap();
    println!("striped RestoreTimeStripe: {} extents placed", pages.page_count() / 8);
    if !pages.notes().is_empty() {
        failures.push(format!("RestoreTimeStripe: {:?}", pages.notes()));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The extents served whose page headers disown them: an extent where some page names a page of a
/// data file at its own position in an extent, but none names this one. Opening a single-stripe
/// backup places its extents by the allocation maps without reading their headers
/// (`extents::locate_by_maps`); this is the agreement that reading them and voting
/// (`extents::locate`) would require for the placement to be the map's without a note, checked on
/// the pages served.
fn extents_disowned_by_their_headers(pages: &BackupPages) -> Vec<String> {
    let mut disowned = Vec::new();
    let mut page = vec![0u8; 8192];
    for file in pages.files() {
        for first in (0..file.page_count).step_by(8) {
            let mut named_here = false;
            let mut named_elsewhere = None;
            for k in 0..8u32.min(file.page_count - first) {
                let id = PageId::new(file.file_id, first + k);
                if pages.page_location(id).is_none() || pages.read_raw(id, &mut page).is_err() {
                    continue;
                }
                let named_file = u16::from_le_bytes([page[36], page[37]]);
                let named_page = u32::from_le_bytes([page[32], page[33], page[34], page[35]]);
                let known = pages.files().iter().any(|f| f.file_id == named_file && named_page < f.page_count);
                if page[0] != 1 || !known || named_page % 8 != k {
                    continue;
                }
                if named_file == file.file_id && named_page - k == first {
                    named_here = true;
                } else {
                    named_elsewhere = Some(PageId::new(named_file, named_page - k));
                }
            }
            if let (false, Some(other)) = (named_here, named_elsewhere) {
                disowned.push(format!("extent {}:{first} holds pages naming {other} and none naming it", file.file_id));
            }
        }
    }
    disowned
}

/// The `dt` values of `dbo.steps` of the database the backups restore, cut to whole seconds as
/// EXPECTED.json's query does (`convert(varchar(20), dt, 120)`), and the catalog's row count.
fn steps_dt(files: &[std::path::PathBuf]) -> (Vec<String>, i64) {
    let db = Database::open(files).unwrap_or_else(|e| panic!("{files:?}: {e}"));
    let t = db.catalog().find_table("dbo.steps").expect("dbo.steps");
    let mut dts = Vec::new();
    for p in &t.partitions {
        let decoder = db.row_decoder(&t, p.partition_id, None).unwrap();
        let dt = decoder.column_names().iter().position(|c| c == "dt").expect("column dt");
        let mut values = Vec::new();
        db.scan(&t)
            .partition_records(p, |record, _| {
                decoder.decode(record, &mut values)?;
                dts.push(values[dt].to_string().chars().take(19).collect());
                Ok(Flow::Continue)
            })
            .unwrap();
    }
    dts.sort();
    (dts, t.rows())
}

/// The chain of `folder` in chains/EXPECTED.json.
fn expected_chain(dir: &Path, folder: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("chains/EXPECTED.json")).expect("read chains/EXPECTED.json");
    let all: serde_json::Value = serde_json::from_str(&text).expect("EXPECTED.json parses");
    all["chains"].as_array().unwrap().iter().find(|c| c["folder"] == folder).cloned().expect("chain listed")
}

/// Rows of every user table, by name, or the error reading them.
fn table_rows(db: &Database) -> Vec<(String, Result<usize, String>)> {
    let mut out = Vec::new();
    for t in db.catalog().tables(false) {
        let mut rows = Ok(0);
        for p in &t.partitions {
            let counted = db.scan(&t).partition_records(p, |_, _| Ok(Flow::Continue));
            rows = match (rows, counted) {
                (Ok(n), Ok(c)) => Ok(n + c.rows as usize),
                (Err(e), _) => Err(e),
                (_, Err(e)) => Err(e.to_string()),
            };
        }
        out.push((t.qualified_name(), rows));
    }
    out
}

/// Every corpus backup that opens reads the same rows with its own log portion rolled forward
/// (RESTORE WITH RECOVERY) as without it: none of them logged row changes while it ran (their
/// log portions hold checkpoint records and count deltas only), so any difference is a redo
/// fault. Single chain backups are included (full and differential alone). Three backups' log
/// portions cannot be read whole (named below): those roll forward up to the unreadable block
/// and say so.
#[test]
fn every_backup_reads_the_same_rows_with_its_own_log_rolled_forward() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut files: Vec<std::path::PathBuf> = backups(&dir)
        .into_iter()
        .filter(|row| !KNOWN_GAPS.iter().any(|(f, _)| *f == row.file))
        .map(|row| dir.join(row.file))
        .collect();
    for chain in ["restoretimeclean", "simplerecovery", "difftest", "stopat", "cube-query-history"] {
        for e in std::fs::read_dir(dir.join("chains").join(chain)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "bak") {
                files.push(path);
            }
        }
    }
    let mut mismatches = Vec::new();
    let mut compared = 0;
    let mut unreadable_logs = Vec::new();
    for path in &files {
        let Ok(plain) = Database::open_until(std::slice::from_ref(path), None, StopPoint::NoLog) else { continue };
        let recovered = match Database::open(std::slice::from_ref(path)) {
            Ok(db) => db,
            Err(e) => {
                mismatches.push(format!("{}: opens without its log, not with it: {e}", path.display()));
                continue;
            }
        };
        let (before, after) = (table_rows(&plain), table_rows(&recovered));
        let warnings: Vec<&String> =
            recovered.reader().source().notes().iter().filter(|n| n.starts_with(WARNING)).collect();
        if !warnings.is_empty() {
            println!("{}: {warnings:?}", path.display());
            unreadable_logs.push(path.file_name().unwrap().to_str().unwrap().to_string());
        }
        if before != after {
            mismatches.push(format!("{}: {before:?} became {after:?}", path.display()));
        }
        compared += 1;
    }
    println!("{compared} backups read the same with their own log portion rolled forward");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // Log portions whose blocks or records our reader refuses: none since the saved sector
    // bytes of a log block are put back in reverse order (see `log::block`); before that, the
    // log portions of aasmand-clinicproject, denissfloww-bd and entrepot stopped early.
    assert!(unreadable_logs.is_empty(), "log portions read only in part: {unreadable_logs:?}");
    // 10 from the manifest and 7 full or differential backups of the chains, today.
    assert!(compared >= 17, "only {compared} backups compared");
}

/// SimpleBackTest (SIMPLE recovery): the full backup plus its differential SimpleBackTest_1.bak
/// restore what a real restore holds (EXPECTED.json: min and max of dbo.steps.dt); the full
/// backup alone holds an empty dbo.steps. Given in either order, and with the later
/// differential too (which is then the one read).
#[test]
fn a_full_and_its_differential_read_as_the_restored_database() {
    let Some(dir) = common::corpus_dir() else { return };
    let folder = dir.join("chains/simplerecovery");
    let expected = expected_chain(&dir, "simplerecovery");
    let (full, diff1) = (folder.join("SimpleBacktest.bak"), folder.join("SimpleBackTest_1.bak"));
    for files in [[full.clone(), diff1.clone()], [diff1.clone(), full.clone()]] {
        let backups = BackupFiles::open(&files).unwrap();
        let plan = backups.plan(None).unwrap();
        assert_eq!(1 + plan.differential.iter().count(), expected["files_restored"].as_u64().unwrap() as usize);
        assert_eq!(plan.differential.unwrap().set.differential_base_lsn, Some(plan.full.set.checkpoint_lsn));
        let (dts, catalog_rows) = steps_dt(&files);
        assert_eq!(dts.len() as i64, catalog_rows);
        assert_eq!(dts.first().map(String::as_str), expected["min_dt"].as_str());
        assert_eq!(dts.last().map(String::as_str), expected["max_dt"].as_str());
    }
    let (alone, catalog_rows) = steps_dt(std::slice::from_ref(&full));
    assert!(alone.is_empty() && catalog_rows == 0, "{alone:?}");
    // With both differentials, the later one is read and the earlier one skipped with its reason:
    // the plan the opened database hands back is the one it read by.
    let db = Database::open(&[full, diff1.clone(), folder.join("SimpleBackTest_2.bak")]).unwrap();
    let plan = db.reader().source().restore_plan().expect("the plan of a restore chain").clone();
    assert!(plan.chose_among_several());
    assert!(plan.differential.unwrap().files[0].ends_with("SimpleBackTest_2.bak"));
    assert_eq!(plan.skipped.len(), 1);
    assert_eq!(plan.skipped[0].0.files, [diff1]);
    assert!(plan.skipped[0].1.starts_with("an older differential of the same full backup"), "{:?}", plan.skipped);
}

/// Every differential of the corpus copies exactly the extents its DCM marks changed (the
/// locator places each of them by the map, with no note), and reads over its full backup.
#[test]
fn every_corpus_differential_follows_its_dcm() {
    let Some(dir) = common::corpus_dir() else { return };
    let chains = dir.join("chains");
    for (full, diff) in [
        ("difftest/difftest-full.bak", "difftest/difftest-diff1.bak"),
        ("difftest/difftest-full.bak", "difftest/difftest-diff2.bak"),
        ("simplerecovery/SimpleBacktest.bak", "simplerecovery/SimpleBackTest_1.bak"),
        ("simplerecovery/SimpleBacktest.bak", "simplerecovery/SimpleBackTest_2.bak"),
        ("restoretimeclean/RestoreTimeClean.bak", "restoretimeclean/RestoreTimeClean2.bak"),
        (
            "cube-query-history/SQL2008_Cube_Query_History_FULL_20170518_041737.bak",
            "cube-query-history/SQL2008_Cube_Query_History_DIFF_20170518_041819.bak",
        ),
        (
            "cube-query-history/SQL2008_Cube_Query_History_FULL_20170518_041737.bak",
            "cube-query-history/SQL2008_Cube_Query_History_DIFF_20170518_041826.bak",
        ),
        ("sqltoolsservice-859/FullBackup.bak", "sqltoolsservice-859/DiffBackup.bak"),
    ] {
        let files = [chains.join(full), chains.join(diff)];
        let (pages, plan) = BackupFiles::open(&files).unwrap().into_pages(None).unwrap();
        assert!(plan.differential.is_some(), "{diff}");
        assert!(pages.notes().is_empty(), "{diff}: {:?}", pages.notes());
        let db = Database::from_source(Arc::new(pages)).unwrap_or_else(|e| panic!("{diff}: {e}"));
        for t in db.catalog().tables(false) {
            let mut rows = 0;
            for p in &t.partitions {
                rows += db.scan(&t).partition_records(p, |_, _| Ok(Flow::Continue)).unwrap().rows;
            }
            assert_eq!(rows as i64, t.rows(), "{diff}: {}", t.qualified_name());
        }
    }
}

/// RestoreTimeClean: the plan is the one EXPECTED.json describes (the full, the differential
/// RestoreTimeClean2.bak and the three logs after it: 5 files), and the database it restores,
/// the logs rolled forward onto the differential's pages, holds EXPECTED's min and max of
/// dbo.steps.dt (the max is in the last log backup).
#[test]
fn the_restore_plan_takes_the_logs_after_the_differential() {
    let Some(dir) = common::corpus_dir() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let expected = expected_chain(&dir, "restoretimeclean");
    let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let plan = BackupFiles::open(&files).unwrap().plan(None).unwrap();
    let used = 2 + plan.logs.len();
    assert_eq!(used, expected["files_restored"].as_u64().unwrap() as usize);
    assert!(plan.differential.as_ref().unwrap().files[0].ends_with("RestoreTimeClean2.bak"));
    let logs: Vec<_> = plan.logs.iter().map(|l| l.files[0].file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(logs, ["RestoreTimeClean2_1.trn", "RestoreTimeClean2_2.trn", "RestoreTimeClean2_3.trn"]);
    assert!(plan.log_gaps.is_empty());
    assert!(plan.notices().iter().any(
        |n| n.contains("rolled forward with the log backup") && n.contains("RestoreTimeClean2_1.trn (position 1)")
    ));
    let (dts, _) = steps_dt(&files);
    assert_eq!(dts.first().map(String::as_str), expected["min_dt"].as_str());
    assert_eq!(dts.last().map(String::as_str), expected["max_dt"].as_str());
    // The full and the differential alone hold only the rows up to the differential.
    let (base, _) = steps_dt(&[folder.join("RestoreTimeClean.bak"), folder.join("RestoreTimeClean2.bak")]);
    assert!(base.last() < dts.last(), "{:?} {:?}", base.last(), dts.last());
}

/// RestoreTimeClean at `STOPAT '2017-06-01 13:22:44'`: EXPECTED.json's min and max of
/// dbo.steps.dt (transactions committed after the stop time are not read).
#[test]
fn stopat_reads_the_transactions_committed_by_then() {
    let Some(dir) = common::corpus_dir() else { return };
    let (files, stop, expected) = restoretimeclean_at_stopat(&dir);
    let db = Database::open_until(&files, None, stop).unwrap();
    let dts = common::step_times(&db);
    assert_eq!(dts.first().map(String::as_str), expected["min_dt"].as_str());
    assert_eq!(dts.last().map(String::as_str), expected["max_dt"].as_str());
}

/// RestoreTimeClean's files, EXPECTED.json's STOPAT entry for it and its stop point.
fn restoretimeclean_at_stopat(dir: &Path) -> (Vec<std::path::PathBuf>, StopPoint, serde_json::Value) {
    let text = std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    let expected = all["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["folder"] == "restoretimeclean" && c["stopat"].is_string())
        .cloned()
        .expect("the STOPAT entry");
    let mut files: Vec<_> =
        std::fs::read_dir(dir.join("chains/restoretimeclean")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let stop = StopPoint::parse_time(expected["stopat"].as_str().unwrap()).unwrap();
    (files, stop, expected)
}

/// Splits of dbo.steps planned on RestoreTimeClean at STOPAT, shipped as JSON and each read from
/// the database it opens itself (as a Spark or Dask worker does), return the rows of that point
/// in time (the planner's, whose last `dt` is EXPECTED.json's), not the later ones of the
/// chain's end (what they read until the split carried the stop point).
#[test]
fn splits_planned_at_stopat_are_read_at_that_point() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    let Some(dir) = common::corpus_dir() else { return };
    let (files, stop, expected) = restoretimeclean_at_stopat(&dir);
    let steps = |db: &Database| {
        let mut steps: Vec<i64> = common::step_rows(db).into_iter().filter_map(|(step, _)| step).collect();
        steps.sort_unstable();
        steps
    };
    let db = Database::open_until(&files, None, stop).unwrap();
    let planned = steps(&db);
    assert_eq!(common::step_times(&db).last().map(String::as_str), expected["max_dt"].as_str());
    assert!(planned.len() < steps(&Database::open(&files).unwrap()).len());
    let table = db.catalog().find_table("dbo.steps").unwrap();
    let mut read = Vec::new();
    for split in db.scan(&table).splits(&files, None, 8192).unwrap() {
        let split = mdfkit::split::ScanSplit::from_json(&split.to_json()).unwrap();
        let worker = split.open().unwrap();
        split
            .read(&worker, 1024, |batch| {
                let step = batch.column_by_name("step").unwrap().as_primitive::<Int32Type>();
                read.extend(step.iter().flatten().map(i64::from));
                Ok(Flow::Continue)
            })
            .unwrap();
    }
    read.sort_unstable();
    assert_eq!(read, planned);
}

/// chinook.bak is stripe 1 of 2: read for salvage, its catalog is incomplete (a page of a
/// system base table is in stripe 2), and the error says which page and how much is missing.
#[test]
fn one_stripe_of_two_says_what_of_the_catalog_is_missing() {
    let Some(dir) = common::corpus_dir() else { return };
    let chinook = dir.join("bak/mariamahmed08080-chinook_analysis__chinook.bak");
    let (pages, _) = BackupFiles::open(std::slice::from_ref(&chinook)).unwrap().into_pages_salvaging(None).unwrap();
    let missing = pages.missing_extents().to_vec();
    assert!(!missing.is_empty());
    let e = Database::open_salvaging(&[chinook], None).err().unwrap();
    let text = e.to_string();
    assert!(text.starts_with("the catalog is incomplete, nothing can be read: "), "{text}");
    assert!(text.contains("stripe(s) 2 of 2 not given"), "{text}");
    // The catalog page named is in one of the extents the allocation map lists as missing.
    let page: u32 =
        text.split("page 1:").nth(1).unwrap().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    assert!(missing.contains(&PageId::new(1, page / 8 * 8)), "{text}: {missing:?}");
}
