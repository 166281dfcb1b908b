//! The studio's server without a browser: requests built in code and answered by the router
//! (`tower::ServiceExt::oneshot`), on the forged sample database (`mdfkit demo`'s shop). Every
//! security rule, and every `.json` twin against the library's own answers.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use mdfkit::scan::Flow;
use mdfkit_studio::json::json_object;
use mdfkit_studio::{router, Studio};
use serde_json::{json, Value};
use tower::ServiceExt;

/// `name` in this process's scratch folder under the build's own temporary folder (not the
/// system's). The folders earlier runs left there, an hour old or more, are removed first: a
/// test process cannot clean up after its last test.
fn scratch(name: &str) -> std::path::PathBuf {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let stale = |e: &std::fs::DirEntry| {
            e.file_name().to_string_lossy().starts_with("studio-tests-")
                && e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok())
                    > Some(std::time::Duration::from_secs(3600))
        };
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten().filter(stale) {
            std::fs::remove_dir_all(entry.path()).ok();
        }
        let dir = root.join(format!("studio-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .join(name)
}

/// The forged shop database, written once for all tests.
fn shop() -> &'static std::path::PathBuf {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("shop");
        mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::shop(), &dir).unwrap();
        dir.join("shop.mdf")
    })
}

fn studio() -> Arc<Studio> {
    Arc::new(Studio::open(vec![shop().clone()], None).unwrap())
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap()
}

/// One request: `method path`, with Host `host` and the session cookie when `cookie`.
fn request(studio: &Arc<Studio>, method: &str, path: &str, host: Option<&str>, cookie: bool) -> Answer {
    let mut r = Request::builder().method(method).uri(path);
    if let Some(h) = host {
        r = r.header(header::HOST, h);
    }
    if cookie {
        r = r.header(header::COOKIE, format!("other=1; {}={}", mdfkit_studio::security::COOKIE, studio.token));
    }
    let req = r.body(Body::empty()).unwrap();
    runtime().block_on(async {
        let res = router(studio.clone()).oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let body = axum::body::to_bytes(res.into_body(), 1 << 26).await.unwrap().to_vec();
        Answer { status, headers, body }
    })
}

fn get(studio: &Arc<Studio>, path: &str) -> Answer {
    request(studio, "GET", path, Some("127.0.0.1:5000"), true)
}

#[test]
fn the_token_becomes_an_http_only_strict_cookie_and_leaves_the_url() {
    let s = studio();
    let a =
        request(&s, "GET", &format!("/rows/dbo.Orders?after=1:2:3&token={}", s.token), Some("127.0.0.1:5000"), false);
    assert_eq!(a.status, StatusCode::SEE_OTHER);
    assert_eq!(a.headers[header::LOCATION], "/rows/dbo.Orders?after=1:2:3");
    let cookie = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with(&format!("mdfkit_studio={};", s.token)), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"), "{cookie}");
    let wrong = request(&s, "GET", "/?token=0000", Some("127.0.0.1:5000"), false);
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());
    assert_eq!(request(&s, "GET", "/", Some("127.0.0.1:5000"), false).status, StatusCode::UNAUTHORIZED);
    assert_eq!(request(&s, "GET", "/tables.json", Some("localhost:5000"), false).status, StatusCode::UNAUTHORIZED);
    assert_eq!(request(&s, "GET", "/", Some("127.0.0.1:5000"), true).status, StatusCode::OK);
    assert_eq!(s.token.len(), 64, "256 random bits");
    assert_ne!(s.token, studio().token, "a new token every start");
}

#[test]
fn requests_naming_another_host_are_refused() {
    let s = studio();
    for host in ["evil.example", "evil.example:5000", "127.0.0.1.evil.example", "10.1.2.3:5000"] {
        assert_eq!(request(&s, "GET", "/tables.json", Some(host), true).status, StatusCode::FORBIDDEN, "{host}");
        let with_token = format!("/?token={}", s.token);
        assert_eq!(request(&s, "GET", &with_token, Some(host), false).status, StatusCode::FORBIDDEN, "{host}");
    }
    assert_eq!(request(&s, "GET", "/tables.json", None, true).status, StatusCode::FORBIDDEN, "no Host at all");
    for host in ["localhost:5000", "[::1]:5000", "127.0.0.1"] {
        assert_eq!(request(&s, "GET", "/tables.json", Some(host), true).status, StatusCode::OK, "{host}");
    }
    let mut open = Studio::open(vec![shop().clone()], None).unwrap();
    open.allow_remote = true;
    let open = Arc::new(open);
    assert_eq!(request(&open, "GET", "/tables.json", Some("studio.lan:5000"), true).status, StatusCode::OK);
    assert_eq!(request(&open, "GET", "/tables.json", Some("studio.lan:5000"), false).status, StatusCode::UNAUTHORIZED);
}

#[test]
fn only_get_and_head_are_answered() {
    let s = studio();
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let a = request(&s, method, "/tables.json", Some("127.0.0.1:5000"), true);
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(a.headers[header::ALLOW], "GET, HEAD");
    }
    assert_eq!(request(&s, "HEAD", "/tables.json", Some("127.0.0.1:5000"), true).status, StatusCode::OK);
}

