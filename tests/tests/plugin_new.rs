//! `wasm-apiserver plugin new NAME --lang rust|python|js|go|c`: each language's project is made, built with its one
//! command (`./build.sh`, run from another directory), passes `wasm-apiserver plugin check`, and is served once its
//! `NAME.wasm` is dropped into a running server's plugin directory: create, get, list, update, delete, table columns,
//! the schema's default, the plugin's prepare hook and its validation (422). The Python and JavaScript projects also
//! show that an exception in a hook is a 500 naming the plugin and the hook, with its traceback or stack in the
//! server's log (the SDKs' logging through the host's `log` import).
//!
//! The projects are made under `<target>/plugin-new/<lang>/` (removed and made again by each run; not a temporary
//! directory, so that the JavaScript project's ~390 MB of `node_modules` is not left behind in /tmp), and the Rust
//! project builds with `CARGO_TARGET_DIR=<target>/plugin-new/cargo`, kept between runs: the first run compiles
//! wit-bindgen and serde for wasm32-wasip2 (a minute or two), later runs only the project. (Not the workspace's own
//! target directory: the `cargo test` running this test may hold its lock.) One build per language and run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use e2e::{output_text, parse_table, server_binary, str_at, target_dir, wait_until, Server};
use serde_json::{json, Value};

/// How long a dropped-in plugin may take to be served (a Python component compiles for 20–30 s on 2 cores).
const LOAD_TIMEOUT: Duration = Duration::from_secs(240);

/// A generated project and what the test knows of it.
struct Project {
    /// The language, as `--lang` takes it.
    lang: &'static str,
    /// The project's NAME.
    name: &'static str,
    /// The kind made from it.
    kind: &'static str,
    /// The plural made from it.
    plural: &'static str,
    /// The API group.
    group: &'static str,
    /// The built component.
    wasm: PathBuf,
}

impl Project {
    /// The collection URL in the `default` namespace.
    fn collection(&self) -> String {
        format!("/apis/{}/v1/namespaces/default/{}", self.group, self.plural)
    }

    /// An object of the project's kind.
    fn object(&self, name: &str, message: &str) -> Value {
        json!({
            "apiVersion": format!("{}/v1", self.group),
            "kind": self.kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"message": message},
        })
    }
}

/// The scratch directory of this test.
fn scratch() -> PathBuf {
    target_dir().join("plugin-new")
}

/// Runs `wasm-apiserver plugin new ARGS`.
fn plugin_new(args: &[&str]) -> Output {
    Command::new(server_binary())
        .args(["plugin", "new"])
        .args(args)
        .current_dir(scratch())
        .output()
        .expect("run wasm-apiserver plugin new")
}

/// Makes a project with `plugin new`, lets `edit` change its files, builds it with `./build.sh` (run from another
/// directory) and returns the component. `name` is also the directory under [`scratch`].
fn make_and_build(lang: &str, name: &str, group: Option<&str>, edit: impl FnOnce(&Path)) -> PathBuf {
    std::fs::create_dir_all(scratch()).expect("create the scratch directory");
    let dir = scratch().join(lang);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous project");
    }
    let dir_arg = dir.to_str().expect("a UTF-8 path");
    let mut args = vec![name, "--lang", lang, "--dir", dir_arg];
    if let Some(group) = group {
        args.extend(["--group", group]);
    }
    let output = plugin_new(&args);
    assert!(output.status.success(), "plugin new failed:\n{}", output_text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("./build.sh"), "{stdout}");
    for file in ["build.sh", "README.md", "sdk/wit/worlds.wit"] {
        assert!(dir.join(file).is_file(), "{lang}: no {file}");
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for step in ["./build.sh", "wasm-apiserver plugin check", "--plugin-dir"] {
        assert!(readme.contains(step), "{lang}: the README does not say {step:?}");
    }
    edit(&dir);

    let started = Instant::now();
    let mut build = Command::new(dir.join("build.sh"));
    build.current_dir(scratch());
    if lang == "rust" {
        build.env("CARGO_TARGET_DIR", scratch().join("cargo"));
    }
    let output = build.output().expect("run build.sh");
    assert!(
        output.status.success(),
        "{lang}: ./build.sh failed:\n{}",
        output_text(&output)
    );
    eprintln!("plugin_new: {lang} project built in {:.1?}", started.elapsed());
    let wasm = dir.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "{lang}: ./build.sh wrote no {}", wasm.display());
    wasm
}

