//! The views. Each has a permalink and a `.json` twin (the same path ending in `.json`), both
//! built from one [`View`] by the library call that answers it, run off the async threads:
//!
//! | path                         | what                                                        |
//! |------------------------------|-------------------------------------------------------------|
//! | `/`, `/overview.json`        | `mdfkit info`: versions, options, files, backup set; badges |
//! | `/tables`, `/tables.json`    | schemas → tables and other objects; JSON = `mdfkit tables`  |
//! | `/table/dbo.T`               | DDL, columns and their storage, indexes, allocation units   |
//! | `/rows/dbo.T?after=1:2:3`    | 100 rows by a keyset cursor, filters, one row ([`crate::rows`]) |
//! | `/page/1:153`                | header, verdict, slots, the 8,192 bytes by structure        |
//! | `/record/1:153:4`            | one record's bytes per column with names, types and values  |
//! | `/map?mode=owner`, `/map/1.png?mode=owner` | one cell per page, by type, owner, PFS fullness, ghosts or damage; click → page |
//! | `/search?type=int&value=42`  | every page:offset (and its owner) holding a value's stored bytes (bounded) |
//! | `/download/dbo.T.parquet`    | the table as `mdfkit export` writes it (csv, jsonl, arrows)  |
//! | `/compare`, `/compare/dbo.T`, `/compare/pages` | with `--compare OTHER`: counts per table, rows that differ, pages that differ ([`crate::compare`]) |

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use mdfkit::anatomy::{self, PageAnatomy, Part, RecordAnatomy};
use mdfkit::catalog::model::TableInfo;
use mdfkit::catalog::rowset::ColumnLocation;
use mdfkit::page::{PageHeader, PageId, PAGE_SIZE};
use mdfkit::scan::ScanPosition;
use mdfkit::value::Value as SqlValue;
use mdfkit::{Error, ErrorKind};
use serde_json::{json, Value};

use crate::html::{self, a, esc, link, text, url, Cell};
use crate::json::json_object;
use crate::Studio;

pub(crate) type Shared = Arc<Studio>;

/// What a view answers, as HTML and as JSON.
pub struct View {
    pub(crate) title: String,
    pub(crate) json: Value,
    pub(crate) body: String,
    pub(crate) cli: String,
}

/// A library error as an HTTP answer: unknown → 404, unsupported or damaged → 422.
pub struct Failure(Error);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = match self.0.kind() {
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Io | ErrorKind::MissingFile => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{}\n", self.0)).into_response()
    }
}

/// The routes of every view (each with its `.json` twin), the download and the static assets;
/// [`crate::router`] adds the security guard.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(overview))
        .route("/overview.json", get(overview_json))
        .route("/tables", get(tables))
        .route("/tables.json", get(tables_json))
        .route("/table/{name}", get(table))
        .route("/rows/{name}", get(crate::rows::rows))
        .route("/row/{name}/{at}", get(crate::rows::row))
        .route("/value/{name}/{at}/{column}", get(crate::rows::value))
        .route("/page/{id}", get(page))
        .route("/record/{id}", get(record))
        .route("/download/{name}", get(crate::download::download))
        .route("/compare", get(crate::compare::tables))
        .route("/compare.json", get(crate::compare::tables_json))
        .route("/compare/pages", get(crate::compare::pages))
        .route("/compare/pages.json", get(crate::compare::pages_json))
        .route("/compare/{name}", get(crate::compare::table))
        .route("/search", get(search))
        .route("/search.json", get(search_json))
        .route("/map", get(map))
        .route("/map.json", get(map_json))
        .route("/map/{file}", get(map_png))
        .route("/static/studio.css", get(|| async { ([(header::CONTENT_TYPE, "text/css")], html::STYLE) }))
        // Browsers ask for it on their own: nothing to show, and no 404 in the console.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/static/studio.js", get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], html::SCRIPT) }))
}

/// Runs a view's library work on the blocking pool and renders it.
pub(crate) async fn answer(
    studio: Shared,
    json_only: bool,
    json_link: String,
    build: impl FnOnce(&Studio) -> mdfkit::Result<View> + Send + 'static,
) -> Result<Response, Failure> {
    let s = studio.clone();
    let view = tokio::task::spawn_blocking(move || build(&s))
        .await
        .map_err(|e| Failure(Error::new(ErrorKind::Io, format!("the view failed: {e}"))))??;
    Ok(if json_only {
        ([(header::CONTENT_TYPE, "application/json")], view.json.to_string()).into_response()
    } else {
        let page = html::page(studio.db.name(), &view.title, &json_link, &view.cli, &view.body, &studio.fetched());
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
    })
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

/// `name.json` → (`name`, true).
pub(crate) fn twin(name: &str) -> (String, bool) {
    match name.strip_suffix(".json") {
        Some(base) => (base.to_string(), true),
        None => (name.to_string(), false),
    }
}

pub(crate) fn find_table(studio: &Studio, name: &str) -> mdfkit::Result<TableInfo> {
    studio
        .db
        .catalog()
        .find_table(name)
        .ok_or_else(|| Error::not_found(format!("no table named {name}; the tables view lists them")))
}

// ---- overview ----

async fn overview(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, false, "/overview.json".into(), overview_view).await
}

async fn overview_json(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, true, String::new(), overview_view).await
}

/// Why a table's rows cannot be read by this version, before any scan (`None`: readable).
fn refusal(t: &TableInfo) -> Option<String> {
    if t.partitions.is_empty() {
        return Some("no rowsets in the data files (memory-optimized?)".into());
    }
    t.partitions
        .iter()
        .find(|p| p.data_compression != 0)
        .map(|p| format!("{} compression: not read yet", mdfkit::catalog::model::compression_name(p.data_compression)))
}

