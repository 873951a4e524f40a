//! Each query of a dashboard, checked against what a scrape served: the
//! metrics it reads (DB1), the labels it names (DB2), the shape of its
//! quantiles and vector matches (DB3) and its legend (DB4).
//!
//! The check follows the labels through the expression as Prometheus
//! does: a selector has the labels its metric was served with, `rate` and
//! its kin keep them, `sum by (a)` keeps `a`, `histogram_quantile` drops
//! `le`, and a one-to-one match keeps the left side's labels (only the
//! `on` labels with `on`). So a `by (le)` missing under a quantile, or a
//! legend naming a label an aggregation dropped, is found without
//! Prometheus.

use std::collections::{BTreeMap, BTreeSet};

use prometheus_parse::{Scrape, Value};

use super::promql::{self, Expr, Grouping, Matching, Side};

/// Labels Prometheus adds to every series it scrapes, which the exposition
/// itself never carries.
pub const TARGET_LABELS: [&str; 2] = ["job", "instance"];

/// The series names a scrape served, each with every label seen on it.
#[derive(Debug, Default)]
pub struct Served {
    metrics: BTreeMap<String, BTreeSet<String>>,
}

impl Served {
    /// What `scrape` serves to a query: a histogram `x` as `x_bucket` (with
    /// `le`), `x_sum` and `x_count`, never as `x`; every series with the
    /// target labels.
    pub fn new(scrape: &Scrape) -> Self {
        let mut served = Self::default();
        for sample in &scrape.samples {
            let mut labels: BTreeSet<String> = sample.labels.keys().cloned().collect();
            labels.extend(TARGET_LABELS.map(str::to_owned));
            // prometheus-parse files a histogram's buckets under its base
            // name; `_sum` and `_count` come as samples of their own.
            let name = match sample.value {
                Value::Histogram(_) => {
                    labels.insert("le".into());
                    format!("{}_bucket", sample.metric)
                }
                Value::Summary(_) => {
                    labels.insert("quantile".into());
                    sample.metric.clone()
                }
                _ => sample.metric.clone(),
            };
            served.metrics.entry(name).or_default().extend(labels);
        }
        served
    }

    /// Reads exposition text, for checks that need no live exporter.
    pub fn parse(text: &str) -> Self {
        let scrape = Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).expect("parse");
        Self::new(&scrape)
    }

    /// Every series name served.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.metrics.keys().map(String::as_str)
    }

    fn labels(&self, metric: &str) -> Option<&BTreeSet<String>> {
        self.metrics.get(metric)
    }
}

/// What an expression evaluates to, as far as the check follows it.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Scalar,
    /// A string, which only a function's argument may be.
    Str,
    /// A vector with these labels; `None` once a problem was reported
    /// below it, so one mistake is reported once.
    Vector(Option<BTreeSet<String>>),
}

/// Checks one PromQL query and, when given, its legend; `place` names the
/// query in the problems it adds.
pub fn query(
    served: &Served,
    text: &str,
    legend: Option<&str>,
    place: &str,
    problems: &mut Vec<String>,
) {
    let Some(expr) = parse(text, place, problems) else {
        return;
    };
    let mut check = Check {
        served,
        place,
        problems,
    };
    let shape = check.shape(&expr);
    if let Some(legend) = legend {
        check.legend(legend, &shape);
    }
}

/// Checks a variable's `label_values(selector, label)` query: the selector
/// as a query, and the label on its result (DB2).
pub fn label_values(served: &Served, text: &str, place: &str, problems: &mut Vec<String>) {
    let inner = text
        .trim()
        .strip_prefix("label_values(")
        .and_then(|rest| rest.strip_suffix(')'));
    let Some((selector, label)) = inner.and_then(|inner| inner.rsplit_once(',')) else {
        problems.push(format!(
            "{place}: {text:?} is not label_values(selector, label)"
        ));
        return;
    };
    let label = label.trim();
    let Some(expr) = parse(selector, place, problems) else {
        return;
    };
    let mut check = Check {
        served,
        place,
        problems,
    };
    if let Shape::Vector(Some(labels)) = check.shape(&expr)
        && !labels.contains(label)
    {
        check.problem(format!(
            "label_values asks for `{label}`, which {} does not have",
            metrics_of(&expr)
        ));
    }
}

/// The expression `text` holds; a query the reader refuses is a problem.
fn parse(text: &str, place: &str, problems: &mut Vec<String>) -> Option<Expr> {
    promql::parse(text)
        .map_err(|error| problems.push(format!("{place}: {error}")))
        .ok()
}

