//! The cost of security: creates/s and gets/s over HTTPS with a client certificate and RBAC, next to plain HTTP on
//! the insecure development port (no authentication, no authorization) in the same run, and the cost of a TLS
//! handshake (a new connection per request, next to a kept-alive one).
//!
//! The HTTPS user is not in `system:masters` (whose requests skip RBAC): it is bound to the `edit` ClusterRole in
//! the `default` namespace, so every request is authorized by RBAC rules.
//!
//! Usage: `tls-bench [--server PATH] [--plugins DIR] [--requests N] [--concurrency N,N]` (defaults:
//! target/release/wasm-apiserver, target/plugins, 2000 requests per row, concurrency 1, 8, 32).

use std::net::TcpListener;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context as _};
use bench::{run_with, start, Args};
use serde_json::json;

fn field(kubeconfig: &str, name: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    let value = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
        .with_context(|| format!("no {name} in the kubeconfig"))?;
    Ok(base64::engine::general_purpose::STANDARD.decode(value.trim())?)
}

fn main() -> anyhow::Result<()> {
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        ..
    } = Args::parse()?;
    println!("| transport | operation | concurrency | requests | req/s | p50 µs | p99 µs | server CPU µs/req |");
    println!("|---|---|---|---|---|---|---|---|");
    for concurrency in concurrency {
        let secure_port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let s = start(&server, &plugins, &["--secure-port", &secure_port.to_string()])?;
        let base = s.base.clone();
        let secure = format!("https://127.0.0.1:{secure_port}");
        // A client certificate for `bench`, bound to `edit` in `default` by the administrator (insecure port).
        let out = Command::new(&server)
            .args([
                "kubeconfig",
                "--user",
                "bench",
                "--group",
                // TLS_BENCH_MASTERS: a member of system:masters, whose requests skip RBAC (to tell RBAC's cost).
                if std::env::var_os("TLS_BENCH_MASTERS").is_some() {
                    "system:masters"
                } else {
                    "bench-users"
                },
                "--server",
                &secure,
                "--data-dir",
            ])
            .arg(s.data_dir())
            .output()?;
        if !out.status.success() {
            bail!("wasm-apiserver kubeconfig: {}", String::from_utf8_lossy(&out.stderr));
        }
        let kubeconfig = String::from_utf8(out.stdout)?;
        let ca = reqwest::Certificate::from_pem(&field(&kubeconfig, "certificate-authority-data")?)?;
        let identity = reqwest::Identity::from_pem(
            &[
                field(&kubeconfig, "client-certificate-data")?,
                field(&kubeconfig, "client-key-data")?,
            ]
            .concat(),
        )?;
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bench-edits", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bench"}]
        });
        let admin = reqwest::blocking::Client::new();
        let r = admin
            .post(format!(
                "{base}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
            ))
            .json(&binding)
            .send()?;
        if r.status().as_u16() != 201 {
            bail!("creating the role binding answered {}", r.status());
        }
        // `reuse` false: no idle connection is kept, so every request opens (and handshakes) a new one.
        let https_client = move |reuse: bool| {
            let mut builder = reqwest::blocking::Client::builder()
                .use_rustls_tls()
                .tls_built_in_root_certs(false)
                .add_root_certificate(ca.clone())
                .identity(identity.clone());
            if !reuse {
                builder = builder.pool_max_idle_per_host(0);
            }
            if std::env::var_os("TLS_BENCH_HTTP1").is_some() {
                builder = builder.http1_only();
            }
            builder.build().expect("an HTTPS client")
        };
        let http_client = |reuse: bool| {
            let mut builder = reqwest::blocking::Client::builder();
            if !reuse {
                builder = builder.pool_max_idle_per_host(0);
            }
            builder.build().expect("an HTTP client")
        };
        // RBAC follows the new binding within moments.
        let probe = https_client(true);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while probe
            .get(format!(
                "{secure}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders"
            ))
            .send()?
            .status()
            .as_u16()
            != 200
        {
            if Instant::now() > deadline {
                bail!("the bench user's binding never took effect");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }

        let transports: [(&str, &str, String, MakeClient); 2] = [
            (
                "http (insecure port)",
                "p",
                base.clone(),
                std::sync::Arc::new(http_client),
            ),
            (
                "https + cert + RBAC",
                "s",
                secure.clone(),
                std::sync::Arc::new(https_client),
            ),
        ];
        for (transport, prefix, root, client) in transports {
            let url = format!("{root}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
            let create_url = url.clone();
            let reuse = client.clone();
            let cpu = s.cpu_time();
            let row = run_with(
                &base,
                concurrency,
                requests,
                move || reuse(true),
                move |c, i| {
                    let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                    "metadata": {"name": format!("{prefix}{i}")}, "spec": {"reference": format!("r{i}")}});
                    let r = c.post(&create_url).json(&body).send()?;
                    if r.status().as_u16() != 201 {
                        bail!("create answered {}: {}", r.status(), r.text().unwrap_or_default());
                    }
                    Ok(())
                },
            )?;
            print(transport, "create", concurrency, requests, row, s.cpu_time() - cpu);
            let get = move |c: &reqwest::blocking::Client, i: usize| -> anyhow::Result<()> {
                let r = c.get(format!("{url}/{prefix}{i}?resourceVersion=0")).send()?;
                if !r.status().is_success() {
                    bail!("get answered {}", r.status());
                }
                let _ = r.bytes()?;
                Ok(())
            };
            let reuse = client.clone();
            let cpu = s.cpu_time();
            let row = run_with(&base, concurrency, requests, move || reuse(true), get.clone())?;
            print(
                transport,
                "get from the watch cache",
                concurrency,
                requests,
                row,
                s.cpu_time() - cpu,
            );
            let handshakes = (requests / 4).max(50);
            let fresh = client.clone();
            let cpu = s.cpu_time();
            let row = run_with(&base, concurrency, handshakes, move || fresh(false), get)?;
            print(
                transport,
                "get, a new connection each",
                concurrency,
                handshakes,
                row,
                s.cpu_time() - cpu,
            );
        }
    }
    Ok(())
}

/// Makes a client: with connection reuse (`true`) or a new connection per request.
type MakeClient = std::sync::Arc<dyn Fn(bool) -> reqwest::blocking::Client + Send + Sync>;

/// One row; `cpu` is the server's CPU time during it (the metrics reads of `run_with` included, a few ms).
fn print(transport: &str, operation: &str, concurrency: usize, requests: usize, r: [f64; 5], cpu: std::time::Duration) {
    println!(
        "| {transport} | {operation} | {concurrency} | {requests} | {:.0} | {:.0} | {:.0} | {:.0} |",
        r[0],
        r[1],
        r[2],
        cpu.as_secs_f64() * 1e6 / requests as f64
    );
}
