//! How a backup set's header is shown: by `info`, and its dates by `mdfkit backups` (`chain.rs`).

use std::io::{self, Write};

use mdfkit::backup::{BackupSet, FileKind};
use mdfkit::value::Value;

use crate::output::{write_rows, Format};

pub(crate) fn date_value(d: Option<mdfkit::backup::BackupDate>) -> Value {
    d.map_or(Value::Null, |d| Value::text(d.to_string()))
}

/// The header fields of one backup set, as name / value pairs.
pub(super) fn backup_set_fields(s: &BackupSet) -> Vec<(&'static str, Value)> {
    let lsn = |l: Option<mdfkit::backup::Lsn>| l.map_or(Value::Null, |l| Value::text(l.to_string()));
    vec![
        ("backup_position", Value::Int(s.position.into())),
        ("backup_type", Value::text(s.backup_type.name())),
        ("backup_name", Value::text(&s.name)),
        ("backup_description", Value::text(&s.description)),
        ("backup_start", date_value(s.start)),
        ("backup_finish", date_value(s.finish)),
        ("backup_size", Value::Int(i64::try_from(s.backup_size).unwrap_or(i64::MAX))),
        ("backup_database", Value::text(&s.database_name)),
        ("backup_db_version", Value::Int(s.database_version.into())),
        ("backup_compat_level", Value::Int(s.compatibility_level.into())),
        ("backup_collation", Value::text(&s.collation)),
        ("backup_db_created", date_value(s.database_creation_date)),
        ("server_name", Value::text(&s.server_name)),
        ("machine_name", Value::text(&s.machine_name)),
        ("user_name", Value::text(&s.user_name)),
        ("software_version", Value::text(&s.software_version)),
        ("first_lsn", Value::text(s.first_lsn.to_string())),
        ("last_lsn", Value::text(s.last_lsn.to_string())),
        ("checkpoint_lsn", Value::text(s.checkpoint_lsn.to_string())),
        ("database_backup_lsn", Value::text(s.database_backup_lsn.to_string())),
        ("differential_base_lsn", lsn(s.differential_base_lsn)),
        ("differential_base_guid", s.differential_base_guid.as_deref().map_or(Value::Null, Value::text)),
        ("backup_set_guid", Value::text(&s.backup_set_guid)),
        ("compressed", Value::bit(s.compressed)),
        ("checksums", Value::bit(s.checksums)),
        ("encrypted", Value::bit(s.encrypted)),
        ("media_password", Value::bit(s.media_password)),
        ("stripes", Value::text(format!("{} of {}", s.family_number, s.family_count))),
    ]
}

pub(super) fn write_backup_header(out: &mut impl Write, set: &BackupSet) -> io::Result<()> {
    writeln!(out, "backup set:")?;
    for (k, v) in backup_set_fields(set) {
        writeln!(out, "  {:<24} {v}", format!("{}:", k.replace('_', " ")))?;
    }
    writeln!(out, "\nbackup file list:")?;
    let columns: Vec<String> = ["file_id", "logical_name", "physical_name", "type", "filegroup", "size"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<Value>> = set
        .files
        .iter()
        .map(|f| {
            vec![
                Value::Int(f.file_id.into()),
                Value::text(&f.logical_name),
                Value::text(&f.physical_name),
                Value::text(match f.kind {
                    FileKind::Data => "D".to_string(),
                    FileKind::Log => "L".to_string(),
                    FileKind::Other(n) => format!("type {n}"),
                }),
                Value::text(&f.filegroup),
                Value::Int(i64::try_from(f.size_bytes).unwrap_or(i64::MAX)),
            ]
        })
        .collect();
    write_rows(out, Format::Table, &columns, &rows)?;
    writeln!(out)
}
