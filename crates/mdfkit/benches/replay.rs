//! Log replay throughput (redo, `mdfkit::log::redo`), one thread, from memory:
//!
//! - **synthetic**: a log of `--mb` MB (default 256) built here, laid out as SQL Server writes
//!   the records redo reads (`log/record.rs`, `log/redo.rs`): for each new heap page a
//!   LOP_FORMAT_PAGE, then 100-byte rows inserted (LOP_INSERT_ROWS) until the page is full, in
//!   transactions of 100 inserts each ended by a LOP_COMMIT_XACT. Replay is both passes of a
//!   restore (the commits seen, then every record applied onto the pages in memory); printed
//!   next to a raw read of the same bytes (a sum over them) and the parse alone.
//! - **corpus**: every restore chain of `chains/` that reads (`MDFKIT_CORPUS`), restored to its
//!   end, repeated for a few seconds: MB/s of log backups and full/differential backups given.
//!
//! Run: `cargo bench -p mdfkit --bench replay [-- --mb 1024]`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mdfkit::backup::chain::BackupFiles;
use mdfkit::backup::Lsn;
use mdfkit::log::redo::{restore, Commits, RedoPages, StopPoint};
use mdfkit::log::LogRecord;
use mdfkit::source::{PageSource, SourceFile};
use mdfkit::{PageId, Result};

const ROW: usize = 100;
const INSERTS_PER_TRANSACTION: usize = 100;
/// Rows of 100 bytes (and their 2-byte slots) in a page's 8096 bytes.
const ROWS_PER_PAGE: usize = 8096 / (ROW + 2);

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut mb = 256usize;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--mb", Some(v)) => mb = v,
            _ => {
                eprintln!("usage: replay [--mb N]  (N MB of synthetic log, default 256)");
                std::process::exit(2);
            }
        }
    }
    synthetic(mb << 20);
    corpus();
}

/// A database with no pages: every page the log needs, it formats.
struct NoPages(Vec<SourceFile>);

impl PageSource for NoPages {
    fn read_raw(&self, id: PageId, _buf: &mut [u8]) -> Result<()> {
        Err(mdfkit::Error::not_found(format!("page {id} is not in the base")))
    }
    fn files(&self) -> &[SourceFile] {
        &self.0
    }
}

/// The log: record bytes back to back, and where each starts with its LSN.
struct Log {
    bytes: Vec<u8>,
    records: Vec<(Lsn, usize)>,
    inserts: usize,
}

impl Log {
    fn push(&mut self, lsn: Lsn, record: &[u8]) {
        self.records.push((lsn, self.bytes.len()));
        self.bytes.extend_from_slice(record);
    }

