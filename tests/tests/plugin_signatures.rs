//! Signed plugins: with cosign public keys named by the host (`--plugin-signature-keys`) or the tenant
//! (`spec.signatureKeys`), only Plugin artifacts with a valid cosign signature by one of them are served. The
//! signatures are written in cosign's layout (`sha256-<hex>.sig`, a simple-signing layer with the signature
//! annotation) by a signer in this test, against a real registry (Debian's `docker-registry`); with `$COSIGN` (built by
//! `scripts/build-cosign.sh`), the layout is checked against cosign both ways.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use e2e::{server_binary, target_dir, wait_until, Registry, RegistryAuth, Server};
use oci::signature::{payload, signature_tag, PublicKey, SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_ASN1_SIGNING};
use serde_json::{json, Value};

const PLUGINS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins";

/// `wasm-apiserver plugin push` to the anonymous registry; the reference by digest.
fn push(registry: &Registry, plugin: &str, reference: &str) -> String {
    let out = Command::new(server_binary())
        .args(["plugin", "push"])
        .arg(target_dir().join("plugins").join(format!("{plugin}.wasm")))
        .arg(reference)
        .arg("--ca-file")
        .arg(registry.ca_file())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "push: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn key_pair() -> (EcdsaKeyPair, String) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let pem = PublicKey::pem_of_point(pair.public_key().as_ref());
    (pair, pem)
}

/// Signs the artifact `by_digest` (`host/repo@sha256:...`) as `cosign sign --key` does, naming `named` in the
/// payload (the artifact's own digest, unless a test copies a signature).
fn sign(registry: &Registry, pair: &EcdsaKeyPair, by_digest: &str, named: &str) {
    let (repository, digest) = by_digest.split_once('@').unwrap();
    let body = payload(repository, named);
    let signature = pair.sign(&SystemRandom::new(), &body).unwrap();
    let annotations = BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(signature.as_ref()),
    )]);
    let layer = oci_client::client::ImageLayer::new(body, SIMPLE_SIGNING_MEDIA_TYPE.to_owned(), Some(annotations));
    let config = oci_client::client::Config {
        data: b"{}".to_vec(),
        media_type: "application/vnd.oci.image.config.v1+json".to_owned(),
        annotations: None,
    };
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        extra_root_certificates: vec![oci_client::client::Certificate {
            encoding: oci_client::client::CertificateEncoding::Pem,
            data: registry.ca.pem.clone().into_bytes(),
        }],
        ..Default::default()
    });
    let reference: oci_client::Reference = format!("{repository}:{}", signature_tag(digest)).parse().unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(client.push(
            &reference,
            &[layer],
            config,
            &oci_client::secrets::RegistryAuth::Anonymous,
            None,
        ))
        .expect("pushing the signature");
}

fn plugin(reference: &str) -> Value {
    json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "p"},
           "spec": {"source": {"oci": {"reference": reference}}}})
}

/// The Plugin `p` of tenant `t` once `done` holds.
fn plugin_when(server: &Server, t: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/tenants/{t}{PLUGINS}/p");
    let mut last = Value::Null;
    let ok = wait_until(Duration::from_secs(30), || {
        last = server.http().get(&path).json.clone();
        done(&last)
    });
    assert!(ok, "{t}'s plugin never {what}: {last:#}\n{}", server.log_tail(20));
    last
}

