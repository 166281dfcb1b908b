//! The rows views: a table's rows 100 at a time by a keyset cursor on their physical address
//! (never OFFSET), filtered by one condition as a bounded scan, and one row with every value whole.
//!
//! | path                                 | what                                                  |
//! |--------------------------------------|-------------------------------------------------------|
//! | `/rows/dbo.T`                        | the first 100 rows                                    |
//! | `/rows/dbo.T?after=1:2:3`            | the 100 rows a scan visits after position 1:2:3       |
//! | `/rows/dbo.T?before=end`             | the last 100 rows (read backwards from the end)       |
//! | `/rows/dbo.T?before=1:2:3`           | the 100 rows before position 1:2:3                    |
//! | `/rows/dbo.T?where=Qty>5&after=…`    | rows matching, up to 100 or a time budget, resumable  |
//! | `/row/dbo.T/1:2:3`                   | the row at 1:2:3, every value whole                   |
//! | `/value/dbo.T/1:2:3/Photo`           | one value's bytes (binary) or text, as a download     |
//!
//! Each view's `.json` twin is the same path with `.json` after the table name (or position).

use std::fmt::Write;
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use mdfkit::catalog::model::TableInfo;
use mdfkit::filter::Filter;
use mdfkit::rows::RowDecoder;
use mdfkit::scan::{Direction, Flow, RowLocation, ScanPosition};
use mdfkit::table_scan::TableDecoders;
use mdfkit::types::SqlType;
use mdfkit::value::Value as SqlValue;
use mdfkit::{Error, ErrorKind};
use serde_json::json;

use crate::html::{a, esc, url};
use crate::json::json_object;
use crate::views::{answer, find_table, twin, Failure, Shared, View};
use crate::Studio;

/// Rows a rows view shows at a time, and matches a filtered view stops at.
pub const ROWS_PER_PAGE: u64 = 100;

/// How long a filtered view scans before it stops and offers to continue from there.
pub const FILTER_BUDGET: Duration = Duration::from_secs(2);

/// Grid cells longer than this many characters are cut, the row page showing them whole.
pub const CELL_CHARS: usize = 200;

/// Where a rows view starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// From the first row.
    First,
    /// After this position, forwards.
    After(ScanPosition),
    /// Before this position (`None`: the end), shown in scan order.
    Before(Option<ScanPosition>),
}

/// Why a filtered scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    End,
    Matches,
    Budget,
}

/// The query of a rows view.
#[derive(Clone)]
struct RowsQuery {
    start: Start,
    ghosts: bool,
    filter: Option<Filter>,
}

impl RowsQuery {
    fn parse(q: &std::collections::HashMap<String, String>) -> mdfkit::Result<Self> {
        let after = q.get("after").map(|a| a.parse::<ScanPosition>()).transpose()?;
        let before = match q.get("before").map(String::as_str) {
            None => None,
            Some("end") => Some(None),
            Some(p) => Some(Some(p.parse::<ScanPosition>()?)),
        };
        let start = match (after, before) {
            (Some(_), Some(_)) => {
                return Err(Error::new(ErrorKind::Unsupported, "give after= or before=, not both"));
            }
            (Some(a), None) => Start::After(a),
            (None, Some(b)) => Start::Before(b),
            (None, None) => Start::First,
        };
        let filter = q.get("where").filter(|w| !w.trim().is_empty()).map(|w| Filter::parse(w)).transpose()?;
        if filter.is_some() && matches!(start, Start::Before(_)) {
            return Err(Error::new(ErrorKind::Unsupported, "a filter reads forwards only: use after=, not before="));
        }
        Ok(RowsQuery { start, ghosts: q.get("ghosts").is_some_and(|g| g == "1"), filter })
    }

    /// The query string of this view's links: `ghosts` and `where` kept, the cursor `cursor`.
    fn link(&self, base: &str, cursor: Option<String>) -> String {
        let mut parts: Vec<String> = cursor.into_iter().collect();
        if self.ghosts {
            parts.push("ghosts=1".into());
        }
        if let Some(f) = &self.filter {
            parts.push(format!("where={}", url(&f.to_string())));
        }
        if parts.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", parts.join("&"))
        }
    }
}

