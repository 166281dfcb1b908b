//! Backup set headers: what `RESTORE HEADERONLY` and `RESTORE FILELISTONLY` report, decoded from
//! the TAPE and SSET descriptor blocks and the configuration stream (MQCI) of a backup set.
//!
//! **TAPE** (media header, once per file; MTF 1.00a `MTF_TAPE`): +52 u32 media family id, +60 u16
//! media sequence number, +62 u16 password encryption algorithm, +76 media password (size +
//! offset). Its **RAID** stream (32 bytes, SQL Server's) holds:
//!
//! | offset | size | field                 | notes                                                    |
//! |-------:|-----:|-----------------------|----------------------------------------------------------|
//! | 0      | 16   | media set id (GUID)   | equal in both files of the striped pair, different elsewhere |
//! | 20     | 2    | family count          | 2 in both striped files (and chinook.bak), 1 elsewhere   |
//! | 24     | 2    | family sequence number| 1 and 2 in the striped pair                              |
//!
//! **SSET** (start of a backup set; MTF 1.00a `MTF_SSET`): +52 u32 attributes (0x4 normal, 0x8
//! differential), +56 u16 password encryption algorithm, +62 u16 data set number (the backup's
//! *position* in the file), +64 name, +68 description, +72 password, +76 user name (each size +
//! offset from the block's start, UTF-16), +88 5-byte MTF date (start of the backup),
//! +100 16-byte backup set GUID (in differential and log backups, the full backup's GUID reappears
//! in SCIN +200 and as the differential base GUID: the link checks).
//!
//! **SCIN** (first record of MQCI; offsets from the record's start). The configuration stream is
//! written twice: in the MSCI block before the data, then again in the MSLS block after the log,
//! where the finish date, the size and (2019+) the LSNs are filled in. The MSLS copy is read.
//!
//! | offset | size | field                       | how it was found                                   |
//! |-------:|-----:|-----------------------------|----------------------------------------------------|
//! | 8      | 4    | flags                       | 0x10 exactly when the set has CSUM streams (checksums); 0x800 in differentials |
//! | 24     | 2+1+1| software build, minor, major| 10.50.1600, 14.0.1000, 17.0.1050: SQL Server builds |
//! | 32     | 10   | first LSN                   | log backups chain: each one's first = the previous one's last |
//! | 42     | 10   | last LSN                    |                                                    |
//! | 52     | 10   | checkpoint LSN              |                                                    |
//! | 62     | 10   | database backup LSN         | = the full backup's checkpoint LSN in its differentials and logs |
//! | 72     | 5    | database creation date      | MTF date; equal across a chain, before every start |
//! | 77     | 5    | backup start date           | MTF date; = the SSET date, = the time in the cube chain's file names |
//! | 82     | 5    | backup finish date          | MTF date; zero in the MSCI copy                    |
//! | 87     | 1    | backup type                 | ASCII as msdb's backupset.type: `D` full, `I` differential, `L` log |
//! | 91     | 1    | compatibility level         | 100, 120, 140, 150, 170 by version                 |
//! | 94     | 2    | database version            | = MANIFEST dbi_version                              |
//! | 96     | 8    | backup size                 | bytes; about the file's size (twice it for a stripe of two) |
//! | 104    | 2+2  | database name               | size, offset (from the record's start), UTF-16     |
//! | 108    | 2+2  | server name                 | `MACHINE\INSTANCE` or `MACHINE`                    |
//! | 216    | 5    | collation                   | TDS form: u32 LCID + flags, u8 SQL sort id; = the boot page's collation |
//! | 260    | 10   | differential base LSN       | differentials only: = their full's checkpoint LSN |
//! | 272    | 16   | differential base GUID      | differentials only: = their full's SSET GUID       |
//!
//! **SFIN** (one per file, see [`super`]): +36 u32 filegroup id (0 for log files), named by the
//! **SFGI** records: +12 u32 filegroup id, +16 name (size + offset).
//!
//! MTF date: 5 bytes, big-endian bit fields year 14, month 4, day 5, hour 5, minute 6, second 6
//! (MTF 1.00a `MTF_DATE_TIME`). LSN: u32 virtual log file, u32 block, u16 slot, shown as SQL Server
//! shows it in `RESTORE HEADERONLY` (`vlf * 10^15 + block * 10^5 + slot`).
//!
//! Sources: MTF 1.00a for the TAPE and SSET fields and the date format (`rsleedbx/mssqlbak-tests`
//! `docs/spec/01_CONTAINER.md` reproduces them); everything in RAID and SCIN, the SFIN filegroup
//! id and SFGI were worked out on the corpus (16 chain files and 6 uncompressed and 2 compressed
//! single backups) by the relations noted above, which `tests/corpus_backup_headers.rs` checks.
//!
//! Unverified (no corpus file shows them): type letters other than D/I/L (`F` file, `G`
//! differential file, `P` partial, `Q` differential partial, as in msdb's backupset.type); how
//! backup encryption (`WITH ENCRYPTION`) or a backup set password (`WITH PASSWORD`) shows: taken
//! as a non-zero encryption algorithm in the SSET or in a data stream header, or a non-empty SSET
//! password. The media password (`WITH MEDIAPASSWORD`) is verified on `chains/media-password`:
//! TAPE +62 = 5 and a 16-byte media password.

