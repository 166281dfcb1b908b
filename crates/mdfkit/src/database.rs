//! [`Database`]: one SQL Server database opened from its files, the library's entry point.
//!
//! ```no_run
//! let db = mdfkit::Database::open(&["shop.mdf"])?;
//! println!("{} (version {})", db.name(), db.catalog().boot.version);
//! # Ok::<(), mdfkit::Error>(())
//! ```

use std::path::Path;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::page::file_header::FileHeader;
use crate::page::PageId;
use crate::source::{DataFiles, PageReader, PageSource};

/// An open database.
pub struct Database {
    reader: PageReader,
    file_headers: Vec<FileHeader>,
    catalog: Catalog,
}

impl Database {
    /// Opens a database from its data files (`.mdf` first or not: files are matched by the ids in
    /// their own headers).
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Self> {
        Self::from_source(Arc::new(DataFiles::open(paths)?))
    }

    /// Opens a database from any page source.
    pub fn from_source(source: Arc<dyn PageSource>) -> Result<Self> {
        let reader = PageReader::new(source);
        let mut file_headers = Vec::new();
        for file in reader.source().files() {
            let page = reader.read(PageId::new(file.file_id, 0))?;
            file_headers.push(FileHeader::parse(&page).map_err(|e| e.in_file(&file.location))?);
        }
        let catalog = Catalog::load(reader.clone())?;
        Ok(Database {
            reader,
            file_headers,
            catalog,
        })
    }

    pub fn name(&self) -> &str {
        &self.catalog.boot.name
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn reader(&self) -> &PageReader {
        &self.reader
    }

    /// The file header of each file given, in file id order.
    pub fn file_headers(&self) -> &[FileHeader] {
        &self.file_headers
    }
}