/// `/rows/{name}`: see the module documentation.
pub async fn rows(
    State(s): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Failure> {
    let (name, json_only) = twin(&name);
    let query = RowsQuery::parse(&q)?;
    let cursor = match query.start {
        Start::First => None,
        Start::After(p) => Some(format!("after={p}")),
        Start::Before(p) => Some(format!("before={}", p.map_or("end".to_string(), |p| p.to_string()))),
    };
    let link = query.link(&format!("/rows/{}.json", url(&name)), cursor);
    answer(s, json_only, link, move |s| rows_view(s, &name, &query)).await
}

/// The decoder found, or an error naming the table that has no rowset.
fn no_rowset<'d>(t: &TableInfo, decoder: Option<&'d RowDecoder>) -> mdfkit::Result<&'d RowDecoder> {
    decoder.ok_or_else(|| Error::not_found(format!("{}: no rowset", t.qualified_name())))
}

/// A page of rows read: each row's values and address, the position of each, and where a
/// filtered scan stopped.
struct Read {
    rows: Vec<(Vec<SqlValue>, RowLocation, ScanPosition)>,
    last_examined: Option<ScanPosition>,
    examined: u64,
    stop: Stop,
}

fn read_rows(s: &Studio, t: &TableInfo, d: &TableDecoders, q: &RowsQuery) -> mdfkit::Result<Read> {
    let filter = match &q.filter {
        Some(f) => Some((f, f.column_in(&t.qualified_name(), &d.columns())?)),
        None => None,
    };
    let (from, direction) = match q.start {
        Start::First => (None, Direction::Forward),
        Start::After(p) => (Some(p), Direction::Forward),
        Start::Before(p) => (p, Direction::Backward),
    };
    let mut current: Option<(mdfkit::page::PageId, usize)> = None;
    let mut read = Read { rows: Vec::new(), last_examined: None, examined: 0, stop: Stop::End };
    let (mut values, mut off_row, mut spelled) = (Vec::new(), Vec::new(), String::new());
    let started = Instant::now();
    let scan = s.db.scan(t).include_ghosts(q.ghosts);
    // Unfiltered: the limit ends the scan; filtered: matches and the time budget do.
    let scan = if filter.is_some() { scan } else { scan.limit(Some(ROWS_PER_PAGE)) };
    scan.records_from(from, direction, |record, location, position| {
        if current.is_none_or(|(p, _)| p != location.page) {
            current = Some((location.page, d.index_for_page(&s.db, location.page)?));
        }
        let decoder = no_rowset(t, d.get(current.map_or(0, |c| c.1)))?;
        read.examined += 1;
        read.last_examined = Some(position);
        if let Some((f, at)) = filter {
            let value = decoder.decode_one(record, &decoder.columns()[at], &mut off_row)?;
            if f.matches_value(&value, &mut spelled) {
                decoder.decode(record, &mut values)?;
                read.rows.push((values.clone(), location, position));
                if read.rows.len() as u64 == ROWS_PER_PAGE {
                    read.stop = Stop::Matches;
                    return Ok(Flow::Stop);
                }
            }
            if started.elapsed() > FILTER_BUDGET {
                read.stop = Stop::Budget;
                return Ok(Flow::Stop);
            }
        } else {
            decoder.decode(record, &mut values)?;
            read.rows.push((values.clone(), location, position));
        }
        Ok(Flow::Continue)
    })?;
    if filter.is_none() && read.rows.len() as u64 == ROWS_PER_PAGE {
        read.stop = Stop::Matches;
    }
    if direction == Direction::Backward {
        read.rows.reverse();
    }
    Ok(read)
}

