//! Snapshots of the embedded store: `GET /snapshot` from a running server (cluster-admin only) and `wasm-apiserver
//! snapshot save|status|restore` on a data directory. A snapshot restored as a server's store serves exactly the
//! objects it held (same uid and resourceVersion) and nothing written after it; a damaged file is refused with the
//! reason and restores nothing. (The embedded store's: not part of the etcd suite.) On etcd, etcd's own snapshots
//! (`etcdctl snapshot save|restore`) do the same, tested once here.

use std::path::Path;
use std::process::{Command, Output};

use e2e::{fischer_v1alpha1, flunder_v1beta1, output_text, server_binary, str_at, Server};

fn snapshot(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(server_binary())
        .arg("snapshot")
        .args(args)
        .args(paths)
        .output()
        .expect("run wasm-apiserver snapshot")
}

/// The value of a `status` line (`revision  42` -> `42`).
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {name} in:\n{stdout}"))
}

#[test]
fn a_restored_snapshot_serves_what_it_held_and_nothing_after() {
    let mut server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &fischer_v1alpha1("keeper", &["nope"]).to_string(),
    );
    for name in ["one", "two"] {
        server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1(name, "x").to_string());
    }
    server.kubectl_ok(&["delete", "flunder", "two"]);
    let kept = server.kubectl_json(&["get", "flunder", "one", "-o", "json"]);
    let data = server.root().join("data");
    let file = server.root().join("snapshot.db");

    // A running server holds the store: save says to stop it.
    let refused = snapshot(&["save", "--data-dir"], &[&data, &file]);
    assert!(!refused.status.success(), "{}", output_text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("a server using it must be stopped first"),
        "{}",
        output_text(&refused)
    );
    server.stop();
    let saved = snapshot(&["save", "--data-dir"], &[&data, &file]);
    assert!(saved.status.success(), "{}", output_text(&saved));
    let saved = String::from_utf8_lossy(&saved.stdout).into_owned();
    let status = snapshot(&["status"], &[&file]);
    assert!(status.status.success(), "{}", output_text(&status));
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        saved,
        "status reads what save wrote"
    );
    let revision: i64 = line(&saved, "revision").parse().expect("a revision");
    assert!(
        revision
            >= str_at(&kept, "/metadata/resourceVersion")
                .parse::<i64>()
                .expect("a resourceVersion"),
        "{saved}"
    );

    // A write after the snapshot.
    server.restart();
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("later", "x").to_string());
    server.stop();

    // A damaged copy is refused, by status and by restore, which writes nothing.
    let mut bytes = std::fs::read(&file).expect("read the snapshot");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    let damaged = server.root().join("damaged.db");
    std::fs::write(&damaged, &bytes).expect("write the damaged copy");
    let elsewhere = server.root().join("elsewhere");
    for args in [
        &["status"][..],
        &["restore", "--data-dir", elsewhere.to_str().unwrap()][..],
    ] {
        let output = snapshot(args, &[&damaged]);
        assert!(!output.status.success(), "{}", output_text(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr)
                .contains("not a usable snapshot: its SHA-256 does not match its content"),
            "{}",
            output_text(&output)
        );
    }
    assert!(
        !elsewhere.join("store").exists(),
        "a damaged snapshot restored something"
    );
    // A data directory that holds a store is not restored over.
    let over = snapshot(&["restore", "--data-dir", data.to_str().unwrap()], &[&file]);
    assert!(!over.status.success(), "{}", output_text(&over));
    assert!(
        String::from_utf8_lossy(&over.stderr).contains("restore into a new directory"),
        "{}",
        output_text(&over)
    );

    // Restored as the server's store: what the snapshot held, with the same uid and resourceVersion; not "later".
    std::fs::rename(data.join("store"), server.root().join("store-before")).expect("move the store aside");
    let restored = snapshot(&["restore", "--data-dir", data.to_str().unwrap()], &[&file]);
    assert!(restored.status.success(), "{}", output_text(&restored));
    assert_eq!(String::from_utf8_lossy(&restored.stdout), saved);
    server.restart();
    let one = server.kubectl_json(&["get", "flunder", "one", "-o", "json"]);
    assert_eq!(one["metadata"]["uid"], kept["metadata"]["uid"]);
    assert_eq!(one["metadata"]["resourceVersion"], kept["metadata"]["resourceVersion"]);
    assert_eq!(one["spec"], kept["spec"]);
    for missing in ["two", "later"] {
        let err = server.kubectl_err(&["get", "flunder", missing]);
        assert!(err.contains("(NotFound)"), "{missing}: {err}");
    }
    server.kubectl_ok(&["get", "fischer", "keeper"]);
    // The admission plugin reads the restored fischer, and new writes come after the snapshot's revision.
    let banned = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder_v1beta1("nope", "x").to_string());
    assert!(banned.contains("is forbidden"), "{banned}");
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("new", "x").to_string());
    let new = server.kubectl_json(&["get", "flunder", "new", "-o", "json"]);
    let new_revision: i64 = str_at(&new, "/metadata/resourceVersion")
        .parse()
        .expect("a resourceVersion");
    assert!(
        new_revision > revision,
        "{new_revision} after the snapshot's {revision}"
    );
}

