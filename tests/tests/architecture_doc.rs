//! docs/architecture.md's table of the server's crates says what their Cargo.toml files say: each row's crate
//! directory, package name and workspace dependencies (the `path = "../..."` entries of `[dependencies]`), and every
//! crate one of them depends on has a row.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

/// The names in backquotes of a table cell (`none` gives none).
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The crates the documentation's table lists: directory -> (package, workspace dependencies).
fn documented() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let text = std::fs::read_to_string(workspace().join("docs/architecture.md")).expect("read docs/architecture.md");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("1. Crates"))
        .expect("docs/architecture.md has the section \"1. Crates and their dependencies\"");
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 3, "a row of three cells: {line}");
        let dir = quoted(cells[0])
            .first()
            .expect("a crate directory")
            .trim_end_matches('/')
            .to_owned();
        let package = quoted(cells[1]).first().expect("a package name").clone();
        rows.insert(dir, (package, quoted(cells[2]).into_iter().collect()));
    }
    assert!(!rows.is_empty(), "no crate rows found in docs/architecture.md");
    rows
}

/// A crate's package name and the package names of its `path` dependencies, from its Cargo.toml.
fn declared(dir: &str) -> (String, BTreeSet<String>) {
    let root = workspace();
    let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("read {dir}/Cargo.toml: {e}"));
    let package = package_name(&manifest).unwrap_or_else(|| panic!("{dir}/Cargo.toml names no package"));
    let mut dependencies = BTreeSet::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        let Some(path) = line.split("path = \"").nth(1).and_then(|rest| rest.split('"').next()) else {
            continue;
        };
        if in_dependencies {
            let target = std::fs::read_to_string(root.join(dir).join(path).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("read the Cargo.toml of {dir}'s dependency {path}: {e}"));
            dependencies.insert(package_name(&target).expect("a dependency's package name"));
        }
    }
    (package, dependencies)
}

fn package_name(manifest: &str) -> Option<String> {
    let package = manifest.split("[package]").nth(1)?;
    let line = package.lines().find(|l| l.trim_start().starts_with("name"))?;
    Some(line.split('"').nth(1)?.to_owned())
}

#[test]
fn the_crate_table_matches_the_cargo_manifests() {
    let documented = documented();
    let packages: BTreeSet<&String> = documented.values().map(|(package, _)| package).collect();
    for (dir, (package, dependencies)) in &documented {
        let (declared_package, declared_dependencies) = declared(dir);
        assert_eq!(package, &declared_package, "the package of {dir}/");
        assert_eq!(
            dependencies, &declared_dependencies,
            "the workspace dependencies of {dir}/ in docs/architecture.md and in its Cargo.toml"
        );
        for dependency in &declared_dependencies {
            assert!(
                packages.contains(dependency),
                "{dir}/ depends on {dependency}, which the table does not list"
            );
        }
    }
}