/// Up to [`ROWS_PER_PAGE`] rows from the query's cursor, with the cursors to go on from.
fn rows_view(s: &Studio, name: &str, q: &RowsQuery) -> mdfkit::Result<View> {
    let t = find_table(s, name)?;
    let decoders = TableDecoders::of(&s.db, &t)?;
    let columns = decoders.columns();
    let read = read_rows(s, &t, &decoders, q)?;
    let first_shown = read.rows.first().map(|r| r.2);
    let last_shown = read.rows.last().map(|r| r.2);
    // Forwards, the next page starts after the last row examined (a filter may have read past the
    // last match); backwards, after the last row shown unless that was the table's last.
    let (next, previous) = match q.start {
        Start::Before(None) => (None, first_shown.filter(|_| read.stop == Stop::Matches)),
        Start::Before(Some(_)) => (last_shown, first_shown.filter(|_| read.stop == Stop::Matches)),
        Start::First | Start::After(_) => (read.last_examined.filter(|_| read.stop != Stop::End), None),
    };
    let base = format!("/rows/{}", url(&t.qualified_name()));
    let mut body = format!("<p>{} rows in the catalog. ", t.rows());
    body.push_str(&if q.ghosts {
        a(&RowsQuery { ghosts: false, ..q.clone() }.link(&base, None), "hide deleted rows")
    } else {
        a(&RowsQuery { ghosts: true, ..q.clone() }.link(&base, None), "show deleted (ghost) rows")
    });
    body.push_str("</p>");
    let _ = write!(
        body,
        "<form class=\"filter\" method=\"get\" action=\"{}\"><label>where <input name=\"where\" value=\"{}\" \
         placeholder=\"Column=value, Column&lt;value, Column&gt;value, Column contains text\" size=\"50\"></label>{}\
         <button>filter</button></form>",
        esc(&base),
        esc(&q.filter.as_ref().map(|f| f.to_string()).unwrap_or_default()),
        if q.ghosts { "<input type=\"hidden\" name=\"ghosts\" value=\"1\">" } else { "" }
    );
    if let Some(f) = &q.filter {
        let why = match read.stop {
            Stop::End => "reached the end of the table".to_string(),
            Stop::Matches => format!("stopped at {ROWS_PER_PAGE} matches"),
            Stop::Budget => format!("stopped after {} s", FILTER_BUDGET.as_secs()),
        };
        let _ = write!(
            body,
            "<p id=\"filter-status\">{} rows where {} among {} rows examined: {why}.</p>",
            read.rows.len(),
            esc(&f.to_string()),
            read.examined
        );
    }
    body.push_str("<p class=\"pager\">");
    body.push_str(&a(&q.link(&base, None), "first"));
    if let Some(p) = previous {
        body.push_str(&a(&q.link(&base, Some(format!("before={p}"))), "previous 100"));
    }
    if let Some(n) = next {
        let label = if q.filter.is_some() { "continue from here" } else { "next 100" };
        body.push_str(&a(&q.link(&base, Some(format!("after={n}"))), label));
    }
    if q.filter.is_none() {
        body.push_str(&a(&q.link(&base, Some("before=end".into())), "last"));
    }
    body.push_str("</p>");
    body.push_str(&grid(&t, &columns, &read, q.ghosts));
    let json = json!({
        "table": t.qualified_name(),
        "rows_in_catalog": t.rows(),
        "columns": columns,
        "rows": read.rows.iter().map(|(r, _, _)| json_object(&columns, r)).collect::<Vec<_>>(),
        "locations": read.rows.iter().map(|(_, l, _)| format!("{}:{}", l.page, l.slot)).collect::<Vec<_>>(),
        "positions": read.rows.iter().map(|(_, _, p)| p.to_string()).collect::<Vec<_>>(),
        "ghost": read.rows.iter().map(|(_, l, _)| l.ghost).collect::<Vec<_>>(),
        "where": q.filter.as_ref().map(|f| f.to_string()),
        "examined": read.examined,
        "stopped": match read.stop { Stop::End => "end", Stop::Matches => "rows", Stop::Budget => "time budget" },
        "next_after": next.map(|n| n.to_string()),
        "previous_before": previous.map(|p| p.to_string()),
    });
    let cli = s.cli("cat", &format!("{} --with-location", crate::shell_word(&t.qualified_name())));
    Ok(View { title: format!("{} rows", t.qualified_name()), json, body, cli })
}

