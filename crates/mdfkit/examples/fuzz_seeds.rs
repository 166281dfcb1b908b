//! Cuts fuzz seeds out of the corpus, at run time (corpus bytes are never committed):
//! `cargo run -p mdfkit --example fuzz_seeds -- <corpus dir> <out dir>` writes one folder per fuzz
//! target of `fuzz/` (see `fuzz/src/lib.rs` for the sparse-page input format):
//!
//! - `page`: a few raw pages of each page type; `record`: data records;
//! - `catalog`: the pages opening each database reads (with those its `sys.*` views read, for
//!   a few files); `scan`: the pages opening and scanning every table reads (a few files); both
//!   also from two small databases the forge writes (tens of pages: a heap, compression, an index, LOBs);
//! - `lob`: off-row pointers with the pages reading them touches;
//! - `xml`, `clr`: stored xml, hierarchyid, geometry and geography values (plus a few built here);
//! - `backup`: the first 256 KB of each backup; `xpress`: compressed pieces of `MSSQLBAK` files;
//! - `log`: single blocks, two-block streams and single records of each backup's log streams;
//!   `ldf`: each two-block stream in a VLF of a log file, where its LSNs place it;
//! - `redo`: heap page 1:153 of RestoreTimeClean2.bak and the log records of the log backup
//!   after it that change it (u16 length, bytes each); each page StopAt_1.trn changes (formats,
//!   allocation pages, sys.sysallocunits, file header) with its records;
//! - `studio_input`: page ids, row positions, table and download names as the studio's URLs
//!   carry them (built here).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mdfkit::catalog::rowset::ColumnLocation;
use mdfkit::catalog::views::VIEW_NAMES;
use mdfkit::clrtypes::ClrKind;
use mdfkit::page::{PageId, PAGE_SIZE};
use mdfkit::record::Record;
use mdfkit::scan::Flow;
use mdfkit::sniff::{sniff, FileFormat};
use mdfkit::source::{DataFiles, PageSource, SourceFile};
use mdfkit::types::SqlType;
use mdfkit::{Database, Result, ScanOptions};

/// A page source that remembers which pages were read.
struct Tracing {
    inner: DataFiles,
    seen: Mutex<BTreeSet<PageId>>,
}

impl PageSource for Tracing {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.seen.lock().unwrap().insert(id);
        self.inner.read_raw(id, buf)
    }

    fn files(&self) -> &[SourceFile] {
        self.inner.files()
    }
}

impl Tracing {
    fn take(&self) -> BTreeSet<PageId> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The sparse-page input of `pages` of `file` (file 1 only; pages 0 and 1 always).
fn sparse(file: &[u8], pages: &BTreeSet<PageId>) -> Vec<u8> {
    let mut out = Vec::new();
    let numbers: BTreeSet<u32> =
        pages.iter().filter(|p| p.file == 1 && p.page < 2048).map(|p| p.page).chain([0, 1]).collect();
    for n in numbers {
        let at = n as usize * PAGE_SIZE;
        if let Some(page) = file.get(at..at + PAGE_SIZE) {
            out.extend_from_slice(&(n as u16).to_le_bytes());
            out.extend_from_slice(page);
        }
    }
    out
}

struct Out {
    dir: PathBuf,
    counts: HashMap<&'static str, usize>,
}

impl Out {
    fn write(&mut self, target: &'static str, name: &str, bytes: &[u8]) {
        let dir = self.dir.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        let n = self.counts.entry(target).or_default();
        *n += 1;
        std::fs::write(dir.join(format!("{name}-{n}")), bytes).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, corpus, out] = &args[..] else {
        eprintln!("usage: fuzz_seeds <corpus dir> <out dir>");
        std::process::exit(2);
    };
    let corpus = Path::new(corpus);
    let mut out = Out { dir: PathBuf::from(out), counts: HashMap::new() };
    let mut mdfs: Vec<PathBuf> = std::fs::read_dir(corpus.join("mdf")).unwrap().map(|e| e.unwrap().path()).collect();
    mdfs.sort();
    for (i, path) in mdfs.iter().enumerate() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(path).unwrap();
        raw_seeds(&mut out, &name, &bytes);
        // Every 4th file is also scanned whole (the others are opened only).
        if let Err(e) = database_seeds(&mut out, &name, &bytes, i % 4 == 0) {
            eprintln!("{name}: {e}");
        }
    }
    forged_seeds(&mut out);
    backup_seeds(&mut out, corpus);
    redo_seeds(&mut out, corpus);
    built_seeds(&mut out);
    let mut counts: Vec<_> = out.counts.into_iter().collect();
    counts.sort();
    println!("seeds: {counts:?}");
}

