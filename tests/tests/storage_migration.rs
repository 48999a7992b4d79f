//! Storage version migration (StorageVersionMigration and StorageVersion): after the wardle plugin is replaced by a build that stores flunders
//! in v1beta1 (plugins/wardle-next), a StorageVersionMigration created with kubectl rewrites every flunder in etcd
//! in v1beta1, converted by the plugin, and the flunders' StorageVersion records the versions objects may be stored
//! in, as a CRD's `status.storedVersions`. Checked by reading the raw values from etcd.

use std::time::Duration;

use e2e::{flunder_v1beta1, wait_until, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

const FLUNDERS_PREFIX: &str = "/registry/wardle.example.com/flunders/";
const FLUNDERS_VERSION: &str = "wardle.example.com.flunders";
const MIGRATION_KEY: &str = "/registry/storagemigration.k8s.io/storageversionmigrations/";
const COUNT: usize = 30;

/// The apiVersion of every flunder as etcd holds it, by key.
fn stored_api_versions(server: &mut Server) -> Vec<(String, String)> {
    let etcd = server.etcd_mut().expect("the server runs on etcd");
    etcd.raw_values(FLUNDERS_PREFIX)
        .into_iter()
        .map(|(key, value)| {
            let obj: Value = serde_json::from_slice(&value).unwrap_or_else(|e| panic!("{key}: {e}"));
            (key, obj["apiVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn stored_versions(server: &Server) -> Value {
    server.kubectl_json(&["get", "storageversions", FLUNDERS_VERSION, "-o", "json"])["status"]["storedVersions"].clone()
}

/// Replaces the plugin file `wardle.wasm` with the build `plugin`, in one rename.
fn replace_wardle(server: &Server, plugin: &str) {
    let tmp = server.plugin_dir().join(".wardle.tmp");
    std::fs::copy(e2e::target_dir().join("plugins").join(format!("{plugin}.wasm")), &tmp).unwrap();
    std::fs::rename(&tmp, server.plugin_dir().join("wardle.wasm")).unwrap();
}

/// Waits until new flunders are written in `api_version` (the replaced plugin serves), creating and deleting
/// probes.
fn wait_for_storage_version(server: &mut Server, api_version: &str) {
    let mut attempt = 0;
    let served = wait_until(Duration::from_secs(120), || {
        attempt += 1;
        let name = format!("probe-{attempt}");
        server
            .http()
            .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&name, "x"))
            .expect(201);
        let suffix = format!("/default/{name}");
        let stored = stored_api_versions(server)
            .into_iter()
            .find(|(key, _)| key.ends_with(&suffix))
            .map(|(_, v)| v);
        server.http().delete(&format!("{FLUNDERS_V1BETA1}/{name}")).expect(200);
        stored.as_deref() == Some(api_version)
    });
    assert!(
        served,
        "new flunders are not stored in {api_version}: {}",
        server.log_tail(30)
    );
}

fn migration(name: &str, group: &str, resource: &str) -> String {
    format!(
        "apiVersion: storagemigration.k8s.io/v1beta1\nkind: StorageVersionMigration\nmetadata:\n  name: {name}\n\
         spec:\n  resource:\n    group: {group}\n    resource: {resource}\n"
    )
}

/// Waits (kubectl wait) until the migration `name` has the condition `type_`, and returns it.
fn finished(server: &Server, name: &str, type_: &str) -> Value {
    let object = format!("storageversionmigrations/{name}");
    let condition = format!("--for=condition={type_}");
    server.kubectl_ok(&["wait", &condition, &object, "--timeout=120s"]);
    server.kubectl_json(&["get", &object, "-o", "json"])
}

fn condition<'a>(svm: &'a Value, type_: &str) -> &'a Value {
    svm["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

#[test]
fn a_migration_rewrites_every_flunder_in_the_new_storage_version() {
    let mut server = Server::start_on_etcd(&["wardle"], &[]);
    for i in 0..COUNT {
        let mut flunder = flunder_v1beta1(&format!("f{i:02}"), &format!("ref-{i}"));
        flunder["metadata"]["labels"] = json!({"n": i.to_string()});
        server.http().post_json(FLUNDERS_V1BETA1, &flunder).expect(201);
    }
    // One in another namespace, and one with a status.
    server.kubectl_ok(&["create", "namespace", "other"]);
    server
        .http()
        .post_json(
            "/apis/wardle.example.com/v1beta1/namespaces/other/flunders",
            &json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
                    "metadata": {"name": "elsewhere"}, "spec": {"fischerReference": "fi", "referenceType": "Fischer"}}),
        )
        .expect(201);
    let mut with_status = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/f00"))
        .expect(200)
        .clone();
    with_status["status"] = json!({"replicas": 3});
    server
        .http()
        .put_json(&format!("{FLUNDERS_V1BETA1}/f00/status"), &with_status)
        .expect(200);

    let stored = stored_api_versions(&mut server);
    assert_eq!(stored.len(), COUNT + 1);
    assert!(
        stored.iter().all(|(_, v)| v == "wardle.example.com/v1alpha1"),
        "{stored:?}"
    );
    assert_eq!(stored_versions(&server), json!(["v1alpha1"]));
    let before = server
        .http()
        .get("/apis/wardle.example.com/v1beta1/flunders")
        .expect(200)
        .clone();

    replace_wardle(&server, "wardle-next");
    wait_for_storage_version(&mut server, "wardle.example.com/v1beta1");
    assert_eq!(stored_versions(&server), json!(["v1alpha1", "v1beta1"]));
    let stored = stored_api_versions(&mut server);
    assert!(
        stored.iter().all(|(_, v)| v == "wardle.example.com/v1alpha1"),
        "nothing migrated yet: {stored:?}"
    );

    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &migration("flunders", "wardle.example.com", "flunders"),
    );
    let svm = finished(&server, "flunders", "Succeeded");
    assert_eq!(condition(&svm, "Running")["status"], "False", "{svm}");
    assert_eq!(
        condition(&svm, "Succeeded")["message"],
        format!("{} objects written again in wardle.example.com/v1beta1", COUNT + 1),
        "{svm}"
    );
    let started: u64 = svm["status"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(started > 0, "{svm}");

    // In etcd, every flunder is now v1beta1, its spec converted by the plugin.
    let etcd = server.etcd_mut().unwrap();
    let raw = etcd.raw_values(FLUNDERS_PREFIX);
    assert_eq!(raw.len(), COUNT + 1);
    for (key, value) in &raw {
        let obj: Value = serde_json::from_slice(value).unwrap();
        assert_eq!(obj["apiVersion"], "wardle.example.com/v1beta1", "{key}");
        assert!(obj["spec"].get("reference").is_none(), "{key}: {obj}");
    }
    let f07: Value = serde_json::from_slice(&etcd.raw_value("/flunders/default/f07")).unwrap();
    assert_eq!(f07["spec"]["flunderReference"], "ref-7", "{f07}");
    assert_eq!(stored_versions(&server), json!(["v1beta1"]));

    // The objects read the same, but for their resourceVersion; their uid and generation are kept.
    let after = server
        .http()
        .get("/apis/wardle.example.com/v1beta1/flunders")
        .expect(200)
        .clone();
    let strip = |list: &Value| -> Vec<Value> {
        let mut items = list["items"].as_array().unwrap().clone();
        for item in &mut items {
            item["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        }
        items
    };
    assert_eq!(strip(&before), strip(&after));
    let f00 = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/f00"))
        .expect(200)
        .clone();
    assert_eq!(f00["status"]["replicas"], 3);

    // The migrated resource cannot change.
    let err = server.kubectl_err(&[
        "patch",
        "storageversionmigrations",
        "flunders",
        "--type=merge",
        "-p",
        r#"{"spec":{"resource":{"resource":"fischers"}}}"#,
    ]);
    assert!(err.contains("field is immutable"), "{err}");
    // A second migration writes every object again too (as kube's: encryption at rest takes the current key).
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &migration("again", "wardle.example.com", "flunders"),
    );
    let again = finished(&server, "again", "Succeeded");
    assert_eq!(
        condition(&again, "Succeeded")["message"],
        format!("{} objects written again in wardle.example.com/v1beta1", COUNT + 1)
    );
    // A resource the server does not store fails the migration, saying so.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &migration("nothing", "wardle.example.com", "nothings"),
    );
    let failed = finished(&server, "nothing", "Failed");
    assert_eq!(condition(&failed, "Failed")["reason"], "ResourceNotFound", "{failed}");
    // StorageVersions are the host's: a client may only read them.
    let err = server.kubectl_err(&["delete", "storageversions", FLUNDERS_VERSION]);
    assert!(err.contains("MethodNotAllowed") || err.contains("not allowed"), "{err}");
}

#[test]
fn a_migration_left_running_by_a_stopped_server_is_finished_by_the_next() {
    let mut server = Server::start_on_etcd(&["wardle"], &[]);
    for i in 0..5 {
        server
            .http()
            .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&format!("f{i}"), "x"))
            .expect(201);
    }
    replace_wardle(&server, "wardle-next");
    wait_for_storage_version(&mut server, "wardle.example.com/v1beta1");
    server.stop();
    // What a host that stopped halfway leaves: a migration marked Running, its objects partly rewritten (none here).
    let left = json!({
        "apiVersion": "storagemigration.k8s.io/v1beta1",
        "kind": "StorageVersionMigration",
        "metadata": {"name": "left", "uid": "0b8a7e52-8d1b-4f3c-9d55-6f0e1a2b3c4d", "generation": 1,
                     "creationTimestamp": "2026-12-01T00:00:00Z"},
        "spec": {"resource": {"group": "wardle.example.com", "resource": "flunders"}},
        "status": {"resourceVersion": "1", "conditions": [{"type": "Running", "status": "True", "reason": "Migrating",
                   "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z", "observedGeneration": 1}]}
    });
    let etcd = server.etcd_mut().unwrap();
    etcd.put_raw(&format!("{MIGRATION_KEY}left"), left.to_string().as_bytes());
    assert_eq!(etcd.raw_values(FLUNDERS_PREFIX).len(), 5);
    server.restart();
    finished(&server, "left", "Succeeded");
    let stored = stored_api_versions(&mut server);
    assert!(
        stored.iter().all(|(_, v)| v == "wardle.example.com/v1beta1"),
        "{stored:?}"
    );
    assert_eq!(stored_versions(&server), json!(["v1beta1"]));
}
