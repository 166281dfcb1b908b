//! `--compare OTHER`: the database beside a second state of it (another backup or data file, or
//! the same chain restored to another point), from [`mdfkit::compare`].
//!
//! | path                   | what                                                             |
//! |------------------------|------------------------------------------------------------------|
//! | `/compare`             | every table with its rows and pages on both sides, differing first |
//! | `/compare/dbo.T`       | the table's rows inserted, deleted and changed (100 at a time)    |
//! | `/compare/dbo.T?after=other:1:2:3` | the next 100 after that row (`this:` among deleted rows) |
//! | `/compare/pages`       | the pages whose bytes differ (100 at a time, `?after=1:153`)      |
//!
//! Each has its `.json` twin (`/compare.json`, `/compare/dbo.T.json`, `/compare/pages.json`).

use std::fmt::Write;
use std::path::PathBuf;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use mdfkit::compare::{compare_pages, compare_rows, compare_tables, After, Change, RowChange};
use mdfkit::scan::ScanPosition;
use mdfkit::value::Value as SqlValue;
use mdfkit::{Database, Error};
use serde_json::json;

use crate::html::{self, a, esc, link, text, url, Cell};
use crate::json::json_object;
use crate::views::{answer, twin, Failure, Shared, View};
use crate::Studio;

/// Rows a row comparison lists at a time (its counts are complete).
pub const ROWS_LISTED: usize = 100;

/// The second side of a comparison.
pub struct Other {
    /// The database compared with.
    pub db: Database,
    /// Its files as given.
    pub files: Vec<PathBuf>,
}

fn other(s: &Studio) -> mdfkit::Result<&Other> {
    s.compare.as_ref().ok_or_else(|| Error::not_found("nothing to compare with: start the studio with --compare OTHER"))
}

fn count(n: Option<i64>) -> String {
    n.map_or("absent".to_string(), |n| n.to_string())
}

fn difference(a: Option<i64>, b: Option<i64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:+}", b - a),
        _ => String::new(),
    }
}

/// `/compare` and `/compare.json`.
pub async fn tables(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, false, "/compare.json".into(), tables_view).await
}

/// `/compare.json`.
pub async fn tables_json(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, true, String::new(), tables_view).await
}

fn tables_view(s: &Studio) -> mdfkit::Result<View> {
    let o = other(s)?;
    let mut counts = compare_tables(&s.db, &o.db, false)?;
    // Differing tables first, each group by name.
    counts.sort_by_key(|c| !c.differs());
    let rows: Vec<Vec<Cell>> = counts
        .iter()
        .map(|c| {
            vec![
                link(&format!("/compare/{}", url(&c.name)), &c.name),
                text(count(c.rows[0])),
                text(count(c.rows[1])),
                text(difference(c.rows[0], c.rows[1])),
                text(count(c.pages[0])),
                text(count(c.pages[1])),
                text(difference(c.pages[0], c.pages[1])),
            ]
        })
        .collect();
    let mut body = format!(
        "<p>This side: {}. Compared with: {}. Rows as each catalog records them, counted on the pages \
         for partitions a restore chain's log changed (the catalog keeps the full backup's counts there), pages \
         as each table's IAM chains map them; a table's link compares its rows (keys as SQL Server compares \
         them: trailing spaces, and case under a _CI collation, ignored). {}</p>",
        esc(&files(&s.files)),
        esc(&files(&o.files)),
        a("/compare/pages", "Pages whose bytes differ")
    );
    body.push_str(&html::table(
        &["table", "rows (catalog)", "rows (other)", "Δ rows", "pages", "pages (other)", "Δ pages"],
        &rows,
        "compare",
    ));
    let json = json!({
        "this": files(&s.files),
        "other": files(&o.files),
        "tables": counts.iter().map(|c| json!({
            "table": c.name, "rows": c.rows, "pages": c.pages, "differs": c.differs(),
        })).collect::<Vec<_>>(),
    });
    Ok(View { title: "Compare".into(), json, body, cli: s.cli("compare", &with_other(o)) })
}

