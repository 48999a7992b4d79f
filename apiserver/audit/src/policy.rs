//! The audit policy (`audit.k8s.io/v1` Policy): rules matched in order, the first match giving a request's level
//! and the stages it omits.

use anyhow::{bail, Context as _};
use serde_json::Value;

use authn::UserInfo;
use endpoints::request_info::RequestInfo;

/// How much of a request is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing.
    None,
    /// Metadata: user, verb, resource, code, timestamps.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, request and response bodies.
    RequestResponse,
}

impl Level {
    fn parse(s: &str) -> anyhow::Result<Level> {
        Ok(match s {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            other => bail!("unknown level {other:?}: one of None, Metadata, Request, RequestResponse"),
        })
    }

    /// The level's name in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// The stages of a request's events.
pub const STAGES: [&str; 4] = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"];

/// A group's resources a rule matches.
#[derive(Clone, Debug, Default)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Clone, Debug)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: Option<Vec<String>>,
}

/// A parsed policy.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<String>,
}

fn strings(v: Option<&Value>, what: &str) -> anyhow::Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .with_context(|| format!("{what} must be strings"))
            })
            .collect(),
        Some(_) => bail!("{what} must be a list"),
    }
}

fn stages(v: Option<&Value>, what: &str) -> anyhow::Result<Vec<String>> {
    let list = strings(v, what)?;
    if let Some(bad) = list.iter().find(|s| !STAGES.contains(&s.as_str())) {
        bail!("{what}: unknown stage {bad:?}");
    }
    Ok(list)
}

impl Policy {
    /// Parses a policy file's YAML or JSON.
    pub fn parse(text: &str) -> anyhow::Result<Policy> {
        let doc: Value = yaml_serde::from_str(text).context("the audit policy is not valid YAML")?;
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if kind != "Policy" || !api_version.starts_with("audit.k8s.io/") {
            bail!("the audit policy must be kind Policy of audit.k8s.io/v1 (found {api_version:?} {kind:?})");
        }
        let omit_stages = stages(doc.get("omitStages"), "omitStages")?;
        let mut rules = Vec::new();
        for (i, r) in doc
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("rules[{i}]");
            let level = Level::parse(r.get("level").and_then(Value::as_str).unwrap_or(""))
                .with_context(|| format!("{at}.level"))?;
            let mut resources = Vec::new();
            for (j, g) in r
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                resources.push(GroupResources {
                    group: g.get("group").and_then(Value::as_str).unwrap_or("").to_owned(),
                    resources: strings(g.get("resources"), &format!("{at}.resources[{j}].resources"))?,
                    resource_names: strings(g.get("resourceNames"), &format!("{at}.resources[{j}].resourceNames"))?,
                });
            }
            let rule = Rule {
                level,
                users: strings(r.get("users"), &format!("{at}.users"))?,
                user_groups: strings(r.get("userGroups"), &format!("{at}.userGroups"))?,
                verbs: strings(r.get("verbs"), &format!("{at}.verbs"))?,
                resources,
                namespaces: strings(r.get("namespaces"), &format!("{at}.namespaces"))?,
                non_resource_urls: strings(r.get("nonResourceURLs"), &format!("{at}.nonResourceURLs"))?,
                omit_stages: r
                    .get("omitStages")
                    .map(|s| stages(Some(s), &format!("{at}.omitStages")))
                    .transpose()?,
            };
            if !rule.non_resource_urls.is_empty() && (!rule.resources.is_empty() || !rule.namespaces.is_empty()) {
                bail!("{at}: rules cannot apply to both regular resources and non-resource URLs");
            }
            rules.push(rule);
        }
        Ok(Policy { rules, omit_stages })
    }

    /// The level of a request by `user` and the stages it omits (kube's `policy.Checker`); `Level::None` when no
    /// rule matches.
    pub fn evaluate(&self, user: &UserInfo, info: &RequestInfo) -> (Level, Vec<String>) {
        for rule in &self.rules {
            if rule.matches(user, info) {
                let mut omit = self.omit_stages.clone();
                omit.extend(rule.omit_stages.clone().unwrap_or_default());
                return (rule.level, omit);
            }
        }
        (Level::None, Vec::new())
    }
}

