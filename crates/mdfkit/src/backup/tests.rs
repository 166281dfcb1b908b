//! Unit tests over backups built byte by byte.

use super::*;
use mdfkit_forge::backup::{as_stripe, block_header, sfin, MtfWriter};

const LBS: usize = 1024;

/// A page that names itself `file:page`, with `marker` at byte 100.
fn page(file: u16, page_no: u32, marker: u8) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    p[0] = 1;
    p[1] = 1;
    p[32..36].copy_from_slice(&page_no.to_le_bytes());
    p[36..38].copy_from_slice(&file.to_le_bytes());
    p[100] = marker;
    p
}

fn extent(file: u16, first: u32, marker: u8) -> Vec<u8> {
    (0..8).flat_map(|k| page(file, first + k, marker)).collect()
}

/// Builds a backup the way SQL Server lays one out (the forge's MTF writer, with this module's
/// sample file list and set headers).
struct Builder(MtfWriter);

impl std::ops::Deref for Builder {
    type Target = MtfWriter;
    fn deref(&self) -> &MtfWriter {
        &self.0
    }
}

impl std::ops::DerefMut for Builder {
    fn deref_mut(&mut self) -> &mut MtfWriter {
        &mut self.0
    }
}

impl Builder {
    fn new(physical: usize) -> Self {
        Self::with_set(physical, 0, b"SCIN\x0c\x00\x00\x00abcd".to_vec())
    }

    /// A backup whose first set has data set number `position` and the SCIN record `scin`.
    fn with_set(physical: usize, position: u16, scin: Vec<u8>) -> Self {
        let mut b = Builder(MtfWriter::new(physical));
        b.start_set(position, scin);
        b
    }

    /// Starts a backup set: SSET (data set number `position`, 0 for none), VOLB, MSCI with
    /// `scin` and the two-file list.
    fn start_set(&mut self, position: u16, scin: Vec<u8>) {
        let mut h = block_header(b"SSET", 128, 0);
        h.resize(128, 0);
        h[52..56].copy_from_slice(&4u32.to_le_bytes());
        h[62..64].copy_from_slice(&position.to_le_bytes());
        h[100..116].fill(position as u8 + 0x40);
        self.0.start_set(h);
        assert_eq!(self.out.len(), self.sset + 2 * LBS);
        let mut mqci = scin;
        mqci.extend(sfin(1, 1, 4 * 65536, "Shop", "C:\\DATA\\Shop.mdf"));
        mqci.extend(sfin(2, 2, 65536, "Shop_log", "C:\\DATA\\Shop_log.ldf"));
        self.block(b"MSCI", &[(*b"MQCI", 0, mqci)]);
    }

    /// An MSDA block whose data stream holds `extents`.
    fn data(&mut self, extents: &[Vec<u8>]) -> usize {
        self.0.data(extents.concat())
    }

    fn finish(mut self) -> Vec<u8> {
        self.end_set();
        self.0.out
    }
}

/// Two data blocks: extent 1:0 (page 1:5 unformatted), an extent no page identifies, extent 1:8;
/// then a re-sent copy of extent 1:0 in which page 1:1 changed.
fn sample(physical: usize) -> Vec<u8> {
    let mut b = Builder::new(physical);
    let mut first = extent(1, 0, 0xa0);
    first[5 * PAGE_SIZE..6 * PAGE_SIZE].fill(0);
    b.data(&[first, vec![0u8; 8 * PAGE_SIZE], extent(1, 8, 0xa8)]);
    b.data(&[extent(1, 0, 0xb0)]);
    b.finish()
}

fn open(bytes: Vec<u8>) -> Result<BackupPages> {
    BackupPages::from_bytes("test.bak", bytes)
}

fn marker(pages: &BackupPages, id: PageId) -> u8 {
    let mut buf = vec![0u8; PAGE_SIZE];
    pages.read_raw(id, &mut buf).unwrap();
    buf[100]
}

#[test]
fn maps_pages_and_later_copies_win() {
    for physical in [512, 1024, 4096] {
        let pages = open(sample(physical)).unwrap();
        assert_eq!(pages.page_count(), 16, "block size {physical}");
        assert_eq!(pages.page_copies(), 24);
        assert_eq!(pages.backup_sets(), 1);
        assert_eq!(marker(&pages, PageId::new(1, 1)), 0xb0);
        assert_eq!(marker(&pages, PageId::new(1, 9)), 0xa8);
        // Pages are at whatever offset the stream puts them.
        let (_, offset) = pages.page_location(PageId::new(1, 1)).unwrap();
        assert_ne!(offset % 512, 0);
        // The unformatted page is mapped by its extent, and the re-sent copy replaced it.
        assert_eq!(marker(&pages, PageId::new(1, 5)), 0xb0);
        // The unidentified extent is not mapped anywhere.
        assert!(pages.page_location(PageId::new(1, 16)).is_none());
    }
}

#[test]
fn reads_the_file_list() {
    let pages = open(sample(512)).unwrap();
    let list = pages.file_list();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].file_id, 1);
    assert_eq!(list[0].kind, FileKind::Data);
    assert_eq!(list[0].logical_name, "Shop");
    assert_eq!(list[0].physical_name, "C:\\DATA\\Shop.mdf");
    assert_eq!(list[1].kind, FileKind::Log);
    let files = pages.files();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].file_id, 1);
    assert_eq!(files[0].page_count, 32);
    assert_eq!(files[0].location, PathBuf::from("test.bak!Shop.mdf"));
}