fn verified(p: &Value) -> Value {
    p["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Verified"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn failed_with(server: &Server, t: &str, reason: &str) -> Value {
    plugin_when(server, t, &format!("failed with {reason}"), |p| {
        p["status"]["phase"] == "Failed" && verified(p)["reason"] == reason
    })
}

#[test]
fn only_plugins_signed_by_a_trusted_key_are_served() {
    let registry = Registry::start_with(RegistryAuth::Anonymous);
    let (host_key, host_pem) = key_pair();
    let (tenant_key, tenant_pem) = key_pair();
    let wardle = push(&registry, "wardle", &format!("{}/plugins/wardle:v1", registry.host));
    let partial = push(&registry, "partial", &format!("{}/plugins/partial:v1", registry.host));
    let unsigned = push(&registry, "elder", &format!("{}/plugins/elder:v1", registry.host));
    let copied = push(
        &registry,
        "partial-v2",
        &format!("{}/plugins/partial:v2", registry.host),
    );
    sign(&registry, &host_key, &wardle, wardle.split_once('@').unwrap().1);
    sign(&registry, &tenant_key, &partial, partial.split_once('@').unwrap().1);
    // A signature by the host's key, of another artifact's digest, under this one's tag.
    sign(&registry, &host_key, &copied, wardle.split_once('@').unwrap().1);

    let key_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(key_file.path(), &host_pem).unwrap();
    let ca = registry.ca_file();
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--plugin-registries",
            &registry.host,
            "--plugin-registry-ca-file",
            ca.to_str().unwrap(),
            "--plugin-signature-keys",
            key_file.path().to_str().unwrap(),
        ],
    );
    let http = server.http();
    let tenants = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
    http.post_json(
        tenants,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t1"},
                "spec": {"signatureKeys": [tenant_pem]}}),
    )
    .expect(201);
    http.post_json(
        tenants,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t3"}}),
    )
    .expect(201);
    // A key that is not a cosign public key is refused with the field named.
    let bad = http.post_json(
        tenants,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t9"},
                "spec": {"signatureKeys": ["not a key"]}}),
    );
    bad.assert_status(422, "Invalid");
    assert_eq!(
        bad.json["details"]["causes"][0]["field"], "spec.signatureKeys[0]",
        "{}",
        bad.text
    );
    for t in ["t1", "t3"] {
        assert!(
            wait_until(Duration::from_secs(10), || http
                .get(&format!("/tenants/{t}{PLUGINS}"))
                .status
                == 200),
            "{t} was never served"
        );
    }

    // Signed by the host's key: served in every tenant.
    http.post_json(&format!("/tenants/t1{PLUGINS}"), &plugin(&wardle))
        .expect(201);
    let served = plugin_when(&server, "t1", "served", |p| p["status"]["phase"] == "Serving");
    assert_eq!(verified(&served)["status"], "True", "{served}");
    assert_eq!(verified(&served)["reason"], "Signed", "{served}");
    let fingerprint = PublicKey::from_pem(&host_pem).unwrap().fingerprint;
    assert!(
        verified(&served)["message"].as_str().unwrap().contains(&fingerprint),
        "{served}"
    );

    // Signed by t1's own key: served in t1, not in t3.
    http.post_json(&format!("/tenants/t3{PLUGINS}"), &plugin(&partial))
        .expect(201);
    let refused = failed_with(&server, "t3", "UntrustedSignature");
    assert!(
        verified(&refused)["message"].as_str().unwrap().contains(&fingerprint),
        "{refused}"
    );
    http.post_json(
        &format!("/tenants/t1{PLUGINS}"),
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1",
        "kind": "Plugin", "metadata": {"name": "q"}, "spec": {"source": {"oci": {"reference": partial}}}}),
    )
    .expect(201);
    let mut q = Value::Null;
    assert!(
        wait_until(Duration::from_secs(30), || {
            q = http.get(&format!("/tenants/t1{PLUGINS}/q")).json.clone();
            q["status"]["phase"] == "Serving"
        }),
        "{q:#}"
    );

    // Unsigned, and signed for another artifact: Failed, and the signed version keeps serving.
    let flunders = "/tenants/t1/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
    let repoint = |reference: &str| {
        http.patch(
            &format!("/tenants/t1{PLUGINS}/p"),
            "application/merge-patch+json",
            &json!({"spec": {"source": {"oci": {"reference": reference}}}}),
        )
        .expect(200);
    };
    repoint(&unsigned);
    let p = failed_with(&server, "t1", "Unsigned");
    assert_eq!(
        p["status"]["served"]["digest"],
        wardle.split_once('@').unwrap().1,
        "{p}"
    );
    http.get(flunders).expect(200);
    repoint(&copied);
    let p = failed_with(&server, "t1", "UntrustedSignature");
    assert!(
        verified(&p)["message"]
            .as_str()
            .unwrap()
            .contains("another artifact's digest"),
        "{p}"
    );
    http.get(flunders).expect(200);

    // An upload carries no signature.
    http.post_json(
        &format!("/tenants/t3{PLUGINS}"),
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "u"},
                "spec": {"source": {"upload": {}}}}),
    )
    .expect(201);
    let wasm = std::fs::read(target_dir().join("plugins").join("wardle.wasm")).unwrap();
    http.send(
        reqwest::Method::PUT,
        &format!("/tenants/t3{PLUGINS}/u/content"),
        Some("application/wasm"),
        wasm,
    )
    .expect(200);
    let mut u = Value::Null;
    assert!(
        wait_until(Duration::from_secs(30), || {
            u = http.get(&format!("/tenants/t3{PLUGINS}/u")).json.clone();
            u["status"]["phase"] == "Failed" && verified(&u)["reason"] == "Unsigned"
        }),
        "{u:#}"
    );
}

