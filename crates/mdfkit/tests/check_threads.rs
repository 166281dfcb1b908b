//! The page check on several threads finds exactly what it finds on one, problem for problem and
//! in the same order, with the same counts: on every data file of the corpus as it is, with bytes
//! flipped across its pages, and with its PFS page's record out of reach as well (every page of the
//! interval is then checked as allocated, the junk pages past the last allocation included, so problems come
//! from most tasks).

mod common;

use common::Rng;

use mdfkit::check::{check_pages_on, CheckStats, Problem};
use mdfkit::page::PAGE_SIZE;
use mdfkit::source::DataFiles;

fn check(name: &str, bytes: &[u8], threads: usize) -> (Vec<Problem>, CheckStats, u64) {
    let source = DataFiles::from_memory(vec![(name.to_string(), bytes.to_vec())]).unwrap();
    let mut last_progress = 0;
    let (problems, stats) = check_pages_on(&source, threads, |n| {
        assert!(n >= last_progress, "{name}: progress went back from {last_progress} to {n}");
        last_progress = n;
    });
    (problems, stats, last_progress)
}

/// A byte flipped in every fifth page from page 4 on (file header, PFS, GAM and SGAM spared).
fn flipped(clean: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = clean.to_vec();
    for page in (4..bytes.len() / PAGE_SIZE).step_by(5) {
        let at = page * PAGE_SIZE + 96 + rng.below(PAGE_SIZE - 96);
        bytes[at] ^= 1 << rng.below(8);
    }
    bytes
}

#[test]
fn one_thread_and_four_find_the_same_problems_in_the_same_order() {
    let Some(dir) = common::corpus_dir() else { return };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let files: Vec<&str> = manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').collect::<Vec<_>>().get(..2).map(|f| (f[0], f[1])))
        .filter(|(_, kind)| *kind == "mdf")
        .map(|(path, _)| path)
        .collect();
    assert!(files.len() >= 30, "MANIFEST.tsv lists {} data files", files.len());
    let mut rng = Rng(0x5eed_c4ec);
    let mut damaged_problems = 0;
    for file in files {
        let clean = std::fs::read(dir.join(file)).unwrap();
        let pages = (clean.len() / PAGE_SIZE) as u64;
        let mut no_pfs = flipped(&clean, &mut rng);
        no_pfs[2 * PAGE_SIZE - 2..2 * PAGE_SIZE].copy_from_slice(&9000u16.to_le_bytes());
        for (what, bytes) in
            [("clean", clean.clone()), ("flipped", flipped(&clean, &mut rng)), ("PFS slot out of the page", no_pfs)]
        {
            let one = check(file, &bytes, 1);
            let four = check(file, &bytes, 4);
            assert_eq!(one.0, four.0, "{file} ({what}): problems on 1 thread and on 4");
            assert_eq!(one.1, four.1, "{file} ({what}): counts on 1 thread and on 4");
            assert_eq!(one.1.pages_checked + one.1.pages_skipped_unallocated, pages, "{file} ({what}): pages counted");
            assert_eq!((one.2, four.2), (pages, pages), "{file} ({what}): progress ends at every page");
            if what == "PFS slot out of the page" {
                assert!(
                    one.0.first().is_some_and(|p| p.what.starts_with("PFS page unreadable")),
                    "{file}: the damaged PFS page is reported first: {:?}",
                    one.0.first()
                );
            }
            if what != "clean" {
                damaged_problems += one.0.len();
            }
        }
    }
    eprintln!("{damaged_problems} problems in the damaged copies, the same on 1 thread and on 4");
    assert!(damaged_problems > 1000, "the damaged copies gave only {damaged_problems} problems");
}
