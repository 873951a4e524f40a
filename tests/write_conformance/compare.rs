//! Compares two normalised recordings leaf by leaf, and excuses the
//! differences `conformance/writes/DIFFERENCES.md` lists.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

/// One place where the two servers' normalised recordings disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Where, e.g. `steps[2].body.metadata.generation` or
    /// `events.configmaps[1].type`.
    pub path: String,
    /// The real server's value there (`None`: absent).
    pub real: Option<Value>,
    /// The fake server's value there (`None`: absent).
    pub fake: Option<Value>,
}

impl Difference {
    /// The step the difference is in, when it is in a step's answer.
    pub fn step(&self) -> Option<usize> {
        let rest = self.path.strip_prefix("steps[")?;
        rest[..rest.find(']')?].parse().ok()
    }
}

/// Every place where two normalised recordings differ.
///
/// A step answered with different status codes is one difference (its
/// code, and the kind, reason and message of the body), since every field
/// of two unrelated bodies would differ. Watch events are paired by type
/// and object name in order (a longest common subsequence), so one extra
/// event is one difference rather than a shift of all that follow; paired
/// events, and answers with the same code, are compared leaf by leaf.
pub fn differences(real: &Value, fake: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    let empty = Vec::new();
    let steps = |v: &Value| v["steps"].as_array().cloned().unwrap_or_default();
    let (real_steps, fake_steps) = (steps(real), steps(fake));
    for i in 0..real_steps.len().max(fake_steps.len()) {
        let (r, f) = (real_steps.get(i), fake_steps.get(i));
        let path = format!("steps[{i}]");
        match (r, f) {
            (Some(r), Some(f)) if r["status"] != f["status"] => out.push(Difference {
                path,
                real: Some(summary(r)),
                fake: Some(summary(f)),
            }),
            _ => walk(path, r, f, &mut out),
        }
    }
    let events = |v: &Value| v["events"].as_object().cloned().unwrap_or_default();
    let (real_events, fake_events) = (events(real), events(fake));
    let kinds: std::collections::BTreeSet<&String> =
        real_events.keys().chain(fake_events.keys()).collect();
    for kind in kinds {
        let r = real_events
            .get(kind)
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let f = fake_events
            .get(kind)
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        for (ri, fi) in pair_events(r, f) {
            let path = format!("events.{kind}[{}]", ri.or(fi).unwrap_or(0));
            walk(path, ri.map(|i| &r[i]), fi.map(|i| &f[i]), &mut out);
        }
    }
    out
}

/// A step's answer in brief: its code, and what kind of body it has.
fn summary(step: &Value) -> Value {
    let body = &step["body"];
    let mut brief = serde_json::json!({"status": step["status"], "kind": body["kind"]});
    for key in ["reason", "message", "skipped", "transportError"] {
        if let Some(v) = body.get(key) {
            brief[key] = v.clone();
        }
    }
    if let Some(name) = body["metadata"].get("name") {
        brief["name"] = name.clone();
    }
    brief
}

/// Pairs the events of two lists by (type, object name), keeping order:
/// the longest common subsequence, the rest unpaired. Each pair or single
/// is `(index in real, index in fake)`, in order.
fn pair_events(real: &[Value], fake: &[Value]) -> Vec<(Option<usize>, Option<usize>)> {
    let key = |e: &Value| (e["type"].clone(), e["object"]["metadata"]["name"].clone());
    let (n, m) = (real.len(), fake.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if key(&real[i]) == key(&fake[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && key(&real[i]) == key(&fake[j]) {
            out.push((Some(i), Some(j)));
            (i, j) = (i + 1, j + 1);
        } else if j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push((Some(i), None));
            i += 1;
        } else {
            out.push((None, Some(j)));
            j += 1;
        }
    }
    out
}

fn walk(path: String, real: Option<&Value>, fake: Option<&Value>, out: &mut Vec<Difference>) {
    match (real, fake) {
        (Some(Value::Object(r)), Some(Value::Object(f))) => {
            let keys: std::collections::BTreeSet<&String> = r.keys().chain(f.keys()).collect();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(child, r.get(key), f.get(key), out);
            }
        }
        (Some(Value::Array(r)), Some(Value::Array(f))) => {
            for i in 0..r.len().max(f.len()) {
                walk(format!("{path}[{i}]"), r.get(i), f.get(i), out);
            }
        }
        (r, f) if r == f => {}
        (r, f) => out.push(Difference {
            path,
            real: r.cloned(),
            fake: f.cloned(),
        }),
    }
}

/// A deliberate difference: the scripts and places it excuses.
#[derive(Debug, Clone)]
pub struct Allowed {
    /// Its id in DIFFERENCES.md.
    pub id: String,
    /// Script name patterns (`*` any run of characters); empty: any.
    pub scripts: Vec<String>,
    /// Place patterns: `*` any run without `.`, `**` any run.
    pub paths: Vec<String>,
    /// `real` (only the real server has a value there), `fake`, or `any`.
    pub side: Side,
}

/// Which side of a difference an entry excuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The real server has a value there, the fake none.
    RealOnly,
    /// The fake server has a value there, the real none.
    FakeOnly,
    /// Any difference.
    Any,
}

impl Allowed {
    /// Whether this entry excuses `difference` in script `script`.
    pub fn excuses(&self, script: &str, difference: &Difference) -> bool {
        let side_ok = match self.side {
            Side::Any => true,
            Side::RealOnly => difference.fake.is_none(),
            Side::FakeOnly => difference.real.is_none(),
        };
        side_ok
            && (self.scripts.is_empty() || self.scripts.iter().any(|p| glob(p, script, true)))
            && self.paths.iter().any(|p| glob(p, &difference.path, false))
    }
}

