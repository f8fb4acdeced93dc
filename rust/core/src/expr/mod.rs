//! SQL expressions: the predicates of DELETE, UPDATE and MERGE, UPDATE's new values, and
//! (next) CHECK constraints and generated columns.
//!
//! - [`sql`]: SQL text (`"id < 100 AND part = 'a'"`, as Delta Spark and deltalake users write
//!   it) parsed with `sqlparser` (Spark SQL dialect) into an [`Expr`];
//! - [`eval`]: an [`Expr`] evaluated over an Arrow record batch with Arrow's kernels, with
//!   SQL's three-valued logic and null propagation;
//! - [`functions`]: the SQL functions (string, date and time, math) as Spark defines them.
//!
//! [`Expr::skipping_predicate`] derives the part of an expression that the scan's
//! [`Predicate`] can express, so that DML reads only the files that may hold matching rows
//! (partition pruning and statistics, [`crate::scan::skipping`]).

pub mod eval;
pub mod functions;
pub mod sql;

use arrow::datatypes::{DataType, Fields, Schema};
use serde::{Deserialize, Serialize};

use crate::error::{DeltaError, DeltaResult};
use crate::predicate::{CmpOp, Literal, Predicate};

/// How many levels an expression may nest. The parser refuses deeper expressions with an
/// [`DeltaError::InvalidArgument`] naming this limit; every walker over [`Expr`] (evaluation,
/// skipping, column lists, JSON, drop) recurses at most this deep (plus about log2 of the
/// longest `AND`/`OR` chain, which is kept balanced: [`Expr::balanced`]).
pub const MAX_DEPTH: usize = 256;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Cmp(CmpOp),
    And,
    Or,
    Plus,
    Minus,
    Multiply,
    Divide,
    Modulo,
    /// `||`: string concatenation.
    Concat,
}

/// A scalar function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Function {
    /// `coalesce(a, b, ...)`: the first non-null argument.
    Coalesce,
    Lower,
    Upper,
    /// Characters of a string (bytes of a binary).
    Length,
    /// `concat(a, b, ...)`: null when any argument is null (Spark's rule).
    Concat,
    Abs,
    /// Parts of dates and timestamps (of timestamps in UTC), as ints.
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// `current_date()`: today in UTC (evaluated once per batch).
    CurrentDate,
    /// `current_timestamp()` / `now()`: the instant of evaluation (once per batch).
    CurrentTimestamp,
    /// `date_add(date, days)` and `date_sub(date, days)`.
    DateAdd,
    DateSub,
    /// `datediff(end, start)`: days from `start` to `end`.
    DateDiff,
    /// `to_date(text [, pattern])`: Spark's datetime patterns (`yyyy-MM-dd`, ...).
    ToDate,
    /// `date_trunc(unit, timestamp)`: `year`, `quarter`, `month`, `week`, `day`, `hour`,
    /// `minute`, `second`.
    DateTrunc,
    /// `substring(text, pos [, len])` / `substr`: 1-based, negative `pos` counts from the end.
    Substring,
    /// `trim`, `ltrim`, `rtrim`: spaces.
    Trim,
    LTrim,
    RTrim,
    /// `round(x [, digits])`: half up, as Spark rounds.
    Round,
    /// `RLIKE` / `REGEXP`: whether the text matches the regular expression anywhere.
    RLike,
    /// `x + INTERVAL ...` (args: x, months, days, microseconds as integer literals): dates
    /// stay dates when the interval has no time part.
    AddInterval,
}

impl Function {
    fn by_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "coalesce" | "ifnull" | "nvl" => Function::Coalesce,
            "lower" | "lcase" => Function::Lower,
            "upper" | "ucase" => Function::Upper,
            "length" | "char_length" | "character_length" => Function::Length,
            "concat" => Function::Concat,
            "abs" => Function::Abs,
            "year" => Function::Year,
            "month" => Function::Month,
            "day" | "dayofmonth" => Function::Day,
            "hour" => Function::Hour,
            "minute" => Function::Minute,
            "second" => Function::Second,
            "current_date" | "curdate" => Function::CurrentDate,
            "current_timestamp" | "now" => Function::CurrentTimestamp,
            "date_add" | "dateadd" => Function::DateAdd,
            "date_sub" => Function::DateSub,
            "datediff" => Function::DateDiff,
            "to_date" => Function::ToDate,
            "date_trunc" => Function::DateTrunc,
            "substring" | "substr" => Function::Substring,
            "trim" | "btrim" => Function::Trim,
            "ltrim" => Function::LTrim,
            "rtrim" => Function::RTrim,
            "round" => Function::Round,
            "rlike" | "regexp" | "regexp_like" => Function::RLike,
            _ => return None,
        })
    }

    /// How many arguments the function takes (`min..=max`).
    pub fn arity(self) -> (usize, usize) {
        match self {
            Function::Coalesce | Function::Concat => (1, usize::MAX),
            Function::CurrentDate | Function::CurrentTimestamp => (0, 0),
            Function::DateAdd
            | Function::DateSub
            | Function::DateDiff
            | Function::DateTrunc
            | Function::RLike => (2, 2),
            Function::ToDate | Function::Round => (1, 2),
            Function::Substring => (2, 3),
            Function::AddInterval => (4, 4),
            _ => (1, 1),
        }
    }
}