use std::fmt;

use crate::bytes::{read_u16, read_u32, read_u64, utf16le};

/// A log sequence number as a backup header stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Lsn {
    /// Virtual log file sequence number.
    pub vlf: u32,
    /// Log block within the virtual log file.
    pub block: u32,
    /// Log record slot within the block.
    pub slot: u16,
}

impl Lsn {
    /// Reads the 10-byte form (u32 vlf, u32 block, u16 slot) at `at`; `None` past the end of `b`.
    pub fn parse(b: &[u8], at: usize) -> Option<Lsn> {
        Some(Lsn { vlf: read_u32(b, at)?, block: read_u32(b, at + 4)?, slot: read_u16(b, at + 8)? })
    }

    /// All zeros: no LSN (unset header fields, the MSCI copy of the SCIN record).
    pub fn is_zero(&self) -> bool {
        *self == Lsn::default()
    }

    /// The decimal form `RESTORE HEADERONLY` shows (numeric(25,0)).
    pub fn numeric(&self) -> u128 {
        u128::from(self.vlf) * 1_000_000_000_000_000 + u128::from(self.block) * 100_000 + u128::from(self.slot)
    }

    /// An LSN as SQL Server spells it: the decimal of `RESTORE HEADERONLY` and of `STOPATMARK =
    /// 'lsn:25000000016300001'` (an optional `lsn:` prefix), `fn_dump_dblog`'s hexadecimal
    /// `0x00000019:000000a3:0001` (the `0x` may be left out when each part has its full width,
    /// 8:8:4 digits, as `mdfkit log` prints it), or the decimal parts `25:163:1` that `fn_dblog`
    /// takes. `None` for anything else, or parts too large for their field.
    pub fn parse_text(text: &str) -> Option<Lsn> {
        let t = text.trim();
        let t = t.strip_prefix("lsn:").unwrap_or(t);
        let parts: Vec<&str> = t.split(':').collect();
        if let [vlf, block, slot] = parts[..] {
            let (vlf, hex) = match vlf.strip_prefix("0x").or_else(|| vlf.strip_prefix("0X")) {
                Some(v) => (v, true),
                None => (vlf, vlf.len() == 8 && block.len() == 8 && slot.len() == 4),
            };
            let radix = if hex { 16 } else { 10 };
            let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
            if !(digits(vlf) && digits(block) && digits(slot)) {
                return None;
            }
            return Some(Lsn {
                vlf: u32::from_str_radix(vlf, radix).ok()?,
                block: u32::from_str_radix(block, radix).ok()?,
                slot: u16::from_str_radix(slot, radix).ok()?,
            });
        }
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) || t.len() > 25 {
            return None;
        }
        let n: u128 = t.parse().ok()?;
        Some(Lsn {
            vlf: u32::try_from(n / 1_000_000_000_000_000).ok()?,
            block: u32::try_from(n / 100_000 % 10_000_000_000).ok()?,
            slot: u16::try_from(n % 100_000).ok()?,
        })
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.numeric())
    }
}

/// An MTF date and time (to the second; no time zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BackupDate {
    /// Year, 1 to 9999 as MTF's 14-bit field holds it.
    pub year: u16,
    /// Month, 1 to 12.
    pub month: u8,
    /// Day of the month, 1 to 31.
    pub day: u8,
    /// Hour, 0 to 23.
    pub hour: u8,
    /// Minute, 0 to 59.
    pub minute: u8,
    /// Second, 0 to 59.
    pub second: u8,
}

