//! The JSON spelling of library answers, shared by the studio's `.json` views and the CLI.

use mdfkit::anatomy::{ColumnAnatomy, ColumnLayout, Field, PageAnatomy, RecordAnatomy};
use serde_json::{json, Value};

/// A row as a JSON object of its columns in order, each value spelled by
/// [`mdfkit::value::Value::to_json`] (`mdfkit cat --format json`, the studio's rows).
pub fn json_object(columns: &[String], row: &[mdfkit::value::Value]) -> Value {
    Value::Object(columns.iter().zip(row).map(|(c, v)| (c.clone(), v.to_json())).collect())
}

/// Field `f` of page `p`; `r`: the record holding it.
fn field(p: &PageAnatomy, f: &Field, r: Option<&RecordAnatomy>) -> Value {
    json!({
        "offset": f.offset,
        "length": f.len,
        "part": f.part.name(),
        "name": p.field_name(f),
        "meaning": f.meaning,
        "value": p.field_value(f, r),
    })
}

fn column(c: &ColumnAnatomy, layout: &ColumnLayout) -> Value {
    json!({
        "name": layout.name,
        "type": layout.type_name,
        "storage": layout.storage,
        "null_bit": layout.null_bit,
        "is_null": c.is_null,
        "offset": c.span.map(|s| s.0),
        "length": c.span.map(|s| s.1),
        "off_row": c.off_row,
        "links": c.links.iter().map(|(p, s)| format!("{p}:{s}")).collect::<Vec<_>>(),
        "value": c.value.as_ref().ok().map(ToString::to_string),
        "error": c.value.as_ref().err(),
    })
}

/// One record of page anatomy `p`.
pub fn record(p: &PageAnatomy, r: &RecordAnatomy) -> Value {
    json!({
        "slot": r.slot,
        "offset": r.offset,
        "length": r.len,
        "record_type": r.record_type.map(mdfkit::anatomy::record_type_name),
        "fields": r.fields.iter().map(|f| field(p, f, Some(r))).collect::<Vec<_>>(),
        "columns": r.columns.iter().zip(&p.columns).map(|(c, layout)| column(c, layout)).collect::<Vec<_>>(),
        "forwarded_to": r.forwarded_to.map(|(p, s)| format!("{p}:{s}")),
        "error": r.error,
    })
}

/// A page taken apart: `mdfkit page --format json` and the studio's `/page/1:153.json`.
pub fn page(p: &PageAnatomy) -> Value {
    let h = p.header.as_ref();
    json!({
        "page": p.id.to_string(),
        "verdict": p.verdict_text(),
        "damaged": p.verdict.is_damaged(),
        "owner": p.owner,
        "error": p.error,
        "type": h.map(|h| h.page_type.name()),
        "level": h.map(|h| h.level),
        "allocation_unit": h.map(|h| h.allocation_unit_id()),
        "slots": h.map(|h| h.slot_count),
        "free_bytes": h.map(|h| h.free_count),
        "prev": h.map(|h| h.prev_page.to_string()),
        "next": h.map(|h| h.next_page.to_string()),
        "header": p.header_fields.iter().map(|f| field(p, f, None)).collect::<Vec<_>>(),
        "free_space": p.free_space.map(|(o, l)| json!({"offset": o, "length": l})),
        "slot_array": p.slot_array().map(|f| field(p, &f, None)).collect::<Vec<_>>(),
        "records": p.records.iter().map(|r| record(p, r)).collect::<Vec<_>>(),
    })
}
