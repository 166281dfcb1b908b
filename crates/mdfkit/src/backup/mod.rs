//! SQL Server backups (`.bak`, Microsoft Tape Format, compressed or not) as a [`PageSource`].
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("mdfkit-doc-backup-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let files = mdfkit_forge::forge(&mdfkit_forge::samples::shop())?;
//! # std::fs::write(dir.join("shop.bak"), mdfkit_forge::backup::full_backup(&files))?;
//! use std::sync::Arc;
//! use mdfkit::backup::BackupPages;
//! // shop.bak: a full backup of the demo's database, written by mdfkit-forge.
//! let db = mdfkit::Database::from_source(Arc::new(BackupPages::open(dir.join("shop.bak"))?))?;
//! println!("{}", db.name());
//! assert_eq!(db.name(), "shop");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The container is MTF ([`mtf`]): descriptor blocks, each followed by streams. What SQL Server
//! puts in it:
//!
//! ```text
//!  TAPE  media header (streams RAID, SPAD)           padded to the physical block (1 or 4 KB)
//!  SFMB  soft filemark                               one physical block (512 or 4096 bytes)
//!  SSET  start of the backup set                     logical address 0; later blocks sit at
//!  VOLB  volume                                      SSET offset + logical address x 1024
//!  MSCI  configuration: stream MQCI (file list)
//!  MSDA  data: [APAD] MQDA (pages) [CSUM] MQDA (0 bytes, last piece) SPAD
//!  MSDA  (2019/2025 only) a second data block re-sending 1-2 extents, boot page included
//!  MSTL  log: MQTL ... (one block per log chunk)
//!  MSLS  configuration again (MQCI)
//!  SFMB, ESET (OTCP, TSMP), ESET, SFMB
//! ```
//!
//! **MQCI** (configuration stream) is a run of records, each a 4-byte ASCII tag and a u32 length
//! that counts the 8-byte record header: `SCIN` (database/server), `SFGI` (filegroup), and one
//! `SFIN` per database file:
//!
//! | offset | size | SFIN field          | notes                                                   |
//! |-------:|-----:|---------------------|---------------------------------------------------------|
//! | 8      | 4    | flags               | 0x80 set on data files of full backups (meaning unsure) |
//! | 16     | 4    | page size?          | 8192 in every corpus backup                             |
//! | 20     | 4    | file id             | the id in the pages' addresses                          |
//! | 28     | 4    | file type           | 1 = data (rows), 2 = log                                |
//! | 40     | 8    | file size           | bytes                                                   |
//! | 48     | 2+2  | logical name        | size, offset (from the record's start), UTF-16          |
//! | 52     | 2+2  | physical name       | size, offset, UTF-16                                    |
//!
//! **MQDA** (data stream) pieces carry the media-format attribute 0x2 (variable length); the last
//! piece (0x4) is empty: every backup ends its data with a zero-length MQDA. A non-empty piece
//! holds 2 bytes (zero in every corpus backup; meaning unknown) and then whole extents: 8
//! consecutive pages of one file. The pages are not 8 KB aligned in the file (chinook.bak's only
//! boot page copy is at an offset that is 4096 mod 8192), and nothing in the stream lists which
//! extent is which: [`extents`] places them from the allocation maps the stream itself carries
//! (a full backup copies each file's GAM-allocated extents and its PFS pages' extents, in file
//! order), with page headers only as a cross-check, since unused and damaged pages keep any
//! header at all. Where stream and map disagree, the rule written there decides, and
//! [`BackupPages`]'s [`PageSource::notes`] say how; no page header refuses a backup. A page whose
//! header disagrees with its place is served as it is: the page reader refuses it by address
//! when something reads it, `check` lists it when the PFS says it is allocated, and salvage
//! scans skip it. Backups from 2019 (904) and 2025 (998) re-send extents in a second MSDA block;
//! where a page is in the backup more than once, the later copy wins.
//!
//! **MQTL** (log stream, in MSTL blocks) pieces hold 2 bytes (zero) and then whole log blocks,
//! the log as it is in the log file from the oldest LSN restore needs (see [`crate::log`]); the
//! rest of the piece is zero. [`BackupMedia::log_pieces`] says where they are.
//!
//! Not applied: the log portion. A backup is fuzzy: restore replays that log over the
//! copied pages. Usually the copied pages alone are consistent enough to read the catalog, but
//! chinook.bak (998) is one stripe of two (see [`header`]): the extents in the other stripe are
//! missing, so it does not open (read for salvage, [`chain::BackupFiles::into_pages_salvaging`],
//! a page of `sys.sysrscols` is among the missing ones: the error names it). A file may hold
//! several backup sets (SSET ... ESET each); [`BackupMedia`] lists them with their headers
//! ([`header`]) and reads the one asked for by position (default: the last full database
//! backup). A differential backup holds only the extents changed since its full backup (those
//! its DCM pages mark, see [`extents`]): read alone it is refused by name, naming its full
//! backup; [`chain`] lays it over that full backup's pages when both are given. Log backups hold
//! no pages and are refused by name; [`chain`] lists them in the restore plan. Encrypted sets,
//! striped backups with a stripe missing (the RAID stream's family count) and stripes of
//! different media sets given together are refused too.
//!
//! Sources: the block/stream walk and the record tags from the bytes of the corpus backups, with
//! the MTF layouts from the MTF 1.00a specification; the SFIN field positions found by comparing
//! the 22 corpus backups (logical/physical names match `RESTORE FILELISTONLY`-style paths, sizes
//! match the data files' file header pages); the extent layout measured on every corpus backup
//! (see [`extents`]). `rsleedbx/mssqlbak-tests`
//! `docs/spec/01_CONTAINER.md` describes the same container. Compressed backups (`MSSQLBAK`) hold
//! the same MTF stream in compressed pieces; [`mssqlbak`] serves it decompressed, piece by piece,
//! and everything here reads it as it reads an uncompressed file.

pub mod chain;
pub mod extents;
pub mod header;
pub mod mssqlbak;
pub mod mtf;
pub mod xpress;

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::bytes::{read_u16, read_u32, read_u64, utf16le};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::page::{PageId, PAGE_SIZE};
use crate::sniff::{self, FileFormat};
use crate::source::{PageSource, SourceFile};

use chain::RestorePlan;
use extents::{DataStream, ExtentMap, StreamExtent};
pub use header::{BackupDate, BackupType, Lsn, MediaFamily};
use header::{SetBlock, SetInfo};
use mssqlbak::CompressedBytes;
use mtf::{error_at, read_exact, tag_name, Block, Blocks, STREAM_VAR_END};

/// Pages per extent.
const EXTENT_PAGES: u64 = 8;
/// Bytes before the first page of a non-empty MQDA piece.
const MQDA_PREFIX: u64 = 2;
/// Largest configuration stream read into memory (the corpus has about 3 KB).
const MAX_CONFIG_STREAM: u64 = 16 << 20;
/// Bytes of a page header read to identify its extent (up to the page's file id).
const PAGE_HEADER_PREFIX: usize = 38;
/// Page headers asked of a source at once while mapping a data stream (a multiple of 8).
const PREFETCH_PAGES: u64 = 4096;
/// SSET attribute of a differential backup.
const SSET_DIFFERENTIAL: u32 = 0x8;

/// Bytes before the log blocks of an MQTL piece (zero in every corpus backup, like MQDA's).
const MQTL_PREFIX: u64 = 2;

/// One MQTL piece of a backup's log portion: where its log blocks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPiece {
    stripe: usize,
    /// Byte offset of the first log block in the stripe's (decompressed) stream.
    pub offset: u64,
    /// Bytes of log blocks.
    pub len: u64,
}

