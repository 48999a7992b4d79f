//! CustomResourceDefinition files: a CRD YAML dropped into the plugin directory is served with no
//! code, used end to end with kubectl, and removed like a plugin.

use std::time::Duration;

use e2e::{fischer_v1alpha1, flunder_v1beta1, metric_value, str_at, target_dir, wait_until, Server};
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

const VALIDATED: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: limits.shop.example.com
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: limits, kind: Limit}
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
            required: [name]
            x-kubernetes-validations:
            - rule: "self.min <= self.max"
              message: min must not exceed max
            properties:
              name: {type: string, maxLength: 5, pattern: "^[a-z]+$"}
              min: {type: integer, minimum: 0, default: 1}
              max: {type: integer, maximum: 10, default: 10}
              tier: {type: string, enum: [gold, silver], default: silver}
              size:
                type: string
                x-kubernetes-validations:
                - rule: "self == oldSelf"
                  message: size is immutable
"#;

#[test]
fn a_crd_schema_is_enforced_with_defaults_and_cel_in_one_422() {
    let server = Server::start(&["wardle"]);
    std::fs::write(server.plugin_dir().join("limits.yaml"), VALIDATED).expect("write the CRD");
    let limits = "/apis/shop.example.com/v1/namespaces/default/limits";
    assert!(
        wait_until(Duration::from_secs(30), || server.http().get(limits).status == 200),
        "the CRD was not served"
    );
    let http = server.http();
    let limit = |name: &str, spec: serde_json::Value| json!({"apiVersion": "shop.example.com/v1", "kind": "Limit", "metadata": {"name": name}, "spec": spec});

    // Defaults fill what is missing.
    let created = http.post_json(limits, &limit("ok", json!({"name": "abc", "size": "s"})));
    assert_eq!(
        created.expect(201)["spec"],
        json!({"name": "abc", "size": "s", "min": 1, "max": 10, "tier": "silver"}),
        "{}",
        created.text
    );

    // Every violation in one 422, one cause per field, before anything else runs.
    let bad = http.post_json(
        limits,
        &limit(
            "bad",
            json!({"name": "ABCDEFG", "min": -1, "max": 11, "tier": "bronze"}),
        ),
    );
    let status = bad.assert_status(422, "Invalid");
    let mut causes: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| (str_at(c, "/field").to_owned(), str_at(c, "/reason").to_owned()))
        .collect();
    causes.sort();
    causes.dedup();
    let fields: Vec<&str> = causes.iter().map(|(f, _)| f.as_str()).collect();
    for expected in ["spec.max", "spec.min", "spec.name", "spec.tier"] {
        assert!(fields.contains(&expected), "no cause for {expected}: {status:#}");
    }
    assert!(
        causes.contains(&("spec.tier".to_owned(), "FieldValueNotSupported".to_owned())),
        "{status:#}"
    );
    let missing = http.post_json(limits, &limit("missing", json!({"min": 1})));
    let status = missing.assert_status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.name", "{status:#}");
    assert_eq!(
        status["details"]["causes"][0]["reason"], "FieldValueRequired",
        "{status:#}"
    );

    // CEL: a rule across fields, and a transition rule checked only on update.
    let crossed = http.post_json(limits, &limit("crossed", json!({"name": "x", "min": 5, "max": 2})));
    let status = crossed.assert_status(422, "Invalid");
    assert!(
        str_at(status, "/message").contains("min must not exceed max"),
        "{status:#}"
    );
    let mut changed = http.get(&format!("{limits}/ok")).expect(200).clone();
    changed["spec"]["size"] = json!("m");
    let status = http
        .put_json(&format!("{limits}/ok"), &changed)
        .assert_status(422, "Invalid")
        .clone();
    assert!(str_at(&status, "/message").contains("size is immutable"), "{status:#}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.size", "{status:#}");
}

/// A second CRD of group shop.example.com, beside [`CRD`] (gadgets): widgets in v1 (shared with gadgets) and
/// v1alpha1 (its own).
const WIDGETS_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.shop.example.com
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: string}}}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: string}}}
"#;

const WIDGETS: &str = "/apis/shop.example.com/v1/namespaces/default/widgets";

