//! Compares the two observers' outputs line by line.

use std::fmt;

use serde_json::Value;

/// The first line where the outputs disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// 0-based index of the operation whose line differs.
    pub index: usize,
    /// client-go's line, or `None` if its output ended earlier.
    pub go: Option<Value>,
    /// kube-informer's line, or `None` if its output ended earlier.
    pub rust: Option<Value>,
}

impl Difference {
    /// The difference with other names for the two sides, e.g. when two
    /// client-go outputs are compared.
    pub fn labelled(&self, first: &str, second: &str) -> String {
        let show = |v: &Option<Value>| v.as_ref().map_or("<none>".to_owned(), Value::to_string);
        let width = first.len().max(second.len()) + 1;
        format!(
            "first difference at line {}:\n  {:width$} {}\n  {:width$} {}",
            self.index,
            format!("{first}:"),
            show(&self.go),
            format!("{second}:"),
            show(&self.rust),
        )
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.labelled("client-go", "kube-informer"))
    }
}

/// Compares exactly, line by line.
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::compare::compare;
/// use serde_json::json;
///
/// let go = [json!({"i": 0, "synced": true})];
/// let rust = [json!({"synced": true, "i": 0})];
/// assert_eq!(compare(&go, &rust), None); // key order does not matter
/// let d = compare(&go, &[json!({"i": 0, "synced": false})]).unwrap();
/// assert_eq!(d.index, 0);
/// ```
///
/// No tolerance is needed for the order of the tombstones a Replace adds for
/// vanished known keys (Go map order in client-go): both harnesses hand the
/// FIFO a known-objects store that lists keys sorted, and both FIFOs queue
/// those tombstones in list order. The tombstones of keys that were pending
/// land in those keys' existing queue slots, so their order is invisible.
pub fn compare(go: &[Value], rust: &[Value]) -> Option<Difference> {
    let n = go.len().max(rust.len());
    (0..n).find_map(|index| {
        let (g, r) = (go.get(index), rust.get(index));
        (g != r).then(|| Difference {
            index,
            go: g.cloned(),
            rust: r.cloned(),
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_outputs_have_no_difference() {
        let a = vec![json!({"i": 0, "synced": false}), json!({"i": 1})];
        assert_eq!(compare(&a, &a.clone()), None);
    }

    #[test]
    fn reports_first_differing_line_and_missing_lines() {
        let go = vec![json!({"i": 0}), json!({"i": 1, "len": 1}), json!({"i": 2})];
        let rust = vec![json!({"i": 0}), json!({"i": 1, "len": 2})];
        let d = compare(&go, &rust).unwrap();
        assert_eq!(d.index, 1);
        assert_eq!(d.rust, Some(json!({"i": 1, "len": 2})));
        let d = compare(&go[..1], &go).unwrap();
        assert_eq!((d.index, d.go, d.rust), (1, None, Some(go[1].clone())));
        assert!(d_display_mentions_both(&compare(&go, &rust).unwrap()));
    }

    fn d_display_mentions_both(d: &Difference) -> bool {
        let s = d.to_string();
        s.contains("client-go:") && s.contains("kube-informer:")
    }
}
