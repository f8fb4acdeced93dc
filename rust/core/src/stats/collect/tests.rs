//! Unit tests of the statistics collector (a separate file: the module is long enough
//! without them).

use super::*;
use crate::stats::parse::StatsSchema;
use arrow::array::{
    Float64Array, Int32Array, Int64Array, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow::datatypes::Fields;
use proptest::prelude::*;
use std::sync::Arc;

fn batch() -> RecordBatch {
    let inner = Fields::from(vec![Field::new("b", DataType::Int32, true)]);
    let nested = StructArray::new(
        inner.clone(),
        vec![Arc::new(Int32Array::from(vec![Some(7), Some(-2), None]))],
        Some(NullBuffer::from(vec![true, true, false])),
    );
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("f", DataType::Float64, true),
        Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("a", DataType::Struct(inner), true),
    ]);
    let long = "x".repeat(40);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![Some(3), None, Some(-1)])),
            Arc::new(StringArray::from(vec![
                Some("b"),
                Some(long.as_str()),
                None,
            ])),
            Arc::new(Float64Array::from(vec![1.5, f64::NAN, 0.0])),
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(1_999), Some(5_500), None])
                    .with_timezone("UTC"),
            ),
            Arc::new(nested),
        ],
    )
    .unwrap()
}

#[test]
fn statistics_of_a_batch() {
    let b = batch();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    let stats = c.finish();
    assert_eq!(stats["numRecords"], 3);
    assert_eq!(stats["minValues"]["i"], -1);
    assert_eq!(stats["maxValues"]["i"], 3);
    assert_eq!(stats["nullCount"]["i"], 1);
    assert_eq!(stats["minValues"]["s"], "b");
    // The 40-character maximum is cut to 32 and bounded with U+10FFFF.
    let max = stats["maxValues"]["s"].as_str().unwrap();
    assert_eq!(max.chars().count(), 33);
    assert!(max > "x".repeat(40).as_str());
    // NaN: no bounds for f, but its null count.
    assert!(stats["minValues"].get("f").is_none());
    assert_eq!(stats["nullCount"]["f"], 0);
    assert_eq!(stats["minValues"]["t"], "1970-01-01T00:00:00.001Z");
    assert_eq!(stats["maxValues"]["t"], "1970-01-01T00:00:00.005Z");
    // The struct's null row makes its child null.
    assert_eq!(stats["nullCount"]["a"]["b"], 1);
    assert_eq!(stats["minValues"]["a"]["b"], -2);
}

#[test]
fn per_column_collectors_merge_into_the_whole() {
    let b = batch();
    let schema = b.schema();
    let mut whole = StatsCollector::new(&schema, &IndexedColumns::First(-1));
    whole.update(&b).unwrap();
    whole.update(&b.slice(1, 2)).unwrap();
    let mut merged = StatsCollector::new(&schema, &IndexedColumns::First(-1));
    merged.add_rows(b.num_rows() + 2);
    for field in schema.fields() {
        let mut one = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        one.update_column(&b, field.name()).unwrap();
        one.update_column(&b.slice(1, 2), field.name()).unwrap();
        merged.merge(&one);
    }
    assert_eq!(merged.finish(), whole.finish());
    assert_eq!(merged.finish()["numRecords"], 5);
}

#[test]
fn leaves_set_from_elsewhere_leave_out_what_is_unknown() {
    let b = batch();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
    let paths: Vec<String> = c.leaf_paths().map(|p| p.join(".")).collect();
    assert_eq!(paths, ["i", "s", "f", "t", "a.b"]);
    c.add_rows(3);
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(4), None, Some(-1), Some(9)]));
    c.set_leaf(0, Some(&ints), Some(1)).unwrap();
    // Unknown null count, no bounds.
    c.set_leaf(1, None, None).unwrap();
    let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::NAN]));
    c.set_leaf(2, Some(&floats), Some(0)).unwrap();
    let stats = c.finish();
    assert_eq!(stats["numRecords"], 3);
    assert_eq!(stats["minValues"]["i"], -1);
    assert_eq!(stats["maxValues"]["i"], 9);
    assert_eq!(stats["nullCount"]["i"], 1);
    assert!(stats["nullCount"].get("s").is_none());
    assert!(stats["minValues"].get("f").is_none());
    assert_eq!(stats["nullCount"]["f"], 0);
    assert!(c.set_leaf(9, None, None).is_err());
}

