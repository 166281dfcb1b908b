//! Page anatomy on the real corpus: every header field agrees with the page list `mdfkit pages`
//! prints (`recovery::list_pages`, its own header reader), every record's parts add up to its
//! length, and each column's value equals the row the table scan returns from the same slot.

mod common;

use mdfkit::anatomy::{read_database_page, Part};
use mdfkit::recovery::list_pages;
use mdfkit::scan::Flow;
use mdfkit::value::Value;
use mdfkit::{Database, PageId};
use std::collections::HashMap;

/// Data pages taken apart per file (the whole file is walked for headers; decoding is slower).
const DATA_PAGES_PER_FILE: usize = 150;

#[test]
fn anatomy_agrees_with_the_page_list_and_the_scan() {
    let Some(dir) = common::corpus_dir() else { return };
    let rows = common::manifest(&dir.join("MANIFEST.tsv"));
    let (mut pages_checked, mut records_checked, mut values_checked, mut links_followed) = (0, 0, 0, 0);
    for row in rows.iter().filter(|r| r.kind == "mdf") {
        let path = dir.join(&row.file);
        let Ok(db) = Database::open(&[&path]) else { continue };
        let field = |a: &mdfkit::anatomy::PageAnatomy, name: &str| {
            let f = a.header_fields.iter().find(|f| a.field_name(f) == name);
            f.map(|f| a.field_value(f, None).into_owned()).unwrap_or_default()
        };
        let summaries = list_pages(db.reader().source(), |_| true);
        // The scan's rows of every user table, by where they are stored.
        let mut scanned: HashMap<(PageId, u16), Vec<String>> = HashMap::new();
        for table in db.catalog().tables(false) {
            let Ok(decoder) = table
                .partitions
                .first()
                .map_or(Err(()), |p| db.row_decoder(&table, p.partition_id, None).map_err(|_| ()))
            else {
                continue;
            };
            let mut values = Vec::new();
            let _ = db.scan(&table).records(|record, at| {
                decoder.decode(record, &mut values)?;
                scanned.insert((at.page, at.slot), values.iter().map(Value::to_string).collect());
                Ok(Flow::Continue)
            });
        }
        let mut data_pages = 0;
        for s in &summaries {
            let is_data = s.page_type == mdfkit::page::PageType::Data;
            if is_data {
                data_pages += 1;
                if data_pages > DATA_PAGES_PER_FILE {
                    continue;
                }
            } else if pages_checked % 7 != 0 {
                pages_checked += 1;
                continue;
            }
            let a = read_database_page(&db, s.id).unwrap_or_else(|e| panic!("{} {}: {e}", row.file, s.id));
            pages_checked += 1;
            let at = format!("{} page {}", row.file, s.id);
            assert_eq!(field(&a, "m_pageId"), s.id.to_string(), "{at}");
            assert_eq!(field(&a, "m_type"), format!("{} ({})", a.bytes[1], s.page_type.name()), "{at}");
            assert_eq!(field(&a, "m_level"), s.level.to_string(), "{at}");
            assert_eq!(field(&a, "Metadata: AllocUnitId"), s.allocation_unit_id.to_string(), "{at}");
            assert_eq!(field(&a, "m_slotCnt"), s.slots.to_string(), "{at}");
            assert_eq!(field(&a, "m_freeCnt"), s.free_bytes.to_string(), "{at}");
            assert_eq!(field(&a, "m_prevPage"), s.prev.to_string(), "{at}");
            assert_eq!(field(&a, "m_nextPage"), s.next.to_string(), "{at}");
            let verdict = a.verdict_text();
            assert!(verdict == s.status || verdict.starts_with(&s.status), "{at}: {verdict} vs {}", s.status);
            assert_eq!(a.records.len(), usize::from(s.slots), "{at}");
            for r in &a.records {
                let mut end = r.offset;
                for f in a.record_fields(r) {
                    assert_eq!(f.offset, end, "{at} slot {}: {} starts at {}", r.slot, a.field_name(f), f.offset);
                    end += f.len;
                }
                assert_eq!(end - r.offset, r.len, "{at} slot {}: parts add up to the record's length", r.slot);
                if a.record_fields(r).is_empty() {
                    continue;
                }
                records_checked += 1;
                assert!(
                    a.record_fields(r).iter().all(|f| f.part != Part::Undecoded) || !is_data || s.level > 0,
                    "{at} slot {}",
                    r.slot
                );
                if let Some(expected) = scanned.get(&(s.id, r.slot)) {
                    let got: Vec<String> = a
                        .record_columns(r)
                        .iter()
                        .map(|c| c.value.as_ref().map_or_else(|e| e.to_string(), Value::to_string))
                        .collect();
                    assert!(
                        &got == expected,
                        "{at} slot {}: {:.300} != {:.300}",
                        r.slot,
                        format!("{got:?}"),
                        format!("{expected:?}")
                    );
                    values_checked += got.len();
                    for (c, layout) in a.record_columns(r).iter().zip(&a.columns) {
                        let name = &layout.name;
                        if let Some((o, len)) = c.span {
                            assert!(o >= r.offset && o + len <= r.offset + r.len, "{at} slot {} {name}", r.slot);
                        }
                        // An off-row value's links lead to LOB or row-overflow records.
                        if c.off_row {
                            assert!(!c.links.is_empty(), "{at} slot {} {name}: no links", r.slot);
                            let (page, slot) = c.links[0];
                            let target = read_database_page(&db, page).unwrap();
                            let record = target.records.iter().find(|t| t.slot == slot).unwrap();
                            assert_eq!(
                                record.record_type,
                                Some(mdfkit::record::RecordType::BlobFragment),
                                "{at} {name}"
                            );
                            links_followed += 1;
                        }
                    }
                }
            }
        }
    }
    println!("{pages_checked} pages, {records_checked} records, {values_checked} values checked, {links_followed} off-row links followed");
    assert!(pages_checked > 1000 && records_checked > 10_000 && values_checked > 10_000 && links_followed > 10);
}