/// Pages by type and records, straight from the file's bytes.
fn raw_seeds(out: &mut Out, name: &str, bytes: &[u8]) {
    let mut per_type: HashMap<u8, usize> = HashMap::new();
    let mut records = 0;
    for page in bytes.chunks_exact(PAGE_SIZE) {
        if page[0] != 1 {
            continue;
        }
        let n = per_type.entry(page[1]).or_default();
        if *n < 2 {
            *n += 1;
            out.write("page", name, page);
            out.write("anatomy", name, page);
        }
        if page[1] == 1 && records < 12 {
            let slots = u16::from_le_bytes([page[22], page[23]]) as usize;
            for slot in 0..slots.min(3) {
                let at = PAGE_SIZE - 2 * (slot + 1);
                let offset = u16::from_le_bytes([page[at], page[at + 1]]) as usize;
                let end = PAGE_SIZE - 2 * slots;
                if offset < 96 || offset >= end {
                    continue;
                }
                if let Ok(r) = Record::parse(&page[offset..end]) {
                    out.write("record", name, r.bytes());
                    records += 1;
                }
            }
        }
    }
}

fn database_seeds(out: &mut Out, name: &str, bytes: &[u8], scan_all: bool) -> Result<()> {
    let inner = DataFiles::from_memory(vec![(name.to_string(), bytes.to_vec())])?;
    let source = Arc::new(Tracing { inner, seen: Mutex::new(BTreeSet::new()) });
    let db = Database::from_source(source.clone())?;
    let catalog = db.catalog();
    for t in catalog.tables(true) {
        let _ = catalog.create_table_sql(&t);
    }
    let opened = source.take();
    out.write("catalog", name, &sparse(bytes, &opened));
    let mut scanned = opened.clone();
    if scan_all {
        // The pages the `sys.*` views read besides: a few seeds with them, the others smaller.
        for view in VIEW_NAMES {
            let _ = catalog.view(view);
        }
        scanned.extend(source.take());
        out.write("catalog", &format!("{name}-views"), &sparse(bytes, &scanned));
    }
    let (mut lobs, mut values) = (0, 0);
    for table in catalog.tables(false) {
        source.take();
        let options = ScanOptions { batch_size: 1000, limit: Some(2000), ..ScanOptions::default() };
        let _ = db.scan(&table).options(&options).batches(|_| Ok(Flow::Continue));
        scanned.extend(source.take());
        for partition in &table.partitions {
            let Ok(decoder) = db.row_decoder(&table, partition.partition_id, None) else { continue };
            let _ = db.scan(&table).partition_records(partition, |record, _| {
                for plan in decoder.columns() {
                    let raw = match plan.physical.location() {
                        ColumnLocation::Variable(index) => record.var(index).ok().flatten(),
                        ColumnLocation::Fixed(_) => None,
                    };
                    if let Some(v) = raw.filter(|v| v.complex) {
                        if lobs < 6 {
                            source.take();
                            let mut value = Vec::new();
                            let text = v.bytes.len() == 16
                                || matches!(
                                    plan.column.type_info.sql_type,
                                    SqlType::Text | SqlType::NText | SqlType::Image
                                );
                            let _ = if text {
                                mdfkit::lob::read_text_pointer(db.reader(), v.bytes, &mut value).map(drop)
                            } else {
                                mdfkit::lob::read_complex(db.reader(), v.bytes, &mut value)
                            };
                            let mut seed = vec![u8::from(text), v.bytes.len() as u8];
                            seed.extend_from_slice(v.bytes);
                            seed.extend(sparse(bytes, &source.take()));
                            out.write("lob", name, &seed);
                            lobs += 1;
                        }
                    }
                    let target = match (plan.column.type_info.sql_type, plan.column.clr_kind()) {
                        (SqlType::Xml, _) => Some(("xml", None)),
                        (_, Some(ClrKind::HierarchyId)) => Some(("clr", Some(0u8))),
                        (_, Some(ClrKind::Geometry)) => Some(("clr", Some(1))),
                        (_, Some(ClrKind::Geography)) => Some(("clr", Some(2))),
                        _ => None,
                    };
                    if let (Some((target, prefix)), true) = (target, values < 40) {
                        let mut off_row = Vec::new();
                        if let Ok(Some(b)) = decoder.stored(record, plan, &mut off_row) {
                            let seed: Vec<u8> = prefix.into_iter().chain(b.iter().copied()).collect();
                            out.write(target, name, &seed);
                            values += 1;
                        }
                    }
                }
                Ok(Flow::Continue)
            });
        }
    }
    if scan_all {
        out.write("scan", name, &sparse(bytes, &scanned));
    }
    Ok(())
}

