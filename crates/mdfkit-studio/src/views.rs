//! The views. Each has a permalink and a `.json` twin (the same path ending in `.json`), both
//! built from one [`View`] by the library call that answers it, run off the async threads:
//!
//! | path                         | what                                                        |
//! |------------------------------|-------------------------------------------------------------|
//! | `/`, `/overview.json`        | `mdfkit info`: versions, options, files, backup set; badges |
//! | `/tables`, `/tables.json`    | schemas → tables and other objects; JSON = `mdfkit tables`  |
//! | `/table/dbo.T`               | DDL, columns and their storage, indexes, allocation units   |
//! | `/rows/dbo.T?after=1:2:3`    | 100 rows after a scan position (keyset, never OFFSET)       |
//! | `/page/1:153`                | header, verdict, slots, the 8,192 bytes by structure        |
//! | `/record/1:153:4`            | one record's bytes per column with names, types and values  |
//! | `/map`, `/map/1.png`         | one cell per page of each file, by page type; click → page   |
//! | `/download/dbo.T.parquet`    | the table as `mdfkit export` writes it (csv, jsonl, arrows)  |

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
use mdfkit::page::{PageId, PAGE_SIZE};
use mdfkit::scan::{Flow, ScanPosition};
use mdfkit::value::Value as SqlValue;
use mdfkit::{Error, ErrorKind};
use serde_json::{json, Value};

use crate::html::{self, a, esc, link, text, url, Cell};
use crate::json::json_object;
use crate::Studio;

/// Rows a rows view shows at a time.
pub const ROWS_PER_PAGE: u64 = 100;

type Shared = Arc<Studio>;

/// What a view answers, as HTML and as JSON.
pub struct View {
    title: String,
    json: Value,
    body: String,
    cli: String,
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
        .route("/rows/{name}", get(rows))
        .route("/page/{id}", get(page))
        .route("/record/{id}", get(record))
        .route("/download/{name}", get(crate::download::download))
        .route("/map", get(map))
        .route("/map.json", get(map_json))
        .route("/map/{file}", get(map_png))
        .route("/static/studio.css", get(|| async { ([(header::CONTENT_TYPE, "text/css")], html::STYLE) }))
        // Browsers ask for it on their own: nothing to show, and no 404 in the console.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/static/studio.js", get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], html::SCRIPT) }))
}

/// Runs a view's library work on the blocking pool and renders it.
async fn answer(
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
        let page = html::page(studio.db.name(), &view.title, &json_link, &view.cli, &view.body);
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
    })
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

/// `name.json` → (`name`, true).
fn twin(name: &str) -> (String, bool) {
    match name.strip_suffix(".json") {
        Some(base) => (base.to_string(), true),
        None => (name.to_string(), false),
    }
}

