//! Rendering rows: an aligned table for people, CSV / JSON / JSON Lines for scripts.

use mdfkit_studio::json::json_object;
use std::io::{self, Write};

use clap::ValueEnum;
use mdfkit::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for reading
    Table,
    /// Comma-separated values with a header row
    Csv,
    /// One JSON array of objects
    Json,
    /// One JSON object per line
    Jsonl,
}

/// Writes rows in the chosen format.
pub fn write_rows(out: &mut impl Write, format: Format, columns: &[String], rows: &[Vec<Value>]) -> io::Result<()> {
    match format {
        Format::Table => write_table(out, columns, rows),
        Format::Csv => {
            writeln!(out, "{}", columns.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","))?;
            write_rows_without_header(out, rows)
        }
        Format::Json => {
            let array: Vec<serde_json::Value> = rows.iter().map(|r| json_object(columns, r)).collect();
            serde_json::to_writer_pretty(&mut *out, &array)?;
            writeln!(out)
        }
        Format::Jsonl => {
            for row in rows {
                serde_json::to_writer(&mut *out, &json_object(columns, row))?;
                writeln!(out)?;
            }
            Ok(())
        }
    }
}

/// CSV rows only, for the batches after the first of a streamed output. NULL is an empty field.
pub fn write_rows_without_header(out: &mut impl Write, rows: &[Vec<Value>]) -> io::Result<()> {
    for row in rows {
        let fields: Vec<String> =
            row.iter().map(|v| if v.is_null() { String::new() } else { csv_field(&v.to_string()) }).collect();
        writeln!(out, "{}", fields.join(","))?;
    }
    Ok(())
}

fn write_table(out: &mut impl Write, columns: &[String], rows: &[Vec<Value>]) -> io::Result<()> {
    let cells: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|v| one_line(&v.to_string())).collect()).collect();
    let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let right = |i: usize| rows.iter().all(|r| matches!(r.get(i), Some(Value::Int(_)) | Some(Value::Null)));
    let line = |out: &mut dyn Write, fields: &[String], align_numbers: bool| -> io::Result<()> {
        let parts: Vec<String> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if align_numbers && right(i) {
                    format!("{f:>w$}", w = widths[i])
                } else {
                    format!("{f:<w$}", w = widths[i])
                }
            })
            .collect();
        writeln!(out, "{}", parts.join("  ").trim_end())
    };
    line(out, columns, false)?;
    writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "))?;
    for row in &cells {
        line(out, row, true)?;
    }
    Ok(())
}

/// Table cells stay on one line: definitions with newlines are shown with `↵`.
fn one_line(s: &str) -> String {
    s.replace("\r\n", "↵").replace(['\n', '\r'], "↵")
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: Format) -> String {
        let columns = vec!["id".to_string(), "name".to_string()];
        let rows = vec![vec![Value::Int(7), Value::text("a,\"b\"")], vec![Value::Int(12), Value::Null]];
        let mut out = Vec::new();
        write_rows(&mut out, format, &columns, &rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_each_format() {
        assert_eq!(render(Format::Table), "id  name\n--  -----\n 7  a,\"b\"\n12  NULL\n");
        assert_eq!(render(Format::Csv), "id,name\n7,\"a,\"\"b\"\"\"\n12,\n");
        assert_eq!(render(Format::Jsonl), "{\"id\":7,\"name\":\"a,\\\"b\\\"\"}\n{\"id\":12,\"name\":null}\n");
    }
}
