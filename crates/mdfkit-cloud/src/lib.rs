//! Data where it lives: data files and backups read straight from object stores, exports
//! uploaded, verified copies, deletes and signed links. The reader (`mdfkit`) knows no store:
//! [`register`] plugs this crate's URL schemes into its URL registry (`mdfkit::location`), after
//! which every place that takes a file also takes a URL:
//!
//! | URL | store | credentials |
//! |---|---|---|
//! | `s3://bucket/key` | Amazon S3 or an S3-compatible server (`--endpoint` / `AWS_ENDPOINT_URL`) | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`; else the `[AWS_PROFILE]` (default `default`) section of `~/.aws/credentials` and `~/.aws/config` |
//! | `az://container/blob` (or `azure://`) | Azure Blob Storage (`--endpoint` / `AZURE_STORAGE_ENDPOINT`; `AZURE_STORAGE_USE_EMULATOR=true` for Azurite) | `AZURE_STORAGE_ACCOUNT_NAME` with `AZURE_STORAGE_ACCOUNT_KEY` or `AZURE_STORAGE_SAS_KEY`, or a service principal (`AZURE_CLIENT_ID`, ...) |
//! | `https://...` (or `http://`) | a signed link (S3 presigned, Azure SAS, CloudFront), read only | the link's own signature |
//!
//! [`SCHEMES`] is the one list of them.
//!
//! Reading ([`reader`]): an object is an `mdfkit::io::ByteSource` served by ranged GETs through
//! the `object_store` crate. A small cache of 16 KiB blocks sits in front; when reads walk forward
//! (a scan), the blocks ahead are fetched in parallel, the window doubling up to
//! [`reader::READ_AHEAD`] bytes. A backup is never downloaded first: opening it reads the
//! descriptor blocks and the headers of the pages in its data streams (38 bytes of each 8 KB
//! page, fetched in parallel), then only the pages asked for. [`fetch_report`] tells how many
//! bytes each object cost against its size.
//!
//! Writing ([`writer`]): streaming uploads with a checksum per part that the server verifies, sent
//! by our own signed clients ([`s3`], [`azure`]; signatures in [`sign`], retries in `rest`)
//! because `object_store` sends none; [`export`] makes them an export destination. Links
//! ([`share`]): S3 presigned URLs, Azure SAS and CloudFront signed URLs ([`cloudfront`]), signed
//! locally. Deletes ([`delete`]): batched through `object_store`. Copies ([`copy`]) and link
//! measurements ([`bench`](mod@bench)). Azure uploads and SAS links need an account key (uploads also take a
//! SAS token); with other Azure credentials (service principal, managed identity) uploads go
//! through `object_store` without a per-block MD5, and SAS links are refused with a message
//! saying so.
//!
//! The async client runs on one small Tokio runtime owned by this crate ([`block_on`]); the
//! reader stays synchronous. Calling into a remote source from inside another Tokio runtime's
//! worker thread is not supported.
#![forbid(unsafe_code)]

pub mod azure;
pub mod bench;
pub mod cloudfront;
pub mod copy;
pub mod delete;
pub mod export;
pub mod reader;
pub(crate) mod rest;
pub mod s3;
pub mod share;
pub mod sign;
pub mod writer;

pub use rest::requests_sent_again;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use mdfkit::io::ByteSource;
use mdfkit::{Error, ErrorKind, Result};

pub use reader::{FetchStats, RemoteObject};

/// The kind of store a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    S3,
    Azure,
}

/// How a URL scheme names an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// `scheme://bucket/key` in a store.
    Bucket(Scheme),
    /// A link that carries its own authorisation, read by plain ranged GETs.
    Link,
}

/// Every URL scheme this crate serves; the first name of a store is the one URLs are written with.
pub const SCHEMES: [(&str, Addressing); 5] = [
    ("s3", Addressing::Bucket(Scheme::S3)),
    ("az", Addressing::Bucket(Scheme::Azure)),
    ("azure", Addressing::Bucket(Scheme::Azure)),
    ("https", Addressing::Link),
    ("http", Addressing::Link),
];

/// How `s` names an object, and what follows its `scheme://`; `None` when it is no URL of ours.
fn addressing(s: &str) -> Option<(Addressing, &str)> {
    let scheme = mdfkit::location::url_scheme(s)?;
    let (_, addressing) = SCHEMES.iter().find(|(name, _)| *name == scheme)?;
    Some((*addressing, &s[scheme.len() + "://".len()..]))
}

/// Makes the reader open every scheme of [`SCHEMES`] (`mdfkit::Database::open(&["s3://..."])`).
/// Call once at start-up, before any file is opened.
pub fn register() {
    for (scheme, _) in SCHEMES {
        mdfkit::location::register_url_scheme(scheme, open_object);
    }
}

fn open_object(url: &str) -> Result<Box<dyn ByteSource>> {
    Ok(Box::new(reader::SharedObject(RemoteObject::open(url)?)))
}