fn overview_view(s: &Studio) -> mdfkit::Result<View> {
    let info = s.db.info()?;
    let facts: Vec<(&str, String)> = vec![
        ("database", info.name.clone()),
        (
            "version",
            format!(
                "{} ({}), created by {} ({})",
                info.product, info.version, info.create_product, info.create_version
            ),
        ),
        ("compatibility_level", info.compatibility_level.to_string()),
        ("collation", info.collation.clone()),
        ("page_verify", info.page_verify.to_string()),
        ("recovery_model", info.recovery_model.to_string()),
        ("created", info.created.to_string()),
        ("pages_in_files", info.pages_in_files.to_string()),
        ("user_tables", info.user_tables.to_string()),
    ];
    let mut body =
        html::table(&["", ""], &facts.iter().map(|(k, v)| vec![text(k), text(v)]).collect::<Vec<_>>(), "facts");
    body.push_str("<h2>Files</h2>");
    let file_rows: Vec<Vec<Cell>> = info
        .files
        .rows
        .iter()
        .map(|r| r.iter().map(|v| if v.is_null() { Cell::Null } else { text(v) }).collect())
        .collect();
    let headers: Vec<&str> = info.files.columns.iter().map(String::as_str).collect();
    body.push_str(&html::table(&headers, &file_rows, "files"));
    let backup = info.backup.as_ref().map(|b| {
        json!({
            "database_name": b.database_name, "server_name": b.server_name, "software_version": b.software_version,
            "type": format!("{:?}", b.backup_type), "first_lsn": b.first_lsn.to_string(), "last_lsn": b.last_lsn.to_string(),
            "checkpoint_lsn": b.checkpoint_lsn.to_string(), "database_backup_lsn": b.database_backup_lsn.to_string(),
            "backup_size": b.backup_size, "compressed": b.compressed, "checksums": b.checksums,
            "start": b.start.map(|d| d.to_string()), "finish": b.finish.map(|d| d.to_string()),
            "files": b.files.iter().map(|f| json!({"logical_name": f.logical_name, "physical_name": f.physical_name, "file_id": f.file_id})).collect::<Vec<_>>(),
        })
    });
    if let Some(Value::Object(b)) = &backup {
        body.push_str("<h2>Backup set</h2>");
        let rows: Vec<Vec<Cell>> = b
            .iter()
            .filter(|(k, _)| *k != "files")
            .map(|(k, v)| vec![text(k), text(v.as_str().map_or(v.to_string(), String::from))])
            .collect();
        body.push_str(&html::table(&["", ""], &rows, "backup"));
        if let Some(Value::Array(files)) = b.get("files") {
            let rows: Vec<Vec<Cell>> = files
                .iter()
                .map(|f| {
                    vec![
                        text(&f["file_id"]),
                        text(f["logical_name"].as_str().unwrap_or_default()),
                        text(f["physical_name"].as_str().unwrap_or_default()),
                    ]
                })
                .collect();
            body.push_str(&html::table(&["file_id", "logical_name", "physical_name"], &rows, "backup-files"));
        }
    }
    let tables = s.db.catalog().tables(false);
    let refused: Vec<(String, String)> =
        tables.iter().filter_map(|t| refusal(t).map(|r| (t.qualified_name(), r))).collect();
    body.push_str("<h2>Tables</h2><p>");
    for t in &tables {
        let badge = match refusal(t) {
            Some(why) => format!(" <span class=\"badge bad\" title=\"{}\">refused</span>", esc(&why)),
            None => String::new(),
        };
        let _ = write!(body, "{}{badge} · ", a(&format!("/table/{}", url(&t.qualified_name())), &t.qualified_name()));
    }
    body.push_str("</p><p>Damage is found by <code>mdfkit check</code>; pages with a bad checksum show their verdict in the page view.</p>");
    if s.compare.is_some() {
        let _ = write!(body, "<p id=\"compared\">Started with --compare: {}.</p>", a("/compare", "compare the tables"));
    }
    let json = json!({
        "database": info.name, "version": info.version, "product": info.product,
        "create_version": info.create_version, "compatibility_level": info.compatibility_level,
        "collation": info.collation, "page_verify": info.page_verify, "recovery_model": info.recovery_model,
        "created": info.created.to_string(), "pages_in_files": info.pages_in_files, "user_tables": info.user_tables,
        "files": info.files.rows.iter().map(|r| json_object(&info.files.columns, r)).collect::<Vec<_>>(),
        "backup": backup,
        "refused_tables": refused.iter().map(|(t, why)| json!({"table": t, "reason": why})).collect::<Vec<_>>(),
    });
    Ok(View { title: "Overview".into(), json, body, cli: s.cli("info", "") })
}

// ---- tables ----

async fn tables(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, false, "/tables.json".into(), tables_view).await
}

async fn tables_json(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, true, String::new(), tables_view).await
}