/// Runs `plugin check` on the component: it must pass, having run the hooks on the schema's example.
fn assert_checks(project: &Project) {
    let output = Command::new(server_binary())
        .args(["plugin", "check"])
        .arg(&project.wasm)
        .output()
        .expect("run plugin check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}: plugin check failed:\n{}",
        project.lang,
        output_text(&output)
    );
    for line in [
        format!("group {}", project.group),
        format!(
            "resource {} (kind {}, namespaced), verbs: create,delete,deletecollection,get,list,patch,update,watch",
            project.plural, project.kind
        ),
        "example: prepare-for-create and validate ok".to_owned(),
        "example: prepare-for-update and validate-update ok".to_owned(),
        "example: table row ok".to_owned(),
        "ok".to_owned(),
    ] {
        assert!(stdout.contains(&line), "{}: no {line:?} in:\n{stdout}", project.lang);
    }
}

/// Starts a server without plugins, drops the component into its plugin directory (as a deployment tool would:
/// written beside it, then renamed) and waits until its group is served.
fn serve(project: &Project) -> Server {
    let server = Server::start(&[]);
    let tmp = server.plugin_dir().join(format!(".{}.tmp", project.name));
    std::fs::copy(&project.wasm, &tmp).expect("copy the component");
    std::fs::rename(&tmp, server.plugin_dir().join(format!("{}.wasm", project.name))).expect("rename it");
    let url = format!("/apis/{}/v1", project.group);
    let served = wait_until(LOAD_TIMEOUT, || server.http().get(&url).status == 200);
    assert!(
        served,
        "{}: {url} was never served; log:\n{}",
        project.lang,
        server.log_tail(40)
    );
    server
}

/// Create, get, list, update, delete through kubectl and HTTP, the table, the default, the prepare hook and the
/// plugin's validation.
fn assert_serves(project: &Project) {
    let server = serve(project);
    let plural = project.plural;

    // Create with kubectl: the message is trimmed by the plugin's prepare hook, replicas defaulted by the schema.
    let manifest = serde_json::to_string(&project.object("first", "  Hello  ")).unwrap();
    server.kubectl_stdin_ok(&["create", "-f", "-"], &manifest);
    let first = server.kubectl_json(&["get", plural, "first", "-o", "json"]);
    assert_eq!(first["kind"], project.kind, "{first}");
    assert_eq!(first["spec"], json!({"message": "Hello", "replicas": 1}), "{first}");

    // Create over HTTP, then list both ways.
    let second = server
        .http()
        .post_json(&project.collection(), &project.object("second", "World"));
    second.expect(201);
    let list = server.http().get(&project.collection());
    let names: Vec<&str> = list.expect(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| str_at(item, "/metadata/name"))
        .collect();
    assert_eq!(names, ["first", "second"], "{}", list.text);
    let table = parse_table(&server.kubectl_ok(&["get", plural]));
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(table[0]["NAME"], "first");
    assert_eq!(table[0]["MESSAGE"], "Hello");
    assert_eq!(table[0]["REPLICAS"], "1");
    assert!(table[0].contains_key("AGE"), "{table:?}");

    // Update: prepared (trimmed) and validated again.
    server.kubectl_ok(&[
        "patch",
        plural,
        "first",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"message":" Bye "}}"#,
    ]);
    let first = server.kubectl_json(&["get", plural, "first", "-o", "json"]);
    assert_eq!(first["spec"]["message"], "Bye", "{first}");

    // The plugin's validation: a blank message passes the schema (a string) but not the plugin.
    let blank = server
        .http()
        .post_json(&project.collection(), &project.object("blank", "   "));
    let status = blank.assert_status(422, "Invalid");
    let causes = status["details"]["causes"].as_array().expect("causes");
    assert_eq!(causes.len(), 1, "{}", blank.text);
    assert_eq!(causes[0]["field"], "spec.message", "{}", blank.text);
    assert_eq!(causes[0]["reason"], "FieldValueRequired", "{}", blank.text);
    assert!(
        str_at(&causes[0], "/message").contains("needs a message that is not blank"),
        "{}",
        blank.text
    );
    let update = server.kubectl(&[
        "patch",
        plural,
        "second",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"message":""}}"#,
    ]);
    assert!(!update.status.success(), "a blank update was accepted");
    assert!(
        String::from_utf8_lossy(&update.stderr).contains("spec.message"),
        "{}",
        output_text(&update)
    );
    // The schema's own rules hold too: replicas below its minimum.
    let mut negative = project.object("negative", "x");
    negative["spec"]["replicas"] = json!(-1);
    server
        .http()
        .post_json(&project.collection(), &negative)
        .assert_status(422, "Invalid");

    server.kubectl_ok(&["delete", plural, "first", "second"]);
    let empty = server.http().get(&project.collection());
    assert_eq!(empty.expect(200)["items"], json!([]), "{}", empty.text);
}