/// Reads the ```` ```wc-difference ```` blocks of DIFFERENCES.md: lines of
/// `id:`, `scripts:` (space-separated patterns), `paths:` (space-separated
/// patterns) and `side:` (`real`, `fake` or `any`).
pub fn load_allowed(path: &Path) -> Result<Vec<Allowed>> {
    load_blocks(path, "```wc-difference")
}

/// Reads the blocks opened by `opening` (```` ```wc-difference ```` or
/// KNOWN_GAPS.md's ```` ```wc-gap ````, whose `owner` and `cause` lines
/// are notes for people).
pub fn load_blocks(path: &Path, opening: &str) -> Result<Vec<Allowed>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut entries = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        match (&mut block, line.trim()) {
            (None, open) if open == opening => block = Some(Vec::new()),
            (Some(lines), "```") => {
                entries.push(parse_entry(lines)?);
                block = None;
            }
            (Some(lines), line) => lines.push(line),
            (None, _) => {}
        }
    }
    ensure!(
        block.is_none(),
        "an unclosed wc-difference block in {}",
        path.display()
    );
    Ok(entries)
}

fn parse_entry(lines: &[&str]) -> Result<Allowed> {
    let mut entry = Allowed {
        id: String::new(),
        scripts: Vec::new(),
        paths: Vec::new(),
        side: Side::Any,
    };
    for line in lines.iter().filter(|l| !l.is_empty()) {
        let (key, value) = line.split_once(':').context("a `key: value` line")?;
        let words = || value.split_whitespace().map(str::to_owned).collect();
        match key.trim() {
            "id" => entry.id = value.trim().to_owned(),
            "scripts" => entry.scripts = words(),
            "paths" => entry.paths = words(),
            "owner" | "cause" => {}
            "side" => {
                entry.side = match value.trim() {
                    "real" => Side::RealOnly,
                    "fake" => Side::FakeOnly,
                    "any" => Side::Any,
                    other => bail!("side {other:?}: real, fake or any"),
                }
            }
            other => bail!("unknown key {other:?} in a wc-difference block"),
        }
    }
    ensure!(!entry.id.is_empty(), "a wc-difference block without an id");
    ensure!(!entry.paths.is_empty(), "{}: no paths", entry.id);
    Ok(entry)
}

/// Matches `text` against `pattern`. `**` matches anything; `*` matches
/// any run without `.` (or anything at all when `star_crosses_dots`).
pub fn glob(pattern: &str, text: &str, star_crosses_dots: bool) -> bool {
    fn go(p: &[u8], t: &[u8], cross: bool) -> bool {
        match p {
            [] => t.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=t.len()).any(|i| go(rest, &t[i..], cross)),
            [b'*', rest @ ..] => {
                for i in 0..=t.len() {
                    if go(rest, &t[i..], cross) {
                        return true;
                    }
                    if i < t.len() && t[i] == b'.' && !cross {
                        return false;
                    }
                }
                false
            }
            [c, rest @ ..] => t.first() == Some(c) && go(rest, &t[1..], cross),
        }
    }
    go(pattern.as_bytes(), text.as_bytes(), star_crosses_dots)
}

/// A value in one line, cut short.
pub fn show(value: &Option<Value>) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > 240 {
                let cut: String = text.chars().take(240).collect();
                format!("{cut}…")
            } else {
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wc3_differences_are_found_per_leaf() {
        let real = json!({"a": 1, "b": [1, 2], "c": {"d": "x"}});
        let fake = json!({"a": 1, "b": [1], "c": {"d": "y", "e": true}});
        let mut out = Vec::new();
        walk(String::new(), Some(&real), Some(&fake), &mut out);
        let paths: Vec<String> = out.into_iter().map(|d| d.path).collect();
        assert_eq!(paths, ["b[1]", "c.d", "c.e"]);
    }

    #[test]
    fn wc3_an_extra_event_is_one_difference() {
        let event = |t: &str, n: &str| json!({"type": t, "object": {"metadata": {"name": n}}});
        let real = json!({"steps": [], "events": {"configmaps": [event("ADDED", "a"), event("MODIFIED", "a")]}});
        let fake = json!({"steps": [], "events": {"configmaps": [event("ADDED", "a"), event("ADDED", "b"), event("MODIFIED", "a")]}});
        let found = differences(&real, &fake);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "events.configmaps[1]");
        assert!(found[0].real.is_none());
    }

    #[test]
    fn wc3_answers_with_different_codes_are_one_difference() {
        let real = json!({"steps": [{"status": 201, "body": {"kind": "ConfigMap", "metadata": {"name": "a"}}}], "events": {}});
        let fake = json!({"steps": [{"status": 400, "body": {"kind": "Status", "reason": "BadRequest"}}], "events": {}});
        let found = differences(&real, &fake);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "steps[0]");
    }

    #[test]
    fn wc4_patterns_match_places() {
        assert!(glob(
            "steps[*].body.metadata.managedFields",
            "steps[3].body.metadata.managedFields",
            false
        ));
        assert!(!glob("steps[*].body", "steps[3].body.metadata", false));
        assert!(glob(
            "events.**",
            "events.configmaps[2].object.metadata",
            false
        ));
        assert!(glob("delete_*", "delete_foreground", true));
    }
}
