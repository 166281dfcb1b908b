//! `mdfkit studio FILE...`: starts [`mdfkit_studio`] and prints its URL.

use std::net::IpAddr;
use std::path::PathBuf;

use mdfkit::Error;

use super::Outcome;

pub fn studio(
    files: &[PathBuf],
    position: Option<u16>,
    open: bool,
    host: IpAddr,
    port: u16,
    allow_remote: bool,
    compare: &[PathBuf],
) -> Outcome {
    if !host.is_loopback() && !allow_remote {
        return Err(Error::not_found(format!(
            "--host {host} would let other machines reach the studio: add --allow-remote to mean it"
        ))
        .into());
    }
    let mut studio = mdfkit_studio::Studio::open(files.to_vec(), position)?;
    studio.fetch_report = Some(mdfkit_cloud::fetch_report);
    crate::chain::announce_plan(studio.db.reader().source());
    if !compare.is_empty() {
        studio = studio.compare_with(compare.to_vec(), None, mdfkit::log::redo::StopPoint::End)?;
        if let Some(other) = &studio.compare {
            crate::chain::announce_plan(other.db.reader().source());
        }
    }
    if allow_remote {
        eprintln!("mdfkit: warning: --allow-remote: anyone who can reach {host}:{port} with the token can read this database; the traffic is not encrypted");
        studio.allow_remote = true;
    }
    mdfkit_studio::serve(studio, mdfkit_studio::Listen { host, port }, |url| {
        println!("mdfkit studio: {url}");
        eprintln!("(read-only; Ctrl-C stops it)");
        if open {
            let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
            if let Err(e) = std::process::Command::new(opener).arg(url).spawn() {
                eprintln!("mdfkit: could not start {opener} ({e}): open the URL yourself");
            }
        }
    })?;
    Ok(())
}