struct Check<'a> {
    served: &'a Served,
    place: &'a str,
    problems: &'a mut Vec<String>,
}

impl Check<'_> {
    fn problem(&mut self, what: String) {
        self.problems.push(format!("{}: {what}", self.place));
    }

    fn shape(&mut self, expr: &Expr) -> Shape {
        match expr {
            Expr::Scalar => Shape::Scalar,
            Expr::Str => Shape::Str,
            Expr::Selector { metric, matchers } => self.selector(metric, matchers),
            Expr::Call { func, args } => {
                let args: Vec<Shape> = args.iter().map(|arg| self.shape(arg)).collect();
                self.call(func, &args, expr)
            }
            Expr::Aggregate { op, grouping, args } => {
                let shapes: Vec<Shape> = args.iter().map(|arg| self.shape(arg)).collect();
                self.aggregate(op, grouping.as_ref(), &shapes, expr)
            }
            Expr::Binary {
                op,
                lhs,
                rhs,
                matching,
            } => {
                let (left, right) = (self.shape(lhs), self.shape(rhs));
                self.binary(op, matching.as_ref(), (left, lhs), (right, rhs))
            }
        }
    }

    /// DB1 and DB2 at the leaves: the metric is served, and has every label
    /// its matchers name.
    fn selector(&mut self, metric: &str, matchers: &[String]) -> Shape {
        let Some(labels) = self.served.labels(metric) else {
            let hint = if self.served.labels(&format!("{metric}_bucket")).is_some() {
                format!(" ({metric} is a histogram: query {metric}_bucket, _sum or _count)")
            } else {
                String::new()
            };
            self.problem(format!("{metric} is not served{hint}"));
            return Shape::Vector(None);
        };
        let missing: Vec<&String> = matchers.iter().filter(|l| !labels.contains(*l)).collect();
        for label in &missing {
            self.problem(format!("{metric} has no label `{label}` to match on"));
        }
        Shape::Vector(missing.is_empty().then(|| labels.clone()))
    }

    fn call(&mut self, func: &str, args: &[Shape], expr: &Expr) -> Shape {
        let vector = |i: usize| match args.get(i) {
            Some(Shape::Vector(labels)) => Some(labels.clone()),
            _ => None,
        };
        match func {
            // Keep the labels of the vector they are applied to.
            "rate" | "irate" | "increase" | "delta" | "idelta" | "deriv" | "changes" | "resets"
            | "avg_over_time" | "min_over_time" | "max_over_time" | "sum_over_time"
            | "count_over_time" | "last_over_time" | "abs" | "ceil" | "floor" | "round"
            | "sqrt" | "exp" | "ln" | "log2" | "log10" | "sgn" | "clamp" | "clamp_min"
            | "clamp_max" | "timestamp" => match vector(0) {
                Some(labels) => Shape::Vector(labels),
                None => self.wrong_arguments(func, expr),
            },
            "histogram_quantile" => match (args.first(), vector(1)) {
                (Some(Shape::Scalar), Some(Some(mut labels))) => {
                    // DB3: buckets summed away from `le` make no quantile.
                    if labels.remove("le") {
                        Shape::Vector(Some(labels))
                    } else {
                        self.problem(format!(
                            "histogram_quantile over {} whose `le` was aggregated away: group by (le, …)",
                            metrics_of(expr)
                        ));
                        Shape::Vector(None)
                    }
                }
                (Some(Shape::Scalar), Some(None)) => Shape::Vector(None),
                _ => self.wrong_arguments(func, expr),
            },
            "scalar" | "time" => Shape::Scalar,
            "vector" => Shape::Vector(Some(BTreeSet::new())),
            other => {
                self.problem(format!("`{other}` is not a function this check reads"));
                Shape::Vector(None)
            }
        }
    }

    fn wrong_arguments(&mut self, func: &str, expr: &Expr) -> Shape {
        self.problem(format!("{func} is given the wrong arguments: {expr:?}"));
        Shape::Vector(None)
    }

    fn aggregate(
        &mut self,
        op: &str,
        grouping: Option<&Grouping>,
        args: &[Shape],
        expr: &Expr,
    ) -> Shape {
        let input = match (op, args) {
            ("topk" | "bottomk" | "quantile", [Shape::Scalar, Shape::Vector(v)]) => v,
            (_, [Shape::Vector(v)]) => v,
            _ => return self.wrong_arguments(op, expr),
        };
        let Some(input) = input else {
            return Shape::Vector(None);
        };
        // topk and bottomk pick series and keep their labels; the others
        // keep only what they group by.
        let picks = matches!(op, "topk" | "bottomk");
        let Some(grouping) = grouping else {
            return Shape::Vector(Some(if picks {
                input.clone()
            } else {
                BTreeSet::new()
            }));
        };
        let mut ok = true;
        for label in &grouping.labels {
            if !input.contains(label) {
                ok = false;
                let clause = if grouping.without { "without" } else { "by" };
                self.problem(format!(
                    "{op} {clause} ({label}): {} has no label `{label}`",
                    metrics_of(expr)
                ));
            }
        }
        let grouped: BTreeSet<String> = grouping.labels.iter().cloned().collect();
        Shape::Vector(ok.then(|| {
            if picks {
                input.clone()
            } else if grouping.without {
                input.difference(&grouped).cloned().collect()
            } else {
                grouped
            }
        }))
    }

    fn binary(
        &mut self,
        op: &str,
        matching: Option<&Matching>,
        (left, lhs): (Shape, &Expr),
        (right, rhs): (Shape, &Expr),
    ) -> Shape {
        let (left, right) = match (left, right) {
            (Shape::Scalar, other) | (other, Shape::Scalar) => return other,
            (Shape::Vector(Some(left)), Shape::Vector(Some(right))) => (left, right),
            _ => return Shape::Vector(None),
        };
        let Some(matching) = matching else {
            // DB3: one-to-one on every label; sets that differ pair nothing.
            if op != "or" && left != right {
                self.problem(format!(
                    "`{op}` pairs {} by {left:?} with {} by {right:?}: no series match; \
                     aggregate both sides to the same labels or say on (…)",
                    metrics_of(lhs),
                    metrics_of(rhs)
                ));
                return Shape::Vector(None);
            }
            return Shape::Vector(Some(if op == "or" {
                left.union(&right).cloned().collect()
            } else {
                left
            }));
        };
        let mut ok = true;
        for label in &matching.labels {
            let on_both = left.contains(label) && right.contains(label);
            if !on_both && !matching.ignoring {
                ok = false;
                self.problem(format!(
                    "`{op}` on ({label}): {} and {} do not both have it",
                    metrics_of(lhs),
                    metrics_of(rhs)
                ));
            }
        }
        let (many, one) = match matching.group {
            Some((Side::Right, _)) => (&right, &left),
            _ => (&left, &right),
        };
        let mut kept: BTreeSet<String> = match (&matching.group, matching.ignoring) {
            (Some(_), _) => many.clone(),
            (None, false) => matching.labels.iter().cloned().collect(),
            (None, true) => many
                .difference(&matching.labels.iter().cloned().collect())
                .cloned()
                .collect(),
        };
        if let Some((_, extra)) = &matching.group {
            for label in extra {
                if !one.contains(label) {
                    ok = false;
                    self.problem(format!("`{op}` copies `{label}` from a side that lacks it"));
                }
                kept.insert(label.clone());
            }
        }
        Shape::Vector(ok.then_some(kept))
    }

    /// DB4: every `{{label}}` of the legend is on the query's result.
    fn legend(&mut self, legend: &str, shape: &Shape) {
        let labels = match shape {
            Shape::Vector(Some(labels)) => labels.clone(),
            Shape::Vector(None) => return,
            Shape::Scalar | Shape::Str => BTreeSet::new(),
        };
        let mut rest = legend;
        while let Some(start) = rest.find("{{") {
            let Some(end) = rest[start..].find("}}") else {
                self.problem(format!("legend {legend:?} leaves a `{{{{` open"));
                return;
            };
            let label = rest[start + 2..start + end].trim();
            if !labels.contains(label) {
                self.problem(format!(
                    "legend names `{label}`, which the result (labels {labels:?}) does not have"
                ));
            }
            rest = &rest[start + end + 2..];
        }
    }
}

/// The metrics an expression reads, for problem messages.
fn metrics_of(expr: &Expr) -> String {
    fn walk<'e>(expr: &'e Expr, out: &mut BTreeSet<&'e str>) {
        match expr {
            Expr::Scalar | Expr::Str => {}
            Expr::Selector { metric, .. } => {
                out.insert(metric);
            }
            Expr::Call { args, .. } | Expr::Aggregate { args, .. } => {
                args.iter().for_each(|arg| walk(arg, out));
            }
            Expr::Binary { lhs, rhs, .. } => {
                walk(lhs, out);
                walk(rhs, out);
            }
        }
    }
    let mut names = BTreeSet::new();
    walk(expr, &mut names);
    names.into_iter().collect::<Vec<_>>().join(" and ")
}
