//! Table scans above the page walks of `crate::scan`: the scan builder every caller goes through
//! ([`table_scan`]), Arrow batches a page at a time where the layout is plain ([`plain_pages`])
//! or ROW/PAGE compressed ([`cd_pages`]),
//! tasks of pages on several threads (`parallel`) and independent parts of a scan for other
//! processes ([`split`]).

pub mod cd_pages;
mod parallel;
pub mod plain_pages;
pub mod split;
pub mod table_scan;

pub(crate) use parallel::Backlog;
