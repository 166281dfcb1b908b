//! Schema-less recovery: pages found by the allocation unit id in their headers and decoded with
//! a declared layout give the same rows as the catalog-driven reader.

mod common;

use mdfkit::page::PageType;
use mdfkit::recovery::{decode_pages, list_pages};
use mdfkit::rows::RowDecoder;
use mdfkit::scan::Flow;
use mdfkit::types::TypeInfo;
use mdfkit::Database;

fn catalog_rows(db: &Database, table: &str) -> Vec<String> {
    let mut rows: Vec<String> = common::table_rows_text(db, table).iter().map(|r| r.join("|")).collect();
    rows.sort();
    rows
}

fn declared_rows(db: &Database, table: &str, declaration: &[(&str, &str)]) -> Vec<String> {
    let t = db.catalog().find_table(table).unwrap();
    let unit = db.catalog().base().in_row_unit(t.partitions[0].partition_id).unwrap().id;
    let pages: Vec<_> = list_pages(db.reader().source(), |p| {
        p.allocation_unit_id == unit && p.page_type == PageType::Data && p.level == 0
    })
    .into_iter()
    .map(|p| p.id)
    .collect();
    assert!(!pages.is_empty());
    let declared: Vec<(String, TypeInfo)> =
        declaration.iter().map(|(n, t)| (n.to_string(), TypeInfo::parse(t).unwrap())).collect();
    let decoder = RowDecoder::from_declaration(db.reader().clone(), table, &declared).unwrap();
    let mut rows = Vec::new();
    let stats = decode_pages(db.reader(), &decoder, &pages, false, |values, _| {
        rows.push(values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|"));
        Ok(Flow::Continue)
    })
    .unwrap();
    assert!(stats.skipped.is_empty(), "{:?}", stats.skipped);
    rows.sort();
    rows
}

#[test]
fn declared_layouts_read_what_the_catalog_reads() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("mdf/itsligo-sampledbs__pubs.mdf")]).unwrap();
    // pubs' instpubs.sql declarations, in order.
    let authors = [
        ("au_id", "varchar(11)"),
        ("au_lname", "varchar(40)"),
        ("au_fname", "varchar(20)"),
        ("phone", "char(12)"),
        ("address", "varchar(40)"),
        ("city", "varchar(20)"),
        ("state", "char(2)"),
        ("zip", "char(5)"),
        ("contract", "bit"),
    ];
    assert_eq!(declared_rows(&db, "dbo.authors", &authors), catalog_rows(&db, "dbo.authors"));
    let discounts = [
        ("discounttype", "varchar(40)"),
        ("stor_id", "char(4)"),
        ("lowqty", "smallint"),
        ("highqty", "smallint"),
        ("discount", "decimal(4,2)"),
    ];
    let rows = declared_rows(&db, "dbo.discounts", &discounts);
    assert_eq!(rows, catalog_rows(&db, "dbo.discounts"));
    assert!(rows.contains(&"Initial Customer|NULL|NULL|NULL|10.50".to_string()), "{rows:?}");
}
