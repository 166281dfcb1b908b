//! The CLI and the library's uploaders against real servers started on 127.0.0.1 by these tests:
//! an S3-compatible server (versitygw, posix backend) and Azurite (Azure Blob).
//!
//! - objects read remotely answer like the same files on disk (every command, both stores), and
//!   reading a backup's catalog fetches less than the whole object;
//! - exports and streamed uploads arrive byte for byte; a part whose Content-MD5 does not match
//!   its body is refused by the server; an upload dropped unfinished leaves nothing;
//! - `share` links fetch the object until they expire and are refused after;
//! - `rm` deletes single objects and whole prefixes (more keys than one batch holds), and names
//!   the keys a store refused (Azure: a leased blob; S3: a scripted server's per-key `<Error>`).
//!
//! Run by `scripts/test-cloud.sh`; the servers, and when tests skip, are in `common`.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;
use std::time::{Duration, Instant};

use common::{
    create_bucket, free_port, http, noise, object_bytes, put_object, server, Kind, Server, ACCESS, AZ_ACCOUNT, AZ_KEY,
    SECRET,
};
use mdfkit_cloud::azure::Azure;
use mdfkit_cloud::s3::{PartChecksums, S3};
use mdfkit_cloud::sign::{md5, AwsKey};

/// The library's own clients and configuration, for the tests that call it in this process.
impl Server {
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
    let target = format!("{}://{bucket}/{prefix}", server.scheme());
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

/// `export --format delta` into the store twice: versions 0 and 1 of each table, each commit's
/// data file there with the size it names; an export with another schema commits nothing.
fn delta_tables_commit_versions_in_the_store(server: &Server, source: &str) {
    let lake = format!("{}://corpus/lake", server.scheme());
    for _ in 0..2 {
        mdfkit(server, &["export", source, "--table", "SalesLT.Product", "--format", "delta", "-o", &lake]);
    }
    let log =
        |version: u64| object_bytes(server, "corpus", &format!("lake/SalesLT.Product/_delta_log/{version:020}.json"));
    for version in [0, 1] {
        let commit = String::from_utf8(log(version).expect("a commit per export")).unwrap();
        let add = commit.lines().find(|l| l.starts_with("{\"add\"")).expect("an add action");
        let add: serde_json::Value = serde_json::from_str(add).unwrap();
        let path = add["add"]["path"].as_str().unwrap();
        let data = object_bytes(server, "corpus", &format!("lake/SalesLT.Product/{path}")).expect("the data file");
        assert_eq!(add["add"]["size"].as_u64(), Some(data.len() as u64));
        assert_eq!(commit.contains("\"metaData\""), version == 0);
    }
    let narrow = run(
        server,
        &["export", source, "--table", "SalesLT.Product", "--columns", "ProductID", "--format", "delta", "-o", &lake],
    );
    assert_eq!(narrow.status.code(), Some(2), "{}", String::from_utf8_lossy(&narrow.stderr));
    assert!(String::from_utf8_lossy(&narrow.stderr).contains("another schema"));
    assert!(log(2).is_none());
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
    let s = server.scheme();
    for (local, key, table) in [
        (&mdf, "sub/aw.mdf", "SalesLT.Product"),
        (&bak, "entrepot.bak", "dbo.Client"),
        (&compressed, "sharepoint.bak", "dbo.Classes"),
    ] {
        put_object(&server, "corpus", key, &std::fs::read(local).unwrap());
        let url = format!("{s}://corpus/{key}");
        same_answers(&server, local, &url, table);
        // The same object through the signed link `share` makes (S3 presigned, Azure SAS): read
        // by plain ranged GETs that carry their own authorisation.
        let link = String::from_utf8(mdfkit(&server, &["share", &url, "--expires", "1h"]).stdout).unwrap();
        same_answers(&server, local, link.trim(), table);
    }
    export_arrives_intact(&server, &mdf, &format!("{s}://corpus/sub/aw.mdf"), "corpus", "exports/aw");
    export_arrives_intact(&server, &bak, &format!("{s}://corpus/entrepot.bak"), "corpus", "exports/entrepot");
    delta_tables_commit_versions_in_the_store(&server, &format!("{s}://corpus/sub/aw.mdf"));
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
    use mdfkit_cloud::writer::{Upload, PART_SIZE};
    use mdfkit_cloud::{block_on, configure, CloudOptions};
    for kind in [Kind::S3, Kind::Azure] {
        let Some(server) = server(kind) else { continue };
        server.configure_library();
        configure(CloudOptions { endpoint: Some(server.endpoint()), ..CloudOptions::default() });
        create_bucket(&server, "uploads");
        let s = server.scheme();
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
        // Delta commits: an object created only where none exists, listed by folder.
        let lake = mdfkit_cloud::export::destination(Path::new(&format!("{s}://uploads/lake"))).unwrap();
        let commit = "t/_delta_log/00000000000000000000.json";
        assert!(lake.create_new(commit, b"first").unwrap());
        assert!(!lake.create_new(commit, b"second").unwrap(), "{s}: a second commit of one version was taken");
        assert_eq!(object_bytes(&server, "uploads", &format!("lake/{commit}")), Some(b"first".to_vec()));
        assert_eq!(lake.list("t/_delta_log").unwrap(), ["00000000000000000000.json"]);
        assert_eq!(lake.read(commit).unwrap(), b"first");
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
    let url = format!("{}://links/dir/a b.bin", server.scheme());
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
    let s = server.scheme();
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

/// A server on 127.0.0.1 that answers each request with `answer(method and target)` (status,
/// XML body), reading every request whole; stops after `requests` requests.
fn scripted_s3(requests: usize, answer: fn(&str) -> (u16, String)) -> (u16, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut connections = listener.incoming();
        while seen.len() < requests {
            let mut stream = connections.next().unwrap().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            // Requests on one connection, one after the other (the client keeps it alive).
            while seen.len() < requests {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let mut length = 0usize;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let target = line.trim().rsplit_once(' ').map_or(line.trim(), |(t, _)| t).to_string();
                let (status, xml) = answer(&target);
                let response = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{xml}",
                    xml.len()
                );
                stream.write_all(response.as_bytes()).unwrap();
                seen.push(target);
            }
        }
        seen
    });
    (port, handle)
}

