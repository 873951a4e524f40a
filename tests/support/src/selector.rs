//! Label and field selectors, in the simple forms the API server accepts:
//! `a=b`, `a==b`, `a!=b`, `a` (exists), `!a` (absent), joined by commas.

use serde_json::Value;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

/// A parsed selector; every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selector(Vec<Requirement>);

/// A selector the fake server does not understand (it answers 400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelectorError(pub(crate) String);

impl Selector {
    pub(crate) fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let requirement = if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::Absent(k.trim().to_owned())
            } else if part.contains([' ', '(', ')']) {
                return Err(SelectorError(format!("unsupported selector {part:?}")));
            } else {
                Requirement::Exists(part.to_owned())
            };
            requirements.push(requirement);
        }
        Ok(Self(requirements))
    }

    /// Whether a label map (or field lookup) satisfies every requirement.
    fn matches_with(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => lookup(k).as_deref() == Some(v.as_str()),
            Requirement::NotEquals(k, v) => lookup(k).as_deref() != Some(v.as_str()),
            Requirement::Exists(k) => lookup(k).is_some(),
            Requirement::Absent(k) => lookup(k).is_none(),
        })
    }

    pub(crate) fn matches_labels(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.matches_with(|k| labels.get(k).and_then(Value::as_str).map(str::to_owned))
    }

    /// Fields are dotted JSON paths such as `metadata.name` or `status.phase`.
    pub(crate) fn matches_fields(&self, object: &Value) -> bool {
        self.matches_with(|path| {
            let mut v = object;
            for part in path.split('.') {
                v = v.get(part)?;
            }
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_forms() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        assert!(Selector::parse("app=web").unwrap().matches_labels(&o));
        assert!(Selector::parse("app==web,tier").unwrap().matches_labels(&o));
        assert!(!Selector::parse("app!=web").unwrap().matches_labels(&o));
        assert!(Selector::parse("!missing").unwrap().matches_labels(&o));
        assert!(!Selector::parse("missing").unwrap().matches_labels(&o));
        assert!(Selector::parse("app in (web)").is_err());
    }

    #[test]
    fn field_paths() {
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(
            Selector::parse("metadata.name=a")
                .unwrap()
                .matches_fields(&o)
        );
        assert!(
            !Selector::parse("metadata.namespace!=ns")
                .unwrap()
                .matches_fields(&o)
        );
    }
}
