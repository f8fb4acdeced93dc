//! Unit tests of add actions from external files' footers (a separate file: the module is
//! long enough without them).

use super::*;
use crate::write::table::{write_batches, SaveMode, WriteOptions, Written};
use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use serde_json::json;

fn options(config: &[(&str, &str)], partition_by: &[&str]) -> WriteOptions {
    let mut options = WriteOptions::new(SaveMode::Append);
    options.configuration = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if !partition_by.is_empty() {
        options.partition_by = Some(partition_by.iter().map(|p| p.to_string()).collect());
    }
    if config.iter().any(|(k, _)| *k == "delta.columnMapping.mode") {
        options.protocol = Some(json!({"minReaderVersion": 2, "minWriterVersion": 5}));
    }
    options
}

/// A new table of `schema` at `dir`.
async fn table(
    dir: &std::path::Path,
    schema: &SchemaRef,
    config: &[(&str, &str)],
    partition_by: &[&str],
) -> Snapshot {
    let storage = Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
    let empty = RecordBatch::new_empty(schema.clone());
    write_batches(
        &storage,
        None,
        schema,
        [Ok(empty)],
        options(config, partition_by),
    )
    .await
    .unwrap();
    Snapshot::try_new(storage, None).await.unwrap()
}

/// The `stats` deltalog's writer gives `batch` in `snapshot`'s table (files not committed).
async fn writer_stats(snapshot: &Snapshot, batch: &RecordBatch) -> Value {
    let mut options = WriteOptions::new(SaveMode::Append);
    options.commit = false;
    let written = write_batches(
        snapshot.storage(),
        Some(snapshot.clone()),
        &batch.schema(),
        [Ok(batch.clone())],
        options,
    )
    .await
    .unwrap();
    let Written::Files(adds) = written else {
        panic!("not files: {written:?}");
    };
    serde_json::from_str(adds[0]["add"]["stats"].as_str().unwrap()).unwrap()
}

/// Writes `batch` as a parquet file at `relative` under the table root, row groups of
/// `group_rows` rows.
fn write_file(
    snapshot: &Snapshot,
    relative: &str,
    batch: &RecordBatch,
    group_rows: usize,
    statistics: bool,
) {
    let root = snapshot.storage().url().to_file_path().unwrap();
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Exact string statistics (the parquet crate cuts them to 64 bytes by default).
    let props = WriterProperties::builder()
        .set_statistics_truncate_length(None)
        .set_max_row_group_row_count(Some(group_rows))
        .set_statistics_enabled(if statistics {
            EnabledStatistics::Chunk
        } else {
            EnabledStatistics::None
        })
        .build();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

fn file(path: &str, values: &[(&str, Option<&str>)]) -> ExternalFile {
    ExternalFile {
        path: path.into(),
        partition_values: values
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    }
}

async fn stats_of(snapshot: &Snapshot, files: Vec<ExternalFile>) -> Vec<Value> {
    add_actions_from_footers(snapshot, files)
        .await
        .unwrap()
        .iter()
        .map(|a| serde_json::from_str(a["add"]["stats"].as_str().unwrap()).unwrap())
        .collect()
}

/// Every type the writer gives statistics, nulls, a struct, a list, long strings.
fn mixed() -> RecordBatch {
    let inner = Fields::from(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("y", DataType::Utf8, true),
    ]);
    let nested = StructArray::new(
        inner.clone(),
        vec![
            Arc::new(Int64Array::from(vec![
                Some(5),
                None,
                Some(-9),
                Some(100),
                None,
            ])),
            Arc::new(StringArray::from(vec![
                Some("q"),
                Some("a"),
                None,
                Some("zz"),
                Some("m"),
            ])),
        ],
        Some(NullBuffer::from(vec![true, true, true, false, true])),
    );
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), None]),
        None,
        Some(vec![]),
        Some(vec![Some(3)]),
        None,
    ]);
    let long = format!("{}tail", "ž".repeat(40));
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("l", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("f", DataType::Float64, true),
        Field::new("d", DataType::Decimal128(10, 2), true),
        Field::new("dt", DataType::Date32, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new(
            "ntz",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        Field::new("b", DataType::Boolean, true),
        Field::new("bin", DataType::Binary, true),
        Field::new("st", DataType::Struct(inner), true),
        Field::new("arr", list.data_type().clone(), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![
                Some(3),
                None,
                Some(-7),
                Some(0),
                None,
            ])),
            Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5])),
            Arc::new(StringArray::from(vec![
                Some("b"),
                Some(long.as_str()),
                None,
                Some("a"),
                Some("c"),
            ])),
            Arc::new(Float64Array::from(vec![
                Some(1.5),
                Some(-0.0),
                None,
                Some(0.0),
                Some(-2.25),
            ])),
            Arc::new(
                Decimal128Array::from(vec![Some(12_345), None, Some(-5), Some(0), Some(7)])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(Date32Array::from(vec![
                Some(0),
                Some(-400),
                None,
                Some(19_000),
                None,
            ])),
            Arc::new(
                TimestampMicrosecondArray::from(vec![
                    Some(1_999),
                    Some(-1_500),
                    None,
                    Some(1_700_000_000_123_456),
                    Some(5),
                ])
                .with_timezone("UTC"),
            ),
            Arc::new(TimestampMicrosecondArray::from(vec![
                None,
                Some(86_400_000_001),
                Some(-1),
                None,
                Some(7),
            ])),
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                None,
                None,
            ])),
            Arc::new(BinaryArray::from(vec![
                Some(&b"x"[..]),
                None,
                Some(b"\xff"),
                None,
                None,
            ])),
            Arc::new(nested),
            Arc::new(list),
        ],
    )
    .unwrap()
}

