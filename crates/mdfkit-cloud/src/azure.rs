//! A small Azure Blob client of our own: block blobs written with Put Block (a `Content-MD5` on
//! every block, checked by the service) and Put Block List, and service SAS links for sharing.
//!
//! Signed with Shared Key ([`super::sign::azure_string_to_sign`]) when an account key is set
//! (`AZURE_STORAGE_ACCOUNT_KEY`, or Azurite's well-known key with
//! `AZURE_STORAGE_USE_EMULATOR=true`), or authorised by a SAS token (`AZURE_STORAGE_SAS_KEY`).
//! Other credentials (service principals, managed identity) are left to `object_store`
//! ([`Azure::for_url`] answers `None`).
//!
//! Block ids are URL-safe base64 of `mdfkit-block-NNNNNNNN` (the block number, 8 digits): the
//! same length for every block of a blob, as the service requires, and made of letters and
//! digits only, so no escaping is needed anywhere.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use bytes::Bytes;
use object_store::azure::AzureConfigKey;

use super::rest::{self, xml_escape, RestError};
use super::sign::{azure_signature, azure_string_to_sign, base64, md5, uri_encode, UtcTime};
use super::{azure_builder, ClientCache, ObjectUrl};
use mdfkit::{Error, ErrorKind, Result};

/// The storage service version the requests speak.
pub const API_VERSION: &str = "2021-08-06";
/// The version of the SAS links made by [`Azure::sas_url`].
pub const SAS_VERSION: &str = "2020-12-06";
/// Azurite's account and its published key.
const EMULATOR_ACCOUNT: &str = "devstoreaccount1";
const EMULATOR_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

#[derive(Clone)]
enum Auth {
    Key(String),
    Sas(String),
}

/// One container's client.
pub struct Azure {
    /// The account URL: `https://acct.blob.core.windows.net` or `http://127.0.0.1:10000/devstoreaccount1`.
    account_url: String,
    account: String,
    auth: Auth,
    container: String,
}

/// The id of block `n` (see the module notes).
pub fn block_id(n: u32) -> String {
    base64::engine::general_purpose::URL_SAFE.encode(format!("mdfkit-block-{n:08}"))
}

/// An IPv4 address or CIDR block as a SAS `sip` value (`a.b.c.d` or `first-last`).
pub fn sas_ip_range(ip: &str) -> Result<String> {
    let bad = || {
        Error::new(ErrorKind::NotFound, format!("{ip}: not an IPv4 address or CIDR block (Azure SAS take IPv4 only)"))
    };
    let (addr, bits) = match ip.split_once('/') {
        Some((a, b)) => (a, b.parse::<u32>().map_err(|_| bad())?),
        None => (ip, 32),
    };
    let addr: std::net::Ipv4Addr = addr.parse().map_err(|_| bad())?;
    if bits > 32 {
        return Err(bad());
    }
    if bits == 32 {
        return Ok(addr.to_string());
    }
    let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
    let first = u32::from(addr) & mask;
    let last = first | !mask;
    Ok(format!("{}-{}", std::net::Ipv4Addr::from(first), std::net::Ipv4Addr::from(last)))
}

impl Azure {
    /// The client for `url`'s container, or `None` when the credentials are neither an account
    /// key nor a SAS token.
    pub fn for_url(url: &ObjectUrl) -> Result<Option<Arc<Azure>>> {
        static CLIENTS: OnceLock<ClientCache<Azure>> = OnceLock::new();
        let clients = CLIENTS.get_or_init(|| Mutex::new(HashMap::new()));
        let cache_key = (url.bucket.clone(), super::endpoint_option());
        if let Some(c) = clients.lock().unwrap_or_else(|e| e.into_inner()).get(&cache_key) {
            return Ok(Some(Arc::clone(c)));
        }
        let b = azure_builder(url);
        let get = |k: AzureConfigKey| b.get_config_value(&k).filter(|v| !v.is_empty());
        let emulator = get(AzureConfigKey::UseEmulator).is_some_and(|v| v == "true");
        let account = get(AzureConfigKey::AccountName).or_else(|| emulator.then(|| EMULATOR_ACCOUNT.to_string()));
        let Some(account) = account else {
            return Err(Error::new(ErrorKind::Io, format!("{url}: no Azure account (AZURE_STORAGE_ACCOUNT_NAME)")));
        };
        let auth = match (get(AzureConfigKey::AccessKey), get(AzureConfigKey::SasKey)) {
            (Some(k), _) => Auth::Key(k),
            (None, Some(sas)) => Auth::Sas(sas.trim_start_matches('?').to_string()),
            (None, None) if emulator => Auth::Key(EMULATOR_KEY.to_string()),
            (None, None) => return Ok(None),
        };
        let account_url = match get(AzureConfigKey::Endpoint) {
            Some(e) => e.trim_end_matches('/').to_string(),
            None if emulator => {
                let host =
                    std::env::var("AZURITE_BLOB_STORAGE_URL").unwrap_or_else(|_| "http://127.0.0.1:10000".into());
                format!("{}/{account}", host.trim_end_matches('/'))
            }
            None => format!("https://{account}.blob.core.windows.net"),
        };
        let client = Arc::new(Azure { account_url, account, auth, container: url.bucket.clone() });
        clients.lock().unwrap_or_else(|e| e.into_inner()).insert(cache_key, Arc::clone(&client));
        Ok(Some(client))
    }

