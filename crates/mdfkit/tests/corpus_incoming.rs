//! Conformance over the corpus' newer files, listed apart in `incoming/MANIFEST.tsv`: SQL Server
//! 2005 (611) databases, a 2000 file upgraded to 655, a 2008 R2 (661) backup whose data stream
//! holds extents its GAM marks free, 2017 (869) and 2022 (957) files, and
//! collations the first corpus lacked (Chinese_PRC, Chinese_Taiwan_Stroke, Cyrillic_General,
//! Vietnamese, Arabic, Polish, Thai, Modern_Spanish). Every file opens (data file or backup),
//! agrees with the manifest, checks clean, renders every sys view, and exports every table to as
//! many JSON lines as its catalog counts rows. The scripts beside the files (`scripts/`) are ground
//! truth only where the file holds what they inserted: studentDB's (the others were generated
//! from, or filled, the databases at another time: same keys, other values).
//!
//! The pre-release SQL Server 2016 backup (859, `chains/`) is checked the same way.
//!
//! Without the corpus the tests fail under CI and say loudly that they skipped elsewhere.

mod common;

use std::path::Path;
use std::sync::Arc;

use mdfkit::backup::BackupPages;
use mdfkit::export::{export_table, ExportFormat, ExportOptions, LocalOutput};
use mdfkit::scan::Flow;
use mdfkit::Database;

use common::ManifestRow as Entry;

/// Checked with them: the full backup a pre-release build of SQL Server 2016 wrote (version 859),
/// kept with its chain in `chains/`.
const ALSO: &[(&str, &str, u16)] = &[("chains/sqltoolsservice-859/FullBackup.bak", "bak", 859)];

fn incoming(dir: &Path) -> Vec<Entry> {
    common::manifest(&dir.join("incoming/MANIFEST.tsv"))
        .into_iter()
        .map(|e| Entry { file: format!("incoming/{}", e.file), ..e })
        .collect()
}

fn open(dir: &Path, entry: &Entry) -> mdfkit::Result<Database> {
    let path = dir.join(&entry.file);
    match entry.kind.as_str() {
        "bak" => Database::from_source(Arc::new(BackupPages::open(&path)?)),
        _ => Database::open(&[path]),
    }
}

