//! Parquet files made elsewhere (a Delta table's checkpoints), checked before the `parquet`
//! crate reads them, so that reading one takes time bounded by its size.
//!
//! Why: the crate (60.1, `parquet_thrift.rs` `skip_till_depth`) skips a field it does not know
//! by the types the bytes announce, and takes each element of a list, set or map of booleans
//! as holding no byte: a six-byte list header claiming 2^31 - 1 booleans is 2^31 turns of a
//! loop (20 CPU-s in the `delta_log` fuzz target's build). It decodes the footer (`FileMetaData`) and the header of each page it reads
//! (`PageHeader`) that way; the page index and bloom filters it reads only when asked, and
//! `delta.rs` does not ask.
//!
//! The Thrift compact protocol (apache/thrift `doc/specs/thrift-compact-protocol.md`):
//! - varint: ULEB128, seven bits a byte, low bits first (10 bytes at most for 64 bits); i16,
//!   i32 and i64 are zigzag-encoded varints (`n << 1 ^ n >> 63`).
//! - struct: fields, then a stop byte (low nibble 0). A field header is one byte: the low
//!   nibble the type, the high nibble the field id minus the previous one (1..15); or 0 there
//!   and the id as a zigzag i16 varint after it. Types: 1 true and 2 false (a boolean field
//!   holds no byte past its header), 3 byte, 4 i16, 5 i32, 6 i64, 7 double (8 bytes), 8 binary
//!   (a varint length, then the bytes; strings too), 9 list, 10 set, 11 map, 12 struct,
//!   13 uuid (16 bytes).
//! - list and set: a byte with the element type in its low nibble (booleans 1 or 2, one byte
//!   each) and the size (0..14) in its high nibble, or 15 there and the size as a varint after
//!   it; a header byte 0 is an empty list (some writers). Then the elements, each at least one
//!   byte.
//! - map: the size as a varint; when not 0, a byte with the key type (high nibble) and value
//!   type (low), then the pairs.
//!
//! A Parquet file (apache/parquet-format `README.md`, `src/main/thrift/parquet.thrift`) ends in
//! its footer: `FileMetaData`, its length (4 bytes, little endian), `PAR1`. Each column chunk's
//! pages start at its `dictionary_page_offset`, or its `data_page_offset` without one, and fill
//! `total_compressed_size` bytes: a `PageHeader`, then `compressed_page_size` bytes of data, then
//! the next header. The tables below declare the structures the crate decodes there, as its
//! own declarations do (`file/metadata/thrift/mod.rs`, `basic.rs`, `file/metadata/mod.rs`).
//!
//! The walk reads these as the crate does: a field the crate knows by its declared type, any
//! other by the types the bytes announce. It refuses what would let the two part ways or the
//! crate loop: a known field whose bytes announce another type than its declaration (the crate
//! reads it as declared whatever they say), a container claiming more elements than bytes
//! remain, a non-empty container of booleans (none in Parquet's structures; the crate would
//! skip it as holding no bytes), a length past the end, nesting deeper than [`MAX_DEPTH`].
//! Also refused: a schema (`FileMetaData.schema`: its tree's elements in depth-first order, a
//! group's `num_children` elements after it) nesting groups deeper than [`MAX_SCHEMA_DEPTH`],
//! which the crate follows by recursion; column chunks whose bytes overlap, so that the walk of
//! their pages, and the crate's reading, takes each byte of the file once at most.

use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;

/// The deepest nesting of structs and containers walked: the crate's own limit for skipping
/// (`DEFAULT_SKIP_DEPTH`); Parquet's structures nest seven deep.
const MAX_DEPTH: usize = 64;
/// The deepest nesting of groups in a file's schema: a Delta checkpoint's nest five deep or so,
/// plus the table's own structs. The crate builds the schema's tree by recursion, several calls
/// a level: a thousand levels (8 KB of footer) overflow a 2 MB stack in a debug build.
const MAX_SCHEMA_DEPTH: usize = 64;
/// Bytes after the footer: its length and `PAR1`.
const FOOTER_TAIL: usize = 8;

