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
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{DeltaError, DeltaResult};
use crate::expr::{BinaryOp, Expr, Function, MAX_DEPTH};
use crate::predicate::{CmpOp, Literal};

/// Longest expression text accepted, in tokens (the parse needs stack in proportion, see
/// [`parse`]).
pub const MAX_TOKENS: usize = 1_000_000;

/// Stack of the parsing thread: a base for sqlparser's own recursion (bounded by its recursion
/// counter, [`SQLPARSER_DEPTH`]) plus an allowance per token, since sqlparser builds chains
/// of infix operators (`a + a + ...`, `x AND y AND ...`) as left-deep trees in a loop, and
/// dropping such a tree (which sqlparser does itself when a later token is a syntax error)
/// recurses once per level.
const BASE_STACK: usize = 64 << 20;
/// sqlparser's recursion limit: a few of its recursions per syntactic level.
const SQLPARSER_DEPTH: usize = 4 * MAX_DEPTH + 64;
const STACK_PER_TOKEN: usize = 256;

/// Parses one SQL expression; trailing text is an error. Chains of `AND` or `OR` of any
/// length become balanced trees (both are associative in three-valued logic and every
/// operand is evaluated anyway), so a generated predicate of 20,000 terms nests about 15
/// levels; anything nested deeper than [`MAX_DEPTH`] levels (parentheses, `NOT`, `CASE`,
/// arithmetic chains) is an [`DeltaError::InvalidArgument`] naming the limit.
pub fn parse(text: &str) -> DeltaResult<Expr> {
    let bad = |e: &dyn std::fmt::Display| {
        let shown: String = text.chars().take(200).collect();
        let ellipsis = if shown.len() < text.len() { "…" } else { "" };
        DeltaError::InvalidArgument(format!("not a SQL expression: {shown:?}{ellipsis}: {e}"))
    };
    let dialect = SparkSqlDialect {};
    let tokens = Tokenizer::new(&dialect, text)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(|e| bad(&e))?;
    if tokens.len() > MAX_TOKENS {
        return Err(bad(&format!(
            "longer than the limit of {MAX_TOKENS} tokens ({} tokens)",
            tokens.len()
        )));
    }
    // Nesting is checked on the tokens: sqlparser's own recursion limit surfaces as whatever
    // syntax error an alternative it tries next runs into, not as a limit.
    if nesting(&tokens) > MAX_DEPTH {
        return Err(bad(&too_deep()));
    }
    // The parse runs on a thread whose stack is sized for the token count, so neither
    // sqlparser's recursion nor the drop of its trees depends on the caller's stack.
    let stack = BASE_STACK + tokens.len() * STACK_PER_TOKEN;
    let result = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("deltalog-sql".into())
            .stack_size(stack)
            .spawn_scoped(scope, move || -> Result<Expr, String> {
                // Below MAX_DEPTH syntactic levels (checked above) sqlparser recurses a few
                // times per level; its limit only guards against what the check misses.
                let mut parser = Parser::new(&dialect)
                    .with_recursion_limit(SQLPARSER_DEPTH)
                    .with_tokens_with_locations(tokens);
                let parsed = parser.parse_expr().map_err(parser_error)?;
                parser.expect_token(&Token::EOF).map_err(parser_error)?;
                convert(&parsed, 0)
            })
            .map_err(|e| format!("cannot start the parsing thread: {e}"))?;
        worker
            .join()
            .unwrap_or_else(|_| Err("the SQL parser panicked".to_string()))
    });
    result.map_err(|reason| bad(&reason))
}

/// The deepest syntactic nesting of `tokens`: open parentheses and `CASE`s, plus the run of
/// prefix operators (`NOT`, unary `-`, `+`, `!`) being read, each of which sqlparser parses
/// by recursion.
fn nesting(tokens: &[TokenWithSpan]) -> usize {
    let (mut depth, mut run, mut deepest) = (0usize, 0usize, 0usize);
    for t in tokens {
        match &t.token {
            Token::Whitespace(_) => continue,
            Token::LParen => (depth, run) = (depth + 1, 0),
            Token::RParen => (depth, run) = (depth.saturating_sub(1), 0),
            Token::Word(w) if w.keyword == Keyword::CASE => (depth, run) = (depth + 1, 0),
            Token::Word(w) if w.keyword == Keyword::END => {
                (depth, run) = (depth.saturating_sub(1), 0)
            }
            Token::Word(w) if w.keyword == Keyword::NOT => run += 1,
            Token::Minus | Token::Plus | Token::ExclamationMark => run += 1,
            _ => run = 0,
        }
        deepest = deepest.max(depth + run);
    }
    deepest
}

