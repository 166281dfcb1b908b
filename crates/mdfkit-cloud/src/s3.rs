//! A small S3 client of our own for what `object_store` does not offer: multipart uploads with a
//! `Content-MD5` and an `x-amz-checksum-crc32c` on every part (the server recomputes both and
//! refuses a part damaged in flight with `BadDigest`; the upload is created with
//! `x-amz-checksum-algorithm: CRC32C` and completed with each part's `ChecksumCRC32C`, so the
//! object keeps a checksum of its parts' checksums), and presigned GET URLs.
//!
//! Requests are signed with SigV4 ([`super::sign`]); credentials, region and endpoint come from
//! the same `AmazonS3Builder` the readers use (environment, AWS profile, `--endpoint`), and the
//! credentials through its provider (static keys, web identity, instance metadata, ...), so every
//! kind of AWS credential `object_store` knows works here too. A custom
//! endpoint is addressed path-style (`http://host:port/bucket/key`), AWS itself virtual-hosted
//! (`https://bucket.s3.region.amazonaws.com/key`; path-style for bucket names with dots).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use object_store::aws::{AmazonS3ConfigKey, AwsCredential, AwsCredentialProvider};
use object_store::StaticCredentialProvider;

use super::rest::{self, xml_escape, xml_value, RestError};
use super::sign::{base64, crc32c, hex, md5, sha256, uri_encode, AwsKey, SigV4, SignedRequest, UtcTime};
use super::{s3_builder, store_error, ClientCache, ObjectUrl};
use mdfkit::{Error, ErrorKind, Result};

/// The largest part number (and so the most parts of one upload).
pub const MAX_PARTS: u32 = 10_000;
/// The smallest size of every part but the last.
pub const MIN_PART_SIZE: usize = 5 << 20;
/// The longest life of a presigned URL (7 days).
pub const MAX_PRESIGN_SECONDS: u64 = 7 * 86_400;

/// The header of a part's CRC32C (declared for the whole upload at its creation).
const CRC32C_HEADER: &str = "x-amz-checksum-crc32c";

/// The checksums sent with a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartChecksums {
    pub md5: [u8; 16],
    pub crc32c: u32,
}

impl PartChecksums {
    pub fn of(body: &[u8]) -> Self {
        PartChecksums { md5: md5(body), crc32c: crc32c(body) }
    }
}

/// A part the server took: what CompleteMultipartUpload lists.
#[derive(Debug, Clone)]
pub struct Part {
    pub number: u32,
    pub etag: String,
    /// Base64 of the part's big-endian CRC32C.
    pub crc32c: String,
}

/// One bucket's client.
pub struct S3 {
    /// `http://127.0.0.1:7070` or `https://bucket.s3.eu-west-1.amazonaws.com`.
    origin: String,
    /// The `host` header (with the port when not the default).
    host: String,
    /// `/bucket` when path-style, else empty.
    prefix: String,
    region: String,
    credentials: AwsCredentialProvider,
    bucket: String,
}

impl S3 {
    /// The client for `url`'s bucket (built once and shared).
    pub fn for_url(url: &ObjectUrl) -> Result<Arc<S3>> {
        static CLIENTS: OnceLock<ClientCache<S3>> = OnceLock::new();
        let clients = CLIENTS.get_or_init(|| Mutex::new(HashMap::new()));
        let cache_key = (url.bucket.clone(), super::endpoint_option());
        if let Some(c) = clients.lock().unwrap_or_else(|e| e.into_inner()).get(&cache_key) {
            return Ok(Arc::clone(c));
        }
        let builder = s3_builder(url)?;
        let region = builder.get_config_value(&AmazonS3ConfigKey::Region).unwrap_or_else(|| "us-east-1".into());
        let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
        let virtual_hosted =
            builder.get_config_value(&AmazonS3ConfigKey::VirtualHostedStyleRequest).is_some_and(|v| v == "true");
        let store = builder.build().map_err(|e| store_error(url, e))?;
        let credentials = Arc::clone(store.credentials());
        let (origin, prefix) = match endpoint {
            Some(e) if virtual_hosted => (e.trim_end_matches('/').to_string(), String::new()),
            Some(e) => (e.trim_end_matches('/').to_string(), format!("/{}", url.bucket)),
            None if url.bucket.contains('.') => {
                (format!("https://s3.{region}.amazonaws.com"), format!("/{}", url.bucket))
            }
            None => (format!("https://{}.s3.{region}.amazonaws.com", url.bucket), String::new()),
        };
        let client = Arc::new(S3::new(&origin, &prefix, &url.bucket, &region, credentials));
        clients.lock().unwrap_or_else(|e| e.into_inner()).insert(cache_key, Arc::clone(&client));
        Ok(client)
    }

