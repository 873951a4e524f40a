//! The command line's flags: `--name value` pairs and bare `--switch`es
//! (shared by every command of `kube-informer-compare`).

use std::collections::HashMap;

/// `--name value` pairs and bare `--switch`es.
#[derive(Debug, Clone, Default)]
pub struct Flags(HashMap<String, Option<String>>);

impl Flags {
    /// Reads `args`; an argument that is not a `--flag` (or a flag's value)
    /// is an error.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut flags = HashMap::new();
        let mut args = args.iter().peekable();
        while let Some(arg) = args.next() {
            let name = arg
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {arg}"))?;
            let value = args.next_if(|next| !next.starts_with("--")).cloned();
            flags.insert(name.to_string(), value);
        }
        Ok(Flags(flags))
    }

    /// The value of `--name`, which is required.
    pub fn text(&self, name: &str) -> Result<&str, String> {
        match self.0.get(name) {
            Some(Some(value)) => Ok(value),
            _ => Err(format!("--{name} VALUE is required")),
        }
    }

    /// The number given as `--name` (`_` separators allowed), or `default`
    /// when absent; required when `default` is `None`.
    pub fn number(&self, name: &str, default: Option<usize>) -> Result<usize, String> {
        match (self.0.get(name), default) {
            (None, Some(default)) => Ok(default),
            (None, None) | (Some(None), _) => Err(format!("--{name} NUMBER is required")),
            (Some(Some(value)), _) => value
                .replace('_', "")
                .parse()
                .map_err(|_| format!("--{name} wants a number, got {value}")),
        }
    }

    /// Whether `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}