/// Small complete databases the forge writes (SQL Server 2016 and 2019 formats), opened and
/// scanned whole like the corpus files: a few tables of a dozen rows in tens of pages, where a
/// corpus file's seed is hundreds of KB. libFuzzer mutates a small input many times faster, and
/// these hold what the corpus files rarely do together: a heap with ghost and forwarded records,
/// ROW and PAGE compression, a nonclustered index, LOB values, a column added after rows.
fn forged_seeds(out: &mut Out) {
    use mdfkit_forge::{ColType, ColumnSpec, Compression, Gen, IndexSpec, Layout, Nulls, Spec, TableSpec, Version};
    let column = |name: &str, ty: ColType, gen: Gen, nulls: Nulls| ColumnSpec::new(name, ty, gen, nulls);
    let key = |name: &str| column(name, ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    for version in [Version::V852, Version::V904] {
        let mut heap = TableSpec::new("dbo", "Events", Layout::Heap, 12)
            .column(column("At", ColType::DateTime2(7), Gen::Random, Nulls::Never))
            .column(column("Level", ColType::VarChar(Some(10)), Gen::Length { min: 1, max: 10 }, Nulls::Every(5)))
            .column(column("Note", ColType::NVarChar(Some(3000)), Gen::Length { min: 0, max: 3000 }, Nulls::Every(3)));
        heap.ghost_every = Some(4);
        heap.forward_every = Some(5);
        let orders = TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 10)
            .column(key("OrderID"))
            .column(column("Total", ColType::Decimal(10, 2), Gen::Random, Nulls::Every(4)))
            .column(column("Placed", ColType::Date, Gen::Random, Nulls::Never))
            .column(column("Paid", ColType::Bit, Gen::Random, Nulls::Never))
            .column(column("Token", ColType::UniqueIdentifier, Gen::Random, Nulls::Every(3)))
            .column(column("Photo", ColType::VarBinary(None), Gen::Length { min: 0, max: 9000 }, Nulls::Every(2)))
            .index(IndexSpec::new("IX_Orders_Total", &[0], Compression::Row));
        let compressed = |name: &str, compression: Compression| {
            let mut t = TableSpec::new("sales", name, Layout::Clustered { key: 0 }, 12)
                .column(key("ReadingID"))
                .column(column(
                    "Celsius",
                    ColType::Decimal(6, 2),
                    Gen::Range { lo: -4_000, hi: 6_000 },
                    Nulls::Every(4),
                ))
                .column(column("Sensor", ColType::NVarChar(Some(20)), Gen::Length { min: 0, max: 20 }, Nulls::Never))
                .column(column("Added", ColType::SmallInt, Gen::Random, Nulls::Every(2)));
            t.compression = compression;
            t.page_ci_every = Some(1);
            t.added_after = Some((3, 6));
            t
        };
        let mut spec = Spec::new("forged", version, 7)
            .table(heap)
            .table(orders)
            .table(compressed("ReadingsRow", Compression::Row))
            .table(compressed("ReadingsPage", Compression::Page));
        spec.schemas.push("sales".into());
        let files = mdfkit_forge::forge(&spec).expect("a spec the forge writes");
        let name = format!("forged-{}", version.dbi_version());
        if let Err(e) = database_seeds(out, &name, &files[0].bytes, true) {
            eprintln!("{name}: {e}");
        }
    }
}

