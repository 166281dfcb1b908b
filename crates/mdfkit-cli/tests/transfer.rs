//! `mdfkit cp` and `mdfkit bench transfer` against real servers started on 127.0.0.1 by these
//! tests (versitygw for S3, Azurite for Azure Blob) and a WAN in a box: toxiproxy in front of
//! them adding latency, a bandwidth cap per connection and cut connections. Speeds are only ever
//! compared with each other (16 ranges in flight against 1), never with a fixed rate.
//!
//! Run by `scripts/test-cloud.sh` (which installs the servers and sets `MDFKIT_CLOUD_TESTS=1`).
//! Without that variable the tests say so and pass; with it and a server missing they fail under
//! `CI=true` and skip loudly elsewhere. Every server started is stopped by a guard, also on panic.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use hmac::{KeyInit, Mac};
use sha2::Digest;

const ACCESS: &str = "mdfkit-test";
const SECRET: &str = "mdfkit-test-secret";
/// Azurite's well-known account and key (the same in every Azurite and in the Azure docs).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// Upload's part size (crates/mdfkit/src/cloud/writer.rs): sizes below straddle it.
const PART: usize = 8 << 20;

/// A server process and its folder, stopped and removed on drop.
struct Server {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mdfkit-transfer-{}-{name}", std::process::id()));
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

fn free_port() -> u16 {
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

/// The tools, or `None` when the tests are not to run (panics under CI when one is missing).
fn tools_or_skip(names: &[&str]) -> Option<Vec<PathBuf>> {
    if std::env::var_os("MDFKIT_CLOUD_TESTS").is_none() {
        eprintln!("transfer tests not run: scripts/test-cloud.sh runs them (MDFKIT_CLOUD_TESTS=1, servers installed)");
        return None;
    }
    let mut found = Vec::new();
    for name in names {
        match find_tool(name) {
            Some(p) => found.push(p),
            None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("{name} is not installed (CI=true)"),
            None => {
                eprintln!("\n*** SKIPPED: {name} is not installed: this transfer test did not run ***\n");
                return None;
            }
        }
    }
    Some(found)
}

fn server_dir(kind: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mdfkit-{kind}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(mut command: Command, port: u16, dir: PathBuf) -> Server {
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start a server");
    wait_for_port(port, &mut child);
    Server { child, dir, port }
}

/// versitygw, posix backend: bucket `b`'s object `k` is the file `root/b/k`.
fn start_versitygw(binary: &Path) -> Server {
    let dir = server_dir("vgw");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let port = free_port();
    let mut c = Command::new(binary);
    c.args(["--port", &format!("127.0.0.1:{port}"), "--quiet", "--access", ACCESS, "--secret", SECRET])
        .arg("posix")
        .arg(dir.join("root"));
    start(c, port, dir)
}

fn start_azurite(binary: &Path) -> Server {
    let dir = server_dir("azurite");
    let port = free_port();
    let mut c = Command::new(binary);
    c.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--disableTelemetry"])
        .args(["--skipApiVersionCheck", "--silent", "--inMemoryPersistence"])
        .current_dir(&dir);
    start(c, port, dir)
}

fn start_toxiproxy(binary: &Path) -> Server {
    let dir = server_dir("toxiproxy");
    let port = free_port();
    let mut c = Command::new(binary);
    c.args(["-host", "127.0.0.1", "-port", &port.to_string()]);
    start(c, port, dir)
}

/// One HTTP/1.1 request with `Connection: close`; returns the status code and the body.
fn http(port: u16, method: &str, path: &str, headers: &[(String, String)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    request += &format!("Content-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (status, body)
}

/// An RFC 1123 date (`Sun, 22 Nov 2026 07:59:46 GMT`) for `x-ms-date`.
fn http_date() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let (days, rest) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{weekday}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        months[(month - 1) as usize],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Creates an Azurite container: Create Container signed with Shared Key (the one request the
/// tests make themselves; mdfkit never creates containers).
fn create_container(port: u16, name: &str) {
    let date = http_date();
    let version = "2021-08-06";
    let to_sign = format!(
        "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{name}\nrestype:container"
    );
    let key = base64::engine::general_purpose::STANDARD.decode(AZURITE_KEY).unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(to_sign.as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let headers = vec![
        ("x-ms-date".to_string(), date),
        ("x-ms-version".to_string(), version.to_string()),
        ("Authorization".to_string(), format!("SharedKey {AZURITE_ACCOUNT}:{signature}")),
    ];
    let (status, body) = http(port, "PUT", &format!("/{AZURITE_ACCOUNT}/{name}?restype=container"), &headers, "");
    assert_eq!(status, 201, "creating container {name}: {body}");
}

/// The servers of a test and the environment that points mdfkit at them (no `--endpoint`:
/// S3 and Azure each get their own through the environment).
struct Stores {
    s3_port: u16,
    azure_port: Option<u16>,
}

impl Stores {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mdfkit"));
        c.args(args)
            .env("AWS_ACCESS_KEY_ID", ACCESS)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", self.s3_port));
        if let Some(port) = self.azure_port {
            c.env("AZURE_STORAGE_USE_EMULATOR", "true")
                .env("AZURITE_BLOB_STORAGE_URL", format!("http://127.0.0.1:{port}"));
        }
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().expect("run mdfkit");
        assert!(out.status.success(), "mdfkit {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        out
    }
}

/// Bytes that differ at every offset of a part (a misplaced part would show).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i >> 16) as u8 ^ seed).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn local_cp_prints_both_checksums_and_verify_only_reports_a_difference() {
    let tmp = TempDir::new("local");
    let data = pattern(100_000, 5);
    let (src, dst) = (tmp.0.join("a.bak"), tmp.0.join("copies/"));
    std::fs::write(&src, &data).unwrap();
    let (src, dst) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_mdfkit")).args(args).output().unwrap();
    let out = run(&["cp", src, dst]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let copied = tmp.0.join("copies/a.bak");
    assert_eq!(std::fs::read(&copied).unwrap(), data);
    let sum = sha256_hex(&data);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("sha256 {sum}        100000  {src}\nsha256 {sum}        100000  {}\n", copied.display())
    );
    let copied = copied.to_str().unwrap();
    assert!(run(&["cp", "--verify-only", src, copied]).status.success());
    let mut altered = data.clone();
    altered[99_999] ^= 1;
    std::fs::write(copied, &altered).unwrap();
    let out = run(&["cp", "--verify-only", src, copied]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{copied}: differs from {src}")), "{stderr}");
    assert!(stderr.contains(&sum) && stderr.contains(&sha256_hex(&altered)), "{stderr}");
    // A folder needs --recursive.
    let out = run(&["cp", tmp.0.join("copies").to_str().unwrap(), tmp.0.join("elsewhere").to_str().unwrap()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--recursive"));
}

#[test]
fn cp_round_trips_local_s3_azure_local_byte_for_byte() {
    let Some(tools) = tools_or_skip(&["versitygw", "azurite-blob"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    let azure = start_azurite(&tools[1]);
    std::fs::create_dir_all(s3.dir.join("root/bak")).unwrap();
    create_container(azure.port, "bak");
    let stores = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    let tmp = TempDir::new("round-trip");
    // Empty, 1 byte, exactly one upload part, several parts and a tail.
    for (len, seed) in [(0usize, 1u8), (1, 2), (PART, 3), (2 * PART + 12_345, 4)] {
        let data = pattern(len, seed);
        let original = tmp.0.join(format!("in-{len}.bak"));
        std::fs::write(&original, &data).unwrap();
        let (s3_url, az_url) = (format!("s3://bak/round/{len}.bak"), format!("az://bak/round/{len}.bak"));
        let back = tmp.0.join(format!("back/{len}.bak"));
        let mut sums = Vec::new();
        for (from, to) in [
            (original.to_str().unwrap(), s3_url.as_str()),
            (s3_url.as_str(), az_url.as_str()),
            (az_url.as_str(), back.to_str().unwrap()),
        ] {
            // 1 MiB ranges: the larger objects are read in many ranges, 4 in flight.
            let out = stores.run(&["cp", from, to, "--range-size", "1M", "--concurrency", "4"]);
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 2, "{text}");
            assert!(lines[0].ends_with(from) && lines[1].ends_with(to), "{text}");
            sums.extend(lines.iter().map(|l| l.split_whitespace().nth(1).unwrap().to_string()));
        }
        // The server's own copy (versitygw keeps objects as files), and the copy back.
        assert_eq!(std::fs::read(s3.dir.join(format!("root/bak/round/{len}.bak"))).unwrap(), data, "{len} on S3");
        assert_eq!(std::fs::read(&back).unwrap(), data, "{len} bytes back from Azure");
        let expected = sha256_hex(&data);
        assert!(sums.iter().all(|s| *s == expected), "{len} bytes: {sums:?} against {expected}");
    }
}

#[test]
fn recursive_copies_keep_the_tree() {
    let Some(tools) = tools_or_skip(&["versitygw", "azurite-blob"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    let azure = start_azurite(&tools[1]);
    std::fs::create_dir_all(s3.dir.join("root/lake")).unwrap();
    create_container(azure.port, "lake");
    let stores = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    let tmp = TempDir::new("tree");
    let files = [("a.bak", 300_000usize), ("sub/b.mdf", 1), ("sub/deep/c.ndf", 70_000), ("sub/deep/empty", 0)];
    for (i, (name, len)) in files.iter().enumerate() {
        let p = tmp.0.join("src").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, pattern(*len, i as u8)).unwrap();
    }
    let src = format!("{}/", tmp.0.join("src").display());
    let dst = tmp.0.join("dst");
    for (from, to) in [
        (src.as_str(), "s3://lake/orders/"),
        ("s3://lake/orders", "az://lake/copy"),
        ("az://lake/copy/", dst.to_str().unwrap()),
    ] {
        let out = stores.run(&["cp", "--recursive", from, to, "--range-size", "64K", "--files-in-flight", "3"]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), files.len());
    }
    for (i, (name, len)) in files.iter().enumerate() {
        assert_eq!(
            std::fs::read(s3.dir.join("root/lake/orders").join(name)).unwrap(),
            pattern(*len, i as u8),
            "{name}"
        );
        assert_eq!(std::fs::read(dst.join(name)).unwrap(), pattern(*len, i as u8), "{name}");
    }
}

#[test]
fn a_destination_altered_behind_our_back_is_reported() {
    let Some(tools) = tools_or_skip(&["versitygw"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    std::fs::create_dir_all(s3.dir.join("root/bak")).unwrap();
    let stores = Stores { s3_port: s3.port, azure_port: None };
    let tmp = TempDir::new("altered");
    let data = pattern(3 << 20, 7);
    let original = tmp.0.join("prod.bak");
    std::fs::write(&original, &data).unwrap();
    let original = original.to_str().unwrap();
    stores.run(&["cp", original, "s3://bak/prod.bak"]);
    stores.run(&["cp", "--verify-only", original, "s3://bak/prod.bak"]);
    // One byte flipped in the server's file, as a disk or another writer might.
    let stored = s3.dir.join("root/bak/prod.bak");
    let mut altered = data.clone();
    altered[2_000_000] ^= 0x20;
    std::fs::write(&stored, &altered).unwrap();
    let out = stores.command(&["cp", "--verify-only", original, "s3://bak/prod.bak"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("s3://bak/prod.bak: differs from") && stderr.contains(&sha256_hex(&data)), "{stderr}");
    assert!(stderr.contains(&sha256_hex(&altered)), "{stderr}");
}

#[test]
fn bench_transfer_measures_draws_a_chart_and_cleans_up() {
    let Some(tools) = tools_or_skip(&["versitygw", "azurite-blob"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    let azure = start_azurite(&tools[1]);
    std::fs::create_dir_all(s3.dir.join("root/scratch")).unwrap();
    create_container(azure.port, "scratch");
    let stores = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    let tmp = TempDir::new("bench");
    for url in ["s3://scratch/bench", "az://scratch/bench"] {
        let chart = tmp.0.join("link.png");
        let args = ["bench", "transfer", url, "--sizes", "1K,64K", "--concurrency", "1,4", "--duration", "0.3"];
        let out = stores.run(&[&args[..], &["--objects", "2", "--chart", chart.to_str().unwrap()]].concat());
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<Vec<&str>> = text.lines().skip(1).take(4).map(|l| l.split_whitespace().collect()).collect();
        let cells: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
        assert_eq!(cells, [("1K", "1"), ("1K", "4"), ("64K", "1"), ("64K", "4")], "{url}: {text}");
        for row in &rows {
            let rates: Vec<f64> = row[2..6].iter().map(|v| v.parse().unwrap()).collect();
            assert!(rates.iter().all(|&r| r > 0.0), "{url}: {text}");
        }
        assert!(text.contains("recommended for this link:") && text.contains("reads:  ranges of"), "{text}");
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&chart).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (900, 560, png::ColorType::Rgb));
        assert!(pixels.iter().any(|&p| p != 255), "the chart is blank");
    }
    // Every test object was deleted: versitygw keeps objects as files, and none is left; the
    // Azure container has nothing to copy.
    let left: Vec<_> = walk(&s3.dir.join("root/scratch"));
    assert!(left.is_empty(), "objects left behind: {left:?}");
    let out = stores.command(&["cp", "--recursive", "az://scratch/", tmp.0.join("left").to_str().unwrap()]).output();
    let stderr = String::from_utf8_lossy(&out.unwrap().stderr).to_string();
    assert!(stderr.contains("az://scratch/: no files under it"), "{stderr}");
}

/// The files under `dir` (recursively).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A toxiproxy proxy in front of `upstream`, listening on its own port.
struct Proxy<'a> {
    api: &'a Server,
    name: String,
    port: u16,
}

impl<'a> Proxy<'a> {
    fn new(api: &'a Server, name: &str, upstream: u16) -> Self {
        let port = free_port();
        let body = format!(
            r#"{{"name":"{name}","listen":"127.0.0.1:{port}","upstream":"127.0.0.1:{upstream}","enabled":true}}"#
        );
        let (status, answer) = http(api.port, "POST", "/proxies", &json(), &body);
        assert_eq!(status, 201, "creating proxy {name}: {answer}");
        Proxy { api, name: name.to_string(), port }
    }

    /// Adds a toxic: `kind` with `attributes` (a JSON object) on `stream` (upstream/downstream).
    fn toxic(&self, toxic: &str, kind: &str, stream: &str, attributes: &str) {
        let body = format!(
            r#"{{"name":"{toxic}","type":"{kind}","stream":"{stream}","toxicity":1.0,"attributes":{attributes}}}"#
        );
        let (status, answer) = http(self.api.port, "POST", &format!("/proxies/{}/toxics", self.name), &json(), &body);
        assert_eq!(status, 200, "adding toxic {toxic}: {answer}");
    }

    fn remove_toxic(&self, toxic: &str) {
        let (status, answer) =
            http(self.api.port, "DELETE", &format!("/proxies/{}/toxics/{toxic}", self.name), &[], "");
        assert_eq!(status, 204, "removing toxic {toxic}: {answer}");
    }

    /// Latency each way and a bandwidth cap per connection: a long, thin link.
    fn make_wan(&self, latency_ms: u32, kilobytes_per_s: u32) {
        for stream in ["upstream", "downstream"] {
            self.toxic(
                &format!("latency-{stream}"),
                "latency",
                stream,
                &format!(r#"{{"latency":{latency_ms},"jitter":0}}"#),
            );
        }
        self.toxic("bandwidth", "bandwidth", "downstream", &format!(r#"{{"rate":{kilobytes_per_s}}}"#));
    }
}

fn json() -> Vec<(String, String)> {
    vec![("Content-Type".to_string(), "application/json".to_string())]
}

/// Seconds `cp` says it took to download `url` with `concurrency` ranges of `range` in flight
/// (its own count, without the process's start).
fn timed_download(stores: &Stores, url: &str, to: &Path, range: &str, concurrency: usize) -> f64 {
    let out = stores.run(&[
        "cp",
        url,
        to.to_str().unwrap(),
        "--range-size",
        range,
        "--concurrency",
        &concurrency.to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seconds = stderr.split(" bytes in ").nth(1).and_then(|rest| rest.split(' ').next());
    seconds.and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no time in the summary: {stderr}"))
}

#[test]
fn sixteen_ranges_in_flight_beat_one_by_five_times_on_a_slow_link() {
    let Some(tools) = tools_or_skip(&["versitygw", "azurite-blob", "toxiproxy-server"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    let azure = start_azurite(&tools[1]);
    let toxiproxy = start_toxiproxy(&tools[2]);
    std::fs::create_dir_all(s3.dir.join("root/wan")).unwrap();
    create_container(azure.port, "wan");
    let tmp = TempDir::new("wan");
    let data = pattern(2 << 20, 9);
    let original = tmp.0.join("obj.bak");
    std::fs::write(&original, &data).unwrap();
    // Uploads go straight to the servers; downloads through the slow link.
    let direct = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    direct.run(&["cp", original.to_str().unwrap(), "s3://wan/obj.bak"]);
    direct.run(&["cp", original.to_str().unwrap(), "az://wan/obj.bak"]);
    let s3_link = Proxy::new(&toxiproxy, "s3", s3.port);
    let azure_link = Proxy::new(&toxiproxy, "azure", azure.port);
    for link in [&s3_link, &azure_link] {
        link.make_wan(40, 512);
    }
    let slow = Stores { s3_port: s3_link.port, azure_port: Some(azure_link.port) };
    for url in ["s3://wan/obj.bak", "az://wan/obj.bak"] {
        // 16 ranges of 128 KiB: one at a time pays 16 round trips at one connection's rate (~5 s).
        let one = timed_download(&slow, url, &tmp.0.join("one"), "128K", 1);
        let sixteen = timed_download(&slow, url, &tmp.0.join("sixteen"), "128K", 16);
        eprintln!("{url}: 1 in flight {one:.2} s, 16 in flight {sixteen:.2} s ({:.1}x)", one / sixteen);
        assert_eq!(std::fs::read(tmp.0.join("one")).unwrap(), data);
        assert_eq!(std::fs::read(tmp.0.join("sixteen")).unwrap(), data);
        assert!(one >= 5.0 * sixteen, "{url}: 16 in flight took {sixteen:.2} s, 1 in flight {one:.2} s: less than 5x");
    }
    // The benchmark sees the same link, and advises many GETs in flight.
    for url in ["s3://wan/bench", "az://wan/bench"] {
        let args =
            ["bench", "transfer", url, "--sizes", "64K", "--concurrency", "1,16", "--duration", "1", "--objects", "4"];
        let out = slow.run(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("reads:  ranges of 64K, 16 in flight"), "{url}: {text}");
    }
}

#[test]
fn copies_through_reset_connections_are_identical() {
    let Some(tools) = tools_or_skip(&["versitygw", "azurite-blob", "toxiproxy-server"]) else { return };
    let s3 = start_versitygw(&tools[0]);
    let azure = start_azurite(&tools[1]);
    let toxiproxy = start_toxiproxy(&tools[2]);
    std::fs::create_dir_all(s3.dir.join("root/cut")).unwrap();
    create_container(azure.port, "cut");
    let tmp = TempDir::new("cut");
    let data = pattern(3 << 20, 11);
    let original = tmp.0.join("obj.bak");
    std::fs::write(&original, &data).unwrap();
    let direct = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    direct.run(&["cp", original.to_str().unwrap(), "s3://cut/obj.bak"]);
    direct.run(&["cp", original.to_str().unwrap(), "az://cut/obj.bak"]);
    let s3_link = Proxy::new(&toxiproxy, "s3", s3.port);
    let azure_link = Proxy::new(&toxiproxy, "azure", azure.port);
    let cut = Stores { s3_port: s3_link.port, azure_port: Some(azure_link.port) };
    for (url, link) in [("s3://cut/obj.bak", &s3_link), ("az://cut/obj.bak", &azure_link)] {
        // 256 KB/s a connection: the download takes ~3 s. Half a second in, every connection is
        // reset, those in the middle of a body and every new one, for 5 s. That outlasts
        // object_store's own retries (5, backoff from 100 ms doubling: at most 3.1 s), so
        // mdfkit's retry of a range has to carry the copy through.
        link.toxic("slow", "bandwidth", "downstream", r#"{"rate":256}"#);
        let to = tmp.0.join("back.bak");
        let started = Instant::now();
        let out = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(500));
                link.toxic("cut", "reset_peer", "downstream", r#"{"timeout":0}"#);
                std::thread::sleep(Duration::from_secs(5));
                link.remove_toxic("cut");
            });
            cut.run(&["cp", url, to.to_str().unwrap(), "--range-size", "256K", "--concurrency", "4"])
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{url} through reset connections: {}", stderr.trim());
        assert_eq!(std::fs::read(&to).unwrap(), data, "{url}");
        assert!(started.elapsed() >= Duration::from_millis(5500), "{url}: done before the resets ended");
        assert!(stderr.contains("ranges asked again"), "{url}: {stderr}");
    }
}
