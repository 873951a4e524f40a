//! The informer script format (`conformance/TRACE_FORMAT.md`, "Informer
//! scripts") as Rust values: the header, the steps, and Go's duration syntax
//! the periods are written in.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// The first line of a script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The script's name.
    #[serde(default)]
    pub script: String,
    /// The informer's resync check period, in Go duration syntax (`0s` or
    /// absent: no resync).
    #[serde(default)]
    pub resync_check: String,
    /// Handlers registered before start, in order.
    #[serde(default)]
    pub handlers: Vec<Handler>,
    /// client-go's `InOrderInformers` gate (RealFIFO). kube-informer follows
    /// DeltaFIFO, so scripts that turn it on run on client-go only.
    #[serde(default)]
    pub in_order_informers: bool,
}

/// One handler (subscription) and its resync period.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Handler {
    /// Its name in the output.
    pub name: String,
    /// Its resync period, Go duration syntax.
    #[serde(default)]
    pub resync: String,
}

/// A ConfigMap named by namespace, name and resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Object {
    /// Namespace; absent or empty: cluster-scoped.
    #[serde(default)]
    pub ns: Option<String>,
    /// Name.
    pub name: String,
    /// resourceVersion.
    #[serde(default)]
    pub rv: String,
}

impl Object {
    /// A fresh ConfigMap with this identity.
    pub fn config_map(&self) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: self.ns.clone().filter(|ns| !ns.is_empty()),
                name: Some(self.name.clone()),
                resource_version: Some(self.rv.clone()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }
}

/// One step line, as written; [`Step::op`] says which fields matter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Step {
    /// `list`, `watch`, `relist`, `resync` or `subscribe`.
    #[serde(rename = "step")]
    pub op: String,
    /// For `watch`: `ADDED`, `MODIFIED`, `DELETED` or `BOOKMARK`.
    #[serde(default)]
    pub event: Option<String>,
    /// For `watch`: the object.
    #[serde(default)]
    pub obj: Option<Object>,
    /// For `list` and `relist`: the listed objects.
    #[serde(default)]
    pub items: Vec<Object>,
    /// For `list` and `relist`: the list's resourceVersion.
    #[serde(default)]
    pub rv: String,
    /// For `subscribe`: the new handler.
    #[serde(default)]
    pub handler: Option<Handler>,
}

/// A parsed script: its header and its step lines (each parsed when run,
/// so a malformed step is reported at its own line, as the Go side does).
#[derive(Debug, Clone)]
pub struct Script {
    /// The header.
    pub header: Header,
    /// The step lines, in order, unparsed.
    pub steps: Vec<String>,
}

/// Why a script could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script has no header line.
    #[error("script is empty")]
    Empty,
    /// The header is not a valid header.
    #[error("malformed header: {0}")]
    Header(#[source] serde_json::Error),
}

impl Script {
    /// Splits JSON lines into header and steps (blank lines ignored).
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer_conformance::informer_steps::Script;
    ///
    /// let script = Script::parse(
    ///     "{\"script\":\"s\",\"resyncCheck\":\"1h\",\"handlers\":[{\"name\":\"h\",\"resync\":\"0s\"}]}\n\
    ///      {\"step\":\"list\",\"items\":[],\"rv\":\"1\"}\n",
    /// )?;
    /// assert_eq!(script.header.handlers[0].name, "h");
    /// assert_eq!(script.steps.len(), 1);
    /// # Ok::<(), kube_informer_conformance::informer_steps::ScriptError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, ScriptError> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header = lines.next().ok_or(ScriptError::Empty)?;
        let header = serde_json::from_str(header).map_err(ScriptError::Header)?;
        Ok(Self {
            header,
            steps: lines.map(str::to_owned).collect(),
        })
    }
}

/// Parses a Go duration (`0s`, `90m`, `1h30m`, `1.5s`, `250ms`); the empty
/// string is zero, as the Go harness reads it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer_conformance::informer_steps::parse_go_duration;
///
/// assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_go_duration("0s"), Ok(Duration::ZERO));
/// assert!(parse_go_duration("5 minutes").is_err());
/// ```
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    if text.is_empty() || text == "0" {
        return Ok(Duration::ZERO);
    }
    let bad = || format!("time: invalid duration {text:?}");
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..number_end].parse().map_err(|_| bad())?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Ok(Duration::from_secs_f64(total))
}
