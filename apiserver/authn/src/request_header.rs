//! Front-proxy authentication (kube's request-header authenticator): a proxy that presents a client certificate
//! signed by `--requestheader-client-ca-file`, with a common name in `--requestheader-allowed-names` (any, when the
//! list is empty), names the user in headers: `X-Remote-User`, `X-Remote-Group` (repeated), `X-Remote-Extra-<key>`.
//! The headers of any other connection are ignored.

use std::collections::BTreeMap;

use hyper::HeaderMap;

use super::x509::PeerCertificate;
use super::UserInfo;

/// The request-header settings.
#[derive(Clone, Debug)]
pub struct RequestHeaderConfig {
    /// Common names a proxy's certificate may have; empty allows any certificate from the CA.
    pub allowed_names: Vec<String>,
    /// Headers naming the user, the first present wins.
    pub username_headers: Vec<String>,
    /// Headers naming groups (each may repeat).
    pub group_headers: Vec<String>,
    /// Prefixes of headers carrying extra attributes (the rest of the name is the key).
    pub extra_headers_prefixes: Vec<String>,
}

impl Default for RequestHeaderConfig {
    fn default() -> Self {
        RequestHeaderConfig {
            allowed_names: Vec::new(),
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefixes: vec!["X-Remote-Extra-".into()],
        }
    }
}

impl RequestHeaderConfig {
    /// The user the headers name, when the connection is a trusted proxy's: `Ok(None)` when it is not one (or
    /// names no user), an error when a proxy certificate has a common name that is not allowed.
    pub fn authenticate(&self, peer: &PeerCertificate, headers: &HeaderMap) -> Result<Option<UserInfo>, String> {
        let Some(proxy) = &peer.proxy_name else {
            return Ok(None);
        };
        if !self.allowed_names.is_empty() && !self.allowed_names.iter().any(|n| n == proxy) {
            return Err(format!(
                "the front proxy's certificate has common name {proxy:?}, which is not one of {:?}",
                self.allowed_names
            ));
        }
        let Some(name) = self
            .username_headers
            .iter()
            .find_map(|h| headers.get(h.as_str()).and_then(|v| v.to_str().ok()))
            .map(str::trim)
            .filter(|n| !n.is_empty())
        else {
            return Ok(None);
        };
        let groups = self
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let lower = header.as_str();
            for prefix in &self.extra_headers_prefixes {
                if lower.len() > prefix.len() && lower[..prefix.len()].eq_ignore_ascii_case(prefix) {
                    // Keys are lower-case and may be percent-encoded, as kube's.
                    let key = percent_encoding::percent_decode_str(&lower[prefix.len()..])
                        .decode_utf8_lossy()
                        .to_lowercase();
                    if let Ok(v) = value.to_str() {
                        extra.entry(key).or_default().push(v.to_owned());
                    }
                }
            }
        }
        Ok(Some(UserInfo {
            name: name.to_owned(),
            uid: String::new(),
            groups,
            extra,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    fn proxy(name: &str) -> PeerCertificate {
        PeerCertificate {
            user: None,
            proxy_name: Some(name.into()),
        }
    }

    #[test]
    fn a_trusted_proxy_names_user_groups_and_extra() {
        let config = RequestHeaderConfig {
            allowed_names: vec!["front-proxy".into()],
            ..RequestHeaderConfig::default()
        };
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "dev"),
            ("X-Remote-Group", "ops"),
            ("X-Remote-Extra-Scopes", "a"),
            ("X-Remote-Extra-Acme.com%2Fproject", "p1"),
        ]);
        let user = config.authenticate(&proxy("front-proxy"), &h).unwrap().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", "ops"]);
        assert_eq!(user.extra["scopes"], ["a"]);
        assert_eq!(user.extra["acme.com/project"], ["p1"]);
    }

    #[test]
    fn headers_over_other_connections_are_ignored_and_unlisted_proxies_refused() {
        let config = RequestHeaderConfig {
            allowed_names: vec!["front-proxy".into()],
            ..RequestHeaderConfig::default()
        };
        let h = headers(&[("X-Remote-User", "mallory"), ("X-Remote-Group", "system:masters")]);
        assert_eq!(config.authenticate(&PeerCertificate::default(), &h), Ok(None));
        let client = PeerCertificate {
            user: Some(Ok(UserInfo::new("bob", ["x"]))),
            proxy_name: None,
        };
        assert_eq!(config.authenticate(&client, &h), Ok(None));
        assert!(config.authenticate(&proxy("other"), &h).is_err());
        let any = RequestHeaderConfig::default();
        assert_eq!(any.authenticate(&proxy("other"), &h).unwrap().unwrap().name, "mallory");
        assert_eq!(any.authenticate(&proxy("other"), &HeaderMap::new()), Ok(None));
    }
}
