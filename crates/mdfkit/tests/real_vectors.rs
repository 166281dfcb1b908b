//! Real bytes of compressed tables, written by SQL Server and published with SQL Server's own
//! decoding next to them (`DBCC PAGE` output, or the values a query returned): bytes in, SQL
//! Server's printed values out. The forge and the reader were written from one understanding of
//! the format; these are the checks that do not share it.
//!
//! Every real vector the reader is tested on, by source (the unit tests sit next to the parser
//! they check; the ones here need only the public API):
//!
//! | source                                                        | what                                   | count | test |
//! |---------------------------------------------------------------|----------------------------------------|------:|------|
//! | OrcaMDF `IntegerCompressionTests` (Mark S. Rasmussen)         | one-column CD records, tinyint-bigint  | 28    | `compressed/values.rs` `integers_from_orcamdf_records` |
//! | OrcaMDF `DateCompressionTests`                                | one-column CD records, datetime        | 9     | `compressed/values.rs` `datetimes_from_orcamdf_records` |
//! | OrcaMDF `CompressedRecordParserTests`                         | one-column CD records (header, NULL)   | 3     | `record/cd.rs` `reads_orcamdf_single_column_records` |
//! | OrcaMDF `ScsuExpanderTests`                                   | SCSU values read from SQL Server       | 2     | `compressed/scsu.rs` |
//! | improve.dk, "The Anatomy of Row & Page Compressed Integers"   | smallint values                        | 4     | `compressed/values.rs` `smallints_from_improve_dk` |
//! | improve.dk, "The Anatomy of Vardecimals"                      | vardecimal value                       | 1     | `compressed/vardecimal.rs` |
//! | SQL Server Storage Engine blog (Microsoft), vardecimal        | vardecimal value in a DBCC PAGE dump   | 1     | `compressed/vardecimal.rs` |
//! | danny-sg/internals-viewer `CdDataRecordLoaderTests`           | CD record with a long data region      | 1     | `compressed/values.rs` |
//! | danny-sg/internals-viewer `CompressionInfoLoaderTests`, `DictionaryLoaderTests` | a PAGE compressed page's CI structure: anchor record (9 columns) and dictionary (113 entries) | 1 | here |
//! | Dmitri Korotkevitch, "Pro SQL Server Internals", listing 4-27 | 10-column CD record, DBCC PAGE         | 1     | `compressed/values.rs` |
//! | luticm/SQLServer training script (Luciano Caixeta Moreira)    | 4-column CD record, DBCC PAGE          | 1     | `compressed/values.rs` |
//! | StefanMaron/BusinessCentral.AL.Runner (the corpus' `fragments/bc-compressed-records`) | PAGE compressed records, 7 and 84 columns, SCSU text | 2 | `record/cd.rs`, `compressed/values.rs` |
//!
//! 54 records, values and structures from 6 independent authors (OrcaMDF and improve.dk are
//! one).
//! Vardecimal and SCSU are covered by values only: no published DBCC PAGE dump of a whole
//! vardecimal (FixedVar) record or of an SCSU value beyond these was found.

use mdfkit::page::compression_info::CompressionInfo;
use mdfkit::page::{HEADER_SIZE, PAGE_SIZE};
use mdfkit::record::cd::{CdCode, CdRecordType, CdValue};

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