#[test]
fn missing_pages_are_reported_not_invented() {
    let pages = open(sample(512)).unwrap();
    let mut buf = vec![0u8; PAGE_SIZE];
    let e = pages.read_raw(PageId::new(1, 20), &mut buf).unwrap_err();
    assert!(e.to_string().contains("page 1:20 is not in the backup"), "{e}");
    let e = pages.read_raw(PageId::new(3, 0), &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
}

fn expect_err(bytes: Vec<u8>, kind: ErrorKind, needles: &[&str]) {
    let e = match open(bytes) {
        Ok(_) => panic!("expected an error containing {needles:?}"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert_eq!(e.kind(), kind, "{text}");
    assert!(text.starts_with("test.bak: "), "{text}");
    for n in needles {
        assert!(text.contains(n), "{text:?} lacks {n:?}");
    }
}

#[test]
fn refuses_foreign_files() {
    let mut b = b"MSSQLBAK".to_vec();
    b.resize(4096, 0);
    expect_err(b, ErrorKind::Unsupported, &["compressed backup (MSSQLBAK) container version 0"]);
    expect_err(vec![0u8; 4096], ErrorKind::NotADatabase, &["expected \"TAPE\""]);
    expect_err(b"TA".to_vec(), ErrorKind::NotADatabase, &["expected \"TAPE\""]);
    expect_err(Vec::new(), ErrorKind::NotADatabase, &["expected \"TAPE\""]);
    // A TAPE magic with nothing after it.
    expect_err(b"TAPE".to_vec(), ErrorKind::Corrupt, &["truncated backup", "at byte 0"]);
}

#[test]
fn truncated_backups_name_the_offset() {
    let full = sample(512);
    // Cut inside the first data stream.
    let cut = 40_000;
    expect_err(full[..cut].to_vec(), ErrorKind::Corrupt, &["truncated backup", "at byte"]);
    // Cut just before the end-of-set blocks: every stream is whole, the set is not.
    let eset = full.windows(4).position(|w| w == b"ESET").unwrap();
    expect_err(full[..eset].to_vec(), ErrorKind::Corrupt, &["ESET", "truncated"]);
}

#[test]
fn every_truncation_and_corruption_is_an_error_not_a_panic() {
    let full = sample(512);
    for len in (0..full.len()).step_by(509) {
        assert!(open(full[..len].to_vec()).is_err(), "cut at {len}");
    }
    let mut seed = 0x2545_f491_u32;
    for _ in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let mut b = full.clone();
        // Hit the descriptor area and the stream headers more often than the page bytes.
        let at = (seed as usize) % if seed & 1 == 0 { 8192 } else { b.len() };
        b[at] ^= (seed >> 24) as u8 | 1;
        let _ = open(b);
    }
}

#[test]
fn corrupt_headers_are_reported_with_their_offset() {
    let mut b = sample(512);
    let sset = 1024 + 512;
    b[sset + 12] ^= 0xff;
    expect_err(b, ErrorKind::Corrupt, &[&format!("at byte {sset}"), "checksum"]);

    let mut b = sample(512);
    // The MSCI block's first stream header.
    let mqci = 1536 + 2 * LBS + 60;
    b[mqci + 9] ^= 0x01;
    expect_err(b, ErrorKind::Corrupt, &[&format!("at byte {mqci}"), "stream header"]);
}

#[test]
fn unknown_block_types_are_refused() {
    let mut b = Builder::new(512);
    b.block(b"XYZW", &[]);
    expect_err(b.finish(), ErrorKind::Unsupported, &["unknown descriptor block type 'XYZW'", "at byte 4608"]);
}

/// Without an allocation map in the stream (no GAM page), each extent goes where most of its
/// pages say; disagreeing pages never refuse the backup.
#[test]
fn without_a_map_extents_go_where_most_pages_say() {
    let mut b = Builder::new(512);
    let mut e = extent(1, 0, 1);
    e[3 * PAGE_SIZE..4 * PAGE_SIZE].copy_from_slice(&page(1, 11, 9));
    // A page at the wrong position of its extent, and one naming another extent.
    e[4 * PAGE_SIZE..5 * PAGE_SIZE].copy_from_slice(&page(1, 10, 9));
    b.data(&[e, extent(1, 8, 2)]);
    let pages = open(b.finish()).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 0)), 1);
    assert_eq!(marker(&pages, PageId::new(1, 3)), 9, "the disagreeing page is served at its place");
    assert_eq!(marker(&pages, PageId::new(1, 8)), 2);
    assert!(pages.notes().iter().any(|n| n.contains("GAM page 1:2")), "{:?}", pages.notes());

    // An extent naming one before the last placed is skipped, not an error.
    let mut b = Builder::new(512);
    b.data(&[extent(1, 16, 1), extent(1, 8, 2)]);
    let pages = open(b.finish()).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 16)), 1);
    assert!(pages.page_location(PageId::new(1, 8)).is_none());
    assert!(pages.notes().iter().any(|n| n.contains("skipped")), "{:?}", pages.notes());
}

