//! The `books` plugin, written in Python (componentize-py, `plugins/books`), served end to end: CRUD over HTTP and
//! kubectl, validation causes, defaulting, conversion between v1 and the deprecated v1beta1 in both directions,
//! table columns and field selectors.
//!
//! `target/plugins/books.wasm` is built by `scripts/build-plugins.sh` (which runs `plugins/books/build.sh`). A
//! componentize-py component is ~18 MB and its first compilation takes seconds (the harness's shared compile cache
//! makes later starts fast), so each test starts one server and runs several commented steps against it.

use e2e::{is_age, parse_table, str_at, Reply, Server};
use reqwest::Method;
use serde_json::{json, Value};

/// The collection URL of v1 books in the `default` namespace.
const BOOKS_V1: &str = "/apis/books.example.com/v1/namespaces/default/books";
/// The collection URL of v1beta1 books in the `default` namespace.
const BOOKS_V1BETA1: &str = "/apis/books.example.com/v1beta1/namespaces/default/books";
/// The annotation in which v1beta1 keeps the v1 fields it cannot represent.
const V1_SPEC_ANNOTATION: &str = "books.example.com/v1-spec";

/// A v1 book in the `default` namespace.
fn book_v1(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "books.example.com/v1",
        "kind": "Book",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// A v1beta1 book in the `default` namespace.
fn book_v1beta1(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "books.example.com/v1beta1",
        "kind": "Book",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// Sends a request with an optional JSON body (or a patch of `content_type`) and returns the reply with the texts of
/// its `Warning` headers.
fn send(server: &Server, method: Method, path: &str, body: Option<(&str, &Value)>) -> (Reply, Vec<String>) {
    let description = format!("{method} {path}");
    let mut request = server
        .http()
        .client()
        .request(method, server.http().url(path))
        .header("Accept", "application/json");
    if let Some((content_type, body)) = body {
        request = request.header("Content-Type", content_type).body(body.to_string());
    }
    let response = request.send().unwrap_or_else(|e| panic!("{description}: {e:#}"));
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let warnings = header("warning");
    let content_type = header("content-type").join(", ");
    let text = response
        .text()
        .unwrap_or_else(|e| panic!("{description}: read the body: {e:#}"));
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    let reply = Reply {
        status,
        content_type,
        text,
        json,
    };
    (reply, warnings)
}

/// Whether one of the `Warning` headers is the v1beta1 deprecation warning.
fn has_deprecation_warning(warnings: &[String]) -> bool {
    warnings
        .iter()
        .any(|w| w.starts_with("299 ") && w.contains("books.example.com/v1beta1 Book is deprecated"))
}

/// The `(field, reason)` pairs of a Status' `details.causes`.
fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| (str_at(c, "/field").to_owned(), str_at(c, "/reason").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The `metadata.name` of each item of a list.
fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| str_at(i, "/metadata/name").to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn python_books_serve_crud_validation_defaulting_and_conversion_over_http() {
    let server = Server::start(&["books"]);
    let http = server.http();
    let url = |name: &str| format!("{BOOKS_V1}/{name}");

    // Create: 201, and the v1 defaults (genre, pages) are applied.
    let created = http.post_json(
        BOOKS_V1,
        &book_v1("dune", json!({"title": "Dune", "authors": ["Frank Herbert"]})),
    );
    let created = created.expect(201).clone();
    assert_eq!(
        created["spec"],
        json!({"title": "Dune", "authors": ["Frank Herbert"], "pages": 0, "genre": "unknown"}),
        "defaulted: {created:#}"
    );
    assert!(!str_at(&created, "/metadata/uid").is_empty(), "{created:#}");

    // Get and list.
    let got = http.get(&url("dune"));
    assert_eq!(got.expect(200)["metadata"]["uid"], created["metadata"]["uid"]);
    let list = http.get(BOOKS_V1);
    let list = list.expect(200);
    assert_eq!(str_at(list, "/kind"), "BookList", "{list:#}");
    assert_eq!(item_names(list), ["dune"], "{list:#}");

    // Update (PUT with the resourceVersion): 200 with the new spec.
    let mut changed = created.clone();
    changed["spec"]["pages"] = json!(412);
    changed["spec"]["genre"] = json!("fiction");
    let updated = http.put_json(&url("dune"), &changed);
    let updated = updated.expect(200).clone();
    assert_eq!(
        (updated["spec"]["pages"].clone(), str_at(&updated, "/spec/genre")),
        (json!(412), "fiction")
    );

    // The title is immutable: 422 with a FieldValueInvalid cause at spec.title.
    let mut retitled = updated.clone();
    retitled["spec"]["title"] = json!("Dune Messiah");
    let refused = http.put_json(&url("dune"), &retitled);
    let status = refused.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [("spec.title".to_owned(), "FieldValueInvalid".to_owned())],
        "{status:#}"
    );
    assert!(str_at(status, "/message").contains("field is immutable"), "{status:#}");

    // Merge patch: 200; validation applies to patches too.
    let patched = http.patch(
        &url("dune"),
        "application/merge-patch+json",
        &json!({"spec": {"pages": 500}}),
    );
    assert_eq!(patched.expect(200)["spec"]["pages"], json!(500), "{}", patched.text);
    let bad_patch = http.patch(
        &url("dune"),
        "application/merge-patch+json",
        &json!({"spec": {"pages": -3}}),
    );
    let status = bad_patch.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [("spec.pages".to_owned(), "FieldValueInvalid".to_owned())]
    );

    // Validation on create: the schema's rules first (required, minimum, enum), one cause per broken rule, naming
    // its field, and nothing is stored; the plugin's own rules (a non-empty author) are not reached.
    let broken = book_v1(
        "broken",
        json!({"pages": -1, "genre": "cookbook", "authors": ["", "Ann"]}),
    );
    let rejected = http.post_json(BOOKS_V1, &broken);
    let status = rejected.assert_status(422, "Invalid");
    let mut found = causes(status);
    found.sort();
    let expected: Vec<(String, String)> = [
        ("spec.genre", "FieldValueNotSupported"),
        ("spec.pages", "FieldValueInvalid"),
        ("spec.title", "FieldValueRequired"),
    ]
    .iter()
    .map(|(f, r)| ((*f).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(found, expected, "{status:#}");
    assert_eq!(
        (str_at(status, "/details/kind"), str_at(status, "/details/name")),
        ("Book", "broken"),
        "{status:#}"
    );
    http.get(&url("broken")).assert_status(404, "NotFound");
    // What the schema cannot say, the plugin does.
    let empty_author = book_v1("authors", json!({"title": "T", "authors": ["", "Ann"]}));
    let status = http
        .post_json(BOOKS_V1, &empty_author)
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(
        causes(&status),
        [("spec.authors[0]".to_owned(), "FieldValueRequired".to_owned())],
        "{status:#}"
    );

    // Field selector on spec.genre.
    http.post_json(
        BOOKS_V1,
        &book_v1("odyssey", json!({"title": "The Odyssey", "genre": "poetry"})),
    )
    .expect(201);
    let poetry = http.get(&format!("{BOOKS_V1}?fieldSelector=spec.genre%3Dpoetry"));
    assert_eq!(item_names(poetry.expect(200)), ["odyssey"], "{}", poetry.text);
    let not_poetry = http.get(&format!("{BOOKS_V1}?fieldSelector=spec.genre%21%3Dpoetry"));
    assert_eq!(item_names(not_poetry.expect(200)), ["dune"], "{}", not_poetry.text);

    // Delete: 200, then 404.
    http.delete(&url("odyssey")).expect(200);
    http.get(&url("odyssey")).assert_status(404, "NotFound");

    // v1 → v1beta1: authors joined, genre kept in an annotation, and a deprecation warning.
    let spec = json!({"title": "Good Omens", "authors": ["Pratchett, Terry", "Gaiman, Neil"], "pages": 288, "genre": "fantasy"});
    http.post_json(BOOKS_V1, &book_v1("omens", spec.clone())).expect(201);
    let (v1_get, v1_warnings) = send(&server, Method::GET, &url("omens"), None);
    v1_get.expect(200);
    assert!(v1_warnings.is_empty(), "no warning for v1: {v1_warnings:?}");
    let (beta, warnings) = send(&server, Method::GET, &format!("{BOOKS_V1BETA1}/omens"), None);
    let mut beta = beta.expect(200).clone();
    assert!(has_deprecation_warning(&warnings), "{warnings:?}");
    assert_eq!(str_at(&beta, "/apiVersion"), "books.example.com/v1beta1", "{beta:#}");
    assert_eq!(
        beta["spec"],
        json!({"title": "Good Omens", "author": "Pratchett, Terry, Gaiman, Neil", "pages": 288}),
        "{beta:#}"
    );
    assert!(
        beta.pointer(&format!(
            "/metadata/annotations/{}",
            V1_SPEC_ANNOTATION.replace('/', "~1")
        ))
        .is_some(),
        "{beta:#}"
    );

    // An update through v1beta1 keeps what only v1 can hold (authors with commas, genre).
    beta["spec"]["pages"] = json!(300);
    let (put, warnings) = send(
        &server,
        Method::PUT,
        &format!("{BOOKS_V1BETA1}/omens"),
        Some(("application/json", &beta)),
    );
    put.expect(200);
    assert!(has_deprecation_warning(&warnings), "{warnings:?}");
    let v1 = http.get(&url("omens"));
    let v1 = v1.expect(200);
    let mut expected_spec = spec;
    expected_spec["pages"] = json!(300);
    assert_eq!(v1["spec"], expected_spec, "{v1:#}");
    assert!(
        v1.pointer("/metadata/annotations").is_none(),
        "no annotation in v1: {v1:#}"
    );

    // v1beta1 → v1: a book created through v1beta1 has its author split and the v1 defaults.
    let (created, warnings) = send(
        &server,
        Method::POST,
        BOOKS_V1BETA1,
        Some((
            "application/json",
            &book_v1beta1("sicp", json!({"title": "SICP", "author": "Abelson, Sussman"})),
        )),
    );
    let created = created.expect(201);
    assert!(has_deprecation_warning(&warnings), "{warnings:?}");
    assert_eq!(
        str_at(created, "/apiVersion"),
        "books.example.com/v1beta1",
        "{created:#}"
    );
    assert_eq!(created["spec"]["pages"], json!(0), "v1beta1 default: {created:#}");
    let v1 = http.get(&url("sicp"));
    assert_eq!(
        v1.expect(200)["spec"],
        json!({"title": "SICP", "authors": ["Abelson", "Sussman"], "pages": 0, "genre": "unknown"}),
        "{}",
        v1.text
    );
    let unknown = http.get(&format!("{BOOKS_V1}?fieldSelector=spec.genre%3Dunknown"));
    assert_eq!(item_names(unknown.expect(200)), ["sicp"], "{}", unknown.text);

    // A v1beta1 list holds every book in v1beta1.
    let (list, warnings) = send(&server, Method::GET, BOOKS_V1BETA1, None);
    let list = list.expect(200);
    assert!(has_deprecation_warning(&warnings), "{warnings:?}");
    let versions: Vec<&str> = list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| str_at(i, "/apiVersion")).collect())
        .unwrap_or_default();
    assert_eq!(versions, ["books.example.com/v1beta1"; 3], "{list:#}");
}

#[test]
fn python_books_work_with_kubectl() {
    let server = Server::start(&["books"]);
    let manifest = |pages: u32| {
        format!(
            "\
apiVersion: books.example.com/v1
kind: Book
metadata:
  name: dune
spec:
  title: Dune
  authors: [Frank Herbert]
  pages: {pages}
  genre: fiction
"
        )
    };

    // Apply creates, then configures.
    let first = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest(412));
    assert!(first.contains("book.books.example.com/dune created"), "{first}");
    let second = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest(413));
    assert!(second.contains("book.books.example.com/dune configured"), "{second}");
    let pages = server.kubectl_ok(&["get", "book", "dune", "-o", "jsonpath={.spec.pages}"]);
    assert_eq!(pages, "413");

    // Create through the short name of a second book with defaults.
    let created = server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        "apiVersion: books.example.com/v1\nkind: Book\nmetadata:\n  name: notes\nspec:\n  title: Notes\n",
    );
    assert!(created.contains("book.books.example.com/notes created"), "{created}");

    // The plugin's table columns; the Age column holds an age, and Genre shows only with -o wide.
    let table = server.kubectl_ok(&["get", "books"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "TITLE", "AUTHORS", "PAGES", "AGE"], "{table}");
    let rows = parse_table(&table);
    let dune = rows
        .iter()
        .find(|r| r["NAME"] == "dune")
        .unwrap_or_else(|| panic!("no dune row:\n{table}"));
    assert_eq!(
        (dune["TITLE"].as_str(), dune["AUTHORS"].as_str(), dune["PAGES"].as_str()),
        ("Dune", "Frank Herbert", "413"),
        "{table}"
    );
    assert!(is_age(&dune["AGE"]), "AGE is an age: {table}");
    let wide = parse_table(&server.kubectl_ok(&["get", "bk", "-o", "wide"]));
    let genres: Vec<(&str, &str)> = wide.iter().map(|r| (r["NAME"].as_str(), r["GENRE"].as_str())).collect();
    assert_eq!(genres, [("dune", "fiction"), ("notes", "unknown")], "{wide:?}");

    // Field selector.
    let fiction = server.kubectl_ok(&["get", "books", "--field-selector", "spec.genre=fiction", "-o", "name"]);
    assert_eq!(fiction.trim(), "book.books.example.com/dune");

    // Patches: merge and JSON; a title change is refused with the field named.
    server.kubectl_ok(&[
        "patch",
        "book",
        "notes",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"genre":"science"}}"#,
    ]);
    server.kubectl_ok(&[
        "patch",
        "book",
        "notes",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/pages","value":7}]"#,
    ]);
    let notes = server.kubectl_json(&["get", "book", "notes", "-o", "json"]);
    assert_eq!(
        (str_at(&notes, "/spec/genre"), notes["spec"]["pages"].clone()),
        ("science", json!(7)),
        "{notes:#}"
    );
    let stderr = server.kubectl_err(&[
        "patch",
        "book",
        "notes",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"title":"X"}}"#,
    ]);
    assert!(
        stderr.contains("spec.title") && stderr.contains("field is immutable"),
        "{stderr}"
    );

    // A validation error names the fields.
    let stderr = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        "apiVersion: books.example.com/v1\nkind: Book\nmetadata:\n  name: bad\nspec:\n  pages: -5\n",
    );
    assert!(stderr.contains("is invalid"), "{stderr}");
    assert!(stderr.contains("spec.title: Required value"), "{stderr}");
    assert!(stderr.contains("spec.pages: Invalid value: -5"), "{stderr}");

    // The deprecated version converts and warns.
    let output = server.kubectl(&["get", "books.v1beta1.books.example.com", "dune", "-o", "json"]);
    assert!(output.status.success(), "{output:?}");
    let beta: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(str_at(&beta, "/spec/author"), "Frank Herbert", "{beta:#}");
    assert!(beta.pointer("/spec/authors").is_none(), "{beta:#}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Warning: books.example.com/v1beta1 Book is deprecated"),
        "{stderr}"
    );

    // Delete.
    let deleted = server.kubectl_ok(&["delete", "book", "notes"]);
    assert!(
        deleted.contains(r#"book.books.example.com "notes" deleted"#),
        "{deleted}"
    );
    let missing = server.kubectl_err(&["get", "book", "notes"]);
    assert!(missing.contains("(NotFound)"), "{missing}");
    let left = server.kubectl_ok(&["get", "books", "-o", "name"]);
    assert_eq!(left.trim(), "book.books.example.com/dune");
}

