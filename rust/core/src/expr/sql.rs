//! SQL text to [`Expr`], with `sqlparser`'s Spark SQL dialect (backquoted identifiers,
//! single- or double-quoted strings, Spark's type names).
//!
//! What deltalog evaluates: columns (`a`, `` `a b` ``, `s.field`), literals (numbers,
//! strings, `TRUE`/`FALSE`/`NULL`, `DATE '...'`, `TIMESTAMP '...'`, `TIMESTAMP_NTZ '...'`),
//! `= == != <> < <= > >=`, `AND OR NOT`, `+ - * / %`, `||`, `IS [NOT] NULL`,
//! `[NOT] IN (...)`, `[NOT] BETWEEN`, `[NOT] LIKE`/`ILIKE`, `CASE`, `CAST`, and the
//! functions of [`Function`]. Anything else (subqueries, aggregates, unknown functions) is
//! an [`DeltaError::InvalidArgument`] naming the construct.

use arrow::datatypes::{DataType, TimeUnit};
use sqlparser::ast::{
    self, BinaryOperator, CastKind, FunctionArg, FunctionArgExpr, FunctionArguments,
    ObjectNamePart, UnaryOperator, Value,
};
use sqlparser::dialect::SparkSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::error::{DeltaError, DeltaResult};
use crate::expr::{BinaryOp, Expr, Function};
use crate::predicate::{CmpOp, Literal};

/// Parses one SQL expression; trailing text is an error.
pub fn parse(text: &str) -> DeltaResult<Expr> {
    let bad = |e: &dyn std::fmt::Display| {
        DeltaError::InvalidArgument(format!("not a SQL expression: {text:?}: {e}"))
    };
    let dialect = SparkSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| bad(&e))?;
    let parsed = parser.parse_expr().map_err(|e| bad(&e))?;
    parser.expect_token(&Token::EOF).map_err(|e| bad(&e))?;
    convert(&parsed).map_err(|reason| bad(&reason))
}

fn unsupported(what: &dyn std::fmt::Display) -> String {
    format!("{what} is not supported in deltalog expressions")
}

fn boxed(e: &ast::Expr) -> Result<Box<Expr>, String> {
    convert(e).map(Box::new)
}

fn convert(e: &ast::Expr) -> Result<Expr, String> {
    Ok(match e {
        ast::Expr::Identifier(ident) => Expr::Column(ident.value.clone()),
        ast::Expr::CompoundIdentifier(parts) => Expr::Column(
            parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
        ),
        ast::Expr::Nested(inner) => convert(inner)?,
        ast::Expr::Value(v) => Expr::Literal(literal(&v.value)?),
        ast::Expr::TypedString(typed) => {
            let text = match &typed.value.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                other => return Err(unsupported(&format!("the typed literal {other}"))),
            };
            Expr::Cast {
                expr: Box::new(Expr::Literal(Literal::String(text))),
                to: sql_type(&typed.data_type)?,
            }
        }
        ast::Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Eq => BinaryOp::Cmp(CmpOp::Eq),
                BinaryOperator::NotEq => BinaryOp::Cmp(CmpOp::Ne),
                BinaryOperator::Lt => BinaryOp::Cmp(CmpOp::Lt),
                BinaryOperator::LtEq => BinaryOp::Cmp(CmpOp::Le),
                BinaryOperator::Gt => BinaryOp::Cmp(CmpOp::Gt),
                BinaryOperator::GtEq => BinaryOp::Cmp(CmpOp::Ge),
                BinaryOperator::And => BinaryOp::And,
                BinaryOperator::Or => BinaryOp::Or,
                BinaryOperator::Plus => BinaryOp::Plus,
                BinaryOperator::Minus => BinaryOp::Minus,
                BinaryOperator::Multiply => BinaryOp::Multiply,
                BinaryOperator::Divide => BinaryOp::Divide,
                BinaryOperator::Modulo => BinaryOp::Modulo,
                BinaryOperator::StringConcat => BinaryOp::Concat,
                other => return Err(unsupported(&format!("the operator {other}"))),
            };
            Expr::binary(op, convert(left)?, convert(right)?)
        }
        ast::Expr::UnaryOp { op, expr } => match op {
            UnaryOperator::Not | UnaryOperator::BangNot => Expr::Not(boxed(expr)?),
            UnaryOperator::Minus => match convert(expr)? {
                Expr::Literal(Literal::Int(i)) => Expr::Literal(Literal::Int(-i)),
                Expr::Literal(Literal::Float(f)) => Expr::Literal(Literal::Float(-f)),
                Expr::Literal(Literal::Decimal(d)) => Expr::Literal(Literal::Decimal(
                    d.strip_prefix('-')
                        .map_or_else(|| format!("-{d}"), str::to_string),
                )),
                other => Expr::Negative(Box::new(other)),
            },
            UnaryOperator::Plus => convert(expr)?,
            other => return Err(unsupported(&format!("the operator {other}"))),
        },
        ast::Expr::IsNull(e) => Expr::IsNull {
            expr: boxed(e)?,
            negated: false,
        },
        ast::Expr::IsNotNull(e) => Expr::IsNull {
            expr: boxed(e)?,
            negated: true,
        },
        // `x IS TRUE` is never null: coalesce(x, false); `x IS FALSE`: coalesce(NOT x, false).
        ast::Expr::IsTrue(e) => is_bool(convert(e)?, true, false),
        ast::Expr::IsNotTrue(e) => is_bool(convert(e)?, true, true),
        ast::Expr::IsFalse(e) => is_bool(convert(e)?, false, false),
        ast::Expr::IsNotFalse(e) => is_bool(convert(e)?, false, true),
        ast::Expr::InList {
            expr,
            list,
            negated,
        } => Expr::InList {
            expr: boxed(expr)?,
            list: list.iter().map(convert).collect::<Result<_, _>>()?,
            negated: *negated,
        },
        ast::Expr::Between {
            expr,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: boxed(expr)?,
            low: boxed(low)?,
            high: boxed(high)?,
            negated: *negated,
        },
        ast::Expr::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => Expr::Like {
            expr: boxed(expr)?,
            pattern: boxed(pattern)?,
            negated: *negated,
            case_insensitive: false,
        },
        ast::Expr::ILike {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => Expr::Like {
            expr: boxed(expr)?,
            pattern: boxed(pattern)?,
            negated: *negated,
            case_insensitive: true,
        },
        ast::Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => Expr::Case {
            operand: operand.as_deref().map(boxed).transpose()?,
            branches: conditions
                .iter()
                .map(|c| Ok((convert(&c.condition)?, convert(&c.result)?)))
                .collect::<Result<_, String>>()?,
            otherwise: else_result.as_deref().map(boxed).transpose()?,
        },
        ast::Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } => Expr::Cast {
            expr: boxed(expr)?,
            to: sql_type(data_type)?,
        },
        ast::Expr::Function(f) => {
            let name = match f.name.0.as_slice() {
                [ObjectNamePart::Identifier(ident)] => ident.value.clone(),
                _ => return Err(unsupported(&format!("the function {}", f.name))),
            };
            let function = Function::by_name(&name)
                .ok_or_else(|| unsupported(&format!("the function {name}")))?;
            let FunctionArguments::List(list) = &f.args else {
                return Err(unsupported(&format!("{name} without an argument list")));
            };
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return Err(unsupported(&format!("the arguments of {name}")));
            }
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => convert(e),
                    other => Err(unsupported(&format!("the argument {other}"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let arity_ok = match function {
                Function::Coalesce | Function::Concat => !args.is_empty(),
                _ => args.len() == 1,
            };
            if !arity_ok {
                return Err(format!(
                    "{name} takes {} arguments",
                    match function {
                        Function::Coalesce | Function::Concat => "one or more",
                        _ => "exactly one",
                    }
                ));
            }
            Expr::Function { function, args }
        }
        other => return Err(unsupported(&format!("`{other}`"))),
    })
}