/// A scalar SQL expression over the columns of one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// A column; `a.b` names field `b` of struct column `a` (or a column literally named
    /// `a.b`).
    Column(String),
    /// A literal; untyped literals take their type from what they meet (`d = '2024-01-01'`
    /// compares dates).
    Literal(Literal),
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Negative(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// `CAST(expr AS type)`: a failed conversion is an error (ANSI mode).
    Cast {
        expr: Box<Expr>,
        #[serde(with = "data_type_text")]
        to: DataType,
    },
    Function {
        function: Function,
        args: Vec<Expr>,
    },
}

/// Data types in their Delta schema spelling, for the JSON form of [`Expr::Cast`].
mod data_type_text {
    use arrow::datatypes::DataType;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(dt: &DataType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::sql::type_name(dt))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DataType, D::Error> {
        let text = String::deserialize(d)?;
        super::sql::parse_type_name(&text).map_err(serde::de::Error::custom)
    }
}

impl Expr {
    /// Parses SQL text ([`sql::parse`]).
    pub fn parse(text: &str) -> DeltaResult<Self> {
        sql::parse(text)
    }

    /// `left op right`.
    pub fn binary(op: BinaryOp, left: Expr, right: Expr) -> Self {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    /// `parts[0] op parts[1] op ...` for an associative `op` (`AND`, `OR`) as a balanced
    /// tree, so that its depth grows with the logarithm of the number of parts; `None` when
    /// there are none.
    pub fn balanced(op: BinaryOp, mut parts: Vec<Expr>) -> Option<Expr> {
        // Pairs neighbours level by level: the operands keep their left-to-right order.
        while parts.len() > 1 {
            let mut next = Vec::with_capacity(parts.len().div_ceil(2));
            let mut it = parts.into_iter();
            while let Some(a) = it.next() {
                next.push(match it.next() {
                    Some(b) => Expr::binary(op, a, b),
                    None => a,
                });
            }
            parts = next;
        }
        parts.pop()
    }

    /// The columns the expression reads, each once, in order of appearance.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        // One traversal serves reading and rewriting (expressions are small; this runs once
        // per statement, never per row).
        self.clone().visit_mut(&mut |e| {
            if let Expr::Column(c) = e {
                if !out.contains(c) {
                    out.push(c.clone());
                }
            }
        });
        out
    }

