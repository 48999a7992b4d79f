//! The files of a new plugin project, per language: the templates in `templates/<lang>/` with the names filled in,
//! and the SDK of the language with the WIT contract, copied as they are into `sdk/`.
//!
//! Placeholders in templates: `@NAME@`, `@KIND@`, `@PLURAL@`, `@SINGULAR@`, `@GROUP@`, `@WORLD@` (the WIT world),
//! `@SNAKE@` (the name with `_` for `-`), `@MODULE@` (`<snake>_plugin`: the Python module, the Rust library file) and
//! `@VERSION@` (this server's version).

use std::path::PathBuf;

use super::{Lang, Names};

/// One file of a project.
pub struct File {
    /// Its path, relative to the project directory.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
    /// Whether it is a script to make executable.
    pub executable: bool,
}

/// The WIT contract (`wit/`), copied into `sdk/wit/` of every project.
const CONTRACT: [(&str, &str); 5] = [
    ("host.wit", include_str!("../../../wit/host.wit")),
    ("scheme.wit", include_str!("../../../wit/scheme.wit")),
    ("strategies.wit", include_str!("../../../wit/strategies.wit")),
    ("types.wit", include_str!("../../../wit/types.wit")),
    ("worlds.wit", include_str!("../../../wit/worlds.wit")),
];

/// The Rust SDK (`guest-sdk/`) but its manifest, which uses the workspace's settings
/// (`templates/rust/sdk-Cargo.toml.in` stands for it).
const RUST_SDK: [(&str, &str); 11] = [
    ("build.rs", include_str!("../../../guest-sdk/build.rs")),
    ("README.md", include_str!("../../../guest-sdk/README.md")),
    (
        "src/bindings_macro.rs.in",
        include_str!("../../../guest-sdk/src/bindings_macro.rs.in"),
    ),
    ("src/client.rs", include_str!("../../../guest-sdk/src/client.rs")),
    ("src/error.rs", include_str!("../../../guest-sdk/src/error.rs")),
    ("src/field.rs", include_str!("../../../guest-sdk/src/field.rs")),
    ("src/lib.rs", include_str!("../../../guest-sdk/src/lib.rs")),
    ("src/meta.rs", include_str!("../../../guest-sdk/src/meta.rs")),
    ("src/object.rs", include_str!("../../../guest-sdk/src/object.rs")),
    ("src/pipeline.rs", include_str!("../../../guest-sdk/src/pipeline.rs")),
    (
        "src/sdk_bindings.rs.in",
        include_str!("../../../guest-sdk/src/sdk_bindings.rs.in"),
    ),
];

/// The manifest of the Rust SDK in a project: the SDK's own, with the workspace's settings written out.
const RUST_SDK_MANIFEST: &str = include_str!("templates/rust/sdk-Cargo.toml.in");

/// The part of the `apimachinery` crate the Rust SDK uses (its `object` module: the host's object metadata rules),
/// copied into `sdk/apimachinery/` with a manifest of its own (`templates/rust/apimachinery-Cargo.toml.in`).
const RUST_APIMACHINERY: [(&str, &str); 3] = [
    ("Cargo.toml", include_str!("templates/rust/apimachinery-Cargo.toml.in")),
    ("src/lib.rs", include_str!("../../../apimachinery/src/lib.rs")),
    ("src/object.rs", include_str!("../../../apimachinery/src/object.rs")),
];

/// The Python SDK (`guest-sdk/python/`): the helper module, its build script and its README.
const PYTHON_SDK: [(&str, &str); 3] = [
    (
        "wasm_apiserver.py",
        include_str!("../../../guest-sdk/python/wasm_apiserver.py"),
    ),
    (
        "build-plugin.sh",
        include_str!("../../../guest-sdk/python/build-plugin.sh"),
    ),
    ("README.md", include_str!("../../../guest-sdk/python/README.md")),
];

/// The JavaScript SDK (`guest-sdk/js/`): the modules, the build script and the README.
const JS_SDK: [(&str, &str); 7] = [
    (
        "wasm-apiserver.js",
        include_str!("../../../guest-sdk/js/wasm-apiserver.js"),
    ),
    ("core.js", include_str!("../../../guest-sdk/js/core.js")),
    (
        "define-plugin.js",
        include_str!("../../../guest-sdk/js/define-plugin.js"),
    ),
    ("host.js", include_str!("../../../guest-sdk/js/host.js")),
    ("check-world.js", include_str!("../../../guest-sdk/js/check-world.js")),
    ("build-plugin.sh", include_str!("../../../guest-sdk/js/build-plugin.sh")),
    ("README.md", include_str!("../../../guest-sdk/js/README.md")),
];

// The Go SDK (`guest-sdk/go/`): every file, listed by the build script.
include!(concat!(env!("OUT_DIR"), "/go_sdk.rs"));

