//! Encryption at rest: values in etcd (and in the embedded store) are ciphertext with kube's prefix, never the
//! plaintext; rotating to a new key keeps old objects readable and writes new ones with the new key.

use e2e::{flunder_v1beta1, Etcd, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KEY2: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";
const MARKER: &str = "plaintext-marker-7f3a";

fn config(dir: &tempfile::TempDir, name: &str, providers: &str) -> String {
    let path = dir.path().join(name);
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: \
         [flunders.wardle.example.com]\n  providers:\n{providers}"
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn aesgcm(name: &str, secret: &str) -> String {
    format!("  - aesgcm:\n      keys:\n      - name: {name}\n        secret: {secret}\n")
}

fn flunder(name: &str) -> Value {
    let mut f = flunder_v1beta1(name, "x");
    f["metadata"]["annotations"] = json!({"note": MARKER});
    f
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn encryption_values_in_etcd_are_ciphertext_and_keys_rotate() {
    let etcd = Etcd::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = etcd.endpoint();
    let first = config(&dir, "key1.yaml", &aesgcm("key1", KEY1));
    let server = Server::start_with_args(
        &["wardle"],
        &["--etcd-servers", &endpoint, "--encryption-provider-config", &first],
    );
    server.http().post_json(FLUNDERS_V1BETA1, &flunder("old")).expect(201);
    server.http().post_json(FLUNDERS_V1BETA1, &flunder("old2")).expect(201);
    let raw = etcd.raw_value("flunders/default/old");
    assert!(
        raw.starts_with(b"k8s:enc:aesgcm:v1:key1:"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        !contains(&raw, MARKER) && !contains(&raw, "\"old\""),
        "plaintext in etcd"
    );
    // Resources the configuration does not name stay plaintext.
    server
        .http()
        .post_json(
            "/apis/wardle.example.com/v1alpha1/fischers",
            &e2e::fischer_v1alpha1("plain", &[]),
        )
        .expect(201);
    assert!(etcd.raw_value("fischers/plain").starts_with(b"{"));
    drop(server);

    // Rotation: a new key first, the old one still listed.
    let rotated = config(
        &dir,
        "key2.yaml",
        &format!(
            "  - secretbox:\n      keys:\n      - name: key2\n        secret: {KEY2}\n{}",
            aesgcm("key1", KEY1)
        ),
    );
    let server = Server::start_with_args(
        &["wardle"],
        &["--etcd-servers", &endpoint, "--encryption-provider-config", &rotated],
    );
    let old = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/old"))
        .expect(200)
        .clone();
    assert_eq!(old["metadata"]["annotations"]["note"], MARKER);
    let listed = server.kubectl_ok(&["get", "flunders"]);
    assert!(listed.contains("old"), "{listed}");
    server.http().post_json(FLUNDERS_V1BETA1, &flunder("new")).expect(201);
    let raw = etcd.raw_value("flunders/default/new");
    assert!(
        raw.starts_with(b"k8s:enc:secretbox:v1:key2:"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!contains(&raw, MARKER));
    assert!(etcd
        .raw_value("flunders/default/old")
        .starts_with(b"k8s:enc:aesgcm:v1:key1:"));
    // Rewriting the old object re-encrypts it with the new key.
    server
        .http()
        .patch(
            &format!("{FLUNDERS_V1BETA1}/old"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"rewritten": "yes"}}}),
        )
        .expect(200);
    assert!(etcd
        .raw_value("flunders/default/old")
        .starts_with(b"k8s:enc:secretbox:v1:key2:"));
    // A StorageVersionMigration writes every object again: the key rotation is finished without touching each one.
    assert!(etcd
        .raw_value("flunders/default/old2")
        .starts_with(b"k8s:enc:aesgcm:v1:key1:"));
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        "apiVersion: storagemigration.k8s.io/v1beta1\nkind: StorageVersionMigration\nmetadata: {name: rotate}\n\
         spec: {resource: {group: wardle.example.com, resource: flunders}}\n",
    );
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Succeeded",
        "storageversionmigrations/rotate",
        "--timeout=120s",
    ]);
    assert!(etcd
        .raw_value("flunders/default/old2")
        .starts_with(b"k8s:enc:secretbox:v1:key2:"));
    let old2 = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/old2"))
        .expect(200)
        .clone();
    assert_eq!(old2["metadata"]["annotations"]["note"], MARKER);
}

#[test]
fn encryption_the_embedded_store_holds_no_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, "key1.yaml", &aesgcm("key1", KEY1));
    let server = Server::start_with_args(&["wardle"], &["--encryption-provider-config", &cfg]);
    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder("embedded"))
        .expect(201);
    let got = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/embedded"))
        .expect(200)
        .clone();
    assert_eq!(got["metadata"]["annotations"]["note"], MARKER);
    drop(got);
    let data = server.root().join("data");
    let mut files = vec![data];
    let mut scanned = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!contains(&bytes, MARKER), "plaintext in {}", path.display());
            scanned += 1;
        }
    }
    assert!(scanned > 0);
}

#[test]
fn encryption_a_bad_configuration_stops_the_server_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        &dir,
        "bad.yaml",
        "  - aesgcm:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n",
    );
    let err = Server::try_start_with_args(&["wardle"], &["--encryption-provider-config", &cfg])
        .err()
        .expect("the server refuses a 5-byte AES key");
    let text = format!("{err:#}");
    assert!(text.contains("an aesgcm key is 16 or 32 bytes, not 5"), "{text}");
}