/// What kind of database file a backup's file list entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// SFIN file type 1: a data (ROWS) file.
    Data,
    /// SFIN file type 2: a transaction log file.
    Log,
    /// Another SFIN file type, kept as read (FILESTREAM and full-text files: not in the corpus).
    Other(u32),
}

/// One database file as the backup's file list (SFIN record) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    /// SFIN +20: the file id, as in the pages' addresses.
    pub file_id: u16,
    /// SFIN +28: data, log or other.
    pub kind: FileKind,
    /// SFIN +48: the logical file name (`sys.database_files.name`).
    pub logical_name: String,
    /// SFIN +52: the path the file had on the server that backed it up.
    pub physical_name: String,
    /// SFIN +40: the file's size.
    pub size_bytes: u64,
    /// Filegroup id (0 for log files) and name (`PRIMARY`, ...; empty when the backup does not
    /// name it).
    pub filegroup_id: u32,
    /// The filegroup's name.
    pub filegroup: String,
}

/// Where a page's bytes are: which backup file (stripe) and at what byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Location {
    stripe: usize,
    offset: u64,
}

struct Stripe {
    path: PathBuf,
    /// The MTF stream: the file itself, or for a compressed backup its decompressed stream.
    bytes: Box<dyn ByteSource>,
    compressed: bool,
}

impl Stripe {
    /// Takes a backup file's bytes, decompressing on demand if it is a compressed backup.
    fn new(path: PathBuf, bytes: Box<dyn ByteSource>) -> Result<Self> {
        if sniff_backup(bytes.as_ref(), &path)?.0 == FileFormat::CompressedBackup {
            let bytes = Box::new(CompressedBytes::open(bytes, &path)?);
            return Ok(Stripe { path, bytes, compressed: true });
        }
        Ok(Stripe { path, bytes, compressed: false })
    }
}

/// One backup set of a backup file, as `RESTORE HEADERONLY` and `RESTORE FILELISTONLY` describe
/// it (see [`header`] for where each field comes from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupSet {
    /// Position in the file (`RESTORE ... WITH FILE = n`), from 1.
    pub position: u16,
    /// Full, differential, log, ... (SCIN +87).
    pub backup_type: BackupType,
    /// Backup name and description (`BACKUP ... WITH NAME, DESCRIPTION`).
    pub name: String,
    /// See [`BackupSet::name`].
    pub description: String,
    /// Login that ran the backup.
    pub user_name: String,
    /// The database's name.
    pub database_name: String,
    /// `MACHINE\INSTANCE`, or `MACHINE` for a default instance.
    pub server_name: String,
    /// The server name up to its backslash.
    pub machine_name: String,
    /// The database's on-disk format version (the boot page's `dbi_version`), e.g. 904 for SQL
    /// Server 2019.
    pub database_version: u16,
    /// The database's compatibility level (100, 150, ...).
    pub compatibility_level: u8,
    /// SQL Server's version, `major.minor.build`.
    pub software_version: String,
    /// The database's default collation, by name.
    pub collation: String,
    /// When the database was created.
    pub database_creation_date: Option<BackupDate>,
    /// When the backup started.
    pub start: Option<BackupDate>,
    /// When the backup finished.
    pub finish: Option<BackupDate>,
    /// The first LSN the backup holds.
    pub first_lsn: Lsn,
    /// The LSN after the last one the backup holds (the next log backup's first LSN).
    pub last_lsn: Lsn,
    /// The checkpoint LSN the backup started from.
    pub checkpoint_lsn: Lsn,
    /// The checkpoint LSN of the database's last full backup (differentials and logs point at their
    /// full backup by it).
    pub database_backup_lsn: Lsn,
    /// Differential backups: the checkpoint LSN and backup set GUID of their full backup.
    pub differential_base_lsn: Option<Lsn>,
    /// See [`BackupSet::differential_base_lsn`].
    pub differential_base_guid: Option<String>,
    /// The backup set's GUID, `XXXXXXXX-XXXX-...` as `RESTORE HEADERONLY` prints it.
    pub backup_set_guid: String,
    /// Bytes, as the header gives them (all stripes together).
    pub backup_size: u64,
    /// A compressed backup (`WITH COMPRESSION`: the file starts with `MSSQLBAK`).
    pub compressed: bool,
    /// The backup carries checksums (`WITH CHECKSUM`).
    pub checksums: bool,
    /// Encrypted (`WITH ENCRYPTION`) or protected by a backup set password: see [`header`].
    pub encrypted: bool,
    /// See [`BackupSet::encrypted`].
    pub password_protected: bool,
    /// The media is protected by a media password (`WITH MEDIAPASSWORD`).
    pub media_password: bool,
    /// Stripes (media families) the backup was written to, and which of them this file is.
    pub family_count: u16,
    /// See [`BackupSet::family_count`].
    pub family_number: u16,
    /// The backup file holds the whole set (an ESET block ends it).
    pub complete: bool,
    /// The database's files.
    pub files: Vec<BackupFile>,
}

/// The backup sets in one backup file, or in the stripes of one striped backup.
pub struct BackupMedia {
    stripes: Vec<Arc<Stripe>>,
    scans: Vec<StripeScan>,
    sets: Vec<BackupSet>,
}

