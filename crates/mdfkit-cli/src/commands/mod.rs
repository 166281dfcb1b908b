//! The commands: each opens the database, asks the library, and renders the answer. One module per
//! concern; what they share (how a command fails, stdout, `FILE... NAME` arguments, how skipped
//! damage is spelled) lives here.

mod backups;
mod check;
mod compare;
mod demo;
mod export;
mod info;
mod log;
mod objects;
mod page;
mod pages;
mod rows;
mod search;
mod splits;
mod studio;
mod tables;

use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use mdfkit::scan::Skipped;
use mdfkit::Error;

pub(crate) use backups::date_value;
pub use check::check;
pub use compare::{compare, Listing as CompareListing};
pub use demo::demo;
pub use export::export;
pub use info::info;
pub use log::{log, LogArgs};
pub use objects::{report_fetches, rm, share};
pub use page::{page, PageFormat};
pub use pages::{decode, pages};
pub use rows::{cat, parse_filter, parse_page_ranges, CatForensics, PageRanges};
pub use search::search;
pub use splits::{read_split, splits, SplitPlan, SplitRead};
pub use studio::studio;
pub use tables::{schema, sys, tables};

/// Why a command failed: the library said no, stdout went away, or some of the work was done and
/// the rest was reported on stderr.
pub enum Failure {
    Library(Error),
    Output(io::Error),
    Partial,
    /// `check` found problems and listed them.
    ProblemsFound,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Library(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Output(e)
    }
}

pub type Outcome = Result<(), Failure>;

fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

/// Splits `FILE... [NAME]`: the last argument is a name unless it is an existing file or a URL.
fn split_files_and_name(args: &[String], name_required: bool) -> (Vec<PathBuf>, Option<String>) {
    let last_is_file = args.last().is_some_and(|a| Path::new(a).is_file() || mdfkit::location::is_openable_url(a));
    if args.len() > 1 && (name_required || !last_is_file) {
        let (files, name) = args.split_at(args.len() - 1);
        (files.iter().map(PathBuf::from).collect(), Some(name[0].clone()))
    } else {
        (args.iter().map(PathBuf::from).collect(), None)
    }
}

/// With `--include-ghosts`, the column that says whether a row is a ghost (deleted) record.
pub(super) const GHOST_COLUMN: &str = "__ghost";

/// `page 1:153 slot 4: reason`, the way a skipped page or record is reported.
fn describe_skip(skip: &Skipped) -> String {
    match (skip.page, skip.slot) {
        (Some(p), Some(s)) => format!("page {p} slot {s}: {}", skip.reason),
        (Some(p), None) => format!("page {p}: {}", skip.reason),
        _ => skip.reason.clone(),
    }
}