/// A parsed object URL: `s3://bucket/key` or `az://container/blob`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    pub scheme: Scheme,
    /// Bucket (S3) or container (Azure).
    pub bucket: String,
    /// Key inside the bucket, without a leading slash (may be empty or a prefix).
    pub key: String,
}

impl ObjectUrl {
    pub fn parse(url: &str) -> Result<Self> {
        let Some((Addressing::Bucket(scheme), rest)) = addressing(url) else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{url}: not an object URL (s3://bucket/key or az://container/blob)"),
            ));
        };
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, format!("{url}: no bucket or container name")));
        }
        Ok(ObjectUrl { scheme, bucket: bucket.to_string(), key: key.trim_start_matches('/').to_string() })
    }

    /// The key as an object store path.
    pub fn path(&self) -> object_store::path::Path {
        object_store::path::Path::from(self.key.as_str())
    }

    /// The same bucket with another key.
    pub fn with_key(&self, key: &str) -> ObjectUrl {
        ObjectUrl { scheme: self.scheme, bucket: self.bucket.clone(), key: key.to_string() }
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = SCHEMES.iter().find(|(_, a)| *a == Addressing::Bucket(self.scheme)).map_or("", |(name, _)| name);
        write!(f, "{scheme}://{}/{}", self.bucket, self.key)
    }
}

/// True when `s` is a bucket URL (`s3://`, `az://`, `azure://`): readable and writable.
pub fn is_url(s: &str) -> bool {
    matches!(addressing(s), Some((Addressing::Bucket(_), _)))
}

/// True when `s` is a link read with plain GETs (`https://`, `http://`).
pub fn is_link(s: &str) -> bool {
    addressing(s).is_some_and(|(a, _)| a == Addressing::Link)
}

/// Settings that apply to every store and object opened afterwards (the CLI's `--endpoint`,
/// `--read-range`, `--read-ahead`).
#[derive(Debug, Clone, Default)]
pub struct CloudOptions {
    /// The server to talk to instead of the cloud's own (`http://127.0.0.1:7070` for an
    /// S3-compatible server; for Azure the account URL, `http://host:port/account`).
    pub endpoint: Option<String>,
    /// Bytes per ranged GET of a forward scan (default [`reader::RANGE`]).
    pub read_range: Option<u64>,
    /// Bytes a forward scan reads ahead at most (default [`reader::READ_AHEAD`]): read-ahead /
    /// range = GETs in flight.
    pub read_ahead: Option<u64>,
}

fn options() -> &'static RwLock<CloudOptions> {
    static OPTIONS: OnceLock<RwLock<CloudOptions>> = OnceLock::new();
    OPTIONS.get_or_init(|| RwLock::new(CloudOptions::default()))
}

/// Sets the options used by stores opened from now on (stores already opened keep theirs).
pub fn configure(new: CloudOptions) {
    *options().write().unwrap_or_else(|e| e.into_inner()) = new;
    stores().lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The runtime that drives every request.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mdfkit-cloud")
            .enable_all()
            .build()
            .expect("cannot start the I/O runtime")
    })
}

/// Runs `f` to completion on the module's runtime from synchronous code.
pub fn block_on<F: Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// Hand-signed clients by (bucket or container, `--endpoint`), built once.
pub(crate) type ClientCache<T> = Mutex<HashMap<(String, Option<String>), Arc<T>>>;

type Stores = HashMap<(Scheme, String), Arc<dyn ObjectStore>>;

fn stores() -> &'static Mutex<Stores> {
    static STORES: OnceLock<Mutex<Stores>> = OnceLock::new();
    STORES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The store (client) for a URL's bucket or container, built once and shared.
pub fn store_for(url: &ObjectUrl) -> Result<Arc<dyn ObjectStore>> {
    let key = (url.scheme, url.bucket.clone());
    if let Some(s) = stores().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(Arc::clone(s));
    }
    let store: Arc<dyn ObjectStore> = match url.scheme {
        Scheme::S3 => Arc::new(s3_builder(url)?.build().map_err(|e| store_error(url, e))?),
        Scheme::Azure => Arc::new(azure_builder(url).build().map_err(|e| store_error(url, e))?),
    };
    stores().lock().unwrap_or_else(|e| e.into_inner()).insert(key, Arc::clone(&store));
    Ok(store)
}

fn retry_config() -> RetryConfig {
    RetryConfig { max_retries: 5, retry_timeout: std::time::Duration::from_secs(120), ..RetryConfig::default() }
}

