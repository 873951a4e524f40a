//! A reader of the PromQL a dashboard holds, enough to name what each
//! expression reads: the metrics of its selectors, the labels of their
//! matchers, the labels of each `by`/`without` and `on`/`ignoring`, and
//! what each function and aggregation is applied to.
//!
//! It reads a subset of PromQL and refuses the rest (`offset`, `@`, a
//! selector without a metric name, anything it cannot place), so a query
//! cannot slip past the check by being written in a form the reader would
//! skip. A range, or a subquery's range and step, is skipped whole. Grafana's
//! variables are read where Grafana puts them: inside strings and ranges
//! (skipped with them) and in place of a scalar (`topk($n, …)`).

use std::fmt;

/// One expression, reduced to what the check needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number, or a Grafana variable in place of one.
    Scalar,
    /// A string literal outside a selector.
    Str,
    /// `metric{label op "value", …}`, with or without a range.
    Selector {
        metric: String,
        matchers: Vec<String>,
    },
    /// `func(args)`.
    Call { func: String, args: Vec<Expr> },
    /// `op by (labels) (args)`, or `without`; `grouping` is `None` when
    /// the aggregation keeps no label.
    Aggregate {
        op: String,
        grouping: Option<Grouping>,
        args: Vec<Expr>,
    },
    /// `lhs op rhs` with its vector matching.
    Binary {
        op: String,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        matching: Option<Matching>,
    },
}

/// `by (labels)` or `without (labels)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Grouping {
    pub without: bool,
    pub labels: Vec<String>,
}

/// `on (labels)` or `ignoring (labels)`, and `group_left`/`group_right`
/// with the labels they copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Matching {
    pub ignoring: bool,
    pub labels: Vec<String>,
    pub group: Option<(Side, Vec<String>)>,
}

/// Which side of a many-to-one match is the many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Side {
    Left,
    Right,
}

/// Why an expression could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Number,
    Str(String),
    /// A Grafana variable outside a string: `$name`, `${name}`.
    Variable,
    /// `[…]`, a range or a subquery's range and step, skipped whole.
    Range,
    Punct(&'static str),
}

/// Punctuation, the two-character operators first so they win.
const PUNCTS: [&str; 20] = [
    "==", "!=", "<=", ">=", "=~", "!~", "(", ")", "{", "}", ",", "+", "-", "*", "/", "%", "^", "=",
    "<", ">",
];

