//! `mdfkit page FILE 1:153`: one page taken apart ([`mdfkit::anatomy`]), printed the way
//! `DBCC PAGE (db, 1, 153, 3)` prints it (header fields, then each slot's record with a memory dump
//! and each column's value), or as JSON.

use std::io::Write;
use std::path::PathBuf;

use mdfkit::anatomy::{self, PageAnatomy, RecordAnatomy};
use mdfkit::Database;

use super::{stdout, Outcome};

/// How `mdfkit page` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PageFormat {
    /// DBCC PAGE's print option 3
    Text,
    /// The anatomy as one JSON object
    Json,
}

pub fn page(files: &[PathBuf], position: Option<u16>, page: &str, format: PageFormat) -> Outcome {
    let id = anatomy::parse_page_id(page)?;
    let source = crate::chain::open_source(files, position)?;
    // The catalog names the page's table and its columns; without it the page is still shown.
    let (page, catalog_note) = match Database::from_source(source.clone()) {
        Ok(db) => (anatomy::read_database_page(&db, id)?, None),
        Err(e) => {
            (anatomy::read_page(source.as_ref(), id, None)?, Some(format!("catalog not read ({e}): no column values")))
        }
    };
    let mut out = stdout();
    match format {
        PageFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &page.to_json()).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
        PageFormat::Text => write_dbcc(&mut out, &page, catalog_note.as_deref())?,
    }
    out.flush()?;
    Ok(())
}

fn write_dbcc(out: &mut impl Write, page: &PageAnatomy, note: Option<&str>) -> std::io::Result<()> {
    writeln!(out, "PAGE: ({})", page.id)?;
    writeln!(out)?;
    writeln!(out, "Verdict: {}", page.verdict_text())?;
    if let Some(owner) = &page.owner_unit {
        writeln!(out, "Owner: {} (allocation unit {})", owner.describe(), owner.unit.id)?;
    }
    for line in [note, page.error.as_deref()].into_iter().flatten() {
        writeln!(out, "Note: {line}")?;
    }
    writeln!(out)?;
    writeln!(out, "PAGE HEADER:")?;
    writeln!(out)?;
    for f in &page.header_fields {
        let place = if f.len > 0 { format!("[{} +{}]", f.offset, f.len) } else { String::new() };
        writeln!(out, "{:<22} = {:<28} {:<10} {}", page.field_name(f), page.field_value(f, None), place, f.meaning)?;
    }
    if let Some((at, len)) = page.free_space {
        writeln!(out, "{:<22} = {len} bytes at offset {at}", "free space")?;
    }
    if !page.compression_info.is_empty() {
        writeln!(out)?;
        writeln!(out, "COMPRESSION INFO (PAGE compression: header, anchor record, dictionary):")?;
        writeln!(out)?;
        for f in &page.compression_info {
            let (name, value) = (page.field_name(f), page.field_value(f, None));
            writeln!(out, "  [{:>4} +{:<4}] {name:<22} {value}", f.offset, f.len)?;
        }
    }
    for r in &page.records {
        write_record(out, page, r)?;
    }
    Ok(())
}

fn write_record(out: &mut impl Write, page: &PageAnatomy, r: &RecordAnatomy) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Slot {} Offset 0x{:x} Length {}", r.slot, r.offset, r.len)?;
    writeln!(out)?;
    if let Some(t) = r.record_type {
        writeln!(out, "Record Type = {}", anatomy::record_type_name(t))?;
    }
    if let Some(e) = page.record_error(r) {
        writeln!(out, "Not taken apart: {e}")?;
    }
    let bytes = page.bytes.get(r.offset..r.offset + r.len).unwrap_or_default();
    for (i, chunk) in bytes.chunks(20).enumerate() {
        let words: Vec<String> =
            chunk.chunks(4).map(|w| w.iter().map(|b| format!("{b:02x}")).collect::<String>()).collect();
        let text: String = chunk.iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
        writeln!(out, "{:016X}:   {:<44} {text}", i * 20, words.join(" "))?;
    }
    writeln!(out)?;
    for f in page.record_fields(r) {
        let (name, value) = (page.field_name(f), page.field_value(f, Some(r)));
        writeln!(out, "  [{:>4} +{:<4}] {:<22} {value}", f.offset - r.offset, f.len, name)?;
    }
    if let Some((p, s)) = r.forwarded_to {
        writeln!(out, "Forwarded to page {p} slot {s}")?;
    }
    for (n, (c, layout)) in page.record_columns(r).iter().zip(&page.columns).enumerate() {
        let (offset, len) = c.span.map_or((0, 0), |(o, l)| (o - r.offset, l));
        writeln!(out)?;
        writeln!(out, "Slot {} Column {} Offset 0x{offset:x} Length {len}", r.slot, n + 1)?;
        match &c.value {
            Ok(v) => writeln!(out, "{} = {v}", layout.name)?,
            Err(e) => writeln!(out, "{} = (not decoded: {e})", layout.name)?,
        }
    }
    Ok(())
}
