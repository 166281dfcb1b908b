//! Delta Lake export (`export::delta`) of a database the forge writes: the log of two exports
//! checked against the Delta protocol's fields (delta-io/delta `PROTOCOL.md`), the schema against
//! the forge's declared column types, the data files' row counts and values against the rows the
//! forge generated.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use mdfkit::export::delta::export_delta_tables;
use mdfkit::export::{ExportOptions, LocalFolder};
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
    for _ in 0..2 {
        let report = export_delta_tables(&db, &tables, &out, &options, |_| {}).unwrap();
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
    assert_eq!(fields.len(), spec.tables[0].columns.len());
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
            row += 1;
        }
    }
    assert_eq!(row, expected.len());

    // Another schema into the same table is refused, and nothing is committed.
    let narrow = ExportOptions { columns: Some(vec!["Id".into()]), ..options };
    let report = export_delta_tables(&db, &tables, &out, &narrow, |_| {}).unwrap();
    let error = report.tables[0].result.as_ref().unwrap_err().to_string();
    assert!(error.contains("another schema"), "{error}");
    assert!(!table.join(format!("_delta_log/{:020}.json", 2)).exists());
    std::fs::remove_dir_all(&dir).ok();
}