fn tokens(text: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ("+-".contains(chars[i]) && "eE".contains(chars[i - 1])))
            {
                i += 1;
            }
            out.push(Token::Number);
        } else if c == '"' || c == '\'' || c == '`' {
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(ParseError(format!("unterminated string in {text:?}"))),
                    Some(&q) if q == c => break,
                    Some('\\') if c != '`' => {
                        value.extend(chars.get(i + 1));
                        i += 2;
                    }
                    Some(&other) => {
                        value.push(other);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push(Token::Str(value));
        } else if c == '$' {
            i += 1;
            if chars.get(i) == Some(&'{') {
                while i < chars.len() && chars[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            out.push(Token::Variable);
        } else if c == '[' {
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            if i == chars.len() {
                return Err(ParseError(format!("unterminated range in {text:?}")));
            }
            i += 1;
            out.push(Token::Range);
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            i += p.len();
            out.push(Token::Punct(p));
        } else {
            return Err(ParseError(format!("unexpected {c:?} in {text:?}")));
        }
    }
    Ok(out)
}

/// Aggregation operators; those whose first argument is a parameter
/// (`topk(3, …)`) are told apart by their argument list. `count_values`,
/// whose parameter is a label, is read as an unknown function.
const AGGREGATIONS: [&str; 11] = [
    "sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk", "quantile",
];

/// Binary operators by precedence, loosest first; `^` alone binds right.
const PRECEDENCE: [&[&str]; 6] = [
    &["or"],
    &["and", "unless"],
    &["==", "!=", "<", ">", "<=", ">="],
    &["+", "-"],
    &["*", "/", "%", "atan2"],
    &["^"],
];

/// Reads one PromQL expression.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let mut parser = Parser {
        tokens: tokens(text)?,
        at: 0,
        text,
    };
    let expr = parser.expr(0)?;
    match parser.peek() {
        None => Ok(expr),
        Some(token) => Err(parser.error(&format!("unexpected {token:?} after the expression"))),
    }
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn error(&self, what: &str) -> ParseError {
        ParseError(format!("{what} in {:?}", self.text))
    }

    fn eat(&mut self, punct: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(p)) if *p == punct) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: &str) -> Result<(), ParseError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{punct}`, found {:?}", self.peek())))
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Token::Ident(w)) if w == word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Eats `first` (false) or `second` (true), if either is next.
    fn either(&mut self, first: &str, second: &str) -> Option<bool> {
        if self.eat_word(first) {
            Some(false)
        } else if self.eat_word(second) {
            Some(true)
        } else {
            None
        }
    }

    /// The binary operator at the cursor and its precedence level.
    fn operator(&self) -> Option<(String, usize)> {
        let op = match self.peek()? {
            Token::Punct(p) => (*p).to_owned(),
            Token::Ident(word) => word.clone(),
            _ => return None,
        };
        PRECEDENCE
            .iter()
            .position(|level| level.contains(&op.as_str()))
            .map(|level| (op, level))
    }

    fn expr(&mut self, min_level: usize) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        while let Some((op, level)) = self.operator() {
            if level < min_level {
                break;
            }
            self.at += 1;
            self.eat_word("bool");
            let matching = self.matching()?;
            let next_level = if op == "^" { level } else { level + 1 };
            let rhs = self.expr(next_level)?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                matching,
            };
        }
        Ok(lhs)
    }

    fn matching(&mut self) -> Result<Option<Matching>, ParseError> {
        let Some(ignoring) = self.either("on", "ignoring") else {
            return Ok(None);
        };
        let labels = self.labels()?;
        let group = if self.eat_word("group_left") {
            Some((Side::Left, self.optional_labels()?))
        } else if self.eat_word("group_right") {
            Some((Side::Right, self.optional_labels()?))
        } else {
            None
        };
        Ok(Some(Matching {
            ignoring,
            labels,
            group,
        }))
    }

    fn optional_labels(&mut self) -> Result<Vec<String>, ParseError> {
        if self.peek() == Some(&Token::Punct("(")) {
            self.labels()
        } else {
            Ok(Vec::new())
        }
    }

    /// `(a, b, …)`: the labels of a grouping or a matching.
    fn labels(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect("(")?;
        let mut labels = Vec::new();
        while !self.eat(")") {
            match self.next() {
                Some(Token::Ident(label)) => labels.push(label),
                other => return Err(self.error(&format!("expected a label, found {other:?}"))),
            }
            if !self.eat(",") && self.peek() != Some(&Token::Punct(")")) {
                return Err(self.error("expected `,` or `)` in a label list"));
            }
        }
        Ok(labels)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.eat("-") || self.eat("+") {
            return self.unary();
        }
        let expr = self.primary()?;
        if self.peek() == Some(&Token::Range) {
            self.at += 1;
        }
        if matches!(self.peek(), Some(Token::Ident(w)) if w == "offset") {
            return Err(self.error("`offset` is not read by this check"));
        }
        Ok(expr)
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        match self.next() {
            Some(Token::Number | Token::Variable) => Ok(Expr::Scalar),
            Some(Token::Str(_)) => Ok(Expr::Str),
            Some(Token::Punct("(")) => {
                let inner = self.expr(0)?;
                self.expect(")")?;
                Ok(inner)
            }
            Some(Token::Punct("{")) => {
                self.at -= 1;
                self.selector(None)
            }
            Some(Token::Ident(word)) => {
                let lower = word.to_ascii_lowercase();
                if lower == "inf" || lower == "nan" {
                    Ok(Expr::Scalar)
                } else if AGGREGATIONS.contains(&word.as_str()) {
                    self.aggregate(word)
                } else if self.peek() == Some(&Token::Punct("(")) {
                    let args = self.args()?;
                    Ok(Expr::Call { func: word, args })
                } else {
                    self.selector(Some(word))
                }
            }
            other => Err(self.error(&format!("unexpected {other:?}"))),
        }
    }

    fn aggregate(&mut self, op: String) -> Result<Expr, ParseError> {
        let before = self.grouping()?;
        let args = self.args()?;
        let after = self.grouping()?;
        if before.is_some() && after.is_some() {
            return Err(self.error("two groupings on one aggregation"));
        }
        Ok(Expr::Aggregate {
            op,
            grouping: before.or(after),
            args,
        })
    }

    fn grouping(&mut self) -> Result<Option<Grouping>, ParseError> {
        let Some(without) = self.either("by", "without") else {
            return Ok(None);
        };
        Ok(Some(Grouping {
            without,
            labels: self.labels()?,
        }))
    }

    fn args(&mut self) -> Result<Vec<Expr>, ParseError> {
        self.expect("(")?;
        let mut args = Vec::new();
        while !self.eat(")") {
            args.push(self.expr(0)?);
            if !self.eat(",") && self.peek() != Some(&Token::Punct(")")) {
                return Err(self.error("expected `,` or `)` in an argument list"));
            }
        }
        Ok(args)
    }

    /// `metric{…}`, `metric` or `{__name__="metric", …}`.
    fn selector(&mut self, metric: Option<String>) -> Result<Expr, ParseError> {
        let mut metric = metric;
        let mut matchers = Vec::new();
        if self.eat("{") {
            while !self.eat("}") {
                let label = match self.next() {
                    Some(Token::Ident(label)) => label,
                    other => {
                        return Err(self.error(&format!("expected a label, found {other:?}")));
                    }
                };
                let op = self.next();
                let equal = op == Some(Token::Punct("="));
                if !matches!(op, Some(Token::Punct("=" | "!=" | "=~" | "!~"))) {
                    return Err(self.error(&format!("expected a matcher after {label}")));
                }
                let Some(Token::Str(value)) = self.next() else {
                    return Err(self.error(&format!("expected a string after {label}")));
                };
                if label == "__name__" && equal {
                    metric = Some(value);
                } else if label == "__name__" {
                    return Err(self.error("a `__name__` other than `=` names no one metric"));
                } else {
                    matchers.push(label);
                }
                if !self.eat(",") && self.peek() != Some(&Token::Punct("}")) {
                    return Err(self.error("expected `,` or `}` in a selector"));
                }
            }
        }
        match metric {
            Some(metric) => Ok(Expr::Selector { metric, matchers }),
            None => Err(self.error("a selector without a metric name")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(metric: &str, matchers: &[&str]) -> Expr {
        Expr::Selector {
            metric: metric.into(),
            matchers: matchers.iter().map(|m| (*m).to_owned()).collect(),
        }
    }

    // DB7
    #[test]
    fn db7_grouping_before_or_after_the_arguments_reads_the_same() {
        let before =
            parse(r#"sum by (le, name) (rate(x_bucket{name=~"$queue"}[$__rate_interval]))"#);
        let after = parse(r#"sum(rate(x_bucket{name=~"$queue"}[$__rate_interval])) by (le, name)"#);
        assert_eq!(before, after);
        let Ok(Expr::Aggregate { op, grouping, args }) = before else {
            panic!("{before:?}");
        };
        assert_eq!(op, "sum");
        assert_eq!(grouping.unwrap().labels, ["le", "name"]);
        assert_eq!(
            args,
            [Expr::Call {
                func: "rate".into(),
                args: vec![selector("x_bucket", &["name"])],
            }]
        );
    }

    // DB7
    #[test]
    fn db7_precedence_puts_division_under_comparison() {
        let Ok(Expr::Binary { op, lhs, rhs, .. }) = parse("a / b > 0") else {
            panic!();
        };
        assert_eq!(op, ">");
        assert_eq!(*rhs, Expr::Scalar);
        assert!(matches!(*lhs, Expr::Binary { ref op, .. } if op == "/"));
    }

    // DB7
    #[test]
    fn db7_matching_and_group_modifiers_are_read() {
        let Ok(Expr::Binary { matching, .. }) = parse("a * on (name) group_left (owner) b") else {
            panic!();
        };
        assert_eq!(
            matching,
            Some(Matching {
                ignoring: false,
                labels: vec!["name".into()],
                group: Some((Side::Left, vec!["owner".into()])),
            })
        );
    }

    // DB7
    #[test]
    fn db7_a_name_matcher_names_the_metric_and_strings_keep_their_braces() {
        assert_eq!(
            parse(r#"{__name__="x", a="}{,"}"#),
            Ok(selector("x", &["a"]))
        );
    }

    // DB7
    #[test]
    fn db7_what_the_reader_does_not_know_is_refused() {
        assert!(parse("x offset 5m").is_err());
        assert!(parse("sum(x").is_err());
        assert!(parse(r#"{a="b"}"#).is_err());
        assert!(parse("x y").is_err());
    }
}
