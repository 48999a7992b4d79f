//! Audit annotations, as kube's `admission.Attributes.AddAnnotation`: what admission adds to the audit events of
//! the request it admits (a ValidatingAdmissionPolicy's `validation_failure` and `auditAnnotations`, a webhook's
//! `auditAnnotations`). The audit filter runs an audited request [`Annotations::scope`]d; [`annotate`] adds to the
//! request's annotations from anywhere in its task, and does nothing outside one (a request not audited). As kube's,
//! the first value of a key stays.

use std::sync::{Arc, Mutex, PoisonError};

tokio::task_local! {
    static CURRENT: Annotations;
}

/// The annotations of one request's audit events, in the order they were added.
#[derive(Clone, Debug, Default)]
pub struct Annotations(Arc<Mutex<Vec<(String, String)>>>);

impl Annotations {
    /// Runs `future` with these as the annotations [`annotate`] adds to.
    pub async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }

    /// The annotations added so far.
    pub fn list(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn add(&self, key: String, value: String) {
        let mut annotations = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !annotations.iter().any(|(k, _)| *k == key) {
            annotations.push((key, value));
        }
    }
}

/// Adds an annotation to the audit events of the request being served (kept only if its key is new).
pub fn annotate(key: impl Into<String>, value: impl Into<String>) {
    let _ = CURRENT.try_with(|a| a.add(key.into(), value.into()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn annotations_are_added_within_their_scope_only_and_the_first_value_stays() {
        annotate("outside", "lost");
        let annotations = Annotations::default();
        annotations
            .clone()
            .scope(async {
                annotate("a/key", "first");
                annotate("a/key", "second");
                annotate("b/key", "other");
            })
            .await;
        assert_eq!(
            annotations.list(),
            [("a/key".into(), "first".into()), ("b/key".into(), "other".into())]
        );
    }
}
