//! The studio's guard, in front of every route:
//!
//! 1. Only GET and HEAD: the studio is read-only, so any other method (a cross-site form post
//!    included) is refused with 405.
//! 2. The Host header must name a loopback address (`localhost`, `127.0.0.1`, `[::1]`, any port):
//!    a page on another site that rebinds its own name to 127.0.0.1 (DNS rebinding) sends its
//!    own name as Host and is refused with 403. `--host ... --allow-remote` lifts this rule.
//! 3. The session token: `?token=T` on any URL sets an HttpOnly, SameSite=Strict cookie and
//!    redirects to the same URL without it (the token leaves the address bar and the history);
//!    every other request needs that cookie (401 otherwise). Compared in constant time.
//! 4. Every answer carries a strict Content-Security-Policy (only the studio's own script, style
//!    and images; no frames, no form posts elsewhere, no connections elsewhere), no-store,
//!    nosniff, no referrer, and never a CORS header.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::Studio;

/// The cookie holding the session token.
pub const COOKIE: &str = "mdfkit_studio";

/// The Content-Security-Policy of every answer.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// 32 random bytes as hex, from the operating system.
pub fn new_token() -> mdfkit::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| mdfkit::Error::new(mdfkit::ErrorKind::Io, format!("no random bytes for the token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether a Host header names a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':')
            .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host })
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{why}\n")).into_response()
}

/// The token a query string carries, and the query without it.
fn split_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let rest: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("token=") {
            Some(t) => {
                token = Some(t);
                false
            }
            None => !pair.is_empty(),
        })
        .collect();
    (token, rest.join("&"))
}

fn has_cookie(request: &Request, token: &str) -> bool {
    request.headers().get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|line| {
        line.split(';')
            .filter_map(|c| c.trim().split_once('='))
            .any(|(k, v)| k == COOKIE && same(v.as_bytes(), token.as_bytes()))
    })
}

/// The middleware: the rules of the module documentation.
pub async fn guard(State(studio): State<Arc<Studio>>, request: Request, next: Next) -> Response {
    let mut response = check(&studio, request, next).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    response
}

async fn check(studio: &Studio, request: Request, next: Next) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "the studio is read-only: only GET");
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !studio.allow_remote && !is_loopback_host(host) {
        return refuse(StatusCode::FORBIDDEN, "this studio answers only to loopback host names (127.0.0.1, localhost)");
    }
    let query = request.uri().query().unwrap_or_default();
    let (given, rest) = split_token(query);
    if let Some(given) = given {
        if !same(given.as_bytes(), studio.token.as_bytes()) {
            return refuse(StatusCode::UNAUTHORIZED, "wrong token: open the URL mdfkit studio printed");
        }
        let path = request.uri().path();
        let location = if rest.is_empty() { path.to_string() } else { format!("{path}?{rest}") };
        let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", studio.token);
        return Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, location)
            .header(header::SET_COOKIE, cookie)
            .body(Body::empty())
            .unwrap_or_else(|_| refuse(StatusCode::INTERNAL_SERVER_ERROR, "bad redirect"));
    }
    if !has_cookie(&request, &studio.token) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "no session: open the URL mdfkit studio printed (it carries the token)",
        );
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_loopback_host_names() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:9000",
            "[::1]",
            "a.localhost",
            "127.1.2.3:5",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in
            ["", "example.com", "evil.example:80", "127.0.0.1.evil.com", "10.0.0.1:80", "[::2]:1", "localhost.evil"]
        {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn splits_the_token_off_the_query() {
        assert_eq!(split_token("token=abc"), (Some("abc"), String::new()));
        assert_eq!(split_token("after=1:2:3&token=abc&ghosts=1"), (Some("abc"), "after=1:2:3&ghosts=1".to_string()));
        assert_eq!(split_token("after=1:2:3"), (None, "after=1:2:3".to_string()));
    }
}
