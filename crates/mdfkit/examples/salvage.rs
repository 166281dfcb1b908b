//! Reads a damaged database as far as it can: every row of every undamaged page of every user
//! table, and a list of the pages and records that had to be skipped (what `mdfkit cat
//! --salvage` and `mdfkit export --salvage` do). Without salvage a read stops at the first
//! damaged page, naming it.
//!
//! ```sh
//! cargo run -p mdfkit --example salvage -- damaged.mdf [more.ndf ...]
//! cargo run -p mdfkit --example salvage     # the demo's shop database with one page damaged
//! ```

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

use mdfkit::scan::Flow;
use mdfkit::Database;

const PAGE_SIZE: usize = 8192;

fn main() -> Result<(), Box<dyn Error>> {
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        let dir = std::env::temp_dir().join("mdfkit-example-salvage");
        let (path, page) = forged_damaged_shop(&dir)?;
        eprintln!("no file given: the demo's shop database with page 1:{page} damaged, forged into {}", dir.display());
        paths = vec![path];
    }
    salvage(&paths, &mut std::io::stdout().lock())
}

/// Writes `shop.mdf` into `dir` with one byte flipped in the middle of a user table's data page
/// (its checksum no longer matches); returns the file and the damaged page's number in file 1.
fn forged_damaged_shop(dir: &Path) -> Result<(PathBuf, usize), Box<dyn Error>> {
    let mut files = mdfkit_forge::forge(&mdfkit_forge::samples::shop())?;
    let primary = &mut files[0].bytes;
    // Read straight from the page headers, not through mdfkit: type 1 is a data page, and an
    // allocation unit id high part (index id, offset 6) of 256 (1 << 56 >> 48) marks the forge's
    // user tables (system tables' units have 0 there).
    let data_pages: Vec<usize> = (0..primary.len() / PAGE_SIZE)
        .filter(|&p| {
            let header = &primary[p * PAGE_SIZE..];
            header[1] == 1 && u16::from_le_bytes([header[6], header[7]]) == 256
        })
        .collect();
    let page = *data_pages.get(data_pages.len() / 2).ok_or("the forged database has no user data page")?;
    primary[page * PAGE_SIZE + 4000] ^= 0x5a;
    std::fs::create_dir_all(dir)?;
    let path = dir.join("shop.mdf");
    std::fs::write(&path, primary)?;
    Ok((path, page))
}

/// Reads every user table with salvage on; writes a line per table (rows read, pages skipped)
/// and one per page or record skipped, with the reason.
fn salvage(paths: &[PathBuf], out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    // open_salvaging also reads a striped backup with stripes missing; for data files it is open.
    let db = Database::open_salvaging(paths, None)?;
    for table in db.catalog().tables(false) {
        let stats = db.scan(&table).salvage(true).records(|_record, _location| Ok(Flow::Continue))?;
        writeln!(out, "{:<30} {:>10} rows read, {} skipped", table.qualified_name(), stats.rows, stats.skipped.len())?;
        for skipped in &stats.skipped {
            let page = skipped.page.map_or("?".to_string(), |p| p.to_string());
            let slot = skipped.slot.map_or(String::new(), |s| format!(" slot {s}"));
            writeln!(out, "  skipped page {page}{slot}: {}", skipped.reason)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_damaged_page_and_names_it() {
        let dir = std::env::temp_dir().join(format!("mdfkit-example-salvage-test-{}", std::process::id()));
        let (path, page) = forged_damaged_shop(&dir).unwrap();
        let mut out = Vec::new();
        salvage(std::slice::from_ref(&path), &mut out).unwrap();
        // Without salvage the same file stops at the damaged page.
        let db = Database::open(&[&path]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(out).unwrap();
        let skipped: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("skipped page")).collect();
        assert_eq!(skipped.len(), 1, "{text}");
        assert!(skipped[0].trim_start().starts_with(&format!("skipped page 1:{page}")), "{text}");
        let damaged_table = text.lines().find(|l| l.ends_with(" 1 skipped")).expect("the damaged page's table");
        let name = damaged_table.split_whitespace().next().unwrap();
        let table = db.catalog().find_table(name).unwrap();
        let err = db.scan(&table).records(|_, _| Ok(Flow::Continue)).unwrap_err();
        assert!(err.to_string().contains(&format!("1:{page}")), "{err}");
    }
}