/// The JSON twin is exactly `mdfkit tables --format json`: the library's table listing.
fn tables_view(s: &Studio) -> mdfkit::Result<View> {
    let catalog = s.db.catalog();
    let tables = catalog.tables(false);
    let columns: Vec<String> = TableInfo::LISTING_COLUMNS.iter().map(|c| c.to_string()).collect();
    let json = Value::Array(tables.iter().map(|t| json_object(&columns, &t.listing_row())).collect());
    let objects = catalog.view("sys.objects")?;
    let col = |name: &str| objects.columns.iter().position(|c| c == name);
    let (name_at, schema_at, type_at) = (col("name"), col("schema_id"), col("type_desc"));
    let schemas = catalog.view("sys.schemas")?;
    let schema_name = |id: &SqlValue| {
        let (id_at, n_at) =
            (schemas.columns.iter().position(|c| c == "schema_id"), schemas.columns.iter().position(|c| c == "name"));
        schemas
            .rows
            .iter()
            .find(|r| id_at.is_some_and(|i| &r[i] == id))
            .and_then(|r| n_at.map(|n| r[n].to_string()))
            .unwrap_or_else(|| id.to_string())
    };
    let mut tree: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for t in &tables {
        let rows = t.rows();
        let badge = refusal(t)
            .map_or(String::new(), |why| format!(" <span class=\"badge bad\" title=\"{}\">refused</span>", esc(&why)));
        tree.entry(t.schema.clone()).or_default().push(format!(
            "table {} <small>{rows} rows</small>{badge} · {}",
            a(&format!("/table/{}", url(&t.qualified_name())), &t.name),
            a(&format!("/rows/{}", url(&t.qualified_name())), "rows"),
        ));
    }
    if let (Some(n), Some(sc), Some(ty)) = (name_at, schema_at, type_at) {
        for r in &objects.rows {
            let kind = r[ty].to_string();
            if matches!(
                kind.as_str(),
                "VIEW"
                    | "SQL_STORED_PROCEDURE"
                    | "SQL_SCALAR_FUNCTION"
                    | "SQL_TABLE_VALUED_FUNCTION"
                    | "SQL_INLINE_TABLE_VALUED_FUNCTION"
                    | "SQL_TRIGGER"
            ) {
                tree.entry(schema_name(&r[sc])).or_default().push(format!(
                    "{} {}",
                    esc(&kind.to_lowercase()),
                    esc(&r[n].to_string())
                ));
            }
        }
    }
    let mut body = String::from("<ul class=\"tree\">");
    for (schema, items) in &tree {
        let _ = write!(body, "<li><b>{}</b><ul class=\"tree\">", esc(schema));
        for item in items {
            let _ = write!(body, "<li>{item}</li>");
        }
        body.push_str("</ul></li>");
    }
    body.push_str("</ul>");
    Ok(View { title: "Tables".into(), json, body, cli: s.cli("tables", "--format json") })
}

// ---- one table ----

async fn table(State(s): State<Shared>, Path(name): Path<String>) -> Result<Response, Failure> {
    let (name, json_only) = twin(&name);
    let link = format!("/table/{}.json", url(&name));
    answer(s, json_only, link, move |s| table_view(s, &name)).await
}

fn page_link(p: PageId) -> Cell {
    if p.is_null() {
        text("0:0")
    } else {
        link(&format!("/page/{p}"), &p.to_string())
    }
}