/// Extent 1:0 with the GAM page of a 32-page file listing `allocated` (extent indexes).
fn map_extent(allocated: &[u32]) -> Vec<u8> {
    let mut e = extent(1, 0, 0xf0);
    e[2 * PAGE_SIZE..3 * PAGE_SIZE].copy_from_slice(&super::extents::tests::gam_page(1, 0, allocated));
    e
}

fn with_map(allocated: &[u32], rest: Vec<Vec<u8>>) -> BackupPages {
    let mut b = Builder::new(512);
    let mut extents = vec![map_extent(allocated)];
    extents.extend(rest);
    b.data(&extents);
    open(b.finish()).unwrap()
}

/// A mixed extent's unused pages keep headers naming other pages at other positions (here: every
/// page of it, naming pages of the next extent or other places); the map still places it.
#[test]
fn stale_pages_of_a_mixed_extent_do_not_move_it() {
    let mut mixed = extent(1, 8, 0xc8);
    for k in 1..8u32 {
        // Pages of the next extent, at their own positions, and one at another position.
        let named = if k == 5 { 1 } else { 16 + k };
        mixed[k as usize * PAGE_SIZE..(k as usize + 1) * PAGE_SIZE].copy_from_slice(&page(1, named, 0xee));
    }
    let pages = with_map(&[0, 1, 2], vec![mixed.clone(), extent(1, 16, 0xd0)]);
    assert_eq!(marker(&pages, PageId::new(1, 8)), 0xc8);
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0xee);
    assert_eq!(marker(&pages, PageId::new(1, 17)), 0xd0, "the real 1:17 is not replaced by a stale copy");
    assert_eq!(pages.page_count(), 24);
    assert!(pages.notes().is_empty(), "{:?}", pages.notes());

    // Even when no page of the extent names it, the map decides: without reading the headers (the
    // maps account for every extent of the stream), so nothing is noted about them.
    mixed[..PAGE_SIZE].copy_from_slice(&page(1, 16, 0xee));
    let pages = with_map(&[0, 1, 2], vec![mixed, extent(1, 16, 0xd0)]);
    assert_eq!(marker(&pages, PageId::new(1, 16)), 0xd0);
    assert_eq!(
        pages.page_location(PageId::new(1, 8)).unwrap().1 + 8 * PAGE_SIZE as u64,
        pages.page_location(PageId::new(1, 16)).unwrap().1
    );
    assert!(pages.notes().is_empty(), "{:?}", pages.notes());
}

/// An allocated extent of zeroed (never formatted) pages keeps its place; so does one whose
/// pages are random bytes.
#[test]
fn zeroed_and_garbled_extents_keep_their_place() {
    let mut junk = vec![0u8; 8 * PAGE_SIZE];
    let mut seed = 0x9e37_79b9u32;
    for b in junk.iter_mut() {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        *b = seed as u8;
    }
    let pages = with_map(&[0, 1, 2, 3], vec![vec![0u8; 8 * PAGE_SIZE], junk, extent(1, 24, 0xd8)]);
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0);
    assert!(pages.page_location(PageId::new(1, 16)).is_some());
    assert_eq!(marker(&pages, PageId::new(1, 24)), 0xd8);
    assert_eq!(pages.page_count(), 32);
}

/// An allocated page with a garbled header in the middle of an extent: served at its place (the
/// page reader and `check` report it); its neighbours are untouched.
#[test]
fn a_garbled_page_stays_at_its_place() {
    let mut e = extent(1, 8, 0xc8);
    let mut bad = page(0x9342, 4_264_431_066, 0x66);
    bad[1] = 0xef;
    e[3 * PAGE_SIZE..4 * PAGE_SIZE].copy_from_slice(&bad);
    let pages = with_map(&[0, 1, 2], vec![e, extent(1, 16, 0xd0)]);
    assert_eq!(marker(&pages, PageId::new(1, 11)), 0x66);
    assert_eq!(marker(&pages, PageId::new(1, 12)), 0xc8);
    assert_eq!(marker(&pages, PageId::new(1, 16)), 0xd0);
    let db_err = crate::source::PageReader::new(std::sync::Arc::new(pages)).read(PageId::new(1, 11)).err().unwrap();
    assert!(db_err.to_string().contains("1:11"), "{db_err}");
}

/// An extent allocated after the GAM page was copied is in the stream but not in the map: it is
/// placed by its headers, between its neighbours, and noted.
#[test]
fn extents_allocated_while_the_backup_ran_are_placed_by_their_headers() {
    let pages = with_map(&[0, 2], vec![extent(1, 8, 0xc8), extent(1, 16, 0xd0)]);
    assert_eq!(marker(&pages, PageId::new(1, 8)), 0xc8);
    assert_eq!(marker(&pages, PageId::new(1, 16)), 0xd0);
    assert!(
        pages
            .notes()
            .iter()
            .any(|n| n.contains("extent 1:8 is in the data stream but not in its file's allocation map")),
        "{:?}",
        pages.notes()
    );

    // And one the map lists but the stream lacks (freed while the backup ran).
    let pages = with_map(&[0, 1, 2, 3], vec![extent(1, 16, 0xd0), extent(1, 24, 0xd8)]);
    assert_eq!(marker(&pages, PageId::new(1, 16)), 0xd0);
    assert_eq!(marker(&pages, PageId::new(1, 24)), 0xd8);
    assert!(pages.page_location(PageId::new(1, 8)).is_none());
    assert!(pages.notes().iter().any(|n| n.contains("1 extent(s) of file 1 before 1:16")), "{:?}", pages.notes());
}