#[test]
fn every_incoming_file_opens_checks_clean_and_exports_every_table() {
    let Some(dir) = common::corpus_dir() else { return };
    let out = std::env::temp_dir().join(format!("mdfkit-incoming-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut mismatches = Vec::new();
    let (mut files, mut sql2005, mut tables, mut rows) = (0, 0, 0, 0);
    let also = ALSO.iter().map(|&(file, kind, version)| Entry {
        file: file.to_string(),
        kind: kind.to_string(),
        version,
        name: String::new(),
    });
    for entry in incoming(&dir).into_iter().chain(also) {
        let db = match open(&dir, &entry) {
            Ok(db) => db,
            Err(e) => {
                mismatches.push(format!("{}: cannot open: {e}", entry.file));
                continue;
            }
        };
        files += 1;
        let catalog = db.catalog();
        if catalog.boot.version == 611 {
            sql2005 += 1;
        }
        mismatches.extend(common::manifest_mismatches(&db, &entry));
        if mdfkit::collation::lookup(catalog.boot.collation_id).is_none() {
            mismatches.push(format!("{}: database collation id {} has no name", entry.file, catalog.boot.collation_id));
        }
        let (page_problems, _) = mdfkit::check::check_pages(db.reader().source(), |_| {});
        let catalog_problems = mdfkit::check::check_catalog(&db).map(|(p, _)| p).unwrap_or_else(|e| {
            mismatches.push(format!("{}: check: {e}", entry.file));
            Vec::new()
        });
        mismatches.extend(page_problems.iter().chain(&catalog_problems).map(|p| format!("{}: check: {p}", entry.file)));
        mismatches.extend(common::view_mismatches(&db, &entry.file).1);
        if catalog.view("sys.database_files").map(|v| v.rows.is_empty()).unwrap_or(true) {
            mismatches.push(format!("{}: sys.database_files is empty", entry.file));
        }
        for t in catalog.tables(false) {
            let path = out.join("table.jsonl");
            let options = ExportOptions { threads: 1, ..Default::default() };
            match export_table(
                &db,
                &t,
                ExportFormat::Jsonl,
                Box::new(LocalOutput::create(&path).unwrap()),
                &options,
                |_| {},
            ) {
                Ok(_) => {
                    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                    if lines as i64 != t.rows() {
                        mismatches.push(format!(
                            "{}: {} exported {lines} rows, catalog says {}",
                            entry.file,
                            t.qualified_name(),
                            t.rows()
                        ));
                    }
                    tables += 1;
                    rows += lines;
                }
                Err(e) => mismatches.push(format!("{}: {}: {e}", entry.file, t.qualified_name())),
            }
        }
    }
    std::fs::remove_dir_all(out).ok();
    println!("incoming and 859: {files} files ({sql2005} of SQL Server 2005), {tables} tables, {rows} rows");
    assert!(mismatches.is_empty(), "mismatches:\n{}", mismatches.join("\n"));
    assert_eq!(sql2005, 5, "the five SQL Server 2005 files");
    assert!(files >= 16, "only {files} files opened: the manifest's 15 and the 859 backup expected");
}

/// The text of a script file: UTF-16 with a byte order mark, else the code page its repository
/// used (GBK: studentDB's).
fn script(dir: &Path, name: &str) -> String {
    let bytes = std::fs::read(dir.join("scripts").join(name)).unwrap();
    match bytes.as_slice() {
        [0xFF, 0xFE, rest @ ..] => String::from_utf16_lossy(
            &rest.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect::<Vec<_>>(),
        ),
        _ => encoding_rs::GBK.decode_without_bom_handling(&bytes).0.into_owned(),
    }
}

/// A table's rows, each value spelled as text (`None` for NULL), by column name.
fn table_rows(db: &Database, name: &str) -> Vec<Vec<(String, Option<String>)>> {
    let table = db.catalog().find_table(name).unwrap_or_else(|| panic!("no table {name}"));
    let mut rows = Vec::new();
    for partition in &table.partitions {
        let decoder = db.row_decoder(&table, partition.partition_id, None).unwrap();
        let names: Vec<String> = decoder.columns().iter().map(|c| c.column.name.to_ascii_lowercase()).collect();
        let mut values = Vec::new();
        db.scan(&table)
            .partition_records(partition, |record, _| {
                decoder.decode(record, &mut values)?;
                rows.push(
                    names.iter().cloned().zip(values.iter().map(|v| (!v.is_null()).then(|| v.to_string()))).collect(),
                );
                Ok(Flow::Continue)
            })
            .unwrap();
    }
    rows
}

/// The literals of a `values(...)` list: `'..'` strings, numbers, `null`.
fn literals(values: &str) -> Vec<Option<String>> {
    values
        .split(',')
        .map(|v| v.trim())
        .map(|v| match v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            Some(text) => Some(text.to_string()),
            None if v.eq_ignore_ascii_case("null") => None,
            None => Some(v.to_string()),
        })
        .collect()
}

/// studentDB (Chinese_PRC_CI_AS, varchar in code page 936): test/S_C.sql creates Student with five
/// columns and inserts four students (`insert into Student values(...)`); the file holds them,
/// names in char(20) padded. (A fifth, inserted later in the script with a sixth column the file
/// does not have, is not in the file.)
#[test]
fn chinese_varchar_reads_as_the_script_wrote_it() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("incoming/mdf/jack-jparrow-sqlserver__studentdb_data.mdf")]).unwrap();
    assert_eq!(mdfkit::collation::name(db.catalog().boot.collation_id), "Chinese_PRC_CI_AS");
    let text = script(&dir, "jack-jparrow-sqlserver__test-S_C.sql");
    let mut expected: Vec<Vec<String>> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("insert into Student values("))
        .map(|v| literals(v.trim_end_matches(';').trim_end_matches(')')))
        .filter(|values| values.len() == 5)
        .map(|values| values.into_iter().map(|v| v.unwrap_or_default()).collect())
        .collect();
    assert_eq!(expected.len(), 4);
    let mut ours: Vec<Vec<String>> = table_rows(&db, "dbo.student")
        .into_iter()
        .map(|r| {
            ["sno", "sname", "ssex", "sage", "sdept"]
                .iter()
                .map(|c| {
                    r.iter()
                        .find(|(n, _)| n == c)
                        .and_then(|(_, v)| v.clone())
                        .unwrap_or_default()
                        .trim_end()
                        .to_string()
                })
                .collect()
        })
        .collect();
    expected.sort();
    ours.sort();
    assert_eq!(ours, expected);
}

