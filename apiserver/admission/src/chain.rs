//! The admission chain: its checks (kube's admission plugins, [`Check`]) in the order they were registered, run as
//! kube's `chainAdmissionHandler` runs its plugins: every mutating check in order ([`Chain::mutate`]), then every
//! validating check in order ([`Chain::validate`]).

use std::sync::Arc;

use serde_json::Value;

use crate::attributes::Attributes;
use apimachinery::status::ApiError;
use storage::BoxFuture;

/// What a check may do to a write before it is validated (kube's `Handles` of a `MutationInterface`), from least to
/// most: the chain asks each and keeps the most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutates {
    /// Nothing.
    No,
    /// Only the plugin serving the resource changes it, with its own mutating admission: its one-call create
    /// (`create-pipeline`) may run that admission inside the call.
    ByServingPlugin,
    /// Something else changes it (another plugin, a webhook): the create's steps are made one by one, so that the
    /// mutation sees the defaulted object before its preparation.
    Yes,
}

/// The object a mutating check made, and its warnings.
pub struct Mutated {
    /// The object after the mutation.
    pub object: Value,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// One check of the chain (kube's admission plugin): validating, and optionally mutating (kube's
/// `MutationInterface`).
pub trait Check: Send + Sync {
    /// Its name (kube's admission plugin name where it is one of kube's), as the chain lists it.
    fn name(&self) -> &'static str;

    /// Allows the write, with warnings for the client, or refuses it with the error to answer.
    fn validate<'a>(&'a self, attributes: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>>;

    /// Whether [`Check::validate`] also runs before the chain's first mutation, when any applies (as kube's
    /// NamespaceLifecycle, a mutating plugin too, is the first of the mutating ones); no by default.
    fn precedes_mutation(&self) -> bool {
        false
    }

    /// What [`Check::mutate`] may do to this write; nothing by default.
    fn mutates<'a>(&'a self, _attributes: &'a Attributes<'a>) -> BoxFuture<'a, Mutates> {
        Box::pin(async { Mutates::No })
    }

    /// The write's object (`attributes.object`) after this check's mutation, or `None` when it left it as it was.
    /// The chain keeps what it returns: what of the object the check may not change (its identity, the host's
    /// metadata) the check keeps itself.
    fn mutate<'a>(&'a self, _attributes: &'a Attributes<'a>) -> BoxFuture<'a, Result<Option<Mutated>, ApiError>> {
        Box::pin(async { Ok(None) })
    }
}

/// The checks every write passes, in the order they were registered (kube's admission chain).
pub struct Chain {
    checks: Vec<Arc<dyn Check>>,
}

impl Chain {
    /// The chain of `checks`, run in this order.
    pub fn new(checks: Vec<Arc<dyn Check>>) -> Chain {
        Chain { checks }
    }

