//! `mdfkit compare FILE... --with OTHER...`: two states of one database ([`mdfkit::compare`]),
//! the studio's `/compare` views from the command line.

use std::io::Write;
use std::path::PathBuf;

use mdfkit::compare::{compare_pages, compare_rows, compare_tables, After, Change};
use mdfkit::log::redo::StopPoint;
use mdfkit::page::PageId;
use mdfkit::value::Value;

use super::{stdout, Outcome};
use crate::output::{write_rows, Format};

/// The columns of the per-table listing.
const COUNT_COLUMNS: [&str; 5] = ["table", "rows", "rows_other", "pages", "pages_other"];
/// The columns of the page listing.
const PAGE_COLUMNS: [&str; 7] =
    ["page", "type", "owner", "type_other", "owner_other", "first_differing_byte", "bytes_differing"];

/// What `mdfkit compare` lists.
pub enum Listing<'a> {
    /// Every table with its counts on both sides.
    Tables,
    /// One table's rows that differ, after a cursor.
    Rows { table: &'a str, after: Option<After> },
    /// The pages whose bytes differ, after a page.
    Pages { after: Option<PageId> },
}

pub fn compare(
    files: &[PathBuf],
    position: Option<u16>,
    other: &[PathBuf],
    listing: Listing,
    limit: usize,
    format: Format,
) -> Outcome {
    let db = crate::chain::open(files, position)?;
    let other_db = mdfkit::Database::open_until(other, None, StopPoint::End)?;
    crate::chain::announce_plan(other_db.reader().source());
    let count = |n: Option<i64>| n.map_or(Value::Null, Value::Int);
    let (columns, rows): (Vec<String>, Vec<Vec<Value>>) = match listing {
        Listing::Tables => {
            let counts = compare_tables(&db, &other_db, false)?;
            let rows = counts
                .iter()
                .map(|c| {
                    vec![Value::text(&c.name), count(c.rows[0]), count(c.rows[1]), count(c.pages[0]), count(c.pages[1])]
                })
                .collect();
            (COUNT_COLUMNS.iter().map(|c| c.to_string()).collect(), rows)
        }
        Listing::Pages { after } => {
            let c = compare_pages(&db, &other_db, after, limit);
            eprintln!("{} pages differ of {} compared", c.pages.len(), c.compared);
            if let Some(next) = c.next {
                eprintln!("(more pages may differ: --after-page {next} lists the next ones)");
            }
            let rows = c
                .pages
                .iter()
                .map(|p| {
                    let mut line = vec![Value::text(p.id.to_string())];
                    for (side, db) in [&db, &other_db].into_iter().enumerate() {
                        let (page_type, owner) = p.describe(db, side);
                        line.extend([Value::text(page_type), owner.map_or(Value::Null, Value::text)]);
                    }
                    let (first, count) = p
                        .bytes
                        .map_or((Value::Null, Value::Null), |(f, n)| (Value::Int(f as i64), Value::Int(n as i64)));
                    line.extend([first, count]);
                    line
                })
                .collect();
            (PAGE_COLUMNS.iter().map(|c| c.to_string()).collect(), rows)
        }
        Listing::Rows { table: name, after } => {
            let c = compare_rows(&db, &other_db, name, after, limit)?;
            eprintln!(
                "{name}: {} inserted, {} deleted, {} changed, {} unchanged (matched by {})",
                c.inserted,
                c.deleted,
                c.changed,
                c.unchanged,
                if c.key == c.columns { "whole rows: a heap has no key".to_string() } else { c.key.join(", ") }
            );
            if let Some(next) = c.next {
                eprintln!("(more rows differ: --after-row {next} lists the next ones)");
            }
            let mut columns = vec!["__change".to_string(), "__side".to_string(), "__position".to_string()];
            columns.extend(c.columns.iter().cloned());
            let mut rows = Vec::new();
            for row in &c.rows {
                let change = match row.change {
                    Change::Inserted => "inserted",
                    Change::Deleted => "deleted",
                    Change::Changed => "changed",
                };
                for (side, values) in [("this", &row.before), ("other", &row.after)] {
                    if let Some((at, values)) = values {
                        let mut line = vec![Value::text(change), Value::text(side), Value::text(at.to_string())];
                        line.extend(values.iter().cloned());
                        rows.push(line);
                    }
                }
            }
            (columns, rows)
        }
    };
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}
