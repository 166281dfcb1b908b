//! mdfkit studio (issue 17): a local web studio to browse a database file or backup, down to the
//! bytes of a record, served from the `mdfkit` library's own answers (the CLI gives the same).
//!
//! A small axum server on tokio, HTML rendered on the server ([`html`]), one hand-written script
//! and style sheet compiled into the binary, no outbound request ever. Every view has a permalink
//! and a `.json` twin ([`views`]); library calls run off the async threads (`spawn_blocking`).
//! Security ([`security`]): loopback only unless asked, a random token exchanged for an HttpOnly
//! SameSite=Strict cookie, Host checked against loopback names (DNS rebinding), GET only, a strict
//! CSP, no CORS headers.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod compare;
pub mod download;
pub mod html;
pub mod json;
pub mod map;
pub mod rows;
pub mod security;
pub mod views;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use mdfkit::log::redo::StopPoint;
use mdfkit::{Database, Error};

/// What `mdfkit studio` was started on.
pub struct Studio {
    /// The database every view reads.
    pub db: Database,
    /// The files as given, for the equivalent CLI commands.
    pub files: Vec<PathBuf>,
    /// The backup set read (`--position`; `None`: the last full database backup, or data files).
    pub position: Option<u16>,
    /// The session token: in the printed URL, then in the cookie.
    pub token: String,
    /// Whether requests may name a non-loopback Host (`--host` with `--allow-remote`).
    pub allow_remote: bool,
    /// The allocation map, read once on first use.
    pub map: std::sync::OnceLock<map::AllocationMap>,
    /// The allocation map's PNGs drawn so far (the newest few).
    pub pngs: map::PngCache,
    /// `check` run in the background from the map view.
    pub check: map::CheckRun,
    /// The database compared with (`--compare OTHER`).
    pub compare: Option<compare::Other>,
    /// What reading remote objects has cost so far, from the object-store layer the front end
    /// links (`mdfkit_cloud::fetch_report` in the CLI): shown in every page's footer.
    pub fetch_report: Option<FetchReport>,
}

/// Each remote object read so far: `(url, object size, bytes fetched, requests)`.
pub type FetchReport = fn() -> Vec<(String, u64, u64, u64)>;

impl Studio {
    /// Opens the files (data files or backups) as every command does.
    pub fn open(files: Vec<PathBuf>, position: Option<u16>) -> mdfkit::Result<Self> {
        let db = Database::open_at(&files, position)?;
        Ok(Studio {
            db,
            files,
            position,
            token: security::new_token()?,
            allow_remote: false,
            map: Default::default(),
            pngs: Default::default(),
            check: Default::default(),
            compare: None,
            fetch_report: None,
        })
    }

    /// Compares with `files` (a backup or data files of the same database, a chain rolled forward
    /// to `stop`): the `/compare` views.
    pub fn compare_with(mut self, files: Vec<PathBuf>, position: Option<u16>, stop: StopPoint) -> mdfkit::Result<Self> {
        let db = Database::open_until(&files, position, stop)?;
        self.compare = Some(compare::Other { db, files });
        Ok(self)
    }

    /// The command line printing the same as a view: `mdfkit COMMAND [--position N] FILE...`
    /// then `rest` (a table name, a page, options), as the CLI wants its arguments.
    pub fn cli(&self, command: &str, rest: &str) -> String {
        let mut out = format!("mdfkit {command}");
        if let Some(p) = self.position {
            out.push_str(&format!(" --position {p}"));
        }
        for f in &self.files {
            out.push(' ');
            out.push_str(&shell_word(&f.to_string_lossy()));
        }
        if !rest.is_empty() {
            out.push(' ');
            out.push_str(rest);
        }
        out
    }

    /// The footer line of remote reads: each object's bytes fetched of its size and requests;
    /// empty for local files.
    pub fn fetched(&self) -> String {
        let report = self.fetch_report.map(|report| report()).unwrap_or_default();
        report
            .iter()
            .map(|(url, size, fetched, requests)| {
                let share = if *size == 0 { 0.0 } else { *fetched as f64 * 100.0 / *size as f64 };
                format!("{url}: {fetched} of {size} bytes fetched ({share:.1}%) in {requests} requests")
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// `word`, single-quoted when it holds anything a shell would interpret.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:=@+,".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The studio's routes with its security layer: what `serve` runs and what tests call.
pub fn router(studio: Arc<Studio>) -> Router {
    views::routes().layer(axum::middleware::from_fn_with_state(studio.clone(), security::guard)).with_state(studio)
}

/// Where to listen.
pub struct Listen {
    /// The address to bind (loopback unless `--allow-remote`).
    pub host: IpAddr,
    /// 0: a free port.
    pub port: u16,
}

/// Serves `studio` until the process ends; `ready` is called with the URL (token included) once
/// the socket listens.
pub fn serve(studio: Studio, listen: Listen, ready: impl FnOnce(&str)) -> mdfkit::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()
        .map_err(|e| Error::new(mdfkit::ErrorKind::Io, format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(listen.host, listen.port)).await.map_err(|e| {
            Error::new(mdfkit::ErrorKind::Io, format!("cannot listen on {}:{}: {e}", listen.host, listen.port))
        })?;
        let addr = listener.local_addr().map_err(|e| Error::new(mdfkit::ErrorKind::Io, e.to_string()))?;
        let host =
            if addr.ip().is_loopback() && addr.is_ipv4() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
        let url = format!("http://{host}:{}/?token={}", addr.port(), studio.token);
        ready(&url);
        axum::serve(listener, router(Arc::new(studio)))
            .await
            .map_err(|e| Error::new(mdfkit::ErrorKind::Io, format!("server stopped: {e}")))
    })
}
