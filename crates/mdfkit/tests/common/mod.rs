//! Shared by the corpus tests: where the corpus is, and what to do when it is not there.

use std::path::{Path, PathBuf};

/// The corpus folder (`MDFKIT_CORPUS`, default `../shared/corpus` beside the repository). Without
/// it the calling test fails under CI and prints a loud SKIPPED line elsewhere.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!("corpus not found at {} (set MDFKIT_CORPUS): CI must run the corpus tests", dir.display());
    }
    eprintln!(
        "\n*** SKIPPED: corpus not found at {} (set MDFKIT_CORPUS); corpus tests did not run ***\n",
        dir.display()
    );
    None
}

/// xorshift64*: a fixed sequence, so every run damages the same bytes. (Not every test that
/// shares this module damages files.)
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The rows of `table` read by the serial scan and by the parallel scan on `threads` threads,
/// each row spelled out and both lists sorted: the parallel scan returns rows in page allocation
/// order, so the two are compared as multisets. (Not every test that shares this module scans.)
#[allow(dead_code)]
pub fn serial_and_parallel_rows(
    db: &mdfkit::Database,
    table: &mdfkit::catalog::model::TableInfo,
    options: &mdfkit::ScanOptions,
    threads: usize,
) -> (Vec<String>, Vec<String>) {
    let rows_of = |parallel: bool| {
        let mut rows = Vec::new();
        let mut spell = |b: arrow_array::RecordBatch| {
            rows.extend(
                (0..b.num_rows())
                    .map(|i| b.columns().iter().map(|c| format!("{:?}", c.slice(i, 1))).collect::<Vec<_>>().join("|")),
            );
            Ok(mdfkit::scan::Flow::Continue)
        };
        if parallel {
            db.scan_batches_parallel(table, options, threads, &mut spell)
        } else {
            db.scan_batches(table, options, &mut spell)
        }
        .unwrap_or_else(|e| panic!("{}: {e}", table.qualified_name()));
        rows.sort();
        rows
    };
    (rows_of(false), rows_of(true))
}