/// S3 answers DeleteObjects per key inside a successful request: a key it refused is named,
/// the others count as deleted, and the exit code says not everything went.
#[test]
fn s3_rm_names_the_keys_the_server_did_not_delete() {
    fn answer(target: &str) -> (u16, String) {
        if target.starts_with("GET /bk?list-type=2") {
            let contents: String = ["del/a.bin", "del/b.bin", "del/c.bin"]
                .iter()
                .map(|k| {
                    format!(
                        "<Contents><Key>{k}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
                         <ETag>\"e\"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>"
                    )
                })
                .collect();
            let xml = format!(
                "<ListBucketResult><Name>bk</Name><Prefix>del/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys>\
                 <IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"
            );
            (200, xml)
        } else if target.starts_with("POST /bk?delete") {
            let xml = "<DeleteResult><Deleted><Key>del/a.bin</Key></Deleted>\
                       <Error><Key>del/b.bin</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>\
                       <Deleted><Key>del/c.bin</Key></Deleted></DeleteResult>";
            (200, xml.to_string())
        } else {
            (400, format!("<Error><Code>Unexpected</Code><Message>{target}</Message></Error>"))
        }
    }
    let (port, server) = scripted_s3(2, answer);
    let out = Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .args(["rm", "s3://bk/del", "--recursive"])
        .env("AWS_ACCESS_KEY_ID", ACCESS)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deleted 2 of 3 objects under s3://bk/del\n");
    let refusals: Vec<&str> = stderr.lines().filter(|l| l.contains("not deleted")).collect();
    assert_eq!(refusals.len(), 1, "{stderr}");
    assert!(refusals[0].contains("del/b.bin") && refusals[0].contains("Access Denied"), "{stderr}");
    let requests = server.join().unwrap();
    assert!(
        requests[0].starts_with("GET /bk?list-type=2") && requests[1].starts_with("POST /bk?delete"),
        "{requests:?}"
    );
}

