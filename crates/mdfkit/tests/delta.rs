//! Delta Lake export (`export::delta`) of a database the forge writes: the log of two exports
//! checked against the Delta protocol's fields (delta-io/delta `PROTOCOL.md`), the schema against
//! the forge's declared column types, the data files' row counts and values against the rows the
//! forge generated; appends after a checkpoint (written here as the protocol lays it out) read the
//! log back only to it.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use mdfkit::export::delta::{export_delta_tables, SourceColumn};
use mdfkit::export::{ExportDestination, ExportOptions, LocalFolder};
use mdfkit::Database;
use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Val, Version};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value as Json;

fn spec() -> Spec {
    let col = |name: &str, ty, gen, nulls| ColumnSpec::new(name, ty, gen, nulls);
    Spec::new("lake", Version::V904, 7).table(
        TableSpec::new("dbo", "Readings", Layout::Clustered { key: 0 }, 3_000)
            .column(col("Id", ColType::BigInt, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(col("Level", ColType::TinyInt, Gen::Random, Nulls::Every(5)))
            .column(col("Price", ColType::Decimal(12, 3), Gen::Random, Nulls::Never))
            .column(col("Taken", ColType::DateTime2(7), Gen::Random, Nulls::Every(7)))
            .column(col("Seen", ColType::DateTimeOffset(3), Gen::Random, Nulls::Never))
            .column(col("At", ColType::Time(7), Gen::Random, Nulls::Never))
            .column(col("Logged", ColType::DateTime, Gen::Random, Nulls::Never))
            .column(col("Token", ColType::UniqueIdentifier, Gen::Random, Nulls::Never))
            .column(col("Note", ColType::NVarChar(Some(40)), Gen::Random, Nulls::Every(3))),
    )
}

/// Delta's name for each declared type (the protocol's primitive types; datetimeoffset is the
/// reader's struct of a UTC timestamp and an offset).
fn delta_type(ty: ColType) -> Json {
    match ty {
        ColType::BigInt => "long".into(),
        ColType::TinyInt => "short".into(),
        ColType::Decimal(p, s) => format!("decimal({p},{s})").into(),
        ColType::DateTime2(_) | ColType::DateTime => "timestamp_ntz".into(),
        ColType::DateTimeOffset(_) => serde_json::json!({"type": "struct", "fields": [
            {"name": "utc", "type": "timestamp", "nullable": false, "metadata": {}},
            {"name": "offset_minutes", "type": "short", "nullable": false, "metadata": {}},
        ]}),
        ColType::Time(_) | ColType::NVarChar(_) => "string".into(),
        ColType::UniqueIdentifier => "binary".into(),
        other => panic!("no expectation for {other:?}"),
    }
}

fn actions(table: &Path, version: u64) -> Vec<Json> {
    let text = std::fs::read_to_string(table.join(format!("_delta_log/{version:020}.json"))).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn action<'a>(actions: &'a [Json], kind: &str) -> Vec<&'a Json> {
    actions.iter().filter_map(|a| a.get(kind)).collect()
}

/// The `stats` of an `add` against the forge's rows: each column's null count, and the bounds of
/// the types that get them (`export/delta_stats.rs`) spelled from the forge's values.
fn check_stats(stats: &Json, spec: &Spec, rows: &[Vec<Option<Val>>]) {
    for (i, column) in spec.tables[0].columns.iter().enumerate() {
        let name = column.name.as_str();
        let values: Vec<&Val> = rows.iter().filter_map(|row| row[i].as_ref()).collect();
        let nulls = (rows.len() - values.len()) as u64;
        // The forge's spelling, as the Delta reader spells the cast value.
        let spell = |v: &Val| -> Json {
            match (v, column.ty) {
                (Val::Int(n), _) => (*n).into(),
                (Val::Scaled(_), _) => v.sql_text(column.ty).parse::<f64>().unwrap().into(),
                // datetime2(7) in microseconds: the 7th digit dropped, `T` between date and time.
                (Val::DateTime2 { .. }, _) => {
                    let text = v.sql_text(column.ty).replacen(' ', "T", 1);
                    text[..text.len() - 1].to_string().into()
                }
                (Val::Text(t), _) => t.as_str().into(),
                _ => Json::Null,
            }
        };
        let (min, max) = (stats["minValues"].get(name), stats["maxValues"].get(name));
        match column.ty {
            ColType::BigInt | ColType::TinyInt | ColType::Decimal(..) | ColType::DateTime2(_) => {
                assert_eq!(stats["nullCount"][name], nulls, "{name}");
                let spelled: Vec<Json> = values.iter().map(|v| spell(v)).collect();
                let order = |a: &&Json, b: &&Json| match (a.as_f64(), b.as_f64()) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    _ => a.as_str().cmp(&b.as_str()),
                };
                assert_eq!(min, spelled.iter().min_by(order), "{name}");
                assert_eq!(max, spelled.iter().max_by(order), "{name}");
            }
            ColType::NVarChar(_) => {
                assert_eq!(stats["nullCount"][name], nulls, "{name}");
                let texts: Vec<&str> =
                    values.iter().map(|v| if let Val::Text(t) = v { t.as_str() } else { "" }).collect();
                let (low, high) = (texts.iter().min().unwrap(), texts.iter().max().unwrap());
                // A minimum is cut to 32 characters; a longer maximum too, and sorts after the value.
                assert_eq!(min.and_then(Json::as_str), Some(&*low.chars().take(32).collect::<String>()), "{name}");
                let max = max.and_then(Json::as_str).unwrap();
                if high.chars().count() <= 32 {
                    assert_eq!(max, *high, "{name}");
                } else {
                    assert!(max > *high && max.chars().count() <= 32, "{name}: {max}");
                }
            }
            ColType::DateTimeOffset(_) => {
                assert_eq!(stats["nullCount"][name], serde_json::json!({"utc": nulls, "offset_minutes": nulls}));
                assert!(min.is_some_and(|m| m["utc"].as_str().is_some_and(|t| t.ends_with('Z'))), "{name}");
            }
            ColType::UniqueIdentifier => {
                // Binary: a null count, no bounds.
                assert_eq!(stats["nullCount"][name], nulls, "{name}");
                assert!(min.is_none() && max.is_none(), "{name}");
            }
            _ => assert_eq!(stats["nullCount"][name], nulls, "{name}"),
        }
    }
}

