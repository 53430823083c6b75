//! The module graph of each crate has no cycle: no two modules import each other, directly
//! or around a loop (docs/design.md, "Layers").
//!
//! The check reads every `.rs` file under a crate's `src/`, finds the paths it names through
//! `crate::…`, `super::…` and `self::…` (in `use` lines and inline), and resolves each to the
//! module it points into. An edge from module `a` to module `b` is counted between the two
//! children of their deepest common ancestor that contain them: `gateway::run` naming
//! `crate::chat::Usage` is an edge `gateway → chat` at the crate root; `gateway::run` naming
//! `super::stream::X` is an edge `run → stream` inside `gateway`. A module naming its own
//! ancestor or descendant (`use super::*` in a child, `mod x; use x::Y` in a parent) is not
//! an edge. Every group of siblings must then form a graph without cycles.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module path below the crate root (`[]` is the root).
type ModPath = Vec<String>;

#[test]
fn the_library_has_no_module_cycle() {
    let cycles = cycles_in(&crate_src("switchyard"));
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

/// The vocabulary (docs/design.md, "Layers") names only itself: the time source, money, error
/// kinds, the attempt trail, the chat and embedding shapes and the gateway's error, and the
/// JSON text helpers they parse with.
#[test]
fn the_library_vocabulary_depends_on_nothing_above_it() {
    const VOCABULARY: [&str; 8] = [
        "clock",
        "money",
        "fault",
        "trail",
        "chat",
        "embedding",
        "error",
        "json_text",
    ];
    let mut files = BTreeMap::new();
    let src = crate_src("switchyard");
    collect(&src, &src, &mut files);
    let graphs = sibling_graphs(&files);
    let root = &graphs[&Vec::new()];
    let mut above = Vec::new();
    for module in VOCABULARY {
        for target in root.get(module).into_iter().flatten() {
            if !VOCABULARY.contains(&target.as_str()) {
                above.push(format!("{module} -> {target}"));
            }
        }
    }
    assert!(
        above.is_empty(),
        "the vocabulary imports from above it: {above:?}"
    );
}

#[test]
fn the_server_has_no_module_cycle() {
    let cycles = cycles_in(&crate_src("switchyard-server"));
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_checker_finds_a_cycle_and_ignores_parent_child_use() {
    let mut files = BTreeMap::new();
    files.insert(vec![], "mod a; mod b; mod c;".to_owned());
    files.insert(
        path(&["a"]),
        "use crate::b::X; mod inner; use inner::Y;".to_owned(),
    );
    files.insert(path(&["a", "inner"]), "use super::*;".to_owned());
    files.insert(path(&["b"]), "fn f() { crate::c::g() }".to_owned());
    files.insert(
        path(&["c"]),
        "// use crate::b::Nope;\nconst S: &str = \"crate::b::Nope\";\nuse crate::{a::Z};"
            .to_owned(),
    );
    let cycles = cycles_of(&files);
    assert_eq!(cycles, vec!["crate: a -> b -> c -> a".to_owned()]);

    files.insert(path(&["c"]), "use crate::b::X;".to_owned());
    let cycles = cycles_of(&files);
    assert_eq!(cycles, vec!["crate: b -> c -> b".to_owned()]);

    files.remove(&path(&["c"]));
    assert!(cycles_of(&files).is_empty());
}

fn path(segments: &[&str]) -> ModPath {
    segments.iter().map(|s| (*s).to_owned()).collect()
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// Every cycle among sibling modules of the crate whose sources are in `src`, one line each.
fn cycles_in(src: &Path) -> Vec<String> {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files);
    assert!(!files.is_empty(), "no sources under {}", src.display());
    cycles_of(&files)
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<ModPath, String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(root, &entry, files);
        } else if entry.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&entry).expect("read source");
            files.insert(module_of(root, &entry), text);
        }
    }
}

/// `lib.rs`/`main.rs` → root; `a/mod.rs` and `a.rs` → `a`; `a/b.rs` → `a::b`.
fn module_of(root: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(root).expect("under src");
    let mut segments: ModPath = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = segments.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    let at_root = segments.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !at_root {
        segments.push(stem.to_owned());
    }
    segments
}

/// Sibling graphs: for each parent module, which of its children name which others.
type Graphs = BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>>;

fn cycles_of(files: &BTreeMap<ModPath, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (parent, graph) in &sibling_graphs(files) {
        let name = if parent.is_empty() {
            "crate".to_owned()
        } else {
            parent.join("::")
        };
        for cycle in simple_cycles(graph) {
            found.push(format!("{name}: {}", cycle.join(" -> ")));
        }
    }
    found
}

fn sibling_graphs(files: &BTreeMap<ModPath, String>) -> Graphs {
    let mut modules: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut refs = Vec::new();
    for (module, text) in files {
        for (inner, target) in references(module, &strip(text)) {
            modules.insert(inner.clone());
            refs.push((inner, target));
        }
    }
    // Edges between siblings, grouped by their parent.
    let mut graphs = Graphs::new();
    for (from, target) in refs {
        let to = deepest_module(&modules, &target);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common == from.len() || common == to.len() {
            continue; // self, ancestor or descendant
        }
        graphs
            .entry(from[..common].to_vec())
            .or_default()
            .entry(from[common].clone())
            .or_default()
            .insert(to[common].clone());
    }
    graphs
}

