//! Workspace tidy checks: the rules ARCHITECTURE.md states about the whole repository, checked
//! on every test run so a change that breaks one fails here instead of in a reviewer's head.
//!
//! - every Rust file opens with a `//!` doc saying what it is for;
//! - strata-core does no I/O: its sources name no file system, network, thread, process,
//!   environment or clock API; strata-format opens no file and starts no thread (it reads any
//!   `std::io::Read` its caller gives it);
//! - no absolute path of a development machine stands in the repository (the repository must
//!   stand on its own on any machine);
//! - the crate graph points down: a library depends only on crates in layers below its own;
//! - no module of a crate reaches itself through `crate::` paths (no module circles);
//! - every crate root states its `unsafe` rule (forbidden, or denied with each
//!   site allowed where it stands: the store, the fuzz harnesses).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The workspace root (this crate lives at `crates/strata-testkit`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Directories never walked: build output, version control, fuzzing's own output and
/// corpora (generated inputs, not sources).
const SKIPPED_DIRS: [&str; 5] = ["target", ".git", "corpus", "artifacts", "node_modules"];

/// Every file under `dir` whose name ends with one of `extensions`.
fn files(dir: &Path, extensions: &[&str], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) {
                files(&path, extensions, found);
            }
        } else if extensions.iter().any(|ext| name.ends_with(ext)) {
            found.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    let root = root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut rust = Vec::new();
    files(&root().join("crates"), &[".rs"], &mut rust);
    files(&root().join("fuzz"), &[".rs"], &mut rust);
    assert!(rust.len() > 200, "found only {} Rust files", rust.len());
    let undocumented: Vec<String> = rust
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.starts_with("//!")
        })
        .map(|path| relative(path))
        .collect();
    assert!(
        undocumented.is_empty(),
        "these files do not open with a `//!` doc: {undocumented:#?}"
    );
}

/// What the core may not name: its callers bring the bytes, the threads and the time.
const CORE_FORBIDDEN: [&str; 8] = [
    "std::fs",
    "std::net",
    "std::thread",
    "std::process",
    "std::env",
    "Instant",
    "SystemTime",
    "std::io::std",
];

/// What the format crate may not name: it turns bytes into values and back, and the stores
/// bring the files (a reader takes any `std::io::Read`).
const FORMAT_FORBIDDEN: [&str; 5] = [
    "std::fs",
    "std::net",
    "std::thread",
    "std::process",
    "std::env",
];

