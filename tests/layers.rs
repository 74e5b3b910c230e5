//! The crate flows one way: a module may use modules of its own layer and of layers below it,
//! never one above (DEVELOPERS.md, "Layers"). This test reads every source file, resolves every
//! path it names (`crate::…`, `super::…`, `self::…`, `use` groups included) to the file that
//! defines it, and holds each file to its layer. It also finds import cycles between files of
//! different folders, and keeps the checks away from the formats' internals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::repo;

/// The layers, bottom first, as module paths: a file belongs to the layer of the longest
/// prefix of its module path listed here. Every file must belong to one.
const LAYERS: &[&[&str]] = &[
    // Shared types and helpers every layer may name.
    &[
        "core", "text", "source", "testing", "first_of", "FastMap", "FastSet",
    ],
    // The JSON kernel; reading an input's bytes (standard input's private copy, opening).
    &["json", "ingest"],
    // Redaction: the detectors and the structural pass over text (below the printers, which
    // `--redact` runs through it).
    &["redact"],
    // OpenCode's schema and data model.
    &["model"],
    // The model's input as data; the session model replays produce.
    &["request"],
    &["session"],
    // Wire protocols: SSE framing, stream decoders and processors, request bodies, provider rules.
    &["protocols"],
    // One folder per input format: recognition, reading, replay, the rebuilt request.
    &["formats"],
    // The rules: pure functions of the session model.
    &["checks"],
    // Printers.
    &["report"],
    // Repairs ask the rules for their fixes and verify with them.
    &[
        "formats::opencode::repair",
        "formats::transcript::repair",
        "formats::claude_code::repair",
        "formats::codex::repair",
        "formats::gemini::repair",
        "formats::codex::index_repair",
        "formats::copilot::repair",
    ],
    // The engine and what it reads besides inputs.
    &["pipeline", "config", "baseline", "discover", "shard"],
    // The front end.
    &["commands", "cli", "progress", "lib", "main"],
];

/// A source file and the module path it defines.
struct File {
    path: PathBuf,
    /// `["formats", "opencode", "db"]`; empty for `lib.rs`.
    module: Vec<String>,
    text: String,
}

fn files() -> Vec<File> {
    let src = repo("src");
    let mut out = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(&src).unwrap();
                let mut module: Vec<String> = rel
                    .with_extension("")
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                    module.pop();
                }
                if module == ["main"] {
                    module = vec!["main".to_owned()];
                }
                out.push(File {
                    text: std::fs::read_to_string(&p).unwrap(),
                    path: rel.to_path_buf(),
                    module,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The layer of a module path (`None` when no listed prefix covers it).
fn layer_of(module: &[String]) -> Option<usize> {
    let joined = module.join("::");
    let mut best: Option<(usize, usize)> = None;
    for (layer, names) in LAYERS.iter().enumerate() {
        for name in *names {
            let covers = joined == *name || joined.starts_with(&format!("{name}::"));
            if covers && best.is_none_or(|(len, _)| name.len() > len) {
                best = Some((name.len(), layer));
            }
        }
    }
    if module.is_empty() {
        return LAYERS.iter().position(|l| l.contains(&"lib"));
    }
    best.map(|(_, layer)| layer)
}

/// The paths a file names, each as an absolute module path with the line it is on. Handles
/// `crate::a::b`, `super::a`, `self::a`, and one level of `use` groups (`use crate::{a, b::c}`,
/// `use super::{a, b}`). Comments are skipped.
fn named_paths(file: &File) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    // The module a relative path starts from: a `mod.rs` file is its folder's module; any other
    // file is a module of its own, whose `super` is its parent. Inline `mod tests` blocks are
    // read as the file's module (they only reach up with `super::*`).
    let here = file.module.clone();
    for (n, raw) in file.text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or_default();
        for (start, _) in line.match_indices(['c', 's']) {
            let rest = &line[start..];
            let before = line[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let (base, tail): (Vec<String>, &str) = if let Some(t) = rest.strip_prefix("crate::") {
                (Vec::new(), t)
            } else if rest.starts_with("super::") {
                let mut base = here.clone();
                let mut t = rest;
                while let Some(r) = t.strip_prefix("super::") {
                    base.pop();
                    t = r;
                }
                (base, t)
            } else if let Some(t) = rest.strip_prefix("self::") {
                (here.clone(), t)
            } else {
                continue;
            };
            for path in expand(tail) {
                let mut full = base.clone();
                full.extend(path);
                if !full.is_empty() {
                    out.push((n + 1, full));
                }
            }
        }
    }
    out
}

/// `a::b::c` → `[[a, b, c]]`; `{a, b::c}` → `[[a], [b, c]]`; `a::{b, c::{d, e}}` →
/// `[[a, b], [a, c, d], [a, c, e]]`. `self` in a group names the group's prefix.
fn expand(tail: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    tree(tail, &mut Vec::new(), &mut out);
    out
}

/// Reads one use tree from the start of `t` below `prefix`; returns what it did not read.
fn tree<'t>(mut t: &'t str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> &'t str {
    let depth = prefix.len();
    loop {
        t = t.trim_start();
        if let Some(group) = t.strip_prefix('{') {
            t = group;
            loop {
                t = t.trim_start();
                if let Some(rest) = t.strip_prefix('}') {
                    t = rest;
                    break;
                }
                if t.is_empty() {
                    break;
                }
                t = tree(t, prefix, out);
                t = t.trim_start();
                t = t.strip_prefix(',').unwrap_or(t);
            }
            prefix.truncate(depth);
            return t;
        }
        let name: String = t
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        t = &t[name.len()..];
        if name.is_empty() {
            break;
        }
        if name != "self" {
            prefix.push(name);
        }
        match t.strip_prefix("::") {
            Some(r) => t = r,
            None => break,
        }
    }
    if !prefix.is_empty() {
        out.push(prefix.clone());
    }
    prefix.truncate(depth);
    t
}