/// A hook that raises (on the message `explode`) answers 500 naming the plugin and the hook, writes the traceback
/// or stack to the server's log, and leaves the plugin serving.
fn assert_a_bug_is_logged(project: &Project, stack_mentions: &[&str]) {
    let server = serve(project);
    let reply = server
        .http()
        .post_json(&project.collection(), &project.object("boom", "explode"));
    let status = reply.assert_status(500, "InternalError");
    let message = str_at(status, "/message");
    assert!(
        message.contains(project.name) && message.contains("prepare-for-create"),
        "the 500 names neither the plugin nor the hook: {message}"
    );
    let logged = wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(server.log_path()).is_ok_and(|log| log.contains("prepare-for-create raised:"))
    });
    let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    assert!(logged, "no traceback in the server log:\n{}", server.log_tail(40));
    let trace = &log[log.find("prepare-for-create raised:").unwrap()..];
    for mention in stack_mentions {
        assert!(trace.contains(mention), "the logged stack lacks {mention:?}:\n{trace}");
    }
    server
        .http()
        .post_json(&project.collection(), &project.object("after", "fine"))
        .expect(201);

    // In validate, which returns a validation and no error: what is no validation, and an exception, answer 500
    // naming the plugin and the call (not 422 with a field error at the root, as if the object were at fault).
    for (message, says) in [("crash", "a validator returns"), ("boom", "validate")] {
        let reply = server
            .http()
            .post_json(&project.collection(), &project.object(message, message));
        let status = reply.assert_status(500, "InternalError");
        let text = str_at(status, "/message");
        assert!(
            text.contains(project.name) && text.contains("create-strategy.validate") && text.contains(says),
            "{message}: {text}"
        );
    }
    server
        .http()
        .post_json(&project.collection(), &project.object("still", "fine"))
        .expect(201);
}