    /// A client for `bucket` at `origin` (`http://127.0.0.1:7070`), path-style, signing with a
    /// fixed key.
    pub fn with_key(origin: &str, bucket: &str, region: &str, key: AwsKey) -> S3 {
        let credentials: AwsCredentialProvider = Arc::new(StaticCredentialProvider::new(AwsCredential {
            key_id: key.access_key_id,
            secret_key: key.secret_access_key,
            token: key.session_token,
        }));
        S3::new(origin.trim_end_matches('/'), &format!("/{bucket}"), bucket, region, credentials)
    }

    fn new(origin: &str, prefix: &str, bucket: &str, region: &str, credentials: AwsCredentialProvider) -> S3 {
        let host = origin.split_once("://").map_or(origin, |(_, h)| h).split('/').next().unwrap_or("").to_string();
        S3 {
            origin: origin.to_string(),
            host,
            prefix: prefix.to_string(),
            region: region.to_string(),
            credentials,
            bucket: bucket.to_string(),
        }
    }

    async fn key(&self) -> std::result::Result<AwsKey, RestError> {
        let c = self.credentials.get_credential().await.map_err(|e| RestError {
            status: None,
            code: "Credentials".into(),
            message: format!("no AWS credentials: {e}"),
        })?;
        Ok(AwsKey {
            access_key_id: c.key_id.clone(),
            secret_access_key: c.secret_key.clone(),
            session_token: c.token.clone(),
        })
    }

    fn path(&self, key: &str) -> String {
        format!("{}/{}", self.prefix, uri_encode(key, true))
    }

    /// A signed request. `checksum_headers` are sent and signed as they are; the payload is
    /// signed by its SHA-256 unless `unsigned_payload` (large parts: their MD5 protects them).
    async fn request(
        &self,
        method: reqwest::Method,
        key: &str,
        query: &[(String, String)],
        mut headers: Vec<(String, String)>,
        body: Bytes,
        unsigned_payload: bool,
    ) -> std::result::Result<reqwest::RequestBuilder, RestError> {
        let aws = self.key().await?;
        let time = UtcTime::now();
        let payload_hash = if unsigned_payload { "UNSIGNED-PAYLOAD".to_string() } else { hex(&sha256(&body)) };
        headers.push(("host".into(), self.host.clone()));
        headers.push(("x-amz-date".into(), time.amz()));
        headers.push(("x-amz-content-sha256".into(), payload_hash.clone()));
        if let Some(t) = &aws.session_token {
            headers.push(("x-amz-security-token".into(), t.clone()));
        }
        let path = self.path(key);
        let signer = SigV4 { key: &aws, region: &self.region, service: "s3", time };
        let auth = signer.authorization(&SignedRequest {
            method: method.as_str(),
            path: &path,
            query,
            headers: &headers,
            payload_hash: &payload_hash,
        });
        headers.push(("authorization".into(), auth));
        let query: Vec<String> = query
            .iter()
            .map(|(k, v)| match v.is_empty() {
                true => uri_encode(k, false),
                false => format!("{}={}", uri_encode(k, false), uri_encode(v, false)),
            })
            .collect();
        Ok(rest::request(method, &format!("{}{path}", self.origin), &query, &headers, body))
    }

    fn error(&self, key: &str, what: &str, e: RestError) -> Error {
        let kind = if e.status == Some(404) { ErrorKind::NotFound } else { ErrorKind::Io };
        Error::new(kind, format!("s3://{}/{key}: {what}: {e}", self.bucket))
    }

