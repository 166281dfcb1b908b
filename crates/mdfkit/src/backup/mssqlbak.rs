//! Compressed SQL Server backups (`BACKUP ... WITH COMPRESSION`, files starting with `MSSQLBAK`):
//! the container that holds the MTF stream of an uncompressed backup in compressed pieces.
//!
//! [`CompressedBytes`] serves the decompressed MTF stream as a [`ByteSource`] without inflating it:
//! opening reads only the record headers and builds an index from decompressed ("logical")
//! offsets to records; reading a range decompresses the records it touches, keeping the last few
//! in a small cache. [`super::BackupPages`] then reads the MTF stream exactly as it reads an
//! uncompressed file, so page locations and MTF-level error offsets of a compressed backup are
//! offsets in the decompressed stream; errors of the container itself name file offsets.
//!
//! Layout (little endian):
//!
//! ```text
//!  0     "MSSQLBAK"
//!  8     u32 2        (both corpus files; other values are refused)
//!  12    u32 3        (both corpus files; not read)
//!  16..480            not read (runs of 0xff x 8 and zeros)
//!  480   records, one after another:
//!
//!  0x21  compressed piece of the MTF stream, a 28-byte header and the payload:
//!        +0  u8   0x21
//!        +1  u8   decompressed size / 512 (0x80 = 64 KB: one extent of page data)
//!        +2  u16  payload size (bytes after the header)
//!        +4  20   not read (they look like leftover memory: pointer-like values, 0xff runs)
//!        +24 u32  checksum (not CRC-32 or CRC-32C of the payload or of the data; not checked)
//!        +28      payload: [MS-XCA] LZ77+Huffman ([`crate::xpress`]), exactly the size at +1
//!  0x24  end of a run of pieces: 4 bytes (+2: u16, meaning unknown); the next record starts
//!        at the next multiple of 512 of the file
//!  0x2c  index of the run that ends a backup set: +28 u32 n, then n pairs of u64 (offset in the
//!        decompressed stream counted from the SSET, file offset of the 0x21 record that starts
//!        there) from +40; the sector ends with a copy of bytes +24..+40; the next record starts at
//!        the next multiple of 512 after it. Not needed: the pieces are read in order.
//!  SFMB  at a multiple of 512: a soft filemark block stored as is (its MTF header's first
//!        stream offset gives the size, 512), part of the MTF stream like a piece
//!  0x00  at a multiple of 512: a zero sector (padding), skipped; must be zero to its end
//! ```
//!
//! The decompressed pieces and stored filemarks, in file order, are the MTF stream of an
//! uncompressed backup: TAPE (1024 bytes), SFMB (sharepoint_config only), SSET, VOLB, MSCI, MSDA
//! up to its first page (7168 bytes together), then one 64 KB piece per extent, then the log and
//! end blocks in smaller pieces, SFMB, ESET.
//!
//! Sources: no specification documents this container. Everything above was worked out on the
//! two corpus files (`bak/dataplat-appveyor-lab__sharepoint_config.bak`, SQL Server 2014 (782),
//! two backup sets, and `gt/TutorialDB.bak`, SQL Server 2016 (852)): every 0x21 record chains to the next by its payload
//! size, every payload's first 256 bytes are a complete Huffman code length table, every payload
//! decompresses to exactly 512 x byte +1 bytes, and the pieces put together parse as MTF with
//! every logical address where the SSET says. The 0x2c pairs were checked against the record
//! offsets of both files. `rsleedbx/mssqlbak-tests` `docs/spec/01_CONTAINER.md` §1.2 describes
//! the same magic and the payload size in bits 16..31 of the first u32, with a 28-byte header
//! chain for 2014+; it also describes an 8-byte header for SQL Server 2008 R2/2012 (`MSSQLBAK`
//! version word 1), which no corpus file has: such files are refused as unsupported.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::sniff::{sniff, FileFormat};
use crate::xpress::Decompressor;

use super::mtf::{error_at, read_exact, tag_name};

/// The only container version seen.
const VERSION: u32 = 2;
/// Where the first record starts.
const FIRST_RECORD: u64 = 480;
/// Records after an end-of-run marker, index or stored block start at multiples of this.
const SECTOR: u64 = 512;
/// Size of a compressed piece's header.
const PIECE_HEADER: usize = 28;
/// The piece's decompressed size is byte +1 times this.
const PIECE_UNIT: u32 = 512;
/// Size of the end-of-run marker.
const END_OF_RUN: u64 = 4;
/// Largest stored soft filemark accepted (the corpus has 512).
const MAX_STORED_BLOCK: u64 = 64 << 10;
/// Decompressed pieces kept (64 KB each at most 127.5 KB).
const CACHE_PIECES: usize = 16;
/// Largest index (0x2c) entry count accepted; the corpus has 2.
const MAX_INDEX_ENTRIES: u64 = 1 << 20;

