//! Where an input is: a local path, or a URL served by an opener registered from outside (the
//! URL registry).
//!
//! The reader knows no object store. A crate that does (`mdfkit-cloud`) registers one opener per
//! URL scheme at start-up ([`register_url_scheme`]), the way delta-rs's storage crates register
//! their URL handlers with its core; [`open`] then serves `s3://bucket/key` wherever a path is
//! taken. A URL whose scheme nobody registered is refused by name ([`unsupported_url`]) rather
//! than taken for a relative path (`s3://b/k` would be a folder called `s3:`).
//!
//! What is a URL is syntax alone ([`url_scheme`]: a letter, then letters, digits, `+`, `-` or
//! `.`, then `://`), so this module lists no scheme: the crates that open them do.

use std::path::Path;
use std::sync::{OnceLock, RwLock};

use crate::error::{Error, ErrorKind, Result};
use crate::io::{ByteSource, LocalFile};

/// Opens the object a URL names.
pub type UrlOpener = fn(&str) -> Result<Box<dyn ByteSource>>;

/// Openers by scheme (`s3`, `https`, ...), for the whole process.
fn openers() -> &'static RwLock<Vec<(String, UrlOpener)>> {
    static OPENERS: OnceLock<RwLock<Vec<(String, UrlOpener)>>> = OnceLock::new();
    OPENERS.get_or_init(|| RwLock::new(Vec::new()))
}

/// Makes [`open`] serve `scheme://...` URLs with `opener` (replacing any opener registered
/// for that scheme before).
pub fn register_url_scheme(scheme: &str, opener: UrlOpener) {
    let mut openers = openers().write().unwrap_or_else(|e| e.into_inner());
    openers.retain(|(s, _)| s != scheme);
    openers.push((scheme.to_string(), opener));
}

fn opener_for(scheme: &str) -> Option<UrlOpener> {
    openers().read().unwrap_or_else(|e| e.into_inner()).iter().find(|(s, _)| s == scheme).map(|(_, o)| *o)
}

/// The scheme of `location` when it is written as a URL (`s3` for `s3://bucket/key`).
pub fn url_scheme(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once("://")?;
    let mut chars = scheme.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    well_formed.then_some(scheme)
}

/// True when `location` is a URL that a registered opener serves.
pub fn is_openable_url(location: &str) -> bool {
    url_scheme(location).is_some_and(|scheme| opener_for(scheme).is_some())
}

/// The bytes at `path`: a local file, or the object a URL names.
pub fn open(path: &Path) -> Result<Box<dyn ByteSource>> {
    if let Some((text, scheme)) = path.to_str().and_then(|t| Some((t, url_scheme(t)?))) {
        let opener = opener_for(scheme).ok_or_else(|| unsupported_url(path, scheme))?;
        return opener(text);
    }
    Ok(Box::new(LocalFile::open(path)?))
}

/// The error for a URL that this build cannot serve, naming what it can.
pub fn unsupported_url(path: &Path, scheme: &str) -> Error {
    let registered: Vec<String> =
        openers().read().unwrap_or_else(|e| e.into_inner()).iter().map(|(s, _)| format!("{s}://")).collect();
    let can = if registered.is_empty() {
        "only local files: object stores come with the mdfkit-cloud crate, which a program turns on with \
         `mdfkit_cloud::register()`"
            .to_string()
    } else {
        format!("local files and {}", registered.join(", "))
    };
    Error::new(
        ErrorKind::NotFound,
        format!("{}: this build of mdfkit has no `{scheme}://` support (it reads {can})", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_by_their_syntax() {
        assert_eq!(url_scheme("s3://bucket/key"), Some("s3"));
        assert_eq!(url_scheme("az://c/b"), Some("az"));
        assert_eq!(url_scheme("svn+ssh://host/x"), Some("svn+ssh"));
        assert_eq!(url_scheme("/data/db.mdf"), None);
        assert_eq!(url_scheme("C:\\data\\db.mdf"), None);
        assert_eq!(url_scheme("./s3://x"), None);
        assert_eq!(url_scheme("://x"), None);
    }

    #[test]
    fn registered_schemes_open_and_others_are_refused_by_name() {
        fn memory(url: &str) -> Result<Box<dyn ByteSource>> {
            Ok(Box::new(url.as_bytes().to_vec()))
        }
        let refused = open(Path::new("mdfkit-test-unregistered://b/k")).err().expect("no opener").to_string();
        assert!(refused.contains("no `mdfkit-test-unregistered://` support"), "{refused}");
        register_url_scheme("mdfkit-test-memory", memory);
        assert!(is_openable_url("mdfkit-test-memory://x") && !is_openable_url("mdfkit-test-unregistered://x"));
        let url = "mdfkit-test-memory://abc";
        assert_eq!(open(Path::new(url)).unwrap().len(), url.len() as u64, "the opener was given the URL");
    }
}