impl BackupDate {
    /// Decodes a 5-byte MTF date; `None` for all zeros (unknown) or impossible fields.
    pub fn parse(b: &[u8]) -> Option<BackupDate> {
        let b: [u8; 5] = b.get(..5)?.try_into().ok()?;
        if b == [0; 5] {
            return None;
        }
        let v = b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
        let d = BackupDate {
            year: (v >> 26) as u16,
            month: ((v >> 22) & 0xf) as u8,
            day: ((v >> 17) & 0x1f) as u8,
            hour: ((v >> 12) & 0x1f) as u8,
            minute: ((v >> 6) & 0x3f) as u8,
            second: (v & 0x3f) as u8,
        };
        let valid =
            (1..=12).contains(&d.month) && (1..=31).contains(&d.day) && d.hour < 24 && d.minute < 60 && d.second < 60;
        valid.then_some(d)
    }
}

impl fmt::Display for BackupDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// What a backup set holds (msdb backupset.type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupType {
    /// `BACKUP DATABASE` (type D).
    Full,
    /// `BACKUP DATABASE ... WITH DIFFERENTIAL` (type I).
    Differential,
    /// `BACKUP LOG` (type L).
    Log,
    /// Any other type letter (file, partial, ...: not seen in the corpus).
    Other(u8),
}

impl BackupType {
    fn from_letter(c: u8) -> BackupType {
        match c {
            b'D' => BackupType::Full,
            b'I' => BackupType::Differential,
            b'L' => BackupType::Log,
            other => BackupType::Other(other),
        }
    }

    /// Short name for listings: `full`, `differential`, `log`, ...
    pub fn name(&self) -> String {
        match self {
            BackupType::Full => "full".into(),
            BackupType::Differential => "differential".into(),
            BackupType::Log => "log".into(),
            BackupType::Other(b'F') => "file".into(),
            BackupType::Other(b'G') => "differential file".into(),
            BackupType::Other(b'P') => "partial".into(),
            BackupType::Other(b'Q') => "differential partial".into(),
            BackupType::Other(c) if c.is_ascii_graphic() => format!("type {}", *c as char),
            BackupType::Other(c) => format!("type {c:#04x}"),
        }
    }

    /// Phrase for messages: "a full database backup", "a differential backup", ...
    pub fn described(&self) -> String {
        match self {
            BackupType::Full => "a full database backup".into(),
            BackupType::Differential => "a differential backup".into(),
            BackupType::Log => "a transaction log backup".into(),
            other => format!("a {} backup", other.name()),
        }
    }
}

/// A collation in the 5-byte TDS form backup headers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TdsCollation {
    /// LCID (low 20 bits), comparison flags (bits 20-27), version (bits 28-31).
    pub info: u32,
    /// SQL sort order id; 0 for Windows collations.
    pub sort_id: u8,
}

impl TdsCollation {
    /// The collation's name, from SQL Server's list (`crate::collation`), otherwise its parts.
    pub fn name(&self) -> String {
        match crate::collation::name_from_tds(self.info, self.sort_id) {
            Some(name) => name,
            None => format!(
                "LCID {:#x}, flags {:#04x}, sort id {}",
                self.info & 0xf_ffff,
                (self.info >> 20) & 0xff,
                self.sort_id
            ),
        }
    }
}

/// Which file of a striped media set a backup file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaFamily {
    /// Shared by every file (stripe) of one media set.
    pub media_set_id: [u8; 16],
    /// Files (stripes) the media set was written to.
    pub family_count: u16,
    /// This file's number among them, from 1.
    pub family_number: u16,
    /// The media header's own id of this file.
    pub media_family_id: u32,
    /// A media password (`WITH MEDIAPASSWORD`) protects the media.
    pub media_password: bool,
}

/// Offsets in the TAPE block and its RAID stream.
const TAPE_FAMILY_ID: usize = 52;
const TAPE_PASSWORD_ALGORITHM: usize = 62;
const TAPE_MEDIA_PASSWORD: usize = 76;
const RAID_FAMILY_COUNT: usize = 20;
const RAID_FAMILY_NUMBER: usize = 24;

