//! The backup extent locator (`mdfkit::backup::extents`): a data stream that follows its GAM,
//! with page headers replaced by whatever the input says. It must never panic, and every page
//! whose header was left alone must be placed at its own address (`extents::self_check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = mdfkit::backup::extents::self_check(data) {
        panic!("{e}");
    }
});