fn table_view(s: &Studio, name: &str) -> mdfkit::Result<View> {
    let t = find_table(s, name)?;
    let catalog = s.db.catalog();
    let ddl = catalog.create_table_sql(&t);
    let downloads: Vec<String> = ["csv", "jsonl", "arrows", "parquet"]
        .iter()
        .map(|ext| a(&format!("/download/{}.{ext}", url(&t.qualified_name())), ext))
        .collect();
    let mut body = format!(
        "<p>{} rows (from the catalog) · {} · download {}</p><pre>{}</pre>",
        t.rows(),
        a(&format!("/rows/{}", url(&t.qualified_name())), "rows"),
        downloads.join(" "),
        esc(&ddl)
    );
    let mut columns_json = Vec::new();
    let storage = t.partitions.first().and_then(|p| s.db.row_decoder(&t, p.partition_id, None).ok());
    let mut rows = Vec::new();
    for c in catalog.columns(t.object_id) {
        let plan = storage.as_ref().and_then(|d| d.columns().iter().find(|p| p.column.column_id == c.column_id));
        let (where_, null_bit) = match plan.map(|p| (p.physical.location(), p.physical.null_bit)) {
            Some((ColumnLocation::Fixed(o), bit)) => (format!("fixed at {o}"), bit.to_string()),
            Some((ColumnLocation::Variable(i), bit)) => (format!("variable {}", i + 1), bit.to_string()),
            None => ("not stored".into(), String::new()),
        };
        rows.push(vec![
            text(c.column_id),
            text(&c.name),
            text(c.type_info.spelling()),
            text(if c.is_nullable { "NULL" } else { "NOT NULL" }),
            text(&where_),
            text(&null_bit),
        ]);
        columns_json.push(json!({"column_id": c.column_id, "name": c.name, "type": c.type_info.spelling(), "nullable": c.is_nullable, "storage": where_, "null_bit": null_bit}));
    }
    body.push_str("<h2>Columns</h2>");
    body.push_str(&html::table(&["id", "name", "type", "null", "storage", "null bit"], &rows, "columns"));
    let indexes = catalog.indexes(t.object_id);
    let rows: Vec<Vec<Cell>> = indexes
        .iter()
        .map(|i| {
            let keys: Vec<String> =
                i.key_columns.iter().map(|(k, desc)| if *desc { format!("{k} DESC") } else { k.clone() }).collect();
            vec![
                text(i.index_id),
                text(&i.name),
                text(i.type_desc()),
                text(if i.is_unique { "unique" } else { "" }),
                text(keys.join(", ")),
                text(i.included_columns.join(", ")),
            ]
        })
        .collect();
    body.push_str("<h2>Indexes</h2>");
    body.push_str(&html::table(&["id", "name", "type", "", "keys", "included"], &rows, "indexes"));
    let units = &catalog.base().allocation_units;
    let mut rows = Vec::new();
    let mut partitions_json = Vec::new();
    for p in &t.partitions {
        for u in units.iter().filter(|u| u.owner_id == p.partition_id) {
            let kind = u.kind_name();
            rows.push(vec![
                text(p.partition_number),
                text(p.partition_id),
                text(p.rows),
                text(kind),
                text(u.id),
                page_link(u.root_page),
                page_link(u.first_page),
                page_link(u.first_iam_page),
                text(u.used_pages),
            ]);
            partitions_json.push(json!({"partition_number": p.partition_number, "partition_id": p.partition_id, "rows": p.rows, "allocation_unit": u.id, "type": kind, "root_page": u.root_page.to_string(), "first_page": u.first_page.to_string(), "first_iam_page": u.first_iam_page.to_string(), "used_pages": u.used_pages}));
        }
    }
    body.push_str("<h2>Partitions and allocation units</h2>");
    body.push_str(&html::table(
        &["partition", "partition_id", "rows", "type", "allocation unit", "root", "first", "first IAM", "used pages"],
        &rows,
        "units",
    ));
    let json = json!({
        "table": t.qualified_name(), "object_id": t.object_id, "layout": if t.is_heap { "heap" } else { "clustered" },
        "rows": t.rows(), "refused": refusal(&t), "ddl": ddl, "columns": columns_json,
        "indexes": indexes.iter().map(|i| json!({"index_id": i.index_id, "name": i.name, "type": i.type_desc(), "unique": i.is_unique, "keys": i.key_columns.iter().map(|k| &k.0).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "allocation_units": partitions_json,
    });
    let cli = s.cli("schema", &crate::shell_word(&t.qualified_name()));
    Ok(View { title: t.qualified_name(), json, body, cli })
}

// ---- page and record ----

async fn page(State(s): State<Shared>, Path(id): Path<String>) -> Result<Response, Failure> {
    let (id, json_only) = twin(&id);
    let page = anatomy::parse_page_id(&id)?;
    answer(s, json_only, format!("/page/{page}.json"), move |s| page_view(s, page, json_only)).await
}

/// Whether a part holds a column's bytes: such fields get a colour of their own ([`column_class`]).
fn is_column(part: Part) -> bool {
    matches!(part, Part::FixedColumn | Part::VarColumn | Part::Pointer)
}

/// ` c1` .. ` c6`: the colour of the `n`-th column field of a record, so that neighbouring
/// columns differ (the CSS gives each class a colour).
fn column_class(n: usize) -> String {
    format!(" c{}", n % 6 + 1)
}

/// The fields of a page for the hex view: each field's classes and id, and for every byte the
/// index of the field it belongs to (one small integer a byte, no string per byte).
struct ByteMap {
    fields: Vec<(String, String)>,
    owner: Vec<u32>,
}

fn byte_map(p: &PageAnatomy) -> ByteMap {
    let mut map =
        ByteMap { fields: vec![(format!("p-{}", Part::Undecoded.name()), String::new())], owner: vec![0; PAGE_SIZE] };
    let mut mark = |offset: usize, len: usize, class: String, id: String| {
        let index = map.fields.len() as u32;
        map.fields.push((class, id));
        for b in map.owner.iter_mut().skip(offset).take(len) {
            *b = index;
        }
    };
    for (i, f) in p.header_fields.iter().enumerate() {
        mark(f.offset, f.len, format!("p-{}", Part::Header.name()), format!("h{i}"));
    }
    if let Some((o, l)) = p.free_space {
        mark(o, l, format!("p-{}", Part::FreeSpace.name()), "free".into());
    }
    for (i, f) in p.compression_info.iter().enumerate() {
        mark(f.offset, f.len, format!("p-{}", f.part.name()), format!("ci{i}"));
    }
    for r in &p.records {
        let mut columns = 0;
        for (i, f) in p.record_fields(r).iter().enumerate() {
            let mut class = format!("p-{}", f.part.name());
            if is_column(f.part) {
                class.push_str(&column_class(columns));
                columns += 1;
            }
            mark(f.offset, f.len, class, format!("s{}f{i}", r.slot));
        }
    }
    for (i, f) in p.slot_array().enumerate() {
        mark(f.offset, f.len, format!("p-{}", Part::SlotArray.name()), format!("sa{i}"));
    }
    map
}

/// Bytes `range` of the page as hex, 32 a line, each run of one field one span.
fn hex_view(p: &PageAnatomy, map: &ByteMap, range: std::ops::Range<usize>) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(range.len() * 4);
    out.push_str("<div class=\"hex\">");
    for line in range.clone().step_by(32) {
        let _ = write!(out, "<div><span class=\"row-offset\">{line:04x}</span>");
        let end = (line + 32).min(range.end);
        let mut at = line;
        while at < end {
            let field = map.owner[at];
            let (class, id) = &map.fields[field as usize];
            let _ = write!(out, "<span class=\"{class}\" data-field=\"{}\">", esc(id));
            let mut run = at;
            while run < end && map.owner[run] == field {
                if run > at {
                    out.push(' ');
                }
                let b = p.bytes[run];
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 15)] as char);
                run += 1;
            }
            out.push_str("</span> ");
            at = run;
        }
        out.push_str("</div>");
    }
    out.push_str("</div>");
    out
}

fn legend() -> String {
    let parts = [
        Part::Header,
        Part::Status,
        Part::FixedEnd,
        Part::FixedColumn,
        Part::FixedUnused,
        Part::NullBitmap,
        Part::VarCount,
        Part::VarOffset,
        Part::VarColumn,
        Part::Pointer,
        Part::VersionTag,
        Part::Undecoded,
        Part::FreeSpace,
        Part::SlotArray,
        Part::CiHeader,
        Part::CdArray,
        Part::ClusterArray,
        Part::Dictionary,
    ];
    let mut out = String::from("<p class=\"legend\">");
    for p in parts {
        let _ = write!(out, "<span class=\"p-{0}\">{0}</span>", p.name());
    }
    out.push_str("</p>");
    out
}

fn verdict_badge(p: &PageAnatomy) -> String {
    let class = if p.verdict.is_damaged() {
        "bad"
    } else if p.verdict_text() == "ok" {
        "ok"
    } else {
        "warn"
    };
    format!("<span class=\"badge {class}\" id=\"verdict\">{}</span>", esc(&p.verdict_text()))
}