impl Rule {
    fn matches(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !self.user_groups.iter().any(|g| user.in_group(g)) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == info.verb) {
            return false;
        }
        if !info.resource_request {
            // A rule naming resources or namespaces never matches a non-resource request.
            if !self.resources.is_empty() || !self.namespaces.is_empty() {
                return false;
            }
            if self.non_resource_urls.is_empty() {
                return true;
            }
            return self
                .non_resource_urls
                .iter()
                .any(|u| u == "*" || *u == info.path || u.strip_suffix('*').is_some_and(|p| info.path.starts_with(p)));
        }
        if !self.non_resource_urls.is_empty() {
            return false;
        }
        let namespace = info.namespace.as_deref().unwrap_or("");
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = match &info.subresource {
            Some(sub) => format!("{}/{sub}", info.resource),
            None => info.resource.clone(),
        };
        let name = info.name.as_deref().unwrap_or("");
        self.resources.iter().any(|g| {
            g.group == info.group
                && (g.resources.is_empty()
                    || g.resources.iter().any(|r| {
                        *r == "*"
                            || *r == combined
                            || (r.starts_with("*/") && info.subresource.as_deref() == r.strip_prefix("*/"))
                            || (r.ends_with("/*") && r.strip_suffix("/*") == Some(info.resource.as_str()))
                    }))
                && (g.resource_names.is_empty() || g.resource_names.iter().any(|n| n == name))
        })
    }
}

#[cfg(test)]
mod tests {
    use hyper::Method;

    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [quiet]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: wardle.example.com
    resources: [fischers]
- level: Request
  verbs: [create]
  namespaces: [a]
- level: Metadata
  omitStages: [ResponseStarted]
"#;

    fn info(method: Method, path: &str) -> RequestInfo {
        RequestInfo::resolve(&method, path, &std::collections::HashMap::new())
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).unwrap();
        let bob = UserInfo::new("bob", ["dev"]);
        let quiet = UserInfo::new("quiet", ["dev"]);
        let flunders = info(Method::POST, "/apis/wardle.example.com/v1beta1/namespaces/a/flunders");
        assert_eq!(policy.evaluate(&quiet, &flunders).0, Level::None);
        assert_eq!(policy.evaluate(&bob, &flunders).0, Level::Request);
        let (level, omit) = policy.evaluate(&bob, &info(Method::GET, "/apis/wardle.example.com/v1beta1/fischers/f"));
        assert_eq!(
            (level, omit),
            (Level::RequestResponse, vec!["RequestReceived".to_owned()])
        );
        let (level, omit) = policy.evaluate(
            &bob,
            &info(Method::GET, "/apis/wardle.example.com/v1beta1/namespaces/b/flunders"),
        );
        assert_eq!(level, Level::Metadata);
        assert_eq!(omit, ["RequestReceived", "ResponseStarted"]);
        assert_eq!(
            policy.evaluate(&bob, &info(Method::GET, "/healthz/ping")).0,
            Level::None
        );
        assert_eq!(policy.evaluate(&bob, &info(Method::GET, "/apis")).0, Level::Metadata);
    }

    #[test]
    fn bad_policies_say_what_is_wrong() {
        let err = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n").unwrap_err();
        assert!(
            format!("{err:#}").contains("rules[0].level: unknown level \"Loud\""),
            "{err:#}"
        );
        let err = Policy::parse("kind: Other").unwrap_err();
        assert!(format!("{err:#}").contains("kind Policy"), "{err:#}");
        let err = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Later]\n").unwrap_err();
        assert!(format!("{err:#}").contains("unknown stage"), "{err:#}");
    }
}
