//! CLR values: hierarchyid paths, geometry and geography (WKB and WKT). The first byte picks
//! the decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::clrtypes::{hierarchyid_levels, hierarchyid_text};
use mdfkit::spatial;

fuzz_target!(|data: &[u8]| {
    let [kind, bytes @ ..] = data else { return };
    match kind % 3 {
        0 => {
            let _ = hierarchyid_levels(bytes);
            let _ = hierarchyid_text(bytes);
        }
        k => {
            let geography = k == 2;
            if let Ok(shape) = spatial::parse(bytes, geography) {
                let _ = shape.wkb();
                let _ = shape.wkt();
            }
            let _ = spatial::to_wkb(bytes, geography);
            let _ = spatial::to_wkt(bytes, geography);
        }
    }
});
