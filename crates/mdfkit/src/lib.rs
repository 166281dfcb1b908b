//! mdfkit: read Microsoft SQL Server data files (`.mdf`, `.ndf`) and backups (`.bak`) without
//! SQL Server: the database's description of itself, its tables and their rows, as SQL Server
//! values or Arrow batches, and exports to Parquet, CSV, JSON Lines or Arrow IPC.
//!
//! The examples below run as tests over a database written in memory by `mdfkit-forge` (an
//! independent writer of SQL Server's on-disk format, a dev-dependency) and check what mdfkit
//! reads against what the forge was given. With files on disk, [`Database::open`] takes their
//! paths (`.mdf` and `.ndf` in any order, or a `.bak`) instead.
//!
//! # Open a database, list its tables
//!
//! ```
//! use std::sync::Arc;
//! use mdfkit::source::DataFiles;
//! use mdfkit::Database;
//! use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//!
//! // What SQL Server 2019 (format version 904) would write for one clustered table of 250 orders.
//! let spec = Spec::new("shop", Version::V904, 7).table(
//!     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 250)
//!         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//!         .column(ColumnSpec::new("Status", ColType::VarChar(Some(10)), Gen::Choice(vec!["open".into(), "shipped".into()]), Nulls::Never)),
//! );
//! let files = mdfkit_forge::forge(&spec)?;
//! let in_memory = DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())?;
//! let db = Database::from_source(Arc::new(in_memory))?;
//!
//! let info = db.info()?; // what `mdfkit info` prints
//! assert_eq!((info.name.as_str(), info.version, info.user_tables), ("shop", 904, 1));
//!
//! let tables = db.catalog().tables(false); // user tables, as `mdfkit tables` lists them
//! assert_eq!(tables[0].qualified_name(), "dbo.Orders");
//! assert_eq!(tables[0].rows(), 250);
//! assert!(!tables[0].is_heap);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Read rows
//!
//! [`Database::scan`] starts the one scan builder ([`table_scan::TableScan`]): choose columns,
//! a limit, ghost records, salvage or threads, then take records, Arrow batches or text chunks.
//! Records in key order, decoded into [`value::Value`]s whose `Display` is SQL Server's spelling:
//!
//! ```
//! # use std::sync::Arc;
//! # use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//! # let spec = Spec::new("shop", Version::V904, 7).table(
//! #     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 250)
//! #         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//! #         .column(ColumnSpec::new("Status", ColType::VarChar(Some(10)), Gen::Choice(vec!["open".into(), "shipped".into()]), Nulls::Never)),
//! # );
//! # let files = mdfkit_forge::forge(&spec)?;
//! # let in_memory = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())?;
//! # let db = mdfkit::Database::from_source(Arc::new(in_memory))?;
//! use mdfkit::scan::Flow;
//! use mdfkit_forge::Val;
//!
//! let table = db.catalog().find_table("dbo.Orders").expect("the forged table");
//! let decoder = db.row_decoder(&table, table.partitions[0].partition_id, None)?;
//! let mut values = Vec::new();
//! let mut rows = Vec::new();
//! db.scan(&table).records(|record, _location| {
//!     decoder.decode(record, &mut values)?;
//!     rows.push((values[0].as_i64(), values[1].to_string()));
//!     Ok(Flow::Continue)
//! })?;
//!
//! // The same rows, in the same order, as the forge generated them.
//! let forged: Vec<_> = mdfkit_forge::live_rows(&spec, 0)
//!     .map(|row| match (&row[0], &row[1]) {
//!         (Some(Val::Int(id)), Some(Val::Text(status))) => (Some(*id), status.clone()),
//!         other => panic!("not what the spec says: {other:?}"),
//!     })
//!     .collect();
//! assert_eq!(rows.len(), 250);
//! assert_eq!(rows, forged);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Arrow batches (types as listed in [`columnar`]), here of one column and at most 100 rows:
//!
//! ```
//! # use std::sync::Arc;
//! # use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//! # let spec = Spec::new("shop", Version::V904, 7).table(
//! #     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 250)
//! #         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//! #         .column(ColumnSpec::new("Status", ColType::VarChar(Some(10)), Gen::Choice(vec!["open".into(), "shipped".into()]), Nulls::Never)),
//! # );
//! # let files = mdfkit_forge::forge(&spec)?;
//! # let in_memory = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())?;
//! # let db = mdfkit::Database::from_source(Arc::new(in_memory))?;
//! use arrow_array::{cast::AsArray, types::Int32Type};
//! use mdfkit::scan::Flow;
//!
//! let table = db.catalog().find_table("dbo.Orders").expect("the forged table");
//! let mut ids = Vec::new();
//! let stats = db.scan(&table).columns(Some(vec!["OrderID".into()])).limit(Some(100)).batches(|batch| {
//!     assert_eq!(batch.schema().field(0).name(), "OrderID");
//!     ids.extend(batch.column(0).as_primitive::<Int32Type>().values().iter().copied());
//!     Ok(Flow::Continue)
//! })?;
//! assert_eq!(ids, (1..=100).collect::<Vec<i32>>()); // Gen::Sequence { start: 1, step: 1 }
//! assert_eq!(stats.rows, 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Export
//!
//! [`export::export_tables`] writes tables into a destination (a [`export::LocalFolder`] here,
//! an object-store prefix with `mdfkit-cloud`), one `SCHEMA.TABLE.EXT` each; a table that fails
//! leaves nothing and does not stop the others.
//!
//! ```
//! # use std::sync::Arc;
//! # use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//! # let spec = Spec::new("shop", Version::V904, 7).table(
//! #     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 250)
//! #         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//! #         .column(ColumnSpec::new("Status", ColType::VarChar(Some(10)), Gen::Choice(vec!["open".into(), "shipped".into()]), Nulls::Never)),
//! # );
//! # let files = mdfkit_forge::forge(&spec)?;
//! # let in_memory = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())?;
//! # let db = mdfkit::Database::from_source(Arc::new(in_memory))?;
//! use mdfkit::export::{export_tables, ExportFormat, ExportOptions, LocalFolder};
//!
//! let out = std::env::temp_dir().join(format!("mdfkit-doc-export-{}", std::process::id()));
//! let tables = db.catalog().tables(false);
//! let options = ExportOptions { threads: 1, ..Default::default() };
//! let report = export_tables(&db, &tables, ExportFormat::Csv, &LocalFolder::create(&out)?, &options, |_event| {})?;
//! assert!(report.failed().is_empty());
//!
//! let csv = std::fs::read_to_string(out.join("dbo.Orders.csv"))?;
//! let mut lines = csv.lines();
//! assert_eq!(lines.next(), Some("OrderID,Status"));
//! assert!(lines.next().is_some_and(|first| first.starts_with("1,")));
//! assert_eq!(csv.lines().count(), 1 + 250);
//! std::fs::remove_dir_all(&out)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Read a backup
//!
//! A full backup is a page source too ([`backup`]): its backup sets are listed like
//! `RESTORE HEADERONLY`, and the database inside reads like one on disk, with no restore.
//!
//! ```
//! # use std::sync::Arc;
//! # use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//! # let spec = Spec::new("shop", Version::V904, 7).table(
//! #     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 250)
//! #         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//! #         .column(ColumnSpec::new("Status", ColType::VarChar(Some(10)), Gen::Choice(vec!["open".into(), "shipped".into()]), Nulls::Never)),
//! # );
//! # let files = mdfkit_forge::forge(&spec)?;
//! use mdfkit::backup::{BackupMedia, BackupType};
//!
//! // The bytes of `BACKUP DATABASE shop TO DISK = 'shop.bak'`, written by the forge.
//! let bak = mdfkit_forge::backup::full_backup(&files);
//! let media = BackupMedia::from_bytes("shop.bak", bak)?;
//! assert_eq!(media.sets().len(), 1);
//! assert_eq!(media.sets()[0].backup_type, BackupType::Full);
//!
//! let db = mdfkit::Database::from_source(Arc::new(media.into_pages(None)?))?;
//! assert_eq!(db.name(), "shop");
//! let table = db.catalog().find_table("dbo.Orders").expect("the forged table");
//! assert_eq!(db.scan(&table).records(|_, _| Ok(mdfkit::scan::Flow::Continue))?.rows, 250);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Where things are
//!
//! From the bottom: values ([`value`], [`collation`], [`types`], [`clrtypes`], [`spatial`],
//! [`xmlbin`]) and the [`error`] type → records and pages ([`record`], [`page`], [`PageId`]) →
//! bytes in and pages by address ([`io`], [`location`], [`sniff`], [`source`]) → backups and the
//! log ([`backup`] with [`xpress`], [`log`]) → the catalog and its page walks ([`catalog`],
//! [`scan`]) → column values ([`rows`], [`lob`], [`compressed`], [`decode`], [`columnar`]) → the
//! [`Database`] facade ([`database`]) → scans, info and exports ([`table_scan`] with
//! [`plain_pages`], [`cd_pages`] and [`split`], [`info`], [`export`]), with the forensic tools
//! beside them ([`check`], [`recovery`], [`anatomy`], [`log_changes`]). `docs/ARCHITECTURE.md`
//! draws these layers and says what each module knows.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod backup;
mod bytes;
pub mod catalog;
mod columns;
pub mod database;
pub mod error;
pub mod export;
mod forensics;
mod geometry;
pub mod info;
mod input;
pub mod log;
pub mod page;
pub mod record;
mod scans;
mod values;

// The folders `columns/`, `forensics/`, `input/`, `scans/` and `values/` are private: the modules
// users name in them are public at the root (`mdfkit::io`, `mdfkit::rows`, ...), one path each.
pub use backup::xpress;
pub use catalog::scan;
pub use columns::{columnar, compressed, decode, index_rows, lob, rows};
pub use forensics::{anatomy, check, compare, log_changes, recovery, search};
pub use input::{io, location, sniff, source};
pub use scans::{cd_pages, plain_pages, split, table_scan};
pub use values::{clrtypes, collation, filter, spatial, types, value, xmlbin};

// What a user of the facade needs, at the crate root.
pub use catalog::model::{ColumnInfo, TableInfo};
pub use columnar::TimestampUnit;
pub use database::{Database, ScanOptions};
pub use error::{Error, ErrorKind, Result};
pub use export::{export_tables, ExportFormat, ExportOptions, ExportReport};
pub use info::DatabaseInfo;
pub use page::PageId;
pub use rows::RowDecoder;
pub use scan::{Flow, RowLocation, ScanStats};
pub use scans::split::ScanSplit;
pub use scans::table_scan::TableScan;
pub use value::Value;
