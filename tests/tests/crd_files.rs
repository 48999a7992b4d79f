//! CustomResourceDefinition files (issue 12 item 5): a CRD YAML dropped into the plugin directory is served with no
//! code, used end to end with kubectl, and removed like a plugin.

use std::time::Duration;

use e2e::{metric_value, str_at, wait_until, Server};
use serde_json::json;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.shop.example.com
spec:
  group: shop.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
    shortNames: [gd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              color: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - jsonPath: .spec.color
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: shop.example.com/v1beta1 Gadget is deprecated; use v1
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const GADGETS: &str = "/apis/shop.example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str, color: &str) -> String {
    format!("apiVersion: shop.example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec:\n  color: {color}\n  replicas: 1\n")
}

#[test]
fn a_crd_file_is_served_without_code_and_removed_like_a_plugin() {
    let server = Server::start(&["wardle"]);
    let file = server.plugin_dir().join("gadgets.yaml");
    std::fs::write(&file, CRD).expect("write the CRD");
    assert!(
        wait_until(Duration::from_secs(30), || server.http().get(GADGETS).status == 200),
        "the CRD was not served"
    );

    // kubectl discovers it (short name, category), creates, lists with the printer columns.
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &gadget("g1", "red"));
    assert!(out.contains("gadget.shop.example.com/g1 created"), "{out}");
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &gadget("g2", "blue"));
    let table = server.kubectl_ok(&["get", "gd"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "COLOR", "REPLICAS", "AGE"], "{table}");
    assert!(table.contains("red"), "{table}");
    let all = server.kubectl_ok(&["get", "all", "-o", "name"]);
    assert!(all.contains("gadget.shop.example.com/g1"), "{all}");
    // The schema prunes what it does not know; selectable fields select.
    let http = server.http();
    let pruned = http.post_json(
        GADGETS,
        &json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget", "metadata": {"name": "p"},
            "spec": {"color": "x", "unknown": 1}}),
    );
    assert!(pruned.expect(201)["spec"].get("unknown").is_none(), "{}", pruned.text);
    let red = server.kubectl_ok(&["get", "gadgets", "--field-selector", "spec.color=red", "-o", "name"]);
    assert_eq!(red.trim(), "gadget.shop.example.com/g1");
    // /scale and /status.
    server.kubectl_ok(&["scale", "gadget", "g1", "--replicas=4"]);
    server.kubectl_ok(&[
        "patch",
        "gadget",
        "g1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":4}}"#,
    ]);
    let obj = server.kubectl_json(&["get", "gadget", "g1", "-o", "json"]);
    assert_eq!(
        (obj["spec"]["replicas"].clone(), obj["status"]["replicas"].clone()),
        (json!(4), json!(4))
    );
    // None conversion: the deprecated version serves the same object, with a warning.
    let old = http.get("/apis/shop.example.com/v1beta1/namespaces/default/gadgets/g1");
    assert_eq!(old.expect(200)["apiVersion"], "shop.example.com/v1beta1");
    assert_eq!(old.json["spec"]["color"], "red");
    let warned = server.kubectl(&["get", "gadgets.v1beta1.shop.example.com", "g1"]);
    assert!(
        String::from_utf8_lossy(&warned.stderr).contains("shop.example.com/v1beta1 Gadget is deprecated"),
        "{}",
        String::from_utf8_lossy(&warned.stderr)
    );
    // Server-side apply works on it as on any type.
    let applied = server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], &gadget("g3", "green"));
    assert!(applied.contains("serverside-applied"), "{applied}");

    // A broken edit is reported and the previous version keeps serving; removing the file unregisters it.
    std::fs::write(&file, CRD.replace("scope: Namespaced", "scope: Nowhere")).expect("break the CRD");
    let failing = r#"wasm_apiserver_plugin_load_failures{file="gadgets.yaml"}"#;
    assert!(
        wait_until(Duration::from_secs(30), || {
            metric_value(&server.http().get("/metrics").text, failing) == Some(1.0)
        }),
        "the broken CRD is not reported"
    );
    assert_eq!(
        server.http().get(GADGETS).status,
        200,
        "the previous version keeps serving"
    );
    std::fs::remove_file(&file).expect("remove the CRD");
    assert!(
        wait_until(Duration::from_secs(30), || server.http().get(GADGETS).status == 404),
        "the CRD's routes stayed after its file was removed"
    );
    let status = server.http().get(GADGETS);
    assert_eq!(str_at(&status.json, "/reason"), "NotFound");
}
