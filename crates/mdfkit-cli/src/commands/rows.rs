//! `mdfkit cat`: a table's rows, with the forensic options (ghost records, a page filter, where
//! each row is stored) and salvage.

use std::io::{self, IsTerminal, Write};

use mdfkit::filter::Filter;
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::{Error, PageId};

use super::{describe_skip, split_files_and_name, stdout, Outcome, GHOST_COLUMN};
use crate::output::{write_rows, write_rows_without_header, Format};

/// Rows shown at most on a terminal without `--limit`, so a big table does not flood it.
const TERMINAL_ROWS: u64 = 1000;

/// Pages given to `cat --where-page`: inclusive ranges of one file's pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRanges(Vec<(u16, u32, u32)>);

impl PageRanges {
    fn contains(&self, page: PageId) -> bool {
        self.0.iter().any(|&(file, first, last)| page.file == file && (first..=last).contains(&page.page))
    }
}

/// Parses `FILE:PAGE` and `FILE:FIRST-LAST`, comma-separated (`1:153,1:200-260`).
pub fn parse_page_ranges(text: &str) -> std::result::Result<PageRanges, String> {
    let mut ranges = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("{part:?} is not FILE:PAGE or FILE:FIRST-LAST (e.g. 1:153 or 1:200-260)");
        let (file, pages) = part.split_once(':').ok_or_else(bad)?;
        let file: u16 = file.parse().map_err(|_| bad())?;
        let (first, last) = match pages.split_once('-') {
            Some((first, last)) => (first.parse().map_err(|_| bad())?, last.parse().map_err(|_| bad())?),
            None => {
                let page: u32 = pages.parse().map_err(|_| bad())?;
                (page, page)
            }
        };
        if first > last {
            return Err(format!("{part:?}: the first page comes after the last"));
        }
        ranges.push((file, first, last));
    }
    if ranges.is_empty() {
        return Err("no pages given".into());
    }
    Ok(PageRanges(ranges))
}

/// The forensic options of `cat`: deleted rows, a page filter, where each row is stored.
pub struct CatForensics {
    pub include_ghosts: bool,
    pub where_page: Option<PageRanges>,
    pub with_location: bool,
    /// `--where`: only rows passing it (the studio's filter).
    pub filter: Option<Filter>,
}

/// `--where "COL=VALUE"`: the studio's filter syntax ([`mdfkit::filter`]).
pub fn parse_filter(text: &str) -> std::result::Result<Filter, String> {
    Filter::parse(text).map_err(|e| e.message().to_string())
}

const PARTITION_COLUMN: &str = "__partition";
const PAGE_COLUMN: &str = "__page";
const SLOT_COLUMN: &str = "__slot";

pub fn cat(
    args: &[String],
    position: Option<u16>,
    limit: Option<u64>,
    columns: Option<&[String]>,
    format: Option<Format>,
    forensics: CatForensics,
    salvage: bool,
) -> Outcome {
    let CatForensics { include_ghosts, where_page, with_location, filter } = forensics;
    let (files, table) = split_files_and_name(args, true);
    let db =
        if salvage { crate::chain::open_for_salvage(&files, position)? } else { crate::chain::open(&files, position)? };
    let name = table.unwrap_or_default();
    let table = db
        .catalog()
        .find_table(&name)
        .ok_or_else(|| Error::not_found(format!("no table named {name}; `mdfkit tables` lists them")))?;
    let terminal = io::stdout().is_terminal();
    let format = format.unwrap_or(if terminal { Format::Table } else { Format::Csv });
    let limit = limit.or((terminal && format == Format::Table).then_some(TERMINAL_ROWS));
    let mut out = stdout();
    let mut header: Option<Vec<String>> = None;
    let mut buffered: Vec<Vec<Value>> = Vec::new();
    let mut count = 0u64;
    let mut values = Vec::new();
    let mut first_batch = true;
    let mut ghosts = 0;
    let mut skipped = 0;
    let (mut off_row, mut spelled) = (Vec::new(), String::new());
    for partition in &table.partitions {
        let decoder = db.row_decoder(&table, partition.partition_id, columns)?;
        // The filter's column is read whether or not --columns shows it.
        let filtered = match &filter {
            Some(f) => {
                let all = db.row_decoder(&table, partition.partition_id, None)?;
                let at = f.column_in(&table.qualified_name(), &all.column_names())?;
                Some((f, all, at))
            }
            None => None,
        };
        let mut names = decoder.column_names();
        if include_ghosts {
            names.push(GHOST_COLUMN.to_string());
        }
        if with_location {
            names.extend([PARTITION_COLUMN.to_string(), PAGE_COLUMN.to_string(), SLOT_COLUMN.to_string()]);
        }
        header.get_or_insert(names);
        let scan = db.scan(&table).include_ghosts(include_ghosts).salvage(salvage);
        let stats = scan.partition_records(partition, |record, location| {
            if limit.is_some_and(|l| count >= l) {
                return Ok(Flow::Stop);
            }
            if where_page.as_ref().is_some_and(|pages| !pages.contains(location.page)) {
                return Ok(Flow::Continue);
            }
            if let Some((f, all, at)) = &filtered {
                let value = all.decode_one(record, &all.columns()[*at], &mut off_row)?;
                if !f.matches_value(&value, &mut spelled) {
                    return Ok(Flow::Continue);
                }
            }
            decoder.decode(record, &mut values)?;
            if include_ghosts {
                values.push(Value::bit(location.ghost));
            }
            if with_location {
                values.extend([
                    Value::Int(i64::from(partition.partition_number)),
                    Value::text(location.page.to_string()),
                    Value::Int(i64::from(location.slot)),
                ]);
            }
            count += 1;
            buffered.push(values.clone());
            if matches!(format, Format::Csv | Format::Jsonl) && buffered.len() >= 1024 {
                let h = header.as_deref().unwrap_or_default();
                write_batch(&mut out, format, h, &buffered, first_batch)
                    .map_err(|e| Error::new(mdfkit::ErrorKind::Io, e.to_string()))?;
                first_batch = false;
                buffered.clear();
            }
            Ok(Flow::Continue)
        })?;
        ghosts += stats.ghost_records;
        for skip in &stats.skipped {
            eprintln!("mdfkit: skipped {}", describe_skip(skip));
        }
        skipped += stats.skipped.len();
        if limit.is_some_and(|l| count >= l) {
            break;
        }
    }
    let h = header.unwrap_or_default();
    write_batch(&mut out, format, &h, &buffered, first_batch)?;
    out.flush()?;
    if skipped > 0 {
        eprintln!("({skipped} damaged pages or records skipped)");
    }
    if terminal && ghosts > 0 && !include_ghosts {
        eprintln!("({ghosts} ghost (deleted) records skipped)");
    }
    Ok(())
}

/// Writes rows; streaming formats write their header only with the first batch.
fn write_batch(
    out: &mut impl Write,
    format: Format,
    columns: &[String],
    rows: &[Vec<Value>],
    first: bool,
) -> io::Result<()> {
    match format {
        Format::Csv if !first => write_rows_without_header(out, rows),
        _ => write_rows(out, format, columns, rows),
    }
}
