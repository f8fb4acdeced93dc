//! Unit tests of the SQL expression parser (a separate file: the module is long enough
//! without them).

use super::*;

fn col(c: &str) -> Expr {
    Expr::Column(c.into())
}

fn lit(l: Literal) -> Expr {
    Expr::Literal(l)
}

#[test]
fn parses_what_users_write() {
    assert_eq!(
        parse("id < 100 AND part = 'a'").unwrap(),
        Expr::binary(
            BinaryOp::And,
            Expr::binary(BinaryOp::Cmp(CmpOp::Lt), col("id"), lit(Literal::Int(100))),
            Expr::binary(
                BinaryOp::Cmp(CmpOp::Eq),
                col("part"),
                lit(Literal::String("a".into()))
            ),
        )
    );
    assert_eq!(
        parse("`my col` <> -1.5").unwrap(),
        Expr::binary(
            BinaryOp::Cmp(CmpOp::Ne),
            col("my col"),
            lit(Literal::Decimal("-1.5".into()))
        )
    );
    assert_eq!(
        parse("d >= DATE '2024-01-02'").unwrap(),
        Expr::binary(
            BinaryOp::Cmp(CmpOp::Ge),
            col("d"),
            Expr::Cast {
                expr: Box::new(lit(Literal::String("2024-01-02".into()))),
                to: DataType::Date32
            }
        )
    );
    assert_eq!(
        parse("s.x IS NOT NULL").unwrap(),
        Expr::IsNull {
            expr: Box::new(col("s.x")),
            negated: true
        }
    );
    assert!(matches!(
        parse("coalesce(a, 0) + 1").unwrap(),
        Expr::Binary {
            op: BinaryOp::Plus,
            ..
        }
    ));
    assert!(matches!(
        parse("CAST(x AS timestamp_ntz)").unwrap(),
        Expr::Cast {
            to: DataType::Timestamp(TimeUnit::Microsecond, None),
            ..
        }
    ));
    assert_eq!(parse("1e3").unwrap(), lit(Literal::Float(1000.0)));
}

#[test]
fn rejects_what_it_cannot_evaluate() {
    for text in [
        "",
        "id <",
        "id = 1 extra",
        "id IN (SELECT 1)",
        "max(id) > 1",
        "nosuchfunction(id)",
        "lower(a, b)",
        "a ~ b",
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            matches!(err, DeltaError::InvalidArgument(_)),
            "{text}: {err}"
        );
    }
}

#[test]
fn type_names_round_trip() {
    for dt in [
        DataType::Int64,
        DataType::Utf8,
        DataType::Decimal128(12, 3),
        DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Date32,
    ] {
        assert_eq!(parse_type_name(&type_name(&dt)).unwrap(), dt);
    }
    assert!(parse_type_name("decimal(40,2)").is_err());
    assert!(parse_type_name("map<string,int>").is_err());
}

fn ids(n: i64) -> arrow::array::RecordBatch {
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("id", DataType::Int64, true),
    ]));
    arrow::array::RecordBatch::try_new(
        schema,
        vec![std::sync::Arc::new(
            arrow::array::Int64Array::from_iter_values(0..n),
        )],
    )
    .unwrap()
}

fn depth(e: &Expr) -> usize {
    let children: Vec<&Expr> = match e {
        Expr::Column(_) | Expr::Literal(_) => vec![],
        Expr::Binary { left, right, .. } => vec![left, right],
        Expr::Not(x) | Expr::Negative(x) | Expr::IsNull { expr: x, .. } => vec![x],
        Expr::Cast { expr, .. } => vec![expr],
        Expr::InList { expr, list, .. } => std::iter::once(expr.as_ref()).chain(list).collect(),
        Expr::Between {
            expr, low, high, ..
        } => vec![expr, low, high],
        Expr::Like { expr, pattern, .. } => vec![expr, pattern],
        Expr::Case {
            operand,
            branches,
            otherwise,
        } => operand
            .iter()
            .map(|b| b.as_ref())
            .chain(branches.iter().flat_map(|(w, t)| [w, t]))
            .chain(otherwise.iter().map(|b| b.as_ref()))
            .collect(),
        Expr::Function { args, .. } => args.iter().collect(),
    };
    1 + children.into_iter().map(depth).max().unwrap_or(0)
}

