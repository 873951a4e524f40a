//! The write scripts: what a step sends and what it records, read from
//! `conformance/writes/scripts/*.json` (format in `conformance/writes/FORMAT.md`)
//! or made by the generator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::resources::Kind;

/// One script: steps run in order in a namespace of their own, with a watch
/// open on each resource in `watch` from before the first step.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The script's name (the file name without `.json` for the corpus,
    /// `random-<seed>-<n>` for generated ones).
    #[serde(default)]
    pub name: String,
    /// What the script shows.
    #[serde(default)]
    pub description: String,
    /// The resources watched while the script runs.
    pub watch: Vec<Kind>,
    /// The requests, in order.
    pub steps: Vec<Step>,
}

/// One request and what to keep of its answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// Which collection (in the script's namespace).
    pub resource: Kind,
    /// The object's name; none for the collection (a create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `status` for the status subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// Query parameters besides the three below.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// The `fieldManager` parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// Sends `dryRun=All`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// Sends `force=true` (server-side apply).
    #[serde(default, skip_serializing_if = "is_false")]
    pub force: bool,
    /// The `Content-Type`; `application/json` when absent (and
    /// `application/apply-patch+yaml` is what an apply sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// A JSON body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// A body sent as these bytes verbatim (for bodies that are not JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
    /// Values of the answer kept for later steps: variable name → JSON
    /// pointer into the answer's body. A later step's strings use them as
    /// `${name}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub save: BTreeMap<String, String>,
    /// What of the answer is compared.
    #[serde(default, skip_serializing_if = "Record::is_all")]
    pub record: Record,
}

/// What of an answer a step records for the comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Record {
    /// The status code and the whole body.
    #[default]
    All,
    /// The status code, and for a `Status` body its `reason` and `code`:
    /// for steps that only prepare what the script is about.
    Status,
}

impl Record {
    fn is_all(&self) -> bool {
        *self == Record::All
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Step {
    /// The `Content-Type` this step sends.
    pub fn content_type(&self) -> &str {
        self.content_type.as_deref().unwrap_or("application/json")
    }

    /// The query string parameters, the three named ones included.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = self
            .query
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(manager) = &self.field_manager {
            pairs.push(("fieldManager".into(), manager.clone()));
        }
        if self.dry_run {
            pairs.push(("dryRun".into(), "All".into()));
        }
        if self.force {
            pairs.push(("force".into(), "true".into()));
        }
        pairs
    }
}

/// The directory of the named scripts.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/writes/scripts")
}

/// Reads every `*.json` script of `dir`, in file name order; each is named
/// after its file.
pub fn load_corpus(dir: &Path) -> Result<Vec<Script>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
    paths.sort();
    let mut scripts = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)?;
        let mut script: Script = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a write script", path.display()))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .context("a script file has a UTF-8 name")?;
        script.name = stem.to_owned();
        script
            .check()
            .with_context(|| format!("{}", path.display()))?;
        scripts.push(script);
    }
    ensure!(!scripts.is_empty(), "no scripts in {}", dir.display());
    Ok(scripts)
}

impl Script {
    /// Refuses a script the runner could not run as meant.
    pub fn check(&self) -> Result<()> {
        ensure!(!self.steps.is_empty(), "a script has steps");
        for (i, step) in self.steps.iter().enumerate() {
            let method = step.method.as_str();
            ensure!(
                ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method),
                "step {i}: unknown method {method}"
            );
            if step.body.is_some() && step.body_text.is_some() {
                bail!("step {i}: give body or bodyText, not both");
            }
            if let Some(sub) = &step.subresource {
                ensure!(
                    sub == "status",
                    "step {i}: only the status subresource is scripted"
                );
                ensure!(step.name.is_some(), "step {i}: a subresource needs a name");
            }
        }
        Ok(())
    }

    /// Whether the script touches the custom resource (registered from its
    /// CRD on both servers).
    pub fn uses_crd(&self) -> bool {
        self.watch.contains(&Kind::Widgets)
            || self.steps.iter().any(|s| s.resource == Kind::Widgets)
    }
}

/// Replaces each `${name}` in the strings of `value` with the saved value.
pub fn substitute(value: &Value, vars: &BTreeMap<String, String>) -> Result<Value> {
    Ok(match value {
        Value::String(s) => Value::String(substitute_str(s, vars)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, vars))
                .collect::<Result<_>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, vars)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

/// Replaces each `${name}` in `s`; an unknown name is an error (the
/// script refers to a value no earlier step saved).
pub fn substitute_str(s: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .context("an unclosed ${ in a script string")?;
        let name = &after[..end];
        let value = vars
            .get(name)
            .with_context(|| format!("${{{name}}} was not saved by an earlier step"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