impl BackupMedia {
    /// Reads the headers of a backup (every stripe of it, in any order). Nothing but the
    /// descriptor blocks and configuration streams is read.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        if paths.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, "no backup file given"));
        }
        Self::from_sources(open_paths(paths)?)
    }

    /// Reads the headers of a backup from bytes already open (each stripe with the name used in
    /// messages).
    pub fn from_sources(sources: Vec<(PathBuf, Box<dyn ByteSource>)>) -> Result<Self> {
        let stripes = sources.into_iter().map(|(path, bytes)| Stripe::new(path, bytes)).collect::<Result<Vec<_>>>()?;
        Self::build(stripes)
    }

    /// Reads a backup held in memory; `name` is used in messages.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self> {
        Self::build(vec![Stripe::new(name.into(), Box::new(bytes))?])
    }

    /// Reads the stripes of a backup held in memory, each with the name used in messages.
    pub fn from_stripe_bytes(stripes: Vec<(PathBuf, Vec<u8>)>) -> Result<Self> {
        if stripes.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, "no backup file given"));
        }
        let stripes =
            stripes.into_iter().map(|(name, bytes)| Stripe::new(name, Box::new(bytes))).collect::<Result<Vec<_>>>()?;
        Self::build(stripes)
    }

    fn build(stripes: Vec<Stripe>) -> Result<Self> {
        let stripes: Vec<Arc<Stripe>> = stripes.into_iter().map(Arc::new).collect();
        let mut scans = Vec::new();
        for stripe in &stripes {
            let path = stripe.path.as_path();
            let src = stripe.bytes.as_ref();
            let scan = check_magic(src, path)
                .and_then(|()| mtf::read_tape(src, path))
                .and_then(|tape| scan_stripe(src, path, tape.logical_block_size))
                .map_err(|e| if stripe.compressed { in_decompressed_stream(e) } else { e })?;
            scans.push(scan);
        }
        Self::assemble(stripes, scans)
    }

    /// The media of stripes already scanned, checked to be distinct stripes of one media set.
    fn assemble(stripes: Vec<Arc<Stripe>>, scans: Vec<StripeScan>) -> Result<Self> {
        check_stripes_belong_together(&stripes, &scans)?;
        let first = &scans[0];
        let sets = first
            .sets
            .iter()
            .enumerate()
            .map(|(i, set)| backup_set(set, i, stripes[0].compressed, first.family.as_ref()))
            .collect();
        Ok(BackupMedia { stripes, scans, sets })
    }

    /// Every backup set, in file order.
    pub fn sets(&self) -> &[BackupSet] {
        &self.sets
    }

    /// The set at `position`.
    pub fn set(&self, position: u16) -> Option<&BackupSet> {
        self.sets.iter().find(|s| s.position == position)
    }

    /// The set read when no position is asked for: the last full database backup in the file,
    /// or the last set when there is no full one.
    pub fn default_position(&self) -> Option<u16> {
        self.sets.iter().rev().find(|s| s.backup_type == BackupType::Full).or(self.sets.last()).map(|s| s.position)
    }

    /// The family numbers of the stripes that were not given (empty when all were).
    pub fn missing_stripes(&self) -> Vec<u16> {
        let Some(count) = self.scans.iter().filter_map(|s| s.family.map(|f| f.family_count)).max() else {
            return Vec::new();
        };
        let given: Vec<u16> = self.scans.iter().filter_map(|s| s.family.map(|f| f.family_number)).collect();
        (1..=count).filter(|n| !given.contains(n)).collect()
    }

    /// The log portion of the set at `position`: its MQTL pieces in stream order, in whichever
    /// stripe holds them (see [`crate::log`], which reads the log blocks in them).
    pub fn log_pieces(&self, position: u16) -> Vec<LogPiece> {
        let mut pieces = Vec::new();
        for (stripe, scan) in self.scans.iter().enumerate() {
            let Some(set) = scan.sets.iter().enumerate().find(|(i, s)| s.position(*i) == position).map(|(_, s)| s)
            else {
                continue;
            };
            for stream in set.log_blocks.iter().flat_map(|b| &b.streams).filter(|s| s.header.is(b"MQTL")) {
                if stream.header.length > MQTL_PREFIX {
                    pieces.push(LogPiece {
                        stripe,
                        offset: stream.data + MQTL_PREFIX,
                        len: stream.header.length - MQTL_PREFIX,
                    });
                }
            }
        }
        pieces
    }

    /// Reads `buf.len()` bytes of a log piece from `at` (relative to the piece).
    pub fn read_log(&self, piece: &LogPiece, at: u64, buf: &mut [u8]) -> Result<()> {
        let stripe = &self.stripes[piece.stripe];
        if at.saturating_add(buf.len() as u64) > piece.len {
            return Err(error_at(
                &stripe.path,
                ErrorKind::Corrupt,
                piece.offset + at,
                format!("a log block of {} bytes runs past the end of its log stream MQTL", buf.len()),
            ));
        }
        read_exact(stripe.bytes.as_ref(), &stripe.path, piece.offset + at, buf, "a log block").map_err(|e| {
            if stripe.compressed {
                in_decompressed_stream(e)
            } else {
                e
            }
        })
    }

    /// The file (stripe) a log piece is in.
    pub fn stripe_path(&self, piece: &LogPiece) -> &Path {
        &self.stripes[piece.stripe].path
    }

    /// Where a log piece's byte offsets count from: "the file", or "the decompressed stream" of
    /// a compressed backup.
    pub fn offsets_in(&self, piece: &LogPiece) -> &'static str {
        if self.stripes[piece.stripe].compressed {
            "the decompressed stream"
        } else {
            "the file"
        }
    }

    fn first_path(&self) -> &Path {
        &self.stripes[0].path
    }

    /// The pages of the backup set at `position` (default: [`BackupMedia::default_position`]).
    /// Differential, log and encrypted backups are refused by name, as are striped backups with
    /// a stripe missing.
    pub fn into_pages(self, position: Option<u16>) -> Result<BackupPages> {
        self.pages_of(position, true, false)
    }

    /// Like [`BackupMedia::into_pages`], but reads a striped backup with stripes missing: only
    /// the extents in the given stripes are there (asking for another page is an error).
    pub fn into_pages_with_stripes_missing(self, position: Option<u16>) -> Result<BackupPages> {
        self.pages_of(position, false, false)
    }

    /// The pages of the set at `position`; a differential backup's (only the extents it copies)
    /// when `differential` is set (see [`chain`], which lays them over their full backup's).
    fn pages_of(&self, position: Option<u16>, all_stripes: bool, differential: bool) -> Result<BackupPages> {
        let first = self.first_path().to_path_buf();
        let position = match position.or(self.default_position()) {
            Some(p) => p,
            None => {
                return Err(Error::corrupt(
                    "no SSET (start of backup set) block: truncated backup or not a database backup",
                )
                .in_file(&first))
            }
        };
        let Some(set) = self.set(position) else {
            let held: Vec<String> = self.sets.iter().map(|s| s.position.to_string()).collect();
            return Err(Error::not_found(format!(
                "no backup set at position {position} (the file holds position{} {}; `mdfkit backups` lists them)",
                if held.len() == 1 { "" } else { "s" },
                held.join(", ")
            ))
            .in_file(&first));
        };
        let what = format!("position {position} is {}", set.backup_type.described());
        let map = match set.backup_type {
            BackupType::Full => ExtentMap::Gam,
            BackupType::Differential if differential => ExtentMap::Dcm,
            BackupType::Differential => {
                return Err(Error::new(
                    ErrorKind::MissingFile,
                    format!(
                    "{what}: it holds only the extents changed since its full backup ({}); give that full backup too",
                    differential_base(set)
                ),
                )
                .in_file(&first))
            }
            BackupType::Log => {
                return Err(Error::not_a_database(format!(
                    "{what}: it holds log records, no data pages; use the full backup"
                ))
                .in_file(&first))
            }
            BackupType::Other(_) => {
                return Err(Error::unsupported(format!("{what}: reading it is not supported yet")).in_file(&first))
            }
        };
        if set.encrypted || set.password_protected {
            return Err(Error::unsupported(format!(
                "position {position} is {} (backup encryption or a backup set password): reading it is not supported",
                if set.encrypted { "encrypted" } else { "password-protected" }
            ))
            .in_file(&first));
        }
        let missing = self.missing_stripes();
        if all_stripes && !missing.is_empty() {
            let family = self.scans[0].family.unwrap_or(MediaFamily {
                media_set_id: [0; 16],
                family_count: 0,
                family_number: 0,
                media_family_id: 0,
                media_password: false,
            });
            let list: Vec<String> = missing.iter().map(u16::to_string).collect();
            return Err(Error::new(
                ErrorKind::MissingFile,
                format!(
                    "the backup was striped over {} files and {} {} missing (this file is stripe {}, media set {}): give every file of the backup",
                    family.family_count,
                    if missing.len() == 1 { "stripe" } else { "stripes" },
                    list.join(", ") + if missing.len() == 1 { " is" } else { " are" },
                    family.family_number,
                    header::guid_string(&family.media_set_id)
                ),
            )
            .in_file(&first));
        }
        let set = set.clone();
        let data_files: Vec<(u16, u32)> = set
            .files
            .iter()
            .filter(|f| f.kind == FileKind::Data)
            .map(|f| (f.file_id, u32::try_from(f.size_bytes / PAGE_SIZE as u64).unwrap_or(u32::MAX)))
            .collect();
        // A placement this process was given for the set, if it fits the backup (else the pages
        // are placed again, as without one).
        let known = (!differential)
            .then(|| known_placement(&set.backup_set_guid, position))
            .flatten()
            .and_then(|known| known.pages(&self.stripes, &data_files));
        let striped = self.stripes.len() > 1 || set.family_count > 1;
        let mut streams = Vec::new();
        // The main stream whose headers were not read: where it is in `streams`, and its block.
        let mut unread = None;
        for (index, (stripe, scan)) in self.stripes.iter().zip(&self.scans).enumerate() {
            let path = stripe.path.as_path();
            let Some(s) = scan.sets.iter().enumerate().find(|(i, s)| s.position(*i) == position).map(|(_, s)| s) else {
                return Err(Error::not_a_database(format!(
                    "has no backup set at position {position}, but {} does: stripes of different backups?",
                    first.display()
                ))
                .in_file(path));
            };
            if s.sset.backup_set_guid != scan_guid(&self.scans[0], position) {
                return Err(Error::not_a_database(format!(
                    "its backup set at position {position} is not the one in {} (different backup set GUIDs): stripes of different backups",
                    first.display()
                ))
                .in_file(path));
            }
            if !s.ended {
                return Err(Error::corrupt(format!(
                    "the backup set has no ESET (end of set) block before the end of the file (byte {}): truncated backup",
                    stripe.bytes.len()
                ))
                .in_file(path));
            }
            // With a known placement, the stream's extents are not read at all.
            for (i, block) in s.data_blocks.iter().enumerate().filter(|_| known.is_none()) {
                // A single stripe's main stream is placed by its maps first: its headers are read
                // only if they are needed ([`extents::locate_by_maps`]).
                let main = i == 0;
                let by_maps = main && !striped;
                if by_maps {
                    unread = Some((streams.len(), block));
                }
                let extents = stream_extents(stripe, block, !by_maps)?;
                streams.push(DataStream { stripe: index, main, extents });
            }
        }
        let stripes = &self.stripes;
        let mut read_page = |stripe: usize, offset: u64| {
            let s: &Stripe = stripes.get(stripe)?;
            let mut page = vec![0u8; PAGE_SIZE];
            (offset.checked_add(PAGE_SIZE as u64)? <= s.bytes.len()).then_some(())?;
            s.bytes.read_exact_at(&mut page, offset).ok().map(|()| page)
        };
        let mut read_headers = |stripe: usize, e: &StreamExtent| {
            let s = stripes.get(stripe)?;
            extent_headers(s.bytes.as_ref(), &s.path, e.offset, e.pages).ok()
        };
        // Only a single stripe's main stream, with no placement given, is tried by its maps.
        let by_maps =
            unread.and_then(|_| extents::locate_by_maps(&streams, &data_files, map, &mut read_page, &mut read_headers));
        let located = match (&known, by_maps) {
            (Some(_), _) => extents::Located::default(),
            (None, Some(located)) => located,
            (None, None) => {
                // The maps did not account for the stream: every header is read and voted on.
                if let Some((at, block)) = unread {
                    let stream = &mut streams[at];
                    stream.extents = stream_extents(&self.stripes[stream.stripe], block, true)?;
                }
                extents::locate(&streams, &data_files, map, striped, &mut read_page)
            }
        };
        let (mut pages, mut copies) = known.unwrap_or_default();
        // Later copies win (the re-sent extents of 2019+ backups come after the main stream).
        for p in &located.placed {
            for k in 0..u64::from(p.pages) {
                let Some(page_no) = p.first.page.checked_add(k as u32) else { break };
                pages.insert(
                    PageId::new(p.first.file, page_no),
                    Location { stripe: p.stripe, offset: p.offset + k * PAGE_SIZE as u64 },
                );
                copies += 1;
            }
        }
        if pages.is_empty() {
            return Err(Error::not_a_database("backup holds no data pages (a transaction log backup?)").in_file(&first));
        }
        let mut notes = located.notes;
        let mut stripes_not_given = Vec::new();
        let missing = self.missing_stripes();
        if !missing.is_empty() {
            stripes_not_given.push(format!(
                    "{}: stripe(s) {} of {} not given: {} extent(s) the allocation map lists are not in the stripes given{}",
                    first.display(),
                    missing.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
                    set.family_count,
                    located.missing.len(),
                    located.missing.first().map_or(String::new(), |e| format!(" (first: {e})"))
            ));
            notes.splice(0..0, stripes_not_given.iter().cloned());
        }
        let file_list = set.files.clone();
        let files = source_files(&first, &file_list, &pages);
        let backup_sets = self.sets.len();
        let placement = (!differential && stripes_not_given.is_empty())
            .then(|| Arc::new(PagePlacement::of(&set.backup_set_guid, position, &pages)));
        Ok(BackupPages {
            stripes: self.stripes.clone(),
            pages,
            files,
            file_list,
            backup_sets,
            copies,
            origin: BackupOrigin { set, plan: None, placement },
            differential: None,
            missing_extents: located.missing,
            stripes_not_given,
            notes,
        })
    }
}