const TYPE_PIECE: u8 = 0x21;
const TYPE_END_OF_RUN: u8 = 0x24;
const TYPE_INDEX: u8 = 0x2c;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// LZ77+Huffman payload of `stored` bytes.
    Compressed,
    /// The bytes as they are (a soft filemark block).
    Stored,
}

/// One piece of the MTF stream.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Offset in the decompressed stream.
    logical: u64,
    /// Length in the decompressed stream.
    len: u32,
    /// File offset of the record (its header, for compressed pieces).
    record: u64,
    /// File offset of the payload.
    payload: u64,
    /// Payload size in the file.
    stored: u32,
    kind: Kind,
}

struct Cache {
    decompressor: Decompressor,
    /// Most recently used last.
    pieces: Vec<(usize, Arc<Vec<u8>>)>,
}

/// The decompressed MTF stream of a compressed backup, served piece by piece.
pub struct CompressedBytes {
    inner: Box<dyn ByteSource>,
    path: PathBuf,
    pieces: Vec<Piece>,
    len: u64,
    cache: Mutex<Cache>,
}

impl CompressedBytes {
    /// Reads the container's record headers (not the payloads); `path` names the file in errors.
    pub fn open(inner: Box<dyn ByteSource>, path: &Path) -> Result<Self> {
        let src = inner.as_ref();
        let mut head = [0u8; 16];
        read_exact(src, path, 0, &mut head, "the MSSQLBAK header")?;
        if sniff(&head) != FileFormat::CompressedBackup {
            return Err(error_at(path, ErrorKind::NotADatabase, 0, "no MSSQLBAK magic"));
        }
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if version != VERSION {
            return Err(error_at(
                path,
                ErrorKind::Unsupported,
                8,
                format!(
                    "compressed backup (MSSQLBAK) container version {version}: only version {VERSION} (as SQL Server 2014 and 2016 write it) is read"
                ),
            ));
        }
        let pieces = scan(src, path)?;
        let len = pieces.last().map_or(0, |p| p.logical + u64::from(p.len));
        if pieces.first().is_none_or(|p| p.kind != Kind::Compressed) {
            return Err(error_at(
                path,
                ErrorKind::Corrupt,
                FIRST_RECORD,
                "compressed backup (MSSQLBAK) holds no compressed records: truncated backup",
            ));
        }
        Ok(CompressedBytes {
            inner,
            path: path.to_path_buf(),
            pieces,
            len,
            cache: Mutex::new(Cache { decompressor: Decompressor::new(), pieces: Vec::new() }),
        })
    }

    /// Number of pieces (compressed records and stored blocks) of the stream.
    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// File offset of the record holding decompressed byte `offset`.
    pub fn record_of(&self, offset: u64) -> Option<u64> {
        self.find(offset).map(|i| self.pieces[i].record)
    }

    fn find(&self, offset: u64) -> Option<usize> {
        let i = self.pieces.partition_point(|p| p.logical <= offset).checked_sub(1)?;
        let p = &self.pieces[i];
        (offset < p.logical + u64::from(p.len)).then_some(i)
    }

    /// The decompressed bytes of compressed piece `index`.
    fn piece(&self, index: usize) -> Result<Arc<Vec<u8>>> {
        let mut cache = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(at) = cache.pieces.iter().position(|(i, _)| *i == index) {
            let entry = cache.pieces.remove(at);
            let data = entry.1.clone();
            cache.pieces.push(entry);
            return Ok(data);
        }
        let p = self.pieces[index];
        let mut input = vec![0u8; p.stored as usize];
        read_exact(self.inner.as_ref(), &self.path, p.payload, &mut input, "a compressed record's payload")?;
        let mut out = Vec::new();
        cache.decompressor.decompress(&input, &mut out, p.len as usize).map_err(|e| {
            error_at(
                &self.path,
                ErrorKind::Corrupt,
                p.record,
                format!(
                    "compressed record ({} bytes, {} decompressed) does not decompress: {}",
                    p.stored,
                    p.len,
                    e.message()
                ),
            )
        })?;
        let data = Arc::new(out);
        if cache.pieces.len() >= CACHE_PIECES {
            cache.pieces.remove(0);
        }
        cache.pieces.push((index, data.clone()));
        Ok(data)
    }

