//! A3: the crate's rules share one id space, and `CONFORMANCE.md` at the
//! repository root is its index.
//!
//! An id is a family of one to three capital letters and a number from 1
//! to 99: `F6`, `CM1`, `DL14`. `CONFORMANCE.md` defines an id with a table
//! row whose first cell is the id; its third cell names the file that
//! states the rule, its fourth the files or folders that check it.
//!
//! Where ids are read, in the `.rs` files of `src/`, `tests/` (the testing
//! crate included), `conformance/src/`, `conformance/tests/`, `benches/`
//! and `examples/`:
//!
//! - **Test names.** A test (a `fn` under an attribute whose last path
//!   segment is `test`: `#[test]`, `#[tokio::test(…)]`, proptest's
//!   `#[test]`) whose name starts with ids in lower case, each followed by
//!   `_` (or joined by `_and_`), cites them: `f6_…` cites F6, `z1_z5_…`
//!   cites Z1 and Z5, `sm3_and_sm4_…` SM3 and SM4. Only
//!   the leading run counts, so `e2e_…` or `…_v1_…` cite nothing.
//! - **Rule comments.** In test code (files under a `tests` folder but not
//!   in the `src` of a crate kept there, and whatever follows a
//!   `#[cfg(test)]` line elsewhere), a comment whose text starts with ids
//!   cites them: `// F6`, `/// ST3, L9: …`, `// R10/R8: …`,
//!   `// R9 and ER2, …`, `// DL1–DL3`.
//! - **Rule statements.** In any doc comment, a list item that starts with
//!   an id states that rule: `//! - **CM1 Same answers.** …`,
//!   `//! - SI1: …`.
//! - **Mentions.** Anywhere in a comment, an id of a family that
//!   `CONFORMANCE.md` has (`(C4)`, `SI1–SI7`) cites that id; a range cites
//!   every id in it. Ids of other families there are read as ordinary
//!   words (a format such as LZ4), so prose cannot trip the check.
//! - **Trace names.** A conformance trace (`conformance/*traces/**`) whose
//!   file name starts with ids, as a test name does, cites them.
//!
//! The check fails, naming the file and line, when `CONFORMANCE.md`
//! defines an id twice, when something cites or states an id it does not
//! define, or when a row names a file that does not exist, that does not
//! mention its id (the statement) or that does not cite it in test code
//! (the checks).

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// Folders whose `.rs` files are read for ids.
const SOURCES: &[&str] = &[
    "src",
    "tests",
    "conformance/src",
    "conformance/tests",
    "benches",
    "examples",
];

/// Folders whose file names cite rules.
const TRACES: &[&str] = &[
    "conformance/traces",
    "conformance/informer-traces",
    "conformance/workqueue-traces",
];

/// Words shaped like ids that name something else, even at the start of a
/// comment.
const NOT_RULES: &[&str] = &["LZ4"];

#[test]
fn a3_conformance_md_defines_each_id_once() {
    let rows = rows(&index());
    let mut lines: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for row in &rows {
        lines.entry(row.id.as_str()).or_default().push(row.line);
    }
    let twice: Vec<String> = lines
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(id, at)| format!("{id} on lines {at:?}"))
        .collect();
    assert!(
        twice.is_empty(),
        "CONFORMANCE.md defines an id more than once:\n{}",
        twice.join("\n")
    );
    assert!(
        rows.len() > 100,
        "CONFORMANCE.md has only {} rule rows: is its table format still `| ID | … |`?",
        rows.len()
    );
}

#[test]
fn a3_every_cited_or_stated_id_is_defined() {
    let rows = rows(&index());
    let defined: BTreeSet<&str> = rows.iter().map(|row| row.id.as_str()).collect();
    let families = families(&rows);
    let undefined: Vec<String> = citations(&families)
        .iter()
        .filter(|citation| !defined.contains(citation.id.as_str()))
        .map(|citation| {
            let test = match &citation.test {
                Some(name) => format!("test `{name}` "),
                None => String::new(),
            };
            format!(
                "{}:{}: {test}{} {}, which CONFORMANCE.md does not define",
                citation.file.display(),
                citation.line,
                citation.how,
                citation.id
            )
        })
        .collect();
    assert!(
        undefined.is_empty(),
        "ids that CONFORMANCE.md does not define (add a row, or fix the id):\n{}",
        undefined.join("\n")
    );
}