/// What a field or an element holds in parquet.thrift.
#[derive(Clone, Copy)]
enum Declared {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    Binary,
    List(&'static Declared),
    Struct(&'static Structure),
}

/// A struct (or union: the same bytes) of parquet.thrift: its fields by id.
struct Structure {
    name: &'static str,
    fields: &'static [(i16, Declared)],
}

use Declared::{Binary, Bool, Byte, Double, List, Struct, I16, I32, I64};

/// The empty structs of parquet.thrift: unions' variants that hold nothing (`StringType`,
/// `TypeDefinedOrder`, `IndexPageHeader`, ...).
static EMPTY: Structure = Structure { name: "an empty struct", fields: &[] };
static KEY_VALUE: Structure = Structure { name: "KeyValue", fields: &[(1, Binary), (2, Binary)] };
static STATISTICS: Structure = Structure {
    name: "Statistics",
    fields: &[(1, Binary), (2, Binary), (3, I64), (4, I64), (5, Binary), (6, Binary), (7, Bool), (8, Bool), (9, I64)],
};
static TIME_UNIT: Structure =
    Structure { name: "TimeUnit", fields: &[(1, Struct(&EMPTY)), (2, Struct(&EMPTY)), (3, Struct(&EMPTY))] };
static TIME_TYPE: Structure = Structure { name: "TimeType", fields: &[(1, Bool), (2, Struct(&TIME_UNIT))] };
static LOGICAL_TYPE: Structure = Structure {
    name: "LogicalType",
    fields: &[
        (1, Struct(&EMPTY)),
        (2, Struct(&EMPTY)),
        (3, Struct(&EMPTY)),
        (4, Struct(&EMPTY)),
        (5, Struct(&Structure { name: "DecimalType", fields: &[(1, I32), (2, I32)] })),
        (6, Struct(&EMPTY)),
        (7, Struct(&TIME_TYPE)),
        (8, Struct(&TIME_TYPE)),
        (10, Struct(&Structure { name: "IntType", fields: &[(1, Byte), (2, Bool)] })),
        (11, Struct(&EMPTY)),
        (12, Struct(&EMPTY)),
        (13, Struct(&EMPTY)),
        (14, Struct(&EMPTY)),
        (15, Struct(&EMPTY)),
        (16, Struct(&Structure { name: "VariantType", fields: &[(1, Byte)] })),
        (17, Struct(&Structure { name: "GeometryType", fields: &[(1, Binary)] })),
        (18, Struct(&Structure { name: "GeographyType", fields: &[(1, Binary), (2, I32)] })),
        (19, Struct(&EMPTY)),
    ],
};
static SCHEMA_ELEMENT: Structure = Structure {
    name: "SchemaElement",
    fields: &[
        (1, I32),
        (2, I32),
        (3, I32),
        (4, Binary),
        (NUM_CHILDREN, I32),
        (6, I32),
        (7, I32),
        (8, I32),
        (9, I32),
        (10, Struct(&LOGICAL_TYPE)),
    ],
};
static COLUMN_METADATA: Structure = Structure {
    name: "ColumnMetaData",
    fields: &[
        (1, I32),
        (2, List(&I32)),
        (3, List(&Binary)),
        (4, I32),
        (5, I64),
        (6, I64),
        (7, I64),
        (8, List(&Struct(&KEY_VALUE))),
        (9, I64),
        (10, I64),
        (11, I64),
        (12, Struct(&STATISTICS)),
        (13, List(&Struct(&Structure { name: "PageEncodingStats", fields: &[(1, I32), (2, I32), (3, I32)] }))),
        (14, I64),
        (15, I32),
        (16, Struct(&Structure { name: "SizeStatistics", fields: &[(1, I64), (2, List(&I64)), (3, List(&I64))] })),
        (
            17,
            Struct(&Structure {
                name: "GeospatialStatistics",
                fields: &[
                    (
                        1,
                        Struct(&Structure {
                            name: "BoundingBox",
                            fields: &[
                                (1, Double),
                                (2, Double),
                                (3, Double),
                                (4, Double),
                                (5, Double),
                                (6, Double),
                                (7, Double),
                                (8, Double),
                            ],
                        }),
                    ),
                    (2, List(&I32)),
                ],
            }),
        ),
    ],
};
static COLUMN_CHUNK: Structure = Structure {
    name: "ColumnChunk",
    fields: &[
        (1, Binary),
        (2, I64),
        (3, Struct(&COLUMN_METADATA)),
        (4, I64),
        (5, I32),
        (6, I64),
        (7, I32),
        (
            8,
            Struct(&Structure {
                name: "ColumnCryptoMetaData",
                fields: &[
                    (1, Struct(&EMPTY)),
                    (
                        2,
                        Struct(&Structure {
                            name: "EncryptionWithColumnKey",
                            fields: &[(1, List(&Binary)), (2, Binary)],
                        }),
                    ),
                ],
            }),
        ),
        (9, Binary),
    ],
};
static ROW_GROUP: Structure = Structure {
    name: "RowGroup",
    fields: &[
        (1, List(&Struct(&COLUMN_CHUNK))),
        (2, I64),
        (3, I64),
        (4, List(&Struct(&Structure { name: "SortingColumn", fields: &[(1, I32), (2, Bool), (3, Bool)] }))),
        (5, I64),
        (6, I64),
        (7, I16),
    ],
};
static AES_GCM: Structure = Structure { name: "AesGcmV1", fields: &[(1, Binary), (2, Binary), (3, Bool)] };
static FILE_METADATA: Structure = Structure {
    name: "FileMetaData",
    fields: &[
        (1, I32),
        (2, List(&Struct(&SCHEMA_ELEMENT))),
        (3, I64),
        (4, List(&Struct(&ROW_GROUP))),
        (5, List(&Struct(&KEY_VALUE))),
        (6, Binary),
        (
            7,
            List(&Struct(&Structure {
                name: "ColumnOrder",
                fields: &[(1, Struct(&EMPTY)), (2, Struct(&EMPTY)), (3, Struct(&EMPTY))],
            })),
        ),
        (
            8,
            Struct(&Structure { name: "EncryptionAlgorithm", fields: &[(1, Struct(&AES_GCM)), (2, Struct(&AES_GCM))] }),
        ),
        (9, Binary),
    ],
};
/// `SchemaElement.num_children`: the elements after a group's that are its children (the
/// schema is its tree's elements in depth-first order).
const NUM_CHILDREN: i16 = 5;
/// `PageHeader.uncompressed_page_size`: what the crate reserves before decompressing the page.
const UNCOMPRESSED_PAGE_SIZE: i16 = 2;
/// `PageHeader.compressed_page_size`: where the next header starts.
const COMPRESSED_PAGE_SIZE: i16 = 3;
/// The most bytes a page may claim uncompressed. The crate reserves that much before it
/// decompresses, whatever the page's compressed bytes could give (zstd's ratio has no useful
/// bound), so a few header bytes could ask for 2 GiB. Writers cut pages at about 1 MiB (the
/// crate's, parquet-mr's and delta-rs's default page size), larger only for a single large value.
const MAX_UNCOMPRESSED_PAGE: usize = 64 << 20;
static PAGE_HEADER: Structure = Structure {
    name: "PageHeader",
    fields: &[
        (1, I32),
        (UNCOMPRESSED_PAGE_SIZE, I32),
        (COMPRESSED_PAGE_SIZE, I32),
        (4, I32),
        (
            5,
            Struct(&Structure {
                name: "DataPageHeader",
                fields: &[(1, I32), (2, I32), (3, I32), (4, I32), (5, Struct(&STATISTICS))],
            }),
        ),
        (6, Struct(&EMPTY)),
        (7, Struct(&Structure { name: "DictionaryPageHeader", fields: &[(1, I32), (2, I32), (3, Bool)] })),
        (
            8,
            Struct(&Structure {
                name: "DataPageHeaderV2",
                fields: &[
                    (1, I32),
                    (2, I32),
                    (3, I32),
                    (4, I32),
                    (5, I32),
                    (6, I32),
                    (7, Bool),
                    (8, Struct(&STATISTICS)),
                ],
            }),
        ),
    ],
};

/// Type codes of the compact protocol (see the module).
mod wire {
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

impl Declared {
    /// Whether `code` is the compact protocol's type code for a value of this declaration (a
    /// boolean field's code is its value: 1 or 2).
    fn accepts(self, code: u8) -> bool {
        let expected = match self {
            Bool => return code == wire::TRUE || code == wire::FALSE,
            Byte => wire::BYTE,
            I16 => wire::I16,
            I32 => wire::I32,
            I64 => wire::I64,
            Double => wire::DOUBLE,
            Binary => wire::BINARY,
            List(_) => wire::LIST,
            Struct(_) => wire::STRUCT,
        };
        code == expected
    }

    fn name(self) -> &'static str {
        match self {
            Bool => "bool",
            Byte => "byte",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            Double => "double",
            Binary => "binary",
            List(_) => "list",
            Struct(structure) => structure.name,
        }
    }
}

fn type_name(code: u8) -> &'static str {
    match code {
        wire::TRUE | wire::FALSE => "bool",
        wire::BYTE => "byte",
        wire::I16 => "i16",
        wire::I32 => "i32",
        wire::I64 => "i64",
        wire::DOUBLE => "double",
        wire::BINARY => "binary",
        wire::LIST => "list",
        wire::SET => "set",
        wire::MAP => "map",
        wire::STRUCT => "struct",
        wire::UUID => "uuid",
        _ => "no type",
    }
}

/// One walk over Thrift bytes: `bytes[at..]` not read yet.
struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The schema's groups open at this element: how many children each still awaits.
    open_groups: Vec<i64>,
}

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or_else(|| format!("ends inside a value at byte {}", self.at))?;
        self.at += 1;
        Ok(byte)
    }

    fn skip(&mut self, length: u64, what: &str) -> Result<(), String> {
        match usize::try_from(length) {
            Ok(length) if length <= self.remaining() => {
                self.at += length;
                Ok(())
            }
            _ => Err(format!(
                "{what} of {length} bytes at byte {} runs past the end ({} bytes)",
                self.at,
                self.bytes.len()
            )),
        }
    }

    /// A varint as the crate reads it (bits past 64 dropped), 10 bytes at most.
    fn varint(&mut self) -> Result<u64, String> {
        let start = self.at;
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f).wrapping_shl(shift);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("a varint at byte {start} runs over 10 bytes"))
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let value = self.varint()?;
        Ok((value >> 1) as i64 ^ -((value & 1) as i64))
    }

    /// A struct's fields up to its stop byte, each known one (in `structure`) as declared, the
    /// others as their bytes say; the integer fields with ids below `integers.len()` kept there.
    fn structure(
        &mut self,
        structure: Option<&'static Structure>,
        depth: usize,
        integers: &mut [Option<i64>],
    ) -> Result<(), String> {
        let mut last_id = 0i16;
        loop {
            let header = self.byte()?;
            let code = header & 0x0f;
            if code == 0 {
                return Ok(());
            }
            let delta = header >> 4;
            // As the crate reads ids: a delta from the previous one, or a zigzag i16.
            let id = if delta == 0 {
                self.zigzag()? as i16
            } else {
                last_id
                    .checked_add(i16::from(delta))
                    .ok_or_else(|| format!("a field id past {} at byte {}", i16::MAX, self.at))?
            };
            last_id = id;
            let declared = structure.and_then(|s| s.fields.iter().find(|(known, _)| *known == id)).map(|&(_, d)| d);
            if let (Some(structure), Some(declared)) = (structure, declared) {
                if !declared.accepts(code) {
                    return Err(format!(
                        "{} field {id} at byte {} holds {} where Parquet declares {}",
                        structure.name,
                        self.at,
                        type_name(code),
                        declared.name()
                    ));
                }
            }
            if matches!(code, wire::I16 | wire::I32 | wire::I64) {
                let value = self.zigzag()?;
                if let Some(slot) = usize::try_from(id).ok().and_then(|i| integers.get_mut(i)) {
                    *slot = Some(value);
                }
            } else {
                self.value(code, declared, depth)?;
            }
        }
    }

    /// One value of type `code` (a field's or an element's), `declared` where Parquet says
    /// what it holds; `depth` is the nesting of the structure or container holding it.
    fn value(&mut self, code: u8, declared: Option<Declared>, depth: usize) -> Result<(), String> {
        if depth >= MAX_DEPTH && matches!(code, wire::LIST | wire::SET | wire::MAP | wire::STRUCT) {
            return Err(format!("nests deeper than {MAX_DEPTH} at byte {}", self.at));
        }
        match code {
            wire::TRUE | wire::FALSE => Ok(()),
            wire::BYTE => self.byte().map(drop),
            wire::I16 | wire::I32 | wire::I64 => self.varint().map(drop),
            wire::DOUBLE => self.skip(8, "a double"),
            wire::UUID => self.skip(16, "a uuid"),
            wire::BINARY => {
                let length = self.varint()?;
                self.skip(length, "a binary")
            }
            wire::STRUCT => match declared {
                Some(Struct(structure)) if std::ptr::eq(structure, &SCHEMA_ELEMENT) => {
                    let mut integers = [None; NUM_CHILDREN as usize + 1];
                    self.structure(Some(structure), depth + 1, &mut integers)?;
                    self.schema_element(integers[NUM_CHILDREN as usize])
                }
                Some(Struct(structure)) => self.structure(Some(structure), depth + 1, &mut []),
                _ => self.structure(None, depth + 1, &mut []),
            },
            wire::LIST | wire::SET => self.list(code, declared, depth + 1),
            wire::MAP => self.map(depth + 1),
            _ => Err(format!("type {code} at byte {} is no Thrift type", self.at)),
        }
    }

    fn list(&mut self, code: u8, declared: Option<Declared>, depth: usize) -> Result<(), String> {
        let start = self.at;
        let header = self.byte()?;
        if header == 0 {
            return Ok(());
        }
        let element = header & 0x0f;
        let size = match header >> 4 {
            15 => self.varint()?,
            size => u64::from(size),
        };
        self.elements(type_name(code), size, 1)?;
        if size > 0 && (element == wire::TRUE || element == wire::FALSE) {
            return Err(format!(
                "a {} of {size} booleans at byte {start}: the parquet crate skips them as no bytes",
                type_name(code)
            ));
        }
        let declared_element = match declared {
            Some(List(element)) => Some(*element),
            _ => None,
        };
        if let Some(expected) = declared_element {
            if !expected.accepts(element) {
                return Err(format!(
                    "a list at byte {start} holds {} where Parquet declares {}",
                    type_name(element),
                    expected.name()
                ));
            }
        }
        for _ in 0..size {
            self.value(element, declared_element, depth)?;
        }
        Ok(())
    }

    fn map(&mut self, depth: usize) -> Result<(), String> {
        let start = self.at;
        let size = self.varint()?;
        if size == 0 {
            return Ok(());
        }
        let types = self.byte()?;
        self.elements("map", size, 2)?;
        let (key, value) = (types >> 4, types & 0x0f);
        if [key, value].iter().any(|&t| t == wire::TRUE || t == wire::FALSE) {
            return Err(format!(
                "a map of {size} entries with booleans at byte {start}: the parquet crate skips them as no bytes"
            ));
        }
        for _ in 0..size {
            self.value(key, None, depth)?;
            self.value(value, None, depth)?;
        }
        Ok(())
    }

    /// Follows the schema's tree past an element with `num_children`, refusing it deeper than
    /// [`MAX_SCHEMA_DEPTH`].
    fn schema_element(&mut self, num_children: Option<i64>) -> Result<(), String> {
        if let Some(awaited) = self.open_groups.last_mut() {
            *awaited -= 1;
        }
        // The crate reads the field as an i32; a group of none (or fewer) has no children.
        let children = num_children.map_or(0, |n| n as i32);
        if children > 0 {
            if self.open_groups.len() == MAX_SCHEMA_DEPTH {
                return Err(format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} at byte {}", self.at));
            }
            self.open_groups.push(i64::from(children));
        }
        while self.open_groups.last() == Some(&0) {
            self.open_groups.pop();
        }
        Ok(())
    }

    /// Refuses `size` elements of `bytes_each` bytes at least where fewer bytes remain.
    fn elements(&self, what: &str, size: u64, bytes_each: u64) -> Result<(), String> {
        if size.saturating_mul(bytes_each) > self.remaining() as u64 {
            return Err(format!("a {what} claims {size} elements in {} bytes", self.remaining()));
        }
        Ok(())
    }
}