#[test]
fn python_books_have_a_status_and_a_scale_on_their_copies() {
    let server = Server::start(&["books"]);
    let http = server.http();
    let created = http.post_json(
        BOOKS_V1,
        &book_v1(
            "dune",
            json!({"title": "Dune", "authors": ["Frank Herbert"], "copies": 2}),
        ),
    );
    assert_eq!(created.expect(201)["spec"]["copies"], 2, "{}", created.text);

    // `kubectl scale` writes the copies through the Python plugin's scaler; the status is the plugin's to check.
    let out = server.kubectl_ok(&["scale", "book/dune", "--replicas=5"]);
    assert!(out.contains("scaled"), "{out}");
    let copies = server.kubectl_ok(&["get", "book", "dune", "-o", "jsonpath={.spec.copies}"]);
    assert_eq!(copies, "5");
    let status = http.patch(
        &format!("{BOOKS_V1}/dune/status"),
        "application/merge-patch+json",
        &json!({"status": {"available": 4, "observedGeneration": 2}}),
    );
    assert_eq!(status.expect(200)["status"]["available"], 4, "{}", status.text);
    let scale = http.get(&format!("{BOOKS_V1}/dune/scale"));
    assert_eq!(scale.expect(200)["spec"]["replicas"], 5, "{}", scale.text);
    assert_eq!(scale.json["status"]["replicas"], 4, "{}", scale.text);
    let refused = http.patch(
        &format!("{BOOKS_V1}/dune/status"),
        "application/merge-patch+json",
        &json!({"status": {"available": -1}}),
    );
    let refused = refused.assert_status(422, "Invalid");
    assert_eq!(
        causes(refused),
        [("status.available".to_owned(), "FieldValueInvalid".to_owned())]
    );

    // The book's own update keeps the status, also through the deprecated version.
    let mut old = http.get(&format!("{BOOKS_V1BETA1}/dune")).expect(200).clone();
    old["status"] = json!({"available": 0});
    old["spec"]["pages"] = json!(10);
    let updated = http.put_json(&format!("{BOOKS_V1BETA1}/dune"), &old);
    assert_eq!(updated.expect(200)["status"]["available"], 4, "{}", updated.text);
    assert_eq!(updated.json["spec"]["copies"], 5, "{}", updated.text);
}