/// The page view: its JSON twin only when `json_only`, else its HTML only (a page of a few
/// hundred rows has thousands of fields: spelling them twice would double the view's time).
fn page_view(s: &Studio, id: PageId, json_only: bool) -> mdfkit::Result<View> {
    let p = anatomy::read_database_page(&s.db, id)?;
    let (title, cli) = (format!("Page {id}"), s.cli("page", &id.to_string()));
    if json_only {
        return Ok(View { title, json: p.to_json(), body: String::new(), cli });
    }
    let map = byte_map(&p);
    let mut body = format!("<p>Verdict: {}", verdict_badge(&p));
    if let Some(owner) = &p.owner_unit {
        let object = match owner.is_table() {
            true => a(&format!("/table/{}", url(&owner.object)), &owner.object),
            false => esc(&owner.object),
        };
        let _ = write!(body, " · owner {object}, {}", esc(&owner.place()));
    }
    if let Some(h) = &p.header {
        let _ = write!(body, " · type {} · level {}", esc(&h.page_type.name()), h.level);
        for (label, target) in [("previous", h.prev_page), ("next", h.next_page)] {
            if !target.is_null() {
                let _ = write!(body, " · {}", a(&format!("/page/{target}"), &format!("{label} {target}")));
            }
        }
    }
    if let Some(e) = &p.error {
        let _ = write!(body, "</p><p class=\"badge warn\">{}", esc(e));
    }
    body.push_str("</p><h2>Header</h2>");
    body.push_str(&fields_table(&p, &p.header_fields, None, "h", 0));
    if !p.compression_info.is_empty() {
        body.push_str("<h2>Compression information (PAGE compression)</h2>");
        body.push_str(&fields_table(&p, &p.compression_info, None, "ci", 0));
    }
    body.push_str(&allocation_html(&p));
    body.push_str("<h2>Slots</h2>");
    let rows: Vec<Vec<Cell>> = p
        .records
        .iter()
        .map(|r| {
            let kind = r.record_type.map_or("", anatomy::record_type_name);
            vec![
                link(&format!("/record/{}:{}", p.id, r.slot), &r.slot.to_string()),
                text(r.offset),
                text(r.len),
                text(kind),
                text(p.record_error(r).unwrap_or_default()),
            ]
        })
        .collect();
    body.push_str(&html::table(&["slot", "offset", "length", "record type", "note"], &rows, "slots"));
    body.push_str("<h2>Bytes</h2>");
    body.push_str(&legend());
    body.push_str(&hex_view(&p, &map, 0..PAGE_SIZE));
    Ok(View { title, json: Value::Null, body, cli })
}

/// Most runs an allocation bitmap shows (a fragmented IAM page can have tens of thousands).
const BITMAP_RUNS_SHOWN: usize = 2_000;

/// An allocation page's bitmap: GAM / SGAM / IAM extents as runs set and clear with their pages,
/// an IAM page's single pages, a PFS page's bytes as runs of pages. Empty for other pages.
fn allocation_html(p: &PageAnatomy) -> String {
    use mdfkit::anatomy::AllocationBitmap;
    let bitmap = match p.allocation() {
        None => return String::new(),
        Some(Err(e)) => {
            return format!("<h2>Allocation bitmap</h2><p class=\"badge warn\">{}</p>", esc(&e.to_string()))
        }
        Some(Ok(b)) => b,
    };
    let page_range = |first: PageId, last: PageId| {
        format!(
            "{}–{}",
            a(&format!("/page/{first}"), &first.to_string()),
            a(&format!("/page/{last}"), &last.to_string())
        )
    };
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut out = String::from("<h2>Allocation bitmap</h2>");
    match &bitmap {
        AllocationBitmap::Extents(m) => {
            let (set, clear) = match m.kind {
                mdfkit::page::PageType::Gam => ("free", "allocated"),
                mdfkit::page::PageType::Sgam => ("mixed, with a free page", "not a mixed extent with a free page"),
                _ => ("owned", "not owned"),
            };
            let _ = write!(
                out,
                "<p>{} extents of 8 pages from page {}; a set bit means {}.</p>",
                m.extents,
                esc(&m.start.to_string()),
                esc(m.set_means())
            );
            if !m.single_pages.is_empty() {
                let links: Vec<String> =
                    m.single_pages.iter().map(|s| a(&format!("/page/{s}"), &s.to_string())).collect();
                let _ = write!(out, "<p>Single-page slots (pages from mixed extents): {}</p>", links.join(" "));
            }
            // Set runs and the clear runs between them, in order.
            let mut at = 0;
            for run in m.set.iter().chain(std::iter::once(&(m.extents..m.extents))) {
                for (range, state) in [(at..run.start, clear), (run.clone(), set)] {
                    if range.start < range.end {
                        let (first, last) = m.pages(&range);
                        rows.push(vec![
                            text(format!("{}–{}", range.start, range.end - 1)),
                            Cell::Html(page_range(first, last)),
                            text(state),
                        ]);
                    }
                }
                at = run.end;
            }
            out.push_str(&html::table(
                &["extents", "pages", "state"],
                &rows[..rows.len().min(BITMAP_RUNS_SHOWN)],
                "bitmap",
            ));
        }
        AllocationBitmap::Pfs { start, pages, runs } => {
            let _ = write!(out, "<p>One byte for each of {pages} pages from page {}.</p>", esc(&start.to_string()));
            for (first, last, byte) in runs {
                rows.push(vec![
                    Cell::Html(page_range(PageId::new(start.file, *first), PageId::new(start.file, *last))),
                    text(format!("{:#04x}", byte.0)),
                    text(byte.describe()),
                ]);
            }
            out.push_str(&html::table(
                &["pages", "byte", "meaning"],
                &rows[..rows.len().min(BITMAP_RUNS_SHOWN)],
                "bitmap",
            ));
        }
    }
    if rows.len() > BITMAP_RUNS_SHOWN {
        let _ = write!(out, "<p>The first {BITMAP_RUNS_SHOWN} runs of {}; the JSON twin has them all.</p>", rows.len());
    }
    out
}