/// The full backup a differential backup names in its header, in words.
fn differential_base(diff: &BackupSet) -> String {
    let lsn = diff.differential_base_lsn.unwrap_or(diff.database_backup_lsn);
    match (lsn.is_zero(), &diff.differential_base_guid) {
        (true, _) => "its header does not name it".to_string(),
        (false, Some(guid)) => format!("checkpoint LSN {lsn}, backup set GUID {guid}"),
        (false, None) => format!("checkpoint LSN {lsn}"),
    }
}

fn scan_guid(scan: &StripeScan, position: u16) -> [u8; 16] {
    scan.sets
        .iter()
        .enumerate()
        .find(|(i, s)| s.position(*i) == position)
        .map_or([0; 16], |(_, s)| s.sset.backup_set_guid)
}

/// Stripes given together must be distinct files of one media set.
fn check_stripes_belong_together(stripes: &[Arc<Stripe>], scans: &[StripeScan]) -> Result<()> {
    let Some(first) = scans[0].family else { return Ok(()) };
    for (stripe, scan) in stripes.iter().zip(scans).skip(1) {
        let Some(family) = scan.family else { continue };
        if family.media_set_id != first.media_set_id {
            return Err(Error::not_a_database(format!(
                "belongs to another backup than {} (media set {} here, {} there): give only the stripes of one backup",
                stripes[0].path.display(),
                header::guid_string(&family.media_set_id),
                header::guid_string(&first.media_set_id)
            ))
            .in_file(&stripe.path));
        }
    }
    for (i, (a, scan_a)) in stripes.iter().zip(scans).enumerate() {
        for (b, scan_b) in stripes.iter().zip(scans).skip(i + 1) {
            if let (Some(fa), Some(fb)) = (scan_a.family, scan_b.family) {
                if fa.family_number == fb.family_number && fa.media_family_id == fb.media_family_id {
                    return Err(Error::not_a_database(format!(
                        "is the same stripe ({} of {}) as {}: give each file once",
                        fb.family_number,
                        fb.family_count,
                        a.path.display()
                    ))
                    .in_file(&b.path));
                }
            }
        }
    }
    Ok(())
}

