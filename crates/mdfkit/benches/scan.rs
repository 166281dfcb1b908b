//! Scan throughput from memory: every user table of the corpus data files decoded to Arrow
//! batches (and discarded), repeated until a few seconds have passed. Prints MB/s of pages read
//! and rows/s. Run: `cargo bench -p mdfkit --bench scan` (needs `MDFKIT_CORPUS` or
//! `../shared/corpus`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mdfkit::scan::Flow;
use mdfkit::source::DataFiles;
use mdfkit::{Database, ScanOptions};

fn main() {
    let corpus = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    let files: Vec<PathBuf> = ["big", "mdf"]
        .iter()
        .flat_map(|d| std::fs::read_dir(corpus.join(d)).into_iter().flatten().flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "mdf"))
        .collect();
    if files.is_empty() {
        eprintln!("no corpus at {} (set MDFKIT_CORPUS)", corpus.display());
        std::process::exit(1);
    }
    let databases: Vec<Database> = files
        .iter()
        .filter_map(|f| {
            let bytes = std::fs::read(f).ok()?;
            let source = DataFiles::from_memory(vec![(f.display().to_string(), bytes)]).ok()?;
            Database::from_source(Arc::new(source)).ok()
        })
        .collect();
    let options = ScanOptions::default();
    let tables: Vec<Vec<_>> = databases.iter().map(|db| db.catalog().tables(false)).collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, cores] {
        run(&databases, &tables, &options, threads);
    }
}

fn run(
    databases: &[Database],
    tables: &[Vec<mdfkit::catalog::model::TableInfo>],
    options: &ScanOptions,
    threads: usize,
) {
    let (mut pages, mut rows, mut passes) = (0u64, 0u64, 0u32);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        for (db, tables) in databases.iter().zip(tables) {
            for table in tables {
                if let Ok(stats) = db.scan(table).options(options).threads(threads).batches(|batch| {
                    std::hint::black_box(batch.num_rows());
                    Ok(Flow::Continue)
                }) {
                    pages += stats.pages;
                    rows += stats.rows;
                }
            }
        }
        passes += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let mb = pages as f64 * 8192.0 / 1e6;
    println!(
        "scan to Arrow, {threads} thread(s), from memory: {} databases x {passes} passes: {:.0} MB/s of data pages, {:.0} rows/s",
        databases.len(),
        mb / seconds,
        rows as f64 / seconds
    );
}
