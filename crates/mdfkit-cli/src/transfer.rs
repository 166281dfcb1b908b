//! `mdfkit cp` and `mdfkit bench transfer`: the library's copies and link measurements, with a
//! progress bar on a terminal, reports and a chart.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use mdfkit::{Error, ErrorKind};
use mdfkit_cloud::bench::{self, BenchOptions, Cell, Operation};
use mdfkit_cloud::copy::{self, CopyOptions, CopyReport, Notices, Progress};
use mdfkit_cloud::writer;

use crate::chart::{line_chart_png, Series};
use crate::commands::Outcome;

/// `1K`, `64K`, `8M`, `1G` (powers of 1024; a trailing `B` or `iB` is allowed) or plain bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().trim_end_matches("iB").trim_end_matches(['B', 'b']);
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => t.split_at(at),
        None => (t, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return Err(format!("{text}: not a size (e.g. 64K, 8M, 1G)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("{text}: not a size (e.g. 64K, 8M, 1G)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{text}: too large"))
}

/// `16777216` → `16M`, `65536` → `64K`, other values in bytes.
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => format!("{b}B"),
    }
}

/// What `cp` was asked.
pub struct CpRequest<'a> {
    pub source: &'a str,
    pub destination: &'a str,
    pub recursive: bool,
    pub verify_only: bool,
    pub options: CopyOptions,
}

pub fn cp(request: &CpRequest) -> Outcome {
    let progress = Progress::default();
    let notices = Notices::default();
    let started = Instant::now();
    let result = with_progress_bar(&progress, || {
        if request.verify_only {
            verify(request, &progress, &notices).map(|r| vec![r])
        } else if request.recursive {
            copy::copy_tree(request.source, request.destination, &request.options, &progress, &notices)
        } else {
            copy::copy(request.source, request.destination, &request.options, &progress, &notices).map(|r| vec![r])
        }
    });
    for notice in notices.take() {
        eprintln!("mdfkit: note: {notice}");
    }
    let reports = result?;
    let mut out = io::stdout().lock();
    if let [one] = reports.as_slice() {
        writeln!(out, "sha256 {}  {:>12}  {}", one.source_sha256, one.bytes, one.source)?;
        writeln!(out, "sha256 {}  {:>12}  {}", one.destination_sha256, one.bytes, one.destination)?;
    } else {
        for r in &reports {
            writeln!(out, "sha256 {}  {:>12}  {} -> {}", r.destination_sha256, r.bytes, r.source, r.destination)?;
        }
    }
    out.flush()?;
    let bytes: u64 = reports.iter().map(|r| r.bytes).sum();
    let seconds = started.elapsed().as_secs_f64();
    let what = if request.verify_only { "compared" } else { "copied" };
    let mut retries = String::new();
    if progress.retries() > 0 {
        retries += &format!(", {} ranges asked again", progress.retries());
    }
    if mdfkit_cloud::requests_sent_again() > 0 {
        retries += &format!(", {} requests sent again", mdfkit_cloud::requests_sent_again());
    }
    eprintln!(
        "{what} {} file{}, {bytes} bytes in {seconds:.2} s ({:.1} MB/s{retries}): SHA-256 of source and destination equal",
        reports.len(),
        if reports.len() == 1 { "" } else { "s" },
        bytes as f64 / 1e6 / seconds.max(1e-9),
    );
    Ok(())
}

/// `cp --verify-only`: the checksums of both sides, compared; nothing copied.
fn verify(request: &CpRequest, progress: &Progress, notices: &Notices) -> Result<CopyReport, Error> {
    let (bytes, source_sha256) = copy::checksum(request.source, &request.options, progress, notices)?;
    let (written, destination_sha256) = copy::checksum(request.destination, &request.options, progress, notices)?;
    if written != bytes || destination_sha256 != source_sha256 {
        return Err(Error::new(
            ErrorKind::Corrupt,
            format!(
                "{}: differs from {}: {written} bytes with SHA-256 {destination_sha256} against {bytes} bytes with \
                 SHA-256 {source_sha256}; copy it again",
                request.destination, request.source
            ),
        ));
    }
    Ok(CopyReport {
        source: request.source.to_string(),
        destination: request.destination.to_string(),
        bytes,
        source_sha256,
        destination_sha256,
    })
}

