//! What the hand-signed REST clients ([`super::s3`], [`super::azure`]) share: one HTTP client,
//! retries with backoff, error bodies turned into messages, and the little XML they read.
//!
//! A request is retried (up to [`RETRIES`] times, 100 ms doubling) when it did not reach the
//! server, when the server answers 5xx or 429, or when it says the body did not match its
//! checksum (`BadDigest`, `Md5Mismatch`, ...): the bytes sent are kept in memory, so sending them
//! again repairs damage done in flight. Anything else fails at once. [`requests_sent_again`]
//! counts the retries of the process, for reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;

/// Retries after the first attempt.
pub const RETRIES: u32 = 4;

static SENT_AGAIN: AtomicU64 = AtomicU64::new(0);

/// Requests these clients have sent again after a failure, in this process.
pub fn requests_sent_again() -> u64 {
    SENT_AGAIN.load(Ordering::Relaxed)
}

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

/// A request to `url` (scheme, host and encoded path) with `query` (encoded `k=v` or `k`) and
/// `headers`, as signed; `host` and `content-length` are signed but left to the HTTP client,
/// which sets them from the URL and the body.
pub fn request(
    method: reqwest::Method,
    url: &str,
    query: &[String],
    headers: &[(String, String)],
    body: Bytes,
) -> reqwest::RequestBuilder {
    let url = if query.is_empty() { url.to_string() } else { format!("{url}?{}", query.join("&")) };
    let mut builder = client().request(method, url).body(body);
    for (k, v) in headers.iter().filter(|(k, _)| k != "host" && k != "content-length") {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder
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
                SENT_AGAIN.fetch_add(1, Ordering::Relaxed);
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
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server on 127.0.0.1 that answers each connection with the next of `answers` (status,
    /// body) and counts the requests it got.
    fn scripted_server(answers: Vec<(u16, &'static str)>) -> (String, std::thread::JoinHandle<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/bucket/key", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let mut served = 0;
            for (status, body) in answers {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = stream.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                served += 1;
                let response =
                    format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                stream.write_all(response.as_bytes()).unwrap();
            }
            served
        });
        (url, handle)
    }

    fn get(url: &str) -> Result<Response, RestError> {
        super::super::block_on(send(|| {
            let request = client().get(url);
            async move { Ok(request) }
        }))
    }

    /// 5xx answers and checksum mismatches are sent again (with backoff) until one succeeds.
    #[test]
    fn retries_server_errors_and_checksum_mismatches() {
        let bad_digest =
            "<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match</Message></Error>";
        let (url, server) = scripted_server(vec![(503, ""), (400, bad_digest), (200, "<R><UploadId>u</UploadId></R>")]);
        let response = get(&url).unwrap();
        assert_eq!(xml_value(&response.text(), "UploadId").as_deref(), Some("u"));
        assert_eq!(server.join().unwrap(), 3);
    }

    /// Other refusals come back at once, with the service's code and message.
    #[test]
    fn does_not_retry_refusals() {
        let denied = "<Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>";
        let (url, server) = scripted_server(vec![(403, denied)]);
        let e = get(&url).unwrap_err();
        assert_eq!((e.status, e.code.as_str(), e.message.as_str()), (Some(403), "AccessDenied", "Access Denied."));
        assert_eq!(server.join().unwrap(), 1);
    }

    /// A server that keeps failing is given up on after [`RETRIES`] retries.
    #[test]
    fn gives_up_after_the_retries() {
        let attempts = RETRIES as usize + 1;
        let (url, server) = scripted_server(vec![(500, ""); attempts]);
        assert_eq!(get(&url).unwrap_err().status, Some(500));
        assert_eq!(server.join().unwrap(), attempts);
    }

    #[test]
    fn reads_xml() {
        let x = "<R><Key>a&amp;b</Key><Key>c</Key><UploadId>u</UploadId></R>";
        assert_eq!(xml_values(x, "Key"), vec!["a&b", "c"]);
        assert_eq!(xml_value(x, "UploadId").as_deref(), Some("u"));
        assert_eq!(xml_value(x, "Nope"), None);
        assert_eq!(xml_escape("a<&>'\""), "a&lt;&amp;&gt;&apos;&quot;");
    }
}