fn parser_error(e: sqlparser::parser::ParserError) -> String {
    match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => too_deep(),
        other => other.to_string(),
    }
}

fn too_deep() -> String {
    format!("the expression nests deeper than the limit of {MAX_DEPTH} levels")
}

fn unsupported(what: &dyn std::fmt::Display) -> String {
    format!("{what} is not supported in deltalog expressions")
}

/// The operands of a chain of `op` (`a op b op c`, grouped any way, parenthesized or not),
/// left to right, found without recursion.
fn chain<'a>(e: &'a ast::Expr, op: &BinaryOperator) -> Vec<&'a ast::Expr> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            ast::Expr::BinaryOp { left, op: o, right } if o == op => {
                stack.push(right);
                stack.push(left);
            }
            ast::Expr::Nested(inner) if matches!(inner.as_ref(), ast::Expr::BinaryOp { op: o, .. } if o == op) => {
                stack.push(inner)
            }
            other => out.push(other),
        }
    }
    out
}

/// Converts `e`, found `depth` levels below the top of the expression.
fn convert(e: &ast::Expr, depth: usize) -> Result<Expr, String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    let convert = |e: &ast::Expr| convert(e, depth + 1);
    let boxed = |e: &ast::Expr| convert(e).map(Box::new);
    Ok(match e {
        ast::Expr::BinaryOp {
            op: op @ (BinaryOperator::And | BinaryOperator::Or),
            ..
        } => {
            let operands = chain(e, op);
            // The balanced tree adds about log2(n) levels above each operand.
            let below = depth + (usize::BITS - operands.len().leading_zeros()) as usize;
            let converted = operands
                .into_iter()
                .map(|o| self::convert(o, below))
                .collect::<Result<Vec<_>, _>>()?;
            let op = if *op == BinaryOperator::And {
                BinaryOp::And
            } else {
                BinaryOp::Or
            };
            Expr::balanced(op, converted).ok_or("an empty chain")?
        }
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
                BinaryOperator::Spaceship => {
                    return Ok(null_safe_eq(convert(left)?, convert(right)?))
                }
                other => return Err(unsupported(&format!("the operator {other}"))),
            };
            // `x + INTERVAL ...` / `x - INTERVAL ...`.
            if let (BinaryOp::Plus | BinaryOp::Minus, ast::Expr::Interval(interval)) =
                (op, right.as_ref())
            {
                let (months, days, micros) = interval_parts(interval)?;
                let sign = if op == BinaryOp::Minus { -1 } else { 1 };
                let lit = |v: i64| Expr::Literal(Literal::Int(v * sign));
                return Ok(Expr::Function {
                    function: Function::AddInterval,
                    args: vec![convert(left)?, lit(months), lit(days), lit(micros)],
                });
            }
            if let (BinaryOp::Plus, ast::Expr::Interval(interval)) = (op, left.as_ref()) {
                let (months, days, micros) = interval_parts(interval)?;
                let lit = |v: i64| Expr::Literal(Literal::Int(v));
                return Ok(Expr::Function {
                    function: Function::AddInterval,
                    args: vec![convert(right)?, lit(months), lit(days), lit(micros)],
                });
            }
            Expr::binary(op, convert(left)?, convert(right)?)
        }
        ast::Expr::RLike {
            negated,
            expr,
            pattern,
            ..
        } => {
            let matched = Expr::Function {
                function: Function::RLike,
                args: vec![convert(expr)?, convert(pattern)?],
            };
            if *negated {
                Expr::Not(Box::new(matched))
            } else {
                matched
            }
        }
        ast::Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![convert(expr)?];
            args.push(match substring_from {
                Some(from) => convert(from)?,
                None => Expr::Literal(Literal::Int(1)),
            });
            if let Some(len) = substring_for {
                args.push(convert(len)?);
            }
            Expr::Function {
                function: Function::Substring,
                args,
            }
        }
        ast::Expr::Trim {
            trim_where,
            trim_what: None,
            expr,
            trim_characters: None,
        } => Expr::Function {
            function: match trim_where {
                Some(ast::TrimWhereField::Leading) => Function::LTrim,
                Some(ast::TrimWhereField::Trailing) => Function::RTrim,
                _ => Function::Trim,
            },
            args: vec![convert(expr)?],
        },
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
            let args = match &f.args {
                // `current_date` without parentheses.
                FunctionArguments::None => Vec::new(),
                FunctionArguments::List(list) => {
                    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                        return Err(unsupported(&format!("the arguments of {name}")));
                    }
                    list.args
                        .iter()
                        .map(|a| match a {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => convert(e),
                            other => Err(unsupported(&format!("the argument {other}"))),
                        })
                        .collect::<Result<Vec<_>, _>>()?
                }
                FunctionArguments::Subquery(_) => {
                    return Err(unsupported(&format!("{name} of a subquery")))
                }
            };
            let (least, most) = function.arity();
            if args.len() < least || args.len() > most || function == Function::AddInterval {
                return Err(match (least, most) {
                    (_, usize::MAX) => format!("{name} takes one or more arguments"),
                    (a, b) if a == b => format!("{name} takes {a} argument(s), not {}", args.len()),
                    (a, b) => format!("{name} takes {a} to {b} arguments, not {}", args.len()),
                });
            }
            Expr::Function { function, args }
        }
        other => return Err(unsupported(&format!("`{other}`"))),
    })
}