/// Builds each language's project once per run.
fn project(lang: &'static str) -> &'static Project {
    static RUST: OnceLock<Project> = OnceLock::new();
    static PYTHON: OnceLock<Project> = OnceLock::new();
    static JS: OnceLock<Project> = OnceLock::new();
    static GO: OnceLock<Project> = OnceLock::new();
    static C: OnceLock<Project> = OnceLock::new();
    match lang {
        "rust" => RUST.get_or_init(|| Project {
            lang,
            name: "widget",
            kind: "Widget",
            plural: "widgets",
            group: "widget.example.com",
            wasm: make_and_build(lang, "widget", None, |_| {}),
        }),
        // A name with a hyphen, and a group of our own.
        "python" => PYTHON.get_or_init(|| Project {
            lang,
            name: "gadget-box",
            kind: "GadgetBox",
            plural: "gadget-boxes",
            group: "toys.example.org",
            wasm: make_and_build(lang, "gadget-box", Some("toys.example.org"), |dir| {
                // A bug for assert_a_bug_is_logged: a KeyError in a helper, when the message is "explode".
                edit(
                    &dir.join("gadget_box_plugin.py"),
                    "def prepare(obj):\n",
                    "def _explode(obj):\n    return obj[\"no such field\"]\n\n\ndef prepare(obj):\n    if \
                     api.get_path(obj, \"spec.message\") == \"explode\":\n        _explode(obj)\n",
                );
                // Two mistakes in validate: a string returned (\"crash\"), an exception (\"boom\").
                edit(
                    &dir.join("gadget_box_plugin.py"),
                    "    message = api.get_path(obj, \"spec.message\")\n    if not",
                    "    message = api.get_path(obj, \"spec.message\")\n    if message == \"crash\":\n        \
                     return \"spec.message is wrong\"\n    if message == \"boom\":\n        return \
                     obj[\"no such field\"]\n    if not",
                );
            }),
        }),
        // A name ending in a digit.
        "js" => JS.get_or_init(|| Project {
            lang,
            name: "sprocket-2",
            kind: "Sprocket2",
            plural: "sprocket-2s",
            group: "sprocket-2.example.com",
            wasm: make_and_build(lang, "sprocket-2", None, |dir| {
                // A bug for assert_a_bug_is_logged: a TypeError in a helper, when the message is "explode".
                edit(
                    &dir.join("src/sprocket-2.js"),
                    "export function prepare(object) {\n",
                    "function explode(object) {\n  return object.no.such.field;\n}\n\nexport function \
                     prepare(object) {\n  if (object.spec?.message === 'explode') {\n    explode(object);\n  }\n",
                );
                // Two mistakes in validate: a string returned ('crash'), an exception ('boom').
                edit(
                    &dir.join("src/sprocket-2.js"),
                    "  const message = object.spec?.message;\n",
                    "  const message = object.spec?.message;\n  if (message === 'crash') {\n    return 'spec.message \
                     is wrong';\n  }\n  if (message === 'boom') {\n    return object.no.such.field;\n  }\n",
                );
            }),
        }),
        // A name with a hyphen and a digit: the Go type is its kind.
        "go" => GO.get_or_init(|| Project {
            lang,
            name: "gizmo-3",
            kind: "Gizmo3",
            plural: "gizmo-3s",
            group: "gizmo-3.example.com",
            wasm: make_and_build(lang, "gizmo-3", None, |_| {}),
        }),
        // A name with a hyphen: C identifiers are the SDK's, not made from it.
        "c" => C.get_or_init(|| Project {
            lang,
            name: "doohickey-c",
            kind: "DoohickeyC",
            plural: "doohickey-cs",
            group: "doohickey-c.example.com",
            wasm: make_and_build(lang, "doohickey-c", None, |_| {}),
        }),
        other => panic!("no language {other}"),
    }
}

/// Replaces the one occurrence of `from` in a file.
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(
        text.matches(from).count(),
        1,
        "{} has no single {from:?}",
        path.display()
    );
    std::fs::write(path, text.replace(from, to)).expect("write the edited file");
}

#[test]
fn a_rust_project_builds_checks_and_serves() {
    let project = project("rust");
    assert_checks(project);
    assert_serves(project);
}

#[test]
fn a_python_project_builds_checks_and_serves() {
    let project = project("python");
    assert_checks(project);
    assert_serves(project);
}

#[test]
fn a_javascript_project_builds_checks_and_serves() {
    let project = project("js");
    assert_checks(project);
    assert_serves(project);
}

#[test]
fn a_go_project_builds_checks_and_serves() {
    let project = project("go");
    assert_checks(project);
    assert_serves(project);
}

#[test]
fn a_c_project_builds_checks_and_serves() {
    let project = project("c");
    assert_checks(project);
    assert_serves(project);
}

