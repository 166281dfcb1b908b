//! Request signing done here rather than by `object_store`: AWS Signature Version 4 (headers and
//! presigned query strings), Azure Shared Key, and the hashes, encodings and UTC dates they need.
//!
//! SigV4 ([AWS docs](https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)):
//! a canonical request (method, URI-encoded path, sorted query, sorted lower-case headers, the
//! signed header names, the payload's SHA-256 or `UNSIGNED-PAYLOAD`) is hashed into a string to
//! sign, which is signed with a key derived by HMAC-SHA256 chaining the secret through date,
//! region, service and `aws4_request`. The unit tests check the examples of the S3 documentation.
//!
//! Azure Shared Key: the verb, the standard headers, the `x-ms-*` headers and the resource
//! (`/account/container/blob` plus sorted query parameters) one a line, HMAC-SHA256 with the
//! base64-decoded account key.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha2::{Digest, Sha256};

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

/// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor all ones),
/// the `x-amz-checksum-crc32c` of S3's additional checksums.
pub fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table = [0u32; 256];
        for (i, entry) in table.iter_mut().enumerate() {
            let mut crc = i as u32;
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
            }
            *entry = crc;
        }
        table
    });
    !data.iter().fold(!0u32, |crc, &b| (crc >> 8) ^ table[((crc ^ u32::from(b)) & 0xFF) as usize])
}

pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

pub fn base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Percent-encoding as SigV4 and Azure want it: unreserved characters (`A-Z a-z 0-9 - . _ ~`)
/// kept, everything else `%XX` (upper case); `/` kept when `keep_slash`.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A UTC instant broken into calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub unix: i64,
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl UtcTime {
    pub fn now() -> Self {
        Self::from_unix(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64))
    }

    pub fn from_unix(unix: i64) -> Self {
        let days = unix.div_euclid(86_400);
        let secs = unix.rem_euclid(86_400);
        // Days to civil date (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        UtcTime {
            unix,
            year,
            month,
            day,
            hour: (secs / 3600) as u32,
            minute: (secs / 60 % 60) as u32,
            second: (secs % 60) as u32,
        }
    }

    /// `2026-01-31T12:00:00Z` or `2026-01-31` (midnight), UTC; `None` for anything else.
    pub fn parse_iso8601(text: &str) -> Option<Self> {
        let (date, time) = match text.split_once('T') {
            Some((d, t)) => (d, t.strip_suffix('Z')?),
            None => (text, "00:00:00"),
        };
        let number = |s: &str, digits: usize| {
            (s.len() == digits && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<i64>().ok()).flatten()
        };
        let mut d = date.split('-');
        let (year, month, day) = (number(d.next()?, 4)?, number(d.next()?, 2)?, number(d.next()?, 2)?);
        let mut t = time.split(':');
        let (hour, minute, second) = (number(t.next()?, 2)?, number(t.next()?, 2)?, number(t.next()?, 2)?);
        if d.next().is_some()
            || t.next().is_some()
            || !(1..=12).contains(&month)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        // Civil date to days (Howard Hinnant's algorithm).
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (month + 9) % 12;
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        let parsed = Self::from_unix(days * 86_400 + hour * 3600 + minute * 60 + second);
        // Day 31 of a 30-day month would roll over: refuse it.
        (parsed.day as i64 == day).then_some(parsed)
    }

    pub fn plus(self, seconds: i64) -> Self {
        Self::from_unix(self.unix + seconds)
    }

    /// `20130524T000000Z`
    pub fn amz(&self) -> String {
        format!("{}T{:02}{:02}{:02}Z", self.date(), self.hour, self.minute, self.second)
    }

    /// `20130524`
    pub fn date(&self) -> String {
        format!("{:04}{:02}{:02}", self.year, self.month, self.day)
    }

    /// `2013-05-24T00:00:00Z`
    pub fn iso8601(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `Fri, 24 May 2013 00:00:00 GMT` (HTTP dates, Azure's `x-ms-date`).
    pub fn rfc1123(&self) -> String {
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            DAYS[self.unix.div_euclid(86_400).rem_euclid(7) as usize],
            self.day,
            MONTHS[self.month as usize - 1],
            self.year,
            self.hour,
            self.minute,
            self.second
        )
    }
}

/// AWS credentials for signing.
#[derive(Debug, Clone)]
pub struct AwsKey {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

/// What SigV4 signs a request for.
#[derive(Debug, Clone)]
pub struct SigV4<'a> {
    pub key: &'a AwsKey,
    pub region: &'a str,
    pub service: &'a str,
    pub time: UtcTime,
}