/// `a <=> b` (null-safe equality, never null): true when both are null, false when one is.
fn null_safe_eq(a: Expr, b: Expr) -> Expr {
    let is_null = |e: &Expr| Expr::IsNull {
        expr: Box::new(e.clone()),
        negated: false,
    };
    Expr::Case {
        operand: None,
        branches: vec![
            (
                Expr::binary(BinaryOp::And, is_null(&a), is_null(&b)),
                Expr::Literal(Literal::Bool(true)),
            ),
            (
                Expr::binary(BinaryOp::Or, is_null(&a), is_null(&b)),
                Expr::Literal(Literal::Bool(false)),
            ),
        ],
        otherwise: Some(Box::new(Expr::binary(BinaryOp::Cmp(CmpOp::Eq), a, b))),
    }
}

/// `INTERVAL '3' DAY`, `INTERVAL 2 HOURS` as (months, days, microseconds).
fn interval_parts(interval: &ast::Interval) -> Result<(i64, i64, i64), String> {
    let text = match interval.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone(),
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            other => return Err(unsupported(&format!("the interval {other}"))),
        },
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                Value::Number(n, _) => format!("-{n}"),
                other => return Err(unsupported(&format!("the interval {other}"))),
            },
            other => return Err(unsupported(&format!("the interval {other}"))),
        },
        other => return Err(unsupported(&format!("the interval {other}"))),
    };
    // The Spark dialect requires the unit (`INTERVAL '1 day'` does not parse).
    let pairs = match (&interval.leading_field, &interval.last_field) {
        (Some(field), None) => vec![(text.trim().to_string(), field.to_string())],
        _ => return Err(unsupported(&"an interval range (e.g. DAY TO SECOND)")),
    };
    let (mut months, mut days, mut micros) = (0i64, 0i64, 0i64);
    for (amount, unit) in pairs {
        let n: i64 = amount
            .parse()
            .map_err(|_| format!("bad interval amount {amount:?} (a whole number)"))?;
        let unit = unit.to_ascii_lowercase();
        let unit = unit.strip_suffix('s').unwrap_or(&unit);
        let overflow = || format!("the interval {n} {unit} is too large");
        match unit {
            "year" => {
                months = n
                    .checked_mul(12)
                    .and_then(|m| months.checked_add(m))
                    .ok_or_else(overflow)?
            }
            "month" => months = months.checked_add(n).ok_or_else(overflow)?,
            "week" => {
                days = n
                    .checked_mul(7)
                    .and_then(|d| days.checked_add(d))
                    .ok_or_else(overflow)?
            }
            "day" => days = days.checked_add(n).ok_or_else(overflow)?,
            "hour" | "minute" | "second" | "millisecond" | "microsecond" => {
                let per = match unit {
                    "hour" => 3_600_000_000,
                    "minute" => 60_000_000,
                    "second" => 1_000_000,
                    "millisecond" => 1_000,
                    _ => 1,
                };
                micros = n
                    .checked_mul(per)
                    .and_then(|m| micros.checked_add(m))
                    .ok_or_else(overflow)?;
            }
            other => return Err(unsupported(&format!("the interval unit {other}"))),
        }
    }
    Ok((months, days, micros))
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
mod tests;