/// The table of `fields` of page `p`; `record`: the record holding them.
fn fields_table(
    p: &PageAnatomy,
    fields: &[anatomy::Field],
    record: Option<&RecordAnatomy>,
    prefix: &str,
    base: usize,
) -> String {
    let mut out = String::from("<table class=\"fields\"><thead><tr><th>offset</th><th>length</th><th>field</th><th>value</th><th>meaning</th></tr></thead><tbody>");
    let mut columns = 0;
    for (i, f) in fields.iter().enumerate() {
        let colour = if is_column(f.part) {
            columns += 1;
            column_class(columns - 1)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<tr data-field=\"{prefix}{i}\"><td>{}</td><td>{}</td><td class=\"p-{}{colour}\">{}</td><td>{}</td><td>{}</td></tr>",
            f.offset.saturating_sub(base),
            f.len,
            f.part.name(),
            esc(&p.field_name(f)),
            esc(&p.field_value(f, record)),
            esc(f.meaning)
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// A LOB record's node (blob fragments only; empty otherwise): its type, the value bytes it
/// holds, and each link with the value range below it and a link to that record, so a value's
/// chain (root → internal nodes → data) is followed by click. HTML and JSON.
fn lob_html(record: &[u8], kind: Option<mdfkit::record::RecordType>) -> (String, Value) {
    if kind != Some(mdfkit::record::RecordType::BlobFragment) {
        return (String::new(), Value::Null);
    }
    let len = usize::from(record.get(2..4).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))).min(record.len());
    let node = match mdfkit::lob::LobNode::parse(&record[..len]) {
        Ok(n) => n,
        Err(e) => {
            let text = e.to_string();
            return (format!("<p class=\"badge warn\">{}</p>", esc(&text)), json!({"error": text}));
        }
    };
    let mut out = format!(
        "<h2>LOB node</h2><p id=\"lob-node\">{} · holds {} bytes of the value itself · {} links</p>",
        node.name(),
        node.data.len(),
        node.links.len()
    );
    let mut links = Vec::new();
    let mut rows = Vec::new();
    let mut start = 0u64;
    for l in &node.links {
        let target = l.target().map(|(p, s)| format!("{p}:{s}"));
        rows.push(vec![
            text(format!("{start}–{}", l.end.saturating_sub(1))),
            match &target {
                Ok(t) => link(&format!("/record/{t}"), t),
                Err(e) => text(e.to_string()),
            },
        ]);
        links.push(json!({"start": start, "end": l.end, "record": target.ok()}));
        start = l.end;
    }
    if !rows.is_empty() {
        out.push_str(&html::table(&["value bytes", "record"], &rows, "lob-links"));
    }
    (out, json!({"type": node.name(), "data_bytes": node.data.len(), "links": links}))
}

async fn record(State(s): State<Shared>, Path(id): Path<String>) -> Result<Response, Failure> {
    let (id, json_only) = twin(&id);
    let position: ScanPosition = id.parse()?;
    answer(s, json_only, format!("/record/{position}.json"), move |s| record_view(s, position)).await
}

fn record_view(s: &Studio, at: ScanPosition) -> mdfkit::Result<View> {
    let p = anatomy::read_database_page(&s.db, at.page)?;
    let r: &RecordAnatomy = p
        .records
        .iter()
        .find(|r| r.slot == at.slot)
        .ok_or_else(|| Error::not_found(format!("page {} has no slot {}", at.page, at.slot)))?;
    let map = byte_map(&p);
    let mut body = format!(
        "<p>{} · {} bytes at offset {} of {} · {}</p>",
        esc(r.record_type.map_or("", anatomy::record_type_name)),
        r.len,
        r.offset,
        a(&format!("/page/{}", at.page), &format!("page {}", at.page)),
        verdict_badge(&p)
    );
    if let Some(e) = p.record_error(r) {
        let _ = write!(body, "<p class=\"badge warn\">{}</p>", esc(&e));
    }
    if let Some((page, slot)) = r.forwarded_to {
        let _ = write!(body, "<p>Forwarded to {}</p>", a(&format!("/record/{page}:{slot}"), &format!("{page}:{slot}")));
    }
    body.push_str(&hex_view(&p, &map, r.offset..r.offset + r.len));
    let lob = lob_html(&p.bytes[r.offset..r.offset + r.len], r.record_type);
    body.push_str(&lob.0);
    body.push_str("<h2>Parts</h2>");
    let (fields, columns) = (p.record_fields(r), p.record_columns(r));
    body.push_str(&fields_table(&p, fields, Some(r), &format!("s{}f", r.slot), r.offset));
    if !columns.is_empty() {
        body.push_str("<h2>Columns</h2><table class=\"columns\"><thead><tr><th>column</th><th>type</th><th>storage</th><th>null bit</th><th>offset</th><th>length</th><th>value</th></tr></thead><tbody>");
        for (c, layout) in columns.iter().zip(&p.columns) {
            // The field holding the column's bytes, for highlighting.
            let field =
                c.span.and_then(|(o, _)| fields.iter().position(|f| f.offset <= o && o < f.offset + f.len.max(1)));
            let (offset, len) =
                c.span.map_or((String::new(), String::new()), |(o, l)| ((o - r.offset).to_string(), l.to_string()));
            let value = match &c.value {
                Ok(_) if c.is_null => "<span class=\"null\">NULL</span>".to_string(),
                Ok(v) => esc(&v.to_string()),
                Err(e) => format!("<span class=\"badge warn\">{}</span>", esc(e)),
            };
            let _ = write!(
                body,
                "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{offset}</td><td>{len}</td><td>{value}{}</td></tr>",
                field.map_or(String::new(), |f| format!(" data-field=\"s{}f{f}\"", r.slot)),
                esc(&layout.name),
                esc(&layout.type_name),
                esc(&layout.storage),
                layout.null_bit,
                if c.off_row {
                    let links: Vec<String> =
                        c.links.iter().map(|(p, s)| a(&format!("/record/{p}:{s}"), &format!("{p}:{s}"))).collect();
                    format!(" <small>(off-row: {})</small>", links.join(" "))
                } else {
                    String::new()
                },
            );
        }
        body.push_str("</tbody></table>");
    }
    let mut json = p.record_to_json(r);
    json["page"] = Value::String(at.page.to_string());
    json["bytes"] = Value::String(p.bytes[r.offset..r.offset + r.len].iter().map(|b| format!("{b:02x}")).collect());
    json["lob"] = lob.1;
    let cli = s.cli("page", &at.page.to_string());
    Ok(View { title: format!("Record {at}"), json, body, cli })
}

// ---- value search ----

/// Hits a search shows before it stops and offers to continue.
const SEARCH_HITS: usize = 500;
/// How long a search reads pages before it stops and offers to continue.
const SEARCH_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

async fn search(State(s): State<Shared>, Query(q): Params) -> Result<Response, Failure> {
    let link = format!("/search.json?{}", search_query(&q, None));
    answer(s, false, link, move |s| search_view(s, &q)).await
}

async fn search_json(State(s): State<Shared>, Query(q): Params) -> Result<Response, Failure> {
    answer(s, true, String::new(), move |s| search_view(s, &q)).await
}

/// The query string of a search: its type and value, and where to go on from.
fn search_query(q: &std::collections::HashMap<String, String>, from: Option<PageId>) -> String {
    let get = |k: &str| url(q.get(k).map_or("", String::as_str));
    let mut out = format!("type={}&value={}", get("type"), get("value"));
    if let Some(f) = from.map(|f| f.to_string()).or_else(|| q.get("from").cloned()) {
        let _ = write!(out, "&from={}", url(&f));
    }
    out
}

fn search_view(s: &Studio, q: &std::collections::HashMap<String, String>) -> mdfkit::Result<View> {
    let (sql_type, value) = (q.get("type").cloned().unwrap_or_default(), q.get("value").cloned().unwrap_or_default());
    let mut body = format!(
        "<form class=\"search\" method=\"get\" action=\"/search\"><label>value <input name=\"value\" value=\"{}\"></label> \
         <label>SQL type <input name=\"type\" value=\"{}\" placeholder=\"int, nvarchar, varbinary, uniqueidentifier...\"></label> \
         <button>search</button></form><p>Every page:offset where the value's stored bytes occur, allocated or not \
         (deleted rows too), {SEARCH_HITS} at most or {} s of reading at a time.</p>",
        esc(&value),
        esc(&sql_type),
        SEARCH_BUDGET.as_secs()
    );
    if value.is_empty() || sql_type.is_empty() {
        let json = json!({"hits": [], "next_from": null});
        return Ok(View { title: "Value search".into(), json, body, cli: s.cli("studio", "") });
    }
    let needle = mdfkit::search::stored_bytes(&sql_type, &value)?;
    let from = q.get("from").map(|f| anatomy::parse_page_id(f)).transpose()?;
    let owners = s.db.catalog().owners();
    let mut hits = Vec::new();
    let end =
        mdfkit::search::find_bytes(s.db.reader().source(), &needle, from, SEARCH_BUDGET, SEARCH_HITS, |p, o, page| {
            // The owner the page's header names, when it is a page header naming this page.
            let header = PageHeader::parse(page).ok().filter(|h| h.header_version == 1 && h.this_page == p);
            hits.push((p, o, header.and_then(|h| owners.of_page(&h)).map(|o| o.describe())))
        });
    let next = match end {
        mdfkit::search::SearchEnd::Done => None,
        mdfkit::search::SearchEnd::Before(p) => Some(p),
    };
    let hex: String = needle.iter().map(|b| format!("{b:02x}")).collect();
    let _ = write!(body, "<p id=\"search-status\">{} places hold the bytes {hex}", hits.len());
    match next {
        Some(p) => {
            let _ = write!(
                body,
                "; stopped before page {p}: {}",
                a(&format!("/search?{}", search_query(q, Some(p))), "continue from here")
            );
        }
        None => body.push_str("; every page read"),
    }
    body.push_str(".</p>");
    let rows: Vec<Vec<Cell>> = hits
        .iter()
        .map(|(p, o, owner)| {
            vec![link(&format!("/page/{p}"), &p.to_string()), text(o), text(owner.as_deref().unwrap_or(""))]
        })
        .collect();
    body.push_str(&html::table(&["page", "offset", "owner"], &rows, "hits"));
    let json = json!({
        "type": sql_type, "value": value, "bytes": hex,
        "hits": hits.iter().map(|(p, o, owner)| json!({"page": p.to_string(), "offset": o, "owner": owner})).collect::<Vec<_>>(),
        "next_from": next.map(|p| p.to_string()),
    });
    Ok(View { title: "Value search".into(), json, body, cli: s.cli("studio", "") })
}

// ---- allocation map ----

/// A view's query parameters by name.
type Params = Query<std::collections::HashMap<String, String>>;

fn map_mode(q: &std::collections::HashMap<String, String>) -> Result<crate::map::Mode, Failure> {
    let name = q.get("mode").map(String::as_str);
    crate::map::Mode::parse(name).ok_or_else(|| {
        let modes: Vec<&str> = crate::map::Mode::ALL.iter().map(|m| m.name()).collect();
        Failure(Error::not_found(format!("no map mode {:?}: one of {}", name.unwrap_or(""), modes.join(", "))))
    })
}

async fn map(State(s): State<Shared>, Query(q): Params) -> Result<Response, Failure> {
    let mode = map_mode(&q)?;
    if q.get("check").is_some_and(|c| c == "1") {
        crate::map::CheckRun::start(s.clone());
    }
    answer(s, false, format!("/map.json?mode={}", mode.name()), move |s| map_view(s, mode, false)).await
}

async fn map_json(State(s): State<Shared>, Query(q): Params) -> Result<Response, Failure> {
    let mode = map_mode(&q)?;
    answer(s, true, String::new(), move |s| map_view(s, mode, true)).await
}

/// The map view: its JSON twin (every cell: a million numbers on an 8 GB file) only when
/// `json_only`, else its HTML only.
fn map_view(s: &Studio, mode: crate::map::Mode, json_only: bool) -> mdfkit::Result<View> {
    use crate::map::{AllocationMap, Mode, CELL, COLUMNS};
    let m = s.map.get_or_init(|| AllocationMap::read(&s.db));
    // One look at the check: the map's colours and its progress line must agree.
    let check = s.check.state();
    let painted = m.paint(mode, check.damaged_pages().as_ref());
    let (title, cli) = ("Allocation map".to_string(), s.cli("pages", ""));
    if json_only {
        let json = json!({
            "mode": mode.name(),
            "columns": COLUMNS,
            "cell_pixels": CELL,
            "legend": painted.legend.iter().map(|l| json!({"label": l.label, "rgb": format!("#{:02x}{:02x}{:02x}", l.rgb[0], l.rgb[1], l.rgb[2]), "count": l.count})).collect::<Vec<_>>(),
            "files": painted.files.iter().map(|(f, cells)| json!({"file_id": f, "pages": cells.len(), "cells": cells})).collect::<Vec<_>>(),
            "check": {
                "running": check.running, "pages_done": check.pages_done, "pages_total": check.pages_total,
                "problems": check.problems.as_ref().map(|p| p.iter().map(|p| json!({"page": p.page.map(|x| x.to_string()), "object": p.object, "what": p.what})).collect::<Vec<_>>()),
            },
        });
        return Ok(View { title, json, body: String::new(), cli });
    }
    let mut body = String::from("<p class=\"modes\">Colour by: ");
    for other in Mode::ALL {
        if other == mode {
            let _ = write!(body, "<b>{}</b> ", other.name());
        } else {
            let _ = write!(body, "{} ", a(&format!("/map?mode={}", other.name()), other.name()));
        }
    }
    body.push_str("</p>");
    if check.running {
        let _ = write!(
            body,
            "<p id=\"check-progress\" data-running=\"1\">check: {} of {} pages…</p>",
            check.pages_done, check.pages_total
        );
    } else if let Some(problems) = &check.problems {
        let _ = write!(body, "<p id=\"check-progress\">check: {} problems found.</p>", problems.len());
        if !problems.is_empty() {
            body.push_str("<ul class=\"problems\">");
            for p in problems.iter().take(100) {
                let text = esc(&p.to_string());
                match p.page {
                    Some(page) => {
                        let _ = write!(body, "<li><a href=\"/page/{page}\">{text}</a></li>");
                    }
                    None => {
                        let _ = write!(body, "<li>{text}</li>");
                    }
                }
            }
            body.push_str("</ul>");
        }
    } else {
        body.push_str("<p id=\"check-progress\"><a href=\"/map?mode=damage&amp;check=1\" id=\"run-check\">run check</a> (every page's checksum and structure, in the background; its findings paint the damage mode)</p>");
    }
    body.push_str("<p class=\"legend\">");
    for l in &painted.legend {
        let [r, g, b] = l.rgb;
        let _ = write!(
            body,
            "<span class=\"swatch\" data-rgb=\"{r:02x}{g:02x}{b:02x}\">&nbsp;&nbsp;</span> {} ({}) ",
            esc(&l.label),
            l.count
        );
    }
    body.push_str("</p>");
    for (file, cells) in &painted.files {
        let _ = write!(
            body,
            "<h2>File {file}: {} pages</h2><img class=\"map\" src=\"/map/{file}.png?mode={}\" alt=\"allocation map of file {file}\" \
             data-file=\"{file}\" data-columns=\"{COLUMNS}\" data-cell=\"{CELL}\" width=\"{}\">",
            cells.len(),
            mode.name(),
            COLUMNS * CELL
        );
    }
    Ok(View { title, json: Value::Null, body, cli })
}

async fn map_png(State(s): State<Shared>, Path(file): Path<String>, Query(q): Params) -> Result<Response, Failure> {
    let mode = map_mode(&q)?;
    let file: u16 = file
        .strip_suffix(".png")
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| Error::not_found(format!("{file}: ask for FILE_ID.png")))?;
    let studio = s.clone();
    let png = tokio::task::spawn_blocking(move || {
        let damaged = studio.check.state().damaged_pages();
        studio.pngs.get_or_draw((file, mode, damaged.is_some()), || {
            let m = studio.map.get_or_init(|| crate::map::AllocationMap::read(&studio.db));
            m.paint(mode, damaged.as_ref()).png(file)
        })
    })
    .await
    .map_err(|e| Failure(Error::new(ErrorKind::Io, format!("the map failed: {e}"))))?
    .ok_or_else(|| Error::not_found(format!("no file id {file}")))?;
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "no-store")], png).into_response())
}
