//! Damaged catalogs never panic or hang: deterministic random damage to the pages read at open
//! (bytes flipped, then the checksum recomputed so the damage reaches the parsers, as a hostile
//! file would), then open, list tables, render every view and every table's DDL.

mod common;

use common::Rng;

use std::sync::Arc;

use mdfkit::catalog::views::VIEW_NAMES;
use mdfkit::page::protection::page_checksum;
use mdfkit::page::{FLAG_CHECKSUM, PAGE_SIZE};
use mdfkit::source::DataFiles;
use mdfkit::Database;

/// Pages worth damaging: the file header, the boot page and the system base tables' data pages
/// (object ids below 100).
fn catalog_pages(bytes: &[u8]) -> Vec<usize> {
    (0..bytes.len() / PAGE_SIZE)
        .filter(|&p| {
            let page = &bytes[p * PAGE_SIZE..(p + 1) * PAGE_SIZE];
            let object = u32::from_le_bytes(page[24..28].try_into().unwrap());
            page[0] == 1 && (p == 0 || p == 9 || (page[1] == 1 && object < 100))
        })
        .collect()
}

fn exercise(db: &Database) {
    let catalog = db.catalog();
    for t in catalog.tables(true) {
        let _ = catalog.create_table_sql(&t);
    }
    for view in VIEW_NAMES {
        let _ = catalog.view(view);
    }
}

#[test]
fn random_damage_to_catalog_pages_gives_errors_not_panics() {
    let Some(dir) = common::corpus_dir() else { return };
    let files = [
        "mdf/itsligo-sampledbs__pubs.mdf",
        "mdf/chakarview-sec-hu__app_data-ca68503d-database.mdf",
        "mdf/adamhrth-wapp-assignment__educationdb.mdf",
        "mdf/nicklyb-wapp__educonnectdatabase.mdf",
        "mdf/xxxnemesis4xxx-sql_server__northwnd.mdf",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut opened, mut refused) = (0, 0);
    for file in files {
        let clean = std::fs::read(dir.join(file)).unwrap();
        let targets = catalog_pages(&clean);
        assert!(targets.len() > 10, "{file}: too few catalog pages found");
        for _ in 0..60 {
            let mut bytes = clean.clone();
            let page = targets[rng.below(targets.len())];
            let p = &mut bytes[page * PAGE_SIZE..(page + 1) * PAGE_SIZE];
            for _ in 0..1 + rng.below(12) {
                let at = rng.below(PAGE_SIZE);
                p[at] = rng.next() as u8;
            }
            if u16::from_le_bytes([p[4], p[5]]) & FLAG_CHECKSUM != 0 {
                let checksum = page_checksum(p);
                p[60..64].copy_from_slice(&checksum.to_le_bytes());
            }
            let opened_db = DataFiles::from_memory(vec![(file.to_string(), bytes)])
                .and_then(|source| Database::from_source(Arc::new(source)));
            match opened_db {
                Ok(db) => {
                    exercise(&db);
                    opened += 1;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
            }
        }
    }
    println!("hostile: {opened} damaged copies opened, {refused} refused with an error, 0 panics");
    assert!(refused > 0, "no damage was ever detected: the test does not reach the parsers");
}
