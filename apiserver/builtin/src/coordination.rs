//! `coordination.k8s.io/v1` Lease (kube's `pkg/registry/coordination/lease`): what client-go's leader election and
//! controller-runtime's managers hold and renew. A lease's `spec` is free but for kube's `ValidateLeaseSpec`: a
//! positive duration, a transition count of at least 0, a known or qualified `strategy`, and a `preferredHolder` only
//! with a strategy. `strategy` and `preferredHolder` are dropped, as kube drops them while its
//! CoordinatedLeaderElection feature is off (the 1.37 default). Times are kept as `MicroTime`s, to the microsecond,
//! which Go clients need to read them. A PUT may create a lease. Tables show the holder.

use serde_json::{json, Value};

use super::{age_column, column, name_column, resource, str_at};
use apimachinery::field_error::FieldError;
use apimachinery::plugin::{PluginError, Validation};
use apimachinery::scheme::{Exports, GroupInfo};
use apimachinery::validation::is_qualified_name;
use rest::plugin::Plugin;
use rest::strategy::{creation_timestamp, Strategy};

/// The group.
pub const GROUP: &str = "coordination.k8s.io";
/// The resource.
pub const LEASES: &str = "leases";
/// The strategies kube defines (`CoordinatedLeaseStrategy`).
const STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

fn lease_schema() -> Value {
    let micro_time = |description: &str| json!({"type": "string", "format": "date-time", "description": description});
    json!({
        "type": "object",
        "description": "Lease defines a lease concept.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "spec contains the specification of the Lease.",
                "properties": {
                    "holderIdentity": {"type": "string", "description": "holderIdentity contains the identity of the holder of a current lease."},
                    "leaseDurationSeconds": {"type": "integer", "format": "int32", "description": "leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it."},
                    "acquireTime": micro_time("acquireTime is a time when the current lease was acquired."),
                    "renewTime": micro_time("renewTime is a time when the current holder of a lease has last updated the lease."),
                    "leaseTransitions": {"type": "integer", "format": "int32", "description": "leaseTransitions is the number of transitions of a lease between holders."},
                    "strategy": {"type": "string", "description": "Strategy indicates the strategy for picking the leader for coordinated leader election."},
                    "preferredHolder": {"type": "string", "description": "PreferredHolder signals to a lease holder that the lease has a more optimal holder and should be given up."}
                }
            }
        }
    })
}

/// The group as a built-in plugin: Leases.
pub fn plugin() -> Plugin {
    let group = GroupInfo {
        group: GROUP.into(),
        resources: apimachinery::scheme::shared(vec![resource("Lease", LEASES, &[], true, "v1", lease_schema())]),
        reads: Vec::new(),
    };
    let exports = Exports {
        table: true,
        ..super::writable()
    };
    Plugin::native(
        "builtin:coordination",
        group,
        exports,
        vec![(
            LEASES.into(),
            vec![
                name_column(),
                column(
                    "Holder",
                    "string",
                    "",
                    "holderIdentity contains the identity of the holder of a current lease.",
                    0,
                ),
                age_column(),
            ],
        )],
        Vec::new(),
        std::sync::Arc::new(LeaseStrategy),
    )
}

/// kube's `ValidateLeaseSpec`.
pub fn validate(lease: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = lease.get("spec").unwrap_or(&Value::Null);
    if let Some(duration) = spec.get("leaseDurationSeconds").filter(|v| !v.is_null()) {
        if duration.as_i64().is_some_and(|d| d <= 0) {
            errors.push(FieldError::invalid_json(
                "spec.leaseDurationSeconds",
                duration,
                "must be greater than 0",
            ));
        }
    }
    if let Some(transitions) = spec.get("leaseTransitions").filter(|v| !v.is_null()) {
        if transitions.as_i64().is_some_and(|t| t < 0) {
            errors.push(FieldError::invalid_json(
                "spec.leaseTransitions",
                transitions,
                "must be greater than or equal to 0",
            ));
        }
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        // kube names the field twice here (`fldPath.Child("strategy")` of the strategy's own path).
        let field = "spec.strategy.strategy";
        if !strategy.contains('/') {
            if !STRATEGIES.contains(&strategy) {
                errors.push(FieldError::not_supported(field, strategy, &STRATEGIES));
            }
        } else {
            for problem in is_qualified_name(strategy) {
                errors.push(FieldError::invalid(field, strategy, &problem));
            }
        }
    }
    if !str_at(lease, "/spec/preferredHolder").is_empty() && strategy.is_none_or(str::is_empty) {
        errors.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    errors
}

/// A lease as stored: its times as MicroTimes, without the coordinated leader election's fields.
fn prepare(lease: &Value) -> Value {
    let mut lease = lease.clone();
    if let Some(spec) = lease.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("strategy");
        spec.remove("preferredHolder");
        for field in ["acquireTime", "renewTime"] {
            if let Some(t) = spec
                .get(field)
                .and_then(Value::as_str)
                .and_then(apimachinery::object::to_micro_time)
            {
                spec.insert(field.to_owned(), json!(t));
            }
        }
    }
    lease
}

struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn prepare_for_create(&self, _resource: &str, obj: &Value) -> Result<Value, PluginError> {
        Ok(prepare(obj))
    }

    fn prepare_for_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(prepare(obj))
    }

    /// kube's lease strategy: an update of a missing lease creates it.
    fn allow_create_on_update(&self, _resource: &str) -> Result<bool, PluginError> {
        Ok(true)
    }

    fn validate(&self, _resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        Ok(Validation::of_errors(validate(obj)))
    }

    fn validate_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
        Ok(Validation::of_errors(validate(obj)))
    }

    fn table_cells(&self, _resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        vec![json!(str_at(obj, "/spec/holderIdentity")), creation_timestamp(obj)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(lease: Value) -> Vec<String> {
        validate(&lease).into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn leases_are_validated_as_kube_does() {
        let held = json!({"spec": {"holderIdentity": "a_1", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-12-07T10:00:00.000000Z", "renewTime": "2026-12-07T10:00:10.123456Z"}});
        assert!(validate(&held).is_empty());
        assert!(validate(&json!({})).is_empty());
        assert_eq!(
            fields(json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}})),
            ["spec.leaseDurationSeconds", "spec.leaseTransitions"]
        );
        let errors = validate(&json!({"spec": {"leaseDurationSeconds": -5}}));
        assert_eq!(errors[0].message, "Invalid value: -5: must be greater than 0");
        assert_eq!(
            fields(json!({"spec": {"strategy": "Newest"}})),
            ["spec.strategy.strategy"]
        );
        assert!(validate(&json!({"spec": {"strategy": "example.com/mine", "preferredHolder": "b"}})).is_empty());
        assert_eq!(
            fields(json!({"spec": {"preferredHolder": "b"}})),
            ["spec.preferredHolder"]
        );
    }

    #[test]
    fn leases_are_stored_with_micro_times_and_without_the_coordinated_fields() {
        let lease = json!({"spec": {"holderIdentity": "a", "renewTime": "2026-12-07T10:00:10Z",
            "acquireTime": "2026-12-07T11:00:00.5+01:00", "strategy": "OldestEmulationVersion", "preferredHolder": "b"}});
        assert_eq!(
            prepare(&lease),
            json!({"spec": {"holderIdentity": "a", "renewTime": "2026-12-07T10:00:10.000000Z",
                "acquireTime": "2026-12-07T10:00:00.500000Z"}})
        );
        // What is no time is left as it is, for the schema to refuse.
        let bad = json!({"spec": {"renewTime": "yesterday"}});
        assert_eq!(prepare(&bad), bad);
    }
}