const C_SDK: [(&str, &str); 7] = [
    (
        "wasm_apiserver.h",
        include_str!("../../../guest-sdk/c/wasm_apiserver.h"),
    ),
    (
        "wasm_apiserver.c",
        include_str!("../../../guest-sdk/c/wasm_apiserver.c"),
    ),
    (
        "bindings/full_plugin.h",
        include_str!("../../../guest-sdk/c/bindings/full_plugin.h"),
    ),
    (
        "bindings/full_plugin.c",
        include_str!("../../../guest-sdk/c/bindings/full_plugin.c"),
    ),
    ("build-plugin.sh", include_str!("../../../guest-sdk/c/build-plugin.sh")),
    ("generate.sh", include_str!("../../../guest-sdk/c/generate.sh")),
    ("README.md", include_str!("../../../guest-sdk/c/README.md")),
];

/// The lock file of the JavaScript build tools: the one of `plugins/tasks`, which pins the same packages, renamed.
const TASKS_PACKAGE_LOCK: &str = include_str!("../../../plugins/tasks/package-lock.json");

/// The files of a project in `lang` for `names`.
pub fn files(lang: Lang, names: &Names) -> Vec<File> {
    let module = format!("{}_plugin", names.snake);
    let fill = |template: &str| {
        template
            .replace("@NAME@", &names.name)
            .replace("@KIND@", &names.kind)
            .replace("@PLURAL@", &names.plural)
            .replace("@SINGULAR@", &names.singular)
            .replace("@GROUP@", &names.group)
            .replace("@WORLD@", &names.world)
            .replace("@SNAKE@", &names.snake)
            .replace("@MODULE@", &module)
            .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
    };
    let mut files = Vec::new();
    let mut add = |path: String, text: String| {
        let executable = path.ends_with(".sh");
        files.push(File {
            path: PathBuf::from(path),
            text,
            executable,
        });
    };
    match lang {
        Lang::Rust => {
            add("Cargo.toml".into(), fill(include_str!("templates/rust/Cargo.toml.in")));
            add("src/lib.rs".into(), fill(include_str!("templates/rust/src/lib.rs")));
            add("build.sh".into(), fill(include_str!("templates/rust/build.sh")));
            add("README.md".into(), fill(include_str!("templates/rust/README.md")));
            add(".gitignore".into(), include_str!("templates/rust/gitignore").into());
            add("sdk/Cargo.toml".into(), fill(RUST_SDK_MANIFEST));
            for (path, text) in RUST_SDK {
                add(format!("sdk/{path}"), text.into());
            }
            for (path, text) in RUST_APIMACHINERY {
                add(format!("sdk/apimachinery/{path}"), fill(text));
            }
        }
        Lang::Python => {
            add(format!("{module}.py"), fill(include_str!("templates/python/plugin.py")));
            add(
                format!("test_{module}.py"),
                fill(include_str!("templates/python/test_plugin.py")),
            );
            add("wit/world.wit".into(), fill(include_str!("templates/python/world.wit")));
            add("build.sh".into(), fill(include_str!("templates/python/build.sh")));
            add("README.md".into(), fill(include_str!("templates/python/README.md")));
            add(".gitignore".into(), include_str!("templates/python/gitignore").into());
            for (path, text) in PYTHON_SDK {
                add(format!("sdk/{path}"), text.into());
            }
        }
        Lang::Js => {
            let name = &names.name;
            add(
                format!("src/{name}.js"),
                fill(include_str!("templates/js/src/plugin.js")),
            );
            add(
                format!("test/{name}.test.js"),
                fill(include_str!("templates/js/test/plugin.test.js")),
            );
            add("wit/world.wit".into(), fill(include_str!("templates/js/world.wit")));
            add("package.json".into(), fill(include_str!("templates/js/package.json")));
            add("package-lock.json".into(), package_lock(name));
            add("build.sh".into(), fill(include_str!("templates/js/build.sh")));
            add("README.md".into(), fill(include_str!("templates/js/README.md")));
            add(".gitignore".into(), include_str!("templates/js/gitignore").into());
            for (path, text) in JS_SDK {
                add(format!("sdk/{path}"), text.into());
            }
        }
        Lang::Go => {
            add("plugin.go".into(), fill(include_str!("templates/go/plugin.go")));
            add(
                "plugin_test.go".into(),
                fill(include_str!("templates/go/plugin_test.go")),
            );
            add("go.mod".into(), fill(include_str!("templates/go/go.mod")));
            add("go.sum".into(), include_str!("../../../guest-sdk/go/go.sum").into());
            add("wit/world.wit".into(), fill(include_str!("templates/go/world.wit")));
            add("build.sh".into(), fill(include_str!("templates/go/build.sh")));
            add("README.md".into(), fill(include_str!("templates/go/README.md")));
            add(".gitignore".into(), include_str!("templates/go/gitignore").into());
            for (path, text) in GO_SDK {
                add(format!("sdk/{path}"), (*text).into());
            }
        }
        Lang::C => {
            add("plugin.c".into(), fill(include_str!("templates/c/plugin.c")));
            add("wit/world.wit".into(), fill(include_str!("templates/c/world.wit")));
            add("build.sh".into(), fill(include_str!("templates/c/build.sh")));
            add("README.md".into(), fill(include_str!("templates/c/README.md")));
            add(".gitignore".into(), include_str!("templates/c/gitignore").into());
            for (path, text) in C_SDK {
                add(format!("sdk/{path}"), text.into());
            }
            // The tools shared with the Go SDK (wasm-tools, the WASI adapter), which the Go SDK's list carries.
            for (path, text) in GO_SDK.iter().filter(|(p, _)| p.starts_with("component/")) {
                add(format!("sdk/{path}"), (*text).into());
            }
        }
    }
    for (file, text) in CONTRACT {
        add(format!("sdk/wit/{file}"), text.into());
    }
    files
}