/// The canonical query string: pairs encoded and sorted.
fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> =
        query.iter().map(|(k, v)| (uri_encode(k, false), uri_encode(v, false))).collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

/// The parts of a request that SigV4 signs.
pub struct SignedRequest<'a> {
    pub method: &'a str,
    /// Already URI-encoded.
    pub path: &'a str,
    /// Raw pairs.
    pub query: &'a [(String, String)],
    /// Names in any case, sorted or not.
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
}

impl SignedRequest<'_> {
    /// The canonical request and the list of signed headers.
    fn canonical(&self) -> (String, String) {
        let mut headers: Vec<(String, String)> =
            self.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string())).collect();
        headers.sort();
        let signed = headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
        let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let request = format!(
            "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
            self.method,
            self.path,
            canonical_query(self.query),
            self.payload_hash
        );
        (request, signed)
    }
}

impl SigV4<'_> {
    fn scope(&self) -> String {
        format!("{}/{}/{}/aws4_request", self.time.date(), self.region, self.service)
    }

    fn signing_key(&self) -> [u8; 32] {
        let k = hmac_sha256(format!("AWS4{}", self.key.secret_access_key).as_bytes(), self.time.date().as_bytes());
        let k = hmac_sha256(&k, self.region.as_bytes());
        let k = hmac_sha256(&k, self.service.as_bytes());
        hmac_sha256(&k, b"aws4_request")
    }

    /// The request's signature: HMAC of the string to sign with the day's derived key.
    fn signature(&self, request: &SignedRequest) -> String {
        let (canonical, _) = request.canonical();
        let string_to_sign =
            format!("AWS4-HMAC-SHA256\n{}\n{}\n{}", self.time.amz(), self.scope(), hex(&sha256(canonical.as_bytes())));
        hex(&hmac_sha256(&self.signing_key(), string_to_sign.as_bytes()))
    }

    /// The `Authorization` header for a request whose `headers` include `host`,
    /// `x-amz-date` (= [`UtcTime::amz`]), `x-amz-content-sha256` (= `payload_hash`) and any
    /// other header to sign.
    pub fn authorization(&self, request: &SignedRequest) -> String {
        let (_, signed) = request.canonical();
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={signed}, Signature={}",
            self.key.access_key_id,
            self.scope(),
            self.signature(request)
        )
    }

    /// A presigned URL's query string (query authentication, `host` the only signed header):
    /// anyone holding it may send `method` to `path` until `expires` seconds after the signing
    /// time.
    pub fn presign(&self, method: &str, host: &str, path: &str, expires: u64) -> String {
        let mut query = vec![
            ("X-Amz-Algorithm".to_string(), "AWS4-HMAC-SHA256".to_string()),
            ("X-Amz-Credential".to_string(), format!("{}/{}", self.key.access_key_id, self.scope())),
            ("X-Amz-Date".to_string(), self.time.amz()),
            ("X-Amz-Expires".to_string(), expires.to_string()),
            ("X-Amz-SignedHeaders".to_string(), "host".to_string()),
        ];
        if let Some(token) = &self.key.session_token {
            query.push(("X-Amz-Security-Token".to_string(), token.clone()));
        }
        let headers = [("host".to_string(), host.to_string())];
        let signature = self.signature(&SignedRequest {
            method,
            path,
            query: &query,
            headers: &headers,
            payload_hash: "UNSIGNED-PAYLOAD",
        });
        format!("{}&X-Amz-Signature={signature}", canonical_query(&query))
    }
}

