//! `mdfkit search FILE --type int --value 104999`: every page and offset where a value's stored
//! bytes occur, allocated or not ([`mdfkit::search`]), with what each page's header says it is.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mdfkit::page::PageHeader;
use mdfkit::search::{find_bytes, stored_bytes, SearchEnd};
use mdfkit::value::Value;

use super::{stdout, Outcome};
use crate::output::{write_rows, Format};

pub fn search(files: &[PathBuf], position: Option<u16>, sql_type: &str, value: &str, format: Format) -> Outcome {
    let needle = stored_bytes(sql_type, value)?;
    let source = crate::chain::open_source(files, position)?;
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let end = find_bytes(source.as_ref(), &needle, None, Duration::MAX, usize::MAX, |page, offset, bytes| {
        // The header says what the page is; one that does not parse leaves those columns NULL.
        let header = PageHeader::parse(bytes).ok();
        rows.push(vec![
            Value::text(page.to_string()),
            Value::Int(offset as i64),
            header.as_ref().map_or(Value::Null, |h| Value::text(h.page_type.name())),
            header.as_ref().map_or(Value::Null, |h| Value::Int(h.allocation_unit_id())),
        ])
    });
    debug_assert_eq!(end, SearchEnd::Done, "no budget: every page is read");
    let columns: Vec<String> =
        ["page", "offset", "page_type", "allocation_unit"].iter().map(|s| s.to_string()).collect();
    let mut out = stdout();
    write_rows(&mut out, format, &columns, &rows)?;
    out.flush()?;
    Ok(())
}