    /// Fills `buf` from decompressed offset `offset`, naming file offsets in errors.
    fn read(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let index = self.find(at).ok_or_else(|| {
                Error::corrupt(format!("the decompressed stream is {} bytes, byte {at} of it was asked for", self.len))
                    .in_file(&self.path)
            })?;
            let p = self.pieces[index];
            let within = (at - p.logical) as usize;
            let n = (p.len as usize - within).min(buf.len() - done);
            let dst = &mut buf[done..done + n];
            match p.kind {
                Kind::Stored => {
                    read_exact(self.inner.as_ref(), &self.path, p.payload + within as u64, dst, "a stored block")?
                }
                Kind::Compressed => dst.copy_from_slice(&self.piece(index)?[within..within + n]),
            }
            done += n;
        }
        Ok(())
    }
}

impl ByteSource for CompressedBytes {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.read(buf, offset).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

/// Recovers an [`Error`] that [`CompressedBytes`] passed through [`ByteSource::read_exact_at`].
pub fn unwrap_io(e: std::io::Error) -> std::result::Result<Error, std::io::Error> {
    if !e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        return Err(e);
    }
    match e.into_inner().map(|inner| inner.downcast::<Error>()) {
        Some(Ok(err)) => Ok(*err),
        _ => Err(std::io::Error::other("compressed backup read failed")),
    }
}

fn align(offset: u64) -> u64 {
    offset.div_ceil(SECTOR) * SECTOR
}

/// Walks the records from [`FIRST_RECORD`] to the end of the file.
fn scan(src: &dyn ByteSource, path: &Path) -> Result<Vec<Piece>> {
    let file_len = src.len();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut logical = 0u64;
    let mut pos = FIRST_RECORD;
    // Every iteration moves `pos` forward by at least one byte.
    while pos < file_len {
        let mut kind = [0u8; 1];
        read_exact(src, path, pos, &mut kind, "a record type")?;
        let aligned = pos.is_multiple_of(SECTOR);
        let next = match kind[0] {
            TYPE_PIECE => {
                let mut h = [0u8; PIECE_HEADER];
                read_exact(src, path, pos, &mut h, "a compressed record header")?;
                let len = u32::from(h[1]) * PIECE_UNIT;
                let stored = u32::from(u16::from_le_bytes([h[2], h[3]]));
                if len == 0 || stored == 0 {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos,
                        format!("compressed record header gives {stored} bytes decompressing to {len}: expected both non-zero"),
                    ));
                }
                let payload = pos + PIECE_HEADER as u64;
                let end = payload + u64::from(stored);
                if end > file_len {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos,
                        format!(
                            "compressed record of {stored} bytes runs past the end of the file (byte {file_len}): truncated backup"
                        ),
                    ));
                }
                pieces.push(Piece { logical, len, record: pos, payload, stored, kind: Kind::Compressed });
                logical += u64::from(len);
                end
            }
            TYPE_END_OF_RUN => align(pos + END_OF_RUN),
            TYPE_INDEX => {
                let mut h = [0u8; 40];
                read_exact(src, path, pos, &mut h, "an index record")?;
                let n = u64::from(u32::from_le_bytes([h[28], h[29], h[30], h[31]]));
                if n > MAX_INDEX_ENTRIES {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos,
                        format!("index record claims {n} entries, more than the {MAX_INDEX_ENTRIES} accepted"),
                    ));
                }
                // The entries, then a 16-byte copy of +24..+40 closing the sector.
                let end = align(pos + 40 + 16 * n + 16);
                if end > file_len {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos,
                        format!("index record of {n} entries runs past the end of the file (byte {file_len}): truncated backup"),
                    ));
                }
                end
            }
            b'S' if aligned => {
                let mut h = [0u8; 10];
                read_exact(src, path, pos, &mut h, "a stored block header")?;
                if &h[..4] != b"SFMB" {
                    return Err(unknown(path, pos, &h));
                }
                let size = u64::from(u16::from_le_bytes([h[8], h[9]]));
                if size == 0 || size % SECTOR != 0 || size > MAX_STORED_BLOCK || pos + size > file_len {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos,
                        format!(
                            "stored SFMB block gives size {size}: expected a multiple of {SECTOR} up to {MAX_STORED_BLOCK} inside the file (ends at byte {file_len})"
                        ),
                    ));
                }
                pieces.push(Piece {
                    logical,
                    len: size as u32,
                    record: pos,
                    payload: pos,
                    stored: size as u32,
                    kind: Kind::Stored,
                });
                logical += size;
                pos + size
            }
            0 if aligned => {
                let end = (pos + SECTOR).min(file_len);
                let mut sector = vec![0u8; (end - pos) as usize];
                read_exact(src, path, pos, &mut sector, "a padding sector")?;
                if let Some(k) = sector.iter().position(|&b| b != 0) {
                    return Err(error_at(
                        path,
                        ErrorKind::Corrupt,
                        pos + k as u64,
                        format!("byte {:#04x} inside a sector that starts with 0 (padding): expected zeros", sector[k]),
                    ));
                }
                end
            }
            _ => {
                let mut h = [0u8; 4];
                let n = (file_len - pos).min(4) as usize;
                read_exact(src, path, pos, &mut h[..n], "a record type")?;
                return Err(unknown(path, pos, &h));
            }
        };
        pos = next;
    }
    Ok(pieces)
}

