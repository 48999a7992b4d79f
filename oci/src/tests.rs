use super::*;

fn manifest(config: &str, layers: &[&str]) -> OciImageManifest {
    let descriptor =
        |media_type: &str| serde_json::json!({"mediaType": media_type, "digest": sha256_digest(b"x"), "size": 1});
    serde_json::from_value(serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(config),
        "layers": layers.iter().map(|l| descriptor(l)).collect::<Vec<_>>(),
    }))
    .unwrap()
}

#[test]
fn references_name_their_registry() {
    let r = parse_reference("127.0.0.1:5000/plugins/wardle:v1").unwrap();
    assert_eq!(
        (r.registry(), r.repository(), r.tag()),
        ("127.0.0.1:5000", "plugins/wardle", Some("v1"))
    );
    let digest = sha256_digest(b"m");
    let r = parse_reference(&format!("registry.example.com/wardle@{digest}")).unwrap();
    assert_eq!(r.digest(), Some(digest.as_str()));
    for bad in ["wardle:v1", "library/wardle", "Reg istry/x:1", ""] {
        let e = parse_reference(bad).unwrap_err();
        assert_eq!(e.reason(), "InvalidReference", "{bad}: {e}");
    }
}

#[test]
fn only_the_webassembly_layout_is_accepted() {
    let ok = manifest(CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE]);
    assert_eq!(wasm_layer("r", &ok).unwrap().media_type, LAYER_MEDIA_TYPE);
    let e = wasm_layer(
        "r",
        &manifest("application/vnd.oci.image.config.v1+json", &[LAYER_MEDIA_TYPE]),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "r is not a WebAssembly component artifact: its config has media type \
         \"application/vnd.oci.image.config.v1+json\", not \"application/vnd.wasm.config.v0+json\""
    );
    let e = wasm_layer("r", &manifest(CONFIG_MEDIA_TYPE, &["application/octet-stream"])).unwrap_err();
    assert!(
        e.to_string()
            .contains("its layer has media type \"application/octet-stream\""),
        "{e}"
    );
    let e = wasm_layer("r", &manifest(CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE, LAYER_MEDIA_TYPE])).unwrap_err();
    assert!(e.to_string().contains("it has 2 layers"), "{e}");
    assert_eq!(e.reason(), "NotWasm");
}

#[test]
fn components_are_told_from_modules_and_other_bytes() {
    assert!(is_component(b"\0asm\x0d\x00\x01\x00rest"));
    assert!(!is_component(b"\0asm\x01\x00\x00\x00"), "a core module");
    assert!(!is_component(b"{\"not\": \"wasm\"}"));
    assert!(!is_component(b""));
}

#[test]
fn digests_are_sha256_in_hex() {
    assert_eq!(
        sha256_digest(b""),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn credentials_never_print_their_secrets() {
    let basic = Credentials::Basic {
        username: "robot".into(),
        password: "hunter2".into(),
    };
    assert_eq!(format!("{basic:?}"), "Basic(\"robot\", <password>)");
    assert_eq!(format!("{:?}", Credentials::Bearer("t0ken".into())), "Bearer(<token>)");
}

#[tokio::test]
async fn registries_not_allowed_are_refused_before_any_request() {
    let client = Client::new(Options {
        allowed_registries: Some(vec!["registry.example.com".into()]),
        ..Options::default()
    });
    let e = client
        .pull("other.example.com/wardle:v1", &Credentials::Anonymous, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(e.reason(), "RegistryNotAllowed");
    assert_eq!(
        e.to_string(),
        "registry \"other.example.com\" is not allowed (allowed: [\"registry.example.com\"])"
    );
}

#[tokio::test]
async fn an_unreachable_registry_says_so() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(Options::default());
    let e = client
        .pull(&format!("127.0.0.1:{port}/wardle:v1"), &Credentials::Anonymous, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(e.reason(), "RegistryUnreachable", "{e}");
}