impl MediaFamily {
    /// From the TAPE block's first bytes and its RAID stream's data.
    pub fn parse(tape: &[u8], raid: &[u8]) -> Option<MediaFamily> {
        let password_algorithm = read_u16(tape, TAPE_PASSWORD_ALGORITHM)?;
        let password_size = read_u16(tape, TAPE_MEDIA_PASSWORD)?;
        Some(MediaFamily {
            media_set_id: raid.get(..16)?.try_into().ok()?,
            family_count: read_u16(raid, RAID_FAMILY_COUNT)?,
            family_number: read_u16(raid, RAID_FAMILY_NUMBER)?,
            media_family_id: read_u32(tape, TAPE_FAMILY_ID)?,
            media_password: password_algorithm != 0 || password_size != 0,
        })
    }
}

/// The SSET fields of a backup set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetBlock {
    /// SSET +52: MTF set attributes (0x4 normal, 0x8 differential).
    pub attributes: u32,
    /// SSET +56: password encryption algorithm, 0 for none.
    pub password_algorithm: u16,
    /// SSET +62: the data set number, the set's position in the file (`WITH FILE = n`).
    pub position: u16,
    /// SSET +64: `BACKUP ... WITH NAME`.
    pub name: String,
    /// SSET +68: `BACKUP ... WITH DESCRIPTION`.
    pub description: String,
    /// SSET +72: a backup set password is set (`WITH PASSWORD`; unverified on real files).
    pub has_password: bool,
    /// SSET +76: the login that ran the backup.
    pub user_name: String,
    /// SSET +88: when the backup started.
    pub date: Option<BackupDate>,
    /// SSET +100: the backup set GUID (`RESTORE HEADERONLY`'s BackupSetGUID).
    pub backup_set_guid: [u8; 16],
}

impl SetBlock {
    /// Decodes an SSET block (its first bytes up to the end of its strings).
    pub fn parse(b: &[u8]) -> Option<SetBlock> {
        let string = |at: usize| -> Option<String> {
            let size = read_u16(b, at)? as usize;
            let offset = read_u16(b, at + 2)? as usize;
            Some(utf16le(b.get(offset..offset.checked_add(size)?)?))
        };
        Some(SetBlock {
            attributes: read_u32(b, 52)?,
            password_algorithm: read_u16(b, 56)?,
            position: read_u16(b, 62)?,
            name: string(64).unwrap_or_default(),
            description: string(68).unwrap_or_default(),
            has_password: read_u16(b, 72)? != 0,
            user_name: string(76).unwrap_or_default(),
            date: BackupDate::parse(b.get(88..93)?),
            backup_set_guid: b.get(100..116)?.try_into().ok()?,
        })
    }
}

/// The SCIN record: the backup set as SQL Server describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetInfo {
    /// SCIN +8 ([`SCIN_CHECKSUMS`]: 0x10 when the set has CSUM streams).
    pub flags: u32,
    /// SCIN +24: SQL Server's major, minor and build numbers.
    pub software_version: (u8, u8, u16),
    /// SCIN +32: the first LSN in the backup.
    pub first_lsn: Lsn,
    /// SCIN +42: the LSN after the last one in the backup.
    pub last_lsn: Lsn,
    /// SCIN +52: the checkpoint LSN the backup started from.
    pub checkpoint_lsn: Lsn,
    /// SCIN +62: the checkpoint LSN of the last full database backup.
    pub database_backup_lsn: Lsn,
    /// SCIN +72: when the database was created.
    pub database_creation_date: Option<BackupDate>,
    /// SCIN +77: when the backup started.
    pub start: Option<BackupDate>,
    /// SCIN +82: when the backup finished (empty in the MSCI copy).
    pub finish: Option<BackupDate>,
    /// SCIN +87: the type letter, as msdb's backupset.type.
    pub backup_type: BackupType,
    /// SCIN +91: the database's compatibility level.
    pub compatibility_level: u8,
    /// SCIN +94: the database's on-disk format version (the boot page's dbi_version).
    pub database_version: u16,
    /// SCIN +96: size in bytes, all stripes together.
    pub backup_size: u64,
    /// SCIN +104: the database's name.
    pub database_name: String,
    /// SCIN +108: `MACHINE\INSTANCE`, or `MACHINE` for a default instance.
    pub server_name: String,
    /// SCIN +216: the database's default collation, in TDS form.
    pub collation: TdsCollation,
    /// SCIN +260: for a differential, its full backup's checkpoint LSN.
    pub differential_base_lsn: Option<Lsn>,
    /// SCIN +272: for a differential, its full backup's SSET GUID.
    pub differential_base_guid: Option<[u8; 16]>,
}