/// The file that defines `path`: the longest prefix of it that is a file's module.
fn defining_file<'f>(files: &'f [File], path: &[String]) -> Option<&'f File> {
    (1..=path.len())
        .rev()
        .find_map(|k| files.iter().find(|f| f.module == path[..k]))
}

#[test]
fn every_file_belongs_to_a_layer() {
    let missing: Vec<String> = files()
        .iter()
        .filter(|f| layer_of(&f.module).is_none())
        .map(|f| f.path.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files in no layer (add their module to LAYERS): {missing:?}"
    );
}

#[test]
fn modules_only_use_their_own_layer_and_the_ones_below() {
    let files = files();
    let mut problems = Vec::new();
    for file in &files {
        let Some(own) = layer_of(&file.module) else {
            continue;
        };
        for (line, path) in named_paths(file) {
            let target = defining_file(&files, &path).map_or(path.clone(), |f| f.module.clone());
            if let Some(layer) = layer_of(&target)
                && layer > own
            {
                problems.push(format!(
                    "{}:{line}: `{}` (layer {own}) uses `{}` (layer {layer})",
                    file.path.display(),
                    file.module.join("::"),
                    path.join("::"),
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_import_cycle_between_files_of_different_folders() {
    let files = files();
    let index: BTreeMap<&Path, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_path(), i))
        .collect();
    let mut edges: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); files.len()];
    for (i, file) in files.iter().enumerate() {
        for (_, path) in named_paths(file) {
            if let Some(target) = defining_file(&files, &path) {
                let j = index[target.path.as_path()];
                // A file and the `mod.rs` of its own folder form one unit: `mod.rs` declares the
                // file, the file uses what its folder shares.
                if j != i && !parent_and_child(&files[i].path, &files[j].path) {
                    edges[i].insert(j);
                }
            }
        }
    }
    let mut problems = Vec::new();
    for component in strongly_connected(&edges) {
        let folders: BTreeSet<_> = component
            .iter()
            .map(|&i| files[i].path.parent().map(Path::to_path_buf))
            .collect();
        if component.len() > 1 && folders.len() > 1 {
            let names: Vec<String> = component
                .iter()
                .map(|&i| files[i].path.display().to_string())
                .collect();
            problems.push(names.join(" ↔ "));
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles across folders:\n{}",
        problems.join("\n")
    );
}

/// Whether one of `a`, `b` is the `mod.rs` of the other's folder.
fn parent_and_child(a: &Path, b: &Path) -> bool {
    let is_mod_of = |m: &Path, f: &Path| {
        m.file_name().is_some_and(|n| n == "mod.rs") && f.parent() == m.parent()
    };
    is_mod_of(a, b) || is_mod_of(b, a)
}

/// Tarjan's strongly connected components of a graph given as adjacency sets.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn checks_do_not_name_the_formats_internals() {
    let mut naming = Vec::new();
    for mut file in files() {
        // A check's unit tests may replay a real fixture through its format's reader.
        if let Some(k) = file.text.find("\n#[cfg(test)]") {
            file.text.truncate(k);
        }
        if file.module.first().is_some_and(|m| m == "checks")
            && named_paths(&file)
                .iter()
                .any(|(_, p)| p.first().is_some_and(|m| m == "formats"))
        {
            naming.push(file.path.display().to_string());
        }
    }
    assert!(
        naming.is_empty(),
        "checks naming a format's internals: {naming:?} (a check reads the session model only; \
         what it needs of a format is handed over there)"
    );
}

/// Printers escape the input's text in one way: through `InputText`'s `for_*` methods (or the
/// HTML page's `Text`, which writes through the same function), never by calling an escaping
/// function on a string of their own — a string a printer forgot to pass is then a type error,
/// not a leak.
#[test]
fn printers_escape_only_through_input_text() {
    let raw = [
        "snippet::escape(",
        "escape(&",
        "xml_escape(&",
        "escape_markdown(&",
        "escape_data(&",
        "escape_property(&",
    ];
    let mut found = Vec::new();
    for file in files() {
        let printer = file
            .module
            .first()
            .is_some_and(|m| m == "report" || m == "commands");
        let own = file.path.ends_with("input_text.rs")
            || file.path.ends_with("snippet.rs")
            || file.path.ends_with("github.rs")
            || file.path.ends_with("junit.rs");
        if !printer || own {
            continue;
        }
        // The unit tests at the end of a file may call anything.
        let body = file.text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in body.lines().enumerate() {
            if raw.iter().any(|r| line.contains(r)) {
                found.push(format!(
                    "{}:{}: {}",
                    file.path.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(found.is_empty(), "escaping by hand: {found:#?}");
}

#[test]
fn paths_resolve_as_rust_does() {
    let file = File {
        path: PathBuf::from("formats/opencode/db.rs"),
        module: vec!["formats".into(), "opencode".into(), "db".into()],
        text: "use super::stored::X;\nuse crate::{checks, json::scan::{self, b}};\nlet x = super::super::core::Format; // crate::report\n".into(),
    };
    let got: Vec<String> = named_paths(&file)
        .into_iter()
        .map(|(_, p)| p.join("::"))
        .collect();
    assert_eq!(
        got,
        [
            "formats::opencode::stored::X",
            "checks",
            "json::scan",
            "json::scan::b",
            "formats::core::Format"
        ]
    );
}

#[test]
fn cycles_are_found() {
    let edges = vec![
        BTreeSet::from([1]),
        BTreeSet::from([0]),
        BTreeSet::from([0]),
        BTreeSet::new(),
    ];
    let mut got: Vec<Vec<usize>> = strongly_connected(&edges)
        .into_iter()
        .map(|mut c| {
            c.sort_unstable();
            c
        })
        .collect();
    got.sort();
    assert_eq!(got, [vec![0, 1], vec![2], vec![3]]);
}

/// Where a `Format` variant may be named outside `formats/`: its definition and predicates, the
/// unit tests' constants, and the repair command's per-store options. Everything else asks the
/// format's predicates (`is_opencode_store`, `is_client_transcript` …) or its family.
const NAMING_FORMAT_VARIANTS: &[&str] = &["core/format.rs", "testing.rs", "commands/repair.rs"];

#[test]
fn format_variants_are_named_in_the_formats_only() {
    // The variants, read from the enum's definition.
    let def = std::fs::read_to_string(repo("src/core/format.rs")).unwrap();
    let body = &def[def.find("pub enum Format {").unwrap()..];
    let body = &body[..body.find("\n}").unwrap()];
    let variants: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_suffix(','))
        .filter(|l| l.chars().all(char::is_alphanumeric))
        .collect();
    assert!(variants.len() >= 11, "{variants:?}");
    let variant = |text: &str| {
        variants.iter().any(|v| {
            text.match_indices(&format!("Format::{v}")).any(|(k, m)| {
                let before = text[..k].chars().next_back();
                let after = text[k + m.len()..].chars().next();
                // `OutputFormat::Json` is another enum.
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
    };
    let naming: Vec<String> = files()
        .iter()
        .filter(|f| f.module.first().is_none_or(|m| m != "formats") && variant(&f.text))
        .map(|f| f.path.display().to_string())
        .filter(|p| !NAMING_FORMAT_VARIANTS.contains(&p.as_str()))
        .collect();
    assert!(
        naming.is_empty(),
        "files outside formats/ naming Format variants: {naming:?}"
    );
}