/// The rows as an HTML table: `page:slot` linked to the page and record, each value escaped and
/// cut at [`CELL_CHARS`] with a link to the row page holding it whole.
fn grid(t: &TableInfo, columns: &[String], read: &Read, ghosts: bool) -> String {
    let mut table = String::from("<table class=\"rows\"><thead><tr><th>page:slot</th>");
    if ghosts {
        table.push_str("<th>deleted</th>");
    }
    for c in columns {
        let _ = write!(table, "<th>{}</th>", esc(c));
    }
    table.push_str("</tr></thead><tbody>");
    let row_base = format!("/row/{}/", url(&t.qualified_name()));
    let mut cell = String::new();
    for (row, location, position) in &read.rows {
        let at = format!("{}:{}", location.page, location.slot);
        let _ = write!(
            table,
            "<tr{}><td>{}:{}</td>",
            if location.ghost { " class=\"ghost\"" } else { "" },
            a(&format!("/page/{}", location.page), &location.page.to_string()),
            a(&format!("/record/{at}"), &location.slot.to_string())
        );
        if ghosts {
            let _ = write!(table, "<td>{}</td>", if location.ghost { "deleted" } else { "" });
        }
        for v in row {
            if v.is_null() {
                table.push_str("<td class=\"null\">NULL</td>");
                continue;
            }
            cell.clear();
            let _ = write!(cell, "{v}");
            match cell.char_indices().nth(CELL_CHARS) {
                Some((cut, _)) => {
                    let _ = write!(
                        table,
                        "<td class=\"cut\">{}<a href=\"{row_base}{position}\" title=\"the whole value\">…</a></td>",
                        esc(&cell[..cut])
                    );
                }
                None => {
                    let _ = write!(table, "<td>{}</td>", esc(&cell));
                }
            }
        }
        table.push_str("</tr>");
    }
    table.push_str("</tbody></table>");
    table
}

// ---- one row ----

/// Whether a column's values are large objects (stored off-row when long): shown with their
/// length and a download link.
fn is_large(decoder: &RowDecoder, column: usize) -> bool {
    let t = decoder.columns()[column].column.type_info;
    t.max_length == -1 || matches!(t.sql_type, SqlType::Text | SqlType::NText | SqlType::Image)
}

/// The row a scan visits at `at`, decoded (ghosts included: a deleted row's page is linkable too).
fn row_at(
    s: &Studio,
    t: &TableInfo,
    d: &TableDecoders,
    at: ScanPosition,
) -> mdfkit::Result<(Vec<SqlValue>, RowLocation, usize)> {
    let which = d.index_for_page(&s.db, at.page)?;
    let decoder = no_rowset(t, d.get(which))?;
    let mut got = None;
    let mut values = Vec::new();
    let found = s.db.scan(t).include_ghosts(true).record_at(at, |record, location| {
        decoder.decode(record, &mut values)?;
        got = Some(location);
        Ok(())
    })?;
    match got {
        Some(location) if found => Ok((values, location, which)),
        _ => Err(Error::not_found(format!(
            "{}: no row at {at} (an empty slot, or a forwarded record: open its forwarding stub)",
            t.qualified_name()
        ))),
    }
}

/// `/row/{name}/{position}`: one row, every value whole.
pub async fn row(State(s): State<Shared>, Path((name, at)): Path<(String, String)>) -> Result<Response, Failure> {
    let (at, json_only) = twin(&at);
    let at: ScanPosition = at.parse()?;
    let link = format!("/row/{}/{at}.json", url(&name));
    answer(s, json_only, link, move |s| row_view(s, &name, at)).await
}

