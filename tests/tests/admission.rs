//! Plugin admission sees who makes the request: the guarded plugin's validating admission lets only the members of
//! `vault-keepers` seal a vault, and its refusal names the user, groups, uid and extra it was told. Driven with
//! kubectl's `--as`, `--as-group`, `--as-uid` and `--as-user-extra`, so the user is the impersonated one, as
//! kube-apiserver gives admission. A plugin built against the contract's first version (0.1.0) is admitted the same
//! way by the current host.

use e2e::Server;

const VAULT: &str = "apiVersion: guarded.example.com/v1
kind: Vault
metadata: {name: NAME, namespace: default}
spec: {sealed: SEALED, contents: gold}
";

fn vault(name: &str, sealed: bool) -> String {
    VAULT.replace("NAME", name).replace("SEALED", &sealed.to_string())
}

#[test]
fn plugin_admission_decides_by_the_real_user_and_groups() {
    let server = Server::start(&["guarded"]);
    // Both users may write vaults in `default` (RBAC); admission alone tells them apart.
    server.grant("default", "cluster-admin", "vault-users");
    let alice = ["--as=alice", "--as-group=vault-users", "--as-group=vault-keepers"];
    let bob = [
        "--as=bob",
        "--as-group=vault-users",
        "--as-uid=bob-uid-7",
        "--as-user-extra=scopes=vaults",
        "--as-user-extra=scopes=read",
    ];

    let create = |user: &[&'static str]| -> Vec<&'static str> { [user, &["create", "-f", "-"]].concat() };
    server.kubectl_stdin_ok(&create(&alice), &vault("sealed-by-alice", true));
    let err = server.kubectl_stdin_err(&create(&bob), &vault("sealed-by-bob", true));
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    assert!(
        err.contains(r#"only members of vault-keepers may set spec.sealed; user "bob" is in groups ["vault-users""#),
        "{err}"
    );
    // The uid and extra come from `host.request-user`; the plugin fails the call if that is not the request's user.
    assert!(
        err.contains(r#"uid "bob-uid-7", extra [("scopes", ["vaults", "read"])]"#),
        "{err}"
    );
    assert!(!err.contains("system:anonymous"), "{err}");
    // An open vault is anyone's; sealing it is a keeper's.
    server.kubectl_stdin_ok(&create(&bob), &vault("open", false));
    let seal = |user: &[&'static str]| -> Vec<&'static str> {
        [
            user,
            &[
                "patch",
                "vault",
                "open",
                "-n",
                "default",
                "--type=merge",
                "-p",
                r#"{"spec":{"sealed":true}}"#,
            ],
        ]
        .concat()
    };
    let err = server.kubectl_err(&seal(&bob));
    assert!(err.contains("only members of vault-keepers"), "{err}");
    server.kubectl_ok(&seal(&alice));
    let sealed = server.kubectl_json(&["get", "vault", "open", "-n", "default", "-o", "json"]);
    assert_eq!(sealed["spec"]["sealed"], true);
}

const RELIC: &str = "apiVersion: elder.example.com/v1
kind: Relic
metadata: {name: NAME, namespace: default}
spec: {keeper: KEEPER}
";

#[test]
fn a_plugin_built_for_the_first_contract_version_is_served_and_admits_by_user() {
    // plugins/elder is built against the frozen 0.1.0 contract; the host serves 0.1.1.
    let server = Server::start(&["elder"]);
    server.grant("default", "cluster-admin", "relic-keepers");
    let relic = |name: &str, keeper: &str| RELIC.replace("NAME", name).replace("KEEPER", keeper);
    server.kubectl_stdin_ok(
        &["--as=alice", "--as-group=relic-keepers", "create", "-f", "-"],
        &relic("crown", "alice"),
    );
    let err = server.kubectl_stdin_err(
        &["--as=bob", "--as-group=relic-keepers", "create", "-f", "-"],
        &relic("sceptre", "alice"),
    );
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    assert!(
        err.contains(r#"spec.keeper must be the requesting user: "alice" is not "bob" (in groups ["relic-keepers""#),
        "{err}"
    );
    let relics = server.kubectl_json(&["get", "relics", "-n", "default", "-o", "json"]);
    let names: Vec<&str> = relics["items"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["crown"]);
}
