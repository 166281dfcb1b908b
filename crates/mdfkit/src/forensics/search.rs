//! Value search: every place a value's stored bytes occur in the files, allocated or not (a
//! deleted row's bytes stay on its page until overwritten), page by page, bounded by a time
//! budget and resumable from the page it stopped before.
//!
//! A value is given as text with its SQL type and turned into the bytes SQL Server stores for it
//! in a record:
//!
//! | type                                  | stored bytes                                        |
//! |---------------------------------------|-----------------------------------------------------|
//! | `tinyint`, `smallint`, `int`, `bigint`| two's complement, little endian, 1 / 2 / 4 / 8 bytes |
//! | `char`, `varchar`                     | the text's bytes (ASCII only: code pages agree there) |
//! | `nchar`, `nvarchar`                   | UTF-16, little endian                               |
//! | `binary`, `varbinary`                 | the bytes of `0x...` hex                            |
//! | `uniqueidentifier`                    | the first three groups little endian, then as written |
//!
//! These are the fixed-length and variable-length column encodings of [`crate::decode`] read
//! backwards (Kalen Delaney, "SQL Server 2008 Internals", chapter 5; the uniqueidentifier order
//! is [`crate::value::push_guid`]'s).

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::page::{PageId, PAGE_SIZE};
use crate::source::PageSource;
use crate::types::{SqlType, TypeInfo};

/// The bytes SQL Server stores for `value` of type `sql_type` (`int`, `nvarchar(50)`, ...).
pub fn stored_bytes(sql_type: &str, value: &str) -> Result<Vec<u8>> {
    let unsupported = || {
        Error::unsupported(format!(
            "searching {sql_type:?} values: give tinyint, smallint, int, bigint, char, varchar, nchar, nvarchar, binary, varbinary or uniqueidentifier"
        ))
    };
    let bad = |what: &str| Error::unsupported(format!("{value:?} is not {what}"));
    let t = TypeInfo::parse(sql_type).ok_or_else(unsupported)?;
    let int = |bytes: usize| -> Result<Vec<u8>> {
        let v: i64 = value.trim().parse().map_err(|_| bad("an integer"))?;
        let fits = match bytes {
            2 => i16::try_from(v).is_ok(),
            4 => i32::try_from(v).is_ok(),
            _ => true,
        };
        if !fits {
            return Err(bad(&format!("a {}", t.spelling())));
        }
        Ok(v.to_le_bytes()[..bytes].to_vec())
    };
    let out = match t.sql_type {
        SqlType::TinyInt => {
            let v: u8 = value.trim().parse().map_err(|_| bad("a tinyint (0 to 255)"))?;
            vec![v]
        }
        SqlType::SmallInt => int(2)?,
        SqlType::Int => int(4)?,
        SqlType::BigInt => int(8)?,
        SqlType::Char | SqlType::VarChar => {
            if !value.is_ascii() {
                return Err(bad("ASCII text (other characters depend on the column's code page)"));
            }
            value.as_bytes().to_vec()
        }
        SqlType::NChar | SqlType::NVarChar => value.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        SqlType::Binary | SqlType::VarBinary => {
            let hex =
                value.trim().strip_prefix("0x").or_else(|| value.trim().strip_prefix("0X")).unwrap_or(value.trim());
            hex_bytes(hex).ok_or_else(|| bad("hex bytes (0x...)"))?
        }
        SqlType::UniqueIdentifier => {
            let b = hex_bytes(&value.trim().replace('-', "")).filter(|b| b.len() == 16).ok_or_else(|| bad("a GUID"))?;
            let order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
            order.iter().map(|&i| b[i]).collect()
        }
        _ => return Err(unsupported()),
    };
    if out.is_empty() {
        return Err(bad("a value with stored bytes (it is empty)"));
    }
    Ok(out)
}

fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// Where a search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchEnd {
    /// Every page after the start was read.
    Done,
    /// The time budget ran out or enough hits were found; go on from this page.
    Before(PageId),
}