/// The public description of one scanned set.
fn backup_set(set: &SetScan, index: usize, compressed: bool, family: Option<&MediaFamily>) -> BackupSet {
    let info = set.info.as_ref();
    let sset = &set.sset;
    let backup_type = match info {
        Some(i) => i.backup_type,
        None if sset.attributes & SSET_DIFFERENTIAL != 0 => BackupType::Differential,
        None => BackupType::Full,
    };
    let server_name = info.map(|i| i.server_name.clone()).unwrap_or_default();
    BackupSet {
        position: set.position(index),
        backup_type,
        name: sset.name.clone(),
        description: sset.description.clone(),
        user_name: sset.user_name.clone(),
        database_name: info.map(|i| i.database_name.clone()).unwrap_or_default(),
        machine_name: server_name.split('\\').next().unwrap_or_default().to_string(),
        server_name,
        database_version: info.map_or(0, |i| i.database_version),
        compatibility_level: info.map_or(0, |i| i.compatibility_level),
        software_version: info
            .map(|i| format!("{}.{}.{}", i.software_version.0, i.software_version.1, i.software_version.2))
            .unwrap_or_default(),
        collation: info.map(|i| i.collation.name()).unwrap_or_default(),
        database_creation_date: info.and_then(|i| i.database_creation_date),
        start: info.and_then(|i| i.start).or(sset.date),
        finish: info.and_then(|i| i.finish),
        first_lsn: info.map(|i| i.first_lsn).unwrap_or_default(),
        last_lsn: info.map(|i| i.last_lsn).unwrap_or_default(),
        checkpoint_lsn: info.map(|i| i.checkpoint_lsn).unwrap_or_default(),
        database_backup_lsn: info.map(|i| i.database_backup_lsn).unwrap_or_default(),
        differential_base_lsn: info.and_then(|i| i.differential_base_lsn),
        differential_base_guid: info.and_then(|i| i.differential_base_guid).map(|g| header::guid_string(&g)),
        backup_set_guid: header::guid_string(&sset.backup_set_guid),
        backup_size: info.map_or(0, |i| i.backup_size),
        compressed,
        checksums: set.checksums || info.is_some_and(|i| i.flags & header::SCIN_CHECKSUMS != 0),
        encrypted: set.encrypted_streams || sset.password_algorithm != 0,
        password_protected: sset.has_password,
        media_password: family.is_some_and(|f| f.media_password),
        family_count: family.map_or(1, |f| f.family_count),
        family_number: family.map_or(1, |f| f.family_number),
        complete: set.ended,
        files: set.files.clone(),
    }
}

/// The database pages inside a backup, served by address.
pub struct BackupPages {
    stripes: Vec<Arc<Stripe>>,
    pages: BTreeMap<PageId, Location>,
    files: Vec<SourceFile>,
    file_list: Vec<BackupFile>,
    backup_sets: usize,
    copies: usize,
    origin: BackupOrigin,
    /// The differential backup whose extents are laid over the full backup's pages.
    differential: Option<BackupSet>,
    /// Read with stripes missing ([`BackupMedia::into_pages_with_stripes_missing`]): the extents
    /// the allocation maps list that the given stripes lack.
    missing_extents: Vec<PageId>,
    /// The notes (also in `notes`) naming stripes not given, for [`PageSource::parts_not_given`].
    stripes_not_given: Vec<String>,
    notes: Vec<String>,
}

impl BackupPages {
    /// Opens a backup file (its last full database backup).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_stripes(&[path])
    }

    /// Opens a backup written to several files at once (`BACKUP ... TO DISK = a, DISK = b`): each
    /// file holds some of the extents. Give every file of the media set.
    pub fn open_stripes<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        BackupMedia::open(paths)?.into_pages(None)
    }

    /// Opens the backup set at `position` (`None`: the last full database backup).
    pub fn open_position<P: AsRef<Path>>(paths: &[P], position: Option<u16>) -> Result<Self> {
        BackupMedia::open(paths)?.into_pages(position)
    }

    /// Reads a backup held in memory; `name` is used in messages.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self> {
        BackupMedia::from_bytes(name, bytes)?.into_pages(None)
    }

    /// The database's files as the backup lists them (data and log).
    pub fn file_list(&self) -> &[BackupFile] {
        &self.file_list
    }

    /// The backup set whose pages are served (the full backup when a differential is laid over
    /// it).
    pub fn backup_set(&self) -> &BackupSet {
        &self.origin.set
    }

    /// First pages of the extents the allocation maps list that are not in the stripes given.
    pub fn missing_extents(&self) -> &[PageId] {
        &self.missing_extents
    }

    /// The differential backup laid over [`BackupPages::backup_set`]'s pages, if any.
    pub fn differential(&self) -> Option<&BackupSet> {
        self.differential.as_ref()
    }

    /// Lays a differential backup's pages over these (a full backup's): every page the
    /// differential copies replaces the full's; the file list and sizes become the
    /// differential's (the database may have grown).
    fn overlay(mut self, diff: BackupPages) -> BackupPages {
        let base = self.stripes.len();
        self.stripes.extend(diff.stripes);
        for (id, location) in diff.pages {
            self.pages.insert(id, Location { stripe: base + location.stripe, offset: location.offset });
        }
        self.copies += diff.copies;
        self.notes.extend(diff.notes);
        self.stripes_not_given.extend(diff.stripes_not_given);
        let pages = &self.pages;
        self.missing_extents.retain(|e| !pages.contains_key(e));
        // A changed extent in a missing stripe of the differential: the full's copy is stale.
        for e in diff.missing_extents {
            for k in 0..EXTENT_PAGES as u32 {
                self.pages.remove(&PageId::new(e.file, e.page.saturating_add(k)));
            }
            self.missing_extents.push(e);
        }
        let mut files = diff.files;
        for f in &mut files {
            if let Some(full) = self.files.iter().find(|g| g.file_id == f.file_id) {
                f.page_count = f.page_count.max(full.page_count);
            }
        }
        for f in &self.files {
            if !files.iter().any(|g| g.file_id == f.file_id) {
                files.push(f.clone());
            }
        }
        files.sort_by_key(|f| f.file_id);
        self.files = files;
        self.file_list = diff.file_list;
        self.differential = Some(diff.origin.set);
        self
    }

    /// Number of distinct pages the backup holds.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Number of page copies read, re-sent copies included.
    pub fn page_copies(&self) -> usize {
        self.copies
    }

    /// Number of backup sets in the file.
    pub fn backup_sets(&self) -> usize {
        self.backup_sets
    }

    /// Byte offset (and file, for striped backups) of the copy of `id` that is served. For a
    /// compressed backup the offset is in the decompressed MTF stream.
    pub fn page_location(&self, id: PageId) -> Option<(&Path, u64)> {
        self.pages.get(&id).map(|l| (self.stripes[l.stripe].path.as_path(), l.offset))
    }
}

/// Opens each backup file (a local path or a URL), with its name for messages.
fn open_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<(PathBuf, Box<dyn ByteSource>)>> {
    paths.iter().map(|p| Ok((p.as_ref().to_path_buf(), crate::location::open(p.as_ref())?))).collect()
}

/// The data files to serve: those the file list names as data, plus any file id pages carry.
fn source_files(backup: &Path, file_list: &[BackupFile], pages: &BTreeMap<PageId, Location>) -> Vec<SourceFile> {
    let mut by_id: BTreeMap<u16, SourceFile> = BTreeMap::new();
    for f in file_list.iter().filter(|f| f.kind == FileKind::Data) {
        let name = f.physical_name.rsplit(['\\', '/']).next().filter(|n| !n.is_empty()).unwrap_or(&f.logical_name);
        by_id.insert(
            f.file_id,
            SourceFile {
                file_id: f.file_id,
                location: PathBuf::from(format!("{}!{name}", backup.display())),
                page_count: u32::try_from(f.size_bytes / PAGE_SIZE as u64).unwrap_or(u32::MAX),
            },
        );
    }
    for id in pages.keys() {
        let entry = by_id.entry(id.file).or_insert_with(|| SourceFile {
            file_id: id.file,
            location: PathBuf::from(format!("{}!file {}", backup.display(), id.file)),
            page_count: 0,
        });
        entry.page_count = entry.page_count.max(id.page.saturating_add(1));
    }
    by_id.into_values().collect()
}