/// The first 256 KB of every backup, and the compressed pieces of `MSSQLBAK` files.
fn backup_seeds(out: &mut Out, corpus: &Path) {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["bak", "gt", "chains/stripe", "chains/media-password", "chains/stopat", "chains/cube-query-history"] {
        if let Ok(entries) = std::fs::read_dir(corpus.join(dir)) {
            files.extend(
                entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "bak" || x == "trn")),
            );
        }
    }
    files.sort();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        out.write("backup", &name, &bytes[..bytes.len().min(256 << 10)]);
        log_seeds(out, &path, &name);
        if sniff(&bytes) == FileFormat::CompressedBackup {
            // 0x21 records from offset 480: +1 size / 512, +2 payload size, payload from +28.
            let (mut at, mut pieces) = (480, 0);
            while pieces < 12 && at + 28 <= bytes.len() {
                if bytes[at] != 0x21 {
                    // Not a piece: other records end at a multiple of 512.
                    at = (at / 512 + 1) * 512;
                    continue;
                }
                let len = bytes[at + 1] as u32 * 512;
                let stored = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]) as usize;
                let Some(payload) = bytes.get(at + 28..at + 28 + stored) else { break };
                // The first piece whole (up to 127.5 KB out); the others asking for their first
                // 4 KB only (byte 3 = 5: a 6 KB range, see the target): the same code paths at
                // a thirtieth of the work an input, so the fuzzer tries many more of them.
                let (want, range) = if pieces == 0 { (len, 0u32) } else { (len.min(4096), 5) };
                let mut seed = (want | range << 24).to_le_bytes().to_vec();
                seed.extend_from_slice(payload);
                out.write("xpress", &name, &seed);
                pieces += 1;
                at += 28 + stored;
            }
        }
    }
}

/// Pieces of the log streams (MQTL pieces) of a backup, as a log parser meets them: single
/// blocks (the first few of each stream, and each block size once), the first two blocks
/// together, and single records of distinct operations (the target also parses its whole input
/// as one record). Small seeds keep the fuzzer's inputs at the size of one block.
fn log_seeds(out: &mut Out, path: &Path, name: &str) {
    use mdfkit::log::block::BlockHeader;
    use mdfkit::log::LogBlock;
    let Ok(media) = mdfkit::backup::BackupMedia::open(&[path]) else { return };
    let positions: Vec<u16> = media.sets().iter().map(|s| s.position).collect();
    let (mut sizes, mut operations) = (BTreeSet::new(), BTreeSet::new());
    for position in positions {
        for piece in media.log_pieces(position) {
            let mut stream = vec![0u8; piece.len.min(4 << 20) as usize];
            if media.read_log(&piece, 0, &mut stream).is_err() {
                continue;
            }
            let (mut at, mut blocks) = (0, 0);
            while let Ok(Some(header)) = BlockHeader::parse(&stream[at..]) {
                let end = at + usize::from(header.size);
                let Some(raw) = stream.get(at..end) else { break };
                if blocks < 4 || sizes.insert(header.size) {
                    out.write("log", name, raw);
                }
                if blocks == 1 {
                    out.write("log", name, &stream[..end]);
                    out.write("ldf", name, &vlf_of(&stream[..end], header.lsn.vlf));
                }
                if let Ok(Some(block)) = LogBlock::parse(raw) {
                    for slot in 1..=block.record_count() {
                        let Some((lsn, bytes)) = block.record_bytes(slot) else { continue };
                        let Ok(record) = mdfkit::log::LogRecord::parse(lsn, bytes) else { continue };
                        if operations.insert(record.operation().name()) {
                            out.write("log", name, bytes);
                        }
                    }
                }
                (at, blocks) = (end, blocks + 1);
            }
        }
    }
}

/// The `ldf` target's input (what follows a log file's header page, see `mdfkit::log::ldf`): one
/// VLF of sequence `sequence` holding `blocks` (a log stream's first blocks) where their LSNs
/// place them, then a VLF never used.
fn vlf_of(blocks: &[u8], sequence: u32) -> Vec<u8> {
    let first = u32::from_le_bytes(blocks[16..20].try_into().unwrap()) as usize * 512;
    let size = (first + blocks.len()).div_ceil(512) * 512;
    let mut vlf = vec![0u8; size + 8192 + 512];
    vlf[4..8].copy_from_slice(&sequence.to_le_bytes());
    vlf[16..24].copy_from_slice(&(size as u64).to_le_bytes());
    vlf[first..first + blocks.len()].copy_from_slice(blocks);
    vlf[size + 16..size + 24].copy_from_slice(&(8192u64 + 512).to_le_bytes());
    vlf
}

