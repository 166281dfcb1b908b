//! Row filters: one condition on one column, as the studio's `?where=` and `mdfkit cat --where`
//! take it, applied to each row's values during a scan (the callers bound the scan: a number of
//! matches, a time budget).
//!
//! The text is `COLUMN=VALUE`, `COLUMN<VALUE`, `COLUMN>VALUE` or `COLUMN contains VALUE`: the first
//! ` contains ` (any ASCII case) splits it, else the first `=`, `<` or `>`; both sides are trimmed.
//! A column written in brackets, as T-SQL quotes names (`[a=b]`, `]]` for a `]` in it), is taken
//! whole, whatever it holds; a filter prints its column so whenever the plain form would not read
//! back as the same filter (an operator or a leading `[` or outer spaces in the column, a
//! ` contains ` before the filter's own operator).
//! Values compare as numbers when both sides read as numbers, otherwise as their SQL Server
//! spellings (so ISO dates and times order by time); NULL matches nothing, as in SQL.

use std::fmt::Write;

use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;

/// One condition on one column: `Col=value`, `Col<value`, `Col>value` or `Col contains value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// The column's name as written (matched case-insensitively).
    pub column: String,
    /// The comparison.
    pub op: Op,
    /// The value compared with, as typed.
    pub value: String,
}

/// A filter's comparison. Values compare as numbers when both sides read as numbers, otherwise
/// as their SQL Server spellings (so ISO dates order by time); NULL matches nothing, as in SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Equal.
    Eq,
    /// Less than.
    Lt,
    /// Greater than.
    Gt,
    /// Holds the text, ignoring ASCII case.
    Contains,
}

impl Filter {
    /// Parses `Col=value`, `Col<value`, `Col>value` or `Col contains value`.
    pub fn parse(text: &str) -> Result<Filter> {
        let bad = || {
            Error::new(
                ErrorKind::Unsupported,
                format!("filter {text:?}: write COLUMN=VALUE, COLUMN<VALUE, COLUMN>VALUE or COLUMN contains VALUE"),
            )
        };
        if let Some(quoted) = text.trim_start().strip_prefix('[') {
            let (column, rest) = unquote(quoted).ok_or_else(bad)?;
            let rest = rest.trim_start();
            let (op, value) = match rest.as_bytes().first() {
                Some(b'=') => (Op::Eq, &rest[1..]),
                Some(b'<') => (Op::Lt, &rest[1..]),
                Some(b'>') => (Op::Gt, &rest[1..]),
                _ => match rest.get(..CONTAINS.len()) {
                    Some(word) if word.eq_ignore_ascii_case(CONTAINS) => (Op::Contains, &rest[CONTAINS.len()..]),
                    _ => return Err(bad()),
                },
            };
            if column.is_empty() {
                return Err(bad());
            }
            return Ok(Filter { column, op, value: value.trim().to_string() });
        }
        let lower = text.to_ascii_lowercase();
        let (column, op, value) = if let Some(at) = lower.find(SPACED_CONTAINS) {
            (&text[..at], Op::Contains, &text[at + SPACED_CONTAINS.len()..])
        } else {
            let at = text.find(['=', '<', '>']).ok_or_else(bad)?;
            let op = match text.as_bytes()[at] {
                b'=' => Op::Eq,
                b'<' => Op::Lt,
                _ => Op::Gt,
            };
            (&text[..at], op, &text[at + 1..])
        };
        let column = column.trim();
        if column.is_empty() {
            return Err(bad());
        }
        Ok(Filter { column: column.to_string(), op, value: value.trim().to_string() })
    }

    /// The index of the filter's column among `columns` (matched ignoring ASCII case), or an
    /// error naming the table and listing its columns.
    pub fn column_in(&self, table: &str, columns: &[String]) -> Result<usize> {
        columns.iter().position(|c| c.eq_ignore_ascii_case(&self.column)).ok_or_else(|| {
            Error::not_found(format!("{table}: no column {} (columns: {})", self.column, columns.join(", ")))
        })
    }

    /// Whether `value` passes: never for NULL; otherwise its SQL Server spelling, written into
    /// `spelled` (reused from row to row), is compared.
    pub fn matches_value(&self, value: &Value, spelled: &mut String) -> bool {
        if value.is_null() {
            return false;
        }
        spelled.clear();
        let _ = write!(spelled, "{value}");
        self.matches(spelled)
    }

