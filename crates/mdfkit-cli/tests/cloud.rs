//! The CLI and the library's uploaders against real servers started on 127.0.0.1 by these tests:
//! an S3-compatible server (versitygw, posix backend) and Azurite (Azure Blob).
//!
//! - objects read remotely answer like the same files on disk (every command, both stores), and
//!   reading a backup's catalog fetches less than the whole object;
//! - exports and streamed uploads arrive byte for byte; a part whose Content-MD5 does not match
//!   its body is refused by the server; an upload dropped unfinished leaves nothing;
//! - `share` links fetch the object until they expire and are refused after;
//! - `rm` deletes single objects and whole prefixes (more keys than one batch holds).
//!
//! Run by `scripts/test-cloud.sh`, which installs the servers first and sets `MDFKIT_CLOUD_TESTS=1`.
//! Without that variable the tests say so and pass (`cargo test --workspace` needs no server);
//! with it and no server binary they fail under `CI=true` and skip loudly elsewhere.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use mdfkit::cloud::azure::Azure;
use mdfkit::cloud::s3::{PartChecksums, S3};
use mdfkit::cloud::sign::{
    azure_signature, azure_string_to_sign, hex, md5, sha256, uri_encode, AwsKey, SigV4, UtcTime,
};

const ACCESS: &str = "mdfkit-test";
const SECRET: &str = "mdfkit-test-secret";
/// Azurite's account and its published key.
const AZ_ACCOUNT: &str = "devstoreaccount1";
const AZ_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    S3,
    Azure,
}

/// A server process and its folder, stopped and removed on drop.
struct Server {
    kind: Kind,
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

impl Server {
    /// What `--endpoint` says: the S3 server, or Azurite's account URL.
    fn endpoint(&self) -> String {
        match self.kind {
            Kind::S3 => format!("http://127.0.0.1:{}", self.port),
            Kind::Azure => format!("http://127.0.0.1:{}/{AZ_ACCOUNT}", self.port),
        }
    }

    fn env(&self) -> Vec<(&'static str, &'static str)> {
        match self.kind {
            Kind::S3 => {
                vec![("AWS_ACCESS_KEY_ID", ACCESS), ("AWS_SECRET_ACCESS_KEY", SECRET), ("AWS_REGION", "us-east-1")]
            }
            Kind::Azure => vec![("AZURE_STORAGE_ACCOUNT_NAME", AZ_ACCOUNT), ("AZURE_STORAGE_ACCOUNT_KEY", AZ_KEY)],
        }
    }

    /// The library configured for this server, in this process (the credentials are the same
    /// for every test, so setting them once is enough).
    fn configure_library(&self) {
        static CREDENTIALS: Once = Once::new();
        CREDENTIALS.call_once(|| {
            for (k, v) in [
                ("AWS_ACCESS_KEY_ID", ACCESS),
                ("AWS_SECRET_ACCESS_KEY", SECRET),
                ("AWS_REGION", "us-east-1"),
                ("AZURE_STORAGE_ACCOUNT_NAME", AZ_ACCOUNT),
                ("AZURE_STORAGE_ACCOUNT_KEY", AZ_KEY),
            ] {
                std::env::set_var(k, v);
            }
        });
    }

    fn s3_client(&self, bucket: &str) -> S3 {
        let key = AwsKey { access_key_id: ACCESS.into(), secret_access_key: SECRET.into(), session_token: None };
        S3::with_key(&self.endpoint(), bucket, "us-east-1", key)
    }

    fn azure_client(&self, container: &str) -> Azure {
        Azure::with_key(&self.endpoint(), AZ_ACCOUNT, AZ_KEY, container)
    }