/// A data page as the differential RestoreTimeClean2.bak holds it, followed by the records of
/// RestoreTimeClean2_1.trn (and their transactions' commits) that roll it forward; and each page
/// StopAt_1.trn changes as StopAt.bak holds it (or zeros), with its records: page formats,
/// sys.sysallocunits root changes, PFS, SGAM and IAM changes, column changes, ghost cleanup and
/// the file header.
fn redo_seeds(out: &mut Out, corpus: &Path) {
    let chains = corpus.join("chains");
    let clean = chains.join("restoretimeclean");
    let base = [clean.join("RestoreTimeClean.bak"), clean.join("RestoreTimeClean2.bak")];
    redo_seed(out, &base, &clean.join("RestoreTimeClean2_1.trn"), &[(1, 153)], "restoretimeclean");
    let pages = [(1, 0), (1, 1), (1, 3), (1, 21), (1, 22), (1, 29), (1, 95), (1, 130)];
    redo_seed(out, &[chains.join("stopat/StopAt.bak")], &chains.join("stopat/StopAt_1.trn"), &pages, "stopat");
}

/// One `redo` seed per page of `pages`: the page as the backups `base` restore it (zeros where
/// they lack it), then the records of `log` on it and every commit.
fn redo_seed(out: &mut Out, base: &[std::path::PathBuf], log: &Path, pages: &[(u16, u32)], name: &str) {
    use mdfkit::log::{for_each_record, BackupLog, Operation};
    use mdfkit::source::PageSource;
    let Ok(files) = mdfkit::backup::chain::BackupFiles::open(base) else { return };
    let Ok((source, _)) = files.read(None, true) else { return };
    let Ok(media) = mdfkit::backup::BackupMedia::open(&[log]) else { return };
    for &(file, page) in pages {
        let page_id = mdfkit::PageId::new(file, page);
        let mut seed = vec![0u8; 8192];
        let _ = source.read_raw(page_id, &mut seed);
        let Ok(blocks) = BackupLog::new(&media, 1) else { return };
        for block in blocks.flatten() {
            let _ = for_each_record(&block, |r| {
                if r.page_id() == Some(page_id) || r.operation() == Operation::COMMIT_XACT {
                    let bytes = r.bytes();
                    seed.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                    seed.extend_from_slice(bytes);
                }
                Ok(())
            });
        }
        out.write("redo", &format!("{name}-{file}-{page}"), &seed);
    }
}

/// Values the corpus lacks, built by hand: hierarchyid paths and small shapes.
fn built_seeds(out: &mut Out) {
    // hierarchyid: /, /1/, /1/2/, /-1/, /1.1/
    for hid in [&[][..], &[0x58], &[0x5a, 0xc0], &[0x3f, 0x80], &[0x62, 0xc0]] {
        out.write("clr", "hierarchyid", &[&[0u8][..], hid].concat());
    }
    // geometry POINT (1 2), SRID 0, version 1, single point.
    let mut point = vec![1u8, 0, 0, 0, 0, 1, 0x0c];
    point.extend_from_slice(&1f64.to_le_bytes());
    point.extend_from_slice(&2f64.to_le_bytes());
    out.write("clr", "point", &point);
    // geography LINESTRING, SRID 4326, single line segment.
    let mut line = vec![2u8];
    line.extend_from_slice(&4326i32.to_le_bytes());
    line.extend_from_slice(&[1, 0x15]);
    for v in [47.0f64, -122.0, 47.5, -122.5] {
        line.extend_from_slice(&v.to_le_bytes());
    }
    out.write("clr", "line", &line);
    // A minimal xml value: the 0xDF 0xFF header, then an element <a/>.
    out.write("xml", "built", &[0xdf, 0xff, 0x01, 0xb0, 0x04]);
    // The studio's URL parts: page ids, row positions, table names, download names.
    for text in
        ["1:153", "(3:7)", "1:1776:7", " 1 : 2 : 3 ", "[dbo].[Orders]", "SalesLT.Customer", "dbo.Orders.parquet"]
    {
        out.write("studio_input", "built", text.as_bytes());
    }
}