    /// Whether `spelled` (a non-NULL value's SQL Server spelling) passes.
    pub fn matches(&self, spelled: &str) -> bool {
        let numbers = || Some((spelled.trim().parse::<f64>().ok()?, self.value.parse::<f64>().ok()?));
        match self.op {
            Op::Contains => contains_ignoring_case(spelled.as_bytes(), self.value.as_bytes()),
            Op::Eq => numbers().map_or(spelled == self.value, |(a, b)| a == b),
            Op::Lt => numbers().map_or(spelled < self.value.as_str(), |(a, b)| a < b),
            Op::Gt => numbers().map_or(spelled > self.value.as_str(), |(a, b)| a > b),
        }
    }
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (column, op) = (&self.column, self.op);
        let op_text = match op {
            Op::Contains => SPACED_CONTAINS,
            Op::Eq => "=",
            Op::Lt => "<",
            Op::Gt => ">",
        };
        // The plain form reads back as this filter when nothing in it splits earlier than its
        // operator: the first ` contains ` of the whole text is its own, or there is none.
        let plain = format!("{column}{op_text}{}", self.value);
        let first_contains = plain.to_ascii_lowercase().find(SPACED_CONTAINS);
        let reads_back = !column.starts_with('[')
            && column.trim() == column
            && !column.contains(['=', '<', '>'])
            && first_contains == (op == Op::Contains).then_some(column.len());
        if reads_back {
            f.write_str(&plain)
        } else {
            write!(f, "[{}]{op_text}{}", column.replace(']', "]]"), self.value)
        }
    }
}

/// The word that makes a filter a `contains` one, after a bracketed column.
const CONTAINS: &str = "contains ";

/// The same word between a plain column and the value.
const SPACED_CONTAINS: &str = " contains ";

/// The column name of `text` after its opening `[`, up to the `]` that closes it (`]]` stands
/// for one `]`), and the text after it; `None` when no `]` closes it.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut name = String::new();
    let mut rest = text;
    loop {
        let at = rest.find(']')?;
        name.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        match rest.strip_prefix(']') {
            Some(after) => {
                name.push(']');
                rest = after;
            }
            None => return Some((name, rest)),
        }
    }
}

fn contains_ignoring_case(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_compare_as_numbers_or_spellings() {
        let f = Filter::parse("Qty > 5").unwrap();
        assert_eq!((f.column.as_str(), f.op, f.value.as_str()), ("Qty", Op::Gt, "5"));
        assert!(f.matches("12") && !f.matches("5") && !f.matches("-3.5"));
        let f = Filter::parse("Name contains BOB").unwrap();
        assert_eq!(f.op, Op::Contains);
        assert!(f.matches("Bobby") && !f.matches("Rob"));
        let f = Filter::parse("Placed<2024-01-02").unwrap();
        assert!(f.matches("2023-12-31 23:59:59.997") && !f.matches("2024-01-02 00:00:00.000"));
        assert!(Filter::parse("Price=12.5").unwrap().matches("12.50"));
        assert!(Filter::parse("Code=a=b").unwrap().matches("a=b"), "the first operator splits");
        assert!(Filter::parse("no operator").is_err() && Filter::parse("=5").is_err());
        assert_eq!(Filter::parse("Name contains x y").unwrap().to_string(), "Name contains x y");
    }

    #[test]
    fn bracketed_columns_hold_anything_and_every_filter_prints_back_to_itself() {
        let f = Filter::parse("[a=b] > 5").unwrap();
        assert_eq!((f.column.as_str(), f.op, f.value.as_str()), ("a=b", Op::Gt, "5"));
        let f = Filter::parse(" [x]]y contains z] CONTAINS  q ").unwrap();
        assert_eq!((f.column.as_str(), f.op, f.value.as_str()), ("x]y contains z", Op::Contains, "q"));
        assert!(
            Filter::parse("[open=5").is_err() && Filter::parse("[] =5").is_err() && Filter::parse("[a] 5").is_err()
        );
        // Columns the plain form would split elsewhere (found by the studio_input fuzz target:
        // a column ending in "contains" before " contains ").
        for column in ["a contains", "k contains v", "x<y", " pad", "[b]", "Qty"] {
            for op in [Op::Eq, Op::Lt, Op::Gt, Op::Contains] {
                let f = Filter { column: column.to_string(), op, value: "v contains w=1".to_string() };
                assert_eq!(Filter::parse(&f.to_string()).unwrap(), f, "{f}");
            }
        }
        assert_eq!(Filter::parse("Qty>5").unwrap().to_string(), "Qty>5", "plain columns print plain");
    }

    #[test]
    fn null_never_matches_and_an_unknown_column_is_named_with_the_table_s() {
        let f = Filter::parse("qty>5").unwrap();
        let mut spelled = String::new();
        assert!(f.matches_value(&Value::Int(6), &mut spelled) && !f.matches_value(&Value::Int(5), &mut spelled));
        assert!(!f.matches_value(&Value::Null, &mut spelled));
        assert!(!Filter::parse("qty<5").unwrap().matches_value(&Value::Null, &mut spelled));
        let columns = ["Id".to_string(), "Qty".to_string()];
        assert_eq!(f.column_in("dbo.T", &columns).unwrap(), 1);
        let e = Filter::parse("price=1").unwrap().column_in("dbo.T", &columns).unwrap_err();
        assert_eq!(e.to_string(), "dbo.T: no column price (columns: Id, Qty)");
    }
}
