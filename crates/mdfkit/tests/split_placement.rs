//! A split of a full backup carries where the backup's pages lie (`backup::PagePlacement`), so a
//! worker opens the backup without placing them again. On the corpus' compressed backups
//! (`MDFKIT_CORPUS`): the placement covers every page the backup holds, survives the split's JSON,
//! and a database opened from the split serves every page with the bytes of one that placed the
//! pages itself; a placement that fits is used as given, placements that do not fit the backup
//! (another backup set, runs outside the stripe) are ignored. Each open's time is printed (debug build; not asserted). Its own test
//! binary: placements given to a process are kept process-wide.

mod common;

use std::time::Instant;

use mdfkit::backup::{remember_placement, PagePlacement};
use mdfkit::page::PageId;
use mdfkit::split::ScanSplit;
use mdfkit::Database;

/// Compressed (MSSQLBAK) full backups of the corpus.
const BACKUPS: &[&str] = &["bak/dataplat-appveyor-lab__sharepoint_config.bak", "gt/TutorialDB.bak"];

fn same_pages(placed: &Database, reopened: &Database, placement: &PagePlacement) {
    let (mut a, mut b) = (vec![0u8; 8192], vec![0u8; 8192]);
    for &(_, _, file, first, count) in &placement.runs {
        for page in first..first + count {
            let id = PageId::new(file, page);
            placed.reader().source().read_raw(id, &mut a).unwrap();
            reopened.reader().source().read_raw(id, &mut b).unwrap();
            assert!(a == b, "page {id}: other bytes");
        }
    }
}

#[test]
fn splits_of_compressed_backups_carry_the_page_placement() {
    let Some(corpus) = common::corpus_dir() else { return };
    for name in BACKUPS {
        let path = corpus.join(name);
        let started = Instant::now();
        let db = Database::open(&[&path]).unwrap();
        let placing = started.elapsed();
        let table = db.catalog().tables(false).into_iter().find(|t| t.rows() > 0).unwrap();
        let sources = [path.to_str().unwrap()];
        let splits = db.scan(&table).splits(&sources, None, 64 << 10).unwrap();
        let placement = splits[0].placement.clone().expect("a full backup's split carries its placement");
        assert!(splits.iter().all(|s| s.placement.as_ref() == Some(&placement)));
        let held = mdfkit::backup::BackupPages::open(&path).unwrap().page_count();
        assert_eq!(placement.runs.iter().map(|r| r.4 as usize).sum::<usize>(), held, "{name}");
        assert!(placement.runs.len() * 8 < held, "{name}: runs, not pages ({} runs)", placement.runs.len());

        // Placements that do not fit are ignored: the pages are placed again, the same.
        let mut elsewhere = placement.clone();
        elsewhere.runs.iter_mut().for_each(|r| r.1 = u64::MAX / 2);
        remember_placement(elsewhere.clone());
        same_pages(&db, &Database::open(&[&path]).unwrap(), &placement);
        let other_set = PagePlacement { backup_set_guid: "00000000-0000-0000-0000-000000000000".into(), ..elsewhere };
        remember_placement(other_set);
        same_pages(&db, &Database::open(&[&path]).unwrap(), &placement);

        // A placement that fits is used as given: one shifted by a page serves other bytes
        // (or the catalog cannot even be read).
        let mut shifted = placement.clone();
        shifted.runs.iter_mut().for_each(|r| (r.1, r.4) = (r.1 + 8192, r.4 - 1));
        remember_placement(shifted);
        let (first_file, first_page) = (placement.runs[0].2, placement.runs[0].3);
        if let Ok(misplaced) = Database::open(&[&path]) {
            let (mut a, mut b) = (vec![0u8; 8192], vec![0u8; 8192]);
            db.reader().source().read_raw(PageId::new(first_file, first_page), &mut a).unwrap();
            misplaced.reader().source().read_raw(PageId::new(first_file, first_page), &mut b).unwrap();
            assert!(a != b, "{name}: the placement given was not used");
        }

        // A worker: the split from its JSON.
        let split = ScanSplit::from_json(&splits[0].to_json()).unwrap();
        let started = Instant::now();
        let worker = split.open().unwrap();
        let placed = started.elapsed();
        same_pages(&db, &worker, &placement);
        eprintln!(
            "{name}: open placing the pages {:.3} s, a worker's open with the split's placement {:.3} s ({} runs, {held} pages)",
            placing.as_secs_f64(),
            placed.as_secs_f64(),
            placement.runs.len()
        );
    }
}
