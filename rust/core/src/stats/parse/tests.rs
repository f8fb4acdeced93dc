//! Unit tests of the statistics parser (a separate file: the module is long enough without
//! them).

use super::*;
use arrow::array::StringArray;
use arrow::datatypes::{Int64Type, TimeUnit};
use proptest::prelude::*;

fn chrono_micros(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|d| d.timestamp_micros())
}

#[test]
fn fast_timestamps_agree_with_chrono() {
    for text in [
        "2024-02-02T12:30:53.779Z",
        "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z",
        "1900-03-01T01:02:03.1+05:30",
        "2000-02-29T00:00:00.123456789-08:00",
        "9999-12-31T23:59:59.999999Z",
        "0001-01-01T00:00:00Z",
    ] {
        assert_eq!(
            iso_timestamp_fast(text.as_bytes()),
            chrono_micros(text),
            "{text}"
        );
    }
    // Not the fast shape: left to the general parser.
    for text in [
        "2024-02-30T00:00:00Z",
        "2024-02-02 12:30:53Z",
        "2024-02-02T12:30:53",
        "2024-02-02T12:30:60Z",
        "2024-02-02T12:30:53.Z",
        "2024-02-02T12:30:53.1234567891Z",
        "2024-02-02T12:30:53+0100",
    ] {
        assert_eq!(iso_timestamp_fast(text.as_bytes()), None, "{text}");
    }
    assert_eq!(
        timestamp_micros("2024-02-02 12:30:53"),
        Some(1_706_877_053_000_000)
    );
}

#[test]
fn malformed_documents_roll_back_and_first_duplicate_wins() {
    let schema = Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]);
    let stats = StatsSchema::new(&schema, &schema);
    let docs = [
        r#"{"numRecords":1,"minValues":{"a":5,"s":"x"}}"#,
        // Valid values before the error must not survive it.
        r#"{"numRecords":2,"minValues":{"a":6,"s":"yy"},"nullCount":{"a":tru}}"#,
        r#"{"numRecords":3,"minValues":{"a":7,"a":8,"s":"zzz","s":"w"}}"#,
        "",
    ];
    let parsed = stats.parse_texts(docs.len(), docs.into_iter()).unwrap();
    let n = parsed.column_by_name("numRecords").unwrap();
    let n = n.as_primitive::<Int64Type>();
    assert_eq!(n.iter().collect::<Vec<_>>(), [Some(1), None, Some(3), None]);
    let min = parsed.column_by_name("minValues").unwrap().as_struct();
    assert_eq!(
        min.column(0)
            .as_primitive::<Int64Type>()
            .iter()
            .collect::<Vec<_>>(),
        [Some(5), None, Some(7), None]
    );
    let s = min.column(1).as_string::<i32>();
    assert_eq!(
        s.iter().collect::<Vec<_>>(),
        [Some("x"), None, Some("zzz"), None]
    );
    assert_eq!(
        (0..4).map(|i| min.is_valid(i)).collect::<Vec<_>>(),
        [true, false, true, false]
    );
    parsed.to_data().validate_full().unwrap();
}

proptest! {
    #[test]
    fn fast_timestamps_never_disagree(
        y in 0i32..10000, mo in 0u32..14, d in 0u32..33, h in 0u32..25, mi in 0u32..61,
        sec in 0u32..61, frac in proptest::option::of("[0-9]{1,10}"),
        zone in prop_oneof![Just("Z".to_string()), "[+-][0-2][0-9]:[0-6][0-9]"],
    ) {
        let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
        let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{frac}{zone}");
        if let Some(fast) = iso_timestamp_fast(text.as_bytes()) {
            prop_assert_eq!(Some(fast), chrono_micros(&text), "{}", text);
        }
    }
}

fn schemas() -> (Schema, Schema) {
    let logical = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("flag", DataType::Boolean, true),
    ]);
    let physical = Schema::new(vec![
        Field::new("col-1", DataType::Int64, true),
        Field::new(
            "col-2",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("col-3", DataType::Boolean, true),
    ]);
    (physical, logical)
}

#[test]
fn parses_by_physical_name_and_renames() {
    let (p, l) = schemas();
    let s = StatsSchema::new(&p, &l);
    let col: ArrayRef = Arc::new(StringArray::from(vec![
        Some(
            r#"{"numRecords":3,"minValues":{"col-1":1,"col-2":"2021-01-01T00:00:00.000Z"},"maxValues":{"col-1":9},"nullCount":{"col-1":0,"col-3":1}}"#,
        ),
        None,
        Some("not json"),
    ]));
    let parsed = s.parse(Some(&col), None).unwrap();
    let n = parsed
        .column_by_name("numRecords")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(n.value(0), 3);
    assert!(n.is_null(1));
    assert!(n.is_null(2), "unparsable statistics are null");
    let logical = s.to_logical(&parsed);
    let logical = logical.as_struct();
    let min = logical.column_by_name("minValues").unwrap().as_struct();
    assert_eq!(
        min.column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        1
    );
    let ts = min.column_by_name("ts").unwrap();
    assert_eq!(
        ts.data_type(),
        &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    // Booleans carry no min/max; their null counts are kept.
    assert!(min.column_by_name("flag").is_none());
    let nc = logical.column_by_name("nullCount").unwrap().as_struct();
    assert_eq!(
        nc.column_by_name("flag")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        1
    );
}

#[test]
fn unknown_schema_keeps_counts() {
    let s = StatsSchema::empty();
    let col: ArrayRef = Arc::new(StringArray::from(vec![Some(
        r#"{"numRecords":7,"minValues":{"a":1}}"#,
    )]));
    let parsed = s.parse(Some(&col), None).unwrap();
    let masked = s
        .parse(Some(&col), Some(&BooleanArray::from(vec![false])))
        .unwrap();
    assert_eq!(masked.len(), 0);
    let n = parsed
        .column_by_name("numRecords")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(n.value(0), 7);
}