/// Runs `work` with a bar on stderr when it is a terminal, fed from `progress` ten times a second.
fn with_progress_bar<T>(progress: &Progress, work: impl FnOnce() -> T) -> T {
    if !io::stderr().is_terminal() {
        return work();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("[{bar:20}] {bytes}/{total_bytes} {bytes_per_sec} {msg} ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let done = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                bar.set_length(progress.total());
                bar.set_position(progress.bytes());
                let parts = writer::parts_in_flight_now();
                bar.set_message(format!("{} GETs, {parts} parts in flight", progress.in_flight()));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let result = work();
        done.store(true, Ordering::Relaxed);
        result
    });
    bar.finish_and_clear();
    result
}

/// What `bench transfer` was asked.
pub struct BenchRequest<'a> {
    pub url: &'a str,
    pub options: BenchOptions,
    pub chart: Option<&'a Path>,
}

pub fn bench_transfer(request: &BenchRequest) -> Outcome {
    let o = &request.options;
    eprintln!(
        "measuring {} sizes x {} concurrencies, {:.1} s per cell for GETs and again for PUTs, under {}",
        o.sizes.len(),
        o.concurrency.len(),
        o.duration.as_secs_f64(),
        request.url
    );
    let terminal = io::stderr().is_terminal();
    let cells = bench::run(request.url, o, &mut |c: &Cell| {
        if terminal {
            eprintln!(
                "  {:>4} x {:>3} {}: {:>9.2} MB/s",
                size_label(c.size),
                c.concurrency,
                if c.operation == Operation::Get { "GET" } else { "PUT" },
                c.mb_per_s()
            );
        }
    })?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{:>6} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "size", "in flight", "GET MB/s", "GET req/s", "PUT MB/s", "PUT req/s"
    )?;
    for &size in &o.sizes {
        for &concurrency in &o.concurrency {
            let find = |op| cells.iter().find(|c| c.size == size && c.concurrency == concurrency && c.operation == op);
            let (Some(get), Some(put)) = (find(Operation::Get), find(Operation::Put)) else { continue };
            writeln!(
                out,
                "{:>6} {:>9} {:>10.2} {:>10.1} {:>10.2} {:>10.1}",
                size_label(size),
                concurrency,
                get.mb_per_s(),
                get.requests_per_s(),
                put.mb_per_s(),
                put.requests_per_s()
            )?;
        }
    }
    if let Some(r) = bench::recommend(&cells) {
        writeln!(out, "\nrecommended for this link:")?;
        writeln!(
            out,
            "  reads:  ranges of {}, {} in flight (mdfkit cp --range-size {} --concurrency {})",
            size_label(r.range_size),
            r.read_concurrency,
            size_label(r.range_size),
            r.read_concurrency
        )?;
        writeln!(out, "  writes: parts of {}, {} in flight", size_label(r.part_size), r.parts_in_flight)?;
    }
    out.flush()?;
    if let Some(path) = request.chart {
        let series: Vec<Series> = [(Operation::Get, "GET"), (Operation::Put, "PUT")]
            .into_iter()
            .flat_map(|(operation, name)| {
                let cells = &cells;
                o.sizes.iter().map(move |&size| Series {
                    label: format!("{name} {}", size_label(size)),
                    points: cells
                        .iter()
                        .filter(|c| c.size == size && c.operation == operation)
                        .map(|c| (c.concurrency as f64, c.mb_per_s()))
                        .collect(),
                })
            })
            .collect();
        let png = line_chart_png("Throughput by requests in flight", "requests in flight", "MB/s", &series)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: cannot draw the chart: {e}", path.display())))?;
        std::fs::write(path, png).map_err(|e| Error::io(path, "cannot write the chart", e))?;
        eprintln!("chart: {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("1T").is_err() && parse_size("K").is_err() && parse_size("99999999999G").is_err());
        assert_eq!(size_label(16 << 20), "16M");
        assert_eq!(size_label(1000), "1000B");
    }
}
