//! The parallel scan on tables of many tasks (the corpus' tables are one task each, read on the
//! calling thread): every row comes back once, the same rows as the serial scan, and a limit
//! stops it at exactly that many rows. CSV and JSON Lines exports formatted on several threads
//! hold the same lines as the serial export. A damaged database's check (pages, then catalog)
//! finds the same problems, in the same order, on one thread and on four, keys out of order
//! included.

// Only `open` is used here; the round-trip helpers serve the other test files.
#[allow(dead_code)]
mod common;
// The reader's test helpers: only the serial/parallel comparison is used here.
#[allow(dead_code)]
#[path = "../../mdfkit/tests/common/mod.rs"]
mod corpus_common;

use mdfkit::export::{export_table, ExportFormat, ExportOptions, LocalOutput};
use mdfkit::scan::Flow;
use mdfkit::ScanOptions;
use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};

fn many_task_tables() -> Spec {
    let table = |name: &str, layout: Layout| {
        TableSpec::new("dbo", name, layout, 20_000)
            .column(ColumnSpec::new("ID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(ColumnSpec::new(
                "Name",
                ColType::NVarChar(Some(80)),
                Gen::Length { min: 10, max: 70 },
                Nulls::Every(9),
            ))
            .column(ColumnSpec::new("Amount", ColType::Decimal(12, 2), Gen::Random, Nulls::Every(5)))
    };
    Spec::new("parallel", Version::V904, 5)
        .table(table("Clustered", Layout::Clustered { key: 0 }))
        .table(table("Heap", Layout::Heap))
}

#[test]
fn parallel_scans_of_many_tasks_return_every_row_once() {
    let (db, _) = common::open(&many_task_tables());
    for name in ["dbo.Clustered", "dbo.Heap"] {
        let t = db.catalog().find_table(name).unwrap();
        assert!(t.used_pages() > 3 * 64, "{name}: {} pages, want several 64-page tasks", t.used_pages());
        let options = ScanOptions { batch_size: 1000, ..Default::default() };
        let (serial, parallel) = corpus_common::serial_and_parallel_rows(&db, &t, &options, 3);
        assert_eq!(serial.len(), 20_000, "{name}");
        assert_eq!(serial, parallel, "{name}");

        let limited = ScanOptions { batch_size: 700, limit: Some(12_345), ..Default::default() };
        let mut rows = 0;
        db.scan(&t)
            .options(&limited)
            .threads(3)
            .batches(|b| {
                rows += b.num_rows();
                Ok(Flow::Continue)
            })
            .unwrap();
        assert_eq!(rows, 12_345, "{name}: limit");
    }
}