/// A compressed backup (MSSQLBAK) of a stream with stale, zeroed and garbled pages is placed the
/// same way as the uncompressed one.
#[test]
fn compressed_backups_are_placed_the_same_way() {
    use super::mssqlbak::tests::wrap;
    let mut mixed = extent(1, 8, 0xc8);
    for k in 1..8u32 {
        mixed[k as usize * PAGE_SIZE..(k as usize + 1) * PAGE_SIZE].copy_from_slice(&page(1, 16 + k, 0xee));
    }
    let mut b = Builder::new(512);
    b.data(&[map_extent(&[0, 1, 2, 3]), mixed, vec![0u8; 8 * PAGE_SIZE], extent(1, 24, 0xd8)]);
    let plain = b.finish();
    let pages = open(wrap(&plain, 16 * 512)).unwrap();
    for (id, want) in [(8, 0xc8), (9, 0xee), (17, 0), (24, 0xd8)] {
        assert_eq!(marker(&pages, PageId::new(1, id)), want, "1:{id}");
    }
    assert_eq!(pages.page_count(), 32);
}

/// Blocks that are not database pages after the mapped extents (2008 R2's type-101 extents) are
/// skipped; extents holding PFS pages are copied whether the GAM marks them or not.
#[test]
fn trailing_non_page_extents_are_skipped() {
    let mut log = vec![0u8; 8 * PAGE_SIZE];
    for k in 0..8 {
        log[k * PAGE_SIZE] = 1;
        log[k * PAGE_SIZE + 1] = 101;
    }
    let pages = with_map(&[0, 1], vec![extent(1, 8, 0xc8), log]);
    assert_eq!(pages.page_count(), 16);
    assert!(pages.notes().is_empty(), "{:?}", pages.notes());
}

#[test]
fn data_streams_must_hold_whole_pages() {
    let mut b = Builder::new(512);
    b.block(b"MSDA", &[(*b"MQDA", 0x2, vec![0u8; 2 + 4000])]);
    expect_err(b.finish(), ErrorKind::Corrupt, &["MQDA is 4002 bytes", "whole number"]);
}

#[test]
fn logical_addresses_are_checked() {
    let mut b = Builder::new(512);
    let at = b.data(&[extent(1, 0, 1)]);
    let mut out = b.finish();
    out[at + 20] ^= 0x40;
    let c = super::mtf::xor16(&out[at..at + 50]);
    out[at + 50..at + 52].copy_from_slice(&c.to_le_bytes());
    expect_err(out, ErrorKind::Corrupt, &["logical block", &format!("at byte {at}")]);
}

#[test]
fn differential_and_log_backups_are_explained() {
    let mut bytes = sample(512);
    let sset = 1536;
    bytes[sset + 52] = 0x8;
    expect_err(
        bytes,
        ErrorKind::MissingFile,
        &["differential backup", "its header does not name it", "give that full backup too"],
    );

    let b = Builder::new(512);
    expect_err(b.finish(), ErrorKind::NotADatabase, &["no data pages"]);
}

/// Unallocated pages keep stale headers naming other extents; the stream's order places the extent.
#[test]
fn stale_pages_do_not_move_their_extent() {
    let mut b = Builder::new(512);
    let mut e = extent(1, 8, 0xc8);
    for k in 1..8 {
        e[k * PAGE_SIZE..(k + 1) * PAGE_SIZE].copy_from_slice(&page(1, 7272 + k as u32, 0xee));
    }
    b.data(&[extent(1, 0, 0xc0), e, extent(1, 16, 0xd0)]);
    let pages = open(b.finish()).unwrap();
    assert_eq!(pages.page_count(), 24);
    assert_eq!(marker(&pages, PageId::new(1, 8)), 0xc8);
    // The stale copy is served where the stream puts it (the page reader's address check rejects it).
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0xee);
    assert!(pages.page_location(PageId::new(1, 7273)).is_none());
}

/// The same backup compressed (MSSQLBAK) serves the same pages; errors inside the decompressed
/// stream say so, and container errors name file offsets.
#[test]
fn compressed_backups_read_like_uncompressed_ones() {
    use super::mssqlbak::tests::wrap;
    let plain = sample(512);
    let pages = open(wrap(&plain, 16 * 512)).unwrap();
    assert_eq!(pages.page_count(), 16);
    assert_eq!(pages.page_copies(), 24);
    assert_eq!(marker(&pages, PageId::new(1, 1)), 0xb0);
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0xa8);
    assert_eq!(pages.file_list().len(), 2);

    let mut b = plain.clone();
    b[1536 + 12] ^= 0xff;
    expect_err(wrap(&b, 16 * 512), ErrorKind::Corrupt, &["in the decompressed stream, at byte 1536", "checksum"]);

    let eset = plain.windows(4).position(|w| w == b"ESET").unwrap();
    let cut = wrap(&plain[..eset], 16 * 512);
    expect_err(cut, ErrorKind::Corrupt, &["ESET", "truncated"]);

    let mut c = wrap(&plain, 16 * 512);
    // The first record's code length table, now over-subscribed. (A changed bit in the bit
    // stream just changes the data: the records' checksum is not understood, so not checked.)
    c[480 + 28] = 0x11;
    expect_err(c, ErrorKind::Corrupt, &["test.bak: at byte 480: compressed record"]);
}