    fn each(&self, mut f: impl FnMut(&LogRecord<'_>)) {
        for (i, &(lsn, at)) in self.records.iter().enumerate() {
            let end = self.records.get(i + 1).map_or(self.bytes.len(), |r| r.1);
            f(&LogRecord::parse(lsn, &self.bytes[at..end]).expect("a record built here parses"));
        }
    }
}

/// A record: the common header (fixed length, transaction, operation, context), `fields` at
/// their offsets in a fixed part of `fixed` bytes, then the row images (count, lengths, images
/// each padded to 4 bytes), as `log/record.rs` draws it.
fn record(
    out: &mut Vec<u8>,
    (op, context, xact): (u8, u8, u32),
    fixed: usize,
    fields: &[(usize, &[u8])],
    image: &[u8],
) {
    out.clear();
    out.resize(fixed, 0);
    out[2..4].copy_from_slice(&(fixed as u16).to_le_bytes());
    out[0x10..0x14].copy_from_slice(&xact.to_le_bytes());
    out[0x16] = op;
    out[0x17] = context;
    for (at, bytes) in fields {
        out[*at..*at + bytes.len()].copy_from_slice(bytes);
    }
    let images: &[&[u8]] = if image.is_empty() { &[] } else { &[image] };
    out.extend_from_slice(&(images.len() as u16).to_le_bytes());
    images.iter().for_each(|i| out.extend_from_slice(&(i.len() as u16).to_le_bytes()));
    out.resize(out.len().div_ceil(4) * 4, 0);
    for i in images {
        out.extend_from_slice(i);
        out.resize(out.len().div_ceil(4) * 4, 0);
    }
}

fn lsn_bytes(lsn: Lsn) -> [u8; 10] {
    let mut b = [0u8; 10];
    b[..4].copy_from_slice(&lsn.vlf.to_le_bytes());
    b[4..8].copy_from_slice(&lsn.block.to_le_bytes());
    b[8..].copy_from_slice(&lsn.slot.to_le_bytes());
    b
}

/// About `size` bytes of log: heap pages 1:100, 1:101, ... formatted and filled with rows.
fn build(size: usize) -> Log {
    let mut log = Log { bytes: Vec::with_capacity(size + 4096), records: Vec::new(), inserts: 0 };
    let mut buf = Vec::new();
    let mut row = [0u8; ROW];
    row[0] = 0x10;
    row[2..4].copy_from_slice(&(ROW as u16 - 4).to_le_bytes());
    let (mut block, mut xact) = (1u32, 1u32);
    let mut next_lsn = || {
        block += 1;
        Lsn { vlf: 1, block, slot: 1 }
    };
    let (object, index) = (29u32.to_le_bytes(), 256u16.to_le_bytes());
    let mut page = 100u32;
    while log.bytes.len() < size {
        let id = page.to_le_bytes();
        let file = 1u16.to_le_bytes();
        let format = [1u8, 0, 0];
        let pminlen = (ROW as u16 - 4).to_le_bytes();
        let fresh = lsn_bytes(Lsn { vlf: 0, block: 0, slot: 1 });
        let mut previous = next_lsn();
        let common = [(0x18, &id[..]), (0x1c, &file[..]), (0x20, &object[..]), (0x2e, &index[..])];
        let mut fields: Vec<(usize, &[u8])> = common.to_vec();
        fields.extend([(0x24, &fresh[..]), (0x30, &format[..]), (0x3a, &pminlen[..])]);
        record(&mut buf, (0x01, 0x01, 0), 0x50, &fields, &[]);
        log.push(previous, &buf);
        for slot in 0..ROWS_PER_PAGE as u16 {
            row[4..8].copy_from_slice(&(log.inserts as u32).to_le_bytes());
            let (slot, before) = (slot.to_le_bytes(), lsn_bytes(previous));
            let mut fields: Vec<(usize, &[u8])> = common.to_vec();
            fields.extend([(0x1e, &slot[..]), (0x24, &before[..])]);
            record(&mut buf, (0x02, 0x01, xact), 0x3e, &fields, &row);
            previous = next_lsn();
            log.push(previous, &buf);
            log.inserts += 1;
            if log.inserts.is_multiple_of(INSERTS_PER_TRANSACTION) {
                // LOP_COMMIT_XACT: its end time at +0x18 (ticks) and +0x1c (days since 1900).
                let (ticks, days) = (0u32.to_le_bytes(), 42_885u32.to_le_bytes());
                record(&mut buf, (0x81, 0, xact), 0x30, &[(0x18, &ticks[..]), (0x1c, &days[..])], &[]);
                log.push(next_lsn(), &buf);
                xact += 1;
            }
        }
        page += 1;
    }
    log
}

/// Seconds `f` takes, best of three runs.
fn best_of_three(mut f: impl FnMut()) -> f64 {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn synthetic(size: usize) {
    let log = build(size);
    let mb = log.bytes.len() as f64 / 1e6;
    let records = log.records.len() as f64;
    let raw = best_of_three(|| {
        let sum =
            log.bytes.chunks_exact(8).fold(0u64, |s, w| s.wrapping_add(u64::from_le_bytes(w.try_into().unwrap())));
        std::hint::black_box(sum);
    });
    let parse = best_of_three(|| {
        let mut n = 0usize;
        log.each(|r| n += usize::from(r.operation().0));
        std::hint::black_box(n);
    });
    let files = vec![SourceFile { file_id: 1, location: PathBuf::from("replay.mdf"), page_count: u32::MAX }];
    let (mut applied, mut undone) = (0, 0);
    let replay = best_of_three(|| {
        let mut commits = Commits::default();
        log.each(|r| commits.see(&StopPoint::End, r));
        let mut redo = RedoPages::new(Arc::new(NoPages(files.clone())));
        log.each(|r| redo.apply(&commits, r));
        redo.roll_back();
        (applied, undone) = (redo.applied(), redo.undone());
    });
    // Every record is applied; the inserts of the transaction still open (after the last
    // commit) are then undone.
    let committed = log.inserts / INSERTS_PER_TRANSACTION * INSERTS_PER_TRANSACTION;
    let pages = log.inserts.div_ceil(ROWS_PER_PAGE);
    assert_eq!((applied, undone), (log.inserts + pages, log.inserts - committed), "records applied, undone");
    println!(
        "synthetic log, {mb:.0} MB, {:.1} M records ({} inserts onto {pages} heap pages), 1 thread:",
        records / 1e6,
        log.inserts
    );
    println!("  raw read   {:>8.0} MB/s", mb / raw);
    println!("  parse      {:>8.0} MB/s  {:>6.2} M records/s", mb / parse, records / parse / 1e6);
    println!(
        "  replay     {:>8.0} MB/s  {:>6.2} M records/s  ({:.1}x the raw read's time)",
        mb / replay,
        records / replay / 1e6,
        replay / raw
    );
}

fn corpus() {
    let corpus = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    let chains = corpus.join("chains");
    let Ok(folders) = std::fs::read_dir(&chains) else {
        eprintln!("SKIPPED: the corpus chains: no {} (set MDFKIT_CORPUS)", chains.display());
        return;
    };
    let mut restores = Vec::new();
    for folder in folders.flatten() {
        let files: Vec<PathBuf> =
            std::fs::read_dir(folder.path()).into_iter().flatten().flatten().map(|e| e.path()).collect();
        let Ok(backups) = BackupFiles::open(&files) else { continue };
        if restore(&backups, None, None, false, StopPoint::End).is_ok() {
            let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
            restores.push((backups, bytes));
        }
    }
    let (mut bytes, mut passes, mut applied) = (0u64, 0u32, 0usize);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        for (backups, size) in &restores {
            applied += restore(backups, None, None, false, StopPoint::End).map_or(0, |r| r.applied());
            bytes += size;
        }
        passes += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "corpus chains ({} restores x {passes} passes, {} records applied each pass): {:.0} MB/s of backups given",
        restores.len(),
        applied / passes.max(1) as usize,
        bytes as f64 / 1e6 / seconds
    );
}