#[test]
fn indexed_columns_limit_the_leaves() {
    let b = batch();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(2));
    c.update(&b).unwrap();
    let stats = c.finish();
    assert_eq!(stats["nullCount"].as_object().unwrap().len(), 2);
    let named = IndexedColumns::Named(vec!["a".into(), "t".into()]);
    let mut c = StatsCollector::new(&b.schema(), &named);
    c.update(&b).unwrap();
    let stats = c.finish();
    let keys: Vec<_> = stats["nullCount"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["t", "a"]);
    let config = [(STATS_COLUMNS.to_string(), "a, `t`".to_string())].into();
    assert_eq!(IndexedColumns::from_config(&config), named);
    let config = [(NUM_INDEXED_COLS.to_string(), "-1".to_string())].into();
    assert_eq!(
        IndexedColumns::from_config(&config),
        IndexedColumns::First(-1)
    );
}

#[test]
fn statistics_parse_back_with_the_reader() {
    let b = batch();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    c.update(&b).unwrap();
    let text = c.finish().to_string();
    let schema = StatsSchema::new(&b.schema(), &b.schema());
    let column: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
    let parsed = schema.parse(Some(&column), None).unwrap();
    assert_eq!(
        parsed
            .column_by_name("numRecords")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        6
    );
    let min = parsed.column_by_name("minValues").unwrap().as_struct();
    let t = min.column_by_name("t").unwrap();
    assert_eq!(t.as_primitive::<TimestampMicrosecondType>().value(0), 1_000);
    let i = min.column_by_name("i").unwrap();
    assert_eq!(i.as_primitive::<Int32Type>().value(0), -1);
}

#[test]
fn parsed_statistics_write_back_as_the_same_json() {
    let b = batch();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    let written = c.finish();
    let schema = StatsSchema::new(&b.schema(), &b.schema());
    let column: ArrayRef = Arc::new(StringArray::from(vec![
        written.to_string(),
        written.to_string(),
    ]));
    let parsed = schema.parse(Some(&column), None).unwrap();
    let mut back = stats_json_of_parsed(&parsed, 1, false);
    assert_eq!(back["tightBounds"], Value::Bool(false));
    back.as_object_mut().unwrap().remove("tightBounds");
    assert_eq!(back, written);
}

#[test]
fn decimals_are_exact_json_numbers_or_absent() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("d", DataType::Decimal128(10, 3), true),
        Field::new("w", DataType::Decimal128(38, 0), true),
    ]));
    let d = arrow::array::Decimal128Array::from(vec![-12_345, 7])
        .with_precision_and_scale(10, 3)
        .unwrap();
    let w = arrow::array::Decimal128Array::from(vec![10i128.pow(20), 1])
        .with_precision_and_scale(38, 0)
        .unwrap();
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(d), Arc::new(w)]).unwrap();
    let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    let stats = c.finish();
    assert_eq!(stats["minValues"]["d"].to_string(), "-12.345");
    assert_eq!(stats["maxValues"]["d"].to_string(), "0.007");
    // Each bound on its own: the small minimum is exact, the maximum is not.
    assert_eq!(stats["minValues"]["w"], 1);
    assert!(stats["maxValues"].get("w").is_none());
    assert_eq!(stats["nullCount"]["w"], 0);
}

