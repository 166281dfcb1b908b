//! Opening a database: data file identification, boot page, the catalog bootstrap, tables,
//! T-SQL of every table and every `sys.*` view. Input: sparse pages (see `src/lib.rs`).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::catalog::views::VIEW_NAMES;
use mdfkit::Database;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = mdfkit_fuzz::sparse_files(data) else { return };
    let Ok(db) = Database::from_source(Arc::new(source)) else { return };
    let catalog = db.catalog();
    let _ = (db.name(), db.missing_files(), db.file_headers());
    for table in catalog.tables(true) {
        let _ = catalog.create_table_sql(&table);
        let _ = catalog.indexes(table.object_id);
    }
    let _ = catalog.find_table("dbo.x");
    for view in VIEW_NAMES {
        let _ = catalog.view(view);
    }
    for name in catalog.base_table_names() {
        let _ = catalog.read_base_table(&name);
    }
});