fn find_table(studio: &Studio, name: &str) -> mdfkit::Result<TableInfo> {
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
            let kind = match u.kind {
                1 => "IN_ROW_DATA",
                2 => "LOB_DATA",
                3 => "ROW_OVERFLOW_DATA",
                _ => "unknown",
            };
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

// ---- rows ----

async fn rows(
    State(s): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Failure> {
    let (name, json_only) = twin(&name);
    let after = q.get("after").map(|a| a.parse::<ScanPosition>()).transpose()?;
    let ghosts = q.get("ghosts").is_some_and(|g| g == "1");
    let mut link = format!("/rows/{}.json", url(&name));
    let mut sep = '?';
    if let Some(a) = after {
        let _ = write!(link, "{sep}after={a}");
        sep = '&';
    }
    if ghosts {
        let _ = write!(link, "{sep}ghosts=1");
    }
    answer(s, json_only, link, move |s| rows_view(s, &name, after, ghosts)).await
}

/// Up to [`ROWS_PER_PAGE`] rows after `after`, with the position to continue from.
fn rows_view(s: &Studio, name: &str, after: Option<ScanPosition>, ghosts: bool) -> mdfkit::Result<View> {
    let t = find_table(s, name)?;
    let reader = s.db.reader();
    let units = &s.db.catalog().base().allocation_units;
    // The decoder of the partition owning each page (a table's partitions can differ in layout).
    let mut decoders: Vec<(i64, mdfkit::rows::RowDecoder)> = Vec::new();
    for p in &t.partitions {
        if let Some(u) = units.iter().find(|u| u.owner_id == p.partition_id && u.kind == 1) {
            decoders.push((u.id, s.db.row_decoder(&t, p.partition_id, None)?));
        }
    }
    let columns = decoders.first().map(|(_, d)| d.column_names()).unwrap_or_default();
    let mut current: Option<(PageId, usize)> = None;
    let mut values = Vec::new();
    let mut out: Vec<(Vec<SqlValue>, mdfkit::scan::RowLocation)> = Vec::new();
    let mut last = None;
    s.db.scan(&t).include_ghosts(ghosts).limit(Some(ROWS_PER_PAGE)).records_after(
        after,
        |record, location, position| {
            if current.is_none_or(|(p, _)| p != location.page) {
                let page = reader.read(location.page)?;
                let at = decoders.iter().position(|(u, _)| page.header().belongs_to(*u)).unwrap_or(0);
                current = Some((location.page, at));
            }
            let decoder = &decoders[current.map_or(0, |c| c.1)].1;
            decoder.decode(record, &mut values)?;
            out.push((values.clone(), location));
            last = Some(position);
            Ok(Flow::Continue)
        },
    )?;
    let next = if out.len() as u64 == ROWS_PER_PAGE { last } else { None };
    let base = format!("/rows/{}", url(&t.qualified_name()));
    let ghost_q = if ghosts { "&ghosts=1" } else { "" };
    let mut body = format!("<p>{} rows in the catalog. ", t.rows());
    body.push_str(&if ghosts {
        a(&base, "hide deleted rows")
    } else {
        a(&format!("{base}?ghosts=1"), "show deleted (ghost) rows")
    });
    body.push_str("</p><p class=\"pager\">");
    body.push_str(&a(&format!("{base}{}", if ghosts { "?ghosts=1" } else { "" }), "first"));
    if let Some(n) = next {
        body.push_str(&a(&format!("{base}?after={n}{ghost_q}"), "next 100"));
    }
    body.push_str("</p>");
    let mut headers: Vec<&str> = vec!["page:slot"];
    if ghosts {
        headers.push("deleted");
    }
    headers.extend(columns.iter().map(String::as_str));
    let mut table = String::from("<table class=\"rows\"><thead><tr>");
    for h in &headers {
        let _ = write!(table, "<th>{}</th>", esc(h));
    }
    table.push_str("</tr></thead><tbody>");
    for (row, location) in &out {
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
            } else {
                let _ = write!(table, "<td>{}</td>", esc(&v.to_string()));
            }
        }
        table.push_str("</tr>");
    }
    table.push_str("</tbody></table>");
    body.push_str(&table);
    let json = json!({
        "table": t.qualified_name(),
        "rows_in_catalog": t.rows(),
        "columns": columns,
        "rows": out.iter().map(|(r, _)| json_object(&columns, r)).collect::<Vec<_>>(),
        "locations": out.iter().map(|(_, l)| format!("{}:{}", l.page, l.slot)).collect::<Vec<_>>(),
        "ghost": out.iter().map(|(_, l)| l.ghost).collect::<Vec<_>>(),
        "after": after.map(|a| a.to_string()),
        "next_after": next.map(|n| n.to_string()),
    });
    let cli = s.cli("cat", &format!("{} --with-location", crate::shell_word(&t.qualified_name())));
    Ok(View { title: format!("{} rows", t.qualified_name()), json, body, cli })
}

// ---- page and record ----