/// A SCIN record: type letter, database name, LSNs (vlf, block, slot) first / last / checkpoint /
/// database backup, start date, flags.
fn scin(letter: u8, database: &str, lsns: [(u32, u32, u16); 4], flags: u32) -> Vec<u8> {
    let mut r = vec![0u8; 300];
    r[..4].copy_from_slice(b"SCIN");
    r[8..12].copy_from_slice(&flags.to_le_bytes());
    r[24..28].copy_from_slice(&[0x40, 0x06, 50, 10]);
    for (i, (vlf, block, slot)) in lsns.iter().enumerate() {
        let at = 32 + 10 * i;
        r[at..at + 4].copy_from_slice(&vlf.to_le_bytes());
        r[at + 4..at + 8].copy_from_slice(&block.to_le_bytes());
        r[at + 8..at + 10].copy_from_slice(&slot.to_le_bytes());
    }
    // Created 2018-12-21 11:23:45, started 11:26:31, finished 11:26:32.
    r[72..77].copy_from_slice(&[0x1f, 0x8b, 0x2a, 0xb5, 0xed]);
    r[77..82].copy_from_slice(&[0x1f, 0x8b, 0x2a, 0xb6, 0x9f]);
    r[82..87].copy_from_slice(&[0x1f, 0x8b, 0x2a, 0xb6, 0xa0]);
    r[87] = letter;
    r[91] = 100;
    r[94..96].copy_from_slice(&661u16.to_le_bytes());
    r[96..104].copy_from_slice(&123_456u64.to_le_bytes());
    r[216..220].copy_from_slice(&0x00d0_0409u32.to_le_bytes());
    r[220] = 52;
    let utf16 = |s: &str| s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect::<Vec<u8>>();
    let (db, server) = (utf16(database), utf16("HOST\\SQL2008R2"));
    r[104..106].copy_from_slice(&(db.len() as u16).to_le_bytes());
    r[106..108].copy_from_slice(&300u16.to_le_bytes());
    r[108..110].copy_from_slice(&(server.len() as u16).to_le_bytes());
    r[110..112].copy_from_slice(&((300 + db.len()) as u16).to_le_bytes());
    if letter == b'I' {
        r[260..264].copy_from_slice(&lsns[3].0.to_le_bytes());
        r[264..268].copy_from_slice(&lsns[3].1.to_le_bytes());
        r[268..270].copy_from_slice(&lsns[3].2.to_le_bytes());
        r[272..288].fill(0x41);
    }
    r.extend(db);
    r.extend(server);
    let len = r.len() as u32;
    r[4..8].copy_from_slice(&len.to_le_bytes());
    r
}

/// A file with a set without SCIN (position 1, taken as full), a full backup (position 2), a
/// differential (3) and a log backup (4).
fn three_sets() -> Vec<u8> {
    let mut b = Builder::new(512);
    b.data(&[extent(1, 0, 0xa0)]);
    b.end_set();
    b.start_set(2, scin(b'D', "Shop", [(24, 68, 99), (24, 109, 1), (24, 68, 99), (0, 0, 0)], 0x210));
    b.data(&[extent(1, 0, 0xb0)]);
    b.end_set();
    b.start_set(3, scin(b'I', "Shop", [(24, 117, 34), (24, 132, 1), (24, 117, 34), (24, 68, 99)], 0xa00));
    b.data(&[extent(1, 0, 0xc0)]);
    b.end_set();
    b.start_set(4, scin(b'L', "Shop", [(24, 68, 99), (24, 140, 1), (24, 117, 34), (24, 68, 99)], 0x200));
    b.finish()
}

