//! Inputs that are not data files get one clear error, never a panic.

use std::path::PathBuf;

use mdfkit::{Database, ErrorKind};

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mdfkit-test-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn open_error(name: &str, bytes: &[u8]) -> (ErrorKind, String) {
    let path = temp_file(name, bytes);
    let err = Database::open(&[&path]).err().expect("must not open");
    std::fs::remove_file(&path).ok();
    (err.kind(), err.to_string())
}

#[test]
fn names_the_problem_for_each_kind_of_wrong_file() {
    // A file that starts like a backup is read as one: this one is damaged.
    let (kind, msg) = open_error("bak", &[b"TAPE".as_slice(), &[0u8; 8188]].concat());
    assert!(kind.is_bad_input(), "{kind:?}: {msg}");
    assert!(msg.contains("byte"), "the message names the offset: {msg}");

    let (kind, msg) = open_error("odd", &vec![0u8; 8192 * 3 + 100]);
    assert_eq!(kind, ErrorKind::NotADatabase);
    assert!(msg.contains("not a whole number of 8192-byte pages"), "{msg}");

    let noise: Vec<u8> = (0..8192 * 4u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let (kind, msg) = open_error("noise", &noise);
    assert_eq!(kind, ErrorKind::NotADatabase);
    assert!(msg.contains("not a file header page"), "{msg}");

    let (kind, _) = open_error("tiny", b"hello");
    assert_eq!(kind, ErrorKind::NotADatabase);
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = Database::open(&["/nonexistent/shop.mdf"]).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.to_string().starts_with("/nonexistent/shop.mdf: cannot open"), "{err}");
}
