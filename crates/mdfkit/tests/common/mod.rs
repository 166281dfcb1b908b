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