#[test]
fn csv_and_json_lines_formatted_on_several_threads_hold_the_serial_lines() {
    let (db, _) = common::open(&many_task_tables());
    let dir = std::env::temp_dir().join(format!("mdfkit-parallel-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["dbo.Clustered", "dbo.Heap"] {
        let t = db.catalog().find_table(name).unwrap();
        for format in [ExportFormat::Csv, ExportFormat::Jsonl] {
            let export = |threads: usize| {
                let path = dir.join(format!("{name}.{threads}.{}", format.extension()));
                let options = ExportOptions { threads, ..Default::default() };
                let stats =
                    export_table(&db, &t, format, Box::new(LocalOutput::create(&path).unwrap()), &options, |_| {})
                        .unwrap();
                assert_eq!(stats.rows, 20_000, "{name} {format:?} on {threads} threads");
                std::fs::read_to_string(&path).unwrap()
            };
            let serial = export(1);
            let parallel = export(3);
            let (mut serial_lines, mut parallel_lines): (Vec<&str>, Vec<&str>) =
                (serial.lines().collect(), parallel.lines().collect());
            if format == ExportFormat::Csv {
                assert_eq!(serial_lines[0], "ID,Name,Amount");
                assert_eq!(parallel_lines[0], "ID,Name,Amount", "the header comes once, first");
            }
            serial_lines.sort_unstable();
            parallel_lines.sort_unstable();
            assert_eq!(serial_lines, parallel_lines, "{name} {format:?}");
            // The spec's IDs, 1 to 20,000, each once.
            let mut ids: Vec<u32> = parallel_lines
                .iter()
                .filter_map(|l| l.trim_start_matches("{\"ID\":").split([',', '}']).next()?.parse().ok())
                .collect();
            ids.sort_unstable();
            assert_eq!(ids, (1..=20_000).collect::<Vec<u32>>(), "{name} {format:?}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_failed_export_leaves_no_file_behind() {
    use mdfkit_forge::forge;
    let mut files = forge(&many_task_tables()).unwrap();
    // The forge writes user tables first: Clustered's data pages, then Heap's. One damaged page
    // in the middle of each (its checksum no longer matches).
    for page in [150usize, 400] {
        files[0].bytes[page * 8192 + 4000] ^= 0xff;
    }
    let source = std::sync::Arc::new(
        mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect()).unwrap(),
    );
    let db = mdfkit::Database::from_source(source).unwrap();
    let dir = std::env::temp_dir().join(format!("mdfkit-failed-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["dbo.Clustered", "dbo.Heap"] {
        let t = db.catalog().find_table(name).unwrap();
        for format in [ExportFormat::Parquet, ExportFormat::Csv, ExportFormat::Arrow] {
            for threads in [1, 3] {
                let path = dir.join(format!("{name}.{threads}.{}", format.extension()));
                let options = ExportOptions { threads, ..Default::default() };
                let error =
                    export_table(&db, &t, format, Box::new(LocalOutput::create(&path).unwrap()), &options, |_| {})
                        .expect_err(&format!("{name} {format:?} on {threads} threads reads a damaged page"));
                assert!(error.to_string().contains("checksum mismatch"), "{error}");
                assert!(!path.exists(), "{name} {format:?} on {threads} threads left {}", path.display());
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_damaged_forged_database_checks_the_same_on_one_thread_and_on_four() {
    let mut files = mdfkit_forge::forge(&many_task_tables()).expect("forge");
    let bytes = &mut files[0].bytes;
    let pages = bytes.len() / mdfkit::page::PAGE_SIZE;
    assert!(pages > 4 * 128, "{pages} pages, want several check tasks");
    // A byte flipped in every 37th data or index page (type byte 1 or 2): the forge writes
    // checksums, so each is a problem.
    let damaged: Vec<usize> =
        (8..pages).filter(|&p| matches!(bytes[p * mdfkit::page::PAGE_SIZE + 1], 1 | 2)).step_by(37).collect();
    for &page in &damaged {
        bytes[page * mdfkit::page::PAGE_SIZE + 200] ^= 0x10;
    }
    let source = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())
        .expect("forged files are data files");
    let (one, one_stats) = mdfkit::check::check_pages_on(&source, 1, |_| {});
    let (four, four_stats) = mdfkit::check::check_pages_on(&source, 4, |_| {});
    assert_eq!(one, four, "problems on 1 thread and on 4");
    assert_eq!(one_stats, four_stats, "counts on 1 thread and on 4");
    let named: Vec<usize> = one.iter().filter_map(|p| p.page).map(|id| id.page as usize).collect();
    assert!(damaged.len() >= 10, "{} damaged pages", damaged.len());
    assert_eq!(named, damaged, "one problem per damaged page, in page order");
    assert!(one.iter().all(|p| p.what.starts_with("checksum mismatch")), "{one:?}");
}

/// The catalog pass of a forged database with a byte flipped in every 37th page holding rows:
/// each damaged page is named by its allocation unit's owner check, the leaf chain and each
/// table's rows stop at its first damaged page in scan order (key order, IAM order), on one
/// thread and on four alike; the whole check (`check_on`) finds the same as the two passes.
#[test]
fn a_damaged_forged_database_checks_its_catalog_the_same_on_one_thread_and_on_four() {
    let spec = many_task_tables();
    let (db, _) = common::open(&spec);
    let mut scan_order: Vec<(&str, Vec<usize>)> = Vec::new();
    for name in ["dbo.Clustered", "dbo.Heap"] {
        let mut pages: Vec<usize> = Vec::new();
        let t = db.catalog().find_table(name).unwrap();
        db.scan(&t)
            .records(|_, at| {
                if pages.last() != Some(&(at.page.page as usize)) {
                    pages.push(at.page.page as usize);
                }
                Ok(Flow::Continue)
            })
            .unwrap();
        scan_order.push((name, pages));
    }
    let damaged: Vec<usize> =
        scan_order.iter().flat_map(|(_, pages)| pages.iter().copied().skip(5).step_by(37)).collect();
    let mut files = mdfkit_forge::forge(&spec).expect("forge");
    for &page in &damaged {
        files[0].bytes[page * mdfkit::page::PAGE_SIZE + 200] ^= 0x10;
    }
    let source = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())
        .expect("forged files are data files");
    let db = mdfkit::Database::from_source(std::sync::Arc::new(source)).expect("the catalog is not damaged");
    let (one, one_stats) = mdfkit::check::check_catalog_on(&db, 1).unwrap();
    let (four, four_stats) = mdfkit::check::check_catalog_on(&db, 4).unwrap();
    assert_eq!(one, four, "catalog problems on 1 thread and on 4");
    assert_eq!(one_stats, four_stats, "catalog counts on 1 thread and on 4");
    let mut owners: Vec<usize> = one
        .iter()
        .filter(|p| p.object.as_deref().is_some_and(|o| o.contains("(allocation unit")))
        .filter_map(|p| p.page)
        .map(|id| id.page as usize)
        .collect();
    owners.sort_unstable();
    owners.dedup();
    let mut want = damaged.clone();
    want.sort_unstable();
    assert!(want.len() >= 10, "{} damaged pages", want.len());
    assert_eq!(owners, want, "each damaged page named by its unit: {one:?}");
    // The leaf chain cannot be followed past its first damaged page: the clustered unit's last
    // problem.
    let mut clustered =
        one.iter().filter(|p| p.object.as_deref().is_some_and(|o| o.starts_with("dbo.Clustered index")));
    assert_eq!(clustered.next_back().and_then(|p| p.page).map(|id| id.page as usize), Some(scan_order[0].1[5]));
    for (table, pages) in &scan_order {
        let rows: Vec<_> = one.iter().filter(|p| p.object.as_deref() == Some(*table)).collect();
        assert_eq!(rows.len(), 1, "{table}: {rows:?}");
        assert_eq!(rows[0].page.map(|id| id.page as usize), Some(pages[5]), "{table}: {rows:?}");
        assert!(rows[0].what.starts_with("checksum mismatch"), "{rows:?}");
    }
    // The whole check, each page read once for both passes, finds what the two passes find.
    let (pages, page_stats) = mdfkit::check::check_pages_on(db.reader().source(), 1, |_| {});
    assert_eq!(pages.len(), damaged.len(), "{pages:?}");
    for threads in [1, 4] {
        let (whole, stats) = mdfkit::check::check_on(&db, threads, &|_| {}).expect("whole check");
        assert_eq!(whole, pages.iter().chain(&one).cloned().collect::<Vec<_>>(), "{threads} threads");
        assert_eq!((stats.pages_checked, stats.rows_checked), (page_stats.pages_checked, one_stats.rows_checked));
    }
}

/// A clustered key set below its predecessor (checksum recomputed): on a page in a task's
/// middle and on the first page of a later task (compared with the task before it), the check
/// names that page and slot, on one thread and on four.
#[test]
fn keys_out_of_order_are_found_across_tasks_on_one_thread_and_on_four() {
    let spec = many_task_tables();
    let (db, _) = common::open(&spec);
    let t = db.catalog().find_table("dbo.Clustered").unwrap();
    let mut leaf_pages: Vec<(mdfkit::PageId, Vec<u16>)> = Vec::new();
    db.scan(&t)
        .records(|_, at| {
            match leaf_pages.last_mut() {
                Some((page, slots)) if *page == at.page => slots.push(at.slot),
                _ => leaf_pages.push((at.page, vec![at.slot])),
            }
            Ok(Flow::Continue)
        })
        .unwrap();
    assert!(leaf_pages.len() > 3 * 64, "{} leaf pages, want several tasks", leaf_pages.len());
    // The last row of page 10 in chain order; the first row of page 128 (a task's first).
    let (mid, mid_slots) = &leaf_pages[10];
    let (first, first_slots) = &leaf_pages[128];
    for (page, slot) in [(*mid, *mid_slots.last().unwrap()), (*first, first_slots[0])] {
        let mut files = mdfkit_forge::forge(&spec).expect("forge");
        let bytes = &mut files[0].bytes[page.page as usize * 8192..][..8192];
        let slot_at = 8192 - 2 * (usize::from(slot) + 1);
        let record = usize::from(u16::from_le_bytes([bytes[slot_at], bytes[slot_at + 1]]));
        // ID (int, the clustered key) is the first fixed column, at offset 4.
        bytes[record + 4..record + 8].copy_from_slice(&(-1i32).to_le_bytes());
        let checksum = mdfkit::page::protection::page_checksum(bytes);
        bytes[60..64].copy_from_slice(&checksum.to_le_bytes());
        let source = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())
            .expect("forged files are data files");
        let db = mdfkit::Database::from_source(std::sync::Arc::new(source)).unwrap();
        let want = vec![format!(
            "page {page}: dbo.Clustered: slot {slot}: clustered key lower than the row before it in the leaf chain"
        )];
        for threads in [1, 4] {
            let (problems, _) = mdfkit::check::check_catalog_on(&db, threads).unwrap();
            let found: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            assert_eq!(found, want, "{threads} threads");
        }
    }
}
