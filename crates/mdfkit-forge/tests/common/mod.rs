//! Forge → mdfkit → compare with the forge's own value model.

use std::sync::Arc;

use mdfkit::scan::Flow;
use mdfkit_forge::{forge, live_rows_text, Layout, Spec};

/// Opens a forged database from memory.
pub fn open(spec: &Spec) -> (mdfkit::Database, Arc<mdfkit::source::DataFiles>) {
    let files = forge(spec).expect("forge");
    let source = Arc::new(
        mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())
            .expect("forged files are data files"),
    );
    let db = mdfkit::Database::from_source(source.clone()).expect("forged database opens");
    (db, source)
}

/// Every table's rows read back equal the generated ones (heaps compared as multisets); the
/// physical check finds nothing.
pub fn assert_round_trip(spec: &Spec) {
    let (db, source) = open(spec);
    for (i, t) in spec.tables.iter().enumerate() {
        let table =
            db.catalog().find_table(&t.qualified_name()).unwrap_or_else(|| panic!("{} missing", t.qualified_name()));
        assert_eq!(table.rows(), t.rows as i64, "{}: catalog row count", t.qualified_name());
        assert_eq!(table.is_heap, t.layout == Layout::Heap);
        let partition = &table.partitions[0];
        let decoder = db.row_decoder(&table, partition.partition_id, None).expect("decoder");
        assert_eq!(decoder.columns().len(), t.columns.len());
        let mut got: Vec<Vec<String>> = Vec::new();
        let mut values = Vec::new();
        db.scan(&table)
            .records(|record, _| {
                decoder.decode(record, &mut values)?;
                got.push(values.iter().map(|v| v.to_string()).collect());
                Ok(Flow::Continue)
            })
            .unwrap_or_else(|e| panic!("{}: {e}", t.qualified_name()));
        let mut expected: Vec<Vec<String>> = live_rows_text(spec, i).collect();
        if t.layout == Layout::Heap {
            got.sort();
            expected.sort();
        }
        assert_eq!(got.len(), expected.len(), "{}: rows", t.qualified_name());
        for (n, (g, e)) in got.iter().zip(&expected).enumerate() {
            for (k, (gv, ev)) in g.iter().zip(e).enumerate() {
                assert_eq!(gv, ev, "{} row {n} column {}", t.qualified_name(), t.columns[k].name);
            }
        }
    }
    let (problems, _) = mdfkit::check::check_pages(source.as_ref(), |_| {});
    assert!(problems.is_empty(), "page problems: {:?}", &problems[..problems.len().min(10)]);
    let (problems, _) = mdfkit::check::check_catalog(&db).expect("catalog check");
    assert!(problems.is_empty(), "catalog problems: {:?}", &problems[..problems.len().min(10)]);
}
