//! mdfkit studio: a local web studio over the `mdfkit` library (issue 17). The JSON it serves is
//! built in [`json`], which the CLI's `--format json` reuses, so both give the same answers.
#![forbid(unsafe_code)]

pub mod json;