/// `GET /snapshot` while the server serves: a cluster-admin (here through `kubectl get --raw`) gets a snapshot at
/// one revision taken during a load of creates, and the store restored from it holds every create acknowledged at
/// or before that revision and none after; other users are refused.
#[test]
fn an_online_snapshot_during_creates_holds_exactly_the_creates_acknowledged_by_its_revision() {
    let mut server = Server::start(&["wardle"]);
    let forbidden = server.https_as("someone", &[]).get("/snapshot");
    forbidden.assert_status(403, "Forbidden");

    // The writers go on until the snapshot has been taken (and a little after), so that it falls among them.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let http = server.https_as("writer", &["system:masters"]);
            let stop = stop.clone();
            std::thread::spawn(move || {
                (0..2000)
                    .take_while(|_| !stop.load(std::sync::atomic::Ordering::Acquire))
                    .map(|i| {
                        let name = format!("w{w}-{i}");
                        let created = http.post_json(e2e::FLUNDERS_V1BETA1, &flunder_v1beta1(&name, "x"));
                        let rv: i64 = str_at(created.expect(201), "/metadata/resourceVersion")
                            .parse()
                            .expect("a resourceVersion");
                        (name, rv)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    assert!(
        e2e::wait_until(std::time::Duration::from_secs(30), || {
            server.http().get(e2e::FLUNDERS_V1BETA1).json["items"]
                .as_array()
                .map_or(0, Vec::len)
                >= 20
        }),
        "the writers did not start"
    );
    let taken = server.kubectl(&["get", "--raw", "/snapshot"]);
    assert!(taken.status.success(), "{}", output_text(&taken));
    // A few more creates after it, then the writers stop.
    let after = server.http().get(e2e::FLUNDERS_V1BETA1).json["items"]
        .as_array()
        .map_or(0, Vec::len);
    e2e::wait_until(std::time::Duration::from_secs(30), || {
        server.http().get(e2e::FLUNDERS_V1BETA1).json["items"]
            .as_array()
            .map_or(0, Vec::len)
            >= after + 10
    });
    stop.store(true, std::sync::atomic::Ordering::Release);
    let file = server.root().join("online.db");
    std::fs::write(&file, &taken.stdout).expect("write the snapshot");
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.join().expect("a writer"));
    }
    let status = snapshot(&["status"], &[&file]);
    assert!(status.status.success(), "{}", output_text(&status));
    let stdout = String::from_utf8_lossy(&status.stdout).into_owned();
    let revision: i64 = line(&stdout, "revision").parse().expect("a revision");
    assert!(
        acknowledged.iter().any(|(_, rv)| *rv > revision) && acknowledged.iter().any(|(_, rv)| *rv <= revision),
        "the snapshot at {revision} was not taken during the creates"
    );

    server.stop();
    let data = server.root().join("data");
    std::fs::rename(data.join("store"), server.root().join("store-before")).expect("move the store aside");
    let restored = snapshot(&["restore", "--data-dir", data.to_str().unwrap()], &[&file]);
    assert!(restored.status.success(), "{}", output_text(&restored));
    server.restart();
    let listed = server.http().get(e2e::FLUNDERS_V1BETA1);
    let names: std::collections::BTreeSet<String> = listed.expect(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| str_at(item, "/metadata/name").to_owned())
        .collect();
    for (name, rv) in &acknowledged {
        assert_eq!(
            names.contains(name),
            *rv <= revision,
            "{name} created at {rv}, the snapshot at {revision}"
        );
    }
}

/// `wasm-apiserver snapshot save FILE --kubeconfig K` asks a running server for its snapshot with the kubeconfig's
/// credentials (a client certificate over HTTPS here), and says why when they may not.
#[test]
fn snapshot_save_asks_a_running_server_with_a_kubeconfigs_credentials() {
    let server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("saved", "x").to_string());
    let admin = server.user_kubeconfig("an-admin", &["system:masters"]);
    let file = server.root().join("online.db");
    let saved = snapshot(&["save", "--kubeconfig", admin.to_str().unwrap()], &[&file]);
    assert!(saved.status.success(), "{}", output_text(&saved));
    let stdout = String::from_utf8_lossy(&saved.stdout).into_owned();
    let status = snapshot(&["status"], &[&file]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        stdout,
        "{}",
        output_text(&status)
    );
    let created = server.kubectl_json(&["get", "flunder", "saved", "-o", "json"]);
    let revision: i64 = line(&stdout, "revision").parse().expect("a revision");
    assert!(
        revision
            >= str_at(&created, "/metadata/resourceVersion")
                .parse::<i64>()
                .expect("an rv"),
        "{stdout}"
    );

    let someone = server.user_kubeconfig("someone", &[]);
    let refused_file = server.root().join("refused.db");
    let refused = snapshot(&["save", "--kubeconfig", someone.to_str().unwrap()], &[&refused_file]);
    assert!(!refused.status.success(), "{}", output_text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("answered 403 Forbidden"),
        "{}",
        output_text(&refused)
    );
    assert!(!refused_file.exists(), "a refused save wrote a file");
}

/// On etcd, snapshots are etcd's own (docs/operators/flags.md): one saved by `etcdctl snapshot save` while the server
/// serves, restored by `etcdctl snapshot restore` into a new member, serves the objects it held (uid and
/// resourceVersion kept) and none written after it.
#[test]
fn an_etcd_snapshot_saved_and_restored_by_etcdctl_serves_what_it_held() {
    let mut server = Server::start_on_etcd(&["wardle"], &[]);
    let mut held = Vec::new();
    for i in 0..10 {
        let created = server
            .http()
            .post_json(e2e::FLUNDERS_V1BETA1, &flunder_v1beta1(&format!("f{i}"), "x"))
            .expect(201)
            .clone();
        held.push(created);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("etcd.db");
    server.etcd_mut().unwrap().save_snapshot(&file).unwrap();
    server
        .http()
        .post_json(e2e::FLUNDERS_V1BETA1, &flunder_v1beta1("after", "x"))
        .expect(201);
    server.stop();

    let etcd = e2e::Etcd::restore(&file).unwrap();
    let restored = Server::start_with_args(&["wardle"], &["--etcd-servers", &etcd.endpoint()]);
    for before in &held {
        let name = str_at(before, "/metadata/name");
        let now = restored
            .http()
            .get(&format!("{}/{name}", e2e::FLUNDERS_V1BETA1))
            .expect(200)
            .clone();
        assert_eq!(now["metadata"]["uid"], before["metadata"]["uid"], "{name}");
        assert_eq!(
            now["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
            "{name}"
        );
    }
    restored
        .http()
        .get(&format!("{}/after", e2e::FLUNDERS_V1BETA1))
        .assert_status(404, "NotFound");
    let next = restored
        .http()
        .post_json(e2e::FLUNDERS_V1BETA1, &flunder_v1beta1("next", "x"))
        .expect(201)
        .clone();
    let last_held: u64 = str_at(held.last().unwrap(), "/metadata/resourceVersion")
        .parse()
        .unwrap();
    let next_rv: u64 = str_at(&next, "/metadata/resourceVersion").parse().unwrap();
    assert!(next_rv > last_held, "{next_rv} after {last_held}");
}