#[test]
fn every_backup_set_is_listed_with_its_header() {
    let media = BackupMedia::from_bytes("test.bak", three_sets()).unwrap();
    let sets = media.sets();
    // The first set has no data set number in its SSET nor a readable SCIN: its place is its position.
    assert_eq!(sets.iter().map(|s| s.position).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(sets[0].backup_type, BackupType::Full);
    assert_eq!(media.default_position(), Some(2));
    let full = &sets[1];
    assert_eq!(full.backup_type, BackupType::Full);
    assert_eq!(full.database_name, "Shop");
    assert_eq!(full.server_name, "HOST\\SQL2008R2");
    assert_eq!(full.machine_name, "HOST");
    assert_eq!(full.software_version, "10.50.1600");
    assert_eq!((full.database_version, full.compatibility_level), (661, 100));
    assert_eq!(full.collation, "SQL_Latin1_General_CP1_CI_AS");
    assert_eq!(full.start.unwrap().to_string(), "2018-12-21 11:26:31");
    assert_eq!(full.finish.unwrap().to_string(), "2018-12-21 11:26:32");
    assert_eq!(full.database_creation_date.unwrap().to_string(), "2018-12-21 11:23:45");
    assert_eq!(full.first_lsn.to_string(), "24000000006800099");
    assert_eq!(full.backup_size, 123_456);
    assert!(full.checksums && !full.compressed && !full.encrypted && full.complete);
    assert_eq!(full.files.len(), 2);
    let diff = &sets[2];
    assert_eq!(diff.backup_type, BackupType::Differential);
    assert_eq!(diff.differential_base_lsn, Some(full.checkpoint_lsn));
    assert_eq!(diff.differential_base_guid.as_deref(), Some("41414141-4141-4141-4141-414141414141"));
    assert_eq!(sets[3].backup_type, BackupType::Log);
    assert_eq!(sets[3].first_lsn, full.first_lsn);
}

#[test]
fn positions_choose_the_set_read() {
    let bytes = three_sets();
    // Default: the last full database backup.
    let pages = BackupMedia::from_bytes("test.bak", bytes.clone()).unwrap().into_pages(None).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 0)), 0xb0);
    assert_eq!(pages.backup_set().database_name, "Shop");
    // The same set through any page source (its `origin`), and no plan outside a restore chain.
    let source: &dyn PageSource = &pages;
    assert_eq!(source.backup_set().map(|set| set.database_name.as_str()), Some("Shop"));
    assert_eq!(source.backup_set().map(|set| set.position), Some(pages.backup_set().position));
    assert!(source.restore_plan().is_none());
    let pages = BackupMedia::from_bytes("test.bak", bytes.clone()).unwrap().into_pages(Some(1)).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 0)), 0xa0);
    let e = BackupMedia::from_bytes("test.bak", bytes.clone()).unwrap().into_pages(Some(3)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
    assert!(
        e.to_string().starts_with(
            "test.bak: position 3 is a differential backup: it holds only the extents changed since its full backup (checkpoint LSN 24000000006800099"
        ),
        "{e}"
    );
    let e = BackupMedia::from_bytes("test.bak", bytes.clone()).unwrap().into_pages(Some(4)).err().unwrap();
    assert!(e.to_string().contains("position 4 is a transaction log backup"), "{e}");
    let e = BackupMedia::from_bytes("test.bak", bytes).unwrap().into_pages(Some(9)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("no backup set at position 9"), "{e}");
}

/// A one-set backup whose TAPE block carries a RAID stream: media set `id`, stripe `n` of `count`.
fn stripe(id: u8, n: u16, count: u16, first_extent: u32) -> Vec<u8> {
    stripe_of(id, n, count, &[extent(1, first_extent, 0xa0 + n as u8)])
}

/// Like [`stripe`], with the data stream holding `extents`.
fn stripe_of(id: u8, n: u16, count: u16, extents: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Builder::new(512);
    b.data(extents);
    as_stripe(b.finish(), id, n, count)
}

/// Each stripe holds some of the extents, in order; the map (in stripe 1) and the votes place
/// them, stale pages naming an extent further on do not move one, and a garbled page stays put.
#[test]
fn striped_extents_are_placed_by_votes_nearest_in_the_map() {
    let mut mixed = extent(1, 8, 0xc8);
    for k in 1..8u32 {
        mixed[k as usize * PAGE_SIZE..(k as usize + 1) * PAGE_SIZE].copy_from_slice(&page(1, 24 + k, 0xee));
    }
    let mut damaged = extent(1, 16, 0xd0);
    damaged[2 * PAGE_SIZE..3 * PAGE_SIZE].copy_from_slice(&page(77, 3_000_000, 0x66));
    let pages = BackupMedia::from_stripe_bytes(vec![
        ("a.bak".into(), stripe_of(1, 1, 2, &[map_extent(&[0, 1, 2, 3]), damaged])),
        ("b.bak".into(), stripe_of(1, 2, 2, &[mixed, extent(1, 24, 0xd8)])),
    ])
    .unwrap()
    .into_pages(None)
    .unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 8)), 0xc8);
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0xee);
    assert_eq!(marker(&pages, PageId::new(1, 18)), 0x66);
    assert_eq!(marker(&pages, PageId::new(1, 25)), 0xd8);
    assert_eq!(pages.page_count(), 32);
    assert!(pages.notes().is_empty(), "{:?}", pages.notes());
}

#[test]
fn stripes_must_all_be_given_and_belong_together() {
    let both = BackupMedia::from_stripe_bytes(vec![
        ("a.bak".into(), stripe(1, 1, 2, 0)),
        ("b.bak".into(), stripe(1, 2, 2, 8)),
    ])
    .unwrap();
    assert!(both.missing_stripes().is_empty());
    assert_eq!((both.sets()[0].family_number, both.sets()[0].family_count), (1, 2));
    let pages = both.into_pages(None).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 0)), 0xa1);
    assert_eq!(marker(&pages, PageId::new(1, 8)), 0xa2);

    let one = BackupMedia::from_stripe_bytes(vec![("b.bak".into(), stripe(1, 2, 2, 8))]).unwrap();
    assert_eq!(one.missing_stripes(), [1]);
    let e = one.into_pages(None).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
    assert!(e.to_string().contains("striped over 2 files and stripe 1 is missing (this file is stripe 2"), "{e}");

    let e = BackupMedia::from_stripe_bytes(vec![
        ("a.bak".into(), stripe(1, 1, 2, 0)),
        ("c.bak".into(), stripe(2, 2, 2, 8)),
    ])
    .err()
    .unwrap();
    assert!(e.to_string().starts_with("c.bak: belongs to another backup than a.bak"), "{e}");
}