#[test]
fn two_exports_make_versions_0_and_1_of_one_table() {
    let dir = std::env::temp_dir().join(format!("mdfkit-delta-test-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let spec = spec();
    let files = mdfkit_forge::forge_to_dir(&spec, &dir.join("db")).unwrap();
    let db = Database::open(&files).unwrap();
    let tables = db.catalog().tables(false);
    let out = LocalFolder::create(&dir.join("lake")).unwrap();
    let options = ExportOptions { threads: 2, ..ExportOptions::default() };
    let source = SourceColumn { name: "source".into(), value: "lake.mdf".into() };
    for _ in 0..2 {
        let report = export_delta_tables(&db, &tables, &out, &options, Some(&source), |_| {}).unwrap();
        assert!(report.failed().is_empty(), "{:?}", report.tables[0].result);
    }
    let expected: Vec<Vec<Option<Val>>> = mdfkit_forge::live_rows(&spec, 0).collect();
    let table = dir.join("lake/dbo.Readings");

    let v0 = actions(&table, 0);
    let protocol = action(&v0, "protocol");
    assert_eq!(protocol.len(), 1);
    // datetime2 is a timestamp without time zone: the timestampNtz table feature.
    assert_eq!(protocol[0]["minReaderVersion"], 3);
    assert_eq!(protocol[0]["minWriterVersion"], 7);
    assert_eq!(protocol[0]["readerFeatures"], serde_json::json!(["timestampNtz"]));
    assert_eq!(protocol[0]["writerFeatures"], serde_json::json!(["timestampNtz"]));
    let metadata = action(&v0, "metaData");
    assert_eq!(metadata.len(), 1);
    assert_eq!(metadata[0]["format"]["provider"], "parquet");
    assert_eq!(metadata[0]["id"].as_str().unwrap().len(), 36);
    assert_eq!(metadata[0]["partitionColumns"], serde_json::json!([]));
    let schema: Json = serde_json::from_str(metadata[0]["schemaString"].as_str().unwrap()).unwrap();
    assert_eq!(schema["type"], "struct");
    assert_eq!(schema["fields"][0]["metadata"]["mdfkit.sql_type"], "bigint");
    let fields = schema["fields"].as_array().unwrap();
    // The source column follows the table's own.
    assert_eq!(fields.len(), spec.tables[0].columns.len() + 1);
    assert_eq!(fields[fields.len() - 1]["name"], "source");
    assert_eq!(fields[fields.len() - 1]["type"], "string");
    for (field, column) in fields.iter().zip(&spec.tables[0].columns) {
        assert_eq!(field["name"], column.name.as_str());
        assert_eq!(field["type"], delta_type(column.ty), "{}", column.name);
        // The reader's columns are all nullable (salvage and columns added later read NULL).
        assert_eq!(field["nullable"], true, "{}", column.name);
        assert!(field["metadata"]["mdfkit.sql_type"].is_string(), "{}", column.name);
    }

    let v1 = actions(&table, 1);
    assert!(action(&v1, "protocol").is_empty() && action(&v1, "metaData").is_empty());
    assert!(!table.join(format!("_delta_log/{:020}.json", 2)).exists());
    let mut paths = Vec::new();
    for version in [&v0, &v1] {
        assert_eq!(action(version, "commitInfo").len(), 1);
        let adds = action(version, "add");
        assert_eq!(adds.len(), 1);
        let add = adds[0];
        assert_eq!(add["dataChange"], true);
        assert_eq!(add["partitionValues"], serde_json::json!({}));
        assert!(add["modificationTime"].as_u64().unwrap() > 1_600_000_000_000);
        let path = table.join(add["path"].as_str().unwrap());
        assert_eq!(add["size"].as_u64().unwrap(), std::fs::metadata(&path).unwrap().len());
        let stats: Json = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
        assert_eq!(stats["numRecords"].as_u64().unwrap(), expected.len() as u64);
        check_stats(&stats, &spec, &expected);
        for part in ["minValues", "maxValues"] {
            assert_eq!(stats[part]["source"], "lake.mdf");
        }
        assert_eq!(stats["nullCount"]["source"], 0);
        paths.push(path);
    }
    assert_ne!(paths[0], paths[1]);

    // The data file holds the forge's rows, cast as the schema says.
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&paths[1]).unwrap()).unwrap().build().unwrap();
    let mut row = 0;
    for batch in reader {
        let batch = batch.unwrap();
        let (ids, levels) = (batch.column(0).as_primitive::<Int64Type>(), batch.column(1).as_primitive::<Int16Type>());
        let taken = batch.column(3).as_primitive::<TimestampMicrosecondType>();
        for i in 0..batch.num_rows() {
            let want = &expected[row];
            assert_eq!(Some(Val::Int(ids.value(i))), want[0]);
            assert_eq!(levels.is_valid(i).then(|| Val::Int(levels.value(i).into())), want[1]);
            let micros = match &want[3] {
                Some(Val::DateTime2 { days, units }) => Some((days - 719_162) * 86_400_000_000 + (*units / 10) as i64),
                None => None,
                other => panic!("{other:?}"),
            };
            assert_eq!(taken.is_valid(i).then(|| taken.value(i)), micros, "row {row}");
            assert_eq!(batch.column(7).as_binary::<i32>().value(i).len(), 16);
            assert_eq!(batch.column(9).as_string::<i32>().value(i), "lake.mdf");
            row += 1;
        }
    }
    assert_eq!(row, expected.len());

    // Another schema into the same table is refused, and nothing is committed.
    let narrow = ExportOptions { columns: Some(vec!["Id".into()]), ..options };
    let report = export_delta_tables(&db, &tables, &out, &narrow, Some(&source), |_| {}).unwrap();
    let error = report.tables[0].result.as_ref().unwrap_err().to_string();
    assert!(error.contains("another schema"), "{error}");
    assert!(!table.join(format!("_delta_log/{:020}.json", 2)).exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// A local folder that records which outputs are read (the Delta log's reads).
struct RecordingReads {
    folder: LocalFolder,
    read: std::sync::Mutex<Vec<String>>,
}

impl ExportDestination for RecordingReads {
    fn create(&self, name: &str) -> mdfkit::Result<Box<dyn mdfkit::export::ExportOutput>> {
        self.folder.create(name)
    }
    fn list(&self, folder: &str) -> mdfkit::Result<Vec<String>> {
        self.folder.list(folder)
    }
    fn read(&self, name: &str) -> mdfkit::Result<Vec<u8>> {
        self.read.lock().unwrap().push(name.rsplit('/').next().unwrap_or(name).to_string());
        self.folder.read(name)
    }
    fn create_new(&self, name: &str, bytes: &[u8]) -> mdfkit::Result<bool> {
        self.folder.create_new(name, bytes)
    }
}

/// A checkpoint as PROTOCOL.md lays it out ("Checkpoints"): one action per row, here the
/// `protocol` and `metaData` of version 0 and one `add` per data file (other columns null).
fn write_checkpoint(path: &Path, v0: &[Json], files: &[String]) {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, StructArray};
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field, Fields};
    use std::sync::Arc;

    let protocol = &action(v0, "protocol")[0];
    let metadata = &action(v0, "metaData")[0];
    let rows = 2 + files.len();
    let only = |row: usize| NullBuffer::from((0..rows).map(|r| r == row).collect::<Vec<_>>());
    let version = |key: &str| -> ArrayRef {
        Arc::new(Int32Array::from(
            (0..rows).map(|r| (r == 0).then(|| protocol[key].as_i64().unwrap() as i32)).collect::<Vec<_>>(),
        ))
    };
    let features = |key: &str| -> ArrayRef {
        let mut list = ListBuilder::new(StringBuilder::new());
        for row in 0..rows {
            match protocol.get(key).and_then(Json::as_array).filter(|_| row == 0) {
                Some(names) => {
                    names.iter().for_each(|n| list.values().append_value(n.as_str().unwrap()));
                    list.append(true);
                }
                None => list.append(false),
            }
        }
        Arc::new(list.finish())
    };
    let string_at = |row: usize, value: &str| -> ArrayRef {
        Arc::new(StringArray::from((0..rows).map(|r| (r == row).then_some(value)).collect::<Vec<_>>()))
    };
    let list_type = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    let protocol_fields = Fields::from(vec![
        Field::new("minReaderVersion", DataType::Int32, true),
        Field::new("minWriterVersion", DataType::Int32, true),
        Field::new("readerFeatures", list_type.clone(), true),
        Field::new("writerFeatures", list_type, true),
    ]);
    let protocol_column = StructArray::try_new(
        protocol_fields.clone(),
        vec![
            version("minReaderVersion"),
            version("minWriterVersion"),
            features("readerFeatures"),
            features("writerFeatures"),
        ],
        Some(only(0)),
    )
    .unwrap();
    let metadata_fields =
        Fields::from(vec![Field::new("id", DataType::Utf8, true), Field::new("schemaString", DataType::Utf8, true)]);
    let metadata_column = StructArray::try_new(
        metadata_fields.clone(),
        vec![string_at(1, metadata["id"].as_str().unwrap()), string_at(1, metadata["schemaString"].as_str().unwrap())],
        Some(only(1)),
    )
    .unwrap();
    let paths: Vec<Option<&str>> =
        (0..rows).map(|r| r.checked_sub(2).and_then(|f| files.get(f)).map(String::as_str)).collect();
    let add_fields = Fields::from(vec![Field::new("path", DataType::Utf8, true)]);
    let add_nulls = NullBuffer::from(paths.iter().map(Option::is_some).collect::<Vec<_>>());
    let add_column =
        StructArray::try_new(add_fields.clone(), vec![Arc::new(StringArray::from(paths))], Some(add_nulls)).unwrap();
    let batch = RecordBatch::try_from_iter([
        ("add", Arc::new(add_column) as ArrayRef),
        ("metaData", Arc::new(metadata_column) as ArrayRef),
        ("protocol", Arc::new(protocol_column) as ArrayRef),
    ])
    .unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn appends_read_the_log_back_only_to_the_newest_checkpoint() {
    let dir = std::env::temp_dir().join(format!("mdfkit-delta-checkpoint-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let files = mdfkit_forge::forge_to_dir(&spec(), &dir.join("db")).unwrap();
    let db = Database::open(&files).unwrap();
    let tables = db.catalog().tables(false);
    let options = ExportOptions { threads: 1, ..ExportOptions::default() };
    let lake = RecordingReads { folder: LocalFolder::create(&dir.join("lake")).unwrap(), read: Default::default() };
    let log = dir.join("lake/dbo.Readings/_delta_log");
    let appended = |expect_version: u64| {
        lake.read.lock().unwrap().clear();
        let report = export_delta_tables(&db, &tables, &lake, &options, None, |_| {}).unwrap();
        assert!(report.failed().is_empty(), "{:?}", report.tables[0].result);
        assert!(log.join(format!("{expect_version:020}.json")).exists());
        std::mem::take(&mut *lake.read.lock().unwrap())
    };
    // Without a checkpoint, the metadata is in version 0: every commit is read, newest first.
    for version in 0..3 {
        let reads = appended(version);
        let expected: Vec<String> = (0..version).rev().map(|v| format!("{v:020}.json")).collect();
        assert_eq!(reads, expected, "append {version}");
    }
    let v0 = actions(&dir.join("lake/dbo.Readings"), 0);
    let data: Vec<String> = (0..3)
        .map(|v| action(&actions(&dir.join("lake/dbo.Readings"), v), "add")[0]["path"].as_str().unwrap().into())
        .collect();
    write_checkpoint(&log.join(format!("{:020}.checkpoint.parquet", 2)), &v0, &data);
    // A log cleaner removes the commits the checkpoint holds.
    for version in 0..2 {
        std::fs::remove_file(log.join(format!("{version:020}.json"))).unwrap();
    }
    let checkpoint = format!("{:020}.checkpoint.parquet", 2);
    assert_eq!(appended(3), std::slice::from_ref(&checkpoint));
    assert_eq!(appended(4), [format!("{:020}.json", 3), checkpoint]);
    // The checkpoint's schema is the one an append is checked against.
    let narrow = ExportOptions { columns: Some(vec!["Id".into()]), ..options.clone() };
    let report = export_delta_tables(&db, &tables, &lake, &narrow, None, |_| {}).unwrap();
    let error = report.tables[0].result.as_ref().unwrap_err().to_string();
    assert!(error.contains("another schema"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The message an append gives when the table's only log entry is a checkpoint (written here,
/// as [`write_checkpoint`] lays it out, holding the table's version 0) that `corrupt` changed;
/// prints how long the append took.
fn append_after_corrupt_checkpoint(tag: &str, corrupt: impl Fn(&mut Vec<u8>)) -> String {
    let dir = std::env::temp_dir().join(format!("mdfkit-delta-{tag}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let files = mdfkit_forge::forge_to_dir(&spec(), &dir.join("db")).unwrap();
    let db = Database::open(&files).unwrap();
    let tables = db.catalog().tables(false);
    let options = ExportOptions { threads: 1, ..ExportOptions::default() };
    let lake = LocalFolder::create(&dir.join("lake")).unwrap();
    export_delta_tables(&db, &tables, &lake, &options, None, |_| {}).unwrap();
    let table = dir.join("lake/dbo.Readings");
    let v0 = actions(&table, 0);
    let data = vec![action(&v0, "add")[0]["path"].as_str().unwrap().to_string()];
    let checkpoint = table.join(format!("_delta_log/{:020}.checkpoint.parquet", 0));
    write_checkpoint(&checkpoint, &v0, &data);
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    corrupt(&mut bytes);
    std::fs::write(&checkpoint, bytes).unwrap();
    std::fs::remove_file(table.join(format!("_delta_log/{:020}.json", 0))).unwrap();
    let started = std::time::Instant::now();
    let report = export_delta_tables(&db, &tables, &lake, &options, None, |_| {}).unwrap();
    let message = report.tables[0].result.as_ref().unwrap_err().to_string();
    println!("{tag}: the append was refused in {:?}: {message}", started.elapsed());
    std::fs::remove_dir_all(&dir).ok();
    message
}

/// A list header of the compact protocol claiming 2^31 - 1 booleans (the most the parquet
/// crate's i32 sizes take), which the crate (60.1) skips as holding no bytes, one loop turn each:
/// 0xf1 (size follows, elements of type 1, bool), then the size as a varint.
const BOOLEAN_LIST: [u8; 6] = [0xf1, 0xff, 0xff, 0xff, 0xff, 0x07];

#[test]
fn a_checkpoint_footer_claiming_two_billion_booleans_is_refused() {
    let message = append_after_corrupt_checkpoint("footer-booleans", |file| {
        // The footer: FileMetaData, its length (4 bytes LE), "PAR1"; the struct ends in a stop
        // byte (0), before which goes field 1000 (0x09: id given after, type list; the id as a
        // zigzag varint, 2000 = 0xd0 0x0f), unknown to Parquet, holding the list.
        let tail = file.len() - 8;
        assert_eq!(&file[tail + 4..], b"PAR1");
        let length = u32::from_le_bytes(file[tail..tail + 4].try_into().unwrap());
        assert_eq!(file[tail - 1], 0, "FileMetaData's stop byte");
        let field: Vec<u8> = [0x09, 0xd0, 0x0f].into_iter().chain(BOOLEAN_LIST).collect();
        file.splice(tail - 1..tail - 1, field.iter().copied());
        let tail = tail + field.len();
        file[tail..tail + 4].copy_from_slice(&(length + field.len() as u32).to_le_bytes());
    });
    assert!(message.contains("checkpoint.parquet: not a readable checkpoint: footer"), "{message}");
    assert!(message.contains("a list claims 2147483647 elements in 1 bytes"), "{message}");
}

#[test]
fn a_checkpoint_page_header_claiming_two_billion_booleans_is_refused() {
    let message = append_after_corrupt_checkpoint("page-booleans", |file| {
        // The first page header of the chunk of protocol.minReaderVersion (a column the append
        // reads), where the crate's own reading of the footer puts it, starts with field 9
        // (0x99: delta 9 from 0, type list), unknown to PageHeader, holding the list.
        let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(file.clone()))
            .unwrap();
        let column = metadata
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().string() == "protocol.minReaderVersion")
            .unwrap();
        let chunk = metadata.row_group(0).column(column);
        let start = chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset()) as usize;
        let header: Vec<u8> = [0x99].into_iter().chain(BOOLEAN_LIST).collect();
        file[start..start + header.len()].copy_from_slice(&header);
    });
    assert!(message.contains("checkpoint.parquet: not a readable checkpoint: row group 0 column"), "{message}");
    assert!(message.contains(": page header at "), "{message}");
    assert!(message.contains(": a list claims 2147483647 elements in "), "{message}");
}
