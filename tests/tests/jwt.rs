//! JWT bearer tokens from an OIDC issuer (`--authentication-config`): a small issuer runs in the test over HTTPS
//! (its own certificate, a discovery document and a JWKS); its tokens name the user, and expired, wrongly signed,
//! wrong-audience and unknown-issuer tokens get 401.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;

use base64::Engine as _;
use e2e::Server;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

/// An OIDC issuer on 127.0.0.1 serving its discovery document and keys over HTTPS.
struct Issuer {
    url: String,
    ca_pem: String,
    key: EncodingKey,
}

fn signing_key() -> (EncodingKey, Value) {
    let pair = rcgen::KeyPair::generate().unwrap();
    let raw = pair.public_key_raw();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
        "x": b64.encode(&raw[1..33]), "y": b64.encode(&raw[33..65])});
    (EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap(), jwk)
}

impl Issuer {
    fn start() -> Issuer {
        let (config, ca_pem) = e2e::self_signed_tls();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (key, jwk) = signing_key();
        let served_url = url.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let config = config.clone();
                let url = served_url.clone();
                let jwk = jwk.clone();
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut tls = rustls::StreamOwned::new(conn, stream);
                    let mut request_line = String::new();
                    let mut reader = BufReader::new(&mut tls);
                    if reader.read_line(&mut request_line).is_err() {
                        return;
                    }
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).map_or(true, |n| n == 0) || line == "\r\n" {
                            break;
                        }
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or("");
                    let (status, body) = match path {
                        "/.well-known/openid-configuration" => {
                            ("200 OK", json!({"issuer": url, "jwks_uri": format!("{url}/keys")}))
                        }
                        "/keys" => ("200 OK", json!({"keys": [jwk]})),
                        _ => ("404 Not Found", json!({})),
                    };
                    let body = body.to_string();
                    let _ = write!(
                        tls,
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.flush();
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        Issuer { url, ca_pem, key }
    }

    fn token(&self, claims: &Value) -> String {
        self.token_with(claims, &self.key)
    }

    fn token_with(&self, claims: &Value, key: &EncodingKey) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    fn claims(&self, overrides: Value) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut claims = json!({"iss": self.url, "aud": "kube", "sub": "jane", "exp": now + 600, "iat": now,
            "groups": ["system:masters", "dev"]});
        for (k, v) in overrides.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    }
}

fn start(issuer: &Issuer) -> Server {
    let dir = tempfile::tempdir().unwrap().keep();
    let config = dir.join("authn.yaml");
    let ca = issuer
        .ca_pem
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect::<String>();
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: {}\n    \
             audiences: [kube]\n    certificateAuthority: |\n{ca}  claimMappings:\n    username:\n      claim: sub\n      \
             prefix: 'oidc:'\n    groups:\n      claim: groups\n      prefix: ''\n",
            issuer.url
        ),
    )
    .unwrap();
    Server::start_with_args(&["wardle"], &["--authentication-config", config.to_str().unwrap()])
}

/// Who the server takes a bearer token's request for: (code, user info of a SelfSubjectReview).
fn whoami(server: &Server, token: &str) -> (u16, Value) {
    let https = server.https();
    let reply = https
        .client()
        .post(https.url("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
        .bearer_auth(token)
        .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
        .send()
        .unwrap();
    let code = reply.status().as_u16();
    let body: Value = reply.json().unwrap_or(Value::Null);
    (code, body["status"]["userInfo"].clone())
}

#[test]
fn jwt_tokens_of_the_issuer_name_the_user_and_bad_ones_get_401() {
    let issuer = Issuer::start();
    let server = start(&issuer);

    let token = issuer.token(&issuer.claims(json!({})));
    let (code, user) = whoami(&server, &token);
    assert_eq!(code, 201, "{user}");
    assert_eq!(user["username"], "oidc:jane");
    assert_eq!(user["groups"], json!(["system:masters", "dev", "system:authenticated"]));

    // kubectl with the token.
    let kubeconfig = server.root().join("kubeconfig-jwt");
    let ca = base64::engine::general_purpose::STANDARD.encode(server.ca_pem());
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  \
             context: {{cluster: s, user: u, namespace: default}}\ncurrent-context: c\n",
            server.secure_url()
        ),
    )
    .unwrap();
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let out = server.kubectl_ok(&[&kc, "auth", "whoami"]);
    assert!(out.contains("oidc:jane"), "{out}");
    server.kubectl_ok(&[&kc, "get", "flunders"]);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (other_key, _) = signing_key();
    let refused = [
        (
            "expired",
            issuer.token(&issuer.claims(json!({"exp": now - 3600, "iat": now - 7200}))),
        ),
        (
            "wrongly signed",
            issuer.token_with(&issuer.claims(json!({})), &other_key),
        ),
        (
            "another audience",
            issuer.token(&issuer.claims(json!({"aud": "other"}))),
        ),
        (
            "an unknown issuer",
            issuer.token(&issuer.claims(json!({"iss": "https://127.0.0.1:1"}))),
        ),
        ("no username", issuer.token(&issuer.claims(json!({"sub": ""})))),
    ];
    for (what, token) in refused {
        let (code, _) = whoami(&server, &token);
        assert_eq!(code, 401, "a token with {what}");
    }
    let err = server.kubectl_err(&[&kc, "--token=not.a.jwt", "get", "flunders"]);
    assert!(
        err.contains("Unauthorized") || err.contains("provide credentials"),
        "{err}"
    );
}

#[test]
fn jwt_a_bad_authentication_config_stops_the_server_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authn.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: \
         https://example.com\n    audiences: [kube]\n  claimMappings:\n    username: {claim: sub}\n",
    )
    .unwrap();
    let err = Server::try_start_with_args(&["wardle"], &["--authentication-config", config.to_str().unwrap()])
        .err()
        .expect("the server refuses a username mapping without a prefix");
    let text = format!("{err:#}");
    assert!(
        text.contains("jwt[0].claimMappings.username.prefix is required"),
        "{text}"
    );
}
