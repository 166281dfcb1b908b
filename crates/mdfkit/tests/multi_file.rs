//! Several files given together: matched by their own file ids, refused when they belong to
//! different databases or when the primary file is missing. There is no multi-file database in the
//! corpus, so the secondary files here are corpus files re-addressed as file 3 (page 0 and 1 headers
//! rewritten, checksums recomputed).

mod common;

use std::path::{Path, PathBuf};

use mdfkit::page::protection::page_checksum;
use mdfkit::{Database, ErrorKind};

/// Copies a corpus data file to a temp file whose first two pages claim file id `file_id`.
fn readdressed_copy(source: &Path, file_id: u16, tag: &str) -> PathBuf {
    let mut bytes = std::fs::read(source).unwrap();
    for page in 0..2 {
        let p = &mut bytes[page * 8192..(page + 1) * 8192];
        p[36..38].copy_from_slice(&file_id.to_le_bytes());
        let checksum = page_checksum(p);
        p[60..64].copy_from_slice(&checksum.to_le_bytes());
    }
    let path = std::env::temp_dir().join(format!("mdfkit-{}-{tag}.ndf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn refuses_files_of_two_databases_and_a_missing_primary() {
    let Some(dir) = common::corpus_dir() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let other = readdressed_copy(&dir.join("mdf/itsligo-sampledbs__bookshop.mdf"), 3, "other");

    let err = Database::open(&[&other, &pubs]).err().expect("files of two databases must not open together");
    assert_eq!(err.kind(), ErrorKind::NotADatabase);
    assert!(err.to_string().contains("belongs to another database"), "{err}");
    assert!(err.to_string().starts_with(&other.display().to_string()), "{err}");

    let err = Database::open(&[&other]).err().expect("no primary file");
    assert_eq!(err.kind(), ErrorKind::MissingFile);
    assert!(err.to_string().contains("primary data file (file id 1"), "{err}");
    std::fs::remove_file(other).ok();
}

#[test]
fn the_same_file_twice_is_refused() {
    let Some(dir) = common::corpus_dir() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let err = Database::open(&[&pubs, &pubs]).err().unwrap();
    assert!(err.to_string().contains("file id 1 is also the id of"), "{err}");
}

#[test]
fn a_single_file_database_has_no_missing_files() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("big/jdhj-edx__adventureworkslt2012_data.mdf")]).unwrap();
    assert!(db.missing_files().is_empty());
}

/// A TDE database: the boot page is clear, the catalog pages are ciphertext. Simulated by filling
/// pubs' first sysallocunits page (1:16) with pseudo-random bytes.
#[test]
fn an_encrypted_database_is_reported_as_such() {
    let Some(dir) = common::corpus_dir() else { return };
    let mut bytes = std::fs::read(dir.join("mdf/itsligo-sampledbs__pubs.mdf")).unwrap();
    let mut x = 0x1234_5678_9abc_def0u64;
    for b in &mut bytes[16 * 8192..17 * 8192] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let source = mdfkit::source::DataFiles::from_memory(vec![("tde.mdf".into(), bytes)]).unwrap();
    let err = Database::from_source(std::sync::Arc::new(source)).err().expect("must not open");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("Transparent Data Encryption"), "{err}");
}