/// The JavaScript lock file for a project named `name` (`npm ci` wants the names of package.json and the lock to
/// agree).
fn package_lock(name: &str) -> String {
    TASKS_PACKAGE_LOCK.replace("\"name\": \"tasks-plugin\"", &format!("\"name\": \"{name}-plugin\""))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// The repository's root.
    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// The names of the files in a directory of the repository whose names end with one of `suffixes`.
    fn listing(dir: &str, suffixes: &[&str]) -> BTreeSet<String> {
        std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| suffixes.iter().any(|s| n.ends_with(s)))
            .collect()
    }

    #[test]
    fn every_file_of_the_contract_and_the_sdks_is_copied() {
        let names = |files: &[(&str, &str)], prefix: &str| -> BTreeSet<String> {
            files
                .iter()
                .filter_map(|(p, _)| p.strip_prefix(prefix))
                .filter(|p| !p.contains('/'))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(names(&CONTRACT, ""), listing("wit", &[".wit"]));
        assert_eq!(names(&RUST_SDK, "src/"), listing("guest-sdk/src", &[".rs", ".rs.in"]));
        let js: BTreeSet<String> = names(&JS_SDK, "").into_iter().filter(|n| n.ends_with(".js")).collect();
        assert_eq!(js, listing("guest-sdk/js", &[".js"]));
        // The Go SDK's list is made by the build script from the directory itself; it has the SDK's parts.
        let go: BTreeSet<&str> = GO_SDK.iter().map(|(p, _)| *p).collect();
        for part in [
            "go.mod",
            "go.sum",
            "guest.go",
            "field/field.go",
            "build-plugin.sh",
            "component/tools.sh",
            "component/adapter/Cargo.toml",
            "component/adapter/src/main.rs",
            "bindings/wit_exports/wit_exports.go",
            "bindings/export_wasm_apiserver_plugin_scheme/scheme.go",
        ] {
            assert!(go.contains(part), "{part} is not copied: {go:?}");
        }
        assert!(!go.iter().any(|p| p.contains("target/")), "{go:?}");
        let c: BTreeSet<String> = names(&C_SDK, "").into_iter().filter(|n| !n.ends_with(".md")).collect();
        assert_eq!(c, listing("guest-sdk/c", &[".c", ".h", ".sh"]));
        assert_eq!(
            names(&C_SDK, "bindings/"),
            listing("guest-sdk/c/bindings", &[".c", ".h"])
        );
    }

    #[test]
    fn the_rust_sdk_manifest_has_the_workspace_dependencies() {
        let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
        let sdk = RUST_SDK_MANIFEST;
        let line = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{key} =")))
                .unwrap_or_else(|| panic!("no {key} in {text}"))
                .to_owned()
        };
        for key in ["serde", "serde_json", "wit-bindgen"] {
            assert_eq!(line(sdk, key), line(&workspace, key), "{key}");
        }
        let manifest = std::fs::read_to_string(root().join("guest-sdk/Cargo.toml")).unwrap();
        for key in ["serde", "serde_json", "wit-bindgen"] {
            assert!(manifest.contains(&format!("{key}.workspace = true")), "{key}");
        }
    }

    #[test]
    fn the_js_tools_are_those_of_the_tasks_plugin() {
        let tasks: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root().join("plugins/tasks/package.json")).unwrap()).unwrap();
        let ours: serde_json::Value = serde_json::from_str(include_str!("templates/js/package.json")).unwrap();
        assert_eq!(ours["devDependencies"], tasks["devDependencies"]);
        let lock: serde_json::Value = serde_json::from_str(&package_lock("widget")).unwrap();
        assert_eq!(lock["name"], "widget-plugin");
        assert_eq!(lock["packages"][""]["name"], "widget-plugin");
        assert_eq!(lock["packages"][""]["devDependencies"], tasks["devDependencies"]);
    }

    #[test]
    fn every_placeholder_is_filled() {
        let names = Names::new("gadget-box", Some("toys.example.org")).unwrap();
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::Go, Lang::C] {
            for file in files(lang, &names) {
                for placeholder in [
                    "@NAME@",
                    "@KIND@",
                    "@PLURAL@",
                    "@GROUP@",
                    "@WORLD@",
                    "@MODULE@",
                    "@VERSION@",
                ] {
                    assert!(
                        !file.text.contains(placeholder),
                        "{} {}: {placeholder}",
                        lang.name(),
                        file.path.display()
                    );
                }
            }
        }
    }
}