    /// The names of its checks, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.checks.iter().map(|c| c.name()).collect()
    }

    /// What the chain may do to this write before it is validated: the most any check may.
    pub async fn mutates(&self, attributes: Attributes<'_>) -> Mutates {
        let mut most = Mutates::No;
        for check in &self.checks {
            most = most.max(check.mutates(&attributes).await);
            if most == Mutates::Yes {
                break;
            }
        }
        most
    }

    /// Runs every mutating check that applies on `object`, in order, and returns the object they made; their
    /// warnings are added to `warnings`. Before the first, the checks that precede mutation validate the write.
    pub async fn mutate(
        &self,
        attributes: Attributes<'_>,
        object: Value,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let span = tracing::info_span!(target: component_base::trace::TARGET, "admission", phase = "mutating");
        tracing::Instrument::instrument(self.mutate_in_order(attributes, object, warnings), span).await
    }

    async fn mutate_in_order(
        &self,
        attributes: Attributes<'_>,
        mut object: Value,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let mut preceded = false;
        let mut name = apimachinery::object::name(&object).to_owned();
        for check in &self.checks {
            let current = attributes.with_object(&name, &object);
            if check.mutates(&current).await == Mutates::No {
                continue;
            }
            if !std::mem::replace(&mut preceded, true) {
                self.precede_mutation(current).await?;
            }
            if let Some(mutated) = check.mutate(&current).await? {
                warnings.extend(mutated.warnings);
                object = mutated.object;
                name = apimachinery::object::name(&object).to_owned();
            }
        }
        Ok(object)
    }

    /// Runs the checks that precede mutation on the write (as [`Chain::mutate`] does before the first mutation).
    /// Their warnings are not kept: the validating phase gives them.
    pub async fn precede_mutation(&self, attributes: Attributes<'_>) -> Result<(), ApiError> {
        for first in self.checks.iter().filter(|c| c.precedes_mutation()) {
            first.validate(&attributes).await?;
        }
        Ok(())
    }

    /// Runs every validating check on the write, in order: the first refusal is the answer. Their warnings are
    /// added to `warnings`.
    pub async fn validate(&self, attributes: Attributes<'_>, warnings: &mut Vec<String>) -> Result<(), ApiError> {
        let span = tracing::info_span!(target: component_base::trace::TARGET, "admission", phase = "validating");
        let checked = async {
            for check in &self.checks {
                warnings.extend(check.validate(&attributes).await?);
            }
            Ok(())
        };
        tracing::Instrument::instrument(checked, span).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use apimachinery::plugin::{AdmissionRequest, Operation};
    use authn::UserInfo;

    /// A check that records its calls in a shared log, refuses when told to, and may mutate (adding a label).
    struct Recording {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        refuses: bool,
        precedes: bool,
        mutates: Mutates,
    }

    impl Recording {
        fn new(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Recording {
            Recording {
                name,
                log: log.clone(),
                refuses: false,
                precedes: false,
                mutates: Mutates::No,
            }
        }

        fn note(&self, what: &str) {
            self.log.lock().unwrap().push(format!("{} {what}", self.name));
        }
    }

    impl Check for Recording {
        fn name(&self) -> &'static str {
            self.name
        }

        fn validate<'a>(&'a self, _: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
            Box::pin(async move {
                self.note("validates");
                if self.refuses {
                    return Err(ApiError::forbidden("", "namespaces", "n", self.name));
                }
                Ok(vec![format!("from {}", self.name)])
            })
        }

        fn precedes_mutation(&self) -> bool {
            self.precedes
        }

        fn mutates<'a>(&'a self, _: &'a Attributes<'a>) -> BoxFuture<'a, Mutates> {
            Box::pin(async move { self.mutates })
        }

        fn mutate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Option<Mutated>, ApiError>> {
            Box::pin(async move {
                self.note("mutates");
                let mut object = a.object.cloned().unwrap_or_default();
                object["metadata"]["labels"][self.name] = json!("yes");
                Ok(Some(Mutated {
                    object,
                    warnings: vec![format!("mutated by {}", self.name)],
                }))
            })
        }
    }

    /// Runs `f` with the attributes of a create of a namespace named `n` by `alice`.
    async fn with_attributes<T>(f: impl AsyncFnOnce(Attributes<'_>) -> T) -> T {
        let served = builtin::plugins();
        let plugin = served
            .iter()
            .find(|p| p.group.group.is_empty())
            .expect("the core group");
        let info = plugin.resource("namespaces").expect("namespaces");
        let user = UserInfo::new("alice", Vec::<String>::new());
        let write = AdmissionRequest {
            operation: Operation::Create,
            group: "",
            version: "v1",
            resource: "namespaces",
            subresource: "",
            namespace: None,
            name: "n",
            object: None,
            old: None,
            dry_run: false,
            user: &user,
        };
        f(Attributes::new(write, &user, info, plugin, &served)).await
    }

    fn log_of(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    #[tokio::test]
    async fn validation_runs_every_check_in_order_and_stops_at_the_first_refusal() {
        let log = Arc::default();
        let chain = Chain::new(vec![
            Arc::new(Recording::new("first", &log)),
            Arc::new(Recording::new("second", &log)),
        ]);
        let mut warnings = Vec::new();
        with_attributes(async |a| chain.validate(a, &mut warnings).await)
            .await
            .expect("allowed");
        assert_eq!(log_of(&log), ["first validates", "second validates"]);
        assert_eq!(warnings, ["from first", "from second"]);

        let refusing = Chain::new(vec![
            Arc::new(Recording {
                refuses: true,
                ..Recording::new("first", &log)
            }),
            Arc::new(Recording::new("second", &log)),
        ]);
        let e = with_attributes(async |a| refusing.validate(a, &mut Vec::new()).await)
            .await
            .expect_err("refused");
        assert_eq!((e.code, e.message.ends_with("first")), (403, true), "{e:?}");
        assert_eq!(log_of(&log), ["first validates"], "no check runs after a refusal");
    }

    #[tokio::test]
    async fn mutation_runs_the_mutating_checks_in_order_after_those_that_precede_it() {
        let log = Arc::default();
        let lifecycle = || Recording {
            precedes: true,
            ..Recording::new("lifecycle", &log)
        };
        let chain = Chain::new(vec![
            Arc::new(lifecycle()),
            Arc::new(Recording::new("validating", &log)),
            Arc::new(Recording {
                mutates: Mutates::ByServingPlugin,
                ..Recording::new("plugins", &log)
            }),
            Arc::new(Recording {
                mutates: Mutates::Yes,
                ..Recording::new("webhooks", &log)
            }),
        ]);
        let mut warnings = Vec::new();
        let (mutates, object) = with_attributes(async |a| {
            let object = chain.mutate(a, json!({"metadata": {"name": "n"}}), &mut warnings).await;
            (chain.mutates(a).await, object)
        })
        .await;
        let object = object.expect("mutated");
        assert_eq!(
            log_of(&log),
            ["lifecycle validates", "plugins mutates", "webhooks mutates"],
            "the check that precedes mutation validates once, before the first; a validating check does not run"
        );
        assert_eq!(
            object["metadata"]["labels"],
            json!({"plugins": "yes", "webhooks": "yes"})
        );
        assert_eq!(warnings, ["mutated by plugins", "mutated by webhooks"]);
        assert_eq!(mutates, Mutates::Yes, "the most any check may");

        let quiet = Chain::new(vec![
            Arc::new(lifecycle()),
            Arc::new(Recording::new("validating", &log)),
        ]);
        let (mutates, object) = with_attributes(async |a| {
            let object = quiet
                .mutate(a, json!({"metadata": {"name": "n"}}), &mut Vec::new())
                .await;
            (quiet.mutates(a).await, object)
        })
        .await;
        assert_eq!(object.expect("unchanged"), json!({"metadata": {"name": "n"}}));
        assert_eq!(mutates, Mutates::No);
        assert!(log_of(&log).is_empty(), "nothing runs when nothing mutates");
    }
}
