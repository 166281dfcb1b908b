//! The text the studio takes from a URL (`mdfkit studio`; `mdfkit page` and `mdfkit cat` take the
//! same forms from the command line): page ids (`/page/1:153`), keyset cursors
//! (`/rows/dbo.Orders?after=1:1776:7`, `/record/1:1776:7`), table names (`/table/[dbo].[Orders]`),
//! download names (`/download/dbo.Orders.parquet`), searched values with their type
//! (`/search?type=int&value=42`, split at the first NUL here) and row filters
//! (`/rows/dbo.Orders?where=Qty>5`, `mdfkit cat --where "Qty > 5"`) and compare cursors
//! (`/compare/dbo.Orders?after=other:1:2:3`, `mdfkit compare --after-row`). Must never panic; what parses prints back
//! to text that parses to the same value, and every part lies inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::anatomy::parse_page_id;
use mdfkit::compare::After;
use mdfkit::catalog::model::split_table_name;
use mdfkit::export::split_output_name;
use mdfkit::filter::Filter;
use mdfkit::scan::ScanPosition;
use mdfkit::search::stored_bytes;

fuzz_target!(|data: &[u8]| {
    // Axum hands the handlers percent-decoded UTF-8; anything else is refused before them.
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(id) = parse_page_id(text) {
        assert_eq!(parse_page_id(&id.to_string()).ok(), Some(id), "{text:?}");
    }
    if let Ok(position) = text.parse::<ScanPosition>() {
        assert_eq!(position.to_string().parse::<ScanPosition>().ok(), Some(position), "{text:?}");
    }
    if let Some((sql_type, value)) = text.split_once('\0') {
        if let Ok(bytes) = stored_bytes(sql_type, value) {
            assert!(!bytes.is_empty() && bytes.len() <= 2 * value.len() + 16, "{text:?}");
        }
    }
    if let Ok(after) = text.parse::<After>() {
        assert_eq!(after.to_string().parse::<After>().ok(), Some(after), "{text:?}");
    }
    if let Ok(filter) = Filter::parse(text) {
        assert!(!filter.column.is_empty() && filter.column.len() + filter.value.len() <= text.len(), "{text:?}");
        assert_eq!(Filter::parse(&filter.to_string()).ok(), Some(filter.clone()), "{text:?}");
        filter.matches(text);
    }
    let (schema, table) = split_table_name(text);
    assert!(schema.map_or(0, str::len) + table.len() <= text.len(), "{text:?}");
    if let Some((table, format)) = split_output_name(text) {
        assert!(!table.is_empty());
        assert_eq!(format!("{table}.{}", format.extension()), text);
    }
});
