//! Reading without the catalog: `mdfkit pages` (page headers) and `mdfkit decode` (records of an
//! allocation unit read with a declared layout).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use mdfkit::rows::RowDecoder;
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::{Database, Error};

use super::{describe_skip, stdout, Outcome, GHOST_COLUMN};
use crate::output::{write_rows, Format};

pub fn pages(
    files: &[PathBuf],
    position: Option<u16>,
    object_id: Option<i32>,
    allocation_unit: Option<i64>,
    page_type: Option<&str>,
    format: Format,
) -> Outcome {
    let source = crate::chain::open_source(files, position)?;
    let units: Option<Vec<i64>> = match object_id {
        Some(id) => {
            let db = Database::from_source(source.clone()).map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("--object-id needs the catalog, which cannot be read ({e}); use --allocation-unit with ids from the page headers"),
                )
            })?;
            let rowsets: Vec<i64> = db
                .catalog()
                .table("sysrowsets")
                .iter()
                .filter(|r| r.int("idmajor") == i64::from(id))
                .map(|r| r.int("rowsetid"))
                .collect();
            Some(
                db.catalog()
                    .base()
                    .allocation_units
                    .iter()
                    .filter(|u| rowsets.contains(&u.owner_id))
                    .map(|u| u.id)
                    .collect(),
            )
        }
        None => allocation_unit.map(|u| vec![u]),
    };
    let wanted_type = page_type.map(|t| t.replace('-', " ").to_ascii_lowercase());
    let list = mdfkit::recovery::list_pages(source.as_ref(), |p| {
        units.as_ref().is_none_or(|u| u.contains(&p.allocation_unit_id))
            && wanted_type.as_ref().is_none_or(|t| p.page_type.name().to_ascii_lowercase() == *t)
    });
    let columns: Vec<String> =
        ["page", "type", "level", "allocation_unit", "slots", "free_bytes", "prev", "next", "status"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let rows: Vec<Vec<Value>> = list
        .iter()
        .map(|p| {
            vec![
                Value::text(p.id.to_string()),
                Value::text(p.page_type.name()),
                Value::Int(p.level.into()),
                Value::Int(p.allocation_unit_id),
                Value::Int(p.slots.into()),
                Value::Int(p.free_bytes.into()),
                Value::text(p.prev.to_string()),
                Value::text(p.next.to_string()),
                Value::text(&p.status),
            ]
        })
        .collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}

/// Splits `a int, b decimal(10,2), c varchar(5)` into (name, type) pairs.
fn parse_declaration(text: &str) -> Result<Vec<(String, mdfkit::types::TypeInfo)>, Error> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
        .iter()
        .map(|item| {
            let item = item.trim();
            let (name, ty) = item
                .split_once(char::is_whitespace)
                .ok_or_else(|| Error::not_found(format!("column {item:?}: expected `name type`")))?;
            let ty = ty.trim();
            // `NULL` / `NOT NULL` after the type changes nothing here: every column reads NULLs.
            let lower = ty.to_ascii_lowercase();
            let ty = lower.strip_suffix("not null").or_else(|| lower.strip_suffix("null")).unwrap_or(&lower).trim();
            let info = mdfkit::types::TypeInfo::parse(ty).ok_or_else(|| {
                Error::not_found(format!("column {name}: unknown type {ty:?} (e.g. int, varchar(50), decimal(10,2))"))
            })?;
            Ok((name.trim_matches(|c| c == '[' || c == ']').to_string(), info))
        })
        .collect()
}

pub fn decode(
    files: &[PathBuf],
    position: Option<u16>,
    allocation_unit: i64,
    declaration: &str,
    include_ghosts: bool,
    format: Option<Format>,
) -> Outcome {
    let declared = parse_declaration(declaration)?;
    let source = crate::chain::open_source(files, position)?;
    let reader = mdfkit::source::PageReader::new(source.clone());
    let pages: Vec<mdfkit::PageId> = mdfkit::recovery::list_pages(source.as_ref(), |p| {
        p.allocation_unit_id == allocation_unit && p.page_type == mdfkit::page::PageType::Data && p.level == 0
    })
    .into_iter()
    .map(|p| p.id)
    .collect();
    if pages.is_empty() {
        return Err(Error::not_found(format!(
            "no data page names allocation unit {allocation_unit}; `mdfkit pages --type data` lists the ones there are"
        ))
        .into());
    }
    let decoder = RowDecoder::from_declaration(reader.clone(), "declared table", &declared)?;
    let mut columns: Vec<String> = declared.iter().map(|(n, _)| n.clone()).collect();
    if include_ghosts {
        columns.push(GHOST_COLUMN.to_string());
    }
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let stats = mdfkit::recovery::decode_pages(&reader, &decoder, &pages, include_ghosts, |values, location| {
        let mut row = values.to_vec();
        if include_ghosts {
            row.push(Value::bit(location.ghost));
        }
        rows.push(row);
        Ok(Flow::Continue)
    })?;
    let format = format.unwrap_or(if io::stdout().is_terminal() { Format::Table } else { Format::Csv });
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    for skip in &stats.skipped {
        eprintln!("mdfkit: skipped {}", describe_skip(skip));
    }
    eprintln!("{} rows from {} pages, {} skipped", rows.len(), pages.len(), stats.skipped.len());
    Ok(())
}