#[tokio::test]
async fn footer_statistics_equal_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let batch = mixed();
    let snapshot = table(dir.path(), &batch.schema(), &[], &[]).await;
    // Several row groups, one of a single row.
    write_file(&snapshot, "part-0.parquet", &batch, 2, true);
    let got = stats_of(&snapshot, vec![file("part-0.parquet", &[])]).await;
    let mut want = writer_stats(&snapshot, &batch).await;
    // A footer counts null list elements, not null lists: no nullCount for arrays.
    assert_eq!(want["nullCount"]["arr"], 2);
    want["nullCount"].as_object_mut().unwrap().remove("arr");
    assert_eq!(got[0], want);
    assert_eq!(got[0]["numRecords"], 5);
    // Spot checks of the writer's forms: a cut string maximum, a timestamp cut to ms.
    let max = got[0]["maxValues"]["s"].as_str().unwrap();
    assert_eq!(max.chars().count(), 33);
    assert!(max.ends_with(char::MAX));
    assert_eq!(got[0]["minValues"]["ts"], "1969-12-31T23:59:59.998Z");
    assert_eq!(got[0]["minValues"]["f"], -2.25);
    assert_eq!(got[0]["maxValues"]["st"]["x"], 5);
    assert_eq!(got[0]["nullCount"]["st"]["y"], 2);
    assert!(got[0]["minValues"].get("b").is_none());
    assert!(got[0]["minValues"].get("bin").is_none());
}

#[tokio::test]
async fn cut_footer_strings_stay_bounds() {
    // The parquet crate's default cuts string statistics to 64 bytes (the maximum then
    // rounded up): not the writer's exact value, but still a bound of every value.
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
    let values = vec!["ž".repeat(40), format!("{}a", "ž".repeat(33))];
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(values.clone()))],
    )
    .unwrap();
    let snapshot = table(dir.path(), &schema, &[], &[]).await;
    let root = snapshot.storage().url().to_file_path().unwrap();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(root.join("cut.parquet")).unwrap(),
        schema,
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let got = stats_of(&snapshot, vec![file("cut.parquet", &[])]).await;
    let (min, max) = (
        got[0]["minValues"]["s"].as_str().unwrap(),
        got[0]["maxValues"]["s"].as_str().unwrap(),
    );
    for v in &values {
        assert!(
            min <= v.as_str() && max >= v.as_str(),
            "{min:?} {max:?} {v:?}"
        );
    }
    assert!(max.chars().count() <= 33);
}