/// The SCIN LSNs (vlf, block, slot) of the chain below: a full backup, a differential based on it
/// (its base LSN, the 4th, is the full's checkpoint LSN), and log backups.
const FULL_LSNS: [(u32, u32, u16); 4] = [(24, 68, 99), (24, 109, 1), (24, 68, 99), (0, 0, 0)];
const DIFF_LSNS: [(u32, u32, u16); 4] = [(24, 117, 34), (24, 132, 1), (24, 117, 34), (24, 68, 99)];

/// A full backup of a 4-extent file (GAM page in extent 1:0, every extent allocated): page 1:n
/// carries marker 0xa0 + n / 8.
fn chain_full() -> Vec<u8> {
    let mut b = Builder::with_set(512, 1, scin(b'D', "Shop", FULL_LSNS, 0x200));
    b.data(&full_extents());
    b.finish()
}

fn full_extents() -> [Vec<u8>; 4] {
    [map_extent(&[0, 1, 2, 3]), extent(1, 8, 0xa1), extent(1, 16, 0xa2), extent(1, 24, 0xa3)]
}

/// The stream of `chain_diff`: extent 1:0 with the DCM page, extent 1:16.
fn diff_extents() -> [Vec<u8>; 2] {
    let mut first = extent(1, 0, 0xd0);
    first[6 * PAGE_SIZE..7 * PAGE_SIZE].copy_from_slice(&super::extents::tests::dcm_page(1, 0, &[0, 2]));
    [first, extent(1, 16, 0xd0)]
}

/// A differential backup of `chain_full`'s database with base LSN `base`: its DCM (page 1:6)
/// marks extents 1:0 and 1:16 changed, and its stream holds them (marker 0xd0).
fn chain_diff(base: (u32, u32, u16)) -> Vec<u8> {
    let mut lsns = DIFF_LSNS;
    lsns[3] = base;
    let mut b = Builder::with_set(512, 1, scin(b'I', "Shop", lsns, 0x200));
    b.data(&diff_extents());
    b.finish()
}

/// A log backup of `chain_full`'s database from `first` to `last`.
fn chain_log(first: (u32, u32, u16), last: (u32, u32, u16)) -> Vec<u8> {
    let b = Builder::with_set(512, 1, scin(b'L', "Shop", [first, last, (24, 68, 99), (24, 68, 99)], 0x200));
    b.finish()
}

fn chain(files: &[(&str, Vec<u8>)]) -> chain::BackupFiles {
    chain::BackupFiles::from_bytes(files.iter().map(|(n, b)| (PathBuf::from(n), b.clone())).collect()).unwrap()
}

#[test]
fn a_differential_is_laid_over_its_full_backup_in_any_order() {
    let (full, diff) = (("full.bak", chain_full()), ("diff.bak", chain_diff((24, 68, 99))));
    for files in [[full.clone(), diff.clone()], [diff.clone(), full.clone()]] {
        let (pages, plan) = chain(&files).into_pages(None).unwrap();
        assert_eq!(plan.full.files, [PathBuf::from("full.bak")]);
        assert_eq!(plan.differential.as_ref().map(|d| d.files.clone()), Some(vec![PathBuf::from("diff.bak")]));
        assert_eq!(pages.differential().map(|d| d.backup_type), Some(BackupType::Differential));
        // The changed extents are the differential's, the others the full's.
        assert_eq!(marker(&pages, PageId::new(1, 0)), 0xd0);
        assert_eq!(marker(&pages, PageId::new(1, 8)), 0xa1);
        assert_eq!(marker(&pages, PageId::new(1, 17)), 0xd0);
        assert_eq!(marker(&pages, PageId::new(1, 31)), 0xa3);
        assert_eq!(pages.page_count(), 32);
    }
    // The full alone reads its own pages.
    let pages = chain(&[full]).into_pages(None).unwrap().0;
    assert_eq!(marker(&pages, PageId::new(1, 17)), 0xa2);
}

#[test]
fn a_differential_of_another_full_backup_is_refused_by_name() {
    let e =
        chain(&[("full.bak", chain_full()), ("other.bak", chain_diff((24, 60, 1)))]).into_pages(None).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::MissingFile);
    assert!(
        e.to_string().starts_with(
            "other.bak: position 1 is a differential backup: it holds only the extents changed since its full backup (checkpoint LSN 24000000006000001"
        ),
        "{e}"
    );
    let e = chain(&[("diff.bak", chain_diff((24, 68, 99)))]).into_pages(None).err().unwrap();
    assert!(e.to_string().contains("which was not given; give that full backup too"), "{e}");
    let e = chain(&[("log.trn", chain_log((24, 68, 99), (24, 140, 1)))]).into_pages(None).err().unwrap();
    assert!(
        e.to_string().starts_with("log.trn: position 1 is a transaction log backup: no full database backup"),
        "{e}"
    );
}

