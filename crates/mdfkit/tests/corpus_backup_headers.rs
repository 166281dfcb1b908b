//! Backup set headers over the real corpus, checked by relations that must hold rather than by
//! values copied from the decoder: a differential's base is its full backup's checkpoint, log
//! backups chain by first/last LSN, dates are in order, names and versions agree with
//! MANIFEST.tsv, file sizes agree with the file header pages inside, each chain file's type agrees
//! with its name, stripes of one backup agree and stripes of different ones are refused.
//!
//! Without the corpus the test fails under CI and says loudly that it skipped elsewhere.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mdfkit::backup::{BackupMedia, BackupPages, BackupSet, BackupType};
use mdfkit::{Database, ErrorKind};

fn sets(path: &Path) -> Vec<BackupSet> {
    BackupMedia::open(&[path]).unwrap_or_else(|e| panic!("{}: {e}", path.display())).sets().to_vec()
}

fn only(path: &Path) -> BackupSet {
    let s = sets(path);
    assert_eq!(s.len(), 1, "{}", path.display());
    s.into_iter().next().unwrap()
}

fn chain_files(dir: &Path, chain: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir.join("chains").join(chain)).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The type a chain file's name gives it.
fn type_by_name(path: &Path) -> BackupType {
    let name = path.file_name().unwrap().to_string_lossy().to_lowercase();
    if name.ends_with(".trn") || name.contains("_log_") {
        BackupType::Log
    } else if name.contains("-diff") || name.contains("_diff_") {
        BackupType::Differential
    } else {
        BackupType::Full
    }
}

