//! The Microsoft Tape Format container: descriptor blocks (DBLKs) and the streams that follow them.
//!
//! A backup file is a chain of descriptor blocks. Each starts with the 52-byte common block header;
//! at `first_stream` bytes from the block's start come its streams, each a 22-byte stream header
//! and `length` bytes of data, the next header at the next 4-byte boundary. A block's stream list
//! ends with a pad stream (`SPAD`) whose data runs up to where the next block starts. A soft
//! filemark block (`SFMB`) has no streams and fills `first_stream` bytes (its physical block:
//! 512 or 4096 bytes in the corpus).
//!
//! Common block header (little endian):
//!
//! | offset | size | field                  | notes                                                 |
//! |-------:|-----:|------------------------|-------------------------------------------------------|
//! | 0      | 4    | block type             | ASCII: `TAPE`, `SSET`, `VOLB`, `ESET`, `SFMB`, `MSDA`, ... |
//! | 4      | 4    | block attributes       |                                                       |
//! | 8      | 2    | offset to first stream | from the block's start                                |
//! | 10     | 1    | OS id                  | 14 (Windows NT) in every corpus file                  |
//! | 11     | 1    | OS version             |                                                       |
//! | 12     | 8    | displayable size       |                                                       |
//! | 20     | 8    | format logical address | position of the block, in logical blocks, from the SSET |
//! | 28     | 8    | reserved               |                                                       |
//! | 36     | 4    | control block id       |                                                       |
//! | 40     | 4    | reserved               |                                                       |
//! | 44     | 4    | OS-specific data       | size (2) + offset (2)                                 |
//! | 48     | 1    | string type            | 2 = UTF-16                                            |
//! | 49     | 1    | reserved               |                                                       |
//! | 50     | 2    | header checksum        | XOR of the 25 little-endian u16 words before it       |
//!
//! Stream header (22 bytes): stream id (4, ASCII), file-system attributes (2), media-format
//! attributes (2: 0x2 variable-length, 0x4 last piece of variable-length data), length (8),
//! encryption algorithm (2), compression algorithm (2), checksum (2: XOR of the 10 u16 words
//! before it).
//!
//! The TAPE block carries the logical block size at offset 84 (u16; 1024 in every corpus file).
//!
//! Sources: Microsoft Tape Format Specification 1.00a (`MTF_DB_HDR`, `MTF_STREAM_HDR`, `MTF_TAPE`
//! layouts, as reproduced in public headers derived from it such as WFC's `mtf.h`, and in
//! `rsleedbx/mssqlbak-tests` `docs/spec/01_CONTAINER.md`). The checksums are over 16-bit words
//! (the old header's comment says "double word"; the corpus says 16-bit). Checked on every
//! uncompressed corpus backup (6 in `bak/`, 16 in `chains/`): all headers' checksums match, every
//! block's stream list ends in `SPAD` exactly where the next block starts, and every block after
//! the SSET sits at SSET offset + logical address x 1024.

use std::path::Path;

use crate::bytes::{read_u16, read_u32, read_u64};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ByteSource;
use crate::sniff::MTF_MAGIC;

/// Size of the common block header.
pub const BLOCK_HEADER_SIZE: usize = 52;
/// Size of a stream header.
pub const STREAM_HEADER_SIZE: usize = 22;
/// Offset of the logical block size in the TAPE block.
const TAPE_LOGICAL_BLOCK_SIZE: usize = 84;
/// Offset of the media family id in the TAPE block.
const TAPE_MEDIA_FAMILY_ID: usize = 52;
/// Streams one block may have before it is taken as corrupt (the corpus has at most 5).
const MAX_STREAMS_PER_BLOCK: usize = 4096;

/// Stream media-format attribute: the stream's data is variable length (more pieces follow).
pub const STREAM_VARIABLE: u16 = 0x2;
/// Stream media-format attribute: last piece of variable-length data.
pub const STREAM_VAR_END: u16 = 0x4;

/// Block types this reader knows: the MTF 1.00a ones and those SQL Server writes.
const KNOWN_BLOCKS: &[&[u8; 4]] = &[
    // MTF 1.00a (the first, TAPE, is what a backup file starts with)
    MTF_MAGIC, b"SSET", b"VOLB", b"DIRB", b"FILE", b"CFIL", b"ESPB", b"ESET", b"EOTM", b"SFMB", b"SSES", b"ESES",
    b"EOBJ", b"IMAG", // SQL Server: configuration (MSCI), data (MSDA), log (MSTL), end of log/config (MSLS)
    b"MSCI", b"MSDA", b"MSTL", b"MSLS",
];