/// `--with FILE` for each file of the other side, as `mdfkit compare` takes them.
fn with_other(o: &Other) -> String {
    o.files.iter().map(|f| format!("--with {}", crate::shell_word(&f.to_string_lossy()))).collect::<Vec<_>>().join(" ")
}

fn files(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" ")
}

/// `/compare/{name}` (and its `.json` twin), `?after=` a cursor.
pub async fn table(
    State(s): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Failure> {
    let (name, json_only) = twin(&name);
    let after: Option<After> = q.get("after").map(|a| a.parse()).transpose()?;
    let cursor = after.map_or(String::new(), |a| format!("?after={a}"));
    let link = format!("/compare/{}.json{cursor}", url(&name));
    answer(s, json_only, link, move |s| table_view(s, &name, after)).await
}

fn change_name(c: Change) -> &'static str {
    match c {
        Change::Inserted => "inserted",
        Change::Deleted => "deleted",
        Change::Changed => "changed",
    }
}

fn side_json(columns: &[String], side: &Option<(ScanPosition, Vec<SqlValue>)>) -> serde_json::Value {
    side.as_ref()
        .map_or(serde_json::Value::Null, |(p, v)| json!({"position": p.to_string(), "row": json_object(columns, v)}))
}

fn table_view(s: &Studio, name: &str, after: Option<After>) -> mdfkit::Result<View> {
    let o = other(s)?;
    let c = compare_rows(&s.db, &o.db, name, after, ROWS_LISTED)?;
    let mut body = format!(
        "<p>Rows matched by {} ({}): <strong>{}</strong> inserted, <strong>{}</strong> deleted, \
         <strong>{}</strong> changed, {} unchanged; {} of those that differ below. {}</p>",
        if c.key.len() == c.columns.len() { "the whole row (a heap has no key)" } else { "the clustered key" },
        esc(&c.key.join(", ")),
        c.inserted,
        c.deleted,
        c.changed,
        c.unchanged,
        c.rows.len(),
        a("/compare", "all tables")
    );
    let base = format!("/compare/{}", url(name));
    body.push_str("<p class=\"pager\">");
    body.push_str(&a(&base, "first"));
    if let Some(n) = c.next {
        body.push_str(&a(&format!("{base}?after={n}"), &format!("next {ROWS_LISTED}")));
    }
    body.push_str("</p>");
    let mut grid =
        String::from("<table class=\"rows compare\"><thead><tr><th>change</th><th>side</th><th>page:slot</th>");
    for col in &c.columns {
        let _ = write!(grid, "<th>{}</th>", esc(col));
    }
    grid.push_str("</tr></thead><tbody>");
    for row in &c.rows {
        write_row(&mut grid, row, "this", &row.before, &url(name));
        write_row(&mut grid, row, "other", &row.after, "");
    }
    grid.push_str("</tbody></table>");
    body.push_str(&grid);
    let json = json!({
        "table": name,
        "columns": c.columns,
        "key": c.key,
        "inserted": c.inserted,
        "deleted": c.deleted,
        "changed": c.changed,
        "unchanged": c.unchanged,
        "next_after": c.next.map(|n| n.to_string()),
        "rows": c.rows.iter().map(|r| json!({
            "change": change_name(r.change),
            "this": side_json(&c.columns, &r.before),
            "other": side_json(&c.columns, &r.after),
        })).collect::<Vec<_>>(),
    });
    let cli = s.cli("compare", &format!("{} --table {}", with_other(o), crate::shell_word(name)));
    Ok(View { title: format!("{name} compared"), json, body, cli })
}