#[test]
fn every_chain_file_has_the_type_its_name_says_and_sane_dates() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut checked = 0;
    for chain in ["cube-query-history", "difftest", "media-password", "stopat", "stripe"] {
        for f in chain_files(&dir, chain) {
            let s = only(&f);
            assert_eq!(s.backup_type, type_by_name(&f), "{}", f.display());
            assert_eq!(s.position, 1);
            let (created, start, finish) = (s.database_creation_date.unwrap(), s.start.unwrap(), s.finish.unwrap());
            assert!(created <= start && start <= finish, "{}: {created} {start} {finish}", f.display());
            assert!(s.first_lsn <= s.last_lsn, "{}", f.display());
            assert!(s.checkpoint_lsn <= s.last_lsn, "{}", f.display());
            assert_eq!(s.database_version, 661, "{}: the chains are SQL Server 2008 R2", f.display());
            assert_eq!(s.compatibility_level, 100);
            assert!(s.software_version.starts_with("10.50."), "{}", s.software_version);
            assert!(!s.compressed);
            assert_eq!(s.files.len(), 2, "{}", f.display());
            // The size counts every stripe; a single file holds it all.
            let len = std::fs::metadata(&f).unwrap().len();
            assert!(s.backup_size > 0 && (s.family_count > 1 || s.backup_size <= len), "{}", f.display());
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
    // The cube chain's file names carry the start time.
    for f in chain_files(&dir, "cube-query-history") {
        let stamp = f.file_stem().unwrap().to_string_lossy().rsplit('_').next().unwrap().to_string();
        let start = only(&f).start.unwrap();
        assert_eq!(format!("{:02}{:02}{:02}", start.hour, start.minute, start.second), stamp, "{}", f.display());
        // Backed up WITH CHECKSUM: the header says so and the data carries CSUM streams.
        assert!(only(&f).checksums, "{}", f.display());
    }
    assert!(!only(&dir.join("chains/difftest/difftest-full.bak")).checksums);
}

#[test]
fn differentials_and_logs_chain_to_their_full_backup() {
    let Some(dir) = common::corpus_dir() else { return };
    for chain in ["cube-query-history", "difftest", "stopat"] {
        let files = chain_files(&dir, chain);
        let all: Vec<(PathBuf, BackupSet)> = files.iter().map(|f| (f.clone(), only(f))).collect();
        let full = &all.iter().find(|(_, s)| s.backup_type == BackupType::Full).unwrap().1;
        let mut diffs = 0;
        for (f, s) in all.iter().filter(|(_, s)| s.backup_type == BackupType::Differential) {
            assert_eq!(s.database_name, full.database_name);
            assert_eq!(s.database_backup_lsn, full.checkpoint_lsn, "{}", f.display());
            assert_eq!(s.differential_base_lsn, Some(full.checkpoint_lsn), "{}", f.display());
            assert_eq!(s.differential_base_guid.as_deref(), Some(full.backup_set_guid.as_str()), "{}", f.display());
            assert!(s.first_lsn > full.last_lsn, "{}", f.display());
            diffs += 1;
        }
        assert!(full.differential_base_lsn.is_none());
        let mut logs: Vec<&BackupSet> =
            all.iter().filter(|(_, s)| s.backup_type == BackupType::Log).map(|(_, s)| s).collect();
        logs.sort_by_key(|s| s.start);
        for pair in logs.windows(2) {
            assert_eq!(pair[1].first_lsn, pair[0].last_lsn, "{chain}: log backups chain");
        }
        for log in &logs {
            assert_eq!(log.database_backup_lsn, full.checkpoint_lsn, "{chain}");
            assert!(log.first_lsn <= full.checkpoint_lsn || log.first_lsn >= full.last_lsn, "{chain}");
        }
        println!("{chain}: {diffs} differentials, {} logs chained to the full backup", logs.len());
        assert!(diffs + logs.len() >= 2, "{chain}");
    }
}

#[test]
fn headers_agree_with_the_manifest_and_the_database_inside() {
    let Some(dir) = common::corpus_dir() else { return };
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut checked = 0;
    for fields in lines.map(|l| l.split('\t').collect::<Vec<_>>()).filter(|f| f[col("kind")] == "bak") {
        let path = dir.join(fields[col("file")]);
        let sets = sets(&path);
        let s = sets.last().unwrap();
        if let Ok(version) = fields[col("dbi_version")].parse::<u16>() {
            assert_eq!(s.database_version, version, "{}", path.display());
        }
        if !fields[col("db_name")].is_empty() {
            assert_eq!(s.database_name, fields[col("db_name")], "{}", path.display());
        }
        let Ok(pages) = BackupPages::open(&path) else { continue };
        let set = pages.backup_set().clone();
        let db = Database::from_source(Arc::new(pages)).unwrap();
        assert_eq!(set.database_name, db.name(), "{}", path.display());
        let boot_collation = mdfkit::collation::name(db.catalog().boot.collation_id);
        if db.catalog().boot.collation_id == 0x1008 {
            // Not in mdfkit's collation table; LCID 0x409 with only "ignore case" set.
            assert_eq!(set.collation, "Latin1_General_CI_AS_KS_WS");
        } else {
            assert_eq!(set.collation, boot_collation, "{}", path.display());
        }
        assert_eq!(set.compatibility_level, db.catalog().boot.compatibility_level as u8, "{}", path.display());
        for h in db.file_headers() {
            let f = set.files.iter().find(|f| i32::from(f.file_id) == i32::from(h.file_id)).unwrap();
            assert_eq!(f.size_bytes, h.size_pages as u64 * 8192, "{}", path.display());
            assert_eq!(f.filegroup, "PRIMARY");
        }
        checked += 1;
    }
    assert!(checked >= 6, "{checked}");
}

#[test]
fn positions_select_backup_sets() {
    let Some(dir) = common::corpus_dir() else { return };
    let path = dir.join("bak/dataplat-appveyor-lab__sharepoint_config.bak");
    let media = BackupMedia::open(&[&path]).unwrap();
    let s = media.sets();
    assert_eq!(s.iter().map(|s| s.position).collect::<Vec<_>>(), [1, 2]);
    assert!(s.iter().all(|s| s.backup_type == BackupType::Full && s.compressed));
    assert_eq!(s[1].database_backup_lsn, s[0].checkpoint_lsn, "the second full follows the first");
    assert!(s[0].finish <= s[1].start);
    assert_eq!(media.default_position(), Some(2));
    for position in [1, 2] {
        let pages = BackupPages::open_position(&[&path], Some(position)).unwrap();
        assert_eq!(pages.backup_set().position, position);
        let db = Database::from_source(Arc::new(pages)).unwrap();
        assert_eq!(db.name(), "SharePoint_Config");
    }
    let e = Database::open_at(&[&path], Some(3)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("no backup set at position 3 (the file holds positions 1, 2"), "{e}");
}

#[test]
fn differential_and_log_backups_are_refused_by_name() {
    let Some(dir) = common::corpus_dir() else { return };
    let e = Database::open(&[dir.join("chains/difftest/difftest-diff1.bak")]).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
    assert!(
        e.to_string().contains(
            "difftest-diff1.bak: position 1 is a differential backup: it holds only the extents changed since its full backup (checkpoint LSN 24000000006800099, backup set GUID F24E3DC4-FB3C-48AA-9360-FC9EE26D1464), which was not given"
        ),
        "{e}"
    );
    assert!(e.to_string().ends_with("give that full backup too"), "{e}");
    let e = Database::open(&[dir.join("chains/stopat/StopAt_1.trn")]).err().unwrap();
    assert!(e.to_string().contains("position 1 is a transaction log backup"), "{e}");
}

#[test]
fn stripes_are_counted_and_checked() {
    let Some(dir) = common::corpus_dir() else { return };
    let stripe = |n: &str| dir.join("chains/stripe").join(n);
    let (a, b) = (only(&stripe("RestoreTimeStripe.bak")), only(&stripe("RestoreTimeStripe1.bak")));
    assert_eq!((a.family_number, a.family_count, b.family_number, b.family_count), (1, 2, 2, 2));
    assert_eq!(a.backup_set_guid, b.backup_set_guid);
    // Either order opens.
    for pair in
        [["RestoreTimeStripe.bak", "RestoreTimeStripe1.bak"], ["RestoreTimeStripe1.bak", "RestoreTimeStripe.bak"]]
    {
        Database::open(&[stripe(pair[0]), stripe(pair[1])]).unwrap();
    }
    let e = Database::open(&[stripe("RestoreTimeStripe1.bak")]).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
    assert!(e.to_string().contains("striped over 2 files and stripe 1 is missing (this file is stripe 2"), "{e}");
    // A stripe of the log backup is another backup: the full's stripe 2 is still missing.
    let e = Database::open(&[stripe("RestoreTimeStripe.bak"), stripe("RestoreTimeStripe_1a.trn")]).err().unwrap();
    assert!(e.to_string().contains("striped over 2 files and stripe 2 is missing (this file is stripe 1"), "{e}");
    let e = BackupMedia::open(&[stripe("RestoreTimeStripe.bak"), stripe("RestoreTimeStripe_1a.trn")]).err().unwrap();
    assert!(e.to_string().contains("belongs to another backup than"), "{e}");
    // The same file twice.
    let e = Database::open(&[stripe("RestoreTimeStripe.bak"), stripe("RestoreTimeStripe.bak")]).err().unwrap();
    assert!(e.to_string().contains("is the same stripe (1 of 2)"), "{e}");
    // chinook.bak is the first of two stripes.
    let c = only(&dir.join("bak/mariamahmed08080-chinook_analysis__chinook.bak"));
    assert_eq!((c.family_number, c.family_count), (1, 2));
}

#[test]
fn media_passwords_are_reported() {
    let Some(dir) = common::corpus_dir() else { return };
    assert!(only(&dir.join("chains/media-password/passwd.bak")).media_password);
    assert!(!only(&dir.join("chains/stopat/StopAt.bak")).media_password);
    for f in chain_files(&dir, "difftest") {
        assert!(!only(&f).media_password && !only(&f).encrypted);
    }
}