fn widget(name: &str, size: &str) -> String {
    format!("apiVersion: shop.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n  size: {size}\n")
}

#[test]
fn two_crd_files_of_one_group_are_served_side_by_side() {
    let server = Server::start(&["t1/"]);
    let http = server.http();
    let gadgets_file = server.plugin_dir().join("gadgets.yaml");
    std::fs::write(&gadgets_file, CRD).expect("write the gadgets CRD");
    std::fs::write(server.plugin_dir().join("widgets.yaml"), WIDGETS_CRD).expect("write the widgets CRD");
    assert!(
        wait_until(Duration::from_secs(30), || {
            http.get(GADGETS).status == 200 && http.get(WIDGETS).status == 200
        }),
        "both CRDs are not served: {}",
        server.log_tail(40)
    );

    // kubectl uses both kinds, each with its own columns.
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &gadget("g1", "red"));
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &widget("w1", "big"));
    let names = server.kubectl_ok(&["get", "gadgets,widgets", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["gadget.shop.example.com/g1", "widget.shop.example.com/w1"],
        "{names}"
    );
    let headers = |table: &str| -> Vec<String> {
        table
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(headers(&server.kubectl_ok(&["get", "wd"])), ["NAME", "SIZE"]);
    assert_eq!(
        headers(&server.kubectl_ok(&["get", "gd"])),
        ["NAME", "COLOR", "REPLICAS", "AGE"]
    );
    let resources = server.kubectl_ok(&["api-resources", "--api-group=shop.example.com", "-o", "name"]);
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        ["gadgets.shop.example.com", "widgets.shop.example.com"],
        "{resources}"
    );

    // Discovery: each version lists the resources that have it.
    let listed = |version: &str| -> Vec<String> {
        let list = http.get(&format!("/apis/shop.example.com/{version}"));
        if list.status != 200 {
            return Vec::new();
        }
        list.json["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| str_at(r, "/name").to_owned())
            .filter(|name| !name.contains('/'))
            .collect()
    };
    assert_eq!(listed("v1"), ["gadgets", "widgets"]);
    assert_eq!(listed("v1beta1"), ["gadgets"]);
    assert_eq!(listed("v1alpha1"), ["widgets"]);
    let group = http.get("/apis/shop.example.com");
    let versions: Vec<&str> = group.expect(200)["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| str_at(v, "/version"))
        .collect();
    // Most preferred first, as kube sorts them (v1 > v1beta1 > v1alpha1).
    assert_eq!(versions, ["v1", "v1beta1", "v1alpha1"], "{}", group.text);
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
    let aggregated_resources = |version: &str| -> Vec<String> {
        group["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| str_at(v, "/version") == version)
            .flat_map(|v| v["resources"].as_array().cloned().unwrap_or_default())
            .map(|r| str_at(&r, "/resource").to_owned())
            .collect()
    };
    assert_eq!(aggregated_resources("v1"), ["gadgets", "widgets"], "{group}");
    assert_eq!(aggregated_resources("v1beta1"), ["gadgets"], "{group}");
    assert_eq!(aggregated_resources("v1alpha1"), ["widgets"], "{group}");
    // OpenAPI publishes both.
    let openapi = http.get("/openapi/v3/apis/shop.example.com/v1");
    let paths = &openapi.expect(200)["paths"];
    for path in [
        "/apis/shop.example.com/v1/namespaces/{namespace}/gadgets/{name}",
        "/apis/shop.example.com/v1/namespaces/{namespace}/widgets/{name}",
    ] {
        assert!(paths.get(path).is_some(), "{path} is not published");
    }

    // Replacing the gadgets file (a version added) changes only gadgets: a watch of widgets goes on, and both keep
    // their objects.
    let mut watch = http.watch(&format!("{WIDGETS}?watch=true&resourceVersion=0"));
    let first = watch.next(Duration::from_secs(30)).expect("the initial event");
    assert_eq!(str_at(&first, "/object/metadata/name"), "w1");
    let with_alpha = format!(
        "{CRD}  - name: v1alpha1\n    served: true\n    storage: false\n    schema: {{openAPIV3Schema: {{type: object, \
         x-kubernetes-preserve-unknown-fields: true}}}}\n"
    );
    std::fs::write(&gadgets_file, with_alpha).expect("replace the gadgets CRD");
    assert!(
        wait_until(Duration::from_secs(30), || listed("v1alpha1") == ["gadgets", "widgets"]),
        "the added version is not served: {:?}",
        listed("v1alpha1")
    );
    http.get("/apis/shop.example.com/v1alpha1/namespaces/default/gadgets/g1")
        .expect(200);
    http.get(&format!("{WIDGETS}/w1")).expect(200);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &widget("w2", "small"));
    let added = watch.next(Duration::from_secs(30)).expect("the watch goes on");
    assert_eq!(
        (str_at(&added, "/type"), str_at(&added, "/object/metadata/name")),
        ("ADDED", "w2")
    );

    // Removing the gadgets file unregisters gadgets only; adding it back serves its objects again.
    std::fs::remove_file(&gadgets_file).expect("remove the gadgets CRD");
    assert!(
        wait_until(Duration::from_secs(30), || http.get(GADGETS).status == 404),
        "gadgets stayed after its file was removed"
    );
    assert_eq!(listed("v1"), ["widgets"]);
    assert_eq!(listed("v1beta1"), Vec::<String>::new());
    let widgets = server.kubectl_ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(
        widgets.lines().collect::<Vec<_>>(),
        ["widget.shop.example.com/w1", "widget.shop.example.com/w2"]
    );
    std::fs::write(&gadgets_file, CRD).expect("add the gadgets CRD back");
    assert!(
        wait_until(Duration::from_secs(30), || http.get(GADGETS).status == 200),
        "gadgets did not come back"
    );
    assert_eq!(http.get(&format!("{GADGETS}/g1")).expect(200)["spec"]["color"], "red");

    // A second file defining widgets conflicts: it is reported naming the first, which keeps serving.
    let copy = WIDGETS_CRD.replace("name: Size", "name: Other");
    std::fs::write(server.plugin_dir().join("widgets2.yaml"), copy).expect("write the duplicate");
    let failing = r#"wasm_apiserver_plugin_load_failures{file="widgets2.yaml"}"#;
    assert!(
        wait_until(Duration::from_secs(30), || {
            metric_value(&http.get("/metrics").text, failing) == Some(1.0)
        }),
        "the duplicate is not reported"
    );
    let ready = http.get("/readyz?verbose");
    assert!(
        ready
            .text
            .contains("[-]plugin/widgets2.yaml failed to load (not counted): widgets.shop.example.com is already served by widgets.yaml"),
        "{}",
        ready.text
    );
    assert_eq!(headers(&server.kubectl_ok(&["get", "wd"])), ["NAME", "SIZE"]);
    http.get(&format!("{GADGETS}/g1")).expect(200);
    // Once the first is gone, the second serves widgets, with their objects.
    std::fs::remove_file(server.plugin_dir().join("widgets.yaml")).expect("remove the widgets CRD");
    assert!(
        wait_until(Duration::from_secs(30), || {
            metric_value(&http.get("/metrics").text, failing).is_none()
        }),
        "the duplicate is still reported"
    );
    assert_eq!(headers(&server.kubectl_ok(&["get", "wd"])), ["NAME", "OTHER"]);
    let widgets = server.kubectl_ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(
        widgets.lines().collect::<Vec<_>>(),
        ["widget.shop.example.com/w1", "widget.shop.example.com/w2"]
    );
    http.get(&format!("{GADGETS}/g1")).expect(200);

    // The same in a tenant's directory: both served, one removed while the other keeps its objects.
    let tenant = server.plugin_dir().join("t1");
    std::fs::write(tenant.join("gadgets.yaml"), CRD).expect("write the tenant's gadgets CRD");
    std::fs::write(tenant.join("widgets.yaml"), WIDGETS_CRD).expect("write the tenant's widgets CRD");
    let in_tenant = |path: &str| format!("/tenants/t1{path}");
    assert!(
        wait_until(Duration::from_secs(30), || {
            http.get(&in_tenant(GADGETS)).status == 200 && http.get(&in_tenant(WIDGETS)).status == 200
        }),
        "the tenant's CRDs are not both served"
    );
    http.post_json(
        &in_tenant(GADGETS),
        &json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget", "metadata": {"name": "tg"}}),
    )
    .expect(201);
    http.post_json(
        &in_tenant(WIDGETS),
        &json!({"apiVersion": "shop.example.com/v1", "kind": "Widget", "metadata": {"name": "tw"}}),
    )
    .expect(201);
    std::fs::remove_file(tenant.join("gadgets.yaml")).expect("remove the tenant's gadgets CRD");
    assert!(
        wait_until(Duration::from_secs(30), || http.get(&in_tenant(GADGETS)).status == 404),
        "the tenant's gadgets stayed after its file was removed"
    );
    http.get(&in_tenant(&format!("{WIDGETS}/tw"))).expect(200);
    // The root's are untouched.
    http.get(&format!("{GADGETS}/g1")).expect(200);
}

/// CRD files for both resources of wardle.example.com, the group wardle.wasm serves.
const WARDLE_CRDS: [(&str, &str); 2] = [
    (
        "fischers.yaml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fischers.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Cluster
  names: {plural: fischers, kind: Fischer}
  versions:
  - {name: v1alpha1, served: true, storage: true,
     schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#,
    ),
    (
        "flunders.yaml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: flunders.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Namespaced
  names: {plural: flunders, kind: Flunder}
  versions:
  - {name: v1beta1, served: true, storage: true,
     schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#,
    ),
];

#[test]
fn a_wasm_plugin_takes_the_place_of_every_crd_file_of_its_group() {
    let server = Server::start(&[]);
    let http = server.http();
    for (file, crd) in WARDLE_CRDS {
        std::fs::write(server.plugin_dir().join(file), crd).expect("write a CRD");
    }
    let flunders = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
    let fischers = "/apis/wardle.example.com/v1alpha1/fischers";
    assert!(
        wait_until(Duration::from_secs(30), || {
            http.get(flunders).status == 200 && http.get(fischers).status == 200
        }),
        "the CRDs are not served"
    );
    http.post_json(flunders, &flunder_v1beta1("f1", "f0")).expect(201);
    http.post_json(fischers, &fischer_v1alpha1("fi1", &[])).expect(201);

    // wardle.wasm arrives: both CRD files are shadowed, their objects served by it.
    let tmp = server.plugin_dir().join(".wardle.tmp");
    std::fs::copy(target_dir().join("plugins").join("wardle.wasm"), &tmp).expect("copy wardle");
    std::fs::rename(&tmp, server.plugin_dir().join("wardle.wasm")).expect("install wardle");
    let shadowed = |file: &str| {
        metric_value(
            &http.get("/metrics").text,
            &format!(r#"wasm_apiserver_plugin_load_failures{{file="{file}"}}"#),
        )
    };
    assert!(
        wait_until(Duration::from_secs(60), || {
            WARDLE_CRDS.iter().all(|(file, _)| shadowed(file) == Some(1.0))
        }),
        "the CRD files are not both shadowed"
    );
    let ready = http.get("/readyz?verbose");
    for (file, _) in WARDLE_CRDS {
        assert!(
            ready.text.contains(&format!(
                "[-]plugin/{file} is not served (not counted): shadowed by wardle.wasm"
            )),
            "{}",
            ready.text
        );
    }
    http.get(&format!("{flunders}/f1")).expect(200);
    http.get(&format!("{fischers}/fi1")).expect(200);

    // wardle.wasm leaves: both CRD files serve again, with their objects.
    std::fs::remove_file(server.plugin_dir().join("wardle.wasm")).expect("remove wardle");
    assert!(
        wait_until(Duration::from_secs(30), || {
            WARDLE_CRDS.iter().all(|(file, _)| shadowed(file).is_none())
        }),
        "the CRD files are still shadowed"
    );
    http.get(&format!("{flunders}/f1")).expect(200);
    http.get(&format!("{fischers}/fi1")).expect(200);
    let resources = server.kubectl_ok(&["api-resources", "--api-group=wardle.example.com", "-o", "name"]);
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        ["fischers.wardle.example.com", "flunders.wardle.example.com"],
        "{resources}"
    );
}