/// XOR of the little-endian u16 words of `b` (an even number of bytes).
pub fn xor16(b: &[u8]) -> u16 {
    b.chunks_exact(2).fold(0, |acc, w| acc ^ u16::from_le_bytes([w[0], w[1]]))
}

/// Renders a 4-byte tag for messages: ASCII as is, anything else in hex.
pub fn tag_name(tag: &[u8; 4]) -> String {
    if tag.iter().all(|c| c.is_ascii_graphic()) {
        format!("'{}'", String::from_utf8_lossy(tag))
    } else {
        format!("0x{}", tag.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

/// The common block header of a descriptor block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockHeader {
    /// Bytes 0-3: the block type, ASCII (`TAPE`, `SSET`, `MSDA`, ...).
    pub kind: [u8; 4],
    /// Bytes 4-7: MTF block attributes.
    pub attributes: u32,
    /// Bytes 8-9: offset of the first stream header from the block's start.
    pub first_stream: u16,
    /// Byte 10: 14 (Windows NT) in every corpus file.
    pub os_id: u8,
    /// Byte 11.
    pub os_version: u8,
    /// Bytes 12-19.
    pub displayable_size: u64,
    /// Bytes 20-27: where the block sits, in logical blocks from the SSET.
    pub logical_address: u64,
    /// Bytes 36-39.
    pub control_block_id: u32,
    /// Byte 48: 2 for UTF-16 strings.
    pub string_type: u8,
}

impl BlockHeader {
    /// Decodes and checksums a block header; `Err` says what is wrong.
    pub fn parse(b: &[u8]) -> std::result::Result<Self, String> {
        if b.len() < BLOCK_HEADER_SIZE {
            return Err(format!("{} bytes left, a descriptor block header needs {BLOCK_HEADER_SIZE}", b.len()));
        }
        let stored = read_u16(b, 50).unwrap_or(0);
        let computed = xor16(&b[..50]);
        if stored != computed {
            return Err(format!(
                "no valid descriptor block header: checksum {stored:#06x} stored, {computed:#06x} computed (block type bytes {})",
                tag_name(&[b[0], b[1], b[2], b[3]])
            ));
        }
        Ok(BlockHeader {
            kind: [b[0], b[1], b[2], b[3]],
            attributes: read_u32(b, 4).unwrap_or(0),
            first_stream: read_u16(b, 8).unwrap_or(0),
            os_id: b[10],
            os_version: b[11],
            displayable_size: read_u64(b, 12).unwrap_or(0),
            logical_address: read_u64(b, 20).unwrap_or(0),
            control_block_id: read_u32(b, 36).unwrap_or(0),
            string_type: b[48],
        })
    }

    /// Whether the block is of type `kind` (`b"SSET"`).
    pub fn is(&self, kind: &[u8; 4]) -> bool {
        &self.kind == kind
    }
}

/// A stream header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHeader {
    /// Bytes 0-3: the stream id, ASCII (`MQDA`, `SPAD`, ...).
    pub id: [u8; 4],
    /// Bytes 4-5: file-system attributes.
    pub fs_attributes: u16,
    /// Bytes 6-7: media-format attributes ([`STREAM_VARIABLE`], [`STREAM_VAR_END`]).
    pub media_attributes: u16,
    /// Bytes 8-15: length of the stream's data.
    pub length: u64,
    /// Bytes 16-17: encryption algorithm, 0 for none.
    pub encryption: u16,
    /// Bytes 18-19: compression algorithm, 0 for none.
    pub compression: u16,
}

impl StreamHeader {
    /// Decodes and checksums a stream header; `Err` says what is wrong.
    pub fn parse(b: &[u8]) -> std::result::Result<Self, String> {
        if b.len() < STREAM_HEADER_SIZE {
            return Err(format!("{} bytes left, a stream header needs {STREAM_HEADER_SIZE}", b.len()));
        }
        let stored = read_u16(b, 20).unwrap_or(0);
        let computed = xor16(&b[..20]);
        if stored != computed {
            return Err(format!(
                "no valid stream header: checksum {stored:#06x} stored, {computed:#06x} computed (stream id bytes {})",
                tag_name(&[b[0], b[1], b[2], b[3]])
            ));
        }
        Ok(StreamHeader {
            id: [b[0], b[1], b[2], b[3]],
            fs_attributes: read_u16(b, 4).unwrap_or(0),
            media_attributes: read_u16(b, 6).unwrap_or(0),
            length: read_u64(b, 8).unwrap_or(0),
            encryption: read_u16(b, 16).unwrap_or(0),
            compression: read_u16(b, 18).unwrap_or(0),
        })
    }

    /// Whether the stream has id `id` (`b"MQDA"`).
    pub fn is(&self, id: &[u8; 4]) -> bool {
        &self.id == id
    }
}

/// A stream: its header and where its data is in the backup file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// The stream's header.
    pub header: StreamHeader,
    /// Byte offset of the stream header.
    pub offset: u64,
    /// Byte offset of the stream's data (`offset + 22`).
    pub data: u64,
}