    /// CreateMultipartUpload: the upload id.
    pub async fn create_multipart(&self, key: &str) -> Result<String> {
        let q = [("uploads".to_string(), String::new())];
        let headers = vec![("x-amz-checksum-algorithm".to_string(), "CRC32C".to_string())];
        let r = rest::send(|| self.request(reqwest::Method::POST, key, &q, headers.clone(), Bytes::new(), false))
            .await
            .map_err(|e| self.error(key, "cannot start the upload", e))?;
        xml_value(&r.text(), "UploadId").ok_or_else(|| {
            Error::new(ErrorKind::Io, format!("s3://{}/{key}: no UploadId in {}", self.bucket, r.text()))
        })
    }

    /// UploadPart with the body's checksums.
    pub async fn upload_part(&self, key: &str, upload_id: &str, number: u32, body: Bytes) -> Result<Part> {
        let checksums = PartChecksums::of(&body);
        self.upload_part_with_checksums(key, upload_id, number, body, checksums).await
    }

    /// UploadPart declaring `checksums` as the body's (`Content-MD5`, `x-amz-checksum-crc32c`,
    /// computed where the bytes were read): the server refuses the part (`BadDigest`) when the
    /// body it received has others.
    pub async fn upload_part_with_checksums(
        &self,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
        checksums: PartChecksums,
    ) -> Result<Part> {
        let md5 = base64(&checksums.md5);
        let crc32c = base64(&checksums.crc32c.to_be_bytes());
        let q = [("partNumber".to_string(), number.to_string()), ("uploadId".to_string(), upload_id.to_string())];
        let r = rest::send(|| {
            let headers = vec![("content-md5".to_string(), md5.clone()), (CRC32C_HEADER.to_string(), crc32c.clone())];
            self.request(reqwest::Method::PUT, key, &q, headers, body.clone(), true)
        })
        .await
        .map_err(|e| self.error(key, &format!("part {number} refused"), e))?;
        let etag = r
            .header("etag")
            .map(String::from)
            .ok_or_else(|| Error::new(ErrorKind::Io, format!("s3://{}/{key}: part {number}: no ETag", self.bucket)))?;
        Ok(Part { number, etag, crc32c })
    }

    /// CompleteMultipartUpload with the parts, in order.
    pub async fn complete(&self, key: &str, upload_id: &str, parts: &[Part]) -> Result<()> {
        let mut xml = String::from("<CompleteMultipartUpload>");
        for p in parts {
            xml.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag><ChecksumCRC32C>{}</ChecksumCRC32C></Part>",
                p.number,
                xml_escape(&p.etag),
                p.crc32c
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let body = Bytes::from(xml);
        let q = [("uploadId".to_string(), upload_id.to_string())];
        let r = rest::send(|| self.request(reqwest::Method::POST, key, &q, Vec::new(), body.clone(), false))
            .await
            .map_err(|e| self.error(key, "cannot complete the upload", e))?;
        // S3 may answer 200 with an error inside.
        if let Some(code) = xml_value(&r.text(), "Code") {
            return Err(Error::new(
                ErrorKind::Io,
                format!("s3://{}/{key}: cannot complete the upload: {code}", self.bucket),
            ));
        }
        Ok(())
    }

    /// AbortMultipartUpload (the parts sent are deleted).
    pub async fn abort(&self, key: &str, upload_id: &str) -> Result<()> {
        let q = [("uploadId".to_string(), upload_id.to_string())];
        rest::send(|| self.request(reqwest::Method::DELETE, key, &q, Vec::new(), Bytes::new(), false))
            .await
            .map(|_| ())
            .map_err(|e| self.error(key, "cannot abort the upload", e))
    }

    /// A presigned GET URL for `key`, valid `expires` seconds from now (at most 7 days).
    pub async fn presign_get(&self, key: &str, expires: u64) -> Result<String> {
        if expires == 0 || expires > MAX_PRESIGN_SECONDS {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("s3://{}/{key}: a presigned URL lasts 1 s to 7 days (604800 s), not {expires} s", self.bucket),
            ));
        }
        let aws = self.key().await.map_err(|e| self.error(key, "cannot sign", e))?;
        let path = self.path(key);
        let signer = SigV4 { key: &aws, region: &self.region, service: "s3", time: UtcTime::now() };
        Ok(format!("{}{path}?{}", self.origin, signer.presign("GET", &self.host, &path, expires)))
    }
}
