//! The object-store commands: `share` (time-limited links), `rm`, and the fetch report of remote
//! reads.

use std::io::Write;
use std::path::PathBuf;

use mdfkit::Error;

use super::{stdout, Failure, Outcome};

/// On stderr, what each remote object read cost: bytes fetched against its size.
pub fn report_fetches() {
    for (url, size, fetched, requests) in mdfkit_cloud::fetch_report() {
        let share = if size == 0 { 0.0 } else { fetched as f64 * 100.0 / size as f64 };
        eprintln!("mdfkit: {url}: fetched {fetched} of {size} bytes ({share:.1}%) in {requests} requests");
    }
}

/// `mdfkit share`: prints a time-limited link to one object.
pub fn share(
    url: &str,
    expires: &str,
    ip: Option<String>,
    start: Option<&str>,
    cloudfront: Option<(String, PathBuf)>,
    resource: Option<String>,
) -> Outcome {
    use mdfkit_cloud::share::{CloudFrontKey, ShareOptions};
    let bad = |message: String| Failure::Library(Error::new(mdfkit::ErrorKind::NotFound, message));
    let expires_in = parse_duration(expires)
        .ok_or_else(|| bad(format!("--expires {expires}: give seconds or a number with s, m, h or d (1h, 7d)")))?;
    let start = start
        .map(|t| {
            mdfkit_cloud::sign::UtcTime::parse_iso8601(t)
                .ok_or_else(|| bad(format!("--start {t}: give a UTC time like 2026-01-31T08:00:00Z")))
        })
        .transpose()?;
    let cloudfront = cloudfront
        .map(|(key_pair_id, pem)| {
            std::fs::read_to_string(&pem)
                .map(|private_key_pem| CloudFrontKey { key_pair_id, private_key_pem })
                .map_err(|e| bad(format!("{}: cannot read the CloudFront private key: {e}", pem.display())))
        })
        .transpose()?;
    let options = ShareOptions { expires_in, start, ip, cloudfront, resource };
    let link = mdfkit_cloud::share::share(url, &options)?;
    let mut out = stdout();
    writeln!(out, "{link}")?;
    out.flush()?;
    Ok(())
}

/// Seconds in `90`, `90s`, `30m`, `1h` or `7d`.
fn parse_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_lowercase()),
        _ => (text, 's'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

/// `mdfkit rm`: deletes one object, or every object under a prefix.
pub fn rm(url: &str, recursive: bool, dry_run: bool) -> Outcome {
    let object = mdfkit_cloud::ObjectUrl::parse(url)?;
    let mut out = stdout();
    if !recursive {
        if dry_run {
            writeln!(out, "would delete {object}")?;
        } else {
            mdfkit_cloud::delete::delete_object(&object)?;
            writeln!(out, "deleted {object}")?;
        }
        out.flush()?;
        return Ok(());
    }
    let keys = mdfkit_cloud::delete::list(&object)?;
    if dry_run {
        for key in &keys {
            writeln!(out, "{}", object.with_key(key))?;
        }
        writeln!(out, "would delete {} objects under {object}", keys.len())?;
        out.flush()?;
        return Ok(());
    }
    let report = mdfkit_cloud::delete::delete_keys(&object, &keys)?;
    writeln!(out, "deleted {} of {} objects under {object}", report.deleted.len(), keys.len())?;
    out.flush()?;
    for failure in &report.failed {
        eprintln!("mdfkit: not deleted: {failure}");
    }
    if report.failed.is_empty() && report.deleted.len() == keys.len() {
        Ok(())
    } else {
        Err(Failure::ProblemsFound)
    }
}

#[cfg(test)]
mod cloud_command_tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Some(90));
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("30m"), Some(1800));
        assert_eq!(parse_duration("1h"), Some(3600));
        assert_eq!(parse_duration("7D"), Some(604_800));
        for bad in ["", "h", "1w", "-1h", "1.5h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