#[test]
fn string_maxima_stay_upper_bounds() {
    let top = char::MAX.to_string();
    // 40 x U+10FFFF: no bound of at most 33 characters exists.
    assert_eq!(truncated_max(&top.repeat(40)), None);
    // 31 ASCII characters + 9 x U+10FFFF: the prefix before the U+10FFFF run.
    let v = format!("{}{}", "a".repeat(31), top.repeat(9));
    let max = truncated_max(&v).unwrap();
    assert_eq!(max, format!("{}{}", "a".repeat(30), top));
    assert!(max.as_str() >= v.as_str());
    // Short values are their own bounds; the usual cut keeps 32 characters + U+10FFFF.
    assert_eq!(truncated_max("abc").unwrap(), "abc");
    let long = "x".repeat(40);
    assert_eq!(
        truncated_max(&long).unwrap(),
        format!("{}{top}", "x".repeat(32))
    );
    assert_eq!(truncated_min(&long), "x".repeat(32));

    // Through the collector, nested columns included: the maximum is left out when no
    // bound exists, the minimum is still a prefix.
    let inner = Fields::from(vec![Field::new("s", DataType::Utf8, true)]);
    let values = vec![top.repeat(40), v.clone()];
    let strings: ArrayRef = Arc::new(StringArray::from(values.clone()));
    let nested = StructArray::new(inner.clone(), vec![strings.clone()], None);
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Struct(inner), true),
    ]));
    let b = RecordBatch::try_new(schema.clone(), vec![strings, Arc::new(nested)]).unwrap();
    let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    let stats = c.finish();
    assert!(stats["maxValues"].get("s").is_none(), "{stats}");
    assert!(stats["maxValues"].get("n").is_none(), "{stats}");
    assert_eq!(stats["minValues"]["s"], truncated_min(&v));
    assert_eq!(stats["minValues"]["n"]["s"], truncated_min(&v));
    let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
    c.update(&b.slice(1, 1)).unwrap();
    let stats = c.finish();
    assert_eq!(stats["maxValues"]["s"], max.as_str());
    assert_eq!(stats["maxValues"]["n"]["s"], max.as_str());
}

/// Characters around the edges that matter: ASCII, the last BMP characters before and after
/// the surrogate range, U+FFFF, the first supplementary character and U+10FFFF.
fn edge_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            'a',
            'z',
            '\u{7f}',
            '\u{80}',
            '\u{7ff}',
            '\u{800}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffd}',
            '\u{ffff}',
            '\u{10000}',
            '\u{10fffe}',
            char::MAX,
        ]),
        any::<char>(),
    ]
}

#[test]
fn values_under_a_null_parent_are_no_bounds() {
    // Row 2's struct is null: its child value 100 is not in the table.
    let inner = Fields::from(vec![Field::new("b", DataType::Int32, true)]);
    let nested = StructArray::new(
        inner.clone(),
        vec![Arc::new(Int32Array::from(vec![
            Some(7),
            Some(-2),
            Some(100),
        ]))],
        Some(NullBuffer::from(vec![true, true, false])),
    );
    let schema = Schema::new(vec![Field::new("a", DataType::Struct(inner), true)]);
    let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(nested)]).unwrap();
    let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
    c.update(&b).unwrap();
    let stats = c.finish();
    assert_eq!(stats["maxValues"]["a"]["b"], 7);
    assert_eq!(stats["minValues"]["a"]["b"], -2);
    assert_eq!(stats["nullCount"]["a"]["b"], 1);
}