    /// A client for `container` of `account` at `account_url` (for Azurite
    /// `http://127.0.0.1:10000/devstoreaccount1`), signing with the base64 account key.
    pub fn with_key(account_url: &str, account: &str, key: &str, container: &str) -> Azure {
        Azure {
            account_url: account_url.trim_end_matches('/').to_string(),
            account: account.to_string(),
            auth: Auth::Key(key.to_string()),
            container: container.to_string(),
        }
    }

    /// The blob's URL path after the account URL's own path: `/container/blob`, encoded.
    fn blob_path(&self, blob: &str) -> String {
        format!("/{}/{}", self.container, uri_encode(blob, true))
    }

    fn request(
        &self,
        method: reqwest::Method,
        blob: &str,
        query: &[(String, String)],
        mut headers: Vec<(String, String)>,
        body: Bytes,
    ) -> std::result::Result<reqwest::RequestBuilder, RestError> {
        headers.push(("x-ms-date".into(), UtcTime::now().rfc1123()));
        headers.push(("x-ms-version".into(), API_VERSION.into()));
        headers.push(("content-length".into(), body.len().to_string()));
        let mut query_string: Vec<String> =
            query.iter().map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false))).collect();
        let url_path = self.blob_path(blob);
        match &self.auth {
            Auth::Key(key) => {
                // The resource is the account followed by the whole URL path (which, for
                // Azurite's path-style URLs, starts with the account again).
                let account_path = self.account_url.split_once("://").map_or("", |(_, r)| r);
                let account_path = account_path.find('/').map_or("", |i| &account_path[i..]);
                let resource = format!("/{}{account_path}{url_path}", self.account);
                let to_sign = azure_string_to_sign(method.as_str(), &headers, &resource, query);
                let signature = azure_signature(key, &to_sign).map_err(|message| RestError {
                    status: None,
                    code: "Credentials".into(),
                    message,
                })?;
                headers.push(("authorization".into(), format!("SharedKey {}:{signature}", self.account)));
            }
            Auth::Sas(sas) => query_string.push(sas.clone()),
        }
        let url = format!("{}{url_path}", self.account_url);
        Ok(rest::request(method, &url, &query_string, &headers, body))
    }

    fn error(&self, blob: &str, what: &str, e: RestError) -> Error {
        let kind = if e.status == Some(404) { ErrorKind::NotFound } else { ErrorKind::Io };
        Error::new(kind, format!("az://{}/{blob}: {what}: {e}", self.container))
    }

    /// Put Block with the body's `Content-MD5`: the block's id.
    pub async fn put_block(&self, blob: &str, number: u32, body: Bytes) -> Result<String> {
        let digest = md5(&body);
        self.put_block_with_md5(blob, number, body, digest).await
    }

    /// Put Block declaring `md5` as the body's MD5: the service refuses the block
    /// (`Md5Mismatch`) when the body it received has another.
    pub async fn put_block_with_md5(&self, blob: &str, number: u32, body: Bytes, md5: [u8; 16]) -> Result<String> {
        let id = block_id(number);
        let digest = base64(&md5);
        let q = [("comp".to_string(), "block".to_string()), ("blockid".to_string(), id.clone())];
        rest::send(|| {
            let r = self.request(
                reqwest::Method::PUT,
                blob,
                &q,
                vec![("content-md5".into(), digest.clone())],
                body.clone(),
            );
            async move { r }
        })
        .await
        .map_err(|e| self.error(blob, &format!("block {number} refused"), e))?;
        Ok(id)
    }

    /// Put Block List: the blob becomes these blocks, in order.
    pub async fn put_block_list(&self, blob: &str, ids: &[String]) -> Result<()> {
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
        for id in ids {
            xml.push_str(&format!("<Latest>{}</Latest>", xml_escape(id)));
        }
        xml.push_str("</BlockList>");
        let body = Bytes::from(xml);
        let digest = base64(&md5(&body));
        let q = [("comp".to_string(), "blocklist".to_string())];
        rest::send(|| {
            let headers =
                vec![("content-md5".into(), digest.clone()), ("content-type".into(), "application/xml".into())];
            let r = self.request(reqwest::Method::PUT, blob, &q, headers, body.clone());
            async move { r }
        })
        .await
        .map(|_| ())
        .map_err(|e| self.error(blob, "cannot commit the block list", e))
    }

    /// A read-only service SAS link to `blob`, valid until `expiry` (and from `start` if given),
    /// for the addresses of `ip` (an IPv4 address or CIDR block) if given. Returns the URL and
    /// the string that was signed.
    pub fn sas_url(
        &self,
        blob: &str,
        start: Option<UtcTime>,
        expiry: UtcTime,
        ip: Option<&str>,
    ) -> Result<(String, String)> {
        let Auth::Key(key) = &self.auth else {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "az://{}/{blob}: a SAS link is signed with the account key (AZURE_STORAGE_ACCOUNT_KEY)",
                    self.container
                ),
            ));
        };
        let sip = ip.map(sas_ip_range).transpose()?.unwrap_or_default();
        let st = start.map(|t| t.iso8601()).unwrap_or_default();
        let se = expiry.iso8601();
        let resource = format!("/blob/{}/{}/{blob}", self.account, self.container);
        // signedPermissions, signedStart, signedExpiry, canonicalizedResource, signedIdentifier,
        // signedIP, signedProtocol, signedVersion, signedResource, signedSnapshotTime,
        // signedEncryptionScope, rscc, rscd, rsce, rscl, rsct.
        // HTTPS only, unless the service itself is plain HTTP (an emulator).
        let spr = if self.account_url.starts_with("http://") { "" } else { "https" };
        let to_sign = format!("r\n{st}\n{se}\n{resource}\n\n{sip}\n{spr}\n{SAS_VERSION}\nb\n\n\n\n\n\n\n");
        let sig = azure_signature(key, &to_sign).map_err(|m| Error::new(ErrorKind::Io, m))?;
        let mut q = vec![("sv", SAS_VERSION.to_string()), ("sr", "b".into()), ("sp", "r".into())];
        if !st.is_empty() {
            q.push(("st", st));
        }
        q.push(("se", se));
        if !sip.is_empty() {
            q.push(("sip", sip));
        }
        if !spr.is_empty() {
            q.push(("spr", spr.to_string()));
        }
        q.push(("sig", sig));
        let query: Vec<String> = q.iter().map(|(k, v)| format!("{k}={}", uri_encode(v, false))).collect();
        Ok((format!("{}{}?{}", self.account_url, self.blob_path(blob), query.join("&")), to_sign))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_have_one_length_and_need_no_escaping() {
        let len = block_id(1).len();
        for n in (1..=50_000).step_by(7).chain([50_000, 99_999_999]) {
            let id = block_id(n);
            assert_eq!(id.len(), len);
            assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()), "{id}");
        }
    }

    /// A SAS limited to an address range and HTTPS: the string to sign has the 16 fields of the
    /// service SAS for version 2020-12-06 in their documented order
    /// (<https://learn.microsoft.com/rest/api/storageservices/create-service-sas>), and the URL
    /// carries each field and the HMAC-SHA256 of that string under the account key.
    #[test]
    fn sas_with_an_address_range() {
        use hmac::{Hmac, KeyInit, Mac};
        let key = base64(b"an account key for this test");
        let azure = Azure::with_key("https://acct.blob.core.windows.net", "acct", &key, "backups");
        let start = UtcTime::parse_iso8601("2026-01-31T08:00:00Z");
        let expiry = UtcTime::parse_iso8601("2026-02-01T08:00:00Z").unwrap();
        let (url, to_sign) = azure.sas_url("dir/prod db.bak", start, expiry, Some("203.0.113.0/24")).unwrap();
        assert_eq!(
            to_sign,
            "r\n2026-01-31T08:00:00Z\n2026-02-01T08:00:00Z\n/blob/acct/backups/dir/prod db.bak\n\n\
             203.0.113.0-203.0.113.255\nhttps\n2020-12-06\nb\n\n\n\n\n\n\n"
        );
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"an account key for this test").unwrap();
        mac.update(to_sign.as_bytes());
        let signature = uri_encode(&base64(&mac.finalize().into_bytes()), false);
        assert_eq!(
            url,
            format!(
                "https://acct.blob.core.windows.net/backups/dir/prod%20db.bak?sv=2020-12-06&sr=b&sp=r&\
                 st=2026-01-31T08%3A00%3A00Z&se=2026-02-01T08%3A00%3A00Z&sip=203.0.113.0-203.0.113.255&spr=https&\
                 sig={signature}"
            )
        );
        // Plain HTTP (an emulator): no protocol restriction, no start.
        let local = Azure::with_key("http://127.0.0.1:10000/devstoreaccount1", "devstoreaccount1", &key, "c");
        let (url, to_sign) = local.sas_url("b", None, expiry, None).unwrap();
        assert_eq!(to_sign, "r\n\n2026-02-01T08:00:00Z\n/blob/devstoreaccount1/c/b\n\n\n\n2020-12-06\nb\n\n\n\n\n\n\n");
        assert!(
            url.starts_with("http://127.0.0.1:10000/devstoreaccount1/c/b?sv=2020-12-06&sr=b&sp=r&se=")
                && !url.contains("spr=")
        );
    }

    #[test]
    fn ip_ranges() {
        assert_eq!(sas_ip_range("10.1.2.3").unwrap(), "10.1.2.3");
        assert_eq!(sas_ip_range("10.1.2.3/24").unwrap(), "10.1.2.0-10.1.2.255");
        assert_eq!(sas_ip_range("192.168.0.0/16").unwrap(), "192.168.0.0-192.168.255.255");
        assert!(sas_ip_range("::1").is_err() && sas_ip_range("1.2.3.4/33").is_err());
    }
}