/// Walks the struct `structure` at the start of `bytes`: the bytes it takes, and the values of
/// its integer fields with ids below `integers.len()`.
fn walk(bytes: &[u8], structure: &'static Structure, integers: &mut [Option<i64>]) -> Result<usize, String> {
    let mut walk = Walk { bytes, at: 0, open_groups: Vec::new() };
    walk.structure(Some(structure), 0, integers)?;
    Ok(walk.at)
}

/// Checks the footer of the Parquet file `file` (see the module); the refusal says what is wrong.
pub(super) fn check_footer(file: &[u8]) -> Result<(), String> {
    let before_tail =
        file.len().checked_sub(FOOTER_TAIL).ok_or_else(|| format!("{} bytes are no Parquet file", file.len()))?;
    let (length, magic) = file[before_tail..].split_at(4);
    if magic != b"PAR1" {
        return Err("it does not end in PAR1".into());
    }
    let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
    let footer = before_tail
        .checked_sub(length)
        .map(|start| &file[start..before_tail])
        .ok_or_else(|| format!("footer: {length} bytes claimed before the last 8, {before_tail} there"))?;
    walk(footer, &FILE_METADATA, &mut []).map(drop).map_err(|e| format!("footer ({length} bytes): {e}"))
}

/// Checks the page headers of the column chunks of `file` that `mask` selects, as `metadata`
/// (its footer, read by the crate once [`check_footer`] passed it) places them.
pub(super) fn check_pages(file: &[u8], metadata: &ParquetMetaData, mask: &ProjectionMask) -> Result<(), String> {
    // (start, end, row group, column) of each chunk read.
    let mut chunks = Vec::new();
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        for (column, chunk) in row_group.columns().iter().enumerate().filter(|(c, _)| mask.leaf_included(*c)) {
            // Where the crate starts reading them (`ColumnChunkMetaData::byte_range`).
            let start = chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset());
            let length = chunk.compressed_size();
            let range = usize::try_from(start)
                .ok()
                .zip(usize::try_from(length).ok())
                .and_then(|(start, length)| Some((start, start.checked_add(length)?)))
                .filter(|&(_, end)| end <= file.len());
            let (start, end) = range.ok_or_else(|| {
                format!(
                    "row group {group} column {column}: pages of {length} bytes at {start} lie outside its {} bytes",
                    file.len()
                )
            })?;
            chunks.push((start, end, group, column));
        }
    }
    chunks.sort_unstable();
    if let Some(pair) = chunks.windows(2).find(|pair| pair[1].0 < pair[0].1) {
        let ((_, end, g0, c0), (start, _, g1, c1)) = (pair[0], pair[1]);
        return Err(format!(
            "row group {g0} column {c0} (to {end}) and row group {g1} column {c1} (from {start}) overlap"
        ));
    }
    for (start, end, group, column) in chunks {
        let mut at = start;
        while at < end {
            let mut integers = [None; COMPRESSED_PAGE_SIZE as usize + 1];
            let header = walk(&file[at..end], &PAGE_HEADER, &mut integers)
                .map_err(|e| format!("row group {group} column {column}: page header at {at}: {e}"))?;
            let data = at + header;
            let size = integers[COMPRESSED_PAGE_SIZE as usize]
                // The crate reads the field as an i32.
                .and_then(|size| usize::try_from(size as i32).ok())
                .filter(|&size| size <= end - data)
                .ok_or_else(|| {
                    format!("row group {group} column {column}: page header at {at}: no compressed_page_size within the chunk's {} bytes", end - data)
                })?;
            // Absent or negative, the crate refuses the page itself.
            let uncompressed = integers[UNCOMPRESSED_PAGE_SIZE as usize].map_or(0, |size| size as i32);
            if usize::try_from(uncompressed).is_ok_and(|size| size > MAX_UNCOMPRESSED_PAGE) {
                return Err(format!(
                    "row group {group} column {column}: page header at {at}: the page claims {uncompressed} bytes uncompressed (at most {MAX_UNCOMPRESSED_PAGE} read)"
                ));
            }
            at = data + size;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `bytes` as a `PageHeader`: the bytes taken and its compressed_page_size.
    fn page_header(bytes: &[u8]) -> Result<(usize, Option<i64>), String> {
        let mut integers = [None; 4];
        walk(bytes, &PAGE_HEADER, &mut integers).map(|taken| (taken, integers[3]))
    }

    #[test]
    fn a_valid_page_header_is_walked_to_its_stop_byte() {
        let header = [
            0x15, 0x00, // field 1 (delta 1, i32) type: zigzag 0 = DATA_PAGE
            0x15, 0x28, // field 2 (delta 1, i32) uncompressed_page_size: zigzag 40 = 20
            0x15, 0x24, // field 3 (delta 1, i32) compressed_page_size: zigzag 36 = 18
            0x2c, // field 5 (delta 2, struct) data_page_header:
            0x15, 0x06, //   field 1 (i32) num_values: 3
            0x15, 0x00, //   field 2 (i32) encoding: PLAIN
            0x15, 0x06, //   field 3 (i32) definition_level_encoding: RLE
            0x15, 0x06, //   field 4 (i32) repetition_level_encoding: RLE
            0x00, //   stop
            0x00, // stop
            0xff, // the page's first byte: not the header's
        ];
        assert_eq!(page_header(&header), Ok((header.len() - 1, Some(18))));
    }

    #[test]
    fn unknown_fields_are_walked_as_their_bytes_say() {
        let header = [
            0x15, 0x00, // field 1 (i32) type
            0x15, 0x28, // field 2 (i32)
            0x15, 0x24, // field 3 (i32): 18
            0x98, 0x03, b'a', b'b', b'c', // field 12 (delta 9, binary), not Parquet's: 3 bytes
            0x09, 0x40, 0x00, // field 32 (delta 0, list; id zigzag 64): 0x00, an empty list
            0x1c, 0x16, 0x02, 0x00, // field 33 (struct) holding field 1 (i64) 1, stop
            0x00, // stop
        ];
        assert_eq!(page_header(&header), Ok((header.len(), Some(18))));
    }

    #[test]
    fn a_list_claiming_more_elements_than_bytes_is_refused() {
        let footer = [
            0x15, 0x04, // field 1 (i32) version: 2
            0x09, 0xd0, 0x0f, // field 1000 (delta 0, list; id zigzag 2000 = 0xd0 0x0f)
            0xf1, // list header: size follows, elements bool (1)
            0xff, 0xff, 0xff, 0xff, 0x07, // size 2^31 - 1
            0x00, // stop
        ];
        let error = walk(&footer, &FILE_METADATA, &mut []).unwrap_err();
        assert_eq!(error, "a list claims 2147483647 elements in 1 bytes");
    }

    #[test]
    fn a_short_list_of_booleans_is_refused_as_the_crate_misreads_it() {
        let footer = [
            0x15, 0x04, // field 1 (i32) version: 2
            0x99, // field 10 (delta 9, list), not Parquet's
            0x22, 0x01, 0x02, // two booleans: true, false
            0x00, // stop
        ];
        let error = walk(&footer, &FILE_METADATA, &mut []).unwrap_err();
        assert!(error.starts_with("a list of 2 booleans at byte 3"), "{error}");
    }

    #[test]
    fn a_known_field_of_another_type_is_refused() {
        let footer = [
            0x19, // field 1 (delta 1, list) where FileMetaData declares version an i32
            0xf1, 0x7f, // a list of 127 booleans, were it read as the bytes say
            0x00,
        ];
        let error = walk(&footer, &FILE_METADATA, &mut []).unwrap_err();
        assert_eq!(error, "FileMetaData field 1 at byte 1 holds list where Parquet declares i32");
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        // Field 15 (delta 15, struct), unknown to FileMetaData, holding field 5 (delta 5,
        // struct), holding field 1 (0x1c: delta 1, struct), holding field 1 ..., never closed.
        let mut footer = vec![0xfc, 0x5c];
        footer.extend(std::iter::repeat_n(0x1c, MAX_DEPTH));
        let error = walk(&footer, &FILE_METADATA, &mut []).unwrap_err();
        assert_eq!(error, format!("nests deeper than {MAX_DEPTH} at byte {}", MAX_DEPTH + 1));
    }

    /// A footer whose schema is `groups` groups, each the only child of the one before, then
    /// a leaf.
    fn nested_schema(groups: usize) -> Vec<u8> {
        let mut footer = vec![
            0x15, 0x04, // field 1 (i32) version: 2
            0x19, 0xfc, // field 2 (list) schema: size follows, elements struct
        ];
        // The size (the groups and the leaf), a one-byte varint below 128.
        footer.push(u8::try_from(groups + 1).ok().filter(|&size| size < 0x80).unwrap());
        footer.extend([0x48, 0x01, b'r', 0x15, 0x02, 0x00]); // root: name (field 4) "r", num_children 1, stop
        for _ in 1..groups {
            // repetition_type (field 3) OPTIONAL, name "g", num_children 1, stop
            footer.extend([0x35, 0x02, 0x18, 0x01, b'g', 0x15, 0x02, 0x00]);
        }
        // the leaf: type (field 1) INT32, repetition_type REQUIRED (field 3, delta 2), name "x", stop
        footer.extend([0x15, 0x02, 0x25, 0x00, 0x18, 0x01, b'x', 0x00]);
        footer.extend([0x16, 0x00, 0x19, 0x0c, 0x00]); // num_rows 0, row_groups empty, stop
        footer
    }

    #[test]
    fn a_schema_nesting_past_the_limit_is_refused() {
        let deepest = nested_schema(MAX_SCHEMA_DEPTH);
        assert_eq!(walk(&deepest, &FILE_METADATA, &mut []), Ok(deepest.len()));
        // As the crate reads it: one column, its path through every group.
        let file = [&b"PAR1"[..], &deepest, &(deepest.len() as u32).to_le_bytes(), b"PAR1"].concat();
        let metadata =
            parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&bytes::Bytes::from(file)).unwrap();
        let column = metadata.file_metadata().schema_descr().column(0);
        assert_eq!(column.path().parts().len(), MAX_SCHEMA_DEPTH);
        let deeper = nested_schema(MAX_SCHEMA_DEPTH + 1);
        // The 65th group's element ends (its stop byte read) after 4 bytes of fields, the size,
        // the root's 6 bytes and 64 groups of 8.
        let error = walk(&deeper, &FILE_METADATA, &mut []).unwrap_err();
        assert_eq!(error, format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} at byte {}", 4 + 1 + 6 + 64 * 8));
    }

    #[test]
    fn truncated_input_is_refused() {
        let unknown = [
            0x95, 0x00, // field 9 (delta 9, i32), unknown: 0
            0x18, 0x05, b'a', b'b', // field 10 (binary) of 5 bytes, 2 there
        ];
        assert_eq!(page_header(&unknown), Err("a binary of 5 bytes at byte 4 runs past the end (6 bytes)".into()));
        assert_eq!(page_header(&[0x15, 0x80]), Err("ends inside a value at byte 2".into()));
        assert_eq!(page_header(&[0x15, 0x00]), Err("ends inside a value at byte 2".into()));
    }

    /// A data page of one 4-byte value (17 bytes of header, then the value).
    const PAGE: [u8; 21] = [
        0x15, 0x00, // field 1 (i32) type: DATA_PAGE
        0x15, 0x08, // field 2 (i32) uncompressed_page_size: zigzag 8 = 4
        0x15, 0x08, // field 3 (i32) compressed_page_size: 4
        0x2c, // field 5 (delta 2, struct) data_page_header:
        0x15, 0x02, //   num_values: 1
        0x15, 0x00, //   encoding: PLAIN
        0x15, 0x06, //   definition_level_encoding: RLE
        0x15, 0x06, //   repetition_level_encoding: RLE
        0x00, //   stop
        0x00, // stop
        7, 0, 0, 0, // the value
    ];

    /// `file`'s metadata with one row group a chunk, each (offset, length), of the one
    /// column `x`.
    fn chunks_at(chunks: &[(i64, i64)]) -> ParquetMetaData {
        use parquet::file::metadata::{ColumnChunkMetaData, FileMetaData, RowGroupMetaData};
        use parquet::schema::types::SchemaDescriptor;
        use std::sync::Arc;
        let schema = parquet::schema::parser::parse_message_type("message m { required int32 x; }").unwrap();
        let schema = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let row_groups = chunks
            .iter()
            .map(|&(offset, length)| {
                let chunk = ColumnChunkMetaData::builder(schema.column(0))
                    .set_data_page_offset(offset)
                    .set_total_compressed_size(length)
                    .build()
                    .unwrap();
                RowGroupMetaData::builder(schema.clone()).set_num_rows(1).add_column_metadata(chunk).build().unwrap()
            })
            .collect();
        ParquetMetaData::new(FileMetaData::new(2, chunks.len() as i64, None, None, schema, None), row_groups)
    }

    #[test]
    fn column_chunks_are_walked_page_by_page() {
        let file: Vec<u8> = [&b"PAR1"[..], &PAGE, &PAGE, &PAGE].concat();
        let all = ProjectionMask::all();
        // Two chunks: the first of two pages (4..46), the second of one (46..67).
        assert_eq!(check_pages(&file, &chunks_at(&[(4, 42), (46, 21)]), &all), Ok(()));
        assert_eq!(
            check_pages(&file, &chunks_at(&[(4, 42), (25, 21)]), &all),
            Err("row group 0 column 0 (to 46) and row group 1 column 0 (from 25) overlap".into())
        );
        assert_eq!(
            check_pages(&file, &chunks_at(&[(4, 20)]), &all),
            Err("row group 0 column 0: page header at 4: no compressed_page_size within the chunk's 3 bytes".into())
        );
        assert_eq!(
            check_pages(&file, &chunks_at(&[(46, 22)]), &all),
            Err("row group 0 column 0: pages of 22 bytes at 46 lie outside its 67 bytes".into())
        );
        // A chunk cut inside its second page's header.
        let error = check_pages(&file, &chunks_at(&[(4, 31)]), &all).unwrap_err();
        assert_eq!(error, "row group 0 column 0: page header at 25: ends inside a value at byte 10");
        // A page claiming 2^30 bytes uncompressed (zigzag 2^31: the varint 80 80 80 80 08, five
        // bytes where PAGE has one, so the header is 4 bytes longer).
        let mut huge = PAGE[..2].to_vec();
        huge.extend([0x15, 0x80, 0x80, 0x80, 0x80, 0x08]);
        huge.extend(&PAGE[4..]);
        let huge_file: Vec<u8> = [&b"PAR1"[..], &huge].concat();
        assert_eq!(
            check_pages(&huge_file, &chunks_at(&[(4, 25)]), &all),
            Err(format!("row group 0 column 0: page header at 4: the page claims 1073741824 bytes uncompressed (at most {MAX_UNCOMPRESSED_PAGE} read)"))
        );
        // Chunks the mask leaves out are not read, nor walked.
        let none = ProjectionMask::leaves(&chunks_at(&[]).file_metadata().schema_descr_ptr(), []);
        assert_eq!(check_pages(&file, &chunks_at(&[(4, 31)]), &none), Ok(()));
    }

    #[test]
    fn a_footer_is_found_by_its_length_and_magic() {
        let mut file = b"PAR1".to_vec();
        let footer = [0x15, 0x04, 0x00]; // version 2, stop
        file.extend(footer);
        file.extend(3u32.to_le_bytes());
        file.extend(b"PAR1");
        assert_eq!(check_footer(&file), Ok(()));
        let last = file.len() - 1;
        file[last] = b'E';
        assert_eq!(check_footer(&file), Err("it does not end in PAR1".into()));
        assert_eq!(check_footer(&file[4..]), Err("it does not end in PAR1".into()));
        let mut long = file.clone();
        long[last] = b'1';
        long[last - 7..last - 3].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(check_footer(&long), Err("footer: 100 bytes claimed before the last 8, 7 there".into()));
        assert_eq!(check_footer(b"PAR1"), Err("4 bytes are no Parquet file".into()));
    }
}