    /// Rewrites every column name into the spelling of `schema` (Spark resolves names
    /// case-insensitively), so the expression can be evaluated over batches of `schema`.
    /// An unknown or ambiguous column is an error naming the columns there are.
    pub fn resolve(&self, schema: &Schema) -> DeltaResult<Expr> {
        let mut out = self.clone();
        let mut error = None;
        out.visit_mut(&mut |e| {
            if let Expr::Column(name) = e {
                match resolve_name(schema.fields(), name) {
                    Ok(resolved) => *name = resolved,
                    Err(e) => {
                        error.get_or_insert(e);
                    }
                }
            }
        });
        match error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Calls `f` on this expression and every subexpression, parents first.
    fn visit_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        f(self);
        match self {
            Expr::Column(_) | Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } => {
                left.visit_mut(f);
                right.visit_mut(f);
            }
            Expr::Not(e) | Expr::Negative(e) | Expr::IsNull { expr: e, .. } => e.visit_mut(f),
            Expr::Cast { expr, .. } => expr.visit_mut(f),
            Expr::InList { expr, list, .. } => {
                expr.visit_mut(f);
                list.iter_mut().for_each(|e| e.visit_mut(f));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit_mut(f);
                low.visit_mut(f);
                high.visit_mut(f);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.visit_mut(f);
                pattern.visit_mut(f);
            }
            Expr::Case {
                operand,
                branches,
                otherwise,
            } => {
                if let Some(o) = operand {
                    o.visit_mut(f);
                }
                for (w, t) in branches {
                    w.visit_mut(f);
                    t.visit_mut(f);
                }
                if let Some(o) = otherwise {
                    o.visit_mut(f);
                }
            }
            Expr::Function { args, .. } => args.iter_mut().for_each(|e| e.visit_mut(f)),
        }
    }

    /// The expression with every column name `c` replaced by `rename(c)`.
    pub fn rename_columns(&self, rename: &dyn Fn(&str) -> String) -> Expr {
        let mut out = self.clone();
        out.visit_mut(&mut |e| {
            if let Expr::Column(c) = e {
                *c = rename(c);
            }
        });
        out
    }

    /// The conjuncts of an `AND` chain (the expression itself otherwise).
    pub fn conjuncts(&self) -> Vec<&Expr> {
        match self {
            Expr::Binary {
                op: BinaryOp::And,
                left,
                right,
            } => {
                let mut out = left.conjuncts();
                out.extend(right.conjuncts());
                out
            }
            other => vec![other],
        }
    }

    /// A [`Predicate`] that every row satisfying this expression satisfies too, for
    /// skipping files (`None`: nothing can be skipped). Conjuncts the predicate type cannot
    /// express are left out, which only weakens it; a disjunction or negation needs its parts
    /// expressed exactly.
    pub fn skipping_predicate(&self) -> Option<Predicate> {
        match self {
            Expr::Binary {
                op: BinaryOp::And,
                left,
                right,
            } => match (left.skipping_predicate(), right.skipping_predicate()) {
                (Some(l), Some(r)) => Some(Predicate::and_flat(l, r)),
                (one, other) => one.or(other),
            },
            Expr::Binary {
                op: BinaryOp::Or,
                left,
                right,
            } => Some(Predicate::or_flat(
                left.skipping_predicate()?,
                right.skipping_predicate()?,
            )),
            other => other.exact_predicate(),
        }
    }

    /// The [`Predicate`] equal to this expression, where there is one.
    pub fn exact_predicate(&self) -> Option<Predicate> {
        let column = |e: &Expr| match e {
            Expr::Column(c) if !c.contains('.') => Some(c.clone()),
            _ => None,
        };
        let literal = |e: &Expr| match e {
            Expr::Literal(l) if *l != Literal::Null => Some(l.clone()),
            Expr::Negative(inner) => match inner.as_ref() {
                Expr::Literal(Literal::Int(i)) => i.checked_neg().map(Literal::Int),
                Expr::Literal(Literal::Float(f)) => Some(Literal::Float(-f)),
                _ => None,
            },
            _ => None,
        };
        match self {
            Expr::Binary {
                op: BinaryOp::Cmp(op),
                left,
                right,
            } => {
                if let (Some(c), Some(l)) = (column(left), literal(right)) {
                    Some(Predicate::compare(c, *op, l))
                } else if let (Some(l), Some(c)) = (literal(left), column(right)) {
                    Some(Predicate::compare(c, op.flipped(), l))
                } else {
                    None
                }
            }
            Expr::Binary {
                op: op @ (BinaryOp::And | BinaryOp::Or),
                left,
                right,
            } => {
                let (l, r) = (left.exact_predicate()?, right.exact_predicate()?);
                Some(if *op == BinaryOp::And {
                    Predicate::and_flat(l, r)
                } else {
                    Predicate::or_flat(l, r)
                })
            }
            Expr::Not(inner) => Some(Predicate::Not(Box::new(inner.exact_predicate()?))),
            Expr::IsNull { expr, negated } => {
                let p = Predicate::IsNull {
                    column: column(expr)?,
                };
                Some(if *negated {
                    Predicate::Not(Box::new(p))
                } else {
                    p
                })
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let p = Predicate::In {
                    column: column(expr)?,
                    values: list.iter().map(literal).collect::<Option<_>>()?,
                };
                Some(if *negated {
                    Predicate::Not(Box::new(p))
                } else {
                    p
                })
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let c = column(expr)?;
                let p = Predicate::And(vec![
                    Predicate::compare(c.clone(), CmpOp::Ge, literal(low)?),
                    Predicate::compare(c, CmpOp::Le, literal(high)?),
                ]);
                Some(if *negated {
                    Predicate::Not(Box::new(p))
                } else {
                    p
                })
            }
            _ => None,
        }
    }
}