/// danny-sg/internals-viewer, `src/InternalsViewer.Internals.Tests/UnitTests/Loaders/
/// CompressionInfoLoaderTests.cs`: the CI structure of a PAGE compressed data page, as SQL Server
/// wrote it, with the `DBCC PAGE` output that printed it (the same dictionary is in
/// `DictionaryLoaderTests.cs`, with DBCC PAGE's listing of every entry).
const INTERNALS_VIEWER_CI: &str = "060f0023 001b0201 09040428 00188303 0081188b
    80a31e00 00000053 80a31e00 00000071 00e600e8 00ea00ec 00ee00f0 00f200f4 00f600f8 00fa00fc
    00fe0000 01020104 01060108 010a010c 010e0110 01120114 01160118 011a011c 011e0120 01220124
    01260128 012a012c 012e0130 01320134 01360138 013a013c 013e0140 01420144 01460148 014a014c
    014e0150 01520154 01560158 015a015c 015e0160 01620164 01660168 016a016c 016e0170 01720174
    0177017a 017d0180 01830186 0189018c 018f0192 01950198 019b019e 01a101a4 01a701aa 01ad01b0
    01b301b6 01b901bc 01bf01c2 01c501c8 01cb01ce 01d101d4 01d801dc 01e001e4 01e801ec 01f001f4
    01f80102 7e028002 81028302 84028502 86028802 8a028c02 8d028e02 8f029002 91029202 93029402
    95029682 c382c482 c782c882 ca82cb82 e282e782 ec830b83 29834383 5a835b83 60836183 63836483
    65836683 6c836d83 70837183 73837483 75837f83 89838c83 8e839583 96839d83 9e83a783 a883a983
    b483b983 bd83bf83 c183c283 c383c683 cc83d383 dd83df83 e1f4f480 ba5480e4 43826dd1 830ff083
    34148492 6a84f547 8508d485 5ad785f1 a0864c4e 86f11786 fde08702 ca89251e 8a54a28a fc808c06
    848d948e 8db7d29c 347e9dd0 b2a5a5ec a613c4a9 1c7abb53 38be1258 c32a4ed1 8e98d489 e8f15b46
    fb19c880 8577a880 9863e080 9a129480 a1a34c80 bae05880 fc229880 fee1b881 05ebf881 0c6f38";

/// Where in the CI structure (from its first byte) the dictionary starts: DBCC PAGE prints the
/// anchor at CI offset 7 (`AnchorRecord @...6067`, the CI at `...6060`) and the dictionary at
/// `Dictionary @...6083`.
const DICTIONARY_AT: usize = 0x83 - 0x60;

#[test]
fn a_page_compressed_ci_structure_reads_as_dbcc_page_printed_it() {
    let ci = hex(INTERNALS_VIEWER_CI);
    let mut page = vec![0u8; PAGE_SIZE];
    page[HEADER_SIZE..HEADER_SIZE + ci.len()].copy_from_slice(&ci);
    let info = CompressionInfo::parse(&page).unwrap();

    // CompressionInfo size (in bytes) = 539, PageModCount = 15,
    // CI Header Flags = CI_HAS_ANCHOR_RECORD CI_HAS_DICTIONARY.
    assert_eq!(info.size, 539);
    assert_eq!(info.modification_count, 15);
    assert_eq!(info.records_start(), HEADER_SIZE + 539);

    // AnchorRecord: Record Type = (COMPRESSED) PRIMARY_RECORD, Record size = 28; the CD array
    // and "Anchor record entry = Column n, offset o length l" (NULL: no prefix).
    let anchor = info.anchor().expect("CI_HAS_ANCHOR_RECORD");
    assert_eq!(anchor.record_type(), CdRecordType::Primary);
    assert_eq!(anchor.bytes().len(), 28);
    assert_eq!(anchor.column_count(), 9);
    let printed: [Option<(usize, usize)>; 9] =
        [Some((7, 3)), None, Some((10, 3)), None, Some((13, 7)), Some((20, 1)), None, None, Some((21, 7))];
    let anchor_start = anchor.bytes().as_ptr() as usize;
    for (column, entry) in printed.iter().enumerate() {
        match (*entry, anchor.value(column)) {
            (None, Some(CdValue::Null)) => assert_eq!(anchor.code(column), Some(CdCode::Null)),
            (Some((offset, length)), Some(CdValue::Bytes(bytes))) => {
                assert_eq!(bytes.as_ptr() as usize - anchor_start, offset, "column {}", column + 1);
                assert_eq!(bytes.len(), length, "column {}", column + 1);
                // THREE_BYTE_SHORT, SEVEN_BYTE_SHORT, ONE_BYTE_SHORT: the length is the code.
                assert_eq!(anchor.code(column), Some(CdCode::Short(length as u8)), "column {}", column + 1);
            }
            (entry, value) => panic!("column {}: DBCC PAGE printed {entry:?}, read {value:?}", column + 1),
        }
    }

    // Dictionary: Entry count = 113, Dictionary size (in bytes) = 504, Data section offset = 228;
    // "Dictionary entry = Symbol n, offset o length l": symbols 0-71 two bytes long, 72-103
    // three, 104-112 four, each starting where the one before ended.
    let dictionary = info.dictionary();
    assert_eq!(dictionary.len(), 113);
    let dictionary_start = page[HEADER_SIZE + DICTIONARY_AT..].as_ptr() as usize;
    let mut offset = 228;
    for (symbol, entry) in dictionary.iter().enumerate() {
        let length = match symbol {
            0..=71 => 2,
            72..=103 => 3,
            _ => 4,
        };
        assert_eq!(entry.as_ptr() as usize - dictionary_start, offset, "symbol {symbol}");
        assert_eq!(entry.len(), length, "symbol {symbol}");
        offset += length;
    }
    assert_eq!(offset, 504, "the last entry ends the dictionary");
    assert_eq!(DICTIONARY_AT + 504, 539, "the dictionary ends the CI structure");
}

