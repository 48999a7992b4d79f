//! Plugin admission sees who makes the request: the guarded plugin's validating admission lets only the members of
//! `vault-keepers` seal a vault, and its refusal names the user and groups it was told. Driven with kubectl's
//! `--as` and `--as-group`, so the user is the impersonated one, as kube-apiserver gives admission.

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
    let bob = ["--as=bob", "--as-group=vault-users"];

    let create = |user: &[&'static str]| -> Vec<&'static str> { [user, &["create", "-f", "-"]].concat() };
    server.kubectl_stdin_ok(&create(&alice), &vault("sealed-by-alice", true));
    let err = server.kubectl_stdin_err(&create(&bob), &vault("sealed-by-bob", true));
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    assert!(
        err.contains(r#"only members of vault-keepers may set spec.sealed; user "bob" is in groups ["vault-users""#),
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
