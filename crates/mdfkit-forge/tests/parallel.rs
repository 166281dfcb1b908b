//! The parallel scan on tables of many tasks (the corpus' tables are one task each, read on the
//! calling thread): every row comes back once, the same rows as the serial scan, and a limit
//! stops it at exactly that many rows.

// Only `open` is used here; the round-trip helpers serve the other test files.
#[allow(dead_code)]
mod common;
// The reader's test helpers: only the serial/parallel comparison is used here.
#[allow(dead_code)]
#[path = "../../mdfkit/tests/common/mod.rs"]
mod corpus_common;

use mdfkit::scan::Flow;
use mdfkit::ScanOptions;
use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};

#[test]
fn parallel_scans_of_many_tasks_return_every_row_once() {
    let table = |name: &str, layout: Layout| {
        TableSpec::new("dbo", name, layout, 20_000)
            .column(ColumnSpec::new("ID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(ColumnSpec::new(
                "Name",
                ColType::NVarChar(Some(80)),
                Gen::Length { min: 10, max: 70 },
                Nulls::Every(9),
            ))
            .column(ColumnSpec::new("Amount", ColType::Decimal(12, 2), Gen::Random, Nulls::Every(5)))
    };
    let spec = Spec::new("parallel", Version::V904, 5)
        .table(table("Clustered", Layout::Clustered { key: 0 }))
        .table(table("Heap", Layout::Heap));
    let (db, _) = common::open(&spec);
    for name in ["dbo.Clustered", "dbo.Heap"] {
        let t = db.catalog().find_table(name).unwrap();
        assert!(t.used_pages() > 3 * 64, "{name}: {} pages, want several 64-page tasks", t.used_pages());
        let options = ScanOptions { batch_size: 1000, ..Default::default() };
        let (serial, parallel) = corpus_common::serial_and_parallel_rows(&db, &t, &options, 3);
        assert_eq!(serial.len(), 20_000, "{name}");
        assert_eq!(serial, parallel, "{name}");

        let limited = ScanOptions { batch_size: 700, limit: Some(12_345), ..Default::default() };
        let mut rows = 0;
        db.scan_batches_parallel(&t, &limited, 3, |b| {
            rows += b.num_rows();
            Ok(Flow::Continue)
        })
        .unwrap();
        assert_eq!(rows, 12_345, "{name}: limit");
    }
}
