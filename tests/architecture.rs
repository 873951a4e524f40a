//! A4: no file under `src/` reads an environment variable (see the test).
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
//!
//! A2: inside a module the files import one way too: no two files of one
//! module folder name each other's items, directly or around a loop.
//!
//! The graph is drawn once for each module that has a folder. Its nodes are
//! the module's own file (`mod.rs`, or `x.rs` beside an `x/` folder) and
//! one node for each child: a file `y.rs`, or a folder `y/` together with
//! whatever is below it (`y.rs` beside `y/` and the files in `y/` are one
//! node at this level, and a graph of their own one level down). A file
//! depends on the node that defines an item it names through `crate::…`,
//! `super::…`, `self::…` or a child module's own name (`use y::Thing;` in
//! the module's file), each entry of a `use …::{…}` group counted. A name the
//! module's file re-exports (`pub use y::Thing;`) leads on to the file it
//! comes from, so `use super::Thing;` depends on `y.rs`, not on `mod.rs`;
//! the re-export itself is no dependency of the module's file, only a use
//! of `Thing` in its own code is. Test code counts like any other code.
//! Every loop is reported as a path of files, with the import behind each
//! step.

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

// A4
#[test]
fn a4_no_library_behaviour_is_chosen_by_the_environment() {
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

// A4
#[test]
fn a4_scanner_finds_each_way_to_read_the_environment() {
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

/// The scanner finds every form an import takes, so
/// `a1_modules_import_only_lower_layers` cannot pass by missing one.
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
    let mut found = Vec::new();
    for start in path_starts(&code, &[]) {
        let reaches_root = match start.root {
            Root::Crate => true,
            Root::Super(climbs) => climbs == depth + start.inline,
            Root::This | Root::Child => false,
        };
        if !reaches_root {
            continue;
        }
        let after = &code[start.at..];
        for name in first_segments(after) {
            found.push(Import {
                name,
                path: format!("{}{}", &code[start.from..start.at], path_text(after)),
            });
        }
    }
    found
}

/// Where a path starts in stripped code, and from where it climbs.
#[derive(Debug)]
struct PathStart {
    root: Root,
    /// Where the path is written, its root included.
    from: usize,
    /// Where the segments after the root begin.
    at: usize,
    /// How many inline modules (`mod tests { … }`) the path is inside.
    inline: usize,
    /// The `use` statement the path is in: whether it is public, and where
    /// it ends.
    within_use: Option<UseStatement>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Root {
    /// `crate::`
    Crate,
    /// `super::` as many times as it says.
    Super(usize),
    /// `self::`
    This,
    /// The name of one of the file's own child modules (`y::Thing`).
    Child,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct UseStatement {
    public: bool,
    end: usize,
}

/// Every path in stripped `code` that starts at `crate::`, `super::`,
/// `self::` or one of `children` (the file's own child modules), in order.
fn path_starts(code: &str, children: &[String]) -> Vec<PathStart> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`) add a level to climb: the brace
    // nesting each was opened at.
    let mut braces = 0;
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut within_use: Option<UseStatement> = None;
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        if within_use.is_some_and(|u| at >= u.end) {
            within_use = None;
        }
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let starts_word =
            !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
        let inline = inline_modules.len();
        let mut push = |root, at_segments| {
            found.push(PathStart {
                root,
                from: at,
                at: at_segments,
                inline,
                within_use,
            })
        };
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
        } else if starts_word && rest.starts_with("use ") {
            let end = rest.find(';').map_or(code.len(), |i| at + i);
            within_use = Some(UseStatement {
                public: is_public(&code[..at]),
                end,
            });
            at += "use ".len();
        } else if starts_word && rest.starts_with("crate::") {
            push(Root::Crate, at + "crate::".len());
            at += "crate::".len();
        } else if starts_word && rest.starts_with("self::") {
            push(Root::This, at + "self::".len());
            at += "self::".len();
        } else if starts_word && rest.starts_with("super::") {
            let mut climbs = 0;
            let mut after = rest;
            while let Some(next) = after.strip_prefix("super::") {
                climbs += 1;
                after = next;
            }
            let segments = at + rest.len() - after.len();
            push(Root::Super(climbs), segments);
            at = segments;
        } else if starts_word
            && !code[..at].ends_with("::")
            && children.iter().any(|child| {
                rest.strip_prefix(child.as_str())
                    .is_some_and(|after| after.starts_with("::"))
            })
        {
            push(Root::Child, at);
            at += rest.find("::").unwrap() + 2;
        } else {
            at += rest.chars().next().unwrap().len_utf8();
        }
    }
    found
}

/// Whether the item that ends `before` starts with `pub` or `pub(…)`.
fn is_public(before: &str) -> bool {
    let before = before.trim_end();
    let before = match before.strip_suffix(')') {
        Some(inside) => match inside.rfind('(') {
            Some(open) => inside[..open].trim_end(),
            None => return false,
        },
        None => before,
    };
    before.ends_with("pub")
        && !before[..before.len() - 3].ends_with(|c: char| c.is_alphanumeric() || c == '_')
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

/// Loops between the files of one module that are known and being broken
/// elsewhere, as the module and the files of the loop; none now. Remove an
/// entry once its loop is gone (the test fails on an entry that matches no
/// loop).
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

#[test]
fn a2_files_of_a_module_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: BTreeMap<PathBuf, String> = rust_files(&src)
        .into_iter()
        .map(|file| {
            let text = fs::read_to_string(&file).unwrap();
            (file.strip_prefix(&src).unwrap().to_path_buf(), text)
        })
        .collect();
    let cycles = cycles(&files);
    assert!(
        files.len() > 100,
        "only {} files under src/: is the crate still there?",
        files.len()
    );
    let mut problems: Vec<String> = cycles
        .iter()
        .filter(|cycle| !KNOWN_CYCLES.iter().any(|known| cycle.is(known)))
        .map(|cycle| cycle.to_string())
        .collect();
    for known @ (module, members) in KNOWN_CYCLES {
        if !cycles.iter().any(|cycle| cycle.is(known)) {
            problems.push(format!(
                "KNOWN_CYCLES lists {members:?} in `{module}`, which no longer import each other in a loop: remove the entry"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "files of one module import each other in a loop (move what both need into the lower file, or a small file of its own):\n\n{}",
        problems.join("\n\n")
    );
}

/// The cycle check finds a loop closed by each form of import, and counts
/// nothing that is no import.
#[test]
fn a2_scanner_finds_each_form_of_import() {
    let files: BTreeMap<PathBuf, String> = [
        ("lib.rs", "mod m; mod other;"),
        (
            "m/mod.rs",
            r#"
            mod a; mod b; mod c; mod d; mod e; mod f; mod g; mod h; mod i; mod j;
            // The re-exports are no dependency of this file.
            pub use c::Thing;
            pub(crate) use d::{Other, Hidden as Renamed};
            pub use i::Used;
            use self::g::Called;
            pub struct Defined;
            fn body() -> Used { Called::new(); h::go() }
            "#,
        ),
        // `super::b` one way, `crate::m::a` the other.
        ("m/a.rs", "use super::b::B; pub struct A;"),
        ("m/b.rs", "pub struct B; fn f() { crate::m::a::A; }"),
        // Through the module's re-export one way, a group the other.
        ("m/c.rs", "pub struct Thing; use super::{e::{E, More}};"),
        ("m/e.rs", "use super::Thing; pub struct E;"),
        // A renamed re-export, back through `super::super` from a folder.
        (
            "m/d.rs",
            "pub struct Other; pub struct Hidden; use super::f::inner::Deep;",
        ),
        ("m/f/mod.rs", "pub mod inner;"),
        (
            "m/f/inner.rs",
            "pub struct Deep; fn g() -> super::super::Renamed { todo() }",
        ),
        // The module's file, through a name it imports with `self::`, and
        // the bare name of a child module.
        ("m/g.rs", "pub struct Called; use super::Defined;"),
        ("m/h.rs", "pub fn go() {} use crate::m::Defined;"),
        // A re-export the module's file uses in its own code.
        ("m/i.rs", "pub struct Used; use super::Defined;"),
        // Neither a comment, a string, a doc link nor an inline test
        // module's `super::*` is an import; `other::j` is another module's.
        (
            "m/j.rs",
            r#"
            // use super::a::A;
            /// [`A`](super::a::A)
            const S: &str = "super::a::A";
            pub struct J;
            mod tests { use super::*; }
            use crate::other::j::Far;
            "#,
        ),
        ("other/mod.rs", "pub mod j;"),
        ("other/j.rs", "pub struct Far; use crate::m::j::J;"),
    ]
    .into_iter()
    .map(|(path, text)| (PathBuf::from(path), text.to_owned()))
    .collect();
    let found: Vec<(String, Vec<String>)> = cycles(&files)
        .into_iter()
        .map(|cycle| (cycle.module, cycle.members))
        .collect();
    let expected: Vec<(String, Vec<String>)> = [
        ("m", vec!["m/a.rs", "m/b.rs"]),
        ("m", vec!["m/c.rs", "m/e.rs"]),
        ("m", vec!["m/d.rs", "m/f/"]),
        ("m", vec!["m/g.rs", "m/h.rs", "m/i.rs", "m/mod.rs"]),
    ]
    .into_iter()
    .map(|(module, members)| {
        (
            module.to_owned(),
            members.into_iter().map(String::from).collect(),
        )
    })
    .collect();
    assert_eq!(found, expected);

    // Each loop is reported as a path of files with the import behind
    // each step.
    let report = cycles(&files)[0].to_string();
    assert!(report.contains("m/a.rs → m/b.rs → m/a.rs"), "{report}");
    assert!(report.contains("super::b::B"), "{report}");
    assert!(report.contains("crate::m::a::A"), "{report}");
}

/// A loop between files of one module: the files that reach each other
/// (one strongly connected set) and one path around it.
#[derive(Debug)]
struct Cycle {
    /// The module, `informer` or `source::stream`.
    module: String,
    /// Every file (or folder) of the loop, sorted.
    members: Vec<String>,
    /// One path around the loop, back to where it starts, with the import
    /// behind each step.
    path: Vec<(String, String)>,
}

impl Cycle {
    /// Whether this is the loop of `module` through exactly `members`.
    fn is(&self, (module, members): &(&str, &[&str])) -> bool {
        self.module == *module
            && members
                .iter()
                .copied()
                .eq(self.members.iter().map(String::as_str))
    }
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = &self.path[0].0;
        let around: Vec<&str> = self.path.iter().map(|(node, _)| node.as_str()).collect();
        writeln!(
            f,
            "module `{}`: {} → {first}",
            self.module,
            around.join(" → ")
        )?;
        for (node, why) in &self.path {
            writeln!(f, "    {node}: {why}")?;
        }
        if self.members.len() > self.path.len() {
            write!(f, "    (all of the loop: {})", self.members.join(", "))?;
        }
        Ok(())
    }
}

/// Every loop between the files of one module, in module order; `files`
/// maps paths below `src/` to their text.
fn cycles(files: &BTreeMap<PathBuf, String>) -> Vec<Cycle> {
    let tree = ModuleTree::new(files);
    // module → node → node it depends on → why.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>> =
        BTreeMap::new();
    for (module, file) in &tree.modules {
        for (target, why) in tree.dependencies(module, file) {
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == 0 || (common == module.len() && common == target.len()) {
                continue;
            }
            let parent = module[..common].to_vec();
            let node = |path: &[String]| tree.node(&parent, path.get(common));
            let graph = graphs.entry(parent.clone()).or_default();
            graph
                .entry(node(module))
                .or_default()
                .entry(node(&target))
                .or_insert_with(|| format!("`{why}` in src/{}", file.path.display()));
        }
    }
    let mut found = Vec::new();
    for (module, graph) in &graphs {
        for members in strongly_connected(graph) {
            if members.len() < 2 {
                continue;
            }
            let path = path_around(graph, &members);
            found.push(Cycle {
                module: module.join("::"),
                members: members.into_iter().collect(),
                path,
            });
        }
    }
    found
}

/// The crate's modules, each with its file and the names its `use`
/// statements bring in.
struct ModuleTree {
    modules: BTreeMap<Vec<String>, ModuleFile>,
}

struct ModuleFile {
    path: PathBuf,
    code: String,
    /// Each name a top-level `use` brings into the module, with the
    /// absolute path it names and whether the `use` is public.
    uses: Vec<(String, Vec<String>, bool)>,
}

impl ModuleTree {
    fn new(files: &BTreeMap<PathBuf, String>) -> ModuleTree {
        let mut modules: BTreeMap<Vec<String>, ModuleFile> = files
            .iter()
            .map(|(path, text)| {
                let file = ModuleFile {
                    path: path.clone(),
                    code: strip(text),
                    uses: Vec::new(),
                };
                (module_path(path), file)
            })
            .collect();
        let paths: Vec<Vec<String>> = modules.keys().cloned().collect();
        for module in &paths {
            let children = children(&paths, module);
            let file = &modules[module];
            let mut uses = Vec::new();
            for start in path_starts(&file.code, &children) {
                let Some(statement) = start.within_use else {
                    continue;
                };
                if start.inline > 0 {
                    continue;
                }
                let Some(base) = base(module, &start) else {
                    continue;
                };
                for (segments, name) in use_tree(&file.code[start.at..]) {
                    let mut full = base.clone();
                    full.extend(segments);
                    uses.push((name, full, statement.public));
                }
            }
            modules.get_mut(module).unwrap().uses = uses;
        }
        ModuleTree { modules }
    }

    /// The module that defines what `path` (absolute, below the crate
    /// root) names: down through child modules, then on through
    /// re-exports.
    fn resolve(&self, path: &[String], hops: usize) -> Vec<String> {
        let mut module: Vec<String> = Vec::new();
        for (i, segment) in path.iter().enumerate() {
            let mut child = module.clone();
            child.push(segment.clone());
            if self.modules.contains_key(&child) {
                module = child;
                continue;
            }
            let reexport = self.modules.get(&module).and_then(|file| {
                file.uses
                    .iter()
                    .find(|(name, _, _)| name == segment)
                    .map(|(_, target, _)| target)
            });
            if let Some(target) = reexport
                && hops < 16
            {
                let mut next = target.clone();
                next.extend(path[i + 1..].iter().cloned());
                return self.resolve(&next, hops + 1);
            }
            return module;
        }
        module
    }

    /// What the file of `module` names (absolute module paths), with the
    /// path as written. A public `use` is no dependency of its own; a use
    /// of the name it brings in is.
    fn dependencies(&self, module: &[String], file: &ModuleFile) -> Vec<(Vec<String>, String)> {
        let paths: Vec<Vec<String>> = self.modules.keys().cloned().collect();
        let children = children(&paths, module);
        let mut found = Vec::new();
        let mut reexport_spans = Vec::new();
        for start in path_starts(&file.code, &children) {
            let Some(base) = base(module, &start) else {
                continue;
            };
            if let Some(statement) = start.within_use
                && statement.public
                && start.inline == 0
            {
                reexport_spans.push(start.from..statement.end);
                continue;
            }
            for (segments, _) in use_tree(&file.code[start.at..]) {
                let mut full = base.clone();
                full.extend(segments);
                let written = format!(
                    "{}{}",
                    &file.code[start.from..start.at],
                    path_text(&file.code[start.at..])
                );
                found.push((self.resolve(&full, 0), written));
            }
        }
        let reexported: BTreeMap<&str, &Vec<String>> = file
            .uses
            .iter()
            .filter(|(_, _, public)| *public)
            .map(|(name, target, _)| (name.as_str(), target))
            .collect();
        for (at, word) in words(&file.code) {
            if reexport_spans.iter().any(|span| span.contains(&at)) {
                continue;
            }
            if let Some(target) = reexported.get(word) {
                found.push((self.resolve(target, 0), word.to_owned()));
            }
        }
        found
    }

    /// How `child` of `parent` is shown: its file, or its folder when it
    /// has children of its own; the parent's own file for `None`.
    fn node(&self, parent: &[String], child: Option<&String>) -> String {
        let Some(child) = child else {
            return self.modules[parent].path.display().to_string();
        };
        let mut module = parent.to_vec();
        module.push(child.clone());
        let has_children = self
            .modules
            .keys()
            .any(|other| other.len() > module.len() && other.starts_with(&module));
        if has_children {
            format!("{}/", module.join("/"))
        } else {
            self.modules[&module].path.display().to_string()
        }
    }
}

/// `informer/run.rs` → `[informer, run]`; `informer/mod.rs` →
/// `[informer]`; `lib.rs` → `[]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" && last != "lib.rs" {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

/// The names of the child modules of `module`.
fn children(modules: &[Vec<String>], module: &[String]) -> Vec<String> {
    modules
        .iter()
        .filter(|other| other.len() == module.len() + 1 && other.starts_with(module))
        .map(|other| other.last().unwrap().clone())
        .collect()
}

/// The absolute module a path starts from, in the file of `module`; `None`
/// for a path that stays inside the file (in an inline module) or climbs
/// past the crate root.
fn base(module: &[String], start: &PathStart) -> Option<Vec<String>> {
    match start.root {
        Root::Crate => Some(Vec::new()),
        Root::Super(climbs) => {
            let climbs = climbs.checked_sub(start.inline)?;
            let keep = module.len().checked_sub(climbs)?;
            (climbs > 0).then(|| module[..keep].to_vec())
        }
        Root::This | Root::Child => (start.inline == 0).then(|| module.to_vec()),
    }
}

/// Each path a use tree or a path spells from its start, with the name it
/// brings in: `a::b::C` → `[a, b, C]`; `{a, b::{c as d}}` → `[a]`,
/// `[b, c]` (named `d`); `a::{self, B}` → `[a]`, `[a, B]`; `a::*` →
/// `[a]`.
fn use_tree(text: &str) -> Vec<(Vec<String>, String)> {
    let mut at = 0;
    tree_at(text, &mut at)
}

fn tree_at(text: &str, at: &mut usize) -> Vec<(Vec<String>, String)> {
    let skip_space = |at: &mut usize| {
        *at += text[*at..].len() - text[*at..].trim_start().len();
    };
    let mut prefix: Vec<String> = Vec::new();
    loop {
        skip_space(at);
        let rest = &text[*at..];
        if let Some(group) = rest.strip_prefix('{') {
            *at += rest.len() - group.len();
            let mut all = Vec::new();
            loop {
                skip_space(at);
                if text[*at..].starts_with('}') || *at >= text.len() {
                    *at += 1;
                    break;
                }
                for (path, name) in tree_at(text, at) {
                    let mut full = prefix.clone();
                    let is_self = path.first().is_some_and(|s| s == "self");
                    full.extend(path.into_iter().skip(usize::from(is_self)));
                    let name = if is_self && name == "self" {
                        full.last().cloned().unwrap_or_default()
                    } else {
                        name
                    };
                    all.push((full, name));
                }
                skip_space(at);
                match text[*at..].chars().next() {
                    Some(',') => *at += 1,
                    Some('}') => {}
                    _ => break,
                }
            }
            return all;
        }
        if rest.starts_with('*') {
            *at += 1;
            return vec![(prefix, "*".to_owned())];
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            let last = prefix.last().cloned().unwrap_or_default();
            return if prefix.is_empty() {
                Vec::new()
            } else {
                vec![(prefix, last)]
            };
        }
        *at += name.len();
        prefix.push(name.clone());
        if text[*at..].starts_with("::") {
            *at += 2;
            continue;
        }
        let after = text[*at..].trim_start();
        if let Some(alias) = after.strip_prefix("as ") {
            let alias = alias.trim_start();
            let alias: String = alias
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            *at = text.len() - after.len() + "as ".len();
            skip_space(at);
            *at += alias.len();
            return vec![(prefix, alias)];
        }
        return vec![(prefix, name)];
    }
}

/// Each word of `code` with where it starts.
fn words(code: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut start = None;
    for (at, c) in code.char_indices().chain([(code.len(), ' ')]) {
        let in_word = c.is_alphanumeric() || c == '_';
        match (start, in_word) {
            (None, true) => start = Some(at),
            (Some(from), false) => {
                found.push((from, &code[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    found
}

/// The strongly connected sets of `graph` (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        sets: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let index = self.index.len();
            self.index.insert(node, index);
            self.low.insert(node, index);
            self.stack.push(node);
            let graph = self.graph;
            for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut set = BTreeSet::new();
                while let Some(top) = self.stack.pop() {
                    set.insert(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                self.sets.push(set);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        sets: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.sets.sort();
    walk.sets
}

/// The shortest way from the first of `members` around and back to it,
/// each node with why it depends on the next.
fn path_around(
    graph: &BTreeMap<String, BTreeMap<String, String>>,
    members: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let start = members.first().unwrap().as_str();
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut frontier = vec![start];
    let mut last = None;
    'search: while !frontier.is_empty() {
        let mut next_frontier = Vec::new();
        for node in frontier {
            for next in graph[node].keys().filter(|next| members.contains(*next)) {
                if next == start {
                    last = Some(node);
                    break 'search;
                }
                if !came_from.contains_key(next.as_str()) {
                    came_from.insert(next, node);
                    next_frontier.push(next.as_str());
                }
            }
        }
        frontier = next_frontier;
    }
    let mut order = vec![last.expect("a strongly connected set has a loop")];
    while *order.last().unwrap() != start {
        order.push(came_from[order.last().unwrap()]);
    }
    order.reverse();
    (0..order.len())
        .map(|i| {
            let next = order.get(i + 1).copied().unwrap_or(start);
            (order[i].to_owned(), graph[order[i]][next].clone())
        })
        .collect()
}