/// `cosign` from `$COSIGN`, or `None` (after saying why the test is skipped).
fn cosign() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("COSIGN").map(std::path::PathBuf::from);
    if path.is_none() {
        eprintln!("SKIPPED: COSIGN is not set (scripts/test.sh builds cosign and sets it)");
    }
    path
}

/// Runs cosign in `dir` against the test registry (its CA trusted), with an empty key password; its output.
fn run_cosign(cosign: &std::path::Path, registry: &Registry, dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(cosign)
        .args(args)
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "")
        .env("SSL_CERT_FILE", registry.ca_file())
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .expect("running cosign");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "cosign {args:?} failed: {text}");
    text
}

#[test]
fn signatures_made_by_cosign_are_verified_and_cosign_verifies_the_layout_the_host_reads() {
    let Some(cosign) = cosign() else { return };
    let registry = Registry::start_with(RegistryAuth::Anonymous);
    let keys = tempfile::tempdir().unwrap();
    run_cosign(&cosign, &registry, keys.path(), &["generate-key-pair"]);
    let cosign_pub = keys.path().join("cosign.pub");
    assert!(cosign_pub.is_file() && keys.path().join("cosign.key").is_file());

    // Signed by cosign itself, in the layout the host reads (cosign 3 signs in its new bundle format by default).
    let wardle = push(&registry, "wardle", &format!("{}/plugins/wardle:v1", registry.host));
    run_cosign(
        &cosign,
        &registry,
        keys.path(),
        &[
            "sign",
            "--key",
            "cosign.key",
            "--tlog-upload=false",
            "--new-bundle-format=false",
            "--use-signing-config=false",
            "--yes",
            &wardle,
        ],
    );
    let ca = registry.ca_file();
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--plugin-registries",
            &registry.host,
            "--plugin-registry-ca-file",
            ca.to_str().unwrap(),
            "--plugin-signature-keys",
            cosign_pub.to_str().unwrap(),
        ],
    );
    let http = server.http();
    let tenants = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
    http.post_json(
        tenants,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t1"}}),
    )
    .expect(201);
    assert!(wait_until(Duration::from_secs(10), || http
        .get(&format!("/tenants/t1{PLUGINS}"))
        .status
        == 200));
    http.post_json(&format!("/tenants/t1{PLUGINS}"), &plugin(&wardle))
        .expect(201);
    let served = plugin_when(&server, "t1", "served", |p| p["status"]["phase"] == "Serving");
    assert_eq!(verified(&served)["reason"], "Signed", "{served}");
    let fingerprint = PublicKey::from_pem(&std::fs::read_to_string(&cosign_pub).unwrap())
        .unwrap()
        .fingerprint;
    assert!(
        verified(&served)["message"].as_str().unwrap().contains(&fingerprint),
        "{served}"
    );

    // The other way: what this test's signer writes (the layout the host verifies) is what cosign verifies.
    let (ours, our_pem) = key_pair();
    std::fs::write(keys.path().join("ours.pub"), &our_pem).unwrap();
    let partial = push(&registry, "partial", &format!("{}/plugins/partial:v1", registry.host));
    sign(&registry, &ours, &partial, partial.split_once('@').unwrap().1);
    let verified_by_cosign = run_cosign(
        &cosign,
        &registry,
        keys.path(),
        &[
            "verify",
            "--key",
            "ours.pub",
            "--insecure-ignore-tlog=true",
            "--new-bundle-format=false",
            &partial,
        ],
    );
    assert!(
        verified_by_cosign.contains(partial.split_once('@').unwrap().1),
        "{verified_by_cosign}"
    );
}
