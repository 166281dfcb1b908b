//! What the hand-signed REST clients ([`super::s3`], [`super::azure`]) share: one HTTP client,
//! retries with backoff, error bodies turned into messages, and the little XML they read.
//!
//! A request is retried (up to [`RETRIES`] times, 100 ms doubling) when it did not reach the
//! server, when the server answers 5xx or 429, or when it says the body did not match its
//! checksum (`BadDigest`, `Md5Mismatch`, ...): the bytes sent are kept in memory, so sending them
//! again repairs damage done in flight. Anything else fails at once.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;

/// Retries after the first attempt.
pub const RETRIES: u32 = 4;

pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(120))
            .build()
            .expect("an HTTP client")
    })
}

/// A finished response.
#[derive(Debug)]
pub struct Response {
    pub headers: reqwest::header::HeaderMap,
    pub body: Bytes,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A failed request: the HTTP status (none when the server was not reached), the service's
/// error code and message.
#[derive(Debug, Clone)]
pub struct RestError {
    pub status: Option<u16>,
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "HTTP {s} {}: {}", self.code, self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl RestError {
    fn retryable(&self) -> bool {
        match self.status {
            None => true,
            Some(s) if s >= 500 || s == 429 || s == 408 => true,
            _ => {
                matches!(
                    self.code.as_str(),
                    "BadDigest" | "Md5Mismatch" | "RequestTimeout" | "XAmzContentSHA256Mismatch"
                ) || self.code.starts_with("InvalidChecksum")
                    || self.code.contains("ChecksumMismatch")
            }
        }
    }
}

/// The answers these clients read are small XML documents; a larger one is refused rather than
/// held in memory.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;

async fn read_body(mut response: reqwest::Response) -> Result<Bytes, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(format!("the server's answer is larger than {MAX_RESPONSE_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}

/// Sends the request `build` makes (called again for each attempt: signatures carry the time)
/// and returns the response of the first 2xx answer.
pub async fn send<F, Fut>(mut build: F) -> Result<Response, RestError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<reqwest::RequestBuilder, RestError>>,
{
    let mut attempt = 0;
    loop {
        let result = match build().await?.send().await {
            Err(e) => Err(RestError { status: None, code: String::new(), message: e.to_string() }),
            Ok(r) => {
                let status = r.status().as_u16();
                let headers = r.headers().clone();
                match read_body(r).await {
                    Err(message) => Err(RestError { status: None, code: String::new(), message }),
                    Ok(body) if (200..300).contains(&status) => Ok(Response { headers, body }),
                    Ok(body) => {
                        let text = String::from_utf8_lossy(&body);
                        let code = xml_value(&text, "Code")
                            .or_else(|| headers.get("x-ms-error-code").and_then(|v| v.to_str().ok()).map(String::from))
                            .unwrap_or_default();
                        let message = xml_value(&text, "Message").unwrap_or_else(|| text.chars().take(300).collect());
                        Err(RestError {
                            status: Some(status),
                            code,
                            message: message.lines().next().unwrap_or("").into(),
                        })
                    }
                }
            }
        };
        match result {
            Err(e) if e.retryable() && attempt < RETRIES => {
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The text of every `<tag>...</tag>` element, unescaped (enough for the flat answers S3 and
/// Azure send).
pub fn xml_values(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        out.push(xml_unescape(&after[..end]));
        rest = &after[end + close.len()..];
    }
    out
}

pub fn xml_value(xml: &str, tag: &str) -> Option<String> {
    xml_values(xml, tag).into_iter().next()
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_xml() {
        let x = "<R><Key>a&amp;b</Key><Key>c</Key><UploadId>u</UploadId></R>";
        assert_eq!(xml_values(x, "Key"), vec!["a&b", "c"]);
        assert_eq!(xml_value(x, "UploadId").as_deref(), Some("u"));
        assert_eq!(xml_value(x, "Nope"), None);
        assert_eq!(xml_escape("a<&>'\""), "a&lt;&amp;&gt;&apos;&quot;");
    }
}
