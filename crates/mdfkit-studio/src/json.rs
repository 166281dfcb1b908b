//! The JSON spelling of library answers, shared by the studio's `.json` views and the CLI (a
//! page's is the library's own, [`mdfkit::anatomy::PageAnatomy::to_json`]).

use serde_json::Value;

/// A row as a JSON object of its columns in order, each value spelled by
/// [`mdfkit::value::Value::to_json`] (`mdfkit cat --format json`, the studio's rows).
pub fn json_object(columns: &[String], row: &[mdfkit::value::Value]) -> Value {
    Value::Object(columns.iter().zip(row).map(|(c, v)| (c.clone(), v.to_json())).collect())
}