#[test]
fn every_answer_has_a_strict_csp_and_no_cors_header() {
    let s = studio();
    let answers = [
        get(&s, "/"),
        get(&s, "/tables.json"),
        get(&s, "/page/1:1"),
        get(&s, "/static/studio.js"),
        get(&s, "/table/dbo.NoSuchTable"),
        request(&s, "GET", "/", Some("evil.example"), true),
        request(&s, "POST", "/", Some("127.0.0.1"), true),
        request(&s, "GET", "/", Some("127.0.0.1"), false),
    ];
    for a in &answers {
        let csp = a.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.starts_with("default-src 'none'; script-src 'self';") && !csp.contains("unsafe"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("connect-src 'self'"), "{csp}");
        assert_eq!(a.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(a.headers[header::CACHE_CONTROL], "no-store");
        assert!(a.headers.keys().all(|k| !k.as_str().starts_with("access-control-")), "{:?}", a.headers);
    }
    // The pages load nothing from elsewhere: every src and href is a path on the studio.
    let page = get(&s, "/page/1:48").text();
    for attr in ["src=\"", "href=\""] {
        for part in page.split(attr).skip(1) {
            assert!(part.starts_with('/'), "{attr}{}", &part[..part.len().min(40)]);
        }
    }
}

#[test]
fn tables_json_is_the_table_listing() {
    let s = studio();
    let columns: Vec<String> =
        mdfkit::catalog::model::TableInfo::LISTING_COLUMNS.iter().map(|c| c.to_string()).collect();
    let expected: Vec<Value> =
        s.db.catalog().tables(false).iter().map(|t| json_object(&columns, &t.listing_row())).collect();
    let got = get(&s, "/tables.json").json();
    assert_eq!(got, Value::Array(expected));
    assert_eq!(got.as_array().unwrap().len(), 4, "the shop's four tables");
    assert_eq!(got[1]["table"], "dbo.Orders");
    assert_eq!(got[1]["rows"], 5000, "the forge wrote 5,000 orders");
    let html = get(&s, "/tables").text();
    assert!(html.contains("href=\"/table/dbo.Orders\"") && html.contains("href=\"/rows/sales.EventLog\""), "{html}");
}

#[test]
fn rows_paged_by_position_to_the_end_are_the_whole_scan() {
    let s = studio();
    for table in s.db.catalog().tables(false) {
        let name = table.qualified_name();
        for ghosts in [false, true] {
            let expected = scanned(&s, &table, ghosts);
            let mut got = Vec::new();
            let mut path = format!("/rows/{name}.json{}", if ghosts { "?ghosts=1" } else { "" });
            let mut requests = 0;
            loop {
                let page = get(&s, &path).json();
                requests += 1;
                let rows = page["rows"].as_array().unwrap();
                assert!(rows.len() <= 100);
                for (row, at) in rows.iter().zip(page["locations"].as_array().unwrap()) {
                    got.push((row.clone(), at.as_str().unwrap().to_string()));
                }
                assert_eq!(page["rows_in_catalog"], table.rows());
                match page["next_after"].as_str() {
                    Some(after) => {
                        path = format!("/rows/{name}.json?after={after}{}", if ghosts { "&ghosts=1" } else { "" })
                    }
                    None => break,
                }
            }
            assert_eq!(got.len(), expected.len(), "{name}");
            assert!(got == expected, "{name} ghosts={ghosts}: paged rows differ from the scan");
            assert!(requests >= expected.len() / 100, "{name}");
        }
    }
    // The HTML view links each row's page:slot to its record and the next 100 by position.
    let html = get(&s, "/rows/dbo.Orders").text();
    assert!(
        html.contains("href=\"/record/1:") && html.contains("href=\"/page/1:") && html.contains("?after=1:"),
        "{html}"
    );
    assert_eq!(get(&s, "/rows/dbo.Orders?after=nonsense").status, StatusCode::NOT_FOUND);
}

#[test]
fn page_and_record_json_are_the_anatomy() {
    let s = studio();
    let listed = mdfkit::recovery::list_pages(s.db.reader().source(), |p| p.page_type == mdfkit::page::PageType::Data);
    assert!(listed.len() > 50);
    for summary in listed.iter().step_by(9) {
        let id = summary.id;
        let got = get(&s, &format!("/page/{id}.json")).json();
        let expected = mdfkit::anatomy::read_database_page(&s.db, id).unwrap().to_json();
        assert_eq!(got, expected, "{id}");
        assert_eq!(got["page"], id.to_string());
        assert_eq!(got["type"], summary.page_type.name().as_ref());
        assert_eq!(got["slots"], summary.slots);
        assert_eq!(got["free_bytes"], summary.free_bytes);
        assert_eq!(got["prev"], summary.prev.to_string());
        assert_eq!(got["next"], summary.next.to_string());
        assert_eq!(got["allocation_unit"], summary.allocation_unit_id);
        assert_eq!(got["verdict"], summary.status);
        if summary.slots == 0 {
            continue;
        }
        let record = get(&s, &format!("/record/{id}:0.json")).json();
        let parts: u64 = record["fields"].as_array().unwrap().iter().map(|f| f["length"].as_u64().unwrap()).sum();
        assert_eq!(parts, record["length"].as_u64().unwrap(), "{id} slot 0");
        assert_eq!(record["bytes"].as_str().unwrap().len() as u64, 2 * parts);
    }
    // A record's column values are the row's values in the rows view.
    let rows = get(&s, "/rows/dbo.Customers.json").json();
    let at = rows["locations"][5].as_str().unwrap();
    let record = get(&s, &format!("/record/{at}.json")).json();
    for column in record["columns"].as_array().unwrap() {
        let cell = &rows["rows"][5][column["name"].as_str().unwrap()];
        let shown = if column["is_null"] == true { Value::Null } else { column["value"].clone() };
        let cell = if cell.is_number() { Value::String(cell.to_string()) } else { cell.clone() };
        assert_eq!(shown, cell, "{at} {}", column["name"]);
    }
    let html = get(&s, &format!("/record/{at}")).text();
    assert!(html.contains("class=\"p-fixed-column c1\"") && html.contains("CustomerID"), "{html}");
    // The page's owner: the forge clusters dbo.Customers on its key (index 1, PK_Customers), one
    // partition, in-row data.
    let page = at.rsplit_once(':').unwrap().0;
    let got = get(&s, &format!("/page/{page}.json")).json();
    let owner = &got["owner_unit"];
    let named = (&owner["object"], &owner["index_id"], &owner["index"], &owner["partition_number"], &owner["kind"]);
    assert_eq!(named, (&json!("dbo.Customers"), &json!(1), &json!("PK_Customers"), &json!(1), &json!("IN_ROW_DATA")));
    assert_eq!(owner["allocation_unit"], got["allocation_unit"], "{owner}");
    let html = get(&s, &format!("/page/{page}")).text();
    let named =
        "owner <a href=\"/table/dbo.Customers\">dbo.Customers</a>, index 1 PK_Customers, partition 1, IN_ROW_DATA";
    assert!(html.contains(named), "{html}");
    assert_eq!(get(&s, "/record/1:48:9999.json").status, StatusCode::NOT_FOUND);
    assert_eq!(get(&s, "/page/banana").status, StatusCode::NOT_FOUND);
}

#[test]
fn overview_and_table_json_are_the_library_answers() {
    let s = studio();
    let info = s.db.info().unwrap();
    let o = get(&s, "/overview.json").json();
    assert_eq!(o["database"], info.name);
    assert_eq!(o["version"], info.version);
    assert_eq!(o["collation"], info.collation);
    assert_eq!(o["files"].as_array().unwrap().len(), info.files.rows.len());
    let html = get(&s, "/").text();
    assert!(html.contains("mdfkit info ") && html.contains(&info.name), "{html}");
    let t = get(&s, "/table/dbo.Orders.json").json();
    let table = s.db.catalog().find_table("dbo.Orders").unwrap();
    assert_eq!(t["ddl"], s.db.catalog().create_table_sql(&table));
    let names: Vec<String> = s.db.catalog().columns(table.object_id).into_iter().map(|c| c.name).collect();
    let got: Vec<&str> = t["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(got, names);
    let file = shop().to_str().unwrap();
    let footer = get(&s, "/table/dbo.Orders").text();
    assert!(footer.contains(&format!("<code>mdfkit schema {file} dbo.Orders</code>")), "{footer}");
    let root = t["allocation_units"][0]["root_page"].as_str().unwrap();
    assert!(get(&s, "/table/dbo.Orders").text().contains(&format!("href=\"/page/{root}\"")));
    assert_eq!(get(&s, "/table/dbo.NoSuchTable").status, StatusCode::NOT_FOUND);
}

#[test]
fn downloads_are_the_bytes_export_writes() {
    let s = studio();
    let dir = scratch("export");
    std::fs::create_dir_all(&dir).unwrap();
    let formats = [
        ("csv", mdfkit::export::ExportFormat::Csv),
        ("jsonl", mdfkit::export::ExportFormat::Jsonl),
        ("arrows", mdfkit::export::ExportFormat::Arrow),
        ("parquet", mdfkit::export::ExportFormat::Parquet),
    ];
    // Not sales.EventLog: its datetime2(7) values past 2262 overflow the Arrow export (a library
    // bug of its own, reported: `mdfkit export --table sales.EventLog --format parquet` panics).
    for table in ["dbo.Products", "dbo.Customers"] {
        let info = s.db.catalog().find_table(table).unwrap();
        for (ext, format) in formats {
            let a = get(&s, &format!("/download/{table}.{ext}"));
            assert_eq!(a.status, StatusCode::OK, "{table}.{ext}");
            let name = mdfkit::export::output_name(&info, format);
            assert_eq!(a.headers[header::CONTENT_DISPOSITION], format!("attachment; filename=\"{name}\""));
            let path = dir.join(&name);
            let out = Box::new(mdfkit::export::LocalOutput::create(&path).unwrap());
            // `mdfkit export`'s default: one thread a core.
            let options = mdfkit::export::ExportOptions { threads: mdfkit::export::all_cores(), ..Default::default() };
            mdfkit::export::export_table(&s.db, &info, format, out, &options, |_| {}).unwrap();
            let expected = std::fs::read(&path).unwrap();
            assert!(expected.len() > 1000, "{name}");
            assert!(a.body == expected, "{name}: {} bytes downloaded, {} exported", a.body.len(), expected.len());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(get(&s, "/download/dbo.Products.xlsx").status, StatusCode::NOT_FOUND);
    assert_eq!(get(&s, "/download/dbo.Nothing.csv").status, StatusCode::NOT_FOUND);
}

#[test]
fn a_download_that_fails_midway_does_not_end_as_if_whole() {
    // A copy of the shop with one byte of page 1:49 (dbo.Customers' second page) flipped: its
    // checksum no longer matches, and the export stops there.
    let damaged = scratch("damaged.mdf");
    let mut bytes = std::fs::read(shop()).unwrap();
    bytes[49 * 8192 + 4000] ^= 0xff;
    std::fs::write(&damaged, bytes).unwrap();
    let s = Arc::new(Studio::open(vec![damaged.clone()], None).unwrap());
    for ext in ["csv", "parquet"] {
        let req = Request::builder()
            .uri(format!("/download/dbo.Customers.{ext}"))
            .header(header::HOST, "127.0.0.1")
            .header(header::COOKIE, format!("{}={}", mdfkit_studio::security::COOKIE, s.token))
            .body(Body::empty())
            .unwrap();
        let cut = runtime().block_on(async {
            let res = router(s.clone()).oneshot(req).await.unwrap();
            axum::body::to_bytes(res.into_body(), 1 << 26).await
        });
        let err = cut.expect_err("the body ended cleanly").to_string();
        assert!(err.contains("1:49") || err.contains("checksum"), "{ext}: {err}");
    }
    let page = get(&s, "/page/1:49.json").json();
    assert!(page["verdict"].as_str().unwrap().starts_with("checksum mismatch") && page["damaged"] == true);
    // The map paints it red, its neighbour as the data page it is.
    let png = get(&s, "/map/1.png").body;
    let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let pixel = |page: u32| {
        let (cell, columns) = (mdfkit_studio::map::CELL, mdfkit_studio::map::COLUMNS);
        let at = ((((page / columns) * cell) * info.width + (page % columns) * cell) * 3) as usize;
        [pixels[at], pixels[at + 1], pixels[at + 2]]
    };
    assert_eq!(pixel(49), mdfkit_studio::map::Kind::Damaged.rgb());
    assert_eq!(pixel(48), mdfkit_studio::map::Kind::Data.rgb());
    std::fs::remove_file(&damaged).unwrap();
}

#[test]
fn the_allocation_map_paints_each_page_by_its_header() {
    let s = studio();
    let pixel = map_pixels(&s, 1, "type");
    use mdfkit_studio::map::Kind;
    // Page 1:1 is always the first PFS page, 1:0 the file header, 1:9 the boot page.
    assert_eq!(pixel(1), Kind::Allocation.rgb());
    assert_eq!(pixel(0), Kind::System.rgb());
    assert_eq!(pixel(9), Kind::System.rgb());
    let listed = mdfkit::recovery::list_pages(s.db.reader().source(), |_| true);
    for p in listed.iter().filter(|p| p.id.file == 1) {
        let want = match p.page_type {
            mdfkit::page::PageType::Data => Kind::Data,
            mdfkit::page::PageType::Index => Kind::Index,
            mdfkit::page::PageType::TextMix | mdfkit::page::PageType::TextTree => Kind::Lob,
            _ => continue,
        };
        assert_eq!(pixel(p.id.page), want.rgb(), "page {}", p.id);
    }
    let json = get(&s, "/map.json").json();
    assert_eq!(
        legend_entry(&json, Kind::Data.name())["count"],
        listed.iter().filter(|p| p.page_type == mdfkit::page::PageType::Data).count()
    );
    assert!(get(&s, "/map").text().contains("src=\"/map/1.png?mode=type\""));
    assert_eq!(get(&s, "/map/7.png").status, StatusCode::NOT_FOUND);
    assert_eq!(get(&s, "/map?mode=nope").status, StatusCode::NOT_FOUND);
}

/// The colour of each page's cell in file `file`'s PNG in `mode`.
fn map_pixels(s: &Arc<Studio>, file: u16, mode: &str) -> impl Fn(u32) -> [u8; 3] {
    let png = get(s, &format!("/map/{file}.png?mode={mode}"));
    assert_eq!(png.status, StatusCode::OK);
    assert_eq!(png.headers[header::CONTENT_TYPE], "image/png");
    let mut reader = png::Decoder::new(std::io::Cursor::new(png.body)).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let width = reader.next_frame(&mut pixels).unwrap().width;
    move |page: u32| {
        let (cell, columns) = (mdfkit_studio::map::CELL, mdfkit_studio::map::COLUMNS);
        let (x, y) = ((page % columns) * cell, (page / columns) * cell);
        let at = ((y * width + x) * 3) as usize;
        [pixels[at], pixels[at + 1], pixels[at + 2]]
    }
}

/// The legend entry of a map JSON labelled `label`.
fn legend_entry<'a>(map: &'a Value, label: &str) -> &'a Value {
    map["legend"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == label)
        .unwrap_or_else(|| panic!("no {label} in {map}"))
}

fn hex_rgb(rgb: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2])
}

