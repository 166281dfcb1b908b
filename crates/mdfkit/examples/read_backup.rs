//! Opens a SQL Server backup: lists its backup sets (like `RESTORE HEADERONLY`), then reads the
//! database inside the last full backup with no restore and lists its tables:
//!
//! ```sh
//! cargo run -p mdfkit --example read_backup -- shop.bak [stripe2.bak ...]
//! cargo run -p mdfkit --example read_backup     # a full backup of the demo's shop database
//! ```
//!
//! With no argument it forges the demo's shop database and a full backup of it (`mdfkit-forge`,
//! laid out as SQL Server writes an uncompressed one) into a temporary folder.

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;

use mdfkit::backup::BackupMedia;
use mdfkit::Database;

fn main() -> Result<(), Box<dyn Error>> {
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        let dir = std::env::temp_dir().join("mdfkit-example-read-backup");
        paths = vec![forged_backup(&dir)?];
        eprintln!("no backup given: a full backup of the demo's shop database, forged into {}", dir.display());
    }
    describe(&paths, &mut std::io::stdout().lock())
}

/// Writes `shop.bak`, a full backup of the demo's shop database, into `dir`.
fn forged_backup(dir: &std::path::Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let files = mdfkit_forge::forge(&mdfkit_forge::samples::shop())?;
    let path = dir.join("shop.bak");
    std::fs::write(&path, mdfkit_forge::backup::full_backup(&files))?;
    Ok(path)
}

/// Writes a line per backup set, then a line per user table of the database in the backup.
fn describe(paths: &[PathBuf], out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    // Only the descriptor blocks and file lists are read here, not the pages.
    let media = BackupMedia::open(paths)?;
    for set in media.sets() {
        writeln!(
            out,
            "set {}: {} backup of {} (version {}), LSN {} to {}, {} bytes",
            set.position,
            set.backup_type.name(),
            set.database_name,
            set.database_version,
            set.first_lsn,
            set.last_lsn,
            set.backup_size
        )?;
    }
    // Database::open tells a backup from data files by its first bytes, and reads the last full
    // backup set (Database::open_at picks another).
    let db = Database::open(paths)?;
    for table in db.catalog().tables(false) {
        writeln!(out, "{:<30} {:>10} rows", table.qualified_name(), table.rows())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_forged_backup_set_and_the_tables_inside() {
        let dir = std::env::temp_dir().join(format!("mdfkit-example-read-backup-test-{}", std::process::id()));
        let bak = forged_backup(&dir).unwrap();
        let mut out = Vec::new();
        describe(&[bak], &mut out).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(out).unwrap();
        let spec = mdfkit_forge::samples::shop();
        let mut lines = text.lines();
        let set = lines.next().unwrap();
        // The forge writes the set's type but leaves its header's names, versions and LSNs empty.
        assert!(set.starts_with("set 1: full backup of "), "{set}");
        let mut tables: Vec<Vec<String>> = lines.map(|l| l.split_whitespace().map(String::from).collect()).collect();
        let mut forged: Vec<Vec<String>> = (spec.tables.iter().enumerate())
            .map(|(i, t)| {
                let rows = mdfkit_forge::live_rows(&spec, i).count();
                vec![format!("{}.{}", t.schema, t.name), rows.to_string(), "rows".into()]
            })
            .collect();
        tables.sort();
        forged.sort();
        assert_eq!(tables, forged);
    }
}
