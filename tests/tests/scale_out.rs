//! Two wasm-apiserver hosts on one 3-member etcd cluster: a write through one host is seen by a watch on the other,
//! resourceVersions agree, and a stale update through either host is a 409 Conflict.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Etcd, Server, FLUNDERS_V1BETA1};

#[test]
fn two_hosts_on_one_etcd_cluster_share_objects_watches_and_conflicts() {
    let cluster = Etcd::cluster(3).unwrap_or_else(|e| panic!("cannot start the etcd cluster: {e:#}"));
    let endpoints = cluster.iter().map(Etcd::endpoint).collect::<Vec<_>>().join(",");
    let a = Server::start_with_args(&["wardle"], &["--etcd-servers", &endpoints]);
    let b = Server::start_with_args(&["wardle"], &["--etcd-servers", &endpoints]);

    // A watch on host B, from now.
    let list = b.http().get(FLUNDERS_V1BETA1);
    let list_rv = str_at(list.expect(200), "/metadata/resourceVersion").to_owned();
    let mut watch_b = b
        .http()
        .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={list_rv}"));

    // A write through host A is seen by B's watch, with the same resourceVersion.
    let created = a.http().post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("shared", "x"));
    let created_rv = str_at(created.expect(201), "/metadata/resourceVersion").to_owned();
    let event = watch_b
        .next(Duration::from_secs(30))
        .expect("host B's watch sees host A's write");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(str_at(&event, "/object/metadata/name"), "shared");
    assert_eq!(str_at(&event, "/object/metadata/resourceVersion"), created_rv);
    let read_b = b.http().get(&format!("{FLUNDERS_V1BETA1}/shared"));
    assert_eq!(str_at(read_b.expect(200), "/metadata/resourceVersion"), created_rv);

    // Update through B; the same stale object sent through A is a conflict.
    let mut stale = read_b.json.clone();
    let mut fresh = read_b.json.clone();
    fresh["spec"]["flunderReference"] = "from-b".into();
    let updated = b.http().put_json(&format!("{FLUNDERS_V1BETA1}/shared"), &fresh);
    let updated_rv = str_at(updated.expect(200), "/metadata/resourceVersion").to_owned();
    assert!(updated_rv.parse::<i64>().unwrap() > created_rv.parse::<i64>().unwrap());
    stale["spec"]["flunderReference"] = "from-a".into();
    a.http()
        .put_json(&format!("{FLUNDERS_V1BETA1}/shared"), &stale)
        .assert_status(409, "Conflict");
    let event = watch_b
        .next(Duration::from_secs(30))
        .expect("host B's watch sees its own update");
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(str_at(&event, "/object/spec/flunderReference"), "from-b");
    assert_eq!(
        str_at(
            &a.http().get(&format!("{FLUNDERS_V1BETA1}/shared")).json,
            "/spec/flunderReference"
        ),
        "from-b"
    );
}

#[test]
fn a_host_keeps_serving_when_its_etcd_cluster_loses_a_member() {
    let mut cluster = Etcd::cluster(3).unwrap_or_else(|e| panic!("cannot start the etcd cluster: {e:#}"));
    let endpoints = cluster.iter().map(Etcd::endpoint).collect::<Vec<_>>().join(",");
    let server = Server::start_with_args(&["wardle"], &["--etcd-servers", &endpoints]);
    let http = server.http();
    let mut last_rv = String::new();
    for i in 0..5 {
        let reply = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&format!("before-{i}"), "x"));
        last_rv = str_at(reply.expect(201), "/metadata/resourceVersion").to_owned();
    }
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={last_rv}"));

    // Lose the leader: the client skips the lost member, and requests wait while the others elect a new leader.
    // A write whose attempt was lost with the leader is sent again; its condition (absent, or at the revision it
    // read) makes sure it is applied once.
    let leader = cluster
        .iter()
        .position(|m| m.is_leader().unwrap_or(false))
        .expect("a leader");
    cluster[leader].stop();
    let mut created = Vec::new();
    let mut failures = Vec::new();
    for i in 0..30 {
        let name = format!("after-{i}");
        let reply = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&name, "x"));
        match reply.status {
            201 => created.push(name),
            _ => failures.push(format!("create {name}: {} {}", reply.status, reply.text)),
        }
        let get = http.get(&format!("{FLUNDERS_V1BETA1}/before-{}", i % 5));
        if get.status != 200 {
            failures.push(format!("get before-{}: {} {}", i % 5, get.status, get.text));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");

    // The watch goes on, through another member.
    for name in &created {
        let event = watch.next(Duration::from_secs(30)).expect("the watch goes on");
        assert_eq!(
            (str_at(&event, "/type"), str_at(&event, "/object/metadata/name")),
            ("ADDED", name.as_str())
        );
    }
}

#[test]
fn a_host_starts_while_one_of_its_etcd_members_is_down() {
    let mut cluster = Etcd::cluster(3).unwrap_or_else(|e| panic!("cannot start the etcd cluster: {e:#}"));
    let endpoints = cluster.iter().map(Etcd::endpoint).collect::<Vec<_>>().join(",");
    cluster[0].stop();
    let server = Server::start_with_args(&["wardle"], &["--etcd-servers", &endpoints]);
    let http = server.http();
    for i in 0..10 {
        http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&format!("f{i}"), "x"))
            .expect(201);
        http.get(&format!("{FLUNDERS_V1BETA1}/f{i}")).expect(200);
    }
    assert_eq!(http.get("/readyz").status, 200);
}

/// Two hosts on one etcd serve the same tenants consistently: a watch on host B in tenant t1 sees host A's write to
/// t1, and nothing of t1 reaches the root's watch on B.
#[test]
fn two_hosts_serve_the_same_tenants_consistently() {
    let etcd = Etcd::start().unwrap_or_else(|e| panic!("cannot start etcd: {e:#}"));
    let args = ["--etcd-servers", &etcd.endpoint()];
    let a = Server::start_with_args(&["wardle", "t1/wardle"], &args);
    let b = Server::start_with_args(&["wardle", "t1/wardle"], &args);
    let t1 = format!("/tenants/t1{FLUNDERS_V1BETA1}");

    let list = b.http().get(&t1);
    let list_rv = str_at(list.expect(200), "/metadata/resourceVersion").to_owned();
    let mut watch_t1 = b.http().watch(&format!("{t1}?watch=true&resourceVersion={list_rv}"));
    let mut watch_root = b
        .http()
        .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={list_rv}"));

    let created = a.http().post_json(&t1, &flunder_v1beta1("in-t1", "a"));
    let created_rv = str_at(created.expect(201), "/metadata/resourceVersion").to_owned();
    let event = watch_t1
        .next(Duration::from_secs(30))
        .expect("host B's watch in t1 sees host A's write to t1");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(str_at(&event, "/object/metadata/name"), "in-t1");
    assert_eq!(str_at(&event, "/object/metadata/resourceVersion"), created_rv);

    // The root's watch on B gets the root's write, and t1's write never came before it.
    a.http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("at-root", "a"))
        .expect(201);
    let event = watch_root
        .next(Duration::from_secs(30))
        .expect("host B's root watch sees the root's write");
    assert_eq!(str_at(&event, "/object/metadata/name"), "at-root", "{event:#}");
    b.http()
        .get(&format!("{FLUNDERS_V1BETA1}/in-t1"))
        .assert_status(404, "NotFound");
}