/// One side of a differing row as a grid line, its position linked to the row page on this side
/// (`table` empty: the other side, not browsable here, shown as text).
fn write_row(
    grid: &mut String,
    row: &RowChange,
    side: &str,
    values: &Option<(ScanPosition, Vec<SqlValue>)>,
    table: &str,
) {
    let Some((position, values)) = values else { return };
    let at = if table.is_empty() {
        esc(&position.to_string())
    } else {
        a(&format!("/row/{table}/{position}"), &position.to_string())
    };
    let _ = write!(
        grid,
        "<tr class=\"{}\"><td>{}</td><td>{side}</td><td>{at}</td>",
        change_name(row.change),
        change_name(row.change)
    );
    for v in values {
        if v.is_null() {
            grid.push_str("<td class=\"null\">NULL</td>");
        } else {
            let _ = write!(grid, "<td>{}</td>", esc(&v.to_string()));
        }
    }
    grid.push_str("</tr>");
}

/// `/compare/pages` and `/compare/pages.json`, `?after=1:153`.
pub async fn pages(
    State(s): State<Shared>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Failure> {
    pages_answer(s, q, false).await
}

/// `/compare/pages.json`.
pub async fn pages_json(
    State(s): State<Shared>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Failure> {
    pages_answer(s, q, true).await
}

async fn pages_answer(
    s: Shared,
    q: std::collections::HashMap<String, String>,
    json_only: bool,
) -> Result<Response, Failure> {
    let after = q.get("after").map(|a| mdfkit::anatomy::parse_page_id(a)).transpose()?;
    let link = format!("/compare/pages.json{}", after.map_or(String::new(), |a| format!("?after={a}")));
    answer(s, json_only, link, move |s| pages_view(s, after)).await
}

fn pages_view(s: &Studio, after: Option<mdfkit::page::PageId>) -> mdfkit::Result<View> {
    let o = other(s)?;
    let c = compare_pages(&s.db, &o.db, after, ROWS_LISTED);
    let mut body = format!(
        "<p>Pages whose bytes differ between this side and the other (or that one side holds and the other \
         does not), in page order: {} listed of {} compared. {}</p><p class=\"pager\">{}",
        c.pages.len(),
        c.compared,
        a("/compare", "all tables"),
        a("/compare/pages", "first")
    );
    if let Some(n) = c.next {
        body.push_str(&a(&format!("/compare/pages?after={n}"), &format!("next {ROWS_LISTED}")));
    }
    body.push_str("</p>");
    let mut json_pages = Vec::new();
    let rows: Vec<Vec<Cell>> = c
        .pages
        .iter()
        .map(|p| {
            let (this, other) = (p.describe(&s.db, 0), p.describe(&o.db, 1));
            let (first_byte, differing) = p.bytes.map_or((None, None), |(f, n)| (Some(f), Some(n)));
            json_pages.push(json!({
                "page": p.id.to_string(),
                "this": {"held": p.held[0], "type": this.0, "owner": this.1},
                "other": {"held": p.held[1], "type": other.0, "owner": other.1},
                "first_differing_byte": first_byte,
                "bytes_differing": differing,
            }));
            let page = if p.held[0] { link(&format!("/page/{}", p.id), &p.id.to_string()) } else { text(p.id) };
            vec![
                page,
                text(this.0),
                text(this.1.unwrap_or_default()),
                text(other.0),
                text(other.1.unwrap_or_default()),
                text(first_byte.map_or(String::new(), |f| f.to_string())),
                text(differing.map_or(String::new(), |n| n.to_string())),
            ]
        })
        .collect();
    body.push_str(&html::table(
        &["page", "type", "owner", "type (other)", "owner (other)", "first differing byte", "bytes differing"],
        &rows,
        "compare",
    ));
    let json = json!({
        "compared": c.compared,
        "next_after": c.next.map(|n| n.to_string()),
        "pages": json_pages,
    });
    let after_arg = after.map_or(String::new(), |a| format!(" --after-page {a}"));
    Ok(View {
        title: "Pages compared".into(),
        json,
        body,
        cli: s.cli("compare", &format!("{} --pages{after_arg}", with_other(o))),
    })
}