async fn page(State(s): State<Shared>, Path(id): Path<String>) -> Result<Response, Failure> {
    let (id, json_only) = twin(&id);
    let page = anatomy::parse_page_id(&id)?;
    answer(s, json_only, format!("/page/{page}.json"), move |s| page_view(s, page)).await
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
    for r in &p.records {
        let mut columns = 0;
        for (i, f) in r.fields.iter().enumerate() {
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

fn page_view(s: &Studio, id: PageId) -> mdfkit::Result<View> {
    let p = anatomy::read_database_page(&s.db, id)?;
    let map = byte_map(&p);
    let mut body = format!("<p>Verdict: {}", verdict_badge(&p));
    if let Some(owner) = &p.owner {
        let _ = write!(body, " · owner {}", a(&format!("/table/{}", url(owner)), owner));
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
                text(r.error.clone().unwrap_or_default()),
            ]
        })
        .collect();
    body.push_str(&html::table(&["slot", "offset", "length", "record type", "note"], &rows, "slots"));
    body.push_str("<h2>Bytes</h2>");
    body.push_str(&legend());
    body.push_str(&hex_view(&p, &map, 0..PAGE_SIZE));
    let json = crate::json::page(&p);
    let cli = s.cli("page", &id.to_string());
    Ok(View { title: format!("Page {id}"), json, body, cli })
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
    if let Some(e) = &r.error {
        let _ = write!(body, "<p class=\"badge warn\">{}</p>", esc(e));
    }
    if let Some((page, slot)) = r.forwarded_to {
        let _ = write!(body, "<p>Forwarded to {}</p>", a(&format!("/record/{page}:{slot}"), &format!("{page}:{slot}")));
    }
    body.push_str(&hex_view(&p, &map, r.offset..r.offset + r.len));
    body.push_str("<h2>Parts</h2>");
    body.push_str(&fields_table(&p, &r.fields, Some(r), &format!("s{}f", r.slot), r.offset));
    if !r.columns.is_empty() {
        body.push_str("<h2>Columns</h2><table class=\"columns\"><thead><tr><th>column</th><th>type</th><th>storage</th><th>null bit</th><th>offset</th><th>length</th><th>value</th></tr></thead><tbody>");
        for (c, layout) in r.columns.iter().zip(&p.columns) {
            // The field holding the column's bytes, for highlighting.
            let field =
                c.span.and_then(|(o, _)| r.fields.iter().position(|f| f.offset <= o && o < f.offset + f.len.max(1)));
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
    let mut json = crate::json::record(&p, r);
    json["page"] = Value::String(at.page.to_string());
    json["bytes"] = Value::String(p.bytes[r.offset..r.offset + r.len].iter().map(|b| format!("{b:02x}")).collect());
    let cli = s.cli("page", &at.page.to_string());
    Ok(View { title: format!("Record {at}"), json, body, cli })
}

// ---- allocation map ----

async fn map(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, false, "/map.json".into(), map_view).await
}

async fn map_json(State(s): State<Shared>) -> Result<Response, Failure> {
    answer(s, true, String::new(), map_view).await
}

fn map_view(s: &Studio) -> mdfkit::Result<View> {
    use crate::map::{AllocationMap, Kind, CELL, COLUMNS};
    let m = s.map.get_or_init(|| AllocationMap::read(&s.db));
    let counts = m.counts();
    let mut body = String::from("<p class=\"legend\">");
    for kind in Kind::ALL {
        let [r, g, b] = kind.rgb();
        let _ = write!(
            body,
            "<span class=\"swatch k-{r:02x}{g:02x}{b:02x}\">&nbsp;&nbsp;</span> {} ({}) ",
            esc(kind.name()),
            counts.get(&kind).copied().unwrap_or(0)
        );
    }
    body.push_str("</p>");
    for (file, cells) in &m.files {
        let _ = write!(
            body,
            "<h2>File {file}: {} pages</h2><img class=\"map\" src=\"/map/{file}.png\" alt=\"allocation map of file {file}\" \
             data-file=\"{file}\" data-columns=\"{COLUMNS}\" data-cell=\"{CELL}\" width=\"{}\">",
            cells.len(),
            COLUMNS * CELL
        );
    }
    let json = json!({
        "columns": COLUMNS,
        "cell_pixels": CELL,
        "counts": counts.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "files": m.files.iter().map(|(f, cells)| json!({
            "file_id": f,
            "pages": cells.len(),
            "kinds": cells.iter().map(|k| Kind::ALL.iter().position(|a| a == k).unwrap_or(0)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "kind_names": Kind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>(),
    });
    Ok(View { title: "Allocation map".into(), json, body, cli: s.cli("pages", "") })
}

async fn map_png(State(s): State<Shared>, Path(file): Path<String>) -> Result<Response, Failure> {
    let file: u16 = file
        .strip_suffix(".png")
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| Error::not_found(format!("{file}: ask for FILE_ID.png")))?;
    let studio = s.clone();
    let png = tokio::task::spawn_blocking(move || {
        studio.map.get_or_init(|| crate::map::AllocationMap::read(&studio.db)).png(file)
    })
    .await
    .map_err(|e| Failure(Error::new(ErrorKind::Io, format!("the map failed: {e}"))))?
    .ok_or_else(|| Error::not_found(format!("no file id {file}")))?;
    Ok(([(header::CONTENT_TYPE, "image/png")], png).into_response())
}
