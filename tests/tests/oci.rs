//! Plugins as OCI artifacts, against a real registry (Debian's `docker-registry`, the CNCF distribution server) with
//! TLS from its own CA and basic authentication: `wasm-apiserver plugin push` writes the WebAssembly layout, the
//! server's client ([`oci`]) pulls it back by tag and by digest, and says what is wrong with every artifact it refuses.
//! With `$ORAS` (built by `scripts/build-oras.sh`), the layout is checked against `oras` both ways.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use e2e::{server_binary, target_dir, Registry, RegistryAuth};
use oci::{Client, Credentials, Options, PullError};

const USER: &str = "robot";
const PASSWORD: &str = "s3cret-pass";

fn plugin(name: &str) -> PathBuf {
    target_dir().join("plugins").join(format!("{name}.wasm"))
}

fn credentials() -> Credentials {
    Credentials::Basic {
        username: USER.into(),
        password: PASSWORD.into(),
    }
}

fn client(registry: &Registry) -> Client {
    Client::new(Options {
        ca_pem: vec![registry.ca.pem.clone().into_bytes()],
        ..Options::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `wasm-apiserver plugin push FILE REF` as the basic-auth user, `password` on standard input; its stdout, or its
/// stderr as the error.
fn push(registry: &Registry, file: &Path, reference: &str, password: &str) -> Result<String, String> {
    push_with(
        registry,
        file,
        reference,
        &["--username", USER, "--password-stdin"],
        password,
    )
}

#[test]
fn a_pushed_plugin_is_pulled_by_tag_and_by_digest_and_a_moved_tag_leaves_the_digest() {
    let registry = Registry::start(&[(USER, PASSWORD)]);
    let wardle = std::fs::read(plugin("wardle")).unwrap();
    let tag = format!("{}/plugins/wardle:v1", registry.host);
    let printed = push(&registry, &plugin("wardle"), &tag, PASSWORD).expect("the push");
    let (repository, digest) = printed
        .split_once('@')
        .unwrap_or_else(|| panic!("no digest in {printed:?}"));
    assert_eq!(repository, format!("{}/plugins/wardle", registry.host));
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "{digest}");

    let client = client(&registry);
    let rt = runtime();
    let pulled = rt
        .block_on(client.pull(&tag, &credentials(), 64 << 20))
        .expect("the pull by tag");
    assert_eq!(pulled.component, wardle);
    assert_eq!(pulled.digest, digest);
    assert_eq!(pulled.reference, printed);
    assert_eq!(pulled.layer_digest, oci::sha256_digest(&wardle));
    let by_digest = rt
        .block_on(client.pull(&printed, &credentials(), 64 << 20))
        .expect("the pull by digest");
    assert_eq!(by_digest, pulled);

    // The tag moves to another component; the first one is still there by its digest.
    let moved = push(&registry, &plugin("partial"), &tag, PASSWORD).expect("the second push");
    assert_ne!(moved, printed);
    let now = rt.block_on(client.pull(&tag, &credentials(), 64 << 20)).unwrap();
    assert_eq!(now.component, std::fs::read(plugin("partial")).unwrap());
    let first = rt.block_on(client.pull(&printed, &credentials(), 64 << 20)).unwrap();
    assert_eq!(first.component, wardle);
}

#[test]
fn every_refused_pull_or_push_names_its_reason() {
    let registry = Registry::start(&[(USER, PASSWORD)]);
    let tag = format!("{}/plugins/wardle:v1", registry.host);
    push(&registry, &plugin("wardle"), &tag, PASSWORD).expect("the push");
    let client = client(&registry);
    let rt = runtime();
    let pull = |client: &Client, reference: &str, credentials: &Credentials, max: u64| -> PullError {
        rt.block_on(client.pull(reference, credentials, max))
            .expect_err("the pull should fail")
    };

    // Bad credentials, on the push and on the pull.
    let e = push(&registry, &plugin("wardle"), &tag, "wrong").unwrap_err();
    assert!(e.contains("refused the credentials"), "{e}");
    let wrong = Credentials::Basic {
        username: USER.into(),
        password: "wrong".into(),
    };
    assert_eq!(pull(&client, &tag, &wrong, 1 << 30).reason(), "Unauthorized");
    assert_eq!(
        pull(&client, &tag, &Credentials::Anonymous, 1 << 30).reason(),
        "Unauthorized"
    );

    // Without the registry's CA, TLS fails, and says so.
    let e = pull(&Client::new(Options::default()), &tag, &credentials(), 1 << 30);
    assert_eq!(e.reason(), "RegistryUnreachable", "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");

    // A tag or a digest that names nothing. (The same client, after the refused credentials above, pulls with the
    // right ones: no credentials are kept from one pull to the next.)
    let e = pull(
        &client,
        &format!("{}/plugins/wardle:v9", registry.host),
        &credentials(),
        1 << 30,
    );
    assert_eq!(e.reason(), "NotFound", "{e}");
    let unknown = oci::sha256_digest(b"nothing");
    let e = pull(
        &client,
        &format!("{}/plugins/wardle@{unknown}", registry.host),
        &credentials(),
        1 << 30,
    );
    assert_eq!(e.reason(), "NotFound", "{e}");

    // Larger than allowed.
    let e = pull(&client, &tag, &credentials(), 1000);
    assert_eq!(e.reason(), "TooLarge", "{e}");
    assert!(e.to_string().ends_with("over the 1000 allowed"), "{e}");

    // Artifacts that are not a WebAssembly component: another layer type, and bytes that are not a component.
    let raw = oci_client::Client::new(oci_client::client::ClientConfig {
        extra_root_certificates: vec![oci_client::client::Certificate {
            encoding: oci_client::client::CertificateEncoding::Pem,
            data: registry.ca.pem.clone().into_bytes(),
        }],
        ..Default::default()
    });
    let auth = oci_client::secrets::RegistryAuth::Basic(USER.into(), PASSWORD.into());
    let push_raw = |reference: &str, layer_type: &str, data: &[u8]| {
        let layer = oci_client::client::ImageLayer::new(data.to_vec(), layer_type.to_owned(), None);
        let config = oci_client::client::Config {
            data: b"{}".to_vec(),
            media_type: oci::CONFIG_MEDIA_TYPE.to_owned(),
            annotations: None,
        };
        let reference: oci_client::Reference = reference.parse().unwrap();
        rt.block_on(raw.push(&reference, &[layer], config, &auth, None))
            .expect("pushing a raw artifact");
    };
    let tarball = format!("{}/plugins/tarball:v1", registry.host);
    push_raw(&tarball, "application/vnd.oci.image.layer.v1.tar", b"not a plugin");
    let e = pull(&client, &tarball, &credentials(), 1 << 30);
    assert_eq!(e.reason(), "NotWasm", "{e}");
    assert!(
        e.to_string()
            .contains("its layer has media type \"application/vnd.oci.image.layer.v1.tar\""),
        "{e}"
    );
    let text = format!("{}/plugins/text:v1", registry.host);
    push_raw(&text, oci::LAYER_MEDIA_TYPE, b"hello, not wasm");
    let e = pull(&client, &text, &credentials(), 1 << 30);
    assert_eq!(e.reason(), "NotWasm", "{e}");
    assert!(e.to_string().contains("not a WebAssembly component"), "{e}");

    // A file that is not a component is not pushed.
    let not_wasm = registry.dir().join("notes.txt");
    std::fs::write(&not_wasm, "plain text").unwrap();
    let e = push(&registry, &not_wasm, &tag, PASSWORD).unwrap_err();
    assert!(e.contains("not a WebAssembly component"), "{e}");
}

/// `wasm-apiserver plugin push FILE REF` with the registry's CA and `args`, `stdin` on standard input.
fn push_with(registry: &Registry, file: &Path, reference: &str, args: &[&str], stdin: &str) -> Result<String, String> {
    let mut child = Command::new(server_binary())
        .args(["plugin", "push"])
        .arg(file)
        .arg(reference)
        .args(args)
        .arg("--ca-file")
        .arg(registry.ca_file())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running wasm-apiserver plugin push");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn an_anonymous_registry_and_a_bearer_token_registry() {
    let rt = runtime();
    let wardle = std::fs::read(plugin("wardle")).unwrap();

    // Anonymous: no credentials at all.
    let open = Registry::start_with(RegistryAuth::Anonymous);
    let tag = format!("{}/plugins/wardle:v1", open.host);
    push_with(&open, &plugin("wardle"), &tag, &[], "").expect("an anonymous push");
    let pulled = rt
        .block_on(client(&open).pull(&tag, &Credentials::Anonymous, 64 << 20))
        .expect("an anonymous pull");
    assert_eq!(pulled.component, wardle);

    // Bearer tokens: one for push and pull of the repository, one for pull only, one for another repository.
    let guarded = Registry::start_with(RegistryAuth::Token);
    let tag = format!("{}/plugins/wardle:v1", guarded.host);
    let push_token = guarded.token("plugins/wardle", &["pull", "push"]);
    push_with(&guarded, &plugin("wardle"), &tag, &["--token-stdin"], &push_token).expect("a push with a token");
    let client = client(&guarded);
    let pull_token = Credentials::Bearer(guarded.token("plugins/wardle", &["pull"]));
    let pulled = rt
        .block_on(client.pull(&tag, &pull_token, 64 << 20))
        .expect("a pull with a token");
    assert_eq!(pulled.component, wardle);
    let elsewhere = Credentials::Bearer(guarded.token("plugins/other", &["pull"]));
    let e = rt.block_on(client.pull(&tag, &elsewhere, 64 << 20)).unwrap_err();
    assert_eq!(e.reason(), "Unauthorized", "{e}");
    let e = rt
        .block_on(client.pull(&tag, &Credentials::Anonymous, 64 << 20))
        .unwrap_err();
    assert_eq!(e.reason(), "Unauthorized", "{e}");
    let pull_only = guarded.token("plugins/wardle", &["pull"]);
    let e = push_with(&guarded, &plugin("partial"), &tag, &["--token-stdin"], &pull_only).unwrap_err();
    assert!(e.contains("refused the credentials"), "{e}");
}

/// `oras` from `$ORAS`, or `None` (after saying why the test is skipped).
fn oras() -> Option<PathBuf> {
    let path = std::env::var_os("ORAS").map(PathBuf::from);
    if path.is_none() {
        eprintln!("SKIPPED: ORAS is not set (scripts/test.sh builds oras and sets it)");
    }
    path
}

fn run_oras(oras: &Path, registry: &Registry, args: &[&str]) -> String {
    let out = Command::new(oras)
        .args(args)
        .args(["--username", USER, "--password", PASSWORD, "--ca-file"])
        .arg(registry.ca_file())
        .current_dir(registry.dir())
        .output()
        .expect("running oras");
    assert!(
        out.status.success(),
        "oras {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_layout_is_the_one_oras_writes_and_reads() {
    let Some(oras) = oras() else { return };
    let registry = Registry::start(&[(USER, PASSWORD)]);
    let client = client(&registry);
    let rt = runtime();

    // What oras pushes (a component layer and the WebAssembly config), the server pulls.
    std::fs::copy(plugin("partial"), registry.dir().join("partial.wasm")).unwrap();
    std::fs::write(registry.dir().join("config.json"), "{}").unwrap();
    let by_oras = format!("{}/plugins/partial:oras", registry.host);
    run_oras(
        &oras,
        &registry,
        &[
            "push",
            &by_oras,
            "--config",
            "config.json:application/vnd.wasm.config.v0+json",
            "partial.wasm:application/wasm",
        ],
    );
    let pulled = rt
        .block_on(client.pull(&by_oras, &credentials(), 64 << 20))
        .expect("pulling oras' push");
    assert_eq!(pulled.component, std::fs::read(plugin("partial")).unwrap());

    // What the server's push writes, oras reads: the manifest's media types, and the layer's bytes.
    let ours = format!("{}/plugins/wardle:ours", registry.host);
    push(&registry, &plugin("wardle"), &ours, PASSWORD).expect("the push");
    let manifest: serde_json::Value =
        serde_json::from_str(&run_oras(&oras, &registry, &["manifest", "fetch", &ours])).unwrap();
    assert_eq!(manifest["mediaType"], oci::MANIFEST_MEDIA_TYPE, "{manifest}");
    assert_eq!(manifest["config"]["mediaType"], oci::CONFIG_MEDIA_TYPE, "{manifest}");
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(layers[0]["mediaType"], oci::LAYER_MEDIA_TYPE, "{manifest}");
    let layer = format!(
        "{}/plugins/wardle@{}",
        registry.host,
        layers[0]["digest"].as_str().unwrap()
    );
    run_oras(&oras, &registry, &["blob", "fetch", "--output", "layer.wasm", &layer]);
    assert_eq!(
        std::fs::read(registry.dir().join("layer.wasm")).unwrap(),
        std::fs::read(plugin("wardle")).unwrap()
    );
}
