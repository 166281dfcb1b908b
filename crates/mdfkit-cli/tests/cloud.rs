//! The CLI on objects in an S3-compatible server (versitygw, posix backend) started on 127.0.0.1
//! by this test: every answer equals the one for the same file on disk, and reading a backup's
//! catalog fetches less than the whole object; an export to an S3 prefix uploads the same bytes
//! as a local export writes.
//!
//! Run by `scripts/test-cloud.sh`, which installs the servers first and sets `MDFKIT_CLOUD_TESTS=1`.
//! Without that variable the test says so and passes (`cargo test --workspace` needs no server);
//! with it and no server binary it fails under `CI=true` and skips loudly elsewhere.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ACCESS: &str = "mdfkit-test";
const SECRET: &str = "mdfkit-test-secret";

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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn wait_for_port(port: u16, child: &mut Child) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server exited before listening: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server did not listen on 127.0.0.1:{port} within 20 s");
}

/// A tool on PATH, in `~/go/bin` or in the project's tool folder.
fn find_tool(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push(home.join("go/bin"));
    dirs.push(home.join(".cache/mdfkit/tools/bin"));
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
            eprintln!("\n*** SKIPPED: {name} is not installed: the cloud tests did not run ***\n");
            None
        }
    }
}

fn start_versitygw(binary: &Path) -> Server {
    let dir = std::env::temp_dir().join(format!("mdfkit-vgw-{}-{}", std::process::id(), free_port()));
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
    Server { child, dir, port }
}

fn corpus() -> PathBuf {
    std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"))
}

fn mdfkit(server: &Server, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .args(args)
        .args(["--endpoint", &format!("http://127.0.0.1:{}", server.port)])
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("run mdfkit");
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

#[test]
fn s3_objects_read_like_local_files() {
    let Some(binary) = tool_or_skip("versitygw") else { return };
    let corpus = corpus();
    let mdf = corpus.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let bak = corpus.join("bak/xxxnemesis4xxx-sql_server__entrepot.bak");
    let compressed = corpus.join("bak/dataplat-appveyor-lab__sharepoint_config.bak");
    assert!(mdf.is_file() && bak.is_file() && compressed.is_file(), "corpus files missing under {}", corpus.display());
    let server = start_versitygw(&binary);
    // The posix backend keeps bucket `b`'s object `k` as the file root/b/k.
    let bucket = server.dir.join("root/corpus");
    std::fs::create_dir_all(bucket.join("sub")).unwrap();
    for (from, to) in [(&mdf, "sub/aw.mdf"), (&bak, "entrepot.bak"), (&compressed, "sharepoint.bak")] {
        std::fs::copy(from, bucket.join(to)).unwrap();
    }
    let out = std::env::temp_dir().join(format!("mdfkit-cloud-out-{}", std::process::id()));
    for (local, url, table) in [
        (&mdf, "s3://corpus/sub/aw.mdf", "SalesLT.Product"),
        (&bak, "s3://corpus/entrepot.bak", "dbo.Client"),
        (&compressed, "s3://corpus/sharepoint.bak", "dbo.Classes"),
    ] {
        let local = local.to_str().unwrap();
        for command in [vec!["tables"], vec!["schema"], vec!["cat", "--format", "csv"], vec!["backups"]] {
            if command[0] == "backups" && !local.ends_with(".bak") {
                continue;
            }
            let with = |file: &str| {
                let mut a: Vec<&str> = vec![command[0], file];
                if command[0] == "cat" {
                    a.push(table);
                }
                a.extend(&command[1..]);
                a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
            };
            let l = with(local);
            let r = with(url);
            let l: Vec<&str> = l.iter().map(String::as_str).collect();
            let r: Vec<&str> = r.iter().map(String::as_str).collect();
            let (lo, ro) = (mdfkit(&server, &l), mdfkit(&server, &r));
            assert_eq!(
                String::from_utf8_lossy(&lo.stdout).replace(local, url),
                String::from_utf8_lossy(&ro.stdout),
                "{command:?} differs for {url}"
            );
        }
        // Parquet export: the same bytes.
        let (lo, ro) = (out.join("local"), out.join("remote"));
        for (file, dir) in [(local, &lo), (url, &ro)] {
            mdfkit(&server, &["export", file, "--all", "--format", "parquet", "-o", dir.to_str().unwrap()]);
        }
        let names: Vec<_> = std::fs::read_dir(&lo).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(!names.is_empty());
        for name in names {
            assert_eq!(std::fs::read(lo.join(&name)).unwrap(), std::fs::read(ro.join(&name)).unwrap(), "{name:?}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
    // Export to an S3 prefix: multipart uploads whose objects equal the local export.
    let lo = out.join("local");
    mdfkit(&server, &["export", mdf.to_str().unwrap(), "--all", "--format", "parquet", "-o", lo.to_str().unwrap()]);
    mdfkit(
        &server,
        &["export", "s3://corpus/sub/aw.mdf", "--all", "--format", "parquet", "-o", "s3://corpus/exports/aw"],
    );
    let mut compared = 0;
    for entry in std::fs::read_dir(&lo).unwrap() {
        let name = entry.unwrap().file_name();
        let uploaded = bucket.join("exports/aw").join(&name);
        assert_eq!(std::fs::read(lo.join(&name)).unwrap(), std::fs::read(&uploaded).unwrap(), "{name:?}");
        compared += 1;
    }
    assert!(compared > 5);
    std::fs::remove_dir_all(&out).unwrap();
    // Reading only the catalog of an uncompressed backup fetches part of it.
    let run = mdfkit(&server, &["tables", "s3://corpus/entrepot.bak", "--fetch-report"]);
    let (got, size) = fetched(&run.stderr, "s3://corpus/entrepot.bak");
    assert_eq!(size, std::fs::metadata(&bak).unwrap().len());
    assert!(got < size * 3 / 4, "fetched {got} of {size} bytes to read the catalog");
    eprintln!("catalog of entrepot.bak: fetched {got} of {size} bytes");
    // A missing object is a clean error naming the URL.
    let missing = Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .args(["tables", "s3://corpus/nope.mdf", "--endpoint", &format!("http://127.0.0.1:{}", server.port)])
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("s3://corpus/nope.mdf"));
}