#[test]
fn the_ci_structure_cut_short_or_overrun_is_damage_not_a_guess() {
    let ci = hex(INTERNALS_VIEWER_CI);
    // A size one byte short of the last dictionary entry's end, a dictionary offset one byte
    // late (its count then reads 0xe600), an entry count past the offsets there are room for.
    for (at, value) in [(5usize, 0x1au8), (3, 0x24), (DICTIONARY_AT, 0xff)] {
        let mut page = vec![0u8; PAGE_SIZE];
        page[HEADER_SIZE..HEADER_SIZE + ci.len()].copy_from_slice(&ci);
        page[HEADER_SIZE + at] = value;
        assert!(CompressionInfo::parse(&page).is_err(), "byte {at} set to {value:#04x}");
    }
}

/// `mdfkit page` on a page holding the same CI structure: the anchor's prefixes and the
/// dictionary's entries are fields at the offsets and lengths DBCC PAGE printed, and the
/// structure's 539 bytes are all some field's.
#[test]
fn the_page_anatomy_draws_the_ci_structure_where_dbcc_page_printed_it() {
    use mdfkit::anatomy::{take_apart, Part};
    let ci = hex(INTERNALS_VIEWER_CI);
    let id = mdfkit::PageId::new(1, 77);
    let mut page = vec![0u8; PAGE_SIZE];
    page[0] = 1; // header version
    page[1] = 1; // data page
    page[2] = mdfkit::page::compression_info::PAGE_HAS_CI_STRUCTURE;
    page[30..32].copy_from_slice(&((HEADER_SIZE + ci.len()) as u16).to_le_bytes());
    page[32..36].copy_from_slice(&id.page.to_le_bytes());
    page[36..38].copy_from_slice(&id.file.to_le_bytes());
    page[HEADER_SIZE..HEADER_SIZE + ci.len()].copy_from_slice(&ci);
    let a = take_apart(page.into_boxed_slice(), id, mdfkit::page::protection::Verdict::Unprotected, None);
    assert!(a.error.is_none(), "{:?}", a.error);
    let mut at = HEADER_SIZE;
    for f in &a.compression_info {
        assert_eq!(f.offset, at, "{}", a.field_name(f));
        assert_ne!(f.part, Part::Undecoded, "{} left undecoded", a.field_name(f));
        at += f.len;
    }
    assert_eq!(at, HEADER_SIZE + 539, "CompressionInfo size (in bytes) = 539");
    let field = |name: &str| {
        let f = a.compression_info.iter().find(|f| a.field_name(f) == name).unwrap_or_else(|| panic!("{name}"));
        (f.offset, f.len, a.field_value(f, None).into_owned())
    };
    assert_eq!(field("PageModCount").2, "15");
    assert_eq!(field("CI header").2, "0x06: ANCHOR_RECORD | DICTIONARY", "CI_HAS_ANCHOR_RECORD CI_HAS_DICTIONARY");
    assert_eq!(field("dictionary offset").2, DICTIONARY_AT.to_string());
    assert_eq!(field("dictionary entries").2, "113", "Entry count = 113");
    // "Anchor record entry = Column n, offset o length l", from the anchor's start (CI offset 7).
    let anchor = HEADER_SIZE + 7;
    for (column, offset, length) in [(1, 7, 3), (3, 10, 3), (5, 13, 7), (6, 20, 1), (9, 21, 7)] {
        let (o, l, _) = field(&format!("column {column}"));
        assert_eq!((o, l), (anchor + offset, length), "anchor column {column}");
    }
    // "Dictionary entry = Symbol n, offset o length l", from the dictionary's start.
    let mut offset = 228;
    for symbol in 0..113 {
        let length = match symbol {
            0..=71 => 2,
            72..=103 => 3,
            _ => 4,
        };
        let (o, l, _) = field(&format!("dictionary entry {symbol}"));
        assert_eq!((o, l), (HEADER_SIZE + DICTIONARY_AT + offset, length), "symbol {symbol}");
        offset += length;
    }
}