/// Says that an MTF-level error's byte offsets are in the decompressed stream (errors of the
/// compressed container itself already name file offsets and say "compressed record").
fn in_decompressed_stream(e: Error) -> Error {
    if e.message().contains("compressed") || !e.message().starts_with("at byte") {
        return e;
    }
    let file = e.file().map(Path::to_path_buf);
    let e = Error::new(e.kind(), format!("in the decompressed stream, {}", e.message()));
    match file {
        Some(f) => e.in_file(&f),
        None => e,
    }
}

/// What the first bytes of a backup file say it is, and those bytes (zero-padded when the file
/// is shorter).
fn sniff_backup(src: &dyn ByteSource, path: &Path) -> Result<(FileFormat, [u8; 8])> {
    let mut head = [0u8; sniff::COMPRESSED_BACKUP_MAGIC.len()];
    let n = src.len().min(head.len() as u64) as usize;
    read_exact(src, path, 0, &mut head[..n], "the file's magic bytes")?;
    Ok((sniff::sniff(&head[..n]), head))
}

fn check_magic(src: &dyn ByteSource, path: &Path) -> Result<()> {
    let (kind, magic) = sniff_backup(src, path)?;
    if kind != FileFormat::Backup {
        return Err(Error::not_a_database(format!(
            "not a SQL Server backup: expected \"TAPE\" (Microsoft Tape Format) at byte 0, found {}",
            tag_name(&[magic[0], magic[1], magic[2], magic[3]])
        ))
        .in_file(path));
    }
    Ok(())
}

/// What one backup file holds.
struct StripeScan {
    family: Option<MediaFamily>,
    sets: Vec<SetScan>,
}

/// One backup set of one file: its descriptor fields and where its data is.
struct SetScan {
    sset: SetBlock,
    /// From the MSLS copy of the configuration when there is one, else from the MSCI copy.
    info: Option<SetInfo>,
    info_final: bool,
    files: Vec<BackupFile>,
    data_blocks: Vec<Block>,
    /// MSTL blocks: the log portion (a log backup's whole content).
    log_blocks: Vec<Block>,
    checksums: bool,
    encrypted_streams: bool,
    ended: bool,
}

impl SetScan {
    /// The SSET's data set number, or the set's place in the file when the SSET has none.
    fn position(&self, index: usize) -> u16 {
        if self.sset.position != 0 {
            self.sset.position
        } else {
            u16::try_from(index + 1).unwrap_or(u16::MAX)
        }
    }
}

/// Largest descriptor block read whole for its fields and strings.
const MAX_DESCRIPTOR: u64 = 64 << 10;

/// Walks every block of one backup file: the media family, and for each backup set its header,
/// file list and data blocks.
fn scan_stripe(src: &dyn ByteSource, path: &Path, logical_block_size: u16) -> Result<StripeScan> {
    let mut scan = StripeScan { family: None, sets: Vec::new() };
    let mut sset_offset: Option<u64> = None;
    let mut blocks = 0usize;
    for block in Blocks::new(src, path) {
        let block = block?;
        blocks += 1;
        if blocks == 1 && !block.header.is(sniff::MTF_MAGIC) {
            return Err(error_at(path, ErrorKind::Corrupt, 0, "first block is not TAPE"));
        }
        let kind = &block.header.kind;
        match kind {
            sniff::MTF_MAGIC => {
                scan.family = read_family(src, path, &block)?;
                continue;
            }
            b"SSET" => {
                let bytes = read_descriptor(src, path, &block)?;
                scan.sets.push(SetScan {
                    sset: SetBlock::parse(&bytes).unwrap_or_default(),
                    info: None,
                    info_final: false,
                    files: Vec::new(),
                    data_blocks: Vec::new(),
                    log_blocks: Vec::new(),
                    checksums: false,
                    encrypted_streams: false,
                    ended: false,
                });
                sset_offset = Some(block.offset);
                continue;
            }
            b"ESET" => {
                if let Some(set) = scan.sets.last_mut() {
                    set.ended = true;
                }
                sset_offset = None;
                continue;
            }
            _ => {}
        }
        let (Some(sset), Some(set)) = (sset_offset, scan.sets.last_mut()) else {
            continue;
        };
        check_logical_address(path, &block, sset, logical_block_size)?;
        if block.streams.iter().any(|s| s.header.is(b"CSUM")) {
            set.checksums = true;
        }
        if block.streams.iter().any(|s| s.header.encryption != 0) {
            set.encrypted_streams = true;
        }
        match kind {
            b"MSCI" | b"MSLS" => {
                let (info, files) = read_config(src, path, &block)?;
                let is_final = kind == b"MSLS";
                if info.is_some() && (set.info.is_none() || is_final) {
                    set.info = info;
                    set.info_final = is_final;
                }
                if set.files.is_empty() || (is_final && !files.is_empty()) {
                    set.files = files;
                }
            }
            b"MSDA" => set.data_blocks.push(block),
            b"MSTL" => set.log_blocks.push(block),
            _ => {}
        }
    }
    if scan.sets.is_empty() {
        return Err(Error::corrupt("no SSET (start of backup set) block: truncated backup or not a database backup")
            .in_file(path));
    }
    Ok(scan)
}

/// Reads a descriptor block's bytes up to its end (at most [`MAX_DESCRIPTOR`]).
fn read_descriptor(src: &dyn ByteSource, path: &Path, block: &Block) -> Result<Vec<u8>> {
    let len = (block.end - block.offset).min(MAX_DESCRIPTOR) as usize;
    let mut b = vec![0u8; len];
    read_exact(src, path, block.offset, &mut b, "a descriptor block")?;
    Ok(b)
}

/// The media family of a file, from its TAPE block and RAID stream (`None` without RAID).
fn read_family(src: &dyn ByteSource, path: &Path, tape: &Block) -> Result<Option<MediaFamily>> {
    let Some(raid) = tape.streams.iter().find(|s| s.header.is(b"RAID")) else {
        return Ok(None);
    };
    let mut head = [0u8; 96];
    read_exact(src, path, tape.offset, &mut head, "the TAPE block")?;
    let mut data = vec![0u8; raid.header.length.min(256) as usize];
    read_exact(src, path, raid.data, &mut data, "the RAID stream")?;
    Ok(MediaFamily::parse(&head, &data))
}

/// SQL Server's blocks inside a set sit at SSET offset + logical address x logical block size.
fn check_logical_address(path: &Path, block: &Block, sset: u64, lbs: u16) -> Result<()> {
    if !matches!(&block.header.kind, b"VOLB" | b"MSCI" | b"MSDA" | b"MSTL" | b"MSLS") {
        return Ok(());
    }
    let expected = block.header.logical_address.checked_mul(u64::from(lbs)).and_then(|o| o.checked_add(sset));
    if expected != Some(block.offset) {
        return Err(error_at(
            path,
            ErrorKind::Corrupt,
            block.offset,
            format!(
                "{} block says it is logical block {} of the set, which is byte {}",
                tag_name(&block.header.kind),
                block.header.logical_address,
                expected.map_or("(overflow)".to_string(), |e| e.to_string())
            ),
        ));
    }
    Ok(())
}