/// `x IS [NOT] TRUE|FALSE`, which is never null.
fn is_bool(x: Expr, target: bool, negated: bool) -> Expr {
    let x = if target { x } else { Expr::Not(Box::new(x)) };
    let known = Expr::Function {
        function: Function::Coalesce,
        args: vec![x, Expr::Literal(Literal::Bool(false))],
    };
    if negated {
        Expr::Not(Box::new(known))
    } else {
        known
    }
}

fn literal(v: &Value) -> Result<Literal, String> {
    Ok(match v {
        Value::Number(text, _) => {
            if let Ok(i) = text.parse::<i64>() {
                Literal::Int(i)
            } else if text.contains(['e', 'E']) {
                Literal::Float(
                    text.parse::<f64>()
                        .map_err(|e| format!("bad number {text}: {e}"))?,
                )
            } else {
                Literal::Decimal(text.clone())
            }
        }
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Literal::String(s.clone()),
        Value::Boolean(b) => Literal::Bool(*b),
        Value::Null => Literal::Null,
        other => return Err(unsupported(&format!("the literal {other}"))),
    })
}

/// The Arrow type of a SQL type name (Spark's names; timestamps are microseconds, `TIMESTAMP`
/// is an instant in UTC).
fn sql_type(dt: &ast::DataType) -> Result<DataType, String> {
    parse_type_name(&dt.to_string())
}

/// Parses a type name as Spark or a Delta schema writes it (`bigint`, `long`,
/// `decimal(10,2)`, `timestamp_ntz`, ...).
pub fn parse_type_name(text: &str) -> Result<DataType, String> {
    let lower = text.trim().to_ascii_lowercase().replace(' ', "");
    Ok(match lower.as_str() {
        "boolean" | "bool" => DataType::Boolean,
        "tinyint" | "byte" => DataType::Int8,
        "smallint" | "short" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" | "long" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" | "doubleprecision" => DataType::Float64,
        "string" | "text" | "varchar" | "char" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" | "timestampntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "decimal" | "numeric" | "dec" => DataType::Decimal128(10, 0),
        _ => {
            if let Some(args) = ["decimal(", "numeric(", "dec("]
                .iter()
                .find_map(|p| lower.strip_prefix(p))
                .and_then(|rest| rest.strip_suffix(')'))
            {
                let (p, s) = args.split_once(',').unwrap_or((args, "0"));
                let p: u8 = p.parse().map_err(|_| format!("bad decimal type {text}"))?;
                let s: i8 = s.parse().map_err(|_| format!("bad decimal type {text}"))?;
                if p == 0 || p > 38 || s < 0 || s as u8 > p {
                    return Err(format!("bad decimal type {text}"));
                }
                DataType::Decimal128(p, s)
            } else if let Some(n) = ["varchar(", "char("]
                .iter()
                .find_map(|p| lower.strip_prefix(p))
                .and_then(|rest| rest.strip_suffix(')'))
            {
                n.parse::<u32>()
                    .map_err(|_| format!("bad string type {text}"))?;
                DataType::Utf8
            } else {
                return Err(unsupported(&format!("the type {text}")));
            }
        }
    })
}

/// The Delta spelling of an Arrow type ([`parse_type_name`]'s inverse for its types).
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "int".into(),
        DataType::Int64 => "bigint".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "binary".into(),
        DataType::Date32 => "date".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp".into(),
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        DataType::Decimal128(p, s) => format!("decimal({p},{s})"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
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
}
