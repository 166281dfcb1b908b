//! Stored `xml` values (binary XML) to text; output bounded by `output_limit`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdfkit::xmlbin::{decode_xml, output_limit};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = decode_xml(data) {
        assert!(text.len() <= output_limit(data.len()) + 64 * 1024, "output past its limit");
    }
});
