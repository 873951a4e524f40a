//! A3: no file under `src/` reads an environment variable (see the test).
//!
//! A1: the crate's modules import only downward: each top-level module of
//! `src/` may use the modules on earlier lines of the "Layers" list in the
//! crate docs (`src/lib.rs`), never one on its own line or a later one.
//!
//! The list is read from `src/lib.rs` itself, so the order is written down
//! once. Imports are found by scanning the code (comments, doc comments and
//! string literals left out, so intra-doc links may point anywhere): every
//! `crate::x` path, every name in a `use crate::{…}` group, and
//! `super::…::x` paths that climb to the crate root. A name re-exported at
//! the crate root (`crate::WorkQueue`) counts as the module it comes from.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

#[test]
fn a1_modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let layers = layers(&lib);
    let reexports = reexports(&lib);
    let modules = top_level_modules(&src);

    let mut problems = Vec::new();
    for module in &modules {
        if !layers.contains_key(module.as_str()) {
            problems.push(format!(
                "module `{module}` is in no layer of the crate docs' list"
            ));
        }
    }
    for name in layers.keys() {
        if !modules.contains(*name) {
            problems.push(format!(
                "the layer list names `{name}`, which is no module of src/"
            ));
        }
    }

    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        if relative == Path::new("lib.rs") {
            continue;
        }
        let module = top_module(relative);
        let Some(&own) = layers.get(module.as_str()) else {
            continue;
        };
        let text = fs::read_to_string(&file).unwrap();
        for import in imports(&text, depth(relative)) {
            let target = match reexports.get(&import.name) {
                Some(from) => from.clone(),
                None => import.name.clone(),
            };
            if target == module {
                continue;
            }
            let Some(&theirs) = layers.get(target.as_str()) else {
                problems.push(format!(
                    "src/{}: `{}` names `{}`, which is neither a module nor a re-export of the crate root",
                    relative.display(),
                    import.path,
                    import.name,
                ));
                continue;
            };
            if theirs >= own {
                problems.push(format!(
                    "src/{}: `{}` imports `{target}` (layer {theirs}) from `{module}` (layer {own})",
                    relative.display(),
                    import.path,
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a module imports one on its own layer or above it (see \"Layers\" in src/lib.rs):\n{}",
        problems.join("\n")
    );
}

/// The scanner finds every form an import takes, so the test above cannot
/// pass by missing one.
// A3
#[test]
fn a3_no_library_behaviour_is_chosen_by_the_environment() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for file in rust_files(&src) {
        let text = fs::read_to_string(&file).unwrap();
        for read in environment_reads(&text) {
            problems.push(format!(
                "src/{}: reads the environment with `{read}`",
                file.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the library reads an environment variable; a switch for tests belongs in \
         kube-informer-testing, a setting in a builder:\n{}",
        problems.join("\n")
    );
}

// A3
#[test]
fn a3_scanner_finds_each_way_to_read_the_environment() {
    let code = r#"
        use std::env;
        /// Doc comments may show `std::env::var("X")`.
        fn a() -> bool { env::var("X").is_ok() }
        fn b() -> bool { std::env::var_os("Y").is_some() }
        fn c() -> usize { std::env::vars().count() }
        const D: &str = env!("CARGO_PKG_NAME");
        const E: Option<&str> = option_env!("E");
        // env::var("in a comment")
        const F: &str = "env::var(in a string)";
    "#;
    assert_eq!(
        environment_reads(code),
        [
            "env::var(",
            "env::var_os(",
            "env::vars(",
            "env!(",
            "option_env!("
        ]
    );
    assert!(environment_reads("fn environment() {} // env!(x)").is_empty());
}

/// The environment reads in `code`, comments and string literals left out,
/// in the order they appear.
fn environment_reads(code: &str) -> Vec<&'static str> {
    const READS: [&str; 6] = [
        "env::var(",
        "env::var_os(",
        "env::vars(",
        "env::vars_os(",
        "env!(",
        "option_env!(",
    ];
    let code = strip(code);
    let mut found = Vec::new();
    for (at, _) in code.char_indices() {
        let rest = &code[at..];
        let word_start = !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        for read in READS {
            if rest.starts_with(read) && (word_start || !read.starts_with("env!")) {
                found.push(read);
            }
        }
    }
    found
}

#[test]
fn a1_scanner_finds_each_form_of_import() {
    let code = r#"
        use crate::{WorkQueue, shard::KeyGate, store::{Store, Writer}};
        use super::super::informer::Informer;
        fn f() { crate::queue::WorkQueue::<u8>::new(); }
        // crate::commented::Out
        /// [`Informer`](crate::documented::Link)
        /* crate::blocked::Out */
        const S: &str = "crate::quoted::Out";
        const C: char = '"';
        fn g<'a>(x: &'a str) -> &'a str { x }
        macro_rules! m { () => { $crate::dollar::Out } }
        pub(crate) use self::inner::Thing;
        use crate::metrics::{self as m2};
    "#;
    let names: Vec<String> = imports(code, 2).into_iter().map(|i| i.name).collect();
    assert_eq!(
        names,
        [
            "WorkQueue",
            "shard",
            "store",
            "informer",
            "queue",
            "metrics"
        ]
    );
    // One `super` from a module file two levels down stays inside its module.
    assert!(imports("use super::informer::X;", 2).is_empty());
    // In an inline module, one more `super` climbs to the same place.
    let inline =
        "mod tests { use super::*; use super::super::store::X; }\nuse super::super::fifo::Y;";
    let names: Vec<String> = imports(inline, 2).into_iter().map(|i| i.name).collect();
    assert_eq!(names, ["fifo"]);
    let names: Vec<String> = imports(inline, 1).into_iter().map(|i| i.name).collect();
    assert_eq!(names, ["store"]);
    // From `src/x/mod.rs` one `super` reaches the crate root.
    let names: Vec<String> = imports("use super::informer::X;", 1)
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["informer"]);
}

/// The layer list of the crate docs: `N. `a`, `b` — …` lines under
/// `# Layers`, each module mapped to its line's number.
fn layers(lib: &str) -> BTreeMap<&str, u32> {
    let mut layers = BTreeMap::new();
    let mut inside = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if let Some(heading) = doc.strip_prefix('#') {
            inside = heading.trim_start_matches('#').trim() == "Layers";
            continue;
        }
        if !inside {
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        let Ok(number) = number.parse::<u32>() else {
            continue;
        };
        let names = rest.split(" — ").next().unwrap();
        for name in names.split('`').skip(1).step_by(2) {
            layers.insert(name, number);
        }
    }
    assert!(
        !layers.is_empty(),
        "src/lib.rs has no \"# Layers\" list of `N. `module`, … — why` lines"
    );
    layers
}

/// Names re-exported at the crate root (`pub use queue::WorkQueue;`), to
/// the module they come from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let code = strip(lib);
    let mut names = BTreeMap::new();
    for statement in code.split(';') {
        // A re-export that needs a feature: `#[cfg(…)] pub use …`.
        let mut statement = statement.trim();
        while let Some(attribute) = statement.strip_prefix("#[") {
            statement = attribute
                .split_once(']')
                .map_or("", |(_, rest)| rest.trim());
        }
        let Some(path) = statement.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        // The prelude's re-exports of what the crate root names already.
        if module.trim() == "crate" {
            continue;
        }
        for name in rest.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && name != "self" {
                names.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    names
}

fn top_level_modules(src: &Path) -> BTreeSet<String> {
    fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            if path.is_dir() {
                Some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib").then(|| stem.to_owned())
            }
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `fifo/state.rs` → `fifo`; `ext.rs` → `ext`.
fn top_module(relative: &Path) -> String {
    let first = relative.components().next().unwrap();
    let first = first.as_os_str().to_str().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_owned()
}

/// How many `super::` climb from this file's module to the crate root:
/// `ext.rs` and `fifo/mod.rs` 1, `fifo/state.rs` 2, and so on.
fn depth(relative: &Path) -> usize {
    let parts = relative.components().count();
    if relative.file_name().is_some_and(|f| f == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

#[derive(Debug)]
struct Import {
    /// The first segment below the crate root.
    name: String,
    /// The path as written, for the failure message.
    path: String,
}

/// Every top-level name `code` reaches through the crate root, in order.
fn imports(code: &str, depth: usize) -> Vec<Import> {
    let code = strip(code);
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`) add a level to climb: the brace
    // nesting each was opened at.
    let mut braces = 0;
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let starts_word =
            !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
        let depth = depth + inline_modules.len();
        if rest.starts_with('{') {
            braces += 1;
            at += 1;
        } else if rest.starts_with('}') {
            braces -= 1;
            if inline_modules.last() == Some(&braces) {
                inline_modules.pop();
            }
            at += 1;
        } else if starts_word && rest.starts_with("mod ") {
            let after = rest["mod ".len()..].trim_start();
            let name_len = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if after[name_len..].trim_start().starts_with('{') {
                inline_modules.push(braces);
            }
            at += "mod ".len();
        } else if starts_word && rest.starts_with("crate::") {
            let after = &rest["crate::".len()..];
            for name in first_segments(after) {
                found.push(Import {
                    name,
                    path: format!("crate::{}", path_text(after)),
                });
            }
            at += "crate::".len();
        } else if starts_word && rest.starts_with("super::") {
            let mut climbs = 0;
            let mut after = rest;
            while let Some(next) = after.strip_prefix("super::") {
                climbs += 1;
                after = next;
            }
            if climbs == depth {
                for name in first_segments(after) {
                    found.push(Import {
                        name,
                        path: format!("{}{}", "super::".repeat(climbs), path_text(after)),
                    });
                }
            }
            at += rest.len() - after.len();
        } else {
            at += rest.chars().next().unwrap().len_utf8();
        }
    }
    found
}

/// The first segment of a path (`queue::WorkQueue` → `queue`), or of each
/// entry of a group (`{WorkQueue, shard::KeyGate}` → `WorkQueue`, `shard`).
fn first_segments(path: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = path.strip_prefix('{') else {
        return vec![ident(path)];
    };
    let mut names = Vec::new();
    let mut nesting = 0;
    let mut entry_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => nesting += 1,
            '}' if nesting == 0 => break,
            '}' => nesting -= 1,
            ',' if nesting == 0 => entry_start = true,
            c if c.is_whitespace() => {}
            _ if entry_start => {
                entry_start = false;
                let name = ident(&group[i..]);
                if !name.is_empty() && name != "self" {
                    names.push(name);
                }
            }
            _ => {}
        }
    }
    names
}

/// A path as written, up to where it ends, for messages.
fn path_text(path: &str) -> String {
    if path.starts_with('{') {
        let end = path.find('}').map_or(path.len(), |i| i + 1);
        path[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        path.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect()
    }
}

/// `code` with comments (doc comments included), string literals and
/// character literals blanked out; lifetimes are kept as they are.
fn strip(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut nesting = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    nesting += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    nesting -= 1;
                    i += 2;
                    if nesting == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars[..i]
                .last()
                .is_some_and(|b| b.is_alphanumeric() || *b == '_')
            && raw_string_end(&chars, i).is_some()
        {
            i = raw_string_end(&chars, i).unwrap();
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where the raw string starting at `start` (`r"…"`, `r#"…"#`) ends, if
/// there is one there.
fn raw_string_end(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    if chars.get(i) != Some(&'"') {
        return None;
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|h| chars.get(i + h) == Some(&'#')) {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    None
}