/// A misspelt keyword in a plugin's schema (`maxLenght`) is refused by `plugin check`, and so by the server, naming
/// the keyword, its place and the keyword meant, as kube-apiserver refuses such a CustomResourceDefinition: a Go
/// project whose schema has one. (The check is the host's, so it holds for every language.)
#[test]
fn a_misspelt_schema_keyword_is_refused_with_the_keyword_meant() {
    std::fs::create_dir_all(scratch()).expect("create the scratch directory");
    let dir = scratch().join("go-typo");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous project");
    }
    let output = plugin_new(&["typo", "--lang", "go", "--dir", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", output_text(&output));
    edit(&dir.join("plugin.go"), "\"maxLength\": 200", "\"maxLenght\": 200");
    let output = Command::new(dir.join("build.sh"))
        .env("PLUGIN_SKIP_TESTS", "1")
        .current_dir(scratch())
        .output()
        .expect("run build.sh");
    assert!(output.status.success(), "{}", output_text(&output));
    let output = Command::new(server_binary())
        .args(["plugin", "check"])
        .arg(dir.join("typo.wasm"))
        .output()
        .expect("run plugin check");
    assert!(
        !output.status.success(),
        "a misspelt keyword passed:\n{}",
        output_text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`maxLenght` at properties.spec.properties.message (did you mean `maxLength`?)"),
        "{stderr}"
    );
}

#[test]
fn an_exception_in_a_python_hook_is_logged_with_its_traceback() {
    assert_a_bug_is_logged(
        project("python"),
        &[
            "Traceback (most recent call last)",
            "in _explode",
            "KeyError: 'no such field'",
        ],
    );
}

#[test]
fn an_exception_in_a_javascript_hook_is_logged_with_its_stack() {
    assert_a_bug_is_logged(project("js"), &["TypeError", "explode@", "prepare@"]);
}

/// A hook whose interface the plugin's world does not export would never run: in every language the mistake is
/// refused, naming the export to add. Rust does not compile (the interface's trait does not exist); Python and
/// JavaScript do not build (their SDKs compare the hooks with the world's exports); Go and C build, and the
/// component fails to load (`plugin check`, and so the server) saying what to add.
#[test]
fn a_hook_whose_interface_the_world_does_not_export_is_refused_in_every_language() {
    std::fs::create_dir_all(scratch()).expect("create the scratch directory");
    let add_a_defaulting_hook: [(&str, &str, &str, &str); 5] = [
        (
            "go",
            "plugin.go",
            "\t\t\tPrepareForCreate: Prepare,\n",
            "\t\t\tPrepareForCreate: Prepare,\n\t\t\tDefault: func(*HookedGo) {},\n",
        ),
        (
            "c",
            "plugin.c",
            "static const wa_resource resource = {\n",
            "static void set_defaults(cJSON *obj) { (void)obj; }\n\nstatic const wa_resource resource = {\n    \
             .set_defaults = set_defaults,\n",
        ),
        (
            "python",
            "hooked_python_plugin.py",
            "class Plugin(api.Plugin):\n",
            "class Plugin(api.Plugin):\n    def default(self, resource, obj):\n        return obj\n\n",
        ),
        (
            "js",
            "src/hooked-js.js",
            "      validateUpdate: validate,\n",
            "      validateUpdate: validate,\n      default: (object) => object,\n",
        ),
        (
            "rust",
            "src/lib.rs",
            "export!(Plugin);",
            "impl exports::wasm_apiserver::plugin::defaulter::Guest for Plugin {\n    fn default(_resource: String, \
             object: String) -> Result<String, Error> {\n        Ok(object)\n    }\n}\n\nexport!(Plugin);",
        ),
    ];
    for (lang, file, from, to) in add_a_defaulting_hook {
        let name = format!("hooked-{lang}");
        let dir = scratch().join(&name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("remove the previous project");
        }
        let output = plugin_new(&[&name, "--lang", lang, "--dir", dir.to_str().unwrap()]);
        assert!(output.status.success(), "{}", output_text(&output));
        edit(&dir.join(file), from, to);
        let mut build = Command::new(dir.join("build.sh"));
        build.current_dir(scratch());
        if lang == "rust" {
            build.env("CARGO_TARGET_DIR", scratch().join("cargo"));
        }
        let built = build.output().expect("run build.sh");
        let said = match lang {
            "go" | "c" => {
                assert!(built.status.success(), "{lang}: {}", output_text(&built));
                let checked = Command::new(server_binary())
                    .args(["plugin", "check"])
                    .arg(dir.join(format!("{name}.wasm")))
                    .output()
                    .expect("run plugin check");
                assert!(
                    !checked.status.success(),
                    "{lang}: the check passed:\n{}",
                    output_text(&checked)
                );
                String::from_utf8_lossy(&checked.stderr).into_owned()
            }
            _ => {
                assert!(
                    !built.status.success(),
                    "{lang}: the build passed:\n{}",
                    output_text(&built)
                );
                String::from_utf8_lossy(&built.stderr).into_owned()
            }
        };
        let expected = if lang == "rust" {
            "could not find `defaulter`"
        } else {
            "is a hook of the defaulter interface, which the world does not export, so it would never run: add \
             `export wasm-apiserver:plugin/defaulter@0.1.1;`"
        };
        assert!(said.contains(expected), "{lang} does not say {expected:?}:\n{said}");
    }
}

/// A failing unit test stops a JavaScript project's build, and the build says which test failed and why (the file,
/// the test's name and the assertion), not only that a file failed.
#[test]
fn a_failing_javascript_unit_test_is_named_with_its_assertion() {
    std::fs::create_dir_all(scratch()).expect("create the scratch directory");
    let dir = scratch().join("js-failing");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous project");
    }
    let output = plugin_new(&["failing", "--lang", "js", "--dir", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", output_text(&output));
    edit(
        &dir.join("test/failing.test.js"),
        "    assert.equal(ok.spec.message, 'hello');",
        "    assert.equal(ok.spec.message, 'goodbye');",
    );
    let output = Command::new(dir.join("build.sh"))
        .current_dir(scratch())
        .output()
        .expect("run build.sh");
    assert!(
        !output.status.success(),
        "a failing test let the build pass:\n{}",
        output_text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for says in [
        "trims the message, which may not be blank",
        "AssertionError",
        "+ 'hello'",
        "- 'goodbye'",
        "test/failing.test.js:",
        "the unit tests in",
    ] {
        assert!(stderr.contains(says), "the build does not say {says:?}:\n{stderr}");
    }
    assert!(!dir.join("failing.wasm").exists(), "no component is written");
}

#[test]
fn invalid_names_unknown_languages_and_used_directories_are_refused() {
    std::fs::create_dir_all(scratch()).expect("create the scratch directory");
    let refused = |args: &[&str], code: i32, says: &str| {
        let output = plugin_new(args);
        assert_eq!(output.status.code(), Some(code), "{args:?}:\n{}", output_text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {says:?} not in:\n{stderr}");
    };
    let unused = scratch().join("refused-never-made");
    let unused = unused.to_str().unwrap();
    // Usage errors, as clap reports them: exit code 2.
    refused(
        &["Widget", "--lang", "rust", "--dir", unused],
        2,
        "a lowercase RFC 1123 label",
    );
    refused(
        &["my_widget", "--lang", "rust", "--dir", unused],
        2,
        "not a valid plugin name",
    );
    refused(&["a.b", "--lang", "rust", "--dir", unused], 2, "must not contain dots");
    refused(
        &["2d", "--lang", "rust", "--dir", unused],
        2,
        "must start with a letter",
    );
    refused(
        &["widget", "--lang", "cobol", "--dir", unused],
        2,
        "invalid value 'cobol' for '--lang",
    );
    refused(&["widget", "--dir", unused], 2, "--lang");
    refused(
        &["widget", "--lang", "js", "--group", "widgets", "--dir", unused],
        2,
        "not a valid API group",
    );
    assert!(!Path::new(unused).exists(), "a refused project left {unused}");

    // A directory with something in it: an error of the command, exit code 1, and nothing written.
    let used = scratch().join("refused-used");
    std::fs::create_dir_all(&used).unwrap();
    std::fs::write(used.join("notes.txt"), "mine").unwrap();
    refused(
        &["widget", "--lang", "python", "--dir", used.to_str().unwrap()],
        1,
        "is not empty",
    );
    let entries: Vec<_> = std::fs::read_dir(&used).unwrap().collect();
    assert_eq!(entries.len(), 1, "plugin new wrote into a used directory");
    std::fs::remove_dir_all(&used).unwrap();
}
