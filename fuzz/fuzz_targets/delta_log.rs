//! A Delta table's log as an append reads it (`mdfkit::export::delta`): a commit's JSON lines and
//! a checkpoint's Parquet file made of the input. It must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mdfkit::export::delta::fuzz_log(data));
