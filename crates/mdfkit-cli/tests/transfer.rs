//! `mdfkit cp` and `mdfkit bench transfer` against real servers started on 127.0.0.1 by these
//! tests (versitygw for S3, Azurite for Azure Blob) and a WAN in a box: toxiproxy in front of
//! them adding latency, a bandwidth cap per connection and cut connections. Speeds are only ever
//! compared with each other (16 ranges in flight against 1), never with a fixed rate.
//!
//! Run by `scripts/test-cloud.sh`; the servers, and when tests skip, are in `common`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{
    create_bucket, noise, object_bytes, servers, sha256_hex, Proxy, Server, TempDir, ACCESS, AZURE, S3, SECRET,
    TOXIPROXY,
};
use mdfkit_cloud::writer::PART_SIZE;

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

#[test]
fn local_cp_prints_both_checksums_and_verify_only_reports_a_difference() {
    let tmp = TempDir::new("local");
    let data = noise(100_000, 5);
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
    let Some([s3, azure]) = servers([S3, AZURE]) else { return };
    create_bucket(&s3, "bak");
    create_bucket(&azure, "bak");
    let stores = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    let tmp = TempDir::new("round-trip");
    // Empty, 1 byte, exactly one upload part, several parts and a tail.
    for (len, seed) in [(0usize, 1u64), (1, 2), (PART_SIZE, 3), (2 * PART_SIZE + 12_345, 4)] {
        let data = noise(len, seed);
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
    let Some([s3, azure]) = servers([S3, AZURE]) else { return };
    create_bucket(&s3, "lake");
    create_bucket(&azure, "lake");
    let stores = Stores { s3_port: s3.port, azure_port: Some(azure.port) };
    let tmp = TempDir::new("tree");
    let files = [("a.bak", 300_000usize), ("sub/b.mdf", 1), ("sub/deep/c.ndf", 70_000), ("sub/deep/empty", 0)];
    for (i, (name, len)) in files.iter().enumerate() {
        let p = tmp.0.join("src").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, noise(*len, i as u64)).unwrap();
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
        assert_eq!(std::fs::read(s3.dir.join("root/lake/orders").join(name)).unwrap(), noise(*len, i as u64), "{name}");
        assert_eq!(std::fs::read(dst.join(name)).unwrap(), noise(*len, i as u64), "{name}");
    }
}

