//! `mdfkit info`: [`mdfkit::Database::info`] as labelled lines, or one record.

use std::io::Write;
use std::path::PathBuf;

use mdfkit::value::Value;

use super::backups::{backup_set_fields, write_backup_header};
use super::{stdout, Outcome};
use crate::output::{write_rows, Format};

/// `mdfkit info`: [`mdfkit::Database::info`], as labelled lines and the files (a table), or one record.
pub fn info(files: &[PathBuf], position: Option<u16>, format: Format) -> Outcome {
    let info = match crate::chain::open(files, position) {
        Ok(db) => db.info()?,
        Err(e) => {
            // A backup set's header reads where the database inside does not (a differential
            // backup, a stripe missing): show it before the reason.
            if let (Ok(Some(set)), Format::Table) = (mdfkit::info::backup_set_of(files, position), format) {
                let mut out = stdout();
                write_backup_header(&mut out, &set)?;
                out.flush()?;
            }
            return Err(e.into());
        }
    };
    let rows = vec![
        ("database", Value::text(&info.name)),
        (
            "version",
            Value::text(format!(
                "{} ({}), created by {} ({})",
                info.product, info.version, info.create_product, info.create_version
            )),
        ),
        ("compatibility_level", Value::Int(info.compatibility_level.into())),
        ("collation", Value::text(&info.collation)),
        ("page_verify", Value::text(info.page_verify)),
        ("recovery_model", Value::text(info.recovery_model)),
        ("created", info.created.clone()),
        ("pages_in_files", Value::Int(info.pages_in_files)),
        ("pages_allocated", Value::Int(info.pages_allocated)),
        ("pages_used", Value::Int(info.pages_used)),
        ("user_tables", Value::Int(info.user_tables as i64)),
        (
            "missing_files",
            Value::text(
                info.missing_files
                    .iter()
                    .map(|m| format!("file id {} {} ({})", m.file_id, m.logical_name, m.physical_name))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ),
    ];
    let mut out = stdout();
    match format {
        Format::Table => {
            if let Some(set) = &info.backup {
                write_backup_header(&mut out, set)?;
            }
            for (k, v) in &rows {
                writeln!(out, "{:<20} {v}", format!("{}:", k.replace('_', " ")))?;
            }
            writeln!(out, "\nfiles:")?;
            write_rows(&mut out, format, &info.files.columns, &info.files.rows)?;
        }
        _ => {
            let mut rows = rows;
            if let Some(set) = &info.backup {
                rows.extend(backup_set_fields(set));
                rows.push((
                    "backup_files",
                    Value::text(
                        set.files
                            .iter()
                            .map(|f| format!("{}:{}:{}", f.file_id, f.logical_name, f.size_bytes))
                            .collect::<Vec<_>>()
                            .join(";"),
                    ),
                ));
            }
            let mut columns: Vec<String> = rows.iter().map(|(k, _)| k.to_string()).collect();
            let mut values: Vec<Value> = rows.into_iter().map(|(_, v)| v).collect();
            let name = info.files.columns.iter().position(|c| c == "name");
            columns.push("files".into());
            values.push(Value::text(
                info.files
                    .rows
                    .iter()
                    .map(|r| name.and_then(|i| r.get(i)).map(|v| v.to_string()).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(";"),
            ));
            write_rows(&mut out, format, &columns, &[values])?;
        }
    }
    out.flush()?;
    Ok(())
}