/// Reads the SCIN, SFGI and SFIN records of the MQCI stream of an MSCI or MSLS block.
fn read_config(src: &dyn ByteSource, path: &Path, block: &Block) -> Result<(Option<SetInfo>, Vec<BackupFile>)> {
    let Some(stream) = block.streams.iter().find(|s| s.header.is(b"MQCI")) else {
        return Ok((None, Vec::new()));
    };
    let len = stream.header.length;
    if len > MAX_CONFIG_STREAM {
        return Err(error_at(
            path,
            ErrorKind::Corrupt,
            stream.offset,
            format!("configuration stream MQCI claims {len} bytes, more than the {MAX_CONFIG_STREAM} expected"),
        ));
    }
    let mut b = vec![0u8; len as usize];
    read_exact(src, path, stream.data, &mut b, "the configuration stream")?;
    let mut files = Vec::new();
    let mut info = None;
    let mut filegroups: BTreeMap<u32, String> = BTreeMap::new();
    let mut pos = 0usize;
    while pos + 8 <= b.len() {
        let tag = [b[pos], b[pos + 1], b[pos + 2], b[pos + 3]];
        let rec_len = read_u32(&b, pos + 4).unwrap_or(0) as usize;
        let at = stream.data + pos as u64;
        if rec_len < 8 || rec_len > b.len() - pos {
            return Err(error_at(
                path,
                ErrorKind::Corrupt,
                at,
                format!(
                    "configuration record {} claims {rec_len} bytes, expected 8 to {}",
                    tag_name(&tag),
                    b.len() - pos
                ),
            ));
        }
        let record = &b[pos..pos + rec_len];
        match &tag {
            b"SFIN" => files.push(parse_sfin(record).ok_or_else(|| {
                error_at(
                    path,
                    ErrorKind::Corrupt,
                    at,
                    format!("file record SFIN of {rec_len} bytes is too short for its fields or names"),
                )
            })?),
            b"SCIN" if info.is_none() => info = SetInfo::parse(record),
            b"SFGI" => {
                if let Some((id, name)) = parse_sfgi(record) {
                    filegroups.insert(id, name);
                }
            }
            _ => {}
        }
        pos += rec_len;
    }
    for f in &mut files {
        f.filegroup = filegroups.get(&f.filegroup_id).cloned().unwrap_or_default();
    }
    Ok((info, files))
}

/// Decodes one SFGI record: filegroup id and name.
fn parse_sfgi(r: &[u8]) -> Option<(u32, String)> {
    let size = read_u16(r, 16)? as usize;
    let offset = read_u16(r, 18)? as usize;
    Some((read_u32(r, 12)?, utf16le(r.get(offset..offset.checked_add(size)?)?)))
}

/// Decodes one SFIN record (see the module documentation).
fn parse_sfin(r: &[u8]) -> Option<BackupFile> {
    let string = |at: usize| -> Option<String> {
        let size = read_u16(r, at)? as usize;
        let offset = read_u16(r, at + 2)? as usize;
        Some(utf16le(r.get(offset..offset.checked_add(size)?)?))
    };
    let file_id = u16::try_from(read_u32(r, 20)?).ok()?;
    let kind = match read_u32(r, 28)? {
        1 => FileKind::Data,
        2 => FileKind::Log,
        other => FileKind::Other(other),
    };
    Some(BackupFile {
        file_id,
        kind,
        size_bytes: read_u64(r, 40)?,
        logical_name: string(48)?,
        physical_name: string(52)?,
        filegroup_id: read_u32(r, 36).unwrap_or(0),
        filegroup: String::new(),
    })
}

/// [`read_stream_extents`] of a stripe, with the page headers read or not (`headers`), errors in a
/// compressed stripe said to be in its decompressed stream.
fn stream_extents(stripe: &Stripe, block: &Block, headers: bool) -> Result<Vec<StreamExtent>> {
    read_stream_extents(stripe.bytes.as_ref(), &stripe.path, block, headers).map_err(|e| {
        if stripe.compressed {
            in_decompressed_stream(e)
        } else {
            e
        }
    })
}

/// The extent of `pages` pages at `offset` of a stream, with its page headers read.
fn extent_headers(src: &dyn ByteSource, path: &Path, offset: u64, pages: u8) -> Result<StreamExtent> {
    let mut headers = [[0u8; PAGE_HEADER_PREFIX]; EXTENT_PAGES as usize];
    let count = usize::from(pages).min(headers.len());
    for (k, h) in headers.iter_mut().take(count).enumerate() {
        read_exact(src, path, offset + k as u64 * PAGE_SIZE as u64, h, "a page header")?;
    }
    let prefixes: Vec<&[u8]> = headers[..count].iter().map(|h| h.as_slice()).collect();
    Ok(StreamExtent::from_headers(offset, &prefixes))
}

/// The extents of the MQDA pieces of an MSDA block, in stream order, with their page headers
/// (`headers`; else only where each extent is and how many pages it holds).
fn read_stream_extents(src: &dyn ByteSource, path: &Path, block: &Block, headers: bool) -> Result<Vec<StreamExtent>> {
    let mut extents = Vec::new();
    for stream in block.streams.iter().filter(|s| s.header.is(b"MQDA")) {
        let len = stream.header.length;
        if len == 0 {
            // The zero-length last piece that ends every data stream.
            continue;
        }
        let page = PAGE_SIZE as u64;
        let whole_pages = len >= MQDA_PREFIX && (len - MQDA_PREFIX) / page * page == len - MQDA_PREFIX;
        if !whole_pages {
            return Err(error_at(
                path,
                ErrorKind::Corrupt,
                stream.offset,
                format!(
                    "data stream MQDA is {len} bytes, expected 2 + a whole number of 8192-byte pages{}",
                    if stream.header.media_attributes & STREAM_VAR_END != 0 { " (last piece)" } else { "" }
                ),
            ));
        }
        let start = stream.data + MQDA_PREFIX;
        let page_total = (len - MQDA_PREFIX) / page;
        let mut first = 0u64;
        while first < page_total {
            let count = EXTENT_PAGES.min(page_total - first) as usize;
            let at = start + first * page;
            if !headers {
                extents.push(StreamExtent { offset: at, pages: count as u8, named: [None; 8], blocks: 0 });
                first += EXTENT_PAGES;
                continue;
            }
            if first.is_multiple_of(PREFETCH_PAGES) {
                let end = (first + PREFETCH_PAGES).min(page_total);
                src.prefetch_ranges(&(first..end).map(|k| (start + k * page, PAGE_HEADER_PREFIX)).collect::<Vec<_>>());
            }
            extents.push(extent_headers(src, path, at, count as u8)?);
            first += EXTENT_PAGES;
        }
    }
    Ok(extents)
}