fn row_view(s: &Studio, name: &str, at: ScanPosition) -> mdfkit::Result<View> {
    let t = find_table(s, name)?;
    let d = TableDecoders::of(&s.db, &t)?;
    let (values, location, which) = row_at(s, &t, &d, at)?;
    let decoder = no_rowset(&t, d.get(which))?;
    let columns = decoder.column_names();
    let mut body = format!(
        "<p>{} row at {}{} · {}</p><table class=\"row\"><thead><tr><th>column</th><th>type</th><th>value</th></tr></thead><tbody>",
        a(&format!("/rows/{}", url(&t.qualified_name())), &t.qualified_name()),
        a(&format!("/record/{}:{}", location.page, location.slot), &format!("{}:{}", location.page, location.slot)),
        if location.ghost { " <span class=\"badge warn\">deleted (ghost)</span>" } else { "" },
        a(&format!("/page/{}", location.page), &format!("page {}", location.page)),
    );
    let mut lengths = Vec::new();
    for (i, (name, v)) in columns.iter().zip(&values).enumerate() {
        let plan = &decoder.columns()[i];
        let length = stored_len(v);
        lengths.push(length);
        let value = match v {
            SqlValue::Null => "<span class=\"null\">NULL</span>".to_string(),
            v if is_large(decoder, i) => format!(
                "<small>{} bytes · {}</small><pre class=\"value\">{}</pre>",
                length.unwrap_or(0),
                a(&format!("/value/{}/{at}/{}", url(&t.qualified_name()), url(name)), "download"),
                esc(&v.to_string())
            ),
            v => esc(&v.to_string()),
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{value}</td></tr>",
            esc(name),
            esc(&plan.column.type_info.spelling())
        );
    }
    body.push_str("</tbody></table>");
    let json = json!({
        "table": t.qualified_name(),
        "position": at.to_string(),
        "location": format!("{}:{}", location.page, location.slot),
        "ghost": location.ghost,
        "row": json_object(&columns, &values),
        "lengths": columns.iter().zip(&lengths).map(|(c, l)| (c.clone(), json!(l))).collect::<serde_json::Map<_, _>>(),
    });
    let cli = s.cli("cat", &format!("{} --with-location", crate::shell_word(&t.qualified_name())));
    Ok(View { title: format!("{} row {at}", t.qualified_name()), json, body, cli })
}

/// The bytes a value's download holds: a text's UTF-8, a binary's bytes, else its spelling.
fn value_bytes(v: &SqlValue) -> Vec<u8> {
    match v {
        SqlValue::Text(t) => t.clone().into_bytes(),
        SqlValue::Binary(b) => b.clone(),
        other => other.to_string().into_bytes(),
    }
}

/// The length of a value's download (`None` for NULL).
fn stored_len(v: &SqlValue) -> Option<usize> {
    match v {
        SqlValue::Null => None,
        SqlValue::Text(t) => Some(t.len()),
        SqlValue::Binary(b) => Some(b.len()),
        other => Some(other.to_string().len()),
    }
}

/// `/value/{name}/{position}/{column}`: one value as a download (binary as bytes, text as UTF-8).
pub async fn value(
    State(s): State<Shared>,
    Path((name, at, column)): Path<(String, String, String)>,
) -> Result<Response, Failure> {
    let at: ScanPosition = at.parse()?;
    let studio = s.clone();
    let (bytes, is_text, file) = tokio::task::spawn_blocking(move || -> mdfkit::Result<_> {
        let t = find_table(&studio, &name)?;
        let d = TableDecoders::of(&studio.db, &t)?;
        let (values, _, which) = row_at(&studio, &t, &d, at)?;
        let columns = no_rowset(&t, d.get(which))?.column_names();
        let i = columns.iter().position(|c| c.eq_ignore_ascii_case(&column)).ok_or_else(|| {
            Error::not_found(format!("{}: no column {column} (columns: {})", t.qualified_name(), columns.join(", ")))
        })?;
        let v = &values[i];
        if v.is_null() {
            return Err(Error::not_found(format!("{}.{column} at {at} is NULL", t.qualified_name())));
        }
        let is_text = !matches!(v, SqlValue::Binary(_));
        let file = format!(
            "{}-{}-{}.{}",
            t.qualified_name(),
            columns[i],
            at.to_string().replace(':', "_"),
            if is_text { "txt" } else { "bin" }
        );
        Ok((value_bytes(v), is_text, file))
    })
    .await
    .map_err(|e| Failure::from(Error::new(ErrorKind::Io, format!("the download failed: {e}"))))??;
    let kind = if is_text { "text/plain; charset=utf-8" } else { "application/octet-stream" };
    // The name holds only the table's, column's and position's characters; quotes are dropped.
    let disposition = format!("attachment; filename=\"{}\"", file.replace(['"', '\\', '\r', '\n'], "_"));
    Ok(([(header::CONTENT_TYPE, kind.to_string()), (header::CONTENT_DISPOSITION, disposition)], bytes).into_response())
}