/// Calls `hit` with the page, offset and the page's bytes of every occurrence of `needle` in the pages of
/// `source` from `from` on (file by file, page by page; pages the source cannot serve are
/// passed over), until `budget` has passed or `max_hits` were found. Occurrences are found
/// whole inside a page (a value never spans pages).
pub fn find_bytes(
    source: &dyn PageSource,
    needle: &[u8],
    from: Option<PageId>,
    budget: Duration,
    max_hits: usize,
    mut hit: impl FnMut(PageId, usize, &[u8]),
) -> SearchEnd {
    let started = Instant::now();
    let mut found = 0;
    let mut buf = vec![0u8; PAGE_SIZE];
    let Some(&first) = needle.first() else { return SearchEnd::Done };
    for file in source.files() {
        let start = match from {
            Some(f) if f.file > file.file_id => continue,
            Some(f) if f.file == file.file_id => f.page,
            _ => 0,
        };
        for n in start..file.page_count {
            let id = PageId::new(file.file_id, n);
            if found >= max_hits || started.elapsed() > budget {
                return SearchEnd::Before(id);
            }
            if source.read_raw(id, &mut buf).is_err() {
                continue;
            }
            let mut at = 0;
            while let Some(i) = buf[at..].iter().position(|&b| b == first) {
                let offset = at + i;
                if buf[offset..].starts_with(needle) {
                    hit(id, offset, &buf);
                    found += 1;
                }
                at = offset + 1;
            }
        }
    }
    SearchEnd::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_the_bytes_sql_server_stores() {
        assert_eq!(stored_bytes("int", "104999").unwrap(), 104_999i32.to_le_bytes());
        assert_eq!(stored_bytes("int", "-2").unwrap(), [0xfe, 0xff, 0xff, 0xff]);
        assert_eq!(stored_bytes("bigint", "-2").unwrap(), (-2i64).to_le_bytes());
        assert_eq!(stored_bytes("smallint", "300").unwrap(), [0x2c, 0x01]);
        assert_eq!(stored_bytes("tinyint", "255").unwrap(), [255]);
        assert!(stored_bytes("smallint", "40000").is_err() && stored_bytes("int", "2147483648").is_err());
        assert!(stored_bytes("tinyint", "256").is_err() && stored_bytes("int", "x").is_err());
        assert_eq!(stored_bytes("varchar(10)", "FR").unwrap(), b"FR");
        assert!(stored_bytes("varchar", "é").is_err());
        assert_eq!(stored_bytes("nvarchar(60)", "Aé").unwrap(), [0x41, 0, 0xe9, 0]);
        assert_eq!(stored_bytes("varbinary(max)", "0x00Ff").unwrap(), [0, 0xff]);
        assert!(stored_bytes("binary(4)", "0x0").is_err());
        let guid = stored_bytes("uniqueidentifier", "00112233-4455-6677-8899-AABBCCDDEEFF").unwrap();
        assert_eq!(crate::value::guid_text(&guid), "00112233-4455-6677-8899-AABBCCDDEEFF");
        assert!(stored_bytes("datetime", "2024-01-01").is_err() && stored_bytes("nvarchar", "").is_err());
    }

    #[test]
    fn finds_every_occurrence_and_stops_where_asked() {
        use crate::page::tests::build_page;
        let mut pages = Vec::new();
        for n in 0..4u32 {
            let mut p = build_page(PageId::new(1, n), 1, &[b"..abcab.."]);
            p[8000..8003].copy_from_slice(b"abc");
            pages.push(p);
        }
        let reader = crate::source::tests::reader(pages.into_iter().enumerate().map(|(n, p)| (n as u32, p)).collect());
        let source = reader.source();
        let mut hits = Vec::new();
        let end = find_bytes(source, b"abc", None, Duration::from_secs(60), 100, |p, o, _| hits.push((p.page, o)));
        assert_eq!(end, SearchEnd::Done);
        assert_eq!(hits.len(), 8);
        assert_eq!(&hits[..2], &[(0, 98), (0, 8000)]);
        let mut more = Vec::new();
        let end = find_bytes(source, b"abc", Some(PageId::new(1, 2)), Duration::from_secs(60), 2, |p, o, _| {
            more.push((p.page, o))
        });
        assert_eq!((end, more), (SearchEnd::Before(PageId::new(1, 3)), vec![(2, 98), (2, 8000)]));
    }
}