#[tokio::test]
async fn files_without_statistics_get_row_counts_only() {
    let dir = tempfile::tempdir().unwrap();
    let batch = mixed();
    let snapshot = table(dir.path(), &batch.schema(), &[], &[]).await;
    write_file(&snapshot, "bare.parquet", &batch, 2, false);
    let got = stats_of(&snapshot, vec![file("bare.parquet", &[])]).await;
    assert_eq!(got[0]["numRecords"], 5);
    assert_eq!(got[0]["minValues"], json!({}));
    assert_eq!(got[0]["maxValues"], json!({}));
    assert_eq!(got[0]["nullCount"], json!({}));
}

#[tokio::test]
async fn nan_leaves_float_bounds_out_and_indexed_columns_are_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("f", DataType::Float64, true),
        Field::new("g", DataType::Float64, true),
        Field::new("h", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from(vec![Some(1.0), Some(f64::NAN), None])),
            Arc::new(Float64Array::from(vec![Some(1.0), Some(3.0), None])),
            Arc::new(Int64Array::from(vec![1, 2, 3])),
        ],
    )
    .unwrap();
    let config = [("delta.dataSkippingNumIndexedCols", "2")];
    let snapshot = table(dir.path(), &schema, &config, &[]).await;
    write_file(&snapshot, "nan.parquet", &batch, 10, true);
    let got = stats_of(&snapshot, vec![file("nan.parquet", &[])]).await;
    assert_eq!(got[0], writer_stats(&snapshot, &batch).await);
    assert!(got[0]["minValues"].get("f").is_none());
    assert_eq!(got[0]["nullCount"]["f"], 1);
    assert_eq!(got[0]["maxValues"]["g"], 3.0);
    // Two indexed leaves: h has none.
    assert!(got[0]["nullCount"].get("h").is_none());
}

#[tokio::test]
async fn int96_timestamps_get_no_bounds() {
    use parquet::data_type::{Int64Type as PqInt64, Int96, Int96Type};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("id", DataType::Int64, true),
    ]));
    let snapshot = table(dir.path(), &schema, &[], &[]).await;
    let message =
        parse_message_type("message spark_schema { optional int96 ts; optional int64 id; }")
            .unwrap();
    let path = dir.path().join("spark.parquet");
    let mut writer = SerializedFileWriter::new(
        std::fs::File::create(&path).unwrap(),
        Arc::new(message),
        Default::default(),
    )
    .unwrap();
    let mut group = writer.next_row_group().unwrap();
    // 2020-01-01T00:00:00Z as Julian day 2458850 and nanoseconds of the day; one null.
    let mut ts = Int96::new();
    ts.set_data(0, 0, 2_458_850);
    let mut column = group.next_column().unwrap().unwrap();
    column
        .typed::<Int96Type>()
        .write_batch(&[ts], Some(&[1, 0]), None)
        .unwrap();
    column.close().unwrap();
    let mut column = group.next_column().unwrap().unwrap();
    column
        .typed::<PqInt64>()
        .write_batch(&[7, -3], Some(&[1, 1]), None)
        .unwrap();
    column.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
    let got = stats_of(&snapshot, vec![file("spark.parquet", &[])]).await;
    assert_eq!(
        got[0],
        json!({"numRecords": 2, "minValues": {"id": -3}, "maxValues": {"id": 7},
               "nullCount": {"ts": 1, "id": 0}})
    );
}