/// `mdfkit studio` on an object URL: every page's footer says how many bytes reading the object
/// has fetched of its size. The size is the object's as the store holds it; the overview of a
/// backup needs its catalog, not the whole object.
#[test]
fn the_studio_s_footer_shows_the_bytes_fetched_of_a_remote_object() {
    use std::io::{BufRead, BufReader};
    let Some(server) = server(Kind::S3) else { return };
    let bak = corpus().join("bak/xxxnemesis4xxx-sql_server__entrepot.bak");
    create_bucket(&server, "studio");
    put_object(&server, "studio", "entrepot.bak", &std::fs::read(&bak).unwrap());
    let url = format!("{}://studio/entrepot.bak", server.scheme());
    let mut child = Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .args(["studio", &url, "--endpoint", &server.endpoint()])
        .envs(server.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let printed = line.trim().strip_prefix("mdfkit studio: ").unwrap_or_else(|| panic!("{line:?}")).to_string();
    let (base, token) = printed.split_once("/?token=").unwrap();
    let (status, body) = http("GET", &format!("{base}/"), &[("Cookie".into(), format!("mdfkit_studio={token}"))], b"");
    child.kill().unwrap();
    child.wait().unwrap();
    let page = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{page}");
    let footer =
        page.split("<span id=\"fetched\">").nth(1).and_then(|f| f.split("</span>").next()).expect("a fetch footer");
    let words: Vec<&str> = footer.split_whitespace().collect();
    assert_eq!(words[0], format!("{url}:"), "{footer}");
    let (got, size): (u64, u64) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    assert_eq!(size, std::fs::metadata(&bak).unwrap().len(), "{footer}");
    assert!(got > 0 && got < size, "{footer}");
    eprintln!("studio overview of {url}: {footer}");
}

/// A parallel scan of a remote table (threads reading one object, each through its own run of
/// pages) reads ahead for each thread: its GETs carry many blocks each, where followed as one
/// scan every read looked like a jump and was a GET of one 16 KiB block. The rows are the local
/// file's.
#[test]
fn parallel_scans_of_a_remote_table_read_ahead_for_each_thread() {
    use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
    let Some(server) = server(Kind::S3) else { return };
    let spec = Spec::new("wide", Version::V904, 5).table(
        TableSpec::new("dbo", "Lines", Layout::Clustered { key: 0 }, 100_000)
            .column(ColumnSpec::new("id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(ColumnSpec::new(
                "text",
                ColType::VarChar(Some(100)),
                Gen::Length { min: 40, max: 100 },
                Nulls::Never,
            )),
    );
    let mdf = mdfkit_forge::forge(&spec).unwrap().remove(0).bytes;
    let local = std::env::temp_dir().join(format!("mdfkit-cloud-parallel-{}.mdf", std::process::id()));
    std::fs::write(&local, &mdf).unwrap();
    create_bucket(&server, "parallel");
    put_object(&server, "parallel", "lines.mdf", &mdf);
    let url = format!("{}://parallel/lines.mdf", server.scheme());
    let export = |from: &str, to: &Path| {
        let to = to.to_str().unwrap();
        mdfkit(
            &server,
            &["export", from, "--table", "dbo.Lines", "--format", "csv", "--threads", "4", "-o", to, "--fetch-report"],
        )
    };
    let (remote_out, local_out) = (local.with_extension("remote"), local.with_extension("local"));
    let remote = export(&url, &remote_out);
    export(local.to_str().unwrap(), &local_out);
    let rows = |dir: &Path| std::fs::read(dir.join("dbo.Lines.csv")).unwrap();
    let (from_remote, from_local) = (rows(&remote_out), rows(&local_out));
    for path in [&remote_out, &local_out] {
        std::fs::remove_dir_all(path).unwrap();
    }
    std::fs::remove_file(&local).unwrap();
    assert!(from_remote == from_local, "the remote table's rows differ from the file's");
    assert_eq!(from_local.iter().filter(|&&b| b == b'\n').count(), 100_001);
    let (got, size) = fetched(&remote.stderr, &url);
    let report = String::from_utf8_lossy(&remote.stderr);
    let requests: u64 = report
        .lines()
        .find(|line| line.contains(&format!("{url}: fetched")))
        .and_then(|line| line.rsplit(" in ").next())
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in {report}"));
    eprintln!("{url}: {got} of {size} bytes in {requests} GETs, {} KiB a GET", got / requests.max(1) / 1024);
    assert!(got >= size / 2, "the table is most of the file: fetched {got} of {size}");
    assert!(got / requests >= 64 << 10, "{requests} GETs for {got} bytes: less than 64 KiB a GET");
}