/// A descriptor block and its streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Byte offset of the block in the file.
    pub offset: u64,
    /// The common block header.
    pub header: BlockHeader,
    /// The block's streams, pad stream last.
    pub streams: Vec<Stream>,
    /// Byte offset just past the block (where the next one starts).
    pub end: u64,
}

/// What the TAPE block says about the media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapeInfo {
    /// TAPE +84: the logical block size (1024 in every corpus file); block addresses count in it.
    pub logical_block_size: u16,
    /// TAPE +52: the media family id, shared by the stripes of one media set.
    pub media_family_id: u32,
}

/// Builds an error at a byte offset of the backup file.
pub fn error_at(path: &Path, kind: ErrorKind, offset: u64, message: impl AsRef<str>) -> Error {
    Error::new(kind, format!("at byte {offset}: {}", message.as_ref())).in_file(path)
}

/// Reads exactly `buf.len()` bytes at `offset`, or says the file is truncated there.
pub fn read_exact(src: &dyn ByteSource, path: &Path, offset: u64, buf: &mut [u8], what: &str) -> Result<()> {
    let len = src.len();
    let end = offset.saturating_add(buf.len() as u64);
    if end > len {
        return Err(error_at(
            path,
            ErrorKind::Corrupt,
            offset,
            format!("expected {what} ({} bytes), but the file ends at byte {len}: truncated backup", buf.len()),
        ));
    }
    src.read_exact_at(buf, offset).map_err(|e| match super::mssqlbak::unwrap_io(e) {
        // A compressed backup's own error, naming the file offset of the damaged record.
        Ok(inner) => inner,
        Err(e) => Error::io(path, &format!("cannot read {what} at byte {offset}"), e),
    })
}

/// Reads the TAPE block at offset 0 (the caller has checked the magic).
pub fn read_tape(src: &dyn ByteSource, path: &Path) -> Result<TapeInfo> {
    let mut b = [0u8; 96];
    read_exact(src, path, 0, &mut b, "the TAPE block")?;
    BlockHeader::parse(&b).map_err(|m| error_at(path, ErrorKind::Corrupt, 0, m))?;
    let logical_block_size = read_u16(&b, TAPE_LOGICAL_BLOCK_SIZE).unwrap_or(0);
    if !logical_block_size.is_power_of_two() || logical_block_size < 512 {
        return Err(error_at(
            path,
            ErrorKind::Corrupt,
            TAPE_LOGICAL_BLOCK_SIZE as u64,
            format!(
                "TAPE block gives logical block size {logical_block_size}, expected a power of two of at least 512"
            ),
        ));
    }
    Ok(TapeInfo { logical_block_size, media_family_id: read_u32(&b, TAPE_MEDIA_FAMILY_ID).unwrap_or(0) })
}

/// Walks the descriptor blocks of a backup file from offset 0.
pub struct Blocks<'a> {
    src: &'a dyn ByteSource,
    path: &'a Path,
    pos: u64,
    done: bool,
}

impl<'a> Blocks<'a> {
    /// Walks the blocks of `src` (named `path` in errors).
    pub fn new(src: &'a dyn ByteSource, path: &'a Path) -> Self {
        Blocks { src, path, pos: 0, done: false }
    }

    fn err(&self, offset: u64, message: impl AsRef<str>) -> Error {
        error_at(self.path, ErrorKind::Corrupt, offset, message)
    }

