//! Backup containers: MTF (`TAPE`) and compressed (`MSSQLBAK`) backups, their set headers, the
//! page index, every page served, and the database opened from it.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::backup::BackupMedia;
use mdfkit::page::PAGE_SIZE;
use mdfkit::source::PageSource;
use mdfkit::Database;

fuzz_target!(|data: &[u8]| {
    let Ok(media) = BackupMedia::from_bytes("fuzz.bak", data.to_vec()) else { return };
    for set in media.sets() {
        let _ = format!("{set:?}");
    }
    let _ = (media.default_position(), media.missing_stripes());
    let Ok(pages) = media.into_pages_with_stripes_missing(None) else { return };
    let _ = (pages.file_list(), pages.backup_set(), pages.page_count(), pages.backup_sets());
    let mut buf = vec![0u8; PAGE_SIZE];
    let files = pages.files().to_vec();
    for file in &files {
        for page in 0..file.page_count.min(4096) {
            let id = mdfkit::PageId::new(file.file_id, page);
            let _ = pages.page_location(id);
            let _ = pages.read_raw(id, &mut buf);
        }
    }
    if let Ok(db) = Database::from_source(Arc::new(pages)) {
        for table in db.catalog().tables(false) {
            let _ = db.catalog().create_table_sql(&table);
        }
    }
});