#[test]
fn map_modes_paint_owners_fullness_and_ghosts_from_the_headers_and_pfs() {
    let s = studio();
    let listed = mdfkit::recovery::list_pages(s.db.reader().source(), |_| true);
    let units = &s.db.catalog().base().allocation_units;
    let owner = get(&s, "/map.json?mode=owner").json();
    let pixel = map_pixels(&s, 1, "owner");
    for table in s.db.catalog().tables(false) {
        let ids: Vec<i64> = units
            .iter()
            .filter(|u| table.partitions.iter().any(|p| p.partition_id == u.owner_id))
            .map(|u| u.id)
            .collect();
        let pages: Vec<u32> = listed
            .iter()
            .filter(|p| p.id.file == 1 && ids.contains(&p.allocation_unit_id))
            .map(|p| p.id.page)
            .collect();
        let entry = legend_entry(&owner, &table.qualified_name());
        assert_eq!(entry["count"], pages.len(), "{}", table.qualified_name());
        for p in pages {
            assert_eq!(hex_rgb(pixel(p)), entry["rgb"].as_str().unwrap(), "page 1:{p} of {}", table.qualified_name());
        }
    }
    let html = get(&s, "/map?mode=owner").text();
    assert!(html.contains("dbo.Orders (") && html.contains("src=\"/map/1.png?mode=owner\""), "{html}");
    // Fullness and ghosts: the PFS page's byte of each page, through the page view's JSON.
    let pfs = get(&s, "/page/1:1.json").json();
    let fullness = get(&s, "/map.json?mode=fullness").json();
    let ghosts = get(&s, "/map.json?mode=ghosts").json();
    let cells = |m: &Value| {
        m["files"][0]["cells"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap() as usize).collect::<Vec<_>>()
    };
    let (full_cells, ghost_cells) = (cells(&fullness), cells(&ghosts));
    let mut ghost_pages = 0;
    for run in pfs["allocation"]["runs"].as_array().unwrap() {
        for n in run_pages(run).filter(|n| (*n as usize) < full_cells.len()) {
            let label =
                |m: &Value, cells: &[usize]| m["legend"][cells[n as usize]]["label"].as_str().unwrap().to_string();
            let want = if run["allocated"] == true {
                format!("allocated, {}", run["fullness"].as_str().unwrap())
            } else {
                "not allocated".into()
            };
            assert_eq!(label(&fullness, &full_cells), want, "page 1:{n}");
            if run["ghosts"] == true {
                assert_eq!(label(&ghosts, &ghost_cells), "ghost records", "page 1:{n}");
                ghost_pages += 1;
            }
        }
    }
    assert!(ghost_pages > 0, "sales.EventLog holds ghosts (the forge deletes every 10th row)");
}