#[test]
fn a_destination_altered_behind_our_back_is_reported() {
    let Some([s3]) = servers([S3]) else { return };
    create_bucket(&s3, "bak");
    let stores = Stores { s3_port: s3.port, azure_port: None };
    let tmp = TempDir::new("altered");
    let data = noise(3 << 20, 7);
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
    let Some([s3, azure]) = servers([S3, AZURE]) else { return };
    create_bucket(&s3, "scratch");
    create_bucket(&azure, "scratch");
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

/// Seconds `cp` says it took to copy `from` to `to` with `args` (its own count, without the
/// process's start; it includes reading the copy back).
fn timed_copy(stores: &Stores, from: &str, to: &str, args: &[&str]) -> f64 {
    let out = stores.run(&[&["cp", from, to], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seconds = stderr.split(" bytes in ").nth(1).and_then(|rest| rest.split(' ').next());
    seconds.and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no time in the summary: {stderr}"))
}

/// Seconds to download `url` with `concurrency` ranges of `range` in flight.
fn timed_download(stores: &Stores, url: &str, to: &Path, range: &str, concurrency: usize) -> f64 {
    timed_copy(stores, url, to.to_str().unwrap(), &["--range-size", range, "--concurrency", &concurrency.to_string()])
}

/// The servers of a WAN test (both stores and toxiproxy), bucket `name` on both stores, and a
/// local file of noise.
struct Wan {
    s3: Server,
    azure: Server,
    toxiproxy: Server,
    data: Vec<u8>,
    original: PathBuf,
    _tmp: TempDir,
}

impl Wan {
    fn start(name: &str, len: usize, seed: u64) -> Option<Wan> {
        let [s3, azure, toxiproxy] = servers([S3, AZURE, TOXIPROXY])?;
        create_bucket(&s3, name);
        create_bucket(&azure, name);
        let tmp = TempDir::new(name);
        let data = noise(len, seed);
        let original = tmp.0.join("obj.bak");
        std::fs::write(&original, &data).unwrap();
        Some(Wan { s3, azure, toxiproxy, data, original, _tmp: tmp })
    }

    fn original(&self) -> &str {
        self.original.to_str().unwrap()
    }

    /// Straight to the servers.
    fn direct(&self) -> Stores {
        Stores { s3_port: self.s3.port, azure_port: Some(self.azure.port) }
    }

    /// A proxy in front of each store.
    fn links(&self) -> [Proxy<'_>; 2] {
        [Proxy::new(&self.toxiproxy, "s3", self.s3.port), Proxy::new(&self.toxiproxy, "azure", self.azure.port)]
    }
}

/// Through the proxies.
fn through([s3, azure]: &[Proxy; 2]) -> Stores {
    Stores { s3_port: s3.port, azure_port: Some(azure.port) }
}

#[test]
fn sixteen_ranges_in_flight_beat_one_by_five_times_on_a_slow_link() {
    let Some(wan) = Wan::start("wan", 2 << 20, 9) else { return };
    // Uploads go straight to the servers; downloads through the slow link.
    wan.direct().run(&["cp", wan.original(), "s3://wan/obj.bak"]);
    wan.direct().run(&["cp", wan.original(), "az://wan/obj.bak"]);
    let links = wan.links();
    for link in &links {
        link.make_wan(40, 512, "downstream");
    }
    let slow = through(&links);
    let (one_path, sixteen_path) = (wan.original.with_file_name("one"), wan.original.with_file_name("sixteen"));
    for url in ["s3://wan/obj.bak", "az://wan/obj.bak"] {
        // 16 ranges of 128 KiB: one at a time pays 16 round trips at one connection's rate (~5 s).
        let one = timed_download(&slow, url, &one_path, "128K", 1);
        let sixteen = timed_download(&slow, url, &sixteen_path, "128K", 16);
        eprintln!("{url}: 1 in flight {one:.2} s, 16 in flight {sixteen:.2} s ({:.1}x)", one / sixteen);
        assert_eq!(std::fs::read(&one_path).unwrap(), wan.data);
        assert_eq!(std::fs::read(&sixteen_path).unwrap(), wan.data);
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
    let Some(wan) = Wan::start("cut", 3 << 20, 11) else { return };
    wan.direct().run(&["cp", wan.original(), "s3://cut/obj.bak"]);
    wan.direct().run(&["cp", wan.original(), "az://cut/obj.bak"]);
    let links = wan.links();
    let cut = through(&links);
    for (url, link) in ["s3://cut/obj.bak", "az://cut/obj.bak"].into_iter().zip(&links) {
        // 256 KB/s a connection: the download takes ~3 s. Half a second in, every connection is
        // reset, those in the middle of a body and every new one, for 5 s. That outlasts
        // object_store's own retries (5, backoff from 100 ms doubling: at most 3.1 s), so
        // mdfkit's retry of a range has to carry the copy through.
        link.toxic("slow", "bandwidth", "downstream", r#"{"rate":256}"#);
        let to = wan.original.with_file_name("back.bak");
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
        assert_eq!(std::fs::read(&to).unwrap(), wan.data, "{url}");
        assert!(started.elapsed() >= Duration::from_millis(5500), "{url}: done before the resets ended");
        assert!(stderr.contains("ranges asked again"), "{url}: {stderr}");
    }
}

/// S3's smallest part (all but the last), the size the upload tests use.
const MIN_PART: usize = 5 << 20;

#[test]
fn sixteen_parts_in_flight_beat_one_by_five_times_on_a_slow_link() {
    // 16 parts of S3's minimum size: 16 in flight send them all at once.
    let Some(wan) = Wan::start("wan-up", 16 * MIN_PART, 13) else { return };
    let links = wan.links();
    for link in &links {
        link.make_wan(40, 5120, "upstream");
    }
    let slow = through(&links);
    let upload = |url: &str, parts: usize| {
        timed_copy(&slow, wan.original(), url, &["--part-size", "5M", "--concurrency", &parts.to_string()])
    };
    // One part at a time (~20 s) to both stores at once, each behind its own proxy: the link,
    // not the machine, is what limits them. Then 16 at a time, one store after the other, so
    // that hashing and the servers' work on 2 cores do not blur the measure.
    let urls = ["s3://wan-up/obj.bak", "az://wan-up/obj.bak"];
    let ones = std::thread::scope(|scope| {
        let running = urls.map(|url| scope.spawn(move || upload(&format!("{url}.1"), 1)));
        running.map(|r| r.join().unwrap())
    });
    for (url, one) in urls.into_iter().zip(ones) {
        let sixteen = upload(&format!("{url}.16"), 16);
        eprintln!("{url}: 1 part in flight {one:.2} s, 16 in flight {sixteen:.2} s ({:.1}x)", one / sixteen);
        assert!(one >= 5.0 * sixteen, "{url}: 16 in flight took {sixteen:.2} s, 1 in flight {one:.2} s: less than 5x");
    }
    for key in ["obj.bak.1", "obj.bak.16"] {
        for server in [&wan.s3, &wan.azure] {
            let stored = object_bytes(server, "wan-up", key);
            assert!(stored.as_deref() == Some(wan.data.as_slice()), "{}://wan-up/{key} differs", server.scheme());
        }
    }
}

#[test]
fn uploads_through_reset_connections_arrive_whole() {
    let Some(wan) = Wan::start("cut-up", 4 * MIN_PART + 54_321, 17) else { return };
    let links = wan.links();
    let cut = through(&links);
    for ((url, link), server) in
        ["s3://cut-up/obj.bak", "az://cut-up/obj.bak"].into_iter().zip(&links).zip([&wan.s3, &wan.azure])
    {
        // 2 MB/s a connection: each part takes ~2.5 s. One second in, every connection is
        // reset, those in the middle of a part and every new one, for 0.3 s: the parts in
        // flight are lost and sent again (rest.rs retries for 1.5 s).
        link.toxic("slow", "bandwidth", "upstream", r#"{"rate":2048}"#);
        let out = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_secs(1));
                link.toxic("cut", "reset_peer", "upstream", r#"{"timeout":0}"#);
                std::thread::sleep(Duration::from_millis(300));
                link.remove_toxic("cut");
            });
            cut.run(&["cp", wan.original(), url, "--part-size", "5M", "--concurrency", "4"])
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{url} through reset connections: {}", stderr.trim());
        assert!(stderr.contains("requests sent again"), "{url}: {stderr}");
        assert!(object_bytes(server, "cut-up", "obj.bak").as_deref() == Some(wan.data.as_slice()), "{url} differs");
    }
}

/// Scans of a remote database keep several ranged GETs in flight: `check` (every allocated page,
/// in file order) of a corpus file through the slow link is at least 2x faster with 16 ranges of
/// read-ahead than with 1, and finds the same. (Both runs first open the database: a dozen
/// catalog reads of one round trip each, ~1.3 s here, which caps the ratio measured end to end;
/// the scan itself gains ~4.5x.)
#[test]
fn scans_of_remote_files_read_ahead_in_parallel_on_a_slow_link() {
    let corpus = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    let pubs = corpus.join("mdf/itsligo-sampledbs__pubs.mdf");
    if !pubs.is_file() {
        assert!(std::env::var_os("CI").is_none(), "corpus not found at {}: CI must run this test", corpus.display());
        eprintln!("\n*** SKIPPED: corpus not found at {} (set MDFKIT_CORPUS) ***\n", corpus.display());
        return;
    }
    let Some(wan) = Wan::start("scan", 1, 1) else { return };
    for url in ["s3://scan/pubs.mdf", "az://scan/pubs.mdf"] {
        wan.direct().run(&["cp", pubs.to_str().unwrap(), url]);
    }
    let links = wan.links();
    for link in &links {
        link.make_wan(40, 256, "downstream");
    }
    let slow = through(&links);
    for url in ["s3://scan/pubs.mdf", "az://scan/pubs.mdf"] {
        let timed = |read_ahead: &str| {
            let start = Instant::now();
            let out = slow.run(&["check", url, "--read-range", "256K", "--read-ahead", read_ahead]);
            (start.elapsed().as_secs_f64(), out.stdout)
        };
        let (one, one_report) = timed("256K");
        let (sixteen, sixteen_report) = timed("4M");
        eprintln!("check {url}: 1 range ahead {one:.2} s, 16 ranges ahead {sixteen:.2} s ({:.1}x)", one / sixteen);
        assert_eq!(one_report, sixteen_report, "{url}: check reports differ");
        assert!(
            one >= 2.0 * sixteen,
            "{url}: 16 ranges ahead took {sixteen:.2} s, 1 range ahead {one:.2} s: less than 2x"
        );
    }
}