    fn block_at(&self, offset: u64) -> Result<Block> {
        let mut b = [0u8; BLOCK_HEADER_SIZE];
        read_exact(self.src, self.path, offset, &mut b, "a descriptor block header")?;
        let header = BlockHeader::parse(&b).map_err(|m| self.err(offset, m))?;
        if !KNOWN_BLOCKS.contains(&&header.kind) {
            return Err(error_at(
                self.path,
                ErrorKind::Unsupported,
                offset,
                format!(
                    "unknown descriptor block type {} (expected one of TAPE, SSET, VOLB, MSCI, MSDA, MSTL, MSLS, SFMB, ESET, ...)",
                    tag_name(&header.kind)
                ),
            ));
        }
        let first = u64::from(header.first_stream);
        if first < BLOCK_HEADER_SIZE as u64 {
            return Err(self.err(
                offset,
                format!(
                    "{} block says its first stream is at +{first}, inside its own {BLOCK_HEADER_SIZE}-byte header",
                    tag_name(&header.kind)
                ),
            ));
        }
        if header.is(b"SFMB") {
            // A soft filemark fills one physical block and has no streams.
            let end = offset + first;
            if end > self.src.len() {
                return Err(self.err(
                    offset,
                    format!(
                        "soft filemark block of {first} bytes runs past the end of the file (byte {}): truncated backup",
                        self.src.len()
                    ),
                ));
            }
            return Ok(Block { offset, header, streams: Vec::new(), end });
        }
        let mut streams = Vec::new();
        let mut pos = offset + first;
        loop {
            if streams.len() >= MAX_STREAMS_PER_BLOCK {
                return Err(self.err(
                    offset,
                    format!("{} block has more than {MAX_STREAMS_PER_BLOCK} streams", tag_name(&header.kind)),
                ));
            }
            let mut h = [0u8; STREAM_HEADER_SIZE];
            read_exact(self.src, self.path, pos, &mut h, "a stream header")?;
            let stream = match StreamHeader::parse(&h) {
                Ok(s) => s,
                Err(m) => {
                    // A block whose streams end without a pad stream is followed directly by
                    // the next block.
                    if !streams.is_empty() && self.is_block_at(pos) {
                        return Ok(Block { offset, header, streams, end: pos });
                    }
                    return Err(self.err(pos, format!("in the {} block at byte {offset}: {m}", tag_name(&header.kind))));
                }
            };
            let data = pos + STREAM_HEADER_SIZE as u64;
            let end = data.saturating_add(stream.length);
            if end > self.src.len() {
                return Err(self.err(
                    pos,
                    format!(
                        "stream {} claims {} bytes, but the file ends at byte {}: truncated backup",
                        tag_name(&stream.id),
                        stream.length,
                        self.src.len()
                    ),
                ));
            }
            let next = end.div_ceil(4) * 4;
            let is_pad = stream.is(b"SPAD");
            streams.push(Stream { header: stream, offset: pos, data });
            if is_pad {
                return Ok(Block { offset, header, streams, end: next.min(self.src.len()) });
            }
            pos = next;
            if pos >= self.src.len() {
                return Ok(Block { offset, header, streams, end: self.src.len() });
            }
        }
    }

    fn is_block_at(&self, offset: u64) -> bool {
        let mut b = [0u8; BLOCK_HEADER_SIZE];
        read_exact(self.src, self.path, offset, &mut b, "a block header").is_ok() && BlockHeader::parse(&b).is_ok()
    }
}

impl Iterator for Blocks<'_> {
    type Item = Result<Block>;

    fn next(&mut self) -> Option<Result<Block>> {
        if self.done || self.pos >= self.src.len() {
            return None;
        }
        match self.block_at(self.pos) {
            Ok(block) => {
                // Every block is at least a header long, so the walk always moves forward.
                debug_assert!(block.end > self.pos);
                self.pos = block.end.max(self.pos + 1);
                Some(Ok(block))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Headers with correct checksums, as the forge writes them.
    pub use mdfkit_forge::backup::{block_header, stream_header};

    #[test]
    fn block_header_round_trips_and_checks_its_checksum() {
        let b = block_header(b"MSDA", 60, 6);
        let h = BlockHeader::parse(&b).unwrap();
        assert!(h.is(b"MSDA"));
        assert_eq!(h.first_stream, 60);
        assert_eq!(h.logical_address, 6);
        assert_eq!(h.os_id, 14);
        let mut bad = b.clone();
        bad[20] ^= 1;
        assert!(BlockHeader::parse(&bad).unwrap_err().contains("checksum"));
        assert!(BlockHeader::parse(&b[..40]).unwrap_err().contains("needs 52"));
    }

    #[test]
    fn stream_header_round_trips_and_checks_its_checksum() {
        let b = stream_header(b"MQDA", STREAM_VARIABLE, 65538);
        let s = StreamHeader::parse(&b).unwrap();
        assert!(s.is(b"MQDA"));
        assert_eq!(s.length, 65538);
        assert_eq!(s.media_attributes, STREAM_VARIABLE);
        let mut bad = b.clone();
        bad[9] ^= 0x80;
        assert!(StreamHeader::parse(&bad).unwrap_err().contains("checksum"));
    }

    #[test]
    fn tags_render_readably() {
        assert_eq!(tag_name(b"MSDA"), "'MSDA'");
        assert_eq!(tag_name(&[0, 1, 0xff, b'A']), "0x0001ff41");
    }
}