#[test]
fn check_runs_in_the_background_and_paints_the_damage() {
    // The forged shop with one byte of a dbo.Customers data page changed.
    let dir = scratch("damaged");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shop.mdf");
    std::fs::copy(shop(), &file).unwrap();
    let s0 = studio();
    let customers = s0.db.catalog().find_table("dbo.Customers").unwrap();
    let mut page = None;
    s0.db
        .scan(&customers)
        .limit(Some(1))
        .records(|_, l| {
            page = Some(l.page);
            Ok(Flow::Continue)
        })
        .unwrap();
    let page = page.unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[page.page as usize * 8192 + 4000] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let s = Arc::new(Studio::open(vec![file], None).unwrap());
    let before = get(&s, "/map.json?mode=damage").json();
    assert_eq!(before["check"]["problems"], Value::Null);
    assert!(get(&s, "/map?mode=damage").text().contains("id=\"run-check\""));
    assert_eq!(get(&s, "/map?mode=damage&check=1").status, StatusCode::OK);
    let mut done = Value::Null;
    for _ in 0..600 {
        done = get(&s, "/map.json?mode=damage").json();
        if done["check"]["running"] == false && done["check"]["problems"].is_array() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let problems = done["check"]["problems"].as_array().expect("check finished");
    assert!(problems.iter().any(|p| p["page"] == page.to_string()), "{problems:?}");
    assert_eq!(done["check"]["pages_done"], done["check"]["pages_total"]);
    let pixel = map_pixels(&s, 1, "damage");
    assert_eq!(hex_rgb(pixel(page.page)), hex_rgb(mdfkit_studio::map::Kind::Damaged.rgb()), "the damaged page is red");
    assert!(legend_entry(&done, "checked, no problem")["count"].as_u64().unwrap() > 10);
    let html = get(&s, "/map?mode=damage").text();
    assert!(html.contains(&format!("href=\"/page/{page}\"")) && html.contains("problems found"), "{html}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The studio on the corpus' chef-zilla data file (SQL Server's own), or `None` after a loud skip
/// where the corpus is missing (never under CI).
/// The corpus folder, or `None` (said loudly; CI must have it) when it is not there.
fn corpus() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("MDFKIT_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    if !dir.join("MANIFEST.tsv").is_file() {
        assert!(std::env::var_os("CI").is_none(), "corpus not found at {}: CI must run this test", dir.display());
        eprintln!("\n*** SKIPPED: corpus not found at {} (set MDFKIT_CORPUS) ***\n", dir.display());
        return None;
    }
    Some(dir)
}

fn chef_zilla() -> Option<Arc<Studio>> {
    let file = corpus()?.join("mdf/sirratul-chef-zilla__app_data-2c9f8707-aspnet-chef-zilla-20200724080934.mdf");
    Some(Arc::new(Studio::open(vec![file], None).unwrap()))
}

#[test]
fn deleted_rows_show_on_demand_marked_in_words() {
    let Some(s) = chef_zilla() else { return };
    // dbo.Carts has no live row, only ghosts (the CLI test of `cat --include-ghosts` reads them).
    let live = get(&s, "/rows/dbo.Carts.json").json();
    assert_eq!(live["rows"].as_array().unwrap().len(), 0);
    let all = get(&s, "/rows/dbo.Carts.json?ghosts=1").json();
    let ghosts = all["ghost"].as_array().unwrap();
    assert!(!ghosts.is_empty() && ghosts.iter().all(|g| g == true));
    assert!(
        all["rows"].as_array().unwrap().iter().any(|r| r["CartID"] == 22 && r["ProductName"] == "Air Fryer Beef Chops"),
        "{all}"
    );
    let html = get(&s, "/rows/dbo.Carts?ghosts=1").text();
    assert!(html.contains("<th>deleted</th>") && html.contains("<td>deleted</td>") && html.contains("class=\"ghost\""));
}

/// Every row of `table` as the scan reads it: its JSON object and `page:slot`.
fn scanned(s: &Studio, table: &mdfkit::catalog::model::TableInfo, ghosts: bool) -> Vec<(Value, String)> {
    let mut expected = Vec::new();
    let decoder = s.db.row_decoder(table, table.partitions[0].partition_id, None).unwrap();
    let columns = decoder.column_names();
    let mut values = Vec::new();
    s.db.scan(table)
        .include_ghosts(ghosts)
        .records(|record, at| {
            decoder.decode(record, &mut values)?;
            expected.push((json_object(&columns, &values), format!("{}:{}", at.page, at.slot)));
            Ok(Flow::Continue)
        })
        .unwrap();
    expected
}

#[test]
fn rows_paged_back_from_the_last_are_the_whole_scan() {
    let s = studio();
    for table in s.db.catalog().tables(false) {
        let name = table.qualified_name();
        for ghosts in [false, true] {
            let expected = scanned(&s, &table, ghosts);
            let g = if ghosts { "&ghosts=1" } else { "" };
            let mut pages = Vec::new();
            let mut path = format!("/rows/{name}.json?before=end{g}");
            loop {
                let page = get(&s, &path).json();
                let rows: Vec<(Value, String)> = page["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .cloned()
                    .zip(page["locations"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()))
                    .collect();
                assert!(rows.len() <= 100);
                pages.push(rows);
                match page["previous_before"].as_str() {
                    Some(before) => path = format!("/rows/{name}.json?before={before}{g}"),
                    None => break,
                }
            }
            let got: Vec<(Value, String)> = pages.into_iter().rev().flatten().collect();
            assert_eq!(got.len(), expected.len(), "{name} ghosts={ghosts}");
            assert!(got == expected, "{name} ghosts={ghosts}: rows paged back from the end differ from the scan");
        }
    }
    // The last page of dbo.Orders ends with the forge's last order id (a sequence from 100,000).
    let last = get(&s, "/rows/dbo.Orders.json?before=end").json();
    assert_eq!(last["rows"].as_array().unwrap().len(), 100);
    assert_eq!(last["rows"][99]["OrderID"], 104_999);
    assert_eq!(last["next_after"], Value::Null, "nothing after the last row");
    // Its "previous 100" then "next 100" come back to the same rows.
    let before = last["previous_before"].as_str().unwrap();
    let previous = get(&s, &format!("/rows/dbo.Orders.json?before={before}")).json();
    assert_eq!(previous["rows"][99]["OrderID"], 104_899);
    let again = get(&s, &format!("/rows/dbo.Orders.json?after={}", previous["next_after"].as_str().unwrap())).json();
    assert_eq!(again["rows"], last["rows"]);
    let html = get(&s, "/rows/dbo.Orders").text();
    assert!(html.contains(">last</a>") && html.contains("?before=end"), "{html}");
    let html = get(&s, "/rows/dbo.Orders?before=end").text();
    assert!(html.contains(">previous 100</a>") && !html.contains(">next 100</a>"), "{html}");
    assert_eq!(get(&s, "/rows/dbo.Orders?before=1:2:3&after=1:2:3").status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[test]
fn filters_are_bounded_scans_that_continue_from_where_they_stopped() {
    let s = studio();
    // The forge numbers orders 100,000 to 104,999: 150 are below 100,150.
    let first = get(&s, "/rows/dbo.Orders.json?where=OrderID%3C100150").json();
    let ids = |page: &Value| {
        page["rows"].as_array().unwrap().iter().map(|r| r["OrderID"].as_i64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&first), (100_000..100_100).collect::<Vec<_>>());
    assert_eq!((first["stopped"].as_str(), first["examined"].as_u64()), (Some("rows"), Some(100)));
    let after = first["next_after"].as_str().unwrap();
    let rest = get(&s, &format!("/rows/dbo.Orders.json?where=OrderID%3C100150&after={after}")).json();
    assert_eq!(ids(&rest), (100_100..100_150).collect::<Vec<_>>());
    assert_eq!((rest["stopped"].as_str(), rest["examined"].as_u64()), (Some("end"), Some(4_900)));
    assert_eq!(rest["next_after"], Value::Null);
    let top = get(&s, "/rows/dbo.Orders.json?where=OrderID%3E104994").json();
    assert_eq!(ids(&top), (104_995..105_000).collect::<Vec<_>>());
    // Text: equal and contains, against the rows the scan reads (a heap with forwarded rows).
    let events = s.db.catalog().find_table("sales.EventLog").unwrap();
    let all = scanned(&s, &events, false);
    for (filter, keep) in [
        ("Level=ERROR", &(|r: &Value| r["Level"] == "ERROR") as &dyn Fn(&Value) -> bool),
        ("Level%20contains%20rr", &|r: &Value| r["Level"] == "ERROR"),
        ("Level%3EINFO", &|r: &Value| r["Level"].as_str().unwrap() > "INFO"),
    ] {
        let mut got = Vec::new();
        let mut path = format!("/rows/sales.EventLog.json?where={filter}");
        loop {
            let page = get(&s, &path).json();
            got.extend(page["locations"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()));
            match page["next_after"].as_str() {
                Some(after) => path = format!("/rows/sales.EventLog.json?where={filter}&after={after}"),
                None => break,
            }
        }
        let want: Vec<String> = all.iter().filter(|(r, _)| keep(r)).map(|(_, at)| at.clone()).collect();
        assert!(!want.is_empty() && got == want, "{filter}: {} rows, the scan has {}", got.len(), want.len());
    }
    let html = get(&s, "/rows/dbo.Orders?where=OrderID%3C100150").text();
    assert!(html.contains(">continue from here</a>") && html.contains("where=OrderID%3C100150"), "{html}");
    assert!(html.contains("id=\"filter-status\"") && !html.contains(">last</a>"), "{html}");
    assert_eq!(get(&s, "/rows/dbo.Orders.json?where=Nope=1").status, StatusCode::NOT_FOUND);
    assert_eq!(get(&s, "/rows/dbo.Orders.json?where=OrderID").status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// The first dbo.Products row whose photo (column 9) is longer than `len` bytes: its position,
/// values and column names, as the library's scan reads them.
fn product_with_a_photo_over(
    s: &Studio,
    len: usize,
) -> (mdfkit::scan::ScanPosition, Vec<mdfkit::value::Value>, Vec<String>) {
    let products = s.db.catalog().find_table("dbo.Products").unwrap();
    let decoder = s.db.row_decoder(&products, products.partitions[0].partition_id, None).unwrap();
    let (mut values, mut found) = (Vec::new(), None);
    s.db.scan(&products)
        .records_after(None, |record, _, position| {
            decoder.decode(record, &mut values)?;
            Ok(match &values[9] {
                mdfkit::value::Value::Binary(b) if b.len() > len => {
                    found = Some((position, values.clone()));
                    Flow::Stop
                }
                _ => Flow::Continue,
            })
        })
        .unwrap();
    let (at, row) = found.expect("a product with a long photo");
    (at, row, decoder.column_names())
}

#[test]
fn a_row_page_holds_every_value_whole_and_downloads_each() {
    let s = studio();
    // The forge writes photos of 100 to 60,000 bytes: a long one is stored off-row.
    let (at, row, columns) = product_with_a_photo_over(&s, 20_000);
    let page = get(&s, &format!("/row/dbo.Products/{at}.json")).json();
    assert_eq!(page["row"], json_object(&columns, &row));
    let mdfkit::value::Value::Binary(photo) = &row[9] else { unreachable!() };
    assert_eq!(page["lengths"]["Photo"], photo.len());
    let download = get(&s, &format!("/value/dbo.Products/{at}/Photo"));
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(download.headers[header::CONTENT_TYPE], "application/octet-stream");
    assert!(download.body == *photo, "the download is the value's bytes");
    if let mdfkit::value::Value::Text(description) = &row[8] {
        let text = get(&s, &format!("/value/dbo.Products/{at}/Description"));
        assert_eq!(text.headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(text.text(), *description);
    }
    let html = get(&s, &format!("/row/dbo.Products/{at}")).text();
    assert!(
        html.contains(&format!("{} bytes", photo.len())) && html.contains(&format!("/value/dbo.Products/{at}/Photo"))
    );
    // The grid cuts the long value and links the row page.
    assert_eq!(get(&s, "/row/dbo.Products/1:0:0").status, StatusCode::NOT_FOUND, "1:0 is the file header");
    let grid = get(&s, "/rows/dbo.Products").text();
    assert!(grid.contains("class=\"cut\"") && grid.contains("href=\"/row/dbo.Products/1:"), "{grid}");
    assert_eq!(get(&s, &format!("/value/dbo.Products/{at}/Nope")).status, StatusCode::NOT_FOUND);
}

/// The page ids a run of the page JSON's allocation bitmap covers.
fn run_pages(run: &Value) -> std::ops::RangeInclusive<u32> {
    let number = |key: &str| run[key].as_str().unwrap().split(':').nth(1).unwrap().parse::<u32>().unwrap();
    number("first_page")..=number("last_page")
}

#[test]
fn allocation_pages_show_their_bitmaps_consistent_with_every_page_header() {
    let s = studio();
    let headers = gam_and_pfs_agree_with_the_page_headers(&s);
    // dbo.Orders' first IAM page maps every page its allocation unit's headers name.
    let orders = s.db.catalog().find_table("dbo.Orders").unwrap();
    let unit =
        s.db.catalog()
            .base()
            .allocation_units
            .iter()
            .find(|u| u.owner_id == orders.partitions[0].partition_id && u.kind == 1)
            .unwrap()
            .clone();
    let iam = get(&s, &format!("/page/{}.json", unit.first_iam_page)).json();
    let bitmap = &iam["allocation"];
    assert_eq!(bitmap["kind"], "IAM");
    let owned: Vec<_> = bitmap["set"].as_array().unwrap().iter().map(run_pages).collect();
    let singles: Vec<u32> = bitmap["single_pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().split(':').nth(1).unwrap().parse().unwrap())
        .collect();
    let mut mapped = 0;
    for (n, h) in &headers {
        if h.allocation_unit_id() == unit.id && h.page_type != mdfkit::page::PageType::Iam {
            assert!(
                owned.iter().any(|r| r.contains(n)) || singles.contains(n),
                "page 1:{n} of dbo.Orders is not in its IAM page"
            );
            mapped += 1;
        }
    }
    assert!(mapped > 50, "{mapped} pages of dbo.Orders");
    // The HTML shows the runs with links to their pages.
    let html = get(&s, "/page/1:2").text();
    assert!(
        html.contains("<h2>Allocation bitmap</h2>")
            && html.contains("<td>allocated</td>")
            && html.contains("<td>free</td>"),
        "{html}"
    );
    let html = get(&s, "/page/1:1").text();
    assert!(html.contains("allocated, 96-100%") || html.contains("allocated, empty"), "{html}");
    assert!(!get(&s, &format!("/page/{}", orders_first_data_page(&s))).text().contains("Allocation bitmap"));
}

/// The file's GAM and first PFS pages, through the page view's JSON, against the header of every
/// page of file 1 (the ground truth: each page says what it is and whose it is). Returns those.
fn gam_and_pfs_agree_with_the_page_headers(s: &Arc<Studio>) -> Vec<(u32, mdfkit::page::PageHeader)> {
    let pages = s.db.info().unwrap().pages_in_files as u32;
    let headers: Vec<(u32, mdfkit::page::PageHeader)> = (0..pages)
        .filter_map(|n| s.db.reader().read(mdfkit::page::PageId::new(1, n)).ok().map(|p| (n, *p.header())))
        .collect();
    let gam = get(s, "/page/1:2.json").json();
    let bitmap = &gam["allocation"];
    assert_eq!((bitmap["kind"].as_str(), bitmap["start"].as_str()), (Some("GAM"), Some("1:0")));
    let free: Vec<_> = bitmap["set"].as_array().unwrap().iter().map(run_pages).collect();
    assert!(!free.is_empty(), "the forged file has room at its end");
    // Every page holding rows or an IAM chain lies in an extent the GAM says is allocated.
    for (n, h) in &headers {
        if matches!(h.page_type, mdfkit::page::PageType::Data | mdfkit::page::PageType::Iam)
            && h.allocation_unit_id() != 0
        {
            assert!(!free.iter().any(|r| r.contains(n)), "page 1:{n} ({}) lies in a free extent", h.page_type.name());
        }
    }
    let pfs = get(s, "/page/1:1.json").json();
    let runs = pfs["allocation"]["runs"].as_array().unwrap();
    // A PFS record covers its whole interval (8,092 bytes: header and 8,088 pages), runs each page once.
    assert_eq!(pfs["allocation"]["pages"], 8088);
    assert_eq!(runs.iter().map(|r| run_pages(r).count()).sum::<usize>(), 8088);
    let byte_of = |n: u32| runs.iter().find(|r| run_pages(r).contains(&n)).unwrap();
    for (n, h) in headers.iter().filter(|(n, _)| *n < 8088) {
        if h.page_type == mdfkit::page::PageType::Iam {
            assert_eq!(
                (byte_of(*n)["iam"].as_bool(), byte_of(*n)["allocated"].as_bool()),
                (Some(true), Some(true)),
                "1:{n}"
            );
        }
        if h.page_type == mdfkit::page::PageType::Data && h.allocation_unit_id() != 0 {
            assert_eq!(byte_of(*n)["allocated"], true, "data page 1:{n}");
        }
    }
    headers
}

#[test]
fn a_corpus_file_s_gam_and_pfs_agree_with_its_page_headers() {
    let Some(s) = chef_zilla() else { return };
    assert!(gam_and_pfs_agree_with_the_page_headers(&s).len() > 100);
}

fn orders_first_data_page(s: &Studio) -> String {
    let orders = s.db.catalog().find_table("dbo.Orders").unwrap();
    let mut at = None;
    s.db.scan(&orders)
        .limit(Some(1))
        .records(|_, l| {
            at = Some(l.page);
            Ok(Flow::Continue)
        })
        .unwrap();
    at.unwrap().to_string()
}

#[test]
fn a_lob_value_s_chain_is_followed_record_by_record_to_its_bytes() {
    let s = studio();
    // A photo past 16,000 bytes: a LOB root with more than one data fragment.
    let (at, values, _) = product_with_a_photo_over(&s, 16_000);
    let mdfkit::value::Value::Binary(photo) = &values[9] else { unreachable!() };
    let row = get(&s, &format!("/record/{at}.json")).json();
    let column = row["columns"].as_array().unwrap().iter().find(|c| c["name"] == "Photo").unwrap();
    let mut pending: Vec<String> =
        column["links"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
    assert!(!pending.is_empty(), "the photo is stored off-row");
    // Depth first, links in value order: the DATA fragments' bytes are the value.
    pending.reverse();
    let (mut bytes, mut nodes, mut kinds) = (Vec::new(), 0, std::collections::BTreeSet::new());
    while let Some(next) = pending.pop() {
        nodes += 1;
        assert!(nodes < 1_000, "a cycle");
        let record = get(&s, &format!("/record/{next}.json")).json();
        let lob = &record["lob"];
        kinds.insert(lob["type"].as_str().unwrap().to_string());
        if lob["type"] == "DATA" {
            let hex = record["bytes"].as_str().unwrap();
            let all: Vec<u8> =
                (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            bytes.extend_from_slice(&all[14..]);
        }
        let links = lob["links"].as_array().unwrap();
        pending.extend(links.iter().rev().map(|l| l["record"].as_str().unwrap().to_string()));
    }
    assert_eq!(bytes.len(), photo.len(), "the fragments hold the value's length");
    assert!(bytes == *photo, "the fragments hold the value's bytes");
    assert!(kinds.contains("DATA") && kinds.len() >= 2, "{kinds:?}: a root or internal node above the data");
    let first = column["links"][0].as_str().unwrap();
    let html = get(&s, &format!("/record/{first}")).text();
    assert!(html.contains("<h2>LOB node</h2>") && html.contains("href=\"/record/1:"), "{html}");
}

#[test]
fn value_search_finds_a_value_s_stored_bytes_where_the_record_holds_them() {
    let s = studio();
    // The forge's last order is 104,999 (a bigint): its record's OrderID bytes are a hit.
    let last = get(&s, "/rows/dbo.Orders.json?before=end").json();
    let at = last["locations"][99].as_str().unwrap();
    assert_eq!(last["rows"][99]["OrderID"], 104_999);
    let record = get(&s, &format!("/record/{at}.json")).json();
    let column = record["columns"].as_array().unwrap().iter().find(|c| c["name"] == "OrderID").unwrap();
    let page = at.rsplit_once(':').unwrap().0;
    let found = get(&s, "/search.json?type=bigint&value=104999").json();
    assert_eq!(found["bytes"], "279a010000000000");
    let hits = found["hits"].as_array().unwrap();
    let hit = hits.iter().find(|h| h["page"] == page && h["offset"] == column["offset"]);
    let hit = hit.unwrap_or_else(|| panic!("{hits:?} lacks {page} {column}"));
    // Its owner: the row's table, its in-row data.
    let owner = hit["owner"].as_str().unwrap();
    assert!(owner.starts_with("dbo.Orders, ") && owner.ends_with(", partition 1, IN_ROW_DATA"), "{owner}");
    assert_eq!(found["next_from"], Value::Null, "the demo is read within the budget");
    // Text: a customer's name as nvarchar is found on that customer's page.
    let customers = get(&s, "/rows/dbo.Customers.json").json();
    let name = customers["rows"][0]["Name"].as_str().unwrap();
    let where_ = customers["locations"][0].as_str().unwrap().rsplit_once(':').unwrap().0;
    let found = get(&s, &format!("/search.json?type=nvarchar&value={}", mdfkit_studio::html::url(name))).json();
    let hit = found["hits"].as_array().unwrap().iter().find(|h| h["page"] == where_).cloned();
    let hit = hit.unwrap_or_else(|| panic!("{name} not found on {where_}"));
    assert!(hit["owner"].as_str().unwrap().starts_with("dbo.Customers, "), "{hit}");
    let html = get(&s, "/search?type=bigint&value=104999").text();
    assert!(html.contains(&format!("href=\"/page/{page}\"")) && html.contains("id=\"search-status\""), "{html}");
    assert_eq!(get(&s, "/search.json?type=datetime&value=2024").status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(get(&s, "/search.json?type=int&value=x").status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// A PAGE compressed page of the demo database: the page view shows its CI structure (a table of
/// its fields, its bytes coloured by part) and its JSON is the anatomy's, CI structure included.
#[test]
fn a_page_compressed_page_shows_its_ci_structure_and_cd_records() {
    let dir = scratch("demo");
    mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::demo(), &dir).unwrap();
    let mdf = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "mdf"))
        .unwrap();
    let s = Arc::new(Studio::open(vec![mdf], None).unwrap());
    let listed = mdfkit::recovery::list_pages(s.db.reader().source(), |p| p.page_type == mdfkit::page::PageType::Data);
    let page = listed
        .iter()
        .map(|p| mdfkit::anatomy::read_database_page(&s.db, p.id).unwrap())
        .find(|a| a.owner.as_deref() == Some("sales.ReadingsPage") && !a.compression_info.is_empty())
        .expect("a page of sales.ReadingsPage with a CI structure");
    let id = page.id;
    assert_eq!(get(&s, &format!("/page/{id}.json")).json(), page.to_json());
    let html = get(&s, &format!("/page/{id}")).text();
    assert!(html.contains("Compression information"), "{id}");
    for part in ["p-ci-header", "p-cd-array", "p-dictionary"] {
        assert!(html.contains(part), "{id}: no {part} bytes");
    }
}

/// `--compare`: the StopAt chain (full and four logs) just before the marked transaction
/// 'dbatoolstest', compared with the same chain at the mark. `/compare.json` lists every table
/// of both with its counts; `/compare/dbo.steps.json` holds the rows the marked transaction
/// inserted: the largest step is EXPECTED.json's for STOPATMARK, every one above its
/// STOPBEFOREMARK's. Without `--compare` the views answer 404 and say how to start one.
#[test]
fn compare_views_show_what_a_chain_gains_between_two_marks() {
    use mdfkit::log::redo::StopPoint;
    let Some(dir) = corpus() else { return };
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let case = expected["chains"].as_array().unwrap().iter().find(|c| c["database"] == "StopAt").unwrap();
    let max_step = |key: &str| case["expect"][key]["max_step"].as_i64().unwrap();
    let mut files = vec![dir.join("chains/stopat/StopAt.bak")];
    for log in [
        "stopat/StopAt_1.trn",
        "stopat/StopAt_2.trn",
        "stopat-later-logs/StopAt_21.trn",
        "stopat-later-logs/StopAt_23.trn",
    ] {
        files.push(dir.join("chains").join(log));
    }
    let mark = |before| StopPoint::Mark { name: "dbatoolstest".into(), before, after: None };
    let db = mdfkit::Database::open_until(&files, None, mark(true)).unwrap();
    let plain = Studio::open(files.clone(), None).unwrap();
    let s = Arc::new(Studio { db, ..plain }.compare_with(files, None, mark(false)).unwrap());

    let tables = get(&s, "/compare.json").json();
    let names: Vec<&str> = tables["tables"].as_array().unwrap().iter().map(|t| t["table"].as_str().unwrap()).collect();
    let listed: Vec<String> = s.db.catalog().tables(false).iter().map(|t| t.qualified_name()).collect();
    assert!(listed.iter().all(|t| names.contains(&t.as_str())) && names.contains(&"dbo.steps"), "{names:?}");

    let steps = get(&s, "/compare/dbo.steps.json").json();
    assert_eq!((steps["deleted"].as_u64(), steps["changed"].as_u64()), (Some(0), Some(0)), "{steps}");
    let inserted: Vec<i64> =
        steps["rows"].as_array().unwrap().iter().map(|r| r["other"]["row"]["step"].as_i64().unwrap()).collect();
    assert_eq!(inserted.len() as u64, steps["inserted"].as_u64().unwrap());
    assert!(steps["next_after"].is_null(), "all listed: no next page");
    assert_eq!(inserted.iter().max().copied(), Some(max_step("STOPATMARK 'dbatoolstest'")));
    assert!(inserted.iter().all(|&v| v > max_step("STOPBEFOREMARK 'dbatoolstest'")));
    let html = get(&s, "/compare/dbo.steps").text();
    assert!(html.contains("class=\"inserted\"") && html.contains("whole row"), "{html}");
    // The pages holding the inserted rows are among the pages that differ, owned by dbo.steps.
    let (mut listed, mut url) = (Vec::new(), "/compare/pages.json".to_string());
    loop {
        let pages = get(&s, &url).json();
        listed.extend(pages["pages"].as_array().unwrap().iter().cloned());
        match pages["next_after"].as_str() {
            Some(next) => url = format!("/compare/pages.json?after={next}"),
            None => break,
        }
    }
    for row in steps["rows"].as_array().unwrap() {
        let at = row["other"]["position"].as_str().unwrap();
        let page = &at[..at.rfind(':').unwrap()];
        let found = listed.iter().find(|p| p["page"] == page).unwrap_or_else(|| panic!("{page} not listed"));
        assert_eq!(found["other"]["owner"], "dbo.steps", "{found}");
    }
    assert!(get(&s, "/compare/pages").text().contains("bytes differing"));

    let none = get(&studio(), "/compare.json");
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    assert!(none.text().contains("--compare"), "{}", none.text());
}
