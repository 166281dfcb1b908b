//! mdfkit: read Microsoft SQL Server data files (`.mdf`, `.ndf`) without SQL Server.
#![forbid(unsafe_code)]

pub mod anatomy;
pub mod backup;
pub mod bytes;
pub mod catalog;
pub mod check;
pub mod clrtypes;
pub mod collation;
pub mod columnar;
pub mod compressed;
pub mod database;
pub mod decode;
pub mod error;
pub mod export;
pub mod info;
pub mod io;
pub mod lob;
pub mod location;
pub mod page;
mod parallel;
pub mod plain_pages;
pub mod record;
pub mod recovery;
pub mod rows;
pub mod scan;
pub mod sniff;
pub mod source;
pub mod spatial;
pub mod table_scan;
pub mod types;
pub mod value;
pub mod xmlbin;
pub mod xpress;

pub use database::{Database, ScanOptions};
pub use error::{Error, ErrorKind, Result};
pub use info::DatabaseInfo;
pub use page::PageId;
