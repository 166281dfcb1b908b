//! The file header page (page 0 of every data file).
//!
//! One current record, found through slot 0 (older copies of the record stay behind in the page's
//! free space). The record has 4 bytes of (zero) fixed data and keeps every field in a
//! variable-length column:
//!
//! | var # | field            | type  | notes                                                  |
//! |------:|------------------|-------|--------------------------------------------------------|
//! | 0     | binding id       | GUID  | the database's id, shared by all its files and backups |
//! | 2     | file id          | i16   |                                                        |
//! | 3     | filegroup id     | i16   |                                                        |
//! | 4     | size             | i32   | pages                                                  |
//! | 5     | max size         | i32   | pages, -1 = unlimited                                  |
//! | 6     | growth           | i32   | pages, or percent when status has 0x100000             |
//! | 13    | status           | i32   |                                                        |
//! | 27    | logical name     | UTF-16| absent in headers written by SQL Server 2000 (23 columns) |
//!
//! The record has 47 columns in 655-705, 49 in 706-852, 56 in 904 and 66 in 998. The physical
//! file name is not here: it is in `sys.sysprufiles`.
//!
//! Sources: OrcaMDF's file header reader and the `DBCC FILEHEADER` field order; positions checked
//! on all 31 corpus data files (size equals file length / 8192 in each; the binding id equals the
//! database GUID in the corpus backups' headers).

use crate::bytes::{read_i16, read_i32, utf16le};
use crate::error::{Error, Result};
use crate::page::{Page, PageType};
use crate::record::Record;

const PERCENT_GROWTH: i32 = 0x100000;

/// The fields of a file header page mdfkit uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// Variable column 0: the database's GUID, shared by all its files and backups.
    pub binding_id: [u8; 16],
    /// Variable column 2: the file id, as in the addresses of its pages.
    pub file_id: i16,
    /// Variable column 3: the filegroup the file belongs to (1 is PRIMARY).
    pub filegroup_id: i16,
    /// Variable column 4: the file's size in pages.
    pub size_pages: i32,
    /// Variable column 5: the maximum size in pages, -1 for unlimited.
    pub max_size_pages: i32,
    /// Variable column 6: growth in pages, or in percent when status has 0x100000.
    pub growth: i32,
    /// Variable column 13: status bits (0x100000 growth in percent).
    pub status: i32,
    /// Variable column 27: the logical file name; `None` in headers written by SQL Server 2000.
    pub logical_name: Option<String>,
}

impl FileHeader {
    /// Decodes page 0's current record, refusing a page of another type by name.
    pub fn parse(page: &Page) -> Result<Self> {
        if page.header().page_type != PageType::FileHeader {
            return Err(Error::not_a_database(format!(
                "page 0 is a {} page, not a file header",
                page.header().page_type.name()
            ))
            .at_page(page.id()));
        }
        let bytes =
            page.slot_bytes(0)?.ok_or_else(|| Error::corrupt("file header page has no record").at_page(page.id()))?;
        let record = Record::parse(bytes).map_err(|e| e.at_page(page.id()).at_slot(0))?;
        let var = |i: usize| -> Result<Option<&[u8]>> {
            Ok(record.var(i).map_err(|e| e.at_page(page.id()))?.map(|v| v.bytes))
        };
        let int = |i: usize| -> Result<i32> {
            let b = var(i)?.unwrap_or_default();
            Ok(read_i32(b, 0).or_else(|| read_i16(b, 0).map(i32::from)).unwrap_or(0))
        };
        Ok(FileHeader {
            binding_id: var(0)?.and_then(|b| b.try_into().ok()).unwrap_or_default(),
            file_id: int(2)? as i16,
            filegroup_id: int(3)? as i16,
            size_pages: int(4)?,
            max_size_pages: int(5)?,
            growth: int(6)?,
            status: int(13)?,
            logical_name: var(27)?.map(utf16le),
        })
    }

    /// Growth as SQL Server shows it: `10%` or `8 MB`-style page counts.
    pub fn growth_is_percent(&self) -> bool {
        self.status & PERCENT_GROWTH != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::tests::build_page;
    use crate::page::PageId;
    use crate::record::tests::build_record;

    #[test]
    fn reads_the_variable_fields() {
        let guid = [7u8; 16];
        let name: Vec<u8> = "shop_data".encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let mut vars: Vec<Vec<u8>> = vec![Vec::new(); 28];
        vars[0] = guid.to_vec();
        vars[2] = 3i16.to_le_bytes().to_vec();
        vars[3] = 2i16.to_le_bytes().to_vec();
        vars[4] = 1024i32.to_le_bytes().to_vec();
        vars[5] = (-1i32).to_le_bytes().to_vec();
        vars[6] = 10i32.to_le_bytes().to_vec();
        vars[13] = PERCENT_GROWTH.to_le_bytes().to_vec();
        vars[27] = name;
        let refs: Vec<&[u8]> = vars.iter().map(Vec::as_slice).collect();
        let record = build_record(&[0; 4], 28, &[], &refs);
        let page = build_page(PageId::new(3, 0), 15, &[&record]);
        let header = FileHeader::parse(&Page::new(page.into_boxed_slice(), PageId::new(3, 0)).unwrap()).unwrap();
        assert_eq!(header.binding_id, guid);
        assert_eq!((header.file_id, header.filegroup_id, header.size_pages, header.max_size_pages), (3, 2, 1024, -1));
        assert!(header.growth_is_percent());
        assert_eq!(header.logical_name.as_deref(), Some("shop_data"));
    }
}
