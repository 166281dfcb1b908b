//! The boot page (page 9 of the primary file, `1:9`): the database's own record of itself.
//!
//! One record in slot 0 whose fixed part holds the `dbi_*` fields of `DBCC DBINFO`. Offsets below
//! count from the start of the record (4 bytes of record header, then the fixed part):
//!
//! | offset | size | field                 | meaning                                             |
//! |-------:|-----:|-----------------------|-----------------------------------------------------|
//! | 4      | 2    | dbi_version           | on-disk version of the files (e.g. 904 = 2019)      |
//! | 6      | 2    | dbi_createVersion     | version that created the database                   |
//! | 36     | 4    | dbi_status            | status bits, see below                              |
//! | 40     | 4    | dbi_nextid            | next object id to hand out                          |
//! | 44     | 8    | dbi_crdate            | creation (or restore) date, `datetime`              |
//! | 52     | 256  | dbi_dbname            | nchar(128)                                          |
//! | 308    | 4    | name length           | bytes of dbi_dbname in use (padding varies: U+2020, spaces, none) |
//! | 312    | 2    | dbi_dbid              | database id on the instance that wrote it           |
//! | 314    | 2    | dbi_cmptlevel         | compatibility level (80 ... 170)                    |
//! | 392    | 4    | dbi_collation         | database default collation id                       |
//! | 408    | 16   | dbi_familyGUID        |                                                     |
//! | 516    | 6    | dbi_firstSysIndexes   | first page of `sys.sysallocunits` (1:16 up to 705, 1:20 from 706) |
//!
//! dbi_status bits: 0x8 truncate log on checkpoint (SIMPLE recovery), else 0x4 bulk copy
//! (BULK_LOGGED), else FULL; 0x10000 CHECKSUM page verify, 0x10 TORN_PAGE_DETECTION, neither NONE.
//! The record's fixed part grows with the version (1440 bytes in 655 to 1828 in 998) but these
//! offsets stay put.
//!
//! Sources: OrcaMDF's boot page reader and `DBCC DBINFO` field order; every offset checked on all
//! 31 corpus data files (versions, names and page-verify bits agree with `MANIFEST.tsv` and with
//! the pages' own protection flags).

use crate::bytes::{read_i16, read_i32, read_u16, read_u32, utf16le};
use crate::error::{Error, Result};
use crate::page::{Page, PageId, PageType};
use crate::record::Record;
use crate::value::Value;

/// Where the boot page lives.
pub const BOOT_PAGE: PageId = PageId::new(1, 9);

/// The fields of the boot page mdfkit uses.
#[derive(Debug, Clone, PartialEq)]
pub struct BootPage {
    /// dbi_version (+4): the on-disk format version of the files, e.g. 904 for SQL Server 2019.
    pub version: u16,
    /// dbi_createVersion (+6): the format version of the server that created the database.
    pub create_version: u16,
    /// dbi_status (+36): status bits ([`BootPage::recovery_model`], [`BootPage::page_verify`]).
    pub status: i32,
    /// dbi_nextid (+40): the next object id to hand out.
    pub next_id: i32,
    /// dbi_crdate (+44): when the database was created or restored, a `datetime`.
    pub created: Value,
    /// dbi_dbname (+52): the database's name.
    pub name: String,
    /// dbi_dbid (+312): the database id on the instance that last wrote the file.
    pub database_id: i16,
    /// dbi_cmptlevel (+314): the compatibility level (80 to 170).
    pub compatibility_level: u16,
    /// dbi_collation (+392): the database's default collation id ([`crate::collation`]).
    pub collation_id: u32,
    /// dbi_familyGUID (+408).
    pub family_guid: [u8; 16],
    /// dbi_firstSysIndexes (+516): the first page of sysallocunits, where the catalog bootstrap
    /// starts.
    pub first_sys_indexes: PageId,
}

/// The product name of an on-disk version number (`dbi_version`), e.g. `SQL Server 2012` for 706.
pub fn product_name(version: u16) -> &'static str {
    match version {
        0..=539 => "SQL Server 2000",
        540..=611 => "SQL Server 2005",
        612..=660 => "SQL Server 2008",
        661..=704 => "SQL Server 2008 R2",
        705..=781 => "SQL Server 2012",
        782..=851 => "SQL Server 2014",
        852..=868 => "SQL Server 2016",
        869..=903 => "SQL Server 2017",
        904..=956 => "SQL Server 2019",
        957..=997 => "SQL Server 2022",
        _ => "SQL Server 2025",
    }
}