#[test]
fn a3_each_row_names_where_its_rule_is_stated_and_checked() {
    let rows = rows(&index());
    let families = families(&rows);
    let citations = citations(&families);
    let root = root();
    let mut problems = Vec::new();
    for row in &rows {
        let Some(stated) = &row.stated_in else {
            problems.push(format!(
                "CONFORMANCE.md:{}: {} names no file that states it",
                row.line, row.id
            ));
            continue;
        };
        let mentioned = citations
            .iter()
            .any(|c| c.id == row.id && c.file == Path::new(stated));
        if !root.join(stated).is_file() {
            problems.push(format!(
                "CONFORMANCE.md:{}: {} is stated in `{stated}`, which is no file",
                row.line, row.id
            ));
        } else if !mentioned {
            problems.push(format!(
                "CONFORMANCE.md:{}: `{stated}` does not mention {}",
                row.line, row.id
            ));
        }
        for checker in &row.checked_by {
            let path = root.join(checker);
            let cites = citations.iter().any(|c| {
                c.id == row.id
                    && c.in_test
                    && (c.file == Path::new(checker.as_str())
                        || (path.is_dir() && c.file.starts_with(checker)))
            });
            if !path.exists() {
                problems.push(format!(
                    "CONFORMANCE.md:{}: {} is checked by `{checker}`, which does not exist",
                    row.line, row.id
                ));
            } else if !cites {
                problems.push(format!(
                    "CONFORMANCE.md:{}: `{checker}` does not name {} in test code",
                    row.line, row.id
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "rows of CONFORMANCE.md that do not match the code:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a3_the_scanner_reads_each_form_and_nothing_else() {
    let families: BTreeSet<String> = ["F", "ST", "R", "DL", "C"].map(String::from).into();
    // Each line starts with `> ` so that this file, scanned with the rest,
    // holds no test or rule comment of these made-up ids.
    let code = fixture(
        r#"
> //! - **ST1 Indexes.** stated here, with a mention of (F6).
> //! - SI1: a statement of a family CONFORMANCE.md lacks still counts.
> /// LZ4 and SHA1 and W-PB3 and v1_34 and e2e and K8s are words.
> fn v1_helper() {}
>
> // F6
> #[test]
> fn f6_replace_tombstones() {}
>
> #[tokio::test(start_paused = true)]
> async fn zz9_made_up_rule() {}
>
> #[test]
> fn e2e_configmapgen_c2_starts_later() {}
>
> /// ST3, L9: a doc comment on a test.
> // R10/R8: two ids.
> // R9 and ER2, then prose.
> // DL1–DL3 is a range, so is (C1–C3).
> fn helper() {} // C4: a trailing comment
> let url = "http://F7.example"; // a string holds no comment
"#,
    );
    let mut found: Vec<(usize, String, &str)> = scan_rust(&code, &families, true)
        .into_iter()
        .map(|c| (c.line, c.id, c.how))
        .collect();
    found.sort();
    let expected: Vec<(usize, String, &str)> = [
        (2, "F6", "mentions"),
        (2, "ST1", "states"),
        (3, "SI1", "states"),
        (7, "F6", "cites"),
        (9, "F6", "is named after"),
        (12, "ZZ9", "is named after"),
        (17, "L9", "cites"),
        (17, "ST3", "cites"),
        (18, "R10", "cites"),
        (18, "R8", "cites"),
        (19, "ER2", "cites"),
        (19, "R9", "cites"),
        (20, "C1", "mentions"),
        (20, "C2", "mentions"),
        (20, "C3", "mentions"),
        (20, "DL1", "cites"),
        (20, "DL2", "cites"),
        (20, "DL3", "cites"),
        (21, "C4", "cites"),
    ]
    .into_iter()
    .map(|(line, id, how)| (line, id.to_string(), how))
    .collect();
    assert_eq!(found, expected);

    // Outside test code a comment that starts with an id only mentions it,
    // which counts for the families the index has alone.
    let library = fixture("> // ZZ9 is no family\n> // F6: a family\n");
    let ids: Vec<String> = scan_rust(&library, &families, false)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["F6"]);

    assert_eq!(ids_of_name("i4_i5_initial_list_then_relist"), ["I4", "I5"]);
    assert_eq!(ids_of_name("sm3_and_sm4_directives"), ["SM3", "SM4"]);
    assert_eq!(ids_of_name("f6_and_more"), ["F6"]);
    assert!(ids_of_name("w123_not_an_id").is_empty());
    assert!(is_test_path(Path::new("tests/support/tests/status.rs")));
    assert!(!is_test_path(Path::new("tests/support/src/status.rs")));
}

/// `text` without the `> ` that starts each of its lines.
fn fixture(text: &str) -> String {
    text.lines()
        .map(|line| line.strip_prefix('>').map_or(line, str::trim_start))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One row of `CONFORMANCE.md`'s tables.
struct Row {
    id: String,
    line: usize,
    /// The first backticked path of the third cell.
    stated_in: Option<String>,
    /// The backticked paths of the fourth cell.
    checked_by: Vec<String>,
}

/// One place that cites, states or mentions an id.
struct Citation {
    id: String,
    file: PathBuf,
    line: usize,
    how: &'static str,
    /// The test named after the id, for a test name.
    test: Option<String>,
    /// Whether it is in test code (a test's name, a trace, a comment in
    /// test code).
    in_test: bool,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn index() -> String {
    fs::read_to_string(root().join("CONFORMANCE.md"))
        .expect("CONFORMANCE.md at the repository root")
}

fn rows(index: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for (number, line) in index.lines().enumerate() {
        let Some(cells) = line.trim().strip_prefix('|') else {
            continue;
        };
        let cells: Vec<&str> = cells.split('|').map(str::trim).collect();
        if !is_id(cells[0]) {
            continue;
        }
        rows.push(Row {
            id: cells[0].to_string(),
            line: number + 1,
            stated_in: cells.get(2).and_then(|cell| paths(cell).into_iter().next()),
            checked_by: cells.get(3).map(|cell| paths(cell)).unwrap_or_default(),
        });
    }
    rows
}

/// The backticked spans of `cell` that are paths (they hold a `/`).
fn paths(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.contains('/'))
        .map(String::from)
        .collect()
}

fn families(rows: &[Row]) -> BTreeSet<String> {
    rows.iter().map(|row| family(&row.id).to_string()).collect()
}

fn family(id: &str) -> &str {
    id.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// `F6`, `CM1`, `DL14`: one to three capitals, then 1 to 99.
fn is_id(word: &str) -> bool {
    let letters = family(word);
    let digits = &word[letters.len()..];
    (1..=3).contains(&letters.len())
        && letters.bytes().all(|b| b.is_ascii_uppercase())
        && (1..=2).contains(&digits.len())
        && !digits.starts_with('0')
        && !NOT_RULES.contains(&word)
}

fn citations(families: &BTreeSet<String>) -> Vec<Citation> {
    let root = root();
    let mut all = Vec::new();
    for folder in SOURCES {
        for file in files(&root.join(folder)) {
            if file.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = file.strip_prefix(&root).unwrap().to_path_buf();
            let test_file = is_test_path(&relative);
            let text = fs::read_to_string(&file).unwrap();
            for mut citation in scan_rust(&text, families, test_file) {
                citation.file = relative.clone();
                all.push(citation);
            }
        }
    }
    for folder in TRACES {
        for file in files(&root.join(folder)) {
            let name = file.file_stem().unwrap().to_string_lossy();
            for id in ids_of_name(&name) {
                all.push(Citation {
                    id,
                    file: file.strip_prefix(&root).unwrap().to_path_buf(),
                    line: 1,
                    how: "is named after",
                    test: None,
                    in_test: true,
                });
            }
        }
    }
    all
}

/// Whether `path` is test code as a whole: it lies under a `tests` folder
/// and not in the `src` of a crate kept there (the testing crate's).
fn is_test_path(path: &Path) -> bool {
    let parts: Vec<_> = path.components().map(|part| part.as_os_str()).collect();
    match parts.iter().rposition(|part| *part == "tests") {
        Some(last) => !parts[last..].iter().any(|part| *part == "src"),
        None => false,
    }
}

/// Every file under `dir`, build output left out.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "target") {
                found.extend(files(&path));
            }
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The citations in one Rust file; `test_file` says the whole file is
/// test code (else only what follows a `#[cfg(test)]` line is).
fn scan_rust(text: &str, families: &BTreeSet<String>, test_file: bool) -> Vec<Citation> {
    let mut found = Vec::new();
    let mut in_test = test_file;
    let mut under_test_attribute = false;
    for (number, line) in text.lines().enumerate() {
        let code = line.trim();
        if code.starts_with("#[cfg(test)]") {
            in_test = true;
        }
        let mut cite = |id: String, how, test: Option<&str>| {
            found.push(Citation {
                id,
                file: PathBuf::new(),
                line: number + 1,
                how,
                test: test.map(String::from),
                in_test,
            })
        };
        if is_test_attribute(code) {
            under_test_attribute = true;
        }
        if let Some(name) = fn_name(code) {
            if under_test_attribute {
                for id in ids_of_name(name) {
                    cite(id, "is named after", Some(name));
                }
            }
            under_test_attribute = false;
        }
        let Some(comment) = comment(line) else {
            continue;
        };
        let mut strong = Vec::new();
        if let Some(item) = comment.strip_prefix("- ") {
            let stated = leading_ids(item.trim_start_matches('*')).into_iter().next();
            strong.extend(stated.map(|id| (id, "states")));
        } else if in_test {
            strong.extend(leading_ids(comment).into_iter().map(|id| (id, "cites")));
        }
        for id in mentions(comment) {
            if families.contains(family(&id)) && !strong.iter().any(|(cited, _)| *cited == id) {
                cite(id, "mentions", None);
            }
        }
        for (id, how) in strong {
            cite(id, how, None);
        }
    }
    found
}

/// `#[test]`, `#[tokio::test]`, `#[tokio::test(start_paused = true)]`.
fn is_test_attribute(code: &str) -> bool {
    let Some(path) = code.strip_prefix("#[") else {
        return false;
    };
    let path = path.split(['(', ']']).next().unwrap_or("");
    path.rsplit("::").next() == Some("test")
}

fn fn_name(code: &str) -> Option<&str> {
    let mut words = code.split_whitespace().skip_while(|word| {
        word.starts_with("pub") || matches!(*word, "async" | "const" | "unsafe")
    });
    if words.next() != Some("fn") {
        return None;
    }
    let name = words.next()?;
    Some(name.split(['(', '<']).next().unwrap_or(name))
}

/// The leading ids of a test's or a trace's name: `i4_i5_…`, also
/// joined by `and` (`sm3_and_sm4_…`).
fn ids_of_name(name: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut words = name.split('_');
    while let Some(mut word) = words.next() {
        if word == "and" && !ids.is_empty() {
            match words.next() {
                Some(next) => word = next,
                None => break,
            }
        }
        let word = word.to_ascii_uppercase();
        if !is_id(&word) {
            break;
        }
        ids.push(word);
    }
    ids
}

/// The text of the line's comment (`//`, `///`, `//!`), if it has one
/// outside a string literal.
fn comment(line: &str) -> Option<&str> {
    let mut quotes = 0;
    let bytes = line.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'"' if at == 0 || bytes[at - 1] != b'\\' => quotes += 1,
            b'/' if quotes % 2 == 0 && bytes.get(at + 1) == Some(&b'/') => {
                return Some(line[at..].trim_start_matches(['/', '!']).trim());
            }
            _ => {}
        }
    }
    None
}

/// The ids a comment starts with: `F6`, `ST3, L9: …`, `R10/R8`,
/// `R9 and ER2`, `DL1–DL3`.
fn leading_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rest = text;
    loop {
        let (word, after) = split_word(rest);
        if !is_id(word) {
            break;
        }
        let mut after = after.trim_start();
        if let Some(next) = after.strip_prefix(['–', '-']) {
            let (upper, tail) = split_word(next.trim_start());
            ids.extend(expand(word, upper));
            after = tail.trim_start();
        } else {
            ids.push(word.to_string());
        }
        match after
            .strip_prefix([',', '/'])
            .or_else(|| after.strip_prefix("and "))
        {
            Some(next) => rest = next.trim_start(),
            None => break,
        }
    }
    ids
}

/// Every id anywhere in `text`, ranges expanded; an id is a whole word
/// (`W-PB3`, `RS7_SEEDS` and `K8s` hold none).
fn mentions(text: &str) -> Vec<String> {
    let joined = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut ids = Vec::new();
    let mut previous = None;
    let mut skip_to = 0;
    for (at, c) in text.char_indices() {
        let starts_word = at >= skip_to && !previous.is_some_and(joined);
        previous = Some(c);
        if !starts_word || !c.is_ascii_uppercase() {
            continue;
        }
        let (word, rest) = split_word(&text[at..]);
        if !is_id(word) {
            continue;
        }
        let after = rest.trim_start();
        let upper = after
            .strip_prefix(['–', '-'])
            .map(|next| split_word(next.trim_start()))
            .filter(|(upper, _)| is_id(upper) && family(upper) == family(word));
        match upper {
            Some((upper, rest)) => {
                ids.extend(expand(word, upper));
                skip_to = text.len() - rest.len();
            }
            None => ids.push(word.to_string()),
        }
    }
    ids
}

/// The leading run of letters, digits and `_` of `text`, and what follows.
fn split_word(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// `DL1`–`DL3` is DL1, DL2 and DL3; anything else is its two ends.
fn expand(low: &str, high: &str) -> Vec<String> {
    let (family_low, family_high) = (family(low), family(high));
    let from: u32 = low[family_low.len()..].parse().unwrap_or(0);
    let to: u32 = high[family_high.len()..].parse().unwrap_or(0);
    if family_low == family_high && is_id(high) && from < to {
        (from..=to).map(|n| format!("{family_low}{n}")).collect()
    } else {
        [low, high]
            .into_iter()
            .filter(|id| is_id(id))
            .map(String::from)
            .collect()
    }
}
