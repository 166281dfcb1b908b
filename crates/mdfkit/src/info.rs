//! [`DatabaseInfo`]: what a database says about itself, gathered in one place for every front
//! end (`mdfkit info`, Python's `Database.info`): name and versions and options from the boot
//! page, page counts from the files and sysallocunits, the files as `sys.database_files` lists
//! them, and for a backup the backup set's header and file list.
//!
//! Only gathering lives here; how a front end spells it (labels, layout) stays with the front end.

use std::path::{Path, PathBuf};

use crate::backup::chain::BackupFiles;
use crate::backup::{BackupSet, FromBackup};
use crate::catalog::views::ViewRows;
use crate::database::{Database, MissingFile};
use crate::error::Result;
use crate::page::boot::product_name;
use crate::source::SourceFile;
use crate::value::Value;

/// A database's description of itself.
#[derive(Debug, Clone)]
pub struct DatabaseInfo {
    /// The database's name (boot page dbi_dbname).
    pub name: String,
    /// On-disk format version (`dbi_version`), e.g. 706.
    pub version: u16,
    /// `SQL Server 2012` etc. for `version`.
    pub product: &'static str,
    /// The format version the database was created with.
    pub create_version: u16,
    /// `SQL Server 2012` etc. for `create_version`.
    pub create_product: &'static str,
    /// dbi_cmptlevel: 100 for SQL Server 2008, 150 for 2019, ...
    pub compatibility_level: u16,
    /// The database's default collation, by name (`Latin1_General_CI_AS`).
    pub collation: String,
    /// `CHECKSUM`, `TORN_PAGE_DETECTION` or `NONE`.
    pub page_verify: &'static str,
    /// `FULL`, `BULK_LOGGED` or `SIMPLE`.
    pub recovery_model: &'static str,
    /// When the database was created (a datetime value as the boot page holds it).
    pub created: Value,
    /// Pages in the files given (their sizes).
    pub pages_in_files: i64,
    /// Pages reserved and used by allocation units, as sysallocunits counts them.
    pub pages_allocated: i64,
    /// Pages in use by allocation units, as sysallocunits counts them.
    pub pages_used: i64,
    /// User tables, as [`crate::catalog::Catalog::tables`] lists them.
    pub user_tables: usize,
    /// The catalog's files (`sys.database_files`: data and log), one row each.
    pub files: ViewRows,
    /// The files that were read, by file id ([`DatabaseInfo::location_of`]).
    pub given_files: Vec<SourceFile>,
    /// Data files the catalog lists that were not given.
    pub missing_files: Vec<MissingFile>,
    /// For a database read from a backup: the backup set's header and file list.
    pub backup: Option<BackupSet>,
}

impl DatabaseInfo {
    /// Where the file with id `file_id` was read from; `None` for a file that was not given (a
    /// log file is never read).
    pub fn location_of(&self, file_id: i64) -> Option<&Path> {
        let id = u16::try_from(file_id).ok()?;
        self.given_files.iter().find(|f| f.file_id == id).map(|f| f.location.as_path())
    }
}

impl Database {
    /// The database's description of itself (what `mdfkit info` prints).
    pub fn info(&self) -> Result<DatabaseInfo> {
        let catalog = self.catalog();
        let boot = &catalog.boot;
        let units = catalog.table("sysallocunits");
        let given_files = self.reader().source().files().to_vec();
        Ok(DatabaseInfo {
            name: self.name().to_string(),
            version: boot.version,
            product: product_name(boot.version),
            create_version: boot.create_version,
            create_product: product_name(boot.create_version),
            compatibility_level: boot.compatibility_level,
            collation: crate::collation::name(boot.collation_id),
            page_verify: boot.page_verify().name(),
            recovery_model: boot.recovery_model().name(),
            created: boot.created.clone(),
            pages_in_files: given_files.iter().map(|f| i64::from(f.page_count)).sum(),
            pages_allocated: units.iter().map(|u| u.int("pcreserved")).sum(),
            pages_used: units.iter().map(|u| u.int("pcused")).sum(),
            user_tables: catalog.tables(false).len(),
            files: catalog.view("sys.database_files")?,
            given_files,
            missing_files: self.missing_files().to_vec(),
            backup: self.reader().source().backup_set().cloned(),
        })
    }
}

/// The header of the backup set `position` (by default the one [`Database::open_at`] reads) when
/// `paths` are the files of a backup; `None` for data files. Readable where the database inside
/// is not (a differential backup, a stripe missing), so that front ends can still show it.
pub fn backup_set_of<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Option<BackupSet>> {
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    // A transaction log file given as the chain's tail holds no backup set.
    let paths: Vec<PathBuf> = paths.into_iter().filter(|p| !crate::log::ldf::is_log_file(p).unwrap_or(false)).collect();
    if paths.is_empty() || !paths.iter().all(|p| crate::database::is_backup(p)) {
        return Ok(None);
    }
    let backups = BackupFiles::open(&paths)?;
    // The set whose state is read: the differential laid over the full backup, if any. Where no
    // restore plan can be made, the set asked for is still shown (reading it then says why not).
    if let Ok(plan) = backups.plan(position) {
        return Ok(Some(plan.differential.unwrap_or(plan.full).set));
    }
    let Some(media) = backups.media().first() else { return Ok(None) };
    let chosen = position.or(media.default_position());
    Ok(chosen.and_then(|p| media.set(p)).cloned())
}