/// Every `file:line: name` where code (not a comment) under `crate_dir/src` names one of
/// `forbidden`.
fn named_in(crate_dir: &str, forbidden: &[&str]) -> Vec<String> {
    let mut sources = Vec::new();
    files(&root().join(crate_dir).join("src"), &[".rs"], &mut sources);
    assert!(
        sources.len() > 5,
        "found only {} files in {crate_dir}",
        sources.len()
    );
    let mut found = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for name in forbidden {
                if code.contains(name) {
                    found.push(format!("{}:{}: {name}", relative(path), number + 1));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_does_no_io() {
    let found = named_in("crates/strata-core", &CORE_FORBIDDEN);
    assert!(found.is_empty(), "strata-core names I/O: {found:#?}");
}

#[test]
fn the_format_crate_opens_no_file() {
    let found = named_in("crates/strata-format", &FORMAT_FORBIDDEN);
    assert!(found.is_empty(), "strata-format names I/O: {found:#?}");
}

/// Roots of the machines this repository was developed on; a path under one of them works
/// only there.
const MACHINE_ROOTS: [&str; 2] = ["/work/", "/root/"];

#[test]
fn no_machine_paths_stand_in_the_repository() {
    let mut texts = Vec::new();
    files(
        &root(),
        &[
            ".rs", ".md", ".toml", ".sh", ".txt", ".py", ".mjs", ".yml", ".json",
        ],
        &mut texts,
    );
    let scripts = root().join("scripts");
    files(&scripts, &[""], &mut texts);
    files(&root().join(".ci"), &[""], &mut texts);
    assert!(texts.len() > 200, "found only {} text files", texts.len());
    let mut found = Vec::new();
    for path in &texts {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if MACHINE_ROOTS.iter().any(|root| line.contains(root)) {
                found.push(format!(
                    "{}:{}: {}",
                    relative(path),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    // This file names the roots it looks for, and only in the constant above.
    found.retain(|hit| !hit.starts_with("crates/strata-testkit/tests/tidy.rs"));
    assert!(found.is_empty(), "machine paths: {found:#?}");
}

/// The layers, lowest first. A crate's normal dependencies may only name crates of a lower
/// layer; dev-dependencies (tests asking an oracle, shared test support) may name any.
const LAYERS: [&[&str]; 6] = [
    &["strata-core", "strata-testkit"],
    &["strata-format"],
    &["strata-store"],
    &["strata-compact", "strata-migrate"],
    &["strata-agent"],
    &["strata-cli", "strata-conformance", "strata-fuzz"],
];

fn layer(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

#[test]
fn the_crate_graph_points_down() {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    assert!(
        packages.len() >= 8,
        "found only {} packages",
        packages.len()
    );
    let mut wrong = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(own) = layer(name) else {
            wrong.push(format!("{name} is in no layer of LAYERS"));
            continue;
        };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let target = dependency["name"].as_str().unwrap_or_default();
            let normal = dependency["kind"].is_null();
            match layer(target) {
                Some(below) if normal && below >= own => wrong.push(format!(
                    "{name} (layer {own}) depends on {target} (layer {below})"
                )),
                None if target.starts_with("strata") => {
                    wrong.push(format!("{name} depends on {target}, which is in no layer"))
                }
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "the crate graph: {wrong:#?}");
}

/// Each crate root and the `unsafe` rule it must state: `forbid` where no unsafe code may ever
/// stand, `deny` where a justified site may be allowed where it stands (the fuzz harnesses'
/// allocator tuning; the store's storage code, should one ever pay for itself).
const UNSAFE_RULES: [(&str, &str); 10] = [
    ("crates/strata-core/src/lib.rs", "#![forbid(unsafe_code)]"),
    ("crates/strata-format/src/lib.rs", "#![forbid(unsafe_code)]"),
    ("crates/strata-store/src/lib.rs", "#![deny(unsafe_code)]"),
    (
        "crates/strata-compact/src/lib.rs",
        "#![forbid(unsafe_code)]",
    ),
    (
        "crates/strata-migrate/src/lib.rs",
        "#![forbid(unsafe_code)]",
    ),
    ("crates/strata-agent/src/lib.rs", "#![forbid(unsafe_code)]"),
    ("crates/strata-cli/src/main.rs", "#![forbid(unsafe_code)]"),
    (
        "crates/strata-conformance/src/lib.rs",
        "#![forbid(unsafe_code)]",
    ),
    ("crates/strata-fuzz/src/lib.rs", "#![deny(unsafe_code)]"),
    (
        "crates/strata-testkit/src/lib.rs",
        "#![forbid(unsafe_code)]",
    ),
];

#[test]
fn every_crate_root_states_its_unsafe_rule() {
    let missing: Vec<_> = UNSAFE_RULES
        .iter()
        .filter(|(file, rule)| {
            let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
            !text.lines().any(|line| line.trim() == *rule)
        })
        .map(|(file, rule)| format!("{file}: {rule}"))
        .collect();
    assert!(missing.is_empty(), "missing unsafe rules: {missing:#?}");
}

/// The top-level modules of `crate_dir/src` each non-test source names through `crate::…`
/// (its own name excluded): the edges of the crate's module graph.
fn module_edges(crate_dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir.join("src");
    let mut sources = Vec::new();
    files(&src, &[".rs"], &mut sources);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &sources {
        let Ok(rel) = path.strip_prefix(&src) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let test_file = rel.ends_with("tests.rs") || rel.contains("/tests/");
        let top = rel.split('/').next().unwrap_or("").trim_end_matches(".rs");
        if test_file || matches!(top, "lib" | "main" | "bin") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // A file's own tests come last, after `#[cfg(test)]`; they may use anything.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let targets = edges.entry(top.to_owned()).or_default();
        for line in code
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
        {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    // `use crate::{a, b::c}` on one line names `a` and `b`.
                    Some(group) => group
                        .split(['}', ','])
                        .map(|item| item.trim().split("::").next().unwrap_or(""))
                        .collect(),
                    None => vec![rest
                        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or("")],
                };
                for name in names {
                    if !name.is_empty()
                        && name != top
                        && name.starts_with(|c: char| c.is_ascii_lowercase())
                    {
                        targets.insert(name.to_owned());
                    }
                }
            }
        }
    }
    let modules: BTreeSet<String> = edges.keys().cloned().collect();
    for targets in edges.values_mut() {
        targets.retain(|target| modules.contains(target));
    }
    edges
}

/// Every module that can reach itself through `edges`, with the modules on its way back.
fn module_circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = edges[start].iter().collect();
        while let Some(module) = stack.pop() {
            if module == start {
                let others: Vec<&String> = seen.iter().collect();
                circles.push(format!("{start} reaches itself (through {others:?})"));
                break;
            }
            if seen.insert(module.clone()) {
                stack.extend(edges.get(module).into_iter().flatten());
            }
        }
    }
    circles
}

#[test]
fn no_module_reaches_itself() {
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(root().join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if entry.path().join("src").is_dir() {
            crates.push(entry.path());
        }
    }
    assert!(crates.len() >= 9, "found only {} crates", crates.len());
    let mut found = Vec::new();
    for crate_dir in &crates {
        let edges = module_edges(crate_dir);
        for circle in module_circles(&edges) {
            found.push(format!("{}: {circle}", relative(crate_dir)));
        }
    }
    assert!(found.is_empty(), "module circles: {found:#?}");
}

#[test]
fn the_circle_check_sees_a_circle() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(module, targets)| {
        (
            module.to_owned(),
            targets.into_iter().map(str::to_owned).collect(),
        )
    })
    .collect();
    let circles = module_circles(&edges);
    assert_eq!(circles.len(), 3, "{circles:#?}");
    assert!(circles.iter().all(|circle| !circle.starts_with('d')));
}
