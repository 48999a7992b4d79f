//! CustomResourceDefinition files, continued: each version serves its own printer columns and
//! subresources, printer columns use kube's JSONPath (filters, indices, lists) and formatting, and a `.wasm` plugin
//! for the same group takes the place of a CRD file (the type gets code) and gives it back when removed.

use std::time::Duration;

use e2e::{is_age, metric_value, parse_table, str_at, target_dir, wait_until, Server};
use serde_json::json;

const WIDGETS_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.shop.example.com
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
              color: {type: string}
              weight: {type: number}
              ports: {type: array, items: {type: integer}}
          status:
            type: object
            properties:
              replicas: {type: integer}
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
    subresources:
      status: {}
    additionalPrinterColumns:
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Ports, type: string, jsonPath: .spec.ports}
    - {name: Last Port, type: integer, jsonPath: '.spec.ports[-1]'}
    - {name: Weight, type: integer, jsonPath: .spec.weight}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Created, type: date, jsonPath: .metadata.creationTimestamp}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Paint, type: string, jsonPath: .spec.color}
"#;

const WIDGET: &str = r#"apiVersion: shop.example.com/v1
kind: Widget
metadata: {name: w1}
spec: {color: red, weight: 2.7, ports: [80, 443]}
"#;

/// The column headers of a kubectl table.
fn headers(table: &str) -> Vec<String> {
    table
        .lines()
        .next()
        .unwrap_or("")
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn each_version_of_a_crd_serves_its_own_columns_and_subresources() {
    let server = Server::start(&[]);
    std::fs::write(server.plugin_dir().join("widgets.yaml"), WIDGETS_CRD).expect("write the CRD");
    let v1 = "/apis/shop.example.com/v1/namespaces/default/widgets";
    let v1beta1 = "/apis/shop.example.com/v1beta1/namespaces/default/widgets";
    assert!(
        wait_until(Duration::from_secs(30), || server.http().get(v1).status == 200),
        "the CRD was not served"
    );
    server.kubectl_stdin_ok(&["apply", "-f", "-"], WIDGET);
    server.kubectl_ok(&[
        "patch",
        "widgets.v1.shop.example.com",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Synced","status":"True"},{"type":"Ready","status":"False"}]}}"#,
    ]);

    // v1: its columns, with a filter, a list, a negative index, an integer column holding a float, a date as an age.
    let table = server.kubectl_ok(&["get", "widgets.v1.shop.example.com"]);
    assert_eq!(
        headers(&table),
        ["NAME", "READY", "PORTS", "LAST PORT", "WEIGHT", "CREATED"],
        "{table}"
    );
    let row = &parse_table(&table)[0];
    assert_eq!(row["READY"], "False", "{table}");
    assert_eq!(row["PORTS"], "[80,443]", "{table}");
    assert_eq!(row["LAST PORT"], "443", "{table}");
    assert_eq!(row["WEIGHT"], "2", "{table}");
    assert!(is_age(&row["CREATED"]), "{table}");
    // A column of priority 1 is for -o wide.
    let wide = server.kubectl_ok(&["get", "widgets.v1.shop.example.com", "-o", "wide"]);
    assert_eq!(parse_table(&wide)[0]["COLOR"], "red", "{wide}");
    // v1beta1: its own columns.
    let table = server.kubectl_ok(&["get", "widgets.v1beta1.shop.example.com"]);
    assert_eq!(headers(&table), ["NAME", "PAINT"], "{table}");
    assert_eq!(parse_table(&table)[0]["PAINT"], "red", "{table}");
    // The Table's column definitions are the version's, as kube describes them.
    let http = server.http();
    let t = http.get_accepting(v1beta1, "application/json;as=Table;v=v1;g=meta.k8s.io");
    let columns = &t.expect(200)["columnDefinitions"];
    assert_eq!(columns[1]["name"], "Paint", "{}", t.text);
    assert_eq!(
        columns[1]["description"], "Custom resource definition column (in JSONPath format): .spec.color",
        "{}",
        t.text
    );

    // /status is served in v1 only: routing, discovery and OpenAPI agree.
    http.get(&format!("{v1}/w1/status")).expect(200);
    http.get(&format!("{v1beta1}/w1/status")).assert_status(404, "NotFound");
    let names = |version: &str| -> Vec<String> {
        let list = http.get(&format!("/apis/shop.example.com/{version}"));
        list.expect(200)["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| str_at(r, "/name").to_owned())
            .collect()
    };
    assert_eq!(names("v1"), ["widgets", "widgets/status"]);
    assert_eq!(names("v1beta1"), ["widgets"]);
    let aggregated = http.get_accepting(
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    );
    let group = aggregated.expect(200)["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| str_at(g, "/metadata/name") == "shop.example.com")
        .cloned()
        .unwrap_or_default();
    for version in group["versions"].as_array().into_iter().flatten() {
        let subresources = &version["resources"][0]["subresources"];
        match str_at(version, "/version") {
            "v1" => assert_eq!(subresources[0]["subresource"], "status", "{version}"),
            _ => assert!(subresources.is_null(), "{version}"),
        }
    }
    let openapi = |version: &str| {
        http.get(&format!("/openapi/v3/apis/shop.example.com/{version}"))
            .expect(200)
            .clone()
    };
    let status_path = "/apis/shop.example.com/{version}/namespaces/{namespace}/widgets/{name}/status";
    assert!(openapi("v1")["paths"]
        .get(status_path.replace("{version}", "v1"))
        .is_some());
    assert!(openapi("v1beta1")["paths"]
        .get(status_path.replace("{version}", "v1beta1"))
        .is_none());

    // The store follows the request's version: in v1 the object's writes keep the status (it has /status), in
    // v1beta1 (no /status) they write it, as on kube.
    let patch = json!({"status": {"replicas": 5}});
    http.patch(&format!("{v1}/w1"), "application/merge-patch+json", &patch)
        .expect(200);
    assert!(http.get(&format!("{v1}/w1")).json["status"].get("replicas").is_none());
    http.patch(&format!("{v1beta1}/w1"), "application/merge-patch+json", &patch)
        .expect(200);
    assert_eq!(http.get(&format!("{v1}/w1")).json["status"]["replicas"], 5);
}

#[test]
fn a_bad_printer_column_is_reported_and_the_crd_is_not_served() {
    let server = Server::start(&[]);
    let bad = WIDGETS_CRD.replace(".spec.ports[-1]", ".spec.ports[x]");
    std::fs::write(server.plugin_dir().join("widgets.yaml"), bad).expect("write the CRD");
    let failing = r#"wasm_apiserver_plugin_load_failures{file="widgets.yaml"}"#;
    assert!(
        wait_until(Duration::from_secs(30), || {
            metric_value(&server.http().get("/metrics").text, failing) == Some(1.0)
        }),
        "the bad CRD is not reported"
    );
    let ready = server.http().get("/readyz?verbose");
    assert!(
        ready.text.contains(
            "spec.versions[0].additionalPrinterColumns[2].jsonPath: Invalid value: \".spec.ports[x]\": \
             unrecognized column definition: invalid array index x"
        ),
        "{}",
        ready.text
    );
    server
        .http()
        .get("/apis/shop.example.com/v1/namespaces/default/widgets")
        .assert_status(404, "NotFound");
}

const FLUNDERS_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: flunders.wardle.example.com
spec:
  group: wardle.example.com
  scope: Namespaced
  names: {plural: flunders, singular: flunder, kind: Flunder, shortNames: [fl]}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              reference: {type: string}
              referenceType: {type: string}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
    subresources:
      status: {}
    additionalPrinterColumns:
    - {name: Ref, type: string, jsonPath: .spec.reference}
"#;

fn flunder(name: &str, reference: &str, reference_type: &str) -> serde_json::Value {
    json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": name},
        "spec": {"reference": reference, "referenceType": reference_type}})
}

#[test]
fn a_wasm_plugin_takes_the_place_of_a_crd_file_and_gives_it_back() {
    let server = Server::start(&[]);
    std::fs::write(server.plugin_dir().join("flunders.yaml"), FLUNDERS_CRD).expect("write the CRD");
    let alpha = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let beta = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
    let http = server.http();
    assert!(
        wait_until(Duration::from_secs(30), || http.get(alpha).status == 200),
        "the CRD was not served"
    );
    // Objects made under the CRD, one of which wardle's code would refuse.
    http.post_json(alpha, &flunder("f1", "f0", "Flunder")).expect(201);
    let both_references = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "metadata": {"name": name},
            "spec": {"flunderReference": "f0", "fischerReference": "fi", "referenceType": "Flunder"}})
    };
    http.post_json(beta, &both_references("odd")).expect(201);
    let crd_columns = || headers(&server.kubectl_ok(&["get", "flunders.v1alpha1.wardle.example.com"]));
    assert_eq!(crd_columns(), ["NAME", "REF"]);
    // None conversion: v1beta1 is the same object.
    assert_eq!(http.get(&format!("{beta}/f1")).expect(200)["spec"]["reference"], "f0");

    // wardle.wasm arrives: it serves the type, with its code, on the same data.
    let tmp = server.plugin_dir().join(".wardle.tmp");
    std::fs::copy(target_dir().join("plugins").join("wardle.wasm"), &tmp).expect("copy wardle");
    std::fs::rename(&tmp, server.plugin_dir().join("wardle.wasm")).expect("install wardle");
    assert!(
        wait_until(Duration::from_secs(60), || crd_columns()
            .contains(&"REFERENCE TYPE".to_owned())),
        "wardle's columns were not served: {:?}",
        crd_columns()
    );
    let table = server.kubectl_ok(&["get", "flunders.v1alpha1.wardle.example.com"]);
    let rows = parse_table(&table);
    let f1 = rows.iter().find(|r| r["NAME"] == "f1").expect("f1 is listed");
    assert_eq!(
        (f1["REFERENCE TYPE"].as_str(), f1["REFERENCE"].as_str()),
        ("Flunder", "f0"),
        "{table}"
    );
    assert!(rows.iter().any(|r| r["NAME"] == "odd"), "{table}");
    // wardle's conversion (v1alpha1 reference -> v1beta1 flunderReference) and validation now apply.
    let converted = http.get(&format!("{beta}/f1"));
    assert_eq!(
        converted.expect(200)["spec"]["flunderReference"],
        "f0",
        "{}",
        converted.text
    );
    http.post_json(beta, &both_references("odd2"))
        .assert_status(422, "Invalid");
    http.post_json(alpha, &flunder("f2", "f1", "Flunder")).expect(201);
    // The CRD file is reported as shadowed, naming the plugin.
    let ready = http.get("/readyz?verbose");
    assert!(
        ready
            .text
            .contains("[-]plugin/flunders.yaml is not served (not counted): shadowed by wardle.wasm"),
        "{}",
        ready.text
    );
    let shadowed = r#"wasm_apiserver_plugin_load_failures{file="flunders.yaml"}"#;
    assert_eq!(metric_value(&http.get("/metrics").text, shadowed), Some(1.0));
    assert!(server.log_contains("CustomResourceDefinition not served"));

    // wardle.wasm leaves: the CRD serves again, with every object.
    std::fs::remove_file(server.plugin_dir().join("wardle.wasm")).expect("remove wardle");
    assert!(
        wait_until(Duration::from_secs(30), || crd_columns() == ["NAME", "REF"]),
        "the CRD did not come back: {:?}",
        crd_columns()
    );
    let back = http.get(&format!("{beta}/f2"));
    assert_eq!(back.expect(200)["spec"]["reference"], "f1", "{}", back.text);
    assert!(back.json["spec"].get("flunderReference").is_none(), "{}", back.text);
    http.get(&format!("{alpha}/odd")).expect(200);
    assert_eq!(metric_value(&http.get("/metrics").text, shadowed), None);
    assert!(!http.get("/readyz?verbose").text.contains("flunders.yaml"));
}