/// The database's recovery model as recorded in dbi_status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryModel {
    /// No dbi_status bit 0x8 or 0x4: every change fully logged, log kept until backed up.
    Full,
    /// dbi_status bit 0x4 (bulk copy) without 0x8: bulk operations minimally logged.
    BulkLogged,
    /// dbi_status bit 0x8: the log is truncated on checkpoint.
    Simple,
}

impl RecoveryModel {
    /// The option's T-SQL spelling (`FULL`, `BULK_LOGGED`, `SIMPLE`), as
    /// `sys.databases.recovery_model_desc`.
    pub fn name(self) -> &'static str {
        match self {
            RecoveryModel::Full => "FULL",
            RecoveryModel::BulkLogged => "BULK_LOGGED",
            RecoveryModel::Simple => "SIMPLE",
        }
    }
}

/// The database's PAGE_VERIFY option as recorded in dbi_status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageVerify {
    /// dbi_status bit 0x10000: pages carry a checksum.
    Checksum,
    /// dbi_status bit 0x10: pages carry torn-page bits.
    TornPageDetection,
    /// Neither bit: pages carry no protection.
    None,
}

impl PageVerify {
    /// The option's T-SQL spelling, as `sys.databases.page_verify_option_desc`.
    pub fn name(self) -> &'static str {
        match self {
            PageVerify::Checksum => "CHECKSUM",
            PageVerify::TornPageDetection => "TORN_PAGE_DETECTION",
            PageVerify::None => "NONE",
        }
    }
}

const STATUS_TRUNC_LOG_ON_CHECKPOINT: i32 = 0x8;
const STATUS_BULK_COPY: i32 = 0x4;
const STATUS_TORN_PAGE: i32 = 0x10;
const STATUS_CHECKSUM: i32 = 0x10000;

impl BootPage {
    /// Decodes the boot record of `page`, refusing a page of another type by name.
    pub fn parse(page: &Page) -> Result<Self> {
        if page.header().page_type != PageType::Boot {
            return Err(Error::not_a_database(format!(
                "page {} should be the boot page but is a {} page",
                page.id(),
                page.header().page_type.name()
            ))
            .at_page(page.id()));
        }
        let bytes = page
            .slot_bytes(0)?
            .ok_or_else(|| Error::corrupt("boot page has no record in slot 0").at_page(page.id()))?;
        let record = Record::parse(bytes).map_err(|e| e.at_page(page.id()).at_slot(0))?;
        let field = |at: usize, len: usize| {
            record.fixed(at, len).ok_or_else(|| {
                Error::corrupt(format!("boot record's fixed part is too short for the field at {at}"))
                    .at_page(page.id())
            })
        };
        let name_len = (read_u32(field(308, 4)?, 0).unwrap_or(0) as usize).min(256) & !1;
        let name = utf16le(&field(52, 256)?[..name_len]);
        let created = field(44, 8)?;
        Ok(BootPage {
            version: read_u16(field(4, 2)?, 0).unwrap_or(0),
            create_version: read_u16(field(6, 2)?, 0).unwrap_or(0),
            status: read_i32(field(36, 4)?, 0).unwrap_or(0),
            next_id: read_i32(field(40, 4)?, 0).unwrap_or(0),
            created: Value::DateTime {
                ticks: read_u32(created, 0).unwrap_or(0),
                days: read_i32(created, 4).unwrap_or(0),
            },
            name,
            database_id: read_i16(field(312, 2)?, 0).unwrap_or(0),
            compatibility_level: read_u16(field(314, 2)?, 0).unwrap_or(0),
            collation_id: read_u32(field(392, 4)?, 0).unwrap_or(0),
            family_guid: field(408, 16)?.try_into().unwrap_or_default(),
            first_sys_indexes: PageId::from_bytes(field(516, 6)?).unwrap_or_default(),
        })
    }
}

