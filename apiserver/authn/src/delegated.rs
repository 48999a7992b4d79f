//! Delegated authentication's trust (`--authentication-kubeconfig`, as k8s.io/apiserver's
//! `DelegatingAuthenticationOptions`): an aggregated server reads who may front it from the ConfigMap
//! `kube-system/extension-apiserver-authentication` that kube-apiserver publishes: the front proxy's CA
//! (`requestheader-client-ca-file`, PEM), its allowed common names and the header names (JSON lists of strings),
//! and the CA of the cluster's client certificates (`client-ca-file`). Reading it needs the Role
//! `extension-apiserver-authentication-reader` in kube-system.

use anyhow::{bail, Context as _};
use serde_json::Value;

use super::kubeconfig::KubeClient;

/// Where kube-apiserver publishes it.
pub const CONFIGMAP_PATH: &str = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

/// What the ConfigMap says.
#[derive(Debug, Default, PartialEq)]
pub struct ExtensionAuthentication {
    /// The CA of the cluster's client certificates (PEM).
    pub client_ca: Option<String>,
    /// The front proxy's CA (PEM); the request-header fields below are set only with it.
    pub requestheader_client_ca: Option<String>,
    /// The common names a front proxy's certificate may have (any when empty).
    pub requestheader_allowed_names: Vec<String>,
    /// The headers naming the user.
    pub requestheader_username_headers: Vec<String>,
    /// The headers naming the groups.
    pub requestheader_group_headers: Vec<String>,
    /// The prefixes of headers with extra attributes.
    pub requestheader_extra_headers_prefix: Vec<String>,
}

/// Reads the ConfigMap through `client`.
pub async fn read(client: &KubeClient) -> anyhow::Result<ExtensionAuthentication> {
    let reply = client
        .request(reqwest::Method::GET, CONFIGMAP_PATH)
        .send()
        .await
        .with_context(|| {
            format!(
                "asking {} for kube-system/extension-apiserver-authentication",
                client.server
            )
        })?;
    let code = reply.status();
    let body: Value = reply.json().await.unwrap_or(Value::Null);
    if !code.is_success() {
        bail!(
            "reading kube-system/extension-apiserver-authentication: {code}: {}",
            body["message"].as_str().unwrap_or("")
        );
    }
    parse(&body)
}

/// The fields of the ConfigMap `configmap`.
pub fn parse(configmap: &Value) -> anyhow::Result<ExtensionAuthentication> {
    let data = configmap.get("data").cloned().unwrap_or(Value::Null);
    let text = |key: &str| data.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let list = |key: &str| -> anyhow::Result<Vec<String>> {
        match text(key) {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(json).with_context(|| format!("{key} is not a JSON list of strings")),
        }
    };
    Ok(ExtensionAuthentication {
        client_ca: text("client-ca-file").map(str::to_owned),
        requestheader_client_ca: text("requestheader-client-ca-file").map(str::to_owned),
        requestheader_allowed_names: list("requestheader-allowed-names")?,
        requestheader_username_headers: list("requestheader-username-headers")?,
        requestheader_group_headers: list("requestheader-group-headers")?,
        requestheader_extra_headers_prefix: list("requestheader-extra-headers-prefix")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_configmap_of_kube_apiserver_is_read() {
        let cm = json!({"data": {
            "client-ca-file": "CLIENT CA",
            "requestheader-client-ca-file": "PROXY CA",
            "requestheader-allowed-names": "[\"front-proxy-client\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
            "requestheader-uid-headers": "[]"
        }});
        let read = parse(&cm).unwrap();
        assert_eq!(read.client_ca.as_deref(), Some("CLIENT CA"));
        assert_eq!(read.requestheader_client_ca.as_deref(), Some("PROXY CA"));
        assert_eq!(read.requestheader_allowed_names, ["front-proxy-client"]);
        assert_eq!(read.requestheader_extra_headers_prefix, ["X-Remote-Extra-"]);
        // Without a front proxy: nothing of it.
        let read = parse(&json!({"data": {"client-ca-file": "CA", "requestheader-allowed-names": ""}})).unwrap();
        assert_eq!(read.requestheader_client_ca, None);
        assert!(read.requestheader_allowed_names.is_empty());
        let err = parse(&json!({"data": {"requestheader-allowed-names": "front-proxy-client"}})).unwrap_err();
        assert!(err.to_string().contains("requestheader-allowed-names"), "{err}");
    }
}
