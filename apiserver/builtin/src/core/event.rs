//! The Event type's rules (core `v1`), as kube's `pkg/registry/core/event` and `ValidateEventCreate` have them for a
//! core request: an event without an `eventTime` (the old recorder's) names an object of its own namespace (or of
//! none, in `default`); one with an `eventTime` (the new recorder's) has its reporting controller and instance, an
//! action and a reason, within kube's lengths. Times are kept as kube writes them: `eventTime` and
//! `series.lastObservedTime` to the microsecond. Tables show kube's columns; field selectors kube's fields. An event
//! is deleted a time (`--event-ttl`) after it was last seen ([`last_seen`]).

use serde_json::{json, Value};

use super::super::{column, str_at};
use apimachinery::field_error::FieldError;
use apimachinery::scheme::Column;
use apimachinery::validation::is_qualified_name;

/// kube's limits.
const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn reference_schema(description: &str) -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "kind": s("Kind of the referent."),
            "namespace": s("Namespace of the referent."),
            "name": s("Name of the referent."),
            "uid": s("UID of the referent."),
            "apiVersion": s("API version of the referent."),
            "resourceVersion": s("Specific resourceVersion to which this reference is made, if any."),
            "fieldPath": s("If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.")
        },
        "x-kubernetes-map-type": "atomic"
    })
}