proptest! {
    /// The bounds of a column are the smallest and largest of its valid values (floats:
    /// none when a valid value is NaN, zeros widened to -0.0 / 0.0), for any null mask.
    #[test]
    fn bounds_are_the_extremes_of_the_valid_values(
        rows in prop::collection::vec(
            (
                any::<i64>(),
                prop_oneof![
                    Just(f64::NAN),
                    Just(-0.0f64),
                    Just(0.0f64),
                    Just(f64::INFINITY),
                    Just(f64::NEG_INFINITY),
                    -1e6f64..1e6,
                ],
                "[a-c\u{e9}]{0,4}",
                any::<bool>(),
            ),
            0..40,
        ),
        masked in any::<bool>(),
    ) {
        let valid: Vec<bool> = rows.iter().map(|r| r.3 || !masked).collect();
        let nulls = masked.then(|| NullBuffer::from(valid.clone()));
        let ints: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
        let floats: ArrayRef = Arc::new(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()));
        let texts: ArrayRef = Arc::new(StringArray::from(rows.iter().map(|r| r.2.as_str()).collect::<Vec<_>>()));
        let kept = |i: &usize| valid[*i];
        let idx: Vec<usize> = (0..rows.len()).filter(kept).collect();

        let mut nan = false;
        let got = bounds(&ints, nulls.as_ref(), &mut nan).unwrap();
        let want: Vec<Bound> = match (idx.iter().map(|&i| rows[i].0).min(), idx.iter().map(|&i| rows[i].0).max()) {
            (Some(lo), Some(hi)) => vec![Bound::Int(lo), Bound::Int(hi)],
            _ => vec![],
        };
        prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));

        let mut nan = false;
        let got = bounds(&floats, nulls.as_ref(), &mut nan).unwrap();
        let values: Vec<f64> = idx.iter().map(|&i| rows[i].1).collect();
        let has_nan = values.iter().any(|v| v.is_nan());
        prop_assert_eq!(nan, has_nan);
        if has_nan || values.is_empty() {
            prop_assert!(got.is_empty());
        } else {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lo = if lo == 0.0 { -0.0 } else { lo };
            let hi = if hi == 0.0 { 0.0 } else { hi };
            prop_assert_eq!(format!("{got:?}"), format!("{:?}", vec![Bound::Float(lo), Bound::Float(hi)]));
        }

        let mut nan = false;
        let got = bounds(&texts, nulls.as_ref(), &mut nan).unwrap();
        let want: Vec<Bound> = match (idx.iter().map(|&i| rows[i].2.as_str()).min(), idx.iter().map(|&i| rows[i].2.as_str()).max()) {
            (Some(lo), Some(hi)) => vec![Bound::Str(lo.into()), Bound::Str(hi.into())],
            _ => vec![],
        };
        prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
}

proptest! {
    /// Truncated minima are `<=` and truncated maxima `>=` every value of the column, in
    /// UTF-8 byte order as Delta compares strings.
    #[test]
    fn truncated_bounds_bound_every_value(
        values in prop::collection::vec(
            // Runs of U+10FFFF at any position, long enough to reach past the cut.
            (
                prop::collection::vec(edge_char(), 0..40),
                0..45usize,
                prop::collection::vec(edge_char(), 0..6),
            )
                .prop_map(|(head, run, tail)| {
                    let mut s: String = head.into_iter().collect();
                    s.extend(std::iter::repeat_n(char::MAX, run));
                    s.extend(tail);
                    s
                }),
            1..6,
        )
    ) {
        let lo = values.iter().min().unwrap();
        let hi = values.iter().max().unwrap();
        let min = truncated_min(lo);
        prop_assert!(min.chars().count() <= STRING_PREFIX);
        for v in &values {
            prop_assert!(min.as_bytes() <= v.as_bytes());
        }
        match truncated_max(hi) {
            Some(max) => {
                prop_assert!(max.chars().count() <= STRING_PREFIX + 1);
                for v in &values {
                    prop_assert!(max.as_bytes() >= v.as_bytes(), "{:?} < {:?}", max, v);
                }
            }
            // Only when a longer value starts with STRING_PREFIX + 1 U+10FFFF characters.
            None => prop_assert!(hi.chars().take(STRING_PREFIX + 1).all(|c| c == char::MAX)
                && hi.chars().count() > STRING_PREFIX + 1),
        }
    }
}