/// The Azure Shared Key string to sign (blob service, version 2015-02-21 and later).
/// `headers` holds every header of the request (any case); `resource` is
/// `/account/container/blob`; `query` the raw query pairs.
pub fn azure_string_to_sign(
    method: &str,
    headers: &[(String, String)],
    resource: &str,
    query: &[(String, String)],
) -> String {
    let get =
        |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).unwrap_or("");
    let length = match get("content-length") {
        "0" => "",
        l => l,
    };
    let mut ms: Vec<(String, String)> = headers
        .iter()
        .filter(|(k, _)| k.to_ascii_lowercase().starts_with("x-ms-"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    ms.sort();
    let mut q: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
    q.sort();
    let mut s = format!(
        "{method}\n{}\n{}\n{length}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
        get("content-encoding"),
        get("content-language"),
        get("content-md5"),
        get("content-type"),
        get("date"),
        get("if-modified-since"),
        get("if-match"),
        get("if-none-match"),
        get("if-unmodified-since"),
        get("range"),
    );
    for (k, v) in ms {
        s.push_str(&format!("{k}:{v}\n"));
    }
    s.push_str(resource);
    for (k, v) in q {
        s.push_str(&format!("\n{k}:{v}"));
    }
    s
}

/// HMAC-SHA256 of `string_to_sign` with a base64 account key, base64-encoded.
pub fn azure_signature(account_key: &str, string_to_sign: &str) -> Result<String, String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(account_key.trim())
        .map_err(|e| format!("the account key is not base64: {e}"))?;
    Ok(base64(&hmac_sha256(&key, string_to_sign.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example_key() -> AwsKey {
        AwsKey {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn example_time() -> UtcTime {
        // 2013-05-24T00:00:00Z
        UtcTime::from_unix(1_369_353_600)
    }

    #[test]
    fn dates() {
        let t = example_time();
        assert_eq!(t.amz(), "20130524T000000Z");
        assert_eq!(t.iso8601(), "2013-05-24T00:00:00Z");
        assert_eq!(t.rfc1123(), "Fri, 24 May 2013 00:00:00 GMT");
        assert_eq!(UtcTime::from_unix(0).rfc1123(), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(UtcTime::from_unix(951_782_400).iso8601(), "2000-02-29T00:00:00Z");
        assert_eq!(UtcTime::parse_iso8601("2013-05-24T00:00:00Z"), Some(t));
        assert_eq!(UtcTime::parse_iso8601("2000-02-29").map(|t| t.unix), Some(951_782_400));
        assert_eq!(UtcTime::parse_iso8601("1970-01-01T00:00:01Z").map(|t| t.unix), Some(1));
        for bad in ["2013-02-30", "2013-05-24T00:00:00", "2013-5-24", "2013-05-24T24:00:00Z", "tomorrow"] {
            assert_eq!(UtcTime::parse_iso8601(bad), None, "{bad}");
        }
    }

    /// The GET Object example of the S3 SigV4 documentation (header authentication).
    #[test]
    fn sigv4_header_example() {
        let key = example_key();
        let s = SigV4 { key: &key, region: "us-east-1", service: "s3", time: example_time() };
        let empty = hex(&sha256(b""));
        let headers = [
            ("host".to_string(), "examplebucket.s3.amazonaws.com".to_string()),
            ("range".to_string(), "bytes=0-9".to_string()),
            ("x-amz-content-sha256".to_string(), empty.clone()),
            ("x-amz-date".to_string(), "20130524T000000Z".to_string()),
        ];
        assert_eq!(
            s.authorization(&SignedRequest {
                method: "GET",
                path: "/test.txt",
                query: &[],
                headers: &headers,
                payload_hash: &empty
            }),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    /// The presigned URL example of the S3 SigV4 documentation (query authentication).
    #[test]
    fn sigv4_presign_example() {
        let key = example_key();
        let s = SigV4 { key: &key, region: "us-east-1", service: "s3", time: example_time() };
        let q = s.presign("GET", "examplebucket.s3.amazonaws.com", "/test.txt", 86_400);
        assert!(q.ends_with("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"), "{q}");
        assert!(q.contains("X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"));
    }

    /// The check value of the CRC-32C catalogue entry, and RFC 3720's (iSCSI) example of 32 zero
    /// bytes.
    #[test]
    fn crc32c_check_values() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn encodes_uris() {
        assert_eq!(uri_encode("a b/c+d~é", true), "a%20b/c%2Bd~%C3%A9");
        assert_eq!(uri_encode("a/b", false), "a%2Fb");
    }

    #[test]
    fn azure_strings_to_sign() {
        let headers = [
            ("Content-Length".to_string(), "0".to_string()),
            ("x-ms-version".to_string(), "2021-08-06".to_string()),
            ("x-ms-date".to_string(), "Fri, 24 May 2013 00:00:00 GMT".to_string()),
            ("Range".to_string(), "bytes=0-9".to_string()),
        ];
        let s = azure_string_to_sign(
            "GET",
            &headers,
            "/acct/c/b",
            &[("comp".into(), "block".into()), ("blockid".into(), "QUJD".into())],
        );
        assert_eq!(
            s,
            "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\nx-ms-date:Fri, 24 May 2013 00:00:00 GMT\nx-ms-version:2021-08-06\n\
             /acct/c/b\nblockid:QUJD\ncomp:block"
        );
        assert!(azure_signature("not base64!", &s).is_err());
        assert_eq!(azure_signature("a2V5", "x").unwrap(), base64(&hmac_sha256(b"key", b"x")));
    }
}