impl PageSource for BackupPages {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let Some(location) = self.pages.get(&id) else {
            let held = self.pages.range(PageId::new(id.file, 0)..=PageId::new(id.file, u32::MAX)).count();
            return Err(Error::new(
                if held == 0 { ErrorKind::MissingFile } else { ErrorKind::Corrupt },
                format!("page {id} is not in the backup (it holds {held} pages of file id {})", id.file),
            ));
        };
        let stripe = &self.stripes[location.stripe];
        let page = buf.get_mut(..PAGE_SIZE).ok_or_else(|| Error::corrupt("a page buffer shorter than a page"))?;
        read_exact(stripe.bytes.as_ref(), &stripe.path, location.offset, page, "a page")
    }

    /// One read where the run's pages lie one after another in one stripe (a backup's data
    /// stream holds a file's allocated extents in page order), page by page otherwise.
    fn read_raw_run(&self, first: PageId, count: u32, buf: &mut [u8]) -> Result<()> {
        let run = crate::source::run_bytes(first, count, buf)?;
        let start = self.pages.get(&first);
        let in_one_piece = start.is_some_and(|start| {
            // `run_bytes` checked that the run's page numbers do not overflow.
            let last = PageId::new(first.file, first.page + (count - 1));
            let mut held = 0u64;
            let follow_on = self.pages.range(first..=last).all(|(_, at)| {
                let next =
                    at.stripe == start.stripe && at.offset.checked_sub(start.offset) == Some(held * PAGE_SIZE as u64);
                held += 1;
                next
            });
            follow_on && held == u64::from(count)
        });
        match start {
            Some(start) if in_one_piece => {
                let stripe = &self.stripes[start.stripe];
                read_exact(stripe.bytes.as_ref(), &stripe.path, start.offset, run, "pages")
            }
            _ => {
                for (page, bytes) in (first.page..).zip(run.chunks_exact_mut(PAGE_SIZE)) {
                    self.read_raw(PageId::new(first.file, page), bytes)?;
                }
                Ok(())
            }
        }
    }

    fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// Where the data stream and the allocation maps disagreed, and how it was resolved (see
    /// [`extents`]); empty for a backup whose stream follows its maps exactly.
    fn notes(&self) -> &[String] {
        &self.notes
    }

    fn parts_not_given(&self) -> &[String] {
        &self.stripes_not_given
    }

    fn origin(&self) -> Option<&(dyn Any + Send + Sync)> {
        Some(&self.origin)
    }
}

/// Where the pages of a source read from backups come from, kept in the source
/// ([`PageSource::origin`]) for the layers above: the backup set whose pages they are and, for a
/// restore chain, the plan it was read by.
#[derive(Debug, Clone)]
pub struct BackupOrigin {
    /// The backup set whose pages are served (the full backup when a differential is laid over
    /// it).
    pub set: BackupSet,
    /// The restore plan, for backups read as a restore chain ([`crate::log::redo::restore`]).
    pub plan: Option<RestorePlan>,
    /// Where each page of a full backup set lies (none for a differential laid over its full).
    pub placement: Option<Arc<PagePlacement>>,
}

/// The backup set and restore plan of any page source: `None` for sources not read from backups.
pub trait FromBackup {
    /// The backup set whose pages these are, for a source read from a backup.
    fn backup_set(&self) -> Option<&BackupSet>;
    /// The restore plan the source was read by, for backups read as a restore chain
    /// ([`crate::log::redo::restore`]): which sets were read, which skipped and why.
    fn restore_plan(&self) -> Option<&RestorePlan>;
    /// Where the pages of a full backup set lie in its stripes ([`PagePlacement`]).
    fn page_placement(&self) -> Option<&Arc<PagePlacement>>;
}

impl<S: PageSource + ?Sized> FromBackup for S {
    fn backup_set(&self) -> Option<&BackupSet> {
        Some(&self.origin()?.downcast_ref::<BackupOrigin>()?.set)
    }

    fn restore_plan(&self) -> Option<&RestorePlan> {
        self.origin()?.downcast_ref::<BackupOrigin>()?.plan.as_ref()
    }

    fn page_placement(&self) -> Option<&Arc<PagePlacement>> {
        self.origin()?.downcast_ref::<BackupOrigin>()?.placement.as_ref()
    }
}

/// Where each page of a full backup set lies: which stripe, at which byte of its (decompressed)
/// MTF stream. Finding it is the costly part of opening a backup ([`extents`]: the stream's
/// extent lists, then a page-header vote on every extent, which decompresses every piece of a
/// compressed backup); a process that is given it ([`remember_placement`]: a scan split carries
/// it to its worker) opens the same backup set without that pass. Runs of pages that lie one
/// after another in one stripe are one entry, so a placement is small (a few runs per file
/// where the stream follows the allocation maps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagePlacement {
    /// The backup set's GUID and position: a placement applies only to that set.
    pub backup_set_guid: String,
    /// The set's position in its media.
    pub position: u16,
    /// Runs: stripe, byte offset of the first page in the stripe's stream, file id, first
    /// page, page count.
    pub runs: Vec<(u16, u64, u16, u32, u32)>,
}

/// Placements a process was given; the last few are kept.
static KNOWN_PLACEMENTS: Mutex<Vec<Arc<PagePlacement>>> = Mutex::new(Vec::new());
const PLACEMENTS_KEPT: usize = 4;

/// Makes `placement` known to this process: an open of its backup set after this uses it
/// instead of placing the pages again (a placement that does not fit the backup is ignored).
pub fn remember_placement(placement: PagePlacement) {
    let mut known = KNOWN_PLACEMENTS.lock().unwrap_or_else(PoisonError::into_inner);
    if known.iter().any(|k| **k == placement) {
        return;
    }
    known.push(Arc::new(placement));
    if known.len() > PLACEMENTS_KEPT {
        known.remove(0);
    }
}

fn known_placement(backup_set_guid: &str, position: u16) -> Option<Arc<PagePlacement>> {
    let known = KNOWN_PLACEMENTS.lock().unwrap_or_else(PoisonError::into_inner);
    known.iter().rev().find(|k| k.position == position && k.backup_set_guid == backup_set_guid).cloned()
}

impl PagePlacement {
    fn of(backup_set_guid: &str, position: u16, pages: &BTreeMap<PageId, Location>) -> Self {
        let mut runs: Vec<(u16, u64, u16, u32, u32)> = Vec::new();
        for (id, at) in pages {
            let stripe = u16::try_from(at.stripe).unwrap_or(u16::MAX);
            match runs.last_mut() {
                Some((s, offset, file, first, count))
                    if *s == stripe
                        && *file == id.file
                        && first.checked_add(*count) == Some(id.page)
                        && offset.checked_add(u64::from(*count) * PAGE_SIZE as u64) == Some(at.offset) =>
                {
                    *count += 1
                }
                _ => runs.push((stripe, at.offset, id.file, id.page, 1)),
            }
        }
        PagePlacement { backup_set_guid: backup_set_guid.to_string(), position, runs }
    }

    /// The pages and their count, where every run lies inside its stripe and its data file
    /// (`data_files`: id and size in pages) and no file gets more pages than it has; `None`
    /// otherwise (it came from elsewhere: untrusted).
    fn pages(&self, stripes: &[Arc<Stripe>], data_files: &[(u16, u32)]) -> Option<(BTreeMap<PageId, Location>, usize)> {
        let mut left: BTreeMap<u16, u64> = data_files.iter().map(|&(id, size)| (id, u64::from(size))).collect();
        let mut pages = BTreeMap::new();
        for &(stripe, offset, file, first, count) in &self.runs {
            let bytes = stripes.get(usize::from(stripe))?.bytes.len();
            let size = data_files.iter().find(|(id, _)| *id == file)?.1;
            let budget = left.get_mut(&file)?;
            *budget = budget.checked_sub(u64::from(count))?;
            (first.checked_add(count)? <= size).then_some(())?;
            (offset.checked_add(u64::from(count) * PAGE_SIZE as u64)? <= bytes).then_some(())?;
            for k in 0..count {
                let at = Location { stripe: usize::from(stripe), offset: offset + u64::from(k) * PAGE_SIZE as u64 };
                pages.insert(PageId::new(file, first + k), at);
            }
        }
        let copies = pages.len();
        (copies > 0).then_some((pages, copies))
    }
}

#[cfg(test)]
mod tests;