    /// A request signed with Shared Key for `path` (`/container/blob`) on Azurite.
    fn azure(
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
    fn s3(&self, method: &str, path: &str, query: &[(&str, &str)]) -> (u16, Vec<u8>) {
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
        headers.push(("authorization".into(), signer.authorization(method, path, &query, &headers, &empty)));
        let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let headers: Vec<_> = headers.into_iter().filter(|(k, _)| k != "host").collect();
        http(method, &format!("{}{path}?{}", self.endpoint(), query.join("&")), &headers, &[])
    }
}

/// One HTTP/1.1 exchange over plain TCP: the status and the body.
fn http(method: &str, url: &str, headers: &[(String, String)], body: &[u8]) -> (u16, Vec<u8>) {
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
            panic!("server exited before listening: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server did not listen on 127.0.0.1:{port} within 30 s");
}

/// A tool on PATH, in `~/go/bin` or in the project's tool folder.
fn find_tool(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push(home.join("go/bin"));
    dirs.push(home.join(".cache/mdfkit/tools/bin"));
    dirs.push(home.join(".cache/mdfkit/tools/node_modules/.bin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Whether to run, or why not (panics under CI when a server cannot be had).
fn tool_or_skip(name: &str) -> Option<PathBuf> {
    if std::env::var_os("MDFKIT_CLOUD_TESTS").is_none() {
        eprintln!("cloud tests not run: scripts/test-cloud.sh runs them (MDFKIT_CLOUD_TESTS=1, servers installed)");
        return None;
    }
    match find_tool(name) {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("{name} is not installed (CI=true)"),
        None => {
            eprintln!("\n*** SKIPPED: {name} is not installed: the cloud tests that need it did not run ***\n");
            None
        }
    }
}

fn server_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mdfkit-{name}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start_versitygw(binary: &Path) -> Server {
    let dir = server_dir("vgw");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let port = free_port();
    let mut child = Command::new(binary)
        .args(["--port", &format!("127.0.0.1:{port}"), "--quiet", "--access", ACCESS, "--secret", SECRET])
        .arg("posix")
        .arg(dir.join("root"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start versitygw");
    wait_for_port(port, &mut child);
    Server { kind: Kind::S3, child, dir, port }
}

fn start_azurite(binary: &Path) -> Server {
    let dir = server_dir("azurite");
    let port = free_port();
    let mut child = Command::new(binary)
        .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--silent", "--disableTelemetry"])
        .arg("--skipApiVersionCheck")
        .arg("--location")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start azurite-blob");
    wait_for_port(port, &mut child);
    Server { kind: Kind::Azure, child, dir, port }
}

/// Starts the server of `kind`, or says why not.
fn server(kind: Kind) -> Option<Server> {
    match kind {
        Kind::S3 => tool_or_skip("versitygw").map(|b| start_versitygw(&b)),
        Kind::Azure => tool_or_skip("azurite-blob").map(|b| start_azurite(&b)),
    }
}

/// A new, empty bucket or container.
fn create_bucket(server: &Server, name: &str) {
    match server.kind {
        Kind::S3 => std::fs::create_dir_all(server.dir.join("root").join(name)).unwrap(),
        Kind::Azure => {
            let (status, body) = server.azure("PUT", &format!("/{name}"), &[("restype", "container")], &[], &[]);
            assert_eq!(status, 201, "create container {name}: {}", String::from_utf8_lossy(&body));
        }
    }
}

/// An object's bytes as the server holds them (`None` when there is no such object).
fn object_bytes(server: &Server, bucket: &str, key: &str) -> Option<Vec<u8>> {
    match server.kind {
        // The posix backend keeps bucket `b`'s object `k` as the file root/b/k.
        Kind::S3 => std::fs::read(server.dir.join("root").join(bucket).join(key)).ok(),
        Kind::Azure => match server.azure("GET", &format!("/{bucket}/{key}"), &[], &[], &[]) {
            (200, body) => Some(body),
            (404, _) => None,
            (status, body) => panic!("GET {bucket}/{key}: {status} {}", String::from_utf8_lossy(&body)),
        },
    }
}

/// Puts an object in place by the server's own means (not by mdfkit's uploader).
fn put_object(server: &Server, bucket: &str, key: &str, bytes: &[u8]) {
    match server.kind {
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

fn scheme(server: &Server) -> &'static str {
    match server.kind {
        Kind::S3 => "s3",
        Kind::Azure => "az",
    }
}

fn corpus() -> PathBuf {
    std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"))
}

fn run(server: &Server, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .args(args)
        .args(["--endpoint", &server.endpoint()])
        .envs(server.env())
        .output()
        .expect("run mdfkit")
}

fn mdfkit(server: &Server, args: &[&str]) -> Output {
    let out = run(server, args);
    assert!(out.status.success(), "mdfkit {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `(fetched, size)` from a `--fetch-report` line about `url`.
fn fetched(stderr: &[u8], url: &str) -> (u64, u64) {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().find(|l| l.contains(url) && l.contains("fetched")).expect("a fetch report line");
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fetched").unwrap();
    (words[at + 1].parse().unwrap(), words[at + 3].parse().unwrap())
}

/// Deterministic bytes that do not compress or repeat at part boundaries.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The commands whose output must not depend on where the file is.
fn same_answers(server: &Server, local: &Path, url: &str, table: &str) {
    let local = local.to_str().unwrap();
    for command in [vec!["tables"], vec!["schema"], vec!["cat", "--format", "csv"], vec!["backups"]] {
        if command[0] == "backups" && !local.ends_with(".bak") {
            continue;
        }
        let with = |file: &str| {
            let mut a: Vec<String> = vec![command[0].to_string(), file.to_string()];
            if command[0] == "cat" {
                a.push(table.to_string());
            }
            a.extend(command[1..].iter().map(|s| s.to_string()));
            a
        };
        let (l, r) = (with(local), with(url));
        let l: Vec<&str> = l.iter().map(String::as_str).collect();
        let r: Vec<&str> = r.iter().map(String::as_str).collect();
        let (lo, ro) = (mdfkit(server, &l), mdfkit(server, &r));
        assert_eq!(
            String::from_utf8_lossy(&lo.stdout).replace(local, url),
            String::from_utf8_lossy(&ro.stdout),
            "{command:?} differs for {url}"
        );
    }
}

/// Exports `source` (a URL on `server`) to `bucket/prefix` and checks every object against a
/// local export of `local`, byte for byte.
fn export_arrives_intact(server: &Server, local: &Path, source: &str, bucket: &str, prefix: &str) {
    let out = std::env::temp_dir().join(format!("mdfkit-cloud-export-{}-{}", std::process::id(), free_port()));
    mdfkit(server, &["export", local.to_str().unwrap(), "--all", "--format", "parquet", "-o", out.to_str().unwrap()]);
    let target = format!("{}://{bucket}/{prefix}", scheme(server));
    mdfkit(server, &["export", source, "--all", "--format", "parquet", "-o", &target]);
    let mut compared = 0;
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let uploaded = object_bytes(server, bucket, &format!("{prefix}/{name}"));
        assert!(uploaded.as_deref() == Some(std::fs::read(out.join(&name)).unwrap().as_slice()), "{target}/{name}");
        compared += 1;
    }
    assert!(compared > 0, "no table exported");
    std::fs::remove_dir_all(&out).unwrap();
}

/// Corpus files put in the store by the server's own means answer like the files on disk;
/// exports from them to the store arrive byte for byte.
fn objects_read_like_local_files(kind: Kind) {
    let Some(server) = server(kind) else { return };
    let corpus = corpus();
    let mdf = corpus.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let bak = corpus.join("bak/xxxnemesis4xxx-sql_server__entrepot.bak");
    let compressed = corpus.join("bak/dataplat-appveyor-lab__sharepoint_config.bak");
    assert!(mdf.is_file() && bak.is_file() && compressed.is_file(), "corpus files missing under {}", corpus.display());
    create_bucket(&server, "corpus");
    let s = scheme(&server);
    for (local, key, table) in [
        (&mdf, "sub/aw.mdf", "SalesLT.Product"),
        (&bak, "entrepot.bak", "dbo.Client"),
        (&compressed, "sharepoint.bak", "dbo.Classes"),
    ] {
        put_object(&server, "corpus", key, &std::fs::read(local).unwrap());
        same_answers(&server, local, &format!("{s}://corpus/{key}"), table);
    }
    export_arrives_intact(&server, &mdf, &format!("{s}://corpus/sub/aw.mdf"), "corpus", "exports/aw");
    export_arrives_intact(&server, &bak, &format!("{s}://corpus/entrepot.bak"), "corpus", "exports/entrepot");
    // Reading only the catalog of an uncompressed backup fetches part of it.
    let url = format!("{s}://corpus/entrepot.bak");
    let out = mdfkit(&server, &["tables", &url, "--fetch-report"]);
    let (got, size) = fetched(&out.stderr, &url);
    assert_eq!(size, std::fs::metadata(&bak).unwrap().len());
    assert!(got < size * 3 / 4, "fetched {got} of {size} bytes to read the catalog");
    eprintln!("catalog of {url}: fetched {got} of {size} bytes");
    // A missing object is a clean error naming the URL.
    let missing = format!("{s}://corpus/nope.mdf");
    let out = run(&server, &["tables", &missing]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&missing), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn s3_objects_read_like_local_files() {
    objects_read_like_local_files(Kind::S3);
}

#[test]
fn azure_objects_read_like_local_files() {
    objects_read_like_local_files(Kind::Azure);
}

/// The library's uploader on both stores: streams of several parts arrive whole, an empty
/// stream makes an empty object, a dropped upload leaves nothing, and the servers refuse a part
/// whose Content-MD5 does not match its body. One test for both stores: the library's endpoint
/// setting is per process.
#[test]
fn streamed_uploads_arrive_whole_and_bad_parts_are_refused() {
    use mdfkit::cloud::writer::{Upload, PART_SIZE};
    use mdfkit::cloud::{block_on, configure, CloudOptions};
    for kind in [Kind::S3, Kind::Azure] {
        let Some(server) = server(kind) else { continue };
        server.configure_library();
        configure(CloudOptions { endpoint: Some(server.endpoint()) });
        create_bucket(&server, "uploads");
        let s = scheme(&server);
        // Three parts (8 + 8 + 4 MiB and some), written in odd-sized pieces.
        let data = noise(2 * PART_SIZE + (4 << 20) + 12_345, 7);
        for (key, sized) in [("stream.bin", false), ("sized.bin", true)] {
            let url = format!("{s}://uploads/{key}");
            let mut upload = if sized { Upload::create_sized(&url, data.len() as u64) } else { Upload::create(&url) }
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            for piece in data.chunks(1_000_003) {
                upload.write_all(piece).unwrap();
            }
            assert_eq!(upload.finish().unwrap(), data.len() as u64);
            assert!(object_bytes(&server, "uploads", key).as_deref() == Some(data.as_slice()), "{url} differs");
        }
        let empty = Upload::create(&format!("{s}://uploads/empty.bin")).unwrap();
        assert_eq!(empty.finish().unwrap(), 0);
        assert_eq!(object_bytes(&server, "uploads", "empty.bin"), Some(Vec::new()));
        // Dropped after one full part was sent: no object, and on S3 no upload left open.
        let mut dropped = Upload::create(&format!("{s}://uploads/dropped.bin")).unwrap();
        dropped.write_all(&data[..PART_SIZE + 10]).unwrap();
        drop(dropped);
        assert_eq!(object_bytes(&server, "uploads", "dropped.bin"), None);
        let body = b"a part whose checksum says otherwise".to_vec();
        let wrong = md5(b"something else");
        match kind {
            Kind::S3 => {
                let (status, listing) = server.s3("GET", "/uploads", &[("uploads", "")]);
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&listing));
                assert!(
                    !String::from_utf8_lossy(&listing).contains("<Upload>"),
                    "{}",
                    String::from_utf8_lossy(&listing)
                );
                let client = server.s3_client("uploads");
                let id = block_on(client.create_multipart("bad.bin")).unwrap();
                let right = PartChecksums::of(&body);
                for (what, checksums) in [
                    ("MD5", PartChecksums { md5: wrong, ..right }),
                    ("CRC32C", PartChecksums { crc32c: right.crc32c ^ 1, ..right }),
                ] {
                    let refused =
                        block_on(client.upload_part_with_checksums("bad.bin", &id, 1, body.clone().into(), checksums));
                    let message = refused.expect_err(&format!("a part with a wrong {what} was accepted")).to_string();
                    assert!(message.contains("BadDigest"), "{what}: {message}");
                }
                block_on(client.upload_part("bad.bin", &id, 1, body.clone().into())).unwrap();
                block_on(client.abort("bad.bin", &id)).unwrap();
            }
            Kind::Azure => {
                let client = server.azure_client("uploads");
                let refused = block_on(client.put_block_with_md5("bad.bin", 1, body.clone().into(), wrong));
                let message = refused.expect_err("a block with a wrong MD5 was accepted").to_string();
                assert!(message.contains("Md5Mismatch"), "{message}");
                block_on(client.put_block("bad.bin", 1, body.clone().into())).unwrap();
            }
        }
        // Neither the refused part nor the good one made an object.
        assert_eq!(object_bytes(&server, "uploads", "bad.bin"), None);
    }
}

/// `share` links fetch the object with no credentials until they expire, and not after.
fn links_work_until_they_expire(kind: Kind) {
    let Some(server) = server(kind) else { return };
    create_bucket(&server, "links");
    let data = noise(100_000, 3);
    put_object(&server, "links", "dir/a b.bin", &data);
    let url = format!("{}://links/dir/a b.bin", scheme(&server));
    let made = Instant::now();
    let link = String::from_utf8(mdfkit(&server, &["share", &url, "--expires", "4s"]).stdout).unwrap();
    let link = link.trim();
    let (status, body) = http("GET", link, &[], &[]);
    assert_eq!(status, 200, "{link}: {}", String::from_utf8_lossy(&body));
    assert!(body == data, "{link} served other bytes");
    // A link is not a key: it opens this object only.
    let other = link.replace("a%20b.bin", "other.bin");
    assert_ne!(http("GET", &other, &[], &[]).0, 200, "{other}");
    std::thread::sleep(Duration::from_secs(6).saturating_sub(made.elapsed()));
    let (status, _) = http("GET", link, &[], &[]);
    assert_eq!(status, 403, "{link} still works after it expired");
    match kind {
        Kind::S3 => {
            let out = run(&server, &["share", &url, "--expires", "1h", "--ip", "203.0.113.0/24"]);
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("address range"));
            let out = run(&server, &["share", &url, "--expires", "8d"]);
            assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("7 days"));
        }
        Kind::Azure => {
            // Azurite does not enforce `sip`; the link carries it (its signature is checked by
            // the unit tests) and still works from here.
            let out = mdfkit(&server, &["share", &url, "--expires", "1h", "--ip", "127.0.0.0/8"]);
            let link = String::from_utf8(out.stdout).unwrap();
            assert!(link.contains("sip=127.0.0.0-127.255.255.255"), "{link}");
            assert_eq!(http("GET", link.trim(), &[], &[]).0, 200, "{link}");
        }
    }
}

#[test]
fn s3_presigned_links_work_until_they_expire() {
    links_work_until_they_expire(Kind::S3);
}

#[test]
fn azure_sas_links_work_until_they_expire() {
    links_work_until_they_expire(Kind::Azure);
}

/// `rm`: a dry run deletes nothing, a recursive delete takes a prefix of more keys than one
/// batch holds and nothing beside it, a single delete takes one object, a missing one fails.
fn rm_deletes_objects_and_prefixes(kind: Kind, keys: usize) {
    let Some(server) = server(kind) else { return };
    create_bucket(&server, "rmtest");
    let s = scheme(&server);
    for i in 0..keys {
        put_object(&server, "rmtest", &format!("del/{}/{i:05}.bin", i % 7), &[i as u8]);
    }
    for key in ["del-other/x.bin", "keep/y.bin", "keep/z.bin"] {
        put_object(&server, "rmtest", key, b"stay");
    }
    let prefix = format!("{s}://rmtest/del");
    let out = mdfkit(&server, &["rm", &prefix, "--recursive", "--dry-run"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), keys + 1);
    assert!(text.ends_with(&format!("would delete {keys} objects under {prefix}\n")), "{text}");
    assert_eq!(object_bytes(&server, "rmtest", "del/3/00003.bin"), Some(vec![3]));
    let out = mdfkit(&server, &["rm", &prefix, "--recursive"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("deleted {keys} of {keys} objects under {prefix}\n"));
    let out = mdfkit(&server, &["rm", &prefix, "-r", "--dry-run"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("would delete 0 objects under {prefix}\n"));
    assert_eq!(object_bytes(&server, "rmtest", "del-other/x.bin").as_deref(), Some(&b"stay"[..]));
    let one = format!("{s}://rmtest/keep/y.bin");
    assert_eq!(String::from_utf8(mdfkit(&server, &["rm", &one]).stdout).unwrap(), format!("deleted {one}\n"));
    assert_eq!(object_bytes(&server, "rmtest", "keep/y.bin"), None);
    assert_eq!(object_bytes(&server, "rmtest", "keep/z.bin").as_deref(), Some(&b"stay"[..]));
    let out = run(&server, &["rm", &one]);
    assert!(!out.status.success(), "deleting a missing object succeeded");
    assert!(String::from_utf8_lossy(&out.stderr).contains(&one), "{}", String::from_utf8_lossy(&out.stderr));
    if kind == Kind::Azure {
        // A blob under an infinite lease cannot be deleted without the lease id: that key fails
        // inside its batch, the others go, the failure is named and the exit code says so.
        for key in ["locked/a.bin", "locked/b.bin", "locked/c.bin"] {
            put_object(&server, "rmtest", key, b"x");
        }
        let lease = [("x-ms-lease-action", "acquire"), ("x-ms-lease-duration", "-1")];
        let (status, body) = server.azure("PUT", "/rmtest/locked/b.bin", &[("comp", "lease")], &lease, &[]);
        assert_eq!(status, 201, "lease: {}", String::from_utf8_lossy(&body));
        let out = run(&server, &["rm", &format!("{s}://rmtest/locked"), "--recursive"]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("deleted 2 of 3 objects under {s}://rmtest/locked\n"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("not deleted") && stderr.contains("locked/b.bin"), "{stderr}");
        assert_eq!(object_bytes(&server, "rmtest", "locked/b.bin").as_deref(), Some(&b"x"[..]));
        assert_eq!(object_bytes(&server, "rmtest", "locked/a.bin"), None);
    }
}

#[test]
fn s3_rm_deletes_objects_and_prefixes() {
    // 2,345 keys: three DeleteObjects requests.
    rm_deletes_objects_and_prefixes(Kind::S3, 2_345);
}

#[test]
fn azure_rm_deletes_objects_and_prefixes() {
    // 600 keys: three blob batches.
    rm_deletes_objects_and_prefixes(Kind::Azure, 600);
}