#[tokio::test]
async fn partitioned_files_get_their_values_and_uri_paths() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("p", DataType::Utf8, true),
        Field::new("n", DataType::Int32, true),
    ]));
    let snapshot = table(dir.path(), &schema, &[], &["p", "n"]).await;
    let data = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let batch = RecordBatch::try_new(data, vec![Arc::new(Int64Array::from(vec![1, 2]))]).unwrap();
    write_file(&snapshot, "p=a b%3A/n=1/x.parquet", &batch, 10, true);
    write_file(
        &snapshot,
        "p=__HIVE_DEFAULT_PARTITION__/n=2/y.parquet",
        &batch,
        10,
        true,
    );
    let adds = add_actions_from_footers(
        &snapshot,
        vec![
            file(
                "p=a b%3A/n=1/x.parquet",
                &[("p", Some("a b:")), ("n", Some("1"))],
            ),
            file(
                "p=__HIVE_DEFAULT_PARTITION__/n=2/y.parquet",
                &[("P", Some("")), ("n", Some("2"))],
            ),
        ],
    )
    .await
    .unwrap();
    let add = &adds[0]["add"];
    assert_eq!(add["path"], "p=a%20b%253A/n=1/x.parquet");
    assert_eq!(add["partitionValues"], json!({"p": "a b:", "n": "1"}));
    assert_eq!(add["dataChange"], true);
    let on_disk = dir.path().join("p=a b%3A/n=1/x.parquet");
    assert_eq!(add["size"], std::fs::metadata(&on_disk).unwrap().len());
    assert!(add["modificationTime"].as_i64().unwrap() > 1_600_000_000_000);
    assert_eq!(
        adds[1]["add"]["partitionValues"],
        json!({"p": null, "n": "2"})
    );
    let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
    assert_eq!(
        stats,
        json!({"numRecords": 2, "minValues": {"id": 1}, "maxValues": {"id": 2},
               "nullCount": {"id": 0}})
    );

    // Bad partition values and paths name the file.
    for (f, expect) in [
        (
            file("p=a b%3A/n=1/x.parquet", &[("p", Some("a"))]),
            "no value for",
        ),
        (
            file("p=a b%3A/n=1/x.parquet", &[("p", None), ("n", Some("x"))]),
            "not a valid",
        ),
        (
            file(
                "p=a b%3A/n=1/x.parquet",
                &[("p", None), ("n", None), ("q", None)],
            ),
            "not a partition column",
        ),
        (file("../x.parquet", &[("p", None), ("n", None)]), "`..`"),
        (
            file("/tmp/x.parquet", &[("p", None), ("n", None)]),
            "relative",
        ),
        (
            file("_delta_log/0.json", &[("p", None), ("n", None)]),
            "_delta_log",
        ),
    ] {
        let err = add_actions_from_footers(&snapshot, vec![f.clone()])
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, DeltaError::InvalidArgument(_))
                && text.contains(expect)
                && text.contains(f.path.as_str()),
            "{text}"
        );
    }
}

#[tokio::test]
async fn column_mapped_files_are_read_by_physical_name_and_field_id() {
    for mode in ["name", "id"] {
        let dir = tempfile::tempdir().unwrap();
        let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("st", DataType::Struct(inner.clone()), true),
        ]));
        let config = [("delta.columnMapping.mode", mode)];
        let snapshot = table(dir.path(), &schema, &config, &[]).await;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(4), None])),
                Arc::new(StructArray::new(
                    inner,
                    vec![Arc::new(Int64Array::from(vec![Some(-1), Some(9)]))],
                    None,
                )),
            ],
        )
        .unwrap();
        // The file as deltalog's writer would write it: physical names, field ids.
        let logical = snapshot.schema().unwrap();
        let physical = crate::writer_features::column_mapping::physical_output_schema(
            &logical,
            &schema,
            snapshot.column_mapping_mode().unwrap(),
        )
        .unwrap();
        let physical_batch =
            crate::writer_features::column_mapping::to_physical(&batch, &physical).unwrap();
        assert_ne!(physical.field(0).name(), "a");
        write_file(&snapshot, "m.parquet", &physical_batch, 10, true);
        let got = stats_of(&snapshot, vec![file("m.parquet", &[])]).await;
        assert_eq!(got[0], writer_stats(&snapshot, &batch).await, "mode {mode}");
        assert_eq!(got[0]["minValues"][physical.field(0).name()], 4);
    }
}