fn unknown(path: &Path, pos: u64, h: &[u8]) -> Error {
    error_at(
        path,
        ErrorKind::Corrupt,
        pos,
        format!(
            "unknown compressed backup record {:#04x} (bytes {}): expected 0x21 (compressed), 0x24 (end of run), 0x2c (index), a stored SFMB block or zero padding",
            h[0],
            tag_name(&[h[0], h[1], h[2], h[3]])
        ),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    //! A test-only writer: the MTF stream cut into pieces of at most `piece` bytes, each stored
    //! with a fixed 9-bit code (literals only, so no LZ77 search is needed), soft filemarks stored
    //! as they are, as SQL Server lays them out.

    use super::*;

    /// LZ77+Huffman with every symbol 9 bits long: the code of a symbol is its value.
    pub fn literals_only(data: &[u8]) -> Vec<u8> {
        let mut out = vec![0x99u8; 256];
        let (mut acc, mut bits) = (0u32, 0u32);
        let mut put = |out: &mut Vec<u8>, v: u32| {
            acc = (acc << 9) | v;
            bits += 9;
            while bits >= 16 {
                let w = (acc >> (bits - 16)) as u16;
                out.extend(w.to_le_bytes());
                bits -= 16;
                acc &= (1 << bits) - 1;
            }
        };
        for &b in data {
            put(&mut out, u32::from(b));
        }
        put(&mut out, 256);
        if bits > 0 {
            let w = (acc << (16 - bits)) as u16;
            out.extend(w.to_le_bytes());
        }
        out.extend([0u8; 4]);
        out
    }

    /// Wraps an MTF stream (a multiple of 512 bytes) into the MSSQLBAK container.
    pub fn wrap(mtf: &[u8], piece: usize) -> Vec<u8> {
        assert_eq!(mtf.len() % 512, 0);
        assert!(piece.is_multiple_of(512) && piece <= 0x40 * 512);
        let mut out = b"MSSQLBAK".to_vec();
        out.extend(2u32.to_le_bytes());
        out.extend(3u32.to_le_bytes());
        out.resize(FIRST_RECORD as usize, 0);
        let mut at = 0;
        let mut in_run = false;
        while at < mtf.len() {
            if mtf[at..].starts_with(b"SFMB") {
                if in_run {
                    out.extend([TYPE_END_OF_RUN, 0, 0x8a, 0]);
                    in_run = false;
                }
                out.resize(align(out.len() as u64) as usize, 0);
                out.extend(&mtf[at..at + 512]);
                at += 512;
                continue;
            }
            let mut end = at + 512;
            while end < mtf.len() && end - at < piece && !mtf[end..].starts_with(b"SFMB") {
                end += 512;
            }
            let payload = literals_only(&mtf[at..end]);
            let mut h = vec![TYPE_PIECE, ((end - at) / 512) as u8];
            h.extend((payload.len() as u16).to_le_bytes());
            h.resize(PIECE_HEADER, 0xee);
            out.extend(h);
            out.extend(payload);
            in_run = true;
            at = end;
        }
        if in_run {
            out.extend([TYPE_END_OF_RUN, 0, 0xfb, 1]);
        }
        out.resize(align(out.len() as u64) as usize, 0);
        out
    }

    fn open(bytes: Vec<u8>) -> Result<CompressedBytes> {
        CompressedBytes::open(Box::new(bytes), Path::new("c.bak"))
    }

    fn mtf_like(len: usize) -> Vec<u8> {
        let mut v: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        v[..4].copy_from_slice(b"TAPE");
        v[4096..4100].copy_from_slice(b"SFMB");
        v[4104..4106].copy_from_slice(&512u16.to_le_bytes());
        v
    }

    #[test]
    fn literal_encoder_round_trips() {
        let data: Vec<u8> = (0..5000).map(|i| (i * 13 % 256) as u8).collect();
        let mut out = Vec::new();
        crate::xpress::decompress_huffman(&literals_only(&data), &mut out, data.len()).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn serves_the_stream_across_pieces_and_stored_blocks() {
        let mtf = mtf_like(40 * 512);
        let c = open(wrap(&mtf, 8 * 512)).unwrap();
        assert_eq!(c.len(), mtf.len() as u64);
        // 8 sectors, the SFMB, 8 + 8 + 8 + 7 sectors.
        assert_eq!(c.piece_count(), 6);
        for (offset, len) in [(0, 1), (4000, 700), (0, mtf.len()), (10_000, 9000), (mtf.len() - 1, 1)] {
            let mut buf = vec![0u8; len];
            c.read_exact_at(&mut buf, offset as u64).unwrap();
            assert_eq!(buf, &mtf[offset..offset + len], "{offset}+{len}");
        }
        let mut buf = [0u8; 2];
        let e = c.read_exact_at(&mut buf, mtf.len() as u64 - 1).unwrap_err();
        let e = unwrap_io(e).unwrap();
        assert!(e.to_string().contains("c.bak"), "{e}");
        // More pieces than the cache holds, read twice.
        let big = mtf_like(200 * 512);
        let c = open(wrap(&big, 512)).unwrap();
        for _ in 0..2 {
            let mut all = vec![0u8; big.len()];
            c.read_exact_at(&mut all, 0).unwrap();
            assert_eq!(all, big);
        }
    }

    fn expect(bytes: Vec<u8>, kind: ErrorKind, needles: &[&str]) {
        let e = match open(bytes) {
            Ok(_) => panic!("expected an error containing {needles:?}"),
            Err(e) => e,
        };
        let text = e.to_string();
        assert_eq!(e.kind(), kind, "{text}");
        assert!(text.starts_with("c.bak: "), "{text}");
        for n in needles {
            assert!(text.contains(n), "{text:?} lacks {n:?}");
        }
    }

    #[test]
    fn container_damage_names_the_file_offset() {
        let good = wrap(&mtf_like(40 * 512), 8 * 512);
        let mut b = good.clone();
        b[8] = 1;
        expect(b, ErrorKind::Unsupported, &["version 1", "at byte 8"]);
        // Cut inside the first record's payload.
        expect(good[..600].to_vec(), ErrorKind::Corrupt, &["at byte 480", "truncated backup"]);
        expect(good[..10].to_vec(), ErrorKind::Corrupt, &["truncated backup"]);
        expect(good[..FIRST_RECORD as usize].to_vec(), ErrorKind::Corrupt, &["no compressed records"]);
        let mut b = good.clone();
        b[FIRST_RECORD as usize] = 0x77;
        expect(b, ErrorKind::Corrupt, &["at byte 480", "unknown compressed backup record 0x77"]);
        let mut b = good.clone();
        b[FIRST_RECORD as usize + 1] = 0;
        expect(b, ErrorKind::Corrupt, &["at byte 480", "expected both non-zero"]);
        // A damaged payload is found when it is read, with the record's offset.
        let mut b = good.clone();
        b[FIRST_RECORD as usize + 28] = 0xff;
        let c = open(b).unwrap();
        let mut buf = [0u8; 16];
        let e = unwrap_io(c.read_exact_at(&mut buf, 0).unwrap_err()).unwrap();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.to_string().starts_with("c.bak: at byte 480: compressed record"), "{e}");
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let good = wrap(&mtf_like(40 * 512), 8 * 512);
        for len in (0..good.len()).step_by(97) {
            if let Ok(c) = open(good[..len].to_vec()) {
                let mut all = vec![0u8; c.len() as usize];
                let _ = c.read_exact_at(&mut all, 0);
            }
        }
        let mut seed = 0x9e37_79b9_u32;
        for _ in 0..500 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let mut b = good.clone();
            let at = FIRST_RECORD as usize + (seed as usize) % (b.len() - FIRST_RECORD as usize);
            b[at] ^= (seed >> 24) as u8 | 1;
            if let Ok(c) = open(b) {
                let mut all = vec![0u8; c.len() as usize];
                let _ = c.read_exact_at(&mut all, 0);
            }
        }
    }
}
