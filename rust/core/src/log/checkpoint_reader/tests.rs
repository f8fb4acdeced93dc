//! Unit tests of the checkpoint reader (a separate file: the module is long enough without
//! them).

use super::*;
use arrow::datatypes::{Field, Fields, Schema};
use parquet::arrow::ArrowSchemaConverter;
use std::sync::Arc;

#[test]
fn header_rows_are_the_rows_with_an_action() {
    let schema = actions::checkpoint_header_schema();
    let text = br#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{}
{"txn":{"appId":"a","version":3}}
{}
"#;
    let batch = actions::decode_json_actions(text, &schema, "x", Some(0))
        .unwrap()
        .remove(0);
    let kept = rows_with_actions(batch).unwrap().unwrap();
    assert_eq!(kept.num_rows(), 2);
    let empty = actions::decode_json_actions(b"{}\n{}\n", &schema, "x", Some(0))
        .unwrap()
        .remove(0);
    assert!(rows_with_actions(empty).unwrap().is_none());
}

/// The first batch `text` decodes to with `schema`.
fn decode_one(schema: &SchemaRef, text: &str) -> RecordBatch {
    actions::decode_json_actions(text.as_bytes(), schema, "x", Some(0))
        .unwrap()
        .remove(0)
}

/// Writes `batches` as `cp.parquet` in `dir` (two rows per row group, with statistics) and
/// opens it as a log file.
async fn parquet_log_file(
    dir: &std::path::Path,
    schema: &SchemaRef,
    batches: &[&RecordBatch],
) -> ParquetLogFile {
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2))
        .build();
    let file = std::fs::File::create(dir.join("cp.parquet")).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    let storage = Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
    let location = storage.table_path("cp.parquet");
    ParquetLogFile::open(&storage, &location, None, "cp.parquet", Some(1))
        .await
        .unwrap()
}

#[tokio::test]
async fn header_pass_skips_row_groups_proven_null() {
    let dir = tempfile::tempdir().unwrap();
    let schema = actions::checkpoint_header_schema();
    let with_protocol = decode_one(
        &schema,
        "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n{}\n",
    );
    let empty = decode_one(&schema, "{}\n{}\n{}\n");
    let file = parquet_log_file(dir.path(), &schema, &[&with_protocol, &empty]).await;
    let rows = |v: Vec<usize>| v.into_iter().sum::<usize>();
    let all = file.read_with(&schema, |b| Ok(b.num_rows())).await.unwrap();
    assert_eq!(rows(all), 5);
    let non_null = file
        .read_non_null_with(&schema, |b| Ok(b.num_rows()))
        .await
        .unwrap();
    assert_eq!(rows(non_null), 2);
}

#[tokio::test]
async fn leaves_null_in_a_row_group_are_supplied_as_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let schema = actions::file_actions_schema();
    // Row group 0 has a deletion vector and tags; row group 1 has neither.
    let first = decode_one(
        &schema,
        concat!(
            r#"{"add":{"path":"a","size":1,"tags":{"k":"v"},"deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":2,"cardinality":3}}}"#,
            "\n",
            r#"{"add":{"path":"b","size":2}}"#,
            "\n"
        ),
    );
    let second = decode_one(
        &schema,
        "{\"add\":{\"path\":\"c\",\"size\":3}}\n{\"remove\":{\"path\":\"d\"}}\n",
    );
    let expected = arrow::compute::concat_batches(&schema, [&first, &second]).unwrap();
    #[allow(unused_mut)]
    let mut file = parquet_log_file(dir.path(), &schema, &[&first, &second]).await;
    let read_all = |file: ParquetLogFile| {
        let schema = schema.clone();
        async move {
            let batches = file.read_with(&schema, Ok).await.unwrap();
            arrow::compute::concat_batches(&schema, batches.iter()).unwrap()
        }
    };
    assert_eq!(read_all(file.clone()).await, expected);
    // The same through the object-store reader (the path remote stores take).
    #[cfg(unix)]
    {
        file.local = None;
        assert_eq!(read_all(file).await, expected);
    }
}

#[tokio::test]
async fn statistics_are_read_as_views_and_parse_like_text() {
    use crate::stats::parse::StatsSchema;
    let dir = tempfile::tempdir().unwrap();
    let schema = actions::file_actions_schema();
    let text = concat!(
        r#"{"add":{"path":"a","size":1,"stats":"{\"numRecords\":3,\"minValues\":{\"x\":-2,\"s\":\"a long enough string value\"}}"}}"#,
        "\n",
        r#"{"add":{"path":"b","size":2}}"#,
        "\n",
        r#"{"remove":{"path":"c"}}"#,
        "\n",
        r#"{"add":{"path":"d","size":2,"stats":"{\"numRecords\":1,\"maxValues\":{\"s\":\"z\"}}"}}"#,
        "\n",
    );
    let batch = decode_one(&schema, text);
    #[allow(unused_mut)]
    let mut file = parquet_log_file(dir.path(), &schema, &[&batch]).await;
    let table = Schema::new(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]);
    let stats_schema = StatsSchema::new(&table, &table);
    let add_stats = |b: &RecordBatch| {
        b.column_by_name("add")
            .unwrap()
            .as_struct()
            .column_by_name("stats")
            .unwrap()
            .clone()
    };
    let expected = stats_schema.parse(Some(&add_stats(&batch)), None).unwrap();
    let view_schema = actions::file_actions_view_schema();
    let read = |file: ParquetLogFile| {
        let schema = view_schema.clone();
        async move {
            let batches = file.read_with(&schema, Ok).await.unwrap();
            arrow::compute::concat_batches(&schema, batches.iter()).unwrap()
        }
    };
    let got = read(file.clone()).await;
    assert_eq!(add_stats(&got).data_type(), &DataType::Utf8View);
    assert_eq!(
        stats_schema.parse(Some(&add_stats(&got)), None).unwrap(),
        expected
    );
    assert_eq!(
        expected
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .value(3),
        1
    );
    #[cfg(unix)]
    {
        file.local = None;
        let got = read(file).await;
        assert_eq!(
            stats_schema.parse(Some(&add_stats(&got)), None).unwrap(),
            expected
        );
    }
}

#[test]
fn projection_keeps_wanted_fields_only() {
    let file_schema = Schema::new(vec![
        Field::new(
            "add",
            DataType::Struct(Fields::from(vec![
                Field::new("path", DataType::Utf8, true),
                Field::new(
                    "stats_parsed",
                    DataType::Struct(Fields::from(vec![Field::new(
                        "numRecords",
                        DataType::Int64,
                        true,
                    )])),
                    true,
                ),
            ])),
            true,
        ),
        Field::new(
            "commitInfo",
            DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int64, true)])),
            true,
        ),
    ]);
    let descr = ArrowSchemaConverter::new().convert(&file_schema).unwrap();
    let wanted = Arc::new(Schema::new(vec![Field::new(
        "add",
        DataType::Struct(Fields::from(vec![Field::new("path", DataType::Utf8, true)])),
        true,
    )]));
    let mask = projection(&descr, &wanted);
    assert!(mask.leaf_included(0));
    assert!(!mask.leaf_included(1));
    assert!(!mask.leaf_included(2));
}