impl From<&Predicate> for Expr {
    /// The expression equal to a filter predicate.
    fn from(p: &Predicate) -> Self {
        let all = |children: &[Predicate], op: BinaryOp, empty: bool| {
            Expr::balanced(op, children.iter().map(Expr::from).collect())
                .unwrap_or(Expr::Literal(Literal::Bool(empty)))
        };
        match p {
            Predicate::Compare { column, op, value } => Expr::binary(
                BinaryOp::Cmp(*op),
                Expr::Column(column.clone()),
                Expr::Literal(value.clone()),
            ),
            Predicate::IsNull { column } => Expr::IsNull {
                expr: Box::new(Expr::Column(column.clone())),
                negated: false,
            },
            Predicate::In { column, values } => Expr::InList {
                expr: Box::new(Expr::Column(column.clone())),
                list: values.iter().cloned().map(Expr::Literal).collect(),
                negated: false,
            },
            Predicate::And(children) => all(children, BinaryOp::And, true),
            Predicate::Or(children) => all(children, BinaryOp::Or, false),
            Predicate::Not(child) => Expr::Not(Box::new(Expr::from(child.as_ref()))),
        }
    }
}

/// `name` in the spelling of `fields`: an exact match, else the one case-insensitive match;
/// a dotted name is a column (the longest prefix that names one, since columns may hold dots)
/// followed by struct fields.
fn resolve_name(fields: &Fields, name: &str) -> DeltaResult<String> {
    let find = |fields: &Fields, part: &str| -> Option<(String, DataType)> {
        if let Some(f) = fields.iter().find(|f| f.name() == part) {
            return Some((f.name().clone(), f.data_type().clone()));
        }
        let key = crate::schema::name_key(part);
        let mut matches = fields
            .iter()
            .filter(|f| crate::schema::name_key(f.name()) == key);
        match (matches.next(), matches.next()) {
            (Some(f), None) => Some((f.name().clone(), f.data_type().clone())),
            _ => None,
        }
    };
    let unknown = || {
        DeltaError::InvalidArgument(format!(
            "the expression names an unknown column {name:?} (columns: {})",
            fields
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    if let Some((n, _)) = find(fields, name) {
        return Ok(n);
    }
    let dots: Vec<usize> = name.match_indices('.').map(|(i, _)| i).collect();
    for &i in dots.iter().rev() {
        let Some((top, dt)) = find(fields, &name[..i]) else {
            continue;
        };
        let mut resolved = vec![top];
        let mut current = dt;
        for part in name[i + 1..].split('.') {
            let DataType::Struct(children) = &current else {
                return Err(unknown());
            };
            let (n, dt) = find(children, part).ok_or_else(unknown)?;
            resolved.push(n);
            current = dt;
        }
        return Ok(resolved.join("."));
    }
    Err(unknown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    #[test]
    fn skipping_predicates_keep_what_they_can_express() {
        let e = Expr::parse("id < 100 AND part = 'a' AND lower(s) = 'x'").unwrap();
        assert_eq!(
            e.skipping_predicate().unwrap(),
            Predicate::And(vec![
                Predicate::compare("id", CmpOp::Lt, Literal::Int(100)),
                Predicate::compare("part", CmpOp::Eq, Literal::String("a".into())),
            ])
        );
        assert!(e.exact_predicate().is_none());
        // A disjunction needs both sides; a negation needs its operand exactly.
        assert!(Expr::parse("id < 1 OR lower(s) = 'x'")
            .unwrap()
            .skipping_predicate()
            .is_none());
        assert!(Expr::parse("NOT (id < 1 AND lower(s) = 'x')")
            .unwrap()
            .skipping_predicate()
            .is_none());
        assert_eq!(
            Expr::parse("5 >= id").unwrap().exact_predicate().unwrap(),
            Predicate::compare("id", CmpOp::Le, Literal::Int(5))
        );
        assert_eq!(
            Expr::parse("id BETWEEN -1 AND 3")
                .unwrap()
                .exact_predicate()
                .unwrap(),
            Predicate::And(vec![
                Predicate::compare("id", CmpOp::Ge, Literal::Int(-1)),
                Predicate::compare("id", CmpOp::Le, Literal::Int(3)),
            ])
        );
    }

    #[test]
    fn columns_resolve_case_insensitively_and_into_structs() {
        let schema = Schema::new(vec![
            Field::new("Id", DataType::Int64, true),
            Field::new(
                "s",
                DataType::Struct(vec![Field::new("Inner", DataType::Utf8, true)].into()),
                true,
            ),
        ]);
        let e = Expr::parse("id > 1 AND s.inner = 'x'").unwrap();
        let r = e.resolve(&schema).unwrap();
        assert_eq!(r.columns(), ["Id", "s.Inner"]);
        let err = Expr::parse("nope = 1")
            .unwrap()
            .resolve(&schema)
            .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }

    #[test]
    fn json_round_trip() {
        let e = Expr::parse(
            "CASE WHEN a IN (1, 2) THEN CAST(b AS DECIMAL(10,2)) ELSE -c END > 3 OR s LIKE 'x%'",
        )
        .unwrap();
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Expr>(&text).unwrap(), e);
    }
}
