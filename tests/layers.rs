//! The pipeline flows one way: a stage may use the stages before it, never one after it
//! (DEVELOPERS.md, "The pipeline"). This test reads the sources and holds every stage to that.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::repo;

/// The layers, first to last. A module may use modules of its own layer and of earlier ones.
const LAYERS: &[&[&str]] = &[
    &["source", "json_scan"],
    &["model"],
    &["ingest"],
    &["request"],
    &["session"],
    &["replay"],
    &["reconstruct"],
    &["checks", "diagnostic"],
    &["report"],
    &["repair"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn stages_only_use_earlier_stages() {
    let src = repo("src");
    let mut problems = Vec::new();
    for layer in LAYERS {
        for module in *layer {
            let own = layer_of(module).unwrap();
            let mut paths = Vec::new();
            let dir = src.join(module);
            if dir.is_dir() {
                files(&dir, &mut paths);
            } else {
                paths.push(src.join(format!("{module}.rs")));
            }
            for path in paths {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    for used in line.split("crate::").skip(1) {
                        let name: String = used
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        if layer_of(&name).is_some_and(|l| l > own) {
                            problems.push(format!(
                                "{}:{}: {module} uses the later stage `{name}`",
                                path.strip_prefix(&src).unwrap().display(),
                                n + 1
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
