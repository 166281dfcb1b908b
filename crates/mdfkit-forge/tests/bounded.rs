//! Memory and time are bounded by design: sizes and links written in a file never make mdfkit
//! allocate beyond what the file holds (plus a constant) or walk a chain forever.
//!
//! Each case builds its hostile input in code (a forged database with one structure rewritten, or
//! the bytes of one structure) and runs in a child process of this test binary under an
//! address-space cap ([`ADDRESS_SPACE_CAP`], `RLIMIT_AS`) and a time limit ([`TIME_LIMIT`]): an
//! allocation past the cap aborts the child, a loop outlives the limit, and either fails the case.
//! Every case expects a clear error (or problem) naming the structure.
//!
//! The cases: a LOB link claiming 2 GB, LOB links that meet again, row-overflow links claiming
//! 4 GB each to one fragment, a varchar length past the row, an IAM chain that loops, IAM pages
//! mapping 500,000 pages each past the end of the file, two units' IAM pages mapping one extent
//! (the check's owner of each extent is a vector sized by the file), a leaf chain that loops, a source
//! claiming a file of 2^32 pages (a backup whose file list lies), and a backup stream claiming a
//! terabyte.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mdfkit::check::{check_catalog, check_pages};
use mdfkit::lob::read_complex;
use mdfkit::page::allocation::IamPage;
use mdfkit::page::{PageId, PAGE_SIZE};
use mdfkit::record::Record;
use mdfkit::scan::Flow;
use mdfkit::source::{DataFiles, PageReader, PageSource, SourceFile};
use mdfkit::{Database, ScanOptions};
use mdfkit_forge::page::{seal, PageBuf, TYPE_TEXT_MIX};
use mdfkit_forge::{forge, ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};

/// Address space of a child process running one case.
const ADDRESS_SPACE_CAP: u64 = 1 << 30;
/// Wall-clock time one case may take (a debug build).
const TIME_LIMIT: Duration = Duration::from_secs(60);
/// Set in a child to the name of the case it runs.
const CASE_VARIABLE: &str = "MDFKIT_BOUNDED_CASE";

/// Runs `body` as case `name` in a child process of this test binary under the address-space cap
/// and the time limit; fails unless the child exits cleanly in time. In the child, runs `body`.
fn capped(name: &str, body: impl FnOnce()) {
    if std::env::var(CASE_VARIABLE).as_deref() == Ok(name) {
        let limit = libc::rlimit { rlim_cur: ADDRESS_SPACE_CAP, rlim_max: ADDRESS_SPACE_CAP };
        // SAFETY: setrlimit reads the struct we pass and touches no memory of ours.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0, "setrlimit(RLIMIT_AS) failed");
        body();
        return;
    }
    let output = std::env::temp_dir().join(format!("mdfkit-bounded-{name}-{}.log", std::process::id()));
    let log = std::fs::File::create(&output).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_VARIABLE, name)
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            let log = std::fs::read_to_string(&output).unwrap_or_default();
            panic!("{name}: still running after {TIME_LIMIT:?}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_file(&output);
    assert!(status.success(), "{name}: {status} under a {ADDRESS_SPACE_CAP}-byte address space:\n{log}");
    assert!(log.contains("1 passed"), "{name}: the child ran no test:\n{log}");
    println!(
        "{name}: {:.2} s under a {} MB address-space cap",
        started.elapsed().as_secs_f64(),
        ADDRESS_SPACE_CAP >> 20
    );
}

/// Pages of file 1 in memory, served as they are; the file claims `page_count` pages.
struct Pages {
    pages: BTreeMap<u32, Vec<u8>>,
    files: Vec<SourceFile>,
}

impl Pages {
    fn new(pages: BTreeMap<u32, Vec<u8>>, page_count: u32) -> Self {
        Pages { pages, files: vec![SourceFile { file_id: 1, location: PathBuf::from("t.mdf"), page_count }] }
    }
}

impl PageSource for Pages {
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> mdfkit::Result<()> {
        let page = self.pages.get(&id.page).filter(|_| id.file == 1);
        buf.copy_from_slice(page.ok_or_else(|| mdfkit::Error::corrupt(format!("page {id} is not held")))?);
        Ok(())
    }