/// DB.bak (SQL Server 2017, Cyrillic_General_CI_AS): BD.sql creates its tables, named in Cyrillic,
/// with these columns in this order.
#[test]
fn cyrillic_tables_are_the_ones_the_script_creates() {
    let Some(dir) = common::corpus_dir() else { return };
    let entry = incoming(&dir).into_iter().find(|e| e.file == "incoming/bak/denissfloww-bd__db.bak").unwrap();
    let db = open(&dir, &entry).unwrap();
    assert_eq!(mdfkit::collation::name(db.catalog().boot.collation_id), "Cyrillic_General_CI_AS");
    // A CREATE TABLE line, then a line a column up to the constraints.
    let mut expected: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_columns = false;
    for line in script(&dir, "denissfloww-bd__BD.sql").lines() {
        if let Some(table) = line.strip_prefix("CREATE TABLE [dbo].[").and_then(|l| l.strip_suffix("](")) {
            expected.push((format!("dbo.{table}"), Vec::new()));
            in_columns = true;
        } else if let (true, Some((column, _)), Some((_, columns))) =
            (in_columns, line.strip_prefix("\t[").and_then(|l| l.split_once(']')), expected.last_mut())
        {
            columns.push(column.to_string());
        } else {
            in_columns = false;
        }
    }
    assert_eq!(expected.len(), 6);
    for (table, columns) in expected {
        let t = db.catalog().find_table(&table).unwrap_or_else(|| panic!("no table {table}"));
        let ours: Vec<String> = db.catalog().columns(t.object_id).iter().map(|c| c.name.clone()).collect();
        assert_eq!(ours, columns, "{table}");
    }
}

/// SQL Server 2000's diagram table, `dtproperties`, as OFFS.mdf (2000, upgraded to 2005) holds
/// it: text pointers of `lvalue` lead to LOB roots of type 8 (NULL, as DBCC PAGE names it) for
/// the properties that keep no bytes, and the two `...DATA` rows hold as many bytes as their
/// `...BYTES` rows say (Visual Database Tools write the length beside the data), the schema
/// diagram being an OLE compound file (signature D0 CF 11 E0 A1 B1 1A E1).
#[test]
fn sql_server_2000_diagram_properties_read_whole() {
    let Some(dir) = common::corpus_dir() else { return };
    let db = Database::open(&[dir.join("incoming/mdf/nguyendoanh99-myprojects2005-2009__offs.mdf")]).unwrap();
    let table = db.catalog().find_table("dbo.dtproperties").unwrap();
    let mut rows = Vec::new();
    for partition in &table.partitions {
        let decoder = db.row_decoder(&table, partition.partition_id, None).unwrap();
        let column = |name: &str| decoder.columns().iter().position(|c| c.column.name == name).unwrap();
        let (property, value, lvalue) = (column("property"), column("value"), column("lvalue"));
        let mut values = Vec::new();
        db.scan(&table)
            .partition_records(partition, |record, _| {
                decoder.decode(record, &mut values)?;
                let bytes = match &values[lvalue] {
                    mdfkit::value::Value::Null => None,
                    mdfkit::value::Value::Binary(b) => Some(b.clone()),
                    other => panic!("lvalue {other:?}"),
                };
                rows.push((
                    values[property].to_string(),
                    (!values[value].is_null()).then(|| values[value].to_string()),
                    bytes,
                ));
                Ok(Flow::Continue)
            })
            .unwrap();
    }
    assert_eq!(rows.len() as i64, table.rows());
    let find = |name: &str| rows.iter().find(|(p, _, _)| p == name).unwrap_or_else(|| panic!("no {name} row"));
    for (data, length) in [("DtgDSRefDATA", "DtgDSRefBYTES"), ("DtgSchemaDATA", "DtgSchemaBYTES")] {
        let bytes = find(data).2.as_ref().unwrap_or_else(|| panic!("{data} is NULL"));
        assert_eq!(Some(bytes.len().to_string()), find(length).1, "{data}");
    }
    assert!(find("DtgSchemaDATA").2.as_ref().unwrap().starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]));
    for (name, _, bytes) in &rows {
        assert_eq!(bytes.is_some(), name.ends_with("DATA"), "{name}: lvalue only on the DATA properties");
    }
}
