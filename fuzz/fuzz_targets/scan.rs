//! A whole file: open, then decode every row of every table (text values, CSV and JSON Lines exports and Arrow batches,
//! serial, parallel and in splits; record by record with ghosts, stopping at damage and salvaging past it),
//! then the whole `mdfkit check` (the catalog pass checking pages as it reads them, then the page
//! pass for the rest; the page pass alone where the catalog does not open). Input: sparse pages.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mdfkit::export::{export_table, ExportFormat, ExportOptions, ExportOutput};
use mdfkit::scan::Flow;
use mdfkit::{Database, ScanOptions, TimestampUnit};

fuzz_target!(|data: &[u8]| {
    let Ok(source) = mdfkit_fuzz::sparse_files(data) else { return };
    let source = Arc::new(source);
    let Ok(db) = Database::from_source(source.clone()) else {
        let _ = mdfkit::check::check_pages(source.as_ref(), |_| {});
        return;
    };
    let options = ScanOptions { batch_size: 50, ..ScanOptions::default() };
    for table in db.catalog().tables(true) {
        let _ = db.arrow_schema(&table, None, TimestampUnit::Nanosecond);
        let _ = db.scan(&table).options(&options).batches(|batch| {
            let _ = batch.num_rows();
            Ok(Flow::Continue)
        });
        let _ =
            db.scan(&table).options(&options).timestamps(TimestampUnit::Microsecond).batches(|_| Ok(Flow::Continue));
        let _ = db.scan(&table).options(&options).threads(2).batches(|_| Ok(Flow::Continue));
        // Splits, and one made hostile as a split from elsewhere could be: runs past the file's
        // end, a run of every page number.
        if let Ok(splits) = db.scan(&table).splits(&["fuzz.mdf"], None, 64 << 10) {
            for split in &splits {
                let _ = split.read(&db, 50, |_| Ok(Flow::Continue));
            }
            if let Some(mut split) = splits.into_iter().next() {
                split.pages.extend([(1, u32::MAX - 3, 8), (1, 0, u32::MAX)]);
                let _ = split.read(&db, 50, |_| Ok(Flow::Continue));
            }
        }
        for partition in &table.partitions {
            let Ok(decoder) = db.row_decoder(&table, partition.partition_id, None) else { continue };
            let mut values = Vec::new();
            // Ghosts too; then again salvaging, which takes pages from the IAM chains and goes
            // past damage instead of stopping at it.
            for salvage in [false, true] {
                let _ =
                    db.scan(&table).include_ghosts(true).salvage(salvage).partition_records(partition, |record, _| {
                        let _ = decoder.decode(record, &mut values);
                        for v in &values {
                            let _ = v.to_string();
                        }
                        Ok(Flow::Continue)
                    });
            }
        }
        // A CSV or JSON Lines export, spelled straight from the stored bytes: on the calling
        // thread, or a chunk of lines at a time on the scan's threads. One an input, picked by
        // its length: four a table would cost each input four times a table's decoding.
        let format = if data.len() % 2 == 0 { ExportFormat::Csv } else { ExportFormat::Jsonl };
        let options = ExportOptions { threads: 1 + data.len() / 2 % 2, ..ExportOptions::default() };
        let _ = export_table(&db, &table, format, Box::new(Discarded), &options, |_| {});
    }
    let _ = mdfkit::check::check_on(&db, 1, &|_| {});
});

/// An export's output, thrown away.
struct Discarded;

impl std::io::Write for Discarded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ExportOutput for Discarded {
    fn location(&self) -> &std::path::Path {
        std::path::Path::new("fuzz")
    }

    fn finish(self: Box<Self>) -> mdfkit::Result<u64> {
        Ok(0)
    }
}