#[test]
fn long_flat_chains_become_shallow() {
    let text = vec!["id > 0"; 20_000].join(" AND ");
    let e = parse(&text).unwrap();
    assert!(depth(&e) <= 20, "{}", depth(&e));
    let m = crate::expr::eval::matches(&e, &ids(5)).unwrap();
    assert_eq!(m.true_count(), 4);
    // Parenthesized groups of the same operator flatten too; mixed chains keep
    // precedence (AND binds tighter than OR).
    let text = format!(
        "({}) OR id = 0 AND id = 1",
        vec!["id = 3"; 5_000].join(" OR ")
    );
    let e = parse(&text).unwrap();
    assert!(depth(&e) <= 20);
    assert_eq!(
        crate::expr::eval::matches(&e, &ids(5))
            .unwrap()
            .true_count(),
        1
    );
}

#[test]
fn nesting_up_to_the_limit_parses_and_evaluates() {
    let below = MAX_DEPTH - 6;
    for text in [
        format!("{}id > 0{}", "(".repeat(below), ")".repeat(below)),
        format!("{}id > 0", "NOT ".repeat(below)),
        format!(
            "{}id > 0{}",
            "coalesce(".repeat(below / 2),
            ", false)".repeat(below / 2)
        ),
        format!(
            "{}id > 0{}",
            "CASE WHEN true THEN ".repeat(below / 2),
            " END".repeat(below / 2)
        ),
    ] {
        let e = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let m = crate::expr::eval::matches(&e, &ids(3)).unwrap();
        assert!(m.len() == 3);
        assert!(serde_json::to_string(&e).is_ok());
    }
}

#[test]
fn deep_nesting_is_an_error_naming_the_limit() {
    for text in [
        format!("{}id > 0{}", "(".repeat(5000), ")".repeat(5000)),
        format!("{} > 0", vec!["id"; 5000].join(" + ")),
        format!("{}id > 0", "NOT ".repeat(5000)),
        format!(
            "{}id{} > 0",
            "CASE WHEN true THEN ".repeat(3000),
            " END".repeat(3000)
        ),
        format!("{}id", "- ".repeat(5000)),
        format!("{} > 0", vec!["id"; 100_000].join(" * ")),
        // A syntax error after a very long chain: sqlparser drops the chain itself.
        format!("{} AND id >", vec!["id > 0"; 50_000].join(" AND ")),
    ] {
        let err = parse(&text).unwrap_err();
        assert!(matches!(err, DeltaError::InvalidArgument(_)), "{err}");
        if !text.ends_with('>') {
            assert!(err.to_string().contains("limit"), "{err}");
        }
    }
}

/// One level of nesting around an expression, as SQL.
fn wrap(level: u8, inner: &str) -> String {
    match level % 8 {
        0 => format!("({inner})"),
        1 => format!("NOT ({inner})"),
        2 => format!("CASE WHEN {inner} THEN true ELSE false END"),
        3 => format!("coalesce({inner}, false)"),
        4 => format!("({inner}) = true"),
        5 => format!("({inner}) AND id >= 0"),
        6 => format!("id < 0 OR ({inner})"),
        _ => format!("({inner}) IS NOT NULL AND ({inner})"),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random nestings of every construct: shallow ones parse and evaluate as a reference
    /// interpreter says; any nesting either parses (and then evaluates, serializes and
    /// drops without overflowing the test thread's stack) or is an InvalidArgument error.
    #[test]
    fn nested_expressions_never_crash(
        levels in proptest::collection::vec(0u8..8, 0..400),
        k in 0i64..6,
    ) {
        // Level 7 doubles the text: keep it to a few.
        let levels: Vec<u8> = levels
            .into_iter()
            .enumerate()
            .map(|(i, l)| if l == 7 && i % 40 != 0 { 0 } else { l })
            .collect();
        let mut text = format!("id > {k}");
        for &l in &levels {
            text = wrap(l, &text);
        }
        let batch = ids(6);
        match parse(&text) {
            Ok(e) => {
                let got = crate::expr::eval::matches(&e, &batch).unwrap();
                // Reference: NOT levels flip, the others keep the condition (ids >= 0).
                let flips = levels.iter().filter(|&&l| l % 8 == 1).count();
                for row in 0..6i64 {
                    let base = row > k;
                    let want = if flips % 2 == 1 { !base } else { base };
                    proptest::prop_assert_eq!(got.value(row as usize), want);
                }
                let json = serde_json::to_string(&e).unwrap();
                proptest::prop_assert!(!json.is_empty());
                let _ = e.skipping_predicate();
            }
            Err(err) => {
                proptest::prop_assert!(matches!(err, DeltaError::InvalidArgument(_)));
                proptest::prop_assert!(err.to_string().contains("limit"), "{}", err);
                proptest::prop_assert!(levels.len() > 10);
            }
        }
    }
}