impl BootPage {
    /// From dbi_status: 0x8 SIMPLE, else 0x4 BULK_LOGGED, else FULL.
    pub fn recovery_model(&self) -> RecoveryModel {
        if self.status & STATUS_TRUNC_LOG_ON_CHECKPOINT != 0 {
            RecoveryModel::Simple
        } else if self.status & STATUS_BULK_COPY != 0 {
            RecoveryModel::BulkLogged
        } else {
            RecoveryModel::Full
        }
    }

    /// From dbi_status: 0x10000 CHECKSUM, else 0x10 TORN_PAGE_DETECTION, else NONE.
    pub fn page_verify(&self) -> PageVerify {
        if self.status & STATUS_CHECKSUM != 0 {
            PageVerify::Checksum
        } else if self.status & STATUS_TORN_PAGE != 0 {
            PageVerify::TornPageDetection
        } else {
            PageVerify::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::tests::build_page;

    fn boot_record(name: &str, status: i32) -> Vec<u8> {
        let mut r = vec![0u8; 4 + 1440];
        let len = r.len() as u16;
        r[2..4].copy_from_slice(&len.to_le_bytes());
        r[4..6].copy_from_slice(&904u16.to_le_bytes());
        r[6..8].copy_from_slice(&852u16.to_le_bytes());
        r[36..40].copy_from_slice(&status.to_le_bytes());
        let utf16: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        r[52..52 + utf16.len()].copy_from_slice(&utf16);
        for pad in (52 + utf16.len()..308).step_by(2) {
            r[pad..pad + 2].copy_from_slice(&0x2020u16.to_le_bytes());
        }
        r[308..312].copy_from_slice(&(utf16.len() as u32).to_le_bytes());
        r[314..316].copy_from_slice(&150u16.to_le_bytes());
        r[392..396].copy_from_slice(&872468488u32.to_le_bytes());
        r[516..522].copy_from_slice(&[20, 0, 0, 0, 1, 0]);
        r
    }

    #[test]
    fn reads_the_dbi_fields() {
        let page = build_page(BOOT_PAGE, 13, &[&boot_record("Shop", 0x40010009)]);
        let page = Page::new(page.into_boxed_slice(), BOOT_PAGE).unwrap();
        let boot = BootPage::parse(&page).unwrap();
        assert_eq!((boot.version, boot.create_version), (904, 852));
        assert_eq!(boot.name, "Shop");
        assert_eq!(boot.compatibility_level, 150);
        assert_eq!(boot.collation_id, 872468488);
        assert_eq!(boot.first_sys_indexes, PageId::new(1, 20));
        assert_eq!(boot.recovery_model(), RecoveryModel::Simple);
        assert_eq!(boot.page_verify(), PageVerify::Checksum);
    }

    #[test]
    fn status_bits_give_recovery_model_and_page_verify() {
        let page = build_page(BOOT_PAGE, 13, &[&boot_record("x", 0x4000001c)]);
        let boot = BootPage::parse(&Page::new(page.into_boxed_slice(), BOOT_PAGE).unwrap()).unwrap();
        assert_eq!(boot.recovery_model(), RecoveryModel::Simple);
        assert_eq!(boot.page_verify(), PageVerify::TornPageDetection);
        let page = build_page(BOOT_PAGE, 13, &[&boot_record("x", 0x00010000)]);
        let boot = BootPage::parse(&Page::new(page.into_boxed_slice(), BOOT_PAGE).unwrap()).unwrap();
        assert_eq!(boot.recovery_model(), RecoveryModel::Full);
    }

    #[test]
    fn rejects_a_short_record_and_a_wrong_page_type() {
        let mut short = boot_record("x", 0);
        short.truncate(400);
        short[2..4].copy_from_slice(&400u16.to_le_bytes());
        let page = build_page(BOOT_PAGE, 13, &[&short]);
        assert!(BootPage::parse(&Page::new(page.into_boxed_slice(), BOOT_PAGE).unwrap()).is_err());
        let page = build_page(BOOT_PAGE, 1, &[&boot_record("x", 0)]);
        assert!(BootPage::parse(&Page::new(page.into_boxed_slice(), BOOT_PAGE).unwrap()).is_err());
    }
}
