//! One error type for the whole library.
//!
//! Every error renders as a single line that names where the problem is (file, page, slot,
//! object) and what was expected, e.g.
//! `shop.mdf: page 1:153 slot 4: record is 12 bytes, its header needs at least 4`.
//! Front ends map [`ErrorKind`] to exit codes: input problems are 2, everything else 1.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::geometry::PageId;

/// What went wrong, coarsely: enough for a front end to choose an exit code or exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not a SQL Server data file (a log file, a backup, random bytes, ...).
    NotADatabase,
    /// The input is a data file, but a structure in it is damaged or inconsistent.
    Corrupt,
    /// The input is valid but uses a feature this version of mdfkit does not read.
    Unsupported,
    /// A file the database needs was not given (e.g. a secondary `.ndf`).
    MissingFile,
    /// The caller asked for something that does not exist (an unknown table or view).
    NotFound,
    /// Reading the input failed at the operating-system level.
    Io,
}

impl ErrorKind {
    /// True for problems with the input itself (exit code 2 in the CLI).
    pub fn is_bad_input(self) -> bool {
        matches!(self, ErrorKind::NotADatabase | ErrorKind::Corrupt | ErrorKind::Unsupported)
    }
}

/// An error with the context needed to find the problem in the file.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    file: Option<PathBuf>,
    page: Option<PageId>,
    slot: Option<u16>,
    object: Option<String>,
    source: Option<std::io::Error>,
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` saying `message`, with no location yet (added by `in_file`, `at_page`,
    /// ...).
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error { kind, message: message.into(), file: None, page: None, slot: None, object: None, source: None }
    }

    /// A damaged or inconsistent structure ([`ErrorKind::Corrupt`]).
    pub fn corrupt(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }

    /// Not a SQL Server data file ([`ErrorKind::NotADatabase`]).
    pub fn not_a_database(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NotADatabase, message)
    }

    /// A feature this version does not read, named in `message` ([`ErrorKind::Unsupported`]).
    pub fn unsupported(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// Something asked for that does not exist ([`ErrorKind::NotFound`]).
    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// A failed read or write of `path`: `what` was being done, `err` is kept as the source.
    pub fn io(path: &Path, what: &str, err: std::io::Error) -> Self {
        let mut e = Self::new(ErrorKind::Io, format!("{what}: {err}"));
        e.file = Some(path.to_path_buf());
        e.source = Some(err);
        e
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message alone, without the location the `Display` form adds.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The one-line rendering ([`std::fmt::Display`]), without a copy of the message when the
    /// error names no place: a caller keeping many errors' text (one a record of a damaged page)
    /// allocates nothing for a fixed message, and one string, sized once, for the others.
    pub fn into_text(self) -> Cow<'static, str> {
        if self.file.is_none() && self.object.is_none() && self.page.is_none() {
            return self.message;
        }
        // The places' text: the file's path, the object's name, `page 1:153 slot 4: ` (40 at most).
        let places = self.file.as_ref().map_or(0, |f| f.as_os_str().len() + 2)
            + self.object.as_ref().map_or(0, |o| o.len() + 2)
            + 40;
        let mut text = String::with_capacity(places + self.message.len());
        let _ = fmt::Write::write_fmt(&mut text, format_args!("{self}"));
        text.into()
    }

    /// The file the problem is in, when known.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The page the problem is on, when known.
    pub fn page(&self) -> Option<PageId> {
        self.page
    }

    /// The slot of the record the problem is in, when known.
    pub fn slot(&self) -> Option<u16> {
        self.slot
    }

    /// The table or catalog object being read, when known.
    pub fn object(&self) -> Option<&str> {
        self.object.as_deref()
    }

    /// Adds the file name unless a more precise one is already set.
    pub fn in_file(mut self, path: &Path) -> Self {
        self.file.get_or_insert_with(|| path.to_path_buf());
        self
    }

    /// Adds the page id unless one is already set.
    pub fn at_page(mut self, page: PageId) -> Self {
        self.page.get_or_insert(page);
        self
    }

    /// Adds the slot number unless one is already set.
    pub fn at_slot(mut self, slot: u16) -> Self {
        self.slot.get_or_insert(slot);
        self
    }

    /// Names the table or catalog object being read, unless one is already named.
    pub fn in_object(mut self, object: impl Into<String>) -> Self {
        if self.object.is_none() {
            self.object = Some(object.into());
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        match (self.page, self.slot) {
            (Some(p), Some(s)) => write!(f, "page {p} slot {s}: ")?,
            (Some(p), None) => write!(f, "page {p}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// Attaches context to errors coming out of a fallible call.
pub trait ResultExt<T> {
    /// Adds the page id to an error, unless one is already set ([`Error::at_page`]).
    fn at_page(self, page: PageId) -> Result<T>;
    /// Names the object being read in an error, unless one is already named ([`Error::in_object`]).
    fn in_object(self, object: impl FnOnce() -> String) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn at_page(self, page: PageId) -> Result<T> {
        self.map_err(|e| e.at_page(page))
    }

    fn in_object(self, object: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| e.in_object(object()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_piece_of_context_on_one_line() {
        let e = Error::corrupt("record is 2 bytes, its header needs 4")
            .at_slot(4)
            .at_page(PageId::new(1, 153))
            .in_object("dbo.Orders")
            .in_file(Path::new("shop.mdf"));
        assert_eq!(e.to_string(), "shop.mdf: dbo.Orders: page 1:153 slot 4: record is 2 bytes, its header needs 4");
        let bare = Error::corrupt("record is 2 bytes, its header needs 4").at_slot(4);
        assert!(matches!(bare.into_text(), Cow::Borrowed("record is 2 bytes, its header needs 4")));
        assert!(e.kind().is_bad_input());
        assert_eq!(e.into_text(), "shop.mdf: dbo.Orders: page 1:153 slot 4: record is 2 bytes, its header needs 4");
    }

    #[test]
    fn keeps_the_innermost_context() {
        let e = Error::corrupt("x").at_page(PageId::new(1, 2)).at_page(PageId::new(1, 3));
        assert_eq!(e.page(), Some(PageId::new(1, 2)));
    }
}