/// SCIN flag: the backup carries checksums.
pub const SCIN_CHECKSUMS: u32 = 0x10;

impl SetInfo {
    /// Decodes a SCIN record (`r` starts at its tag).
    pub fn parse(r: &[u8]) -> Option<SetInfo> {
        let string = |at: usize| -> Option<String> {
            let size = read_u16(r, at)? as usize;
            let offset = read_u16(r, at + 2)? as usize;
            Some(utf16le(r.get(offset..offset.checked_add(size)?)?))
        };
        let backup_type = BackupType::from_letter(*r.get(87)?);
        let differential = backup_type == BackupType::Differential;
        let base_lsn = Lsn::parse(r, 260).filter(|l| differential && !l.is_zero());
        Some(SetInfo {
            flags: read_u32(r, 8)?,
            software_version: (*r.get(27)?, *r.get(26)?, read_u16(r, 24)?),
            first_lsn: Lsn::parse(r, 32)?,
            last_lsn: Lsn::parse(r, 42)?,
            checkpoint_lsn: Lsn::parse(r, 52)?,
            database_backup_lsn: Lsn::parse(r, 62)?,
            database_creation_date: BackupDate::parse(r.get(72..77)?),
            start: BackupDate::parse(r.get(77..82)?),
            finish: BackupDate::parse(r.get(82..87)?),
            backup_type,
            compatibility_level: *r.get(91)?,
            database_version: read_u16(r, 94)?,
            backup_size: read_u64(r, 96)?,
            database_name: string(104)?,
            server_name: string(108)?,
            collation: TdsCollation { info: read_u32(r, 216)?, sort_id: *r.get(220)? },
            differential_base_lsn: base_lsn,
            differential_base_guid: base_lsn.and_then(|_| r.get(272..288)?.try_into().ok()),
        })
    }
}