#[tokio::test]
async fn files_that_do_not_fit_are_named_in_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    let snapshot = table(dir.path(), &schema, &[], &[]).await;
    let one = |fields: Vec<(Field, ArrayRef)>| {
        let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = fields.into_iter().unzip();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    };
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let text: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
    write_file(
        &snapshot,
        "wrong_type.parquet",
        &one(vec![
            (Field::new("id", DataType::Int64, true), ids.clone()),
            (Field::new("s", DataType::Int64, true), ids.clone()),
        ]),
        10,
        true,
    );
    write_file(
        &snapshot,
        "no_id.parquet",
        &one(vec![(Field::new("s", DataType::Utf8, true), text.clone())]),
        10,
        true,
    );
    write_file(
        &snapshot,
        "extra.parquet",
        &one(vec![
            (Field::new("id", DataType::Int64, true), ids.clone()),
            (Field::new("other", DataType::Utf8, true), text.clone()),
        ]),
        10,
        true,
    );
    write_file(
        &snapshot,
        "null_id.parquet",
        &one(vec![(
            Field::new("id", DataType::Int64, true),
            Arc::new(Int64Array::from(vec![None, Some(1)])),
        )]),
        10,
        true,
    );
    write_file(
        &snapshot,
        "narrow.parquet",
        &one(vec![(
            Field::new("id", DataType::Int32, true),
            Arc::new(Int32Array::from(vec![3])),
        )]),
        10,
        true,
    );
    std::fs::write(dir.path().join("data.parquet"), "id,s\n1,x\n").unwrap();
    std::fs::write(dir.path().join("empty.parquet"), "").unwrap();
    for (name, expect) in [
        ("wrong_type.parquet", "\"s\" does not fit"),
        ("no_id.parquet", "lacks column \"id\""),
        ("extra.parquet", "\"other\" is not a data column"),
        (
            "null_id.parquet",
            "NOT NULL in the table but the file holds 1 nulls",
        ),
        ("data.parquet", "not a readable parquet file"),
        ("empty.parquet", "not a readable parquet file"),
    ] {
        let err = add_actions_from_footers(&snapshot, vec![file(name, &[])])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DeltaError::CorruptDataFile { file, reason }
                if file == name && reason.contains(expect)),
            "{name}: {err}"
        );
    }
    let err = add_actions_from_footers(&snapshot, vec![file("gone.parquet", &[])])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeltaError::DataFileNotFound { file } if file == "gone.parquet"),
        "{err}"
    );
    // An int32 file column reads as the table's long: fine, with its bounds.
    let got = stats_of(&snapshot, vec![file("narrow.parquet", &[])]).await;
    assert_eq!(got[0]["minValues"]["id"], 3);
    assert_eq!(got[0]["nullCount"]["s"], 1);
    let err = add_actions_from_footers(
        &snapshot,
        vec![file("narrow.parquet", &[]), file("narrow.parquet", &[])],
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
}

#[tokio::test]
async fn store_footers_take_one_read_or_two() {
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;
    let batch = mixed();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = Path::from("t/part.parquet");
    store.put(&location, bytes.clone().into()).await.unwrap();
    let whole = store_footer_with(&store, "part.parquet", &location, FOOTER_PREFETCH)
        .await
        .unwrap();
    // A suffix shorter than the footer: a second read fetches the rest.
    let split = store_footer_with(&store, "part.parquet", &location, 16)
        .await
        .unwrap();
    assert_eq!(whole.size, bytes.len() as u64);
    assert_eq!(split.size, whole.size);
    assert_eq!(split.metadata.file_metadata().num_rows(), 5);
    assert_eq!(
        split.metadata.num_row_groups(),
        whole.metadata.num_row_groups()
    );
    let err = store_footer_with(&store, "nope.parquet", &Path::from("t/nope"), 16)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, DeltaError::DataFileNotFound { .. }), "{err}");
    store
        .put(&Path::from("t/csv"), b"a,b\n1,2\n".to_vec().into())
        .await
        .unwrap();
    let err = store_footer_with(&store, "csv", &Path::from("t/csv"), 16)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, DeltaError::CorruptDataFile { .. }), "{err}");
}