    fn files(&self) -> &[SourceFile] {
        &self.files
    }
}

/// A text-mix page `page` of file 1 holding one DATA blob fragment of `data`.
fn lob_data_page(page: u32, data: &[u8]) -> Vec<u8> {
    let mut record = vec![0x08, 0]; // status: blob fragment (record type 4)
    record.extend_from_slice(&(14 + data.len() as u16).to_le_bytes());
    record.extend_from_slice(&7u64.to_le_bytes()); // blob id
    record.extend_from_slice(&3u16.to_le_bytes()); // DATA
    record.extend_from_slice(data);
    let mut buf = PageBuf::new(mdfkit_forge::page::PageId::new(1, page), TYPE_TEXT_MIX, 72_057_594_040_287_232);
    buf.add(&record);
    buf.finish().to_vec()
}

/// An in-row LOB root (type 4, level 0) with links of (cumulative end, page, slot) in file 1.
fn inline_root(links: &[(u32, u32, u16)]) -> Vec<u8> {
    let mut pointer = vec![4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    for &(end, page, slot) in links {
        pointer.extend_from_slice(&end.to_le_bytes());
        pointer.extend_from_slice(&page.to_le_bytes());
        pointer.extend_from_slice(&1u16.to_le_bytes());
        pointer.extend_from_slice(&slot.to_le_bytes());
    }
    pointer
}

fn lob_reader(pages: &[(u32, Vec<u8>)]) -> PageReader {
    PageReader::new(Arc::new(Pages::new(pages.iter().cloned().collect(), 100)))
}

#[test]
fn lob_link_claiming_two_gigabytes_reads_what_the_fragment_holds_and_is_refused() {
    capped("lob_link_claiming_two_gigabytes_reads_what_the_fragment_holds_and_is_refused", || {
        let reader = lob_reader(&[(10, lob_data_page(10, &[b'x'; 100]))]);
        let mut out = Vec::new();
        let err = read_complex(&reader, &inline_root(&[(i32::MAX as u32 - 1, 10, 0)]), &mut out).unwrap_err();
        assert!(err.message().contains("LOB data record holds 100 bytes, its link says 2147483646"), "{err}");
        assert_eq!(err.page(), Some(PageId::new(1, 10)));
        assert!(out.capacity() < 1 << 20, "{} bytes reserved for a 100-byte fragment", out.capacity());
    });
}

#[test]
fn lob_links_that_meet_again_are_refused_before_repeating_bytes() {
    capped("lob_links_that_meet_again_are_refused_before_repeating_bytes", || {
        // 5,000 links to one 8,000-byte fragment would make 40 MB of a value the file holds once.
        let reader = lob_reader(&[(10, lob_data_page(10, &[b'y'; 8000]))]);
        let links: Vec<(u32, u32, u16)> = (1..=5000).map(|i| (i * 8000, 10, 0)).collect();
        let mut out = Vec::new();
        let err = read_complex(&reader, &inline_root(&links), &mut out).unwrap_err();
        assert!(err.message().contains("LOB tree reaches slot 0 of this page twice"), "{err}");
        assert_eq!(out.len(), 8000, "the fragment is read once");
    });
}

#[test]
fn row_overflow_links_claiming_gigabytes_read_what_the_fragment_holds() {
    capped("row_overflow_links_claiming_gigabytes_read_what_the_fragment_holds", || {
        // A row-overflow pointer (type 2) of `count` links, each claiming 4 GB, all to one
        // 100-byte fragment: the fragment's own length bounds each part.
        let pointer = |count: usize| {
            let mut p = vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
            for _ in 0..count {
                p.extend_from_slice(&u32::MAX.to_le_bytes());
                p.extend_from_slice(&10u32.to_le_bytes());
                p.extend_from_slice(&1u16.to_le_bytes());
                p.extend_from_slice(&0u16.to_le_bytes());
            }
            p
        };
        let reader = lob_reader(&[(10, lob_data_page(10, &[b'z'; 100]))]);
        let mut out = Vec::new();
        read_complex(&reader, &pointer(1), &mut out).unwrap();
        assert_eq!(out, vec![b'z'; 100]);
        assert!(out.capacity() < 1 << 20, "{} bytes reserved for a 100-byte fragment", out.capacity());
        out.clear();
        let err = read_complex(&reader, &pointer(5000), &mut out).unwrap_err();
        assert!(err.message().contains("twice"), "{err}");
        assert_eq!(out.len(), 100, "the fragment is read once");
    });
}

#[test]
fn varchar_length_past_the_row_is_refused() {
    capped("varchar_length_past_the_row_is_refused", || {
        // Status: null bitmap and variable columns; no fixed data; 2 columns; 2 variable columns
        // ending at 30,000 (past the row) and at 17 (the row's real end).
        let mut record = vec![0x30, 0, 4, 0, 2, 0, 0, 2, 0];
        record.extend_from_slice(&30_000u16.to_le_bytes());
        record.extend_from_slice(&17u16.to_le_bytes());
        record.extend_from_slice(b"abcd");
        let parsed = Record::parse(&record).unwrap();
        let err = parsed.var(0).unwrap_err();
        assert!(err.message().contains("variable column 0 spans 13..30000, outside the record's data 13..17"), "{err}");
        let err = parsed.var(1).unwrap_err();
        assert!(err.message().contains("variable column 1 spans 30000..17"), "{err}");
    });
}

/// A forged database with one heap and one clustered table of a few hundred pages.
fn forged() -> Vec<u8> {
    let spec = Spec::new("bounded", Version::V904, 3)
        .table(
            TableSpec::new("dbo", "Heap", Layout::Heap, 10_000)
                .column(ColumnSpec::new("Id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
                .column(ColumnSpec::new(
                    "Text",
                    ColType::VarChar(Some(200)),
                    Gen::Length { min: 150, max: 200 },
                    Nulls::Never,
                )),
        )
        .table(
            TableSpec::new("dbo", "Keyed", Layout::Clustered { key: 0 }, 1500)
                .column(ColumnSpec::new("Id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
                .column(ColumnSpec::new(
                    "Text",
                    ColType::VarChar(Some(200)),
                    Gen::Length { min: 150, max: 200 },
                    Nulls::Never,
                )),
        );
    forge(&spec).unwrap().remove(0).bytes
}

fn open(bytes: Vec<u8>) -> Database {
    Database::from_source(Arc::new(DataFiles::from_memory(vec![("bounded.mdf".into(), bytes)]).unwrap())).unwrap()
}

/// The forged database's bytes, opened, and the in-row allocation unit of its table `name`.
fn forged_unit(name: &str) -> (Vec<u8>, Database, mdfkit::catalog::base::AllocationUnit) {
    let bytes = forged();
    let db = open(bytes.clone());
    let table = db.catalog().find_table(name).unwrap();
    let unit = db.catalog().base().in_row_unit(table.partitions[0].partition_id).unwrap().clone();
    (bytes, db, unit)
}

fn page_mut(bytes: &mut [u8], page: u32) -> &mut [u8] {
    &mut bytes[page as usize * PAGE_SIZE..(page as usize + 1) * PAGE_SIZE]
}

fn set_next_page(page: &mut [u8], next: PageId) {
    page[16..20].copy_from_slice(&next.page.to_le_bytes());
    page[20..22].copy_from_slice(&next.file.to_le_bytes());
    seal(page);
}

/// Every row of `table` as text, serially; the error of the scan if it fails.
fn scan_error(db: &Database, name: &str) -> String {
    let table = db.catalog().find_table(name).unwrap();
    db.scan(&table).records(|_, _| Ok(Flow::Continue)).unwrap_err().to_string()
}

/// `mdfkit check` of the catalog's structures reports a problem containing `needle`.
fn assert_check_finds(db: &Database, needle: &str) {
    let found: Vec<String> = check_catalog(db).unwrap().0.iter().map(|p| p.to_string()).collect();
    assert!(found.iter().any(|p| p.contains(needle)), "no problem says {needle:?}: {found:?}");
}

#[test]
fn iam_chain_that_loops_is_walked_once() {
    capped("iam_chain_that_loops_is_walked_once", || {
        let (mut bytes, _, unit) = forged_unit("dbo.Heap");
        let iam = unit.first_iam_page;
        set_next_page(page_mut(&mut bytes, iam.page), iam);
        let db = open(bytes);
        let err = scan_error(&db, "dbo.Heap");
        assert!(err.contains(&format!("IAM chain returns to page {iam}: a cycle")), "{err}");
        let table = db.catalog().find_table("dbo.Heap").unwrap();
        let options = ScanOptions::default();
        let err = db.scan(&table).options(&options).threads(2).batches(|_| Ok(Flow::Continue)).unwrap_err();
        assert!(err.to_string().contains("IAM chain returns to page"), "{err}");
        assert_check_finds(&db, "IAM chain returns to this page: a cycle");
    });
}

#[test]
fn iam_pages_mapping_pages_past_the_file_are_refused_without_listing_them() {
    capped("iam_pages_mapping_pages_past_the_file_are_refused_without_listing_them", || {
        let (mut bytes, db, unit) = forged_unit("dbo.Heap");
        let heap_pages = mdfkit::scan::heap_pages(db.reader(), &unit).unwrap();
        assert!(heap_pages.len() > 200, "{} pages", heap_pages.len());
        // The IAM page's bitmap says every extent of its interval (63,904 extents, 511,232 pages)
        // is the table's, and every data page of the table becomes such an IAM page of another
        // interval, all chained: 200 x 511,232 page ids (800 MB) if they were listed.
        let template = page_mut(&mut bytes, unit.first_iam_page.page).to_vec();
        let bitmap_slot = u16::from_le_bytes([template[PAGE_SIZE - 4], template[PAGE_SIZE - 3]]) as usize;
        let mut chain = vec![unit.first_iam_page];
        chain.extend(heap_pages.iter().filter(|p| **p != unit.first_iam_page).take(200));
        for (i, id) in chain.iter().enumerate() {
            let page = page_mut(&mut bytes, id.page);
            page.copy_from_slice(&template);
            page[32..36].copy_from_slice(&id.page.to_le_bytes());
            // Header record: start page of the interval (slot 0's record, fixed offset 40).
            let header = u16::from_le_bytes([page[PAGE_SIZE - 2], page[PAGE_SIZE - 1]]) as usize;
            page[header + 40..header + 44].copy_from_slice(&(i as u32 * 511_232).to_le_bytes());
            page[bitmap_slot + 4..bitmap_slot + 4 + 7988].fill(0xff);
            set_next_page(page, chain.get(i + 1).copied().unwrap_or_default());
        }
        let db = open(bytes);
        let err = scan_error(&db, "dbo.Heap");
        assert!(err.contains("IAM page maps page 1:") && err.contains("past the end of file 1"), "{err}");
        assert_check_finds(&db, "extents outside the files");
    });
}

#[test]
fn extent_two_units_map_is_reported_naming_the_unit_met_first() {
    capped("extent_two_units_map_is_reported_naming_the_unit_met_first", || {
        let (mut bytes, db, heap) = forged_unit("dbo.Heap");
        let keyed_table = db.catalog().find_table("dbo.Keyed").unwrap();
        let keyed = db.catalog().base().in_row_unit(keyed_table.partitions[0].partition_id).unwrap().clone();
        let heap_iam = IamPage::parse(&db.reader().read(heap.first_iam_page).unwrap()).unwrap();
        let extent = heap_iam.extents[0];
        // The keyed table's IAM page (of the file's first interval, as the heap's) maps the
        // heap's first uniform extent too: bit (extent's page / 8) of its bitmap, slot 1's
        // record after its 4-byte header.
        let page = page_mut(&mut bytes, keyed.first_iam_page.page);
        let bitmap = u16::from_le_bytes([page[PAGE_SIZE - 4], page[PAGE_SIZE - 3]]) as usize;
        let bit = (extent.page / 8) as usize;
        page[bitmap + 4 + bit / 8] |= 1 << (bit % 8);
        seal(page);
        let db = open(bytes);
        let units = &db.catalog().base().allocation_units;
        let place = |id: i64| units.iter().position(|u| u.id == id).unwrap();
        let (first, second) = if place(heap.id) < place(keyed.id) { (heap.id, keyed.id) } else { (keyed.id, heap.id) };
        let found = check_catalog(&db).unwrap().0;
        let owned: Vec<_> = found.iter().filter(|p| p.what.starts_with("extent also owned")).collect();
        assert_eq!(owned.len(), 1, "{found:?}");
        assert_eq!(owned[0].page, Some(extent));
        assert_eq!(owned[0].what, format!("extent also owned by allocation unit {first}"));
        let object = owned[0].object.as_deref().unwrap_or_default();
        assert!(object.ends_with(&format!("(allocation unit {second})")), "{object}");
    });
}

#[test]
fn leaf_chain_that_loops_is_walked_once() {
    capped("leaf_chain_that_loops_is_walked_once", || {
        let (mut bytes, db, unit) = forged_unit("dbo.Keyed");
        let first = mdfkit::scan::first_leaf(db.reader(), &unit).unwrap();
        // The first leaf page's next link points back at itself.
        set_next_page(page_mut(&mut bytes, first.page), first);
        let db = open(bytes);
        let err = scan_error(&db, "dbo.Keyed");
        assert!(err.contains(&format!("leaf page chain returns to page {first}: a cycle")), "{err}");
        assert_check_finds(&db, "leaf chain returns to this page: a cycle");
    });
}

#[test]
fn file_claiming_two_to_the_32_pages_is_checked_in_what_it_holds() {
    capped("file_claiming_two_to_the_32_pages_is_checked_in_what_it_holds", || {
        // A source whose file list claims 2^32 - 1 pages (as a backup's file list can) and holds
        // the pages of a forged database.
        let bytes = forged();
        let held: BTreeMap<u32, Vec<u8>> =
            bytes.chunks_exact(PAGE_SIZE).enumerate().map(|(n, p)| (n as u32, p.to_vec())).collect();
        let held_count = held.len() as u64;
        let source = Pages::new(held, u32::MAX);
        let (found, stats) = check_pages(&source, |_| {});
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].page, Some(PageId::new(1, 8088)));
        let expected = format!("the {} pages from here on were not checked", u64::from(u32::MAX) - 8088);
        assert!(found[0].what.contains(&expected), "{}", found[0]);
        assert!(stats.pages_checked < held_count, "{stats:?}");
        let listed = mdfkit::recovery::list_pages(&source, |_| true);
        assert!(!listed.is_empty() && listed.len() as u64 <= held_count, "{} pages listed", listed.len());
    });
}

/// An MTF block header with its checksum (XOR of the 25 words before it).
fn mtf_block_header(kind: &[u8; 4], first_stream: u16) -> Vec<u8> {
    let mut b = vec![0u8; 52];
    b[..4].copy_from_slice(kind);
    b[8..10].copy_from_slice(&first_stream.to_le_bytes());
    b[10] = 14;
    let sum = b[..50].chunks_exact(2).fold(0u16, |x, w| x ^ u16::from_le_bytes([w[0], w[1]]));
    b[50..52].copy_from_slice(&sum.to_le_bytes());
    b
}

/// An MTF stream header with its checksum (XOR of the 10 words before it).
fn mtf_stream_header(id: &[u8; 4], length: u64) -> Vec<u8> {
    let mut b = vec![0u8; 22];
    b[..4].copy_from_slice(id);
    b[8..16].copy_from_slice(&length.to_le_bytes());
    let sum = b[..20].chunks_exact(2).fold(0u16, |x, w| x ^ u16::from_le_bytes([w[0], w[1]]));
    b[20..22].copy_from_slice(&sum.to_le_bytes());
    b
}

#[test]
fn backup_stream_claiming_a_terabyte_is_refused() {
    capped("backup_stream_claiming_a_terabyte_is_refused", || {
        let mut bytes = mtf_block_header(b"TAPE", 88);
        bytes.resize(88, 0);
        bytes[84..86].copy_from_slice(&1024u16.to_le_bytes()); // logical block size
        bytes.extend(mtf_stream_header(b"SPAD", 1 << 40));
        bytes.resize(4096, 0);
        let err = mdfkit::backup::BackupMedia::from_bytes("terabyte.bak", bytes).map(|_| ()).unwrap_err();
        assert!(
            err.message().contains("stream 'SPAD' claims 1099511627776 bytes, but the file ends at byte 4096"),
            "{err}"
        );
    });
}
