//! The named edge-case traces under `conformance/traces/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::trace::{Trace, TraceError};

/// Why the corpus could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The directory or a file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a valid trace.
    #[error("{path}: {source}")]
    Trace {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: TraceError,
    },
}

/// The directory holding the corpus in this source tree.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

/// The directory holding the informer scripts in this source tree.
pub fn default_informer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("informer-traces")
}

/// A file of the corpus, unparsed.
#[derive(Debug, Clone)]
pub struct NamedText {
    /// The file stem.
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// The JSON lines.
    pub text: String,
}

/// Every `*.jsonl` file directly in `dir`, sorted by file name.
pub fn load_texts(dir: &Path) -> Result<Vec<NamedText>, CorpusError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| CorpusError::Io { path, source }
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(NamedText { name, path, text })
        })
        .collect()
}

/// Every `*.jsonl` trace in `dir`, sorted by file name. Each trace's name is
/// its file stem, whatever its header says.
pub fn load(dir: &Path) -> Result<Vec<Trace>, CorpusError> {
    load_texts(dir)?
        .into_iter()
        .map(|file| {
            let mut trace = Trace::parse(&file.text).map_err(|source| CorpusError::Trace {
                path: file.path.clone(),
                source,
            })?;
            trace.header.trace = file.name;
            Ok(trace)
        })
        .collect()
}

/// Where client-go's recorded output of corpus trace `name` lives.
pub fn recording_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("expected").join(format!("{name}.jsonl"))
}

/// client-go's recorded output of corpus trace `name`, if recorded.
pub fn load_recording(dir: &Path, name: &str) -> Result<Option<Vec<Value>>, CorpusError> {
    let path = recording_path(dir, name);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CorpusError::Io { path, source }),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|source| CorpusError::Trace {
                path: path.clone(),
                source: TraceError::Json {
                    line: n + 1,
                    source,
                },
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Saves client-go's output of corpus trace `name`, so the corpus can be
/// checked by `cargo test` on machines without Go.
pub fn save_recording(dir: &Path, name: &str, lines: &[Value]) -> Result<(), CorpusError> {
    let path = recording_path(dir, name);
    let io = |source| CorpusError::Io {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).map_err(io)
}