/// The longest prefix of `target` that is a known module.
fn deepest_module(modules: &BTreeSet<ModPath>, target: &ModPath) -> ModPath {
    (0..=target.len())
        .rev()
        .map(|n| target[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// One cycle per strongly connected group: the shortest loop through its smallest member.
fn simple_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut cycles = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for start in graph.keys() {
        if seen.contains(start) {
            continue;
        }
        if let Some(mut cycle) = shortest_loop(graph, start) {
            seen.extend(cycle.iter().cloned());
            cycle.push(start.clone());
            cycles.push(cycle);
        }
    }
    cycles
}

/// Breadth-first search for the shortest path from `start` back to itself.
fn shortest_loop(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_owned()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                let mut path = vec![node.clone()];
                while let Some(prev) = came_from.get(path.last().expect("non-empty")) {
                    path.push(prev.clone());
                }
                path.reverse();
                return Some(path);
            }
            if !came_from.contains_key(next) {
                came_from.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}

/// The source with comments, string and char literals blanked out.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            i = skip_block_comment(&chars, i);
            out.push(' ');
        } else if let Some(end) = raw_string_end(&chars, i) {
            i = end;
            out.push_str("\"\"");
        } else if chars[i] == '"' {
            i = skip_quoted(&chars, i, '"');
            out.push_str("\"\"");
        } else if chars[i] == '\'' && is_char_literal(rest) {
            i = skip_quoted(&chars, i, '\'');
            out.push_str("' '");
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if chars[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Where a raw string starting at `i` (`r"…"`, `r#"…"#`, `br"…"`) ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let prev_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if prev_is_ident || chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

fn skip_quoted(chars: &[char], mut i: usize, quote: char) -> usize {
    i += 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// `'x'` or `'\n'` rather than a lifetime `'a`.
fn is_char_literal(rest: &[char]) -> bool {
    match rest.get(1) {
        Some('\\') => true,
        Some(_) => rest.get(2) == Some(&'\''),
        None => false,
    }
}

/// Each path named in `code` (of the file for `module`), with the (possibly inline) module
/// it is named in, as the absolute path it resolves to.
fn references(module: &ModPath, code: &str) -> Vec<(ModPath, ModPath)> {
    let tokens = tokenize(code);
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`): the module path and the brace depth it closes at.
    let mut scopes: Vec<(ModPath, usize)> = vec![(module.clone(), 0)];
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let current = scopes.last().expect("root scope").0.clone();
        match tokens[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if scopes.len() > 1 && scopes.last().is_some_and(|s| s.1 == depth) {
                    scopes.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t == "{") => {
                let mut inner = current.clone();
                inner.push(tokens[i + 1].clone());
                scopes.push((inner, depth));
            }
            "use" => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j] == ";")
                    .unwrap_or(tokens.len());
                for p in expand_use(&tokens[i + 1..end]) {
                    if let Some(target) = resolve(&current, &p) {
                        found.push((current.clone(), target));
                    }
                }
                i = end;
            }
            "crate" | "super" | "self" if is_path_start(&tokens, i) => {
                let mut p = vec![tokens[i].clone()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t == "::")
                    && tokens.get(j + 1).is_some_and(|t| is_ident(t))
                {
                    p.push(tokens[j + 1].clone());
                    j += 2;
                }
                if let Some(target) = resolve(&current, &p) {
                    found.push((current.clone(), target));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// `crate`/`super`/`self` followed by `::`, not preceded by another path segment.
fn is_path_start(tokens: &[String], i: usize) -> bool {
    tokens.get(i + 1).is_some_and(|t| t == "::") && (i == 0 || tokens[i - 1] != "::")
}

fn is_ident(t: &str) -> bool {
    t.chars().all(|c| c.is_alphanumeric() || c == '_') && !t.is_empty()
}

fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            tokens.push("::".to_owned());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// The paths of a use tree: `crate::{a::X, b::{Y, Z}}` → `crate::a::X`, `crate::b::Y`, ….
fn expand_use(tokens: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    expand_into(tokens, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tokens: &[String], prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let depth_before = prefix.len();
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "{" => {
                let close = matching_brace(tokens, i);
                for item in split_top_level(&tokens[i + 1..close]) {
                    expand_into(item, prefix, out);
                }
                prefix.truncate(depth_before);
                return;
            }
            "::" | "pub" | "(" | ")" => {}
            "as" => break,
            t if is_ident(t) => prefix.push(t.to_owned()),
            _ => {}
        }
        i += 1;
    }
    out.push(prefix.clone());
    prefix.truncate(depth_before);
}

fn matching_brace(tokens: &[String], open: usize) -> usize {
    let mut depth = 0;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn split_top_level(tokens: &[String]) -> Vec<&[String]> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (j, t) in tokens.iter().enumerate() {
        match t.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                items.push(&tokens[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    items.push(&tokens[start..]);
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

/// The absolute path `p` names from inside `current`; `None` for paths outside the crate
/// (`std::…`, other crates) and relative paths into `current`'s own children.
fn resolve(current: &ModPath, p: &[String]) -> Option<ModPath> {
    let (mut base, mut rest) = match p.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &p[1..]),
        Some("self") => (current.clone(), &p[1..]),
        Some("super") => (current.clone(), p),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}