/// The schema of a core v1 Event.
pub fn schema() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    let time = |d: &str| json!({"type": "string", "format": "date-time", "description": d});
    json!({
        "type": "object",
        "description": "Event is a report of an event somewhere in the cluster.",
        "required": ["metadata", "involvedObject"],
        "properties": {
            "involvedObject": reference_schema("The object that this event is about."),
            "reason": s("This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
            "message": s("A human-readable description of the status of this operation."),
            "source": {
                "type": "object",
                "description": "The component reporting this event. Should be a short machine understandable string.",
                "properties": {
                    "component": s("Component from which the event is generated."),
                    "host": s("Node name on which the event is generated.")
                }
            },
            "firstTimestamp": time("The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
            "lastTimestamp": time("The time at which the most recent occurrence of this event was recorded."),
            "count": {"type": "integer", "format": "int32", "description": "The number of times this event has occurred."},
            "type": s("Type of this event (Normal, Warning), new types could be added in the future"),
            "eventTime": time("Time when this Event was first observed."),
            "series": {
                "type": "object",
                "description": "Data about the Event series this event represents or nil if it's a singleton Event.",
                "properties": {
                    "count": {"type": "integer", "format": "int32", "description": "Number of occurrences in this series up to the last heartbeat time"},
                    "lastObservedTime": time("Time of the last occurrence observed")
                }
            },
            "action": s("What action was taken/failed regarding to the Regarding object."),
            "related": reference_schema("Optional secondary object for more complex actions."),
            "reportingComponent": s("Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`."),
            "reportingInstance": s("ID of the controller instance, e.g. `kubelet-xyzf`.")
        }
    })
}

/// kube's columns (`kubectl get events`; those of priority 1 with `-o wide`). The times are shown as ages.
pub fn columns() -> Vec<Column> {
    let age = |name: &str, description: &str, priority: i32| Column {
        shows_age: true,
        ..column(name, "string", "", description, priority)
    };
    vec![
        age("Last Seen", "The time at which the most recent occurrence of this event was recorded.", 0),
        column("Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future", 0),
        column("Reason", "string", "", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", 0),
        column("Object", "string", "", "The object that this event is about.", 0),
        column("Subobject", "string", "", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.", 1),
        column("Source", "string", "", "The component reporting this event. Should be a short machine understandable string.", 1),
        column("Message", "string", "", "A human-readable description of the status of this operation.", 0),
        age("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1),
        column("Count", "string", "", "The number of times this event has occurred.", 1),
        column("Name", "string", "name", "Name must be unique within a namespace.", 1),
    ]
}

fn is_set(event: &Value, pointer: &str) -> bool {
    !str_at(event, pointer).is_empty()
}

/// kube's `legacyValidateEvent` for a core v1 request.
pub fn validate(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = str_at(event, "/metadata/namespace");
    let involved = str_at(event, "/involvedObject/namespace");
    let mismatch = || FieldError::invalid("involvedObject.namespace", involved, "does not match event.namespace");
    if !is_set(event, "/eventTime") {
        let matches = if involved.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved
        };
        if !matches {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    let controller = str_at(event, "/reportingComponent");
    if controller.is_empty() {
        errors.push(FieldError::required("reportingComponent", ""));
    }
    for problem in is_qualified_name(controller) {
        errors.push(FieldError::invalid("reportingComponent", controller, &problem));
    }
    for (field, limit) in [
        ("reportingInstance", REPORTING_INSTANCE_LIMIT),
        ("action", ACTION_LIMIT),
        ("reason", REASON_LIMIT),
    ] {
        let value = str_at(event, &format!("/{field}"));
        if value.is_empty() {
            errors.push(FieldError::required(field, ""));
        }
        if value.len() > limit {
            errors.push(FieldError::invalid(
                field,
                "",
                &format!("can have at most {limit} characters"),
            ));
        }
    }
    if str_at(event, "/message").len() > NOTE_LIMIT {
        errors.push(FieldError::invalid(
            "message",
            "",
            &format!("can have at most {NOTE_LIMIT} characters"),
        ));
    }
    errors
}

/// An event as stored: its MicroTimes to the microsecond.
pub fn prepare(event: &Value) -> Value {
    let mut event = event.clone();
    let micro = |v: Option<&Value>| v.and_then(Value::as_str).and_then(apimachinery::object::to_micro_time);
    if let Some(t) = micro(event.get("eventTime")) {
        event["eventTime"] = json!(t);
    }
    if let Some(t) = micro(event.pointer("/series/lastObservedTime")) {
        event["series"]["lastObservedTime"] = json!(t);
    }
    event
}

/// The fields a field selector may name (kube's `ToSelectableFields`, besides the metadata's).
pub fn attrs(event: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
        "fieldPath",
    ]
    .iter()
    .map(|f| {
        (
            format!("involvedObject.{f}"),
            str_at(event, &format!("/involvedObject/{f}")).to_owned(),
        )
    })
    .collect();
    let component = str_at(event, "/source/component");
    let reporting = str_at(event, "/reportingComponent");
    out.extend([
        ("reason".to_owned(), str_at(event, "/reason").to_owned()),
        ("reportingComponent".to_owned(), reporting.to_owned()),
        (
            "source".to_owned(),
            if component.is_empty() { reporting } else { component }.to_owned(),
        ),
        ("type".to_owned(), str_at(event, "/type").to_owned()),
    ]);
    out
}

/// The row's cells, as kube's `printEvent` (server-side, wide): times as timestamps, which the table shows as ages.
pub fn cells(event: &Value) -> Vec<Value> {
    let first = [str_at(event, "/firstTimestamp"), str_at(event, "/eventTime")]
        .into_iter()
        .find(|t| !t.is_empty())
        .unwrap_or("");
    let mut last = match str_at(event, "/lastTimestamp") {
        "" => first,
        t => t,
    };
    let mut count = event.get("count").and_then(Value::as_i64).unwrap_or(0);
    if event.get("series").is_some_and(Value::is_object) {
        last = str_at(event, "/series/lastObservedTime");
        count = event.pointer("/series/count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let (kind, name) = (
        str_at(event, "/involvedObject/kind"),
        str_at(event, "/involvedObject/name"),
    );
    let target = if name.is_empty() {
        kind.to_lowercase()
    } else {
        format!("{}/{name}", kind.to_lowercase())
    };
    vec![
        json!(last),
        json!(str_at(event, "/type")),
        json!(str_at(event, "/reason")),
        json!(target),
        json!(str_at(event, "/involvedObject/fieldPath")),
        json!(source(event)),
        json!(str_at(event, "/message").trim()),
        json!(first),
        json!(count),
        json!(str_at(event, "/metadata/name")),
    ]
}

/// kube's `formatEventSource`: the component (or the reporting controller), and the host (or the instance).
fn source(event: &Value) -> String {
    let component = match str_at(event, "/source/component") {
        "" => str_at(event, "/reportingComponent"),
        c => c,
    };
    let host = match str_at(event, "/source/host") {
        "" => str_at(event, "/reportingInstance"),
        h => h,
    };
    if host.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {host}")
    }
}

/// When the event was last seen (RFC 3339): the latest of its creation, its times and its series' last
/// observation. Its time to live counts from there.
pub fn last_seen(event: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    [
        "/metadata/creationTimestamp",
        "/firstTimestamp",
        "/lastTimestamp",
        "/eventTime",
        "/series/lastObservedTime",
    ]
    .iter()
    .filter_map(|p| chrono::DateTime::parse_from_rfc3339(str_at(event, p)).ok())
    .map(|t| t.with_timezone(&chrono::Utc))
    .max()
}

/// Whether the event's time to live has passed since it was last seen, at `now`.
pub fn expired(event: &Value, ttl: std::time::Duration, now: chrono::DateTime<chrono::Utc>) -> bool {
    let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX);
    last_seen(event).is_some_and(|seen| now.signed_duration_since(seen) > ttl)
}

/// The time now, for [`expired`].
pub fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(event: Value) -> Vec<String> {
        validate(&event).into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn events_are_validated_as_kube_validates_core_requests() {
        // The old recorder's: the involved object's namespace is the event's.
        let old = json!({"metadata": {"name": "a", "namespace": "team"},
            "involvedObject": {"kind": "Flunder", "name": "f", "namespace": "team"}, "reason": "Made"});
        assert!(validate(&old).is_empty());
        let mut elsewhere = old.clone();
        elsewhere["involvedObject"]["namespace"] = json!("other");
        assert_eq!(fields(elsewhere), ["involvedObject.namespace"]);
        let cluster =
            json!({"metadata": {"name": "a", "namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n"}});
        assert!(validate(&cluster).is_empty());
        // The new recorder's: its reporting fields are required.
        let new = json!({"metadata": {"name": "a", "namespace": "team"}, "eventTime": "2026-12-07T10:00:00.000000Z",
            "involvedObject": {"kind": "Flunder", "name": "f", "namespace": "team"}, "reason": "Made", "action": "Create",
            "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1"});
        assert!(validate(&new).is_empty());
        let bare = json!({"metadata": {"name": "a", "namespace": "team"}, "eventTime": "2026-12-07T10:00:00Z",
            "involvedObject": {"namespace": "team"}});
        // An empty reporting component is also no qualified name (kube's two messages for it).
        let mut named = fields(bare);
        named.dedup();
        assert_eq!(named, ["reportingComponent", "reportingInstance", "action", "reason"]);
        let mut long = new.clone();
        long["message"] = json!("x".repeat(1025));
        long["reason"] = json!("r".repeat(129));
        let errors = validate(&long);
        assert_eq!(
            errors[0].message,
            "Invalid value: \"\": can have at most 128 characters"
        );
        assert_eq!(errors.len(), 2);
    }

    #[test]
    fn events_show_kube_cells_and_selectable_fields() {
        let event = json!({"metadata": {"name": "f.1", "namespace": "team", "creationTimestamp": "2026-12-07T10:00:00Z"},
            "involvedObject": {"kind": "Flunder", "name": "f", "namespace": "team"}, "reason": "Made", "type": "Normal",
            "message": " made \n", "source": {"component": "ctl"}, "firstTimestamp": "2026-12-07T10:00:00Z",
            "lastTimestamp": "2026-12-07T10:05:00Z", "count": 3});
        let row = cells(&event);
        assert_eq!(row[0], "2026-12-07T10:05:00Z");
        assert_eq!(row[3], "flunder/f");
        assert_eq!(row[5], "ctl");
        assert_eq!(row[6], "made");
        assert_eq!(row[8], 3);
        assert_eq!(row.len(), columns().len());
        let attrs = attrs(&event);
        assert!(attrs.contains(&("involvedObject.name".into(), "f".into())));
        assert!(attrs.contains(&("source".into(), "ctl".into())));
        assert_eq!(
            last_seen(&event).map(|t| t.to_rfc3339()),
            Some("2026-12-07T10:05:00+00:00".to_owned())
        );
        let at = |t: &str| {
            chrono::DateTime::parse_from_rfc3339(t)
                .unwrap()
                .with_timezone(&chrono::Utc)
        };
        let hour = std::time::Duration::from_secs(3600);
        assert!(!expired(&event, hour, at("2026-12-07T11:05:00Z")));
        assert!(expired(&event, hour, at("2026-12-07T11:05:01Z")));
        let series = json!({"eventTime": "2026-12-07T10:00:00.5Z", "series": {"count": 4, "lastObservedTime": "2026-12-07T11:00:00Z"}});
        assert_eq!(cells(&series)[8], 4);
        assert_eq!(
            prepare(&series)["series"]["lastObservedTime"],
            "2026-12-07T11:00:00.000000Z"
        );
        assert_eq!(prepare(&series)["eventTime"], "2026-12-07T10:00:00.500000Z");
    }
}
