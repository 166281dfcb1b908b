//! What the cloud test files (`cloud.rs`, `transfer.rs`) share: the servers they start on
//! 127.0.0.1 (versitygw for S3, Azurite for Azure Blob, toxiproxy in front of either), how the
//! tests find them or skip, plain HTTP requests to them, and test data.
//!
//! Servers are run only under `MDFKIT_CLOUD_TESTS=1` (set by `scripts/test-cloud.sh`, which
//! installs them): without it a test says so and passes, so `cargo test --workspace` needs no
//! server; with it and a server binary missing a test fails under `CI=true` and skips loudly
//! elsewhere. Every server started is stopped by [`Server`]'s drop, also on panic.

// Each test file is its own crate and uses part of this module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mdfkit_cloud::sign::{
    azure_signature, azure_string_to_sign, hex, sha256, uri_encode, AwsKey, SigV4, SignedRequest, UtcTime,
};

pub const ACCESS: &str = "mdfkit-test";
pub const SECRET: &str = "mdfkit-test-secret";
/// Azurite's account and its published key (the same in every Azurite and in the Azure docs).
pub const AZ_ACCOUNT: &str = "devstoreaccount1";
pub const AZ_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// An object store.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    S3,
    Azure,
}

/// What a [`Server`] runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Program {
    Store(Kind),
    /// In front of a store: latency, bandwidth caps, cut connections.
    Toxiproxy,
}

pub const S3: Program = Program::Store(Kind::S3);
pub const AZURE: Program = Program::Store(Kind::Azure);
pub const TOXIPROXY: Program = Program::Toxiproxy;

/// A server process and its folder, stopped and removed on drop.
pub struct Server {
    pub program: Program,
    pub child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// What `--endpoint` says: the S3 server, Azurite's account URL, or toxiproxy's API.
    pub fn endpoint(&self) -> String {
        match self.program {
            S3 | TOXIPROXY => format!("http://127.0.0.1:{}", self.port),
            AZURE => format!("http://127.0.0.1:{}/{AZ_ACCOUNT}", self.port),
        }
    }

    /// The credentials mdfkit finds in its environment for this server.
    pub fn env(&self) -> Vec<(&'static str, &'static str)> {
        match self.program {
            S3 => {
                vec![("AWS_ACCESS_KEY_ID", ACCESS), ("AWS_SECRET_ACCESS_KEY", SECRET), ("AWS_REGION", "us-east-1")]
            }
            AZURE => vec![("AZURE_STORAGE_ACCOUNT_NAME", AZ_ACCOUNT), ("AZURE_STORAGE_ACCOUNT_KEY", AZ_KEY)],
            TOXIPROXY => Vec::new(),
        }
    }

    /// The URL scheme of the store.
    pub fn scheme(&self) -> &'static str {
        match self.store() {
            Kind::S3 => "s3",
            Kind::Azure => "az",
        }
    }

    /// The store this server is (panics for toxiproxy: a test mixed up its servers).
    pub fn store(&self) -> Kind {
        match self.program {
            Program::Store(kind) => kind,
            TOXIPROXY => panic!("toxiproxy holds no objects"),
        }
    }

    /// A request signed with Shared Key for `path` (`/container/blob`) on Azurite.
    pub fn azure(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<u8>) {
        let path = uri_encode(path, true);
        let mut headers: Vec<(String, String)> = vec![
            ("x-ms-date".into(), UtcTime::now().rfc1123()),
            ("x-ms-version".into(), "2021-08-06".into()),
            ("content-length".into(), body.len().to_string()),
        ];
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let query: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let to_sign = azure_string_to_sign(method, &headers, &format!("/{AZ_ACCOUNT}/{AZ_ACCOUNT}{path}"), &query);
        let signature = azure_signature(AZ_KEY, &to_sign).unwrap();
        headers.push(("authorization".into(), format!("SharedKey {AZ_ACCOUNT}:{signature}")));
        let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        http(method, &format!("{}{path}?{}", self.endpoint(), query.join("&")), &headers, body)
    }

    /// A request signed with SigV4 for `path` (`/bucket/key`) on the S3 server.
    pub fn s3(&self, method: &str, path: &str, query: &[(&str, &str)]) -> (u16, Vec<u8>) {
        let key = AwsKey { access_key_id: ACCESS.into(), secret_access_key: SECRET.into(), session_token: None };
        let time = UtcTime::now();
        let empty = hex(&sha256(b""));
        let host = format!("127.0.0.1:{}", self.port);
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), host),
            ("x-amz-date".into(), time.amz()),
            ("x-amz-content-sha256".into(), empty.clone()),
        ];
        let query: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let signer = SigV4 { key: &key, region: "us-east-1", service: "s3", time };
        let request = SignedRequest { method, path, query: &query, headers: &headers, payload_hash: &empty };
        let authorization = signer.authorization(&request);
        headers.push(("authorization".into(), authorization));
        let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let headers: Vec<_> = headers.into_iter().filter(|(k, _)| k != "host").collect();
        http(method, &format!("{}{path}?{}", self.endpoint(), query.join("&")), &headers, &[])
    }
}