/// Renders a GUID as SQL Server does (first three groups little endian).
pub fn guid_string(g: &[u8; 16]) -> String {
    format!(
        "{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{}",
        g[3],
        g[2],
        g[1],
        g[0],
        g[5],
        g[4],
        g[7],
        g[6],
        g[8],
        g[9],
        g[10..].iter().map(|b| format!("{b:02X}")).collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs an MTF date.
    pub fn mtf_date(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8) -> [u8; 5] {
        let v = (u64::from(y) << 26)
            | (u64::from(mo) << 22)
            | (u64::from(d) << 17)
            | (u64::from(h) << 12)
            | (u64::from(mi) << 6)
            | u64::from(s);
        let b = v.to_be_bytes();
        [b[3], b[4], b[5], b[6], b[7]]
    }

    #[test]
    fn dates_decode_from_their_bit_fields() {
        // The bytes of difftest-full.bak's start date.
        let d = BackupDate::parse(&[0x1f, 0x8b, 0x2a, 0xb5, 0xed]).unwrap();
        assert_eq!(d.to_string(), "2018-12-21 11:23:45");
        assert_eq!(BackupDate::parse(&mtf_date(2026, 3, 5, 16, 51, 8)).unwrap().to_string(), "2026-03-05 16:51:08");
        assert_eq!(BackupDate::parse(&[0; 5]), None);
        assert_eq!(BackupDate::parse(&mtf_date(2020, 13, 1, 0, 0, 0)), None);
        assert!(BackupDate::parse(&mtf_date(2020, 1, 1, 0, 0, 1)) > BackupDate::parse(&mtf_date(2020, 1, 1, 0, 0, 0)));
    }

    #[test]
    fn lsns_show_as_headeronly_numbers() {
        let mut b = vec![0u8; 10];
        b[..4].copy_from_slice(&24u32.to_le_bytes());
        b[4..8].copy_from_slice(&68u32.to_le_bytes());
        b[8..10].copy_from_slice(&99u16.to_le_bytes());
        let l = Lsn::parse(&b, 0).unwrap();
        assert_eq!(l, Lsn { vlf: 24, block: 68, slot: 99 });
        assert_eq!(l.to_string(), "24000000006800099");
        assert!(Lsn::parse(&b, 1).is_none());
    }

    #[test]
    fn lsns_read_in_every_spelling_sql_server_uses() {
        // The example of the "Recover to a Log Sequence Number" page, STOPATMARK =
        // 'lsn:15000000040000037': VLF 15, block 400, slot 37 (0xf, 0x190, 0x25).
        let lsn = Lsn { vlf: 15, block: 400, slot: 37 };
        for text in ["15000000040000037", "lsn:15000000040000037", " 15000000040000037 "] {
            assert_eq!(Lsn::parse_text(text), Some(lsn), "{text}");
        }
        for text in ["0x0000000f:00000190:0025", "0xf:190:25", "0000000f:00000190:0025", "15:400:37"] {
            assert_eq!(Lsn::parse_text(text), Some(lsn), "{text}");
        }
        assert_eq!(Lsn::parse_text(&lsn.numeric().to_string()), Some(lsn));
        // A slot of 100000 or more does not fit the decimal form's five digits: it carries into
        // the block, which is what the number says.
        assert_eq!(Lsn::parse_text("100000"), Some(Lsn { vlf: 0, block: 1, slot: 0 }));
        for bad in ["", "lsn:", "x", "-1", "1:2", "1:2:3:4", "0x1:2:g", "1:2:70000", "99999999999999999999999999"] {
            assert_eq!(Lsn::parse_text(bad), None, "{bad}");
        }
        // A VLF number past u32.
        assert_eq!(Lsn::parse_text("4294967296000000000000000"), None);
    }

    #[test]
    fn short_records_are_not_read_past_their_end() {
        let mut r = vec![0u8; 120];
        r[87] = b'D';
        assert!(SetInfo::parse(&r).is_none(), "collation at +216 is past the end");
        let mut r = vec![0u8; 300];
        r[104..108].copy_from_slice(&[20, 0, 0x2c, 0x01]);
        assert!(SetInfo::parse(&r).is_none(), "name runs past the end");
        assert!(SetBlock::parse(&[0u8; 90]).is_none());
        assert!(MediaFamily::parse(&[0u8; 96], &[0u8; 20]).is_none());
        let mut raid = [0u8; 32];
        raid[20] = 2;
        raid[24] = 1;
        let f = MediaFamily::parse(&[0u8; 96], &raid).unwrap();
        assert_eq!((f.family_number, f.family_count, f.media_password), (1, 2, false));
    }

    #[test]
    fn guids_render_like_sql_server() {
        let g: [u8; 16] =
            [0xc4, 0x3d, 0x4e, 0xf2, 0x3c, 0xfb, 0xaa, 0x48, 0x93, 0x60, 0xfc, 0x9e, 0xe2, 0x6d, 0x14, 0x64];
        assert_eq!(guid_string(&g), "F24E3DC4-FB3C-48AA-9360-FC9EE26D1464");
    }

    #[test]
    fn collations_are_named_from_sql_servers_list() {
        assert_eq!(TdsCollation { info: 0x00d0_0409, sort_id: 52 }.name(), "SQL_Latin1_General_CP1_CI_AS");
        assert_eq!(TdsCollation { info: 0x00d0_0409, sort_id: 0 }.name(), "Latin1_General_CI_AS");
        assert_eq!(TdsCollation { info: 0x00d0_040c, sort_id: 0 }.name(), "French_CI_AS");
        // sharepoint_config.bak: case-insensitive only (its boot page says collation id 0x1008).
        assert_eq!(TdsCollation { info: 0x0010_0409, sort_id: 0 }.name(), "Latin1_General_CI_AS_KS_WS");
        assert_eq!(TdsCollation { info: 0x0000_0409, sort_id: 0 }.name(), "Latin1_General_CS_AS_KS_WS");
        assert_eq!(TdsCollation { info: 0x0200_0409, sort_id: 0 }.name(), "Latin1_General_BIN2");
        assert_eq!(TdsCollation { info: 0x00d0_0401, sort_id: 0 }.name(), "Arabic_CI_AS");
        assert_eq!(TdsCollation { info: 0x0400_0409, sort_id: 0 }.name(), "LCID 0x409, flags 0x40, sort id 0");
        assert_eq!(TdsCollation { info: 0x2600_0409, sort_id: 0 }.name(), "Latin1_General_100_BIN2_UTF8");
        assert_eq!(TdsCollation { info: 0x24d0_0409, sort_id: 0 }.name(), "Latin1_General_100_CI_AS_SC_UTF8");
    }
}
