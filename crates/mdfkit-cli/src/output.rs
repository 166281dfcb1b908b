//! Rendering rows: an aligned table for people, CSV / JSON / JSON Lines for scripts, spelled by
//! the library's writers (the same bytes as `export`).

use mdfkit_studio::json::json_object;
use std::io::{self, Write};

use clap::ValueEnum;
use mdfkit::export::{write_csv_row, write_json_object};
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
            let mut header = String::new();
            write_csv_row(&mut header, columns.iter().map(|c| Some(c.as_str())));
            out.write_all(header.as_bytes())?;
            write_rows_without_header(out, rows)
        }
        Format::Json => {
            let array: Vec<serde_json::Value> = rows.iter().map(|r| json_object(columns, r)).collect();
            serde_json::to_writer_pretty(&mut *out, &array)?;
            writeln!(out)
        }
        Format::Jsonl => {
            let mut line = String::new();
            for row in rows {
                line.clear();
                write_json_object(&mut line, columns, row);
                out.write_all(line.as_bytes())?;
            }
            Ok(())
        }
    }
}

/// CSV rows only, for the batches after the first of a streamed output. NULL is an empty field.
pub fn write_rows_without_header(out: &mut impl Write, rows: &[Vec<Value>]) -> io::Result<()> {
    let mut line = String::new();
    for row in rows {
        let spelled: Vec<Option<String>> = row.iter().map(|v| (!v.is_null()).then(|| v.to_string())).collect();
        line.clear();
        write_csv_row(&mut line, spelled.iter().map(Option::as_deref));
        out.write_all(line.as_bytes())?;
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