/// One HTTP/1.1 exchange over plain TCP: the status and the body.
pub fn http(method: &str, url: &str, headers: &[(String, String)], body: &[u8]) -> (u16, Vec<u8>) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).unwrap_or_else(|e| panic!("connect to {authority}: {e}"));
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-length")) {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP response");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status");
    let mut body = response[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n").expect("a chunk size");
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).expect("a hex chunk size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[line_end + 2 + size + 2..];
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn wait_for_port(port: u16, child: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server exited before listening on {port}: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server did not listen on 127.0.0.1:{port} within 30 s");
}

/// A tool on PATH, in `~/go/bin` or in the project's tool folders.
fn find_tool(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push(home.join("go/bin"));
    dirs.push(home.join(".cache/mdfkit/tools/bin"));
    dirs.push(home.join(".cache/mdfkit/tools/node_modules/.bin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn binary(program: Program) -> &'static str {
    match program {
        S3 => "versitygw",
        AZURE => "azurite-blob",
        TOXIPROXY => "toxiproxy-server",
    }
}

/// Starts `programs` in that order, or says why not (`None`; panics under CI when one is
/// missing).
pub fn servers<const N: usize>(programs: [Program; N]) -> Option<[Server; N]> {
    if std::env::var_os("MDFKIT_CLOUD_TESTS").is_none() {
        eprintln!("cloud tests not run: scripts/test-cloud.sh runs them (MDFKIT_CLOUD_TESTS=1, servers installed)");
        return None;
    }
    let mut binaries = Vec::new();
    for program in programs {
        let name = binary(program);
        match find_tool(name) {
            Some(path) => binaries.push(path),
            None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("{name} is not installed (CI=true)"),
            None => {
                eprintln!("\n*** SKIPPED: {name} is not installed: a cloud test that needs it did not run ***\n");
                return None;
            }
        }
    }
    let mut binaries = binaries.into_iter();
    Some(programs.map(|program| start(program, &binaries.next().expect("one binary a program"))))
}

/// Starts one store: [`servers`] with one.
pub fn server(kind: Kind) -> Option<Server> {
    servers([Program::Store(kind)]).map(|[server]| server)
}

fn start(program: Program, binary: &Path) -> Server {
    let name = binary.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("mdfkit-{name}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let mut command = Command::new(binary);
    match program {
        // Posix backend: bucket `b`'s object `k` is the file `root/b/k`.
        S3 => {
            std::fs::create_dir_all(dir.join("root")).unwrap();
            command
                .args(["--port", &format!("127.0.0.1:{port}"), "--quiet", "--access", ACCESS, "--secret", SECRET])
                .arg("posix")
                .arg(dir.join("root"))
        }
        AZURE => command
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--silent", "--disableTelemetry"])
            .args(["--skipApiVersionCheck", "--inMemoryPersistence"])
            .current_dir(&dir),
        TOXIPROXY => command.args(["-host", "127.0.0.1", "-port", &port.to_string()]),
    };
    let mut child =
        command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("start {name}: {e}"));
    wait_for_port(port, &mut child);
    Server { program, child, dir, port }
}

/// A new, empty bucket or container.
pub fn create_bucket(server: &Server, name: &str) {
    match server.store() {
        Kind::S3 => std::fs::create_dir_all(server.dir.join("root").join(name)).unwrap(),
        Kind::Azure => {
            let (status, body) = server.azure("PUT", &format!("/{name}"), &[("restype", "container")], &[], &[]);
            assert_eq!(status, 201, "create container {name}: {}", String::from_utf8_lossy(&body));
        }
    }
}

/// An object's bytes as the server holds them (`None` when there is no such object).
pub fn object_bytes(server: &Server, bucket: &str, key: &str) -> Option<Vec<u8>> {
    match server.store() {
        Kind::S3 => std::fs::read(server.dir.join("root").join(bucket).join(key)).ok(),
        Kind::Azure => match server.azure("GET", &format!("/{bucket}/{key}"), &[], &[], &[]) {
            (200, body) => Some(body),
            (404, _) => None,
            (status, body) => panic!("GET {bucket}/{key}: {status} {}", String::from_utf8_lossy(&body)),
        },
    }
}

/// Puts an object in place by the server's own means (not by mdfkit's uploader).
pub fn put_object(server: &Server, bucket: &str, key: &str, bytes: &[u8]) {
    match server.store() {
        Kind::S3 => {
            let path = server.dir.join("root").join(bucket).join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        Kind::Azure => {
            let headers = [("x-ms-blob-type", "BlockBlob")];
            let (status, body) = server.azure("PUT", &format!("/{bucket}/{key}"), &[], &headers, bytes);
            assert_eq!(status, 201, "put {bucket}/{key}: {}", String::from_utf8_lossy(&body));
        }
    }
}

/// A toxiproxy proxy in front of `upstream`, listening on its own port.
pub struct Proxy<'a> {
    api: &'a Server,
    name: String,
    pub port: u16,
}

impl<'a> Proxy<'a> {
    pub fn new(api: &'a Server, name: &str, upstream: u16) -> Self {
        let port = free_port();
        let body = format!(
            r#"{{"name":"{name}","listen":"127.0.0.1:{port}","upstream":"127.0.0.1:{upstream}","enabled":true}}"#
        );
        let (status, answer) = api.api("POST", "/proxies", &body);
        assert_eq!(status, 201, "creating proxy {name}: {answer}");
        Proxy { api, name: name.to_string(), port }
    }

    /// Adds a toxic: `kind` with `attributes` (a JSON object) on `stream` (upstream/downstream).
    pub fn toxic(&self, toxic: &str, kind: &str, stream: &str, attributes: &str) {
        let body = format!(
            r#"{{"name":"{toxic}","type":"{kind}","stream":"{stream}","toxicity":1.0,"attributes":{attributes}}}"#
        );
        let (status, answer) = self.api.api("POST", &format!("/proxies/{}/toxics", self.name), &body);
        assert_eq!(status, 200, "adding toxic {toxic}: {answer}");
    }

    pub fn remove_toxic(&self, toxic: &str) {
        let (status, answer) = self.api.api("DELETE", &format!("/proxies/{}/toxics/{toxic}", self.name), "");
        assert_eq!(status, 204, "removing toxic {toxic}: {answer}");
    }

    /// Latency each way and a bandwidth cap per connection on `stream` (`downstream` for
    /// downloads, `upstream` for uploads): a long, thin link.
    pub fn make_wan(&self, latency_ms: u32, kilobytes_per_s: u32, stream: &str) {
        for direction in ["upstream", "downstream"] {
            let attributes = format!(r#"{{"latency":{latency_ms},"jitter":0}}"#);
            self.toxic(&format!("latency-{direction}"), "latency", direction, &attributes);
        }
        self.toxic("bandwidth", "bandwidth", stream, &format!(r#"{{"rate":{kilobytes_per_s}}}"#));
    }
}

impl Server {
    /// A request to toxiproxy's JSON API: the status and the answer.
    fn api(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let headers = [("Content-Type".to_string(), "application/json".to_string())];
        let (status, answer) = http(method, &format!("{}{path}", self.endpoint()), &headers, body.as_bytes());
        (status, String::from_utf8_lossy(&answer).into_owned())
    }
}

/// A folder removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mdfkit-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic bytes that do not compress or repeat at part boundaries (a misplaced part
/// would show).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = (seed << 1) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}