/// The S3 client settings for a URL's bucket: the environment, the AWS profile, `--endpoint`.
pub(crate) fn s3_builder(url: &ObjectUrl) -> Result<AmazonS3Builder> {
    let endpoint = options().read().unwrap_or_else(|e| e.into_inner()).endpoint.clone();
    let mut b = AmazonS3Builder::from_env().with_bucket_name(&url.bucket).with_retry(retry_config());
    let endpoint = endpoint.or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok());
    if let Some(e) = &endpoint {
        b = b.with_endpoint(e.clone());
    }
    let env_endpoint = std::env::var("AWS_ENDPOINT_URL").ok().or_else(|| std::env::var("AWS_ENDPOINT").ok());
    if endpoint.as_deref().or(env_endpoint.as_deref()).is_some_and(|e| e.starts_with("http://")) {
        b = b.with_client_options(ClientOptions::new().with_allow_http(true));
    }
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        for (k, v) in aws_profile() {
            b = match k.as_str() {
                "aws_access_key_id" => b.with_access_key_id(v),
                "aws_secret_access_key" => b.with_secret_access_key(v),
                "aws_session_token" => b.with_token(v),
                "region" if std::env::var_os("AWS_REGION").is_none() => b.with_region(v),
                "endpoint_url" if endpoint.is_none() && env_endpoint.is_none() => {
                    if v.starts_with("http://") {
                        b = b.with_client_options(ClientOptions::new().with_allow_http(true));
                    }
                    b.with_endpoint(v)
                }
                _ => b,
            };
        }
    }
    Ok(b)
}

/// The Azure client settings for a URL's container: the environment and `--endpoint` (the
/// account URL, `http://127.0.0.1:10000/devstoreaccount1` for Azurite).
pub(crate) fn azure_builder(url: &ObjectUrl) -> MicrosoftAzureBuilder {
    let endpoint = options().read().unwrap_or_else(|e| e.into_inner()).endpoint.clone();
    let mut b = MicrosoftAzureBuilder::from_env().with_container_name(&url.bucket).with_retry(retry_config());
    if let Some(e) = &endpoint {
        b = b.with_endpoint(e.clone());
        if e.starts_with("http://") {
            b = b.with_allow_http(true);
        }
    }
    b
}

/// The read settings given: (range, read-ahead) in bytes.
pub(crate) fn read_options() -> (Option<u64>, Option<u64>) {
    let o = options().read().unwrap_or_else(|e| e.into_inner());
    (o.read_range, o.read_ahead)
}

/// The `--endpoint` given, if any.
pub(crate) fn endpoint_option() -> Option<String> {
    options().read().unwrap_or_else(|e| e.into_inner()).endpoint.clone()
}

/// Settings of the AWS profile (`AWS_PROFILE`, default `default`) from `~/.aws/credentials` and
/// `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE` move them).
fn aws_profile() -> Vec<(String, String)> {
    let Some(home) = std::env::var_os("HOME") else { return Vec::new() };
    let home = std::path::PathBuf::from(home);
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".to_string());
    let credentials = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE").map_or(home.join(".aws/credentials"), Into::into);
    let config = std::env::var_os("AWS_CONFIG_FILE").map_or(home.join(".aws/config"), Into::into);
    let mut out = Vec::new();
    for (file, section) in [(credentials, profile.clone()), (config, format!("profile {profile}"))] {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        out.extend(ini_section(&text, &section));
        if profile == "default" {
            out.extend(ini_section(&text, "default").into_iter().filter(|_| section != "default"));
        }
    }
    out
}

/// The `key = value` lines of `[section]` in an INI text.
fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') && line.ends_with(']') {
            inside = line[1..line.len() - 1].trim() == section;
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
    }
    out
}

/// An object store error as a library error about `url`.
pub fn store_error(url: &ObjectUrl, e: object_store::Error) -> Error {
    let kind = match e {
        object_store::Error::NotFound { .. } => ErrorKind::NotFound,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("{url}: {e}"))
}

/// Bytes fetched from each remote object read so far in this process: `(url, object size,
/// bytes fetched, requests)`.
pub fn fetch_report() -> Vec<(String, u64, u64, u64)> {
    reader::registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(url, s)| (url.clone(), s.size, s.bytes(), s.requests()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = ObjectUrl::parse("s3://bucket/a/b.bak").unwrap();
        assert_eq!((u.scheme, u.bucket.as_str(), u.key.as_str()), (Scheme::S3, "bucket", "a/b.bak"));
        assert_eq!(u.to_string(), "s3://bucket/a/b.bak");
        let u = ObjectUrl::parse("az://c/x.mdf").unwrap();
        assert_eq!((u.scheme, u.bucket.as_str(), u.key.as_str()), (Scheme::Azure, "c", "x.mdf"));
        assert_eq!(ObjectUrl::parse("s3://b").unwrap().key, "");
        assert!(ObjectUrl::parse("s3:///k").is_err());
        assert!(ObjectUrl::parse("/tmp/x.mdf").is_err());
        assert!(is_url("azure://c/b") && !is_url("s3:/x") && !is_url("https://h/x"));
        assert!(is_link("https://h/x?sig=1") && is_link("http://h/x") && !is_link("s3://b/k"));
    }

    #[test]
    fn reads_ini_sections() {
        let text = "[default]\naws_access_key_id = A\n[other]\naws_access_key_id=B\nregion = eu\n";
        assert_eq!(
            ini_section(text, "other"),
            vec![("aws_access_key_id".into(), "B".into()), ("region".into(), "eu".into())]
        );
        assert_eq!(ini_section(text, "default"), vec![("aws_access_key_id".into(), "A".into())]);
    }
}
