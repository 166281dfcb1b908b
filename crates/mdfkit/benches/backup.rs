//! Backup read throughput from memory: every page of every corpus backup served through the
//! backup page source (container walk, and XPRESS decompression for compressed backups). Prints
//! MB/s of pages served for compressed and uncompressed backups. Run:
//! `cargo bench -p mdfkit --bench backup` (needs `MDFKIT_CORPUS` or `../shared/corpus`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mdfkit::backup::BackupPages;
use mdfkit::page::PageId;
use mdfkit::sniff::{sniff, FileFormat};
use mdfkit::source::PageSource;

fn main() {
    let corpus = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    let backups: Vec<(PathBuf, Vec<u8>)> = ["bak", "gt"]
        .iter()
        .flat_map(|d| std::fs::read_dir(corpus.join(d)).into_iter().flatten().flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "bak"))
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect();
    if backups.is_empty() {
        eprintln!("no corpus backups at {} (set MDFKIT_CORPUS)", corpus.display());
        std::process::exit(1);
    }
    for compressed in [false, true] {
        let set: Vec<&(PathBuf, Vec<u8>)> =
            backups.iter().filter(|(_, b)| (sniff(b) == FileFormat::CompressedBackup) == compressed).collect();
        let (mut pages, mut input, mut passes) = (0u64, 0u64, 0u32);
        let mut buf = vec![0u8; 8192];
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            for (path, bytes) in &set {
                let Ok(source) = BackupPages::from_bytes(path.clone(), bytes.clone()) else { continue };
                input += bytes.len() as u64;
                for file in source.files() {
                    for page in 0..file.page_count {
                        let id = PageId::new(file.file_id, page);
                        if source.page_location(id).is_some() && source.read_raw(id, &mut buf).is_ok() {
                            pages += 1;
                        }
                    }
                }
            }
            passes += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{} backups ({} files x {passes} passes): {:.0} MB/s of pages served, {:.0} MB/s of backup read",
            if compressed { "compressed  " } else { "uncompressed" },
            set.len(),
            pages as f64 * 8192.0 / 1e6 / seconds,
            input as f64 / 1e6 / seconds
        );
    }
}