#[test]
fn the_plan_lists_logs_in_lsn_order_with_their_gaps() {
    let plan = chain(&[
        ("late.trn", chain_log((24, 150, 1), (24, 160, 1))),
        ("old.trn", chain_log((24, 60, 1), (24, 100, 1))),
        ("full.bak", chain_full()),
        ("first.trn", chain_log((24, 68, 99), (24, 140, 1))),
    ])
    .plan(None)
    .unwrap();
    let names = |sets: &[chain::PlannedSet]| sets.iter().map(|s| s.files[0].display().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&plan.logs), ["first.trn", "late.trn"]);
    let gap = plan.log_gaps.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(gap, [("24000000014000001".to_string(), "24000000015000001".to_string())]);
    assert_eq!(plan.skipped.len(), 1);
    assert!(plan.skipped[0].1.contains("before the restore point"), "{:?}", plan.skipped);
    assert!(plan.notices().iter().any(|n| n.starts_with("log backup late.trn (position 1): not applied")));
}

/// Stripe 1 of 2 holds the map extent and 1:16; stripe 2 (not given) holds 1:8 and 1:24. Read
/// for salvage, the pages of stripe 1 are served, those of stripe 2 are missing and named.
#[test]
fn a_striped_backup_with_a_stripe_missing_is_read_for_salvage_only() {
    let stripe1 = stripe_of(1, 1, 2, &[map_extent(&[0, 1, 2, 3]), extent(1, 16, 0xa2)]);
    let e = chain(&[("a.bak", stripe1.clone())]).into_pages(None).err().unwrap();
    assert!(e.to_string().contains("striped over 2 files and stripe 2 is missing"), "{e}");
    let (pages, _) = chain(&[("a.bak", stripe1)]).into_pages_salvaging(None).unwrap();
    assert_eq!(pages.missing_extents(), [PageId::new(1, 8), PageId::new(1, 24)]);
    assert_eq!(marker(&pages, PageId::new(1, 17)), 0xa2);
    let mut buf = vec![0u8; PAGE_SIZE];
    let e = pages.read_raw(PageId::new(1, 9), &mut buf).unwrap_err();
    assert!(e.to_string().contains("page 1:9 is not in the backup"), "{e}");
    assert!(
        pages.notes().iter().any(|n| n.starts_with(
            "a.bak: stripe(s) 2 of 2 not given: 2 extent(s) the allocation map lists are not in the stripes given (first: 1:8)"
        )),
        "{:?}",
        pages.notes()
    );
}

/// Sets appended in one file form a chain too: by default the full (position 1) with its
/// differential (2) and the log after it (3); `--position 1` reads the full alone.
#[test]
fn appended_sets_of_one_file_are_planned_like_files() {
    let mut b = Builder::with_set(512, 1, scin(b'D', "Shop", FULL_LSNS, 0x200));
    b.data(&full_extents());
    b.end_set();
    b.start_set(2, scin(b'I', "Shop", DIFF_LSNS, 0x200));
    b.data(&diff_extents());
    b.end_set();
    b.start_set(3, scin(b'L', "Shop", [(24, 117, 34), (24, 140, 1), (24, 68, 99), (24, 68, 99)], 0x200));
    let file = [("test.bak", b.finish())];
    let plan = chain(&file).plan(None).unwrap();
    assert_eq!(plan.full.set.position, 1);
    assert_eq!(plan.differential.as_ref().map(|d| d.set.position), Some(2));
    assert_eq!(plan.logs.iter().map(|l| l.set.position).collect::<Vec<_>>(), [3]);
    assert!(plan.skipped.is_empty() && plan.log_gaps.is_empty());
    let (pages, _) = chain(&file).into_pages(None).unwrap();
    assert_eq!(marker(&pages, PageId::new(1, 17)), 0xd0);
    assert_eq!(marker(&pages, PageId::new(1, 9)), 0xa1);
    let plan = chain(&file).plan(Some(1)).unwrap();
    assert!(plan.differential.is_none());
    let diff = plan.skipped.iter().find(|(s, _)| s.set.position == 2).unwrap();
    assert!(diff.1.contains("--position asked for alone"), "{}", diff.1);
}

#[test]
fn runs_of_pages_read_as_pages_read_alone() {
    let pages = open(sample(512)).unwrap();
    let mut run = vec![0u8; 16 * PAGE_SIZE];
    // Pages 1:0-1:7 lie one after another in the re-sent extent; 1:8-1:15 elsewhere.
    for (first, count) in [(0, 8), (2, 5), (0, 16), (6, 4)] {
        pages.read_raw_run(PageId::new(1, first), count, &mut run).unwrap();
        for (page, bytes) in (first..first + count).zip(run.chunks_exact(PAGE_SIZE)) {
            let mut alone = vec![0u8; PAGE_SIZE];
            pages.read_raw(PageId::new(1, page), &mut alone).unwrap();
            assert_eq!(bytes, alone, "page 1:{page} of the run from 1:{first}");
        }
    }
    assert_eq!(run[100], 0xb0);
    assert_eq!(run[PAGE_SIZE * 15 + 100], 0xa8);
    // A run over a page the backup lacks names that page.
    let e = pages.read_raw_run(PageId::new(1, 12), 6, &mut run).unwrap_err();
    assert!(e.to_string().contains("page 1:16 is not in the backup"), "{e}");
}
