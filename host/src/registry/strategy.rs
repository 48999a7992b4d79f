//! JSON-level wrappers around a plugin's strategy calls: objects go in as `serde_json::Value`, are serialized for the
//! plugin, and what the plugin returns is parsed back, with garbage reported as a plugin failure. A built-in type's
//! native strategy ([`crate::plugins::native::NativeStrategy`]) is called directly instead.

use serde_json::Value;

use crate::plugins::contract::{admission_request_to_wit, validation_from_wit};
use crate::plugins::plugin::{Plugin, PluginError};
use crate::plugins::types::{AdmissionRequest, Validation};

fn to_text(v: &Value) -> String {
    v.to_string()
}

fn parse(plugin: &Plugin, call: &'static str, text: &str) -> Result<Value, PluginError> {
    parse_object(plugin.name(), call, text)
}

/// The object a plugin's call returned as text (`default`, `prepare-for-*`, `convert`, `admit`): a JSON object, or
/// a plugin failure.
pub fn parse_object(plugin: &str, call: &'static str, text: &str) -> Result<Value, PluginError> {
    let value: Value = serde_json::from_str(text).map_err(|e| PluginError::Failed {
        plugin: plugin.to_string(),
        call,
        message: format!("the plugin returned invalid JSON: {e}"),
    })?;
    if !value.is_object() {
        return Err(PluginError::Failed {
            plugin: plugin.to_string(),
            call,
            message: "the plugin returned JSON that is not an object".into(),
        });
    }
    Ok(value)
}

/// The cells `table-convertor.row` returned as text: a JSON array, or a plugin failure.
pub fn parse_cells(plugin: &str, call: &'static str, text: &str) -> Result<Vec<Value>, PluginError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(cells)) => Ok(cells),
        _ => Err(PluginError::Failed {
            plugin: plugin.to_string(),
            call,
            message: "the plugin returned cells that are not a JSON array".into(),
        }),
    }
}

fn exported<'a, T>(g: Option<&'a T>, plugin: &Plugin, call: &'static str) -> wasmtime::Result<&'a T> {
    g.ok_or_else(|| wasmtime::format_err!("plugin {} does not export the interface of {call}", plugin.name()))
}

/// `defaulter.default`; returns the object unchanged when the plugin has no defaulter.
pub fn default(p: &Plugin, resource: &str, obj: Value) -> Result<Value, PluginError> {
    if let Some(n) = &p.native {
        return n.default(resource, obj);
    }
    if !p.exports.defaulter {
        return Ok(obj);
    }
    const CALL: &str = "defaulter.default";
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.defaulter.as_ref(), p, CALL)?.call_default(s, resource, &to_text(&obj))
        }),
    )?;
    parse(p, CALL, &out)
}

/// `converter.convert` to `version`; a no-op when the object is already in it.
pub fn convert(p: &Plugin, resource: &str, obj: Value, version: &str) -> Result<Value, PluginError> {
    let target = crate::plugins::scheme::group_version(&p.group.group, version);
    if obj.get("apiVersion").and_then(Value::as_str) == Some(target.as_str()) {
        return Ok(obj);
    }
    const CALL: &str = "converter.convert";
    if let Some(n) = &p.native {
        return n.convert(resource, obj, version);
    }
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.converter.as_ref(), p, CALL)?.call_convert(s, resource, &to_text(&obj), version)
        }),
    )?;
    let converted = parse(p, CALL, &out)?;
    if converted.get("apiVersion").and_then(Value::as_str) != Some(target.as_str()) {
        return Err(PluginError::Failed {
            plugin: p.name().to_string(),
            call: CALL,
            message: format!("the converted object's apiVersion is not {target}"),
        });
    }
    Ok(converted)
}

/// `create-strategy.prepare-for-create`.
pub fn prepare_for_create(p: &Plugin, resource: &str, obj: &Value) -> Result<Value, PluginError> {
    if let Some(n) = &p.native {
        return n.prepare_for_create(resource, obj);
    }
    const CALL: &str = "create-strategy.prepare-for-create";
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.create.as_ref(), p, CALL)?.call_prepare_for_create(s, resource, &to_text(obj))
        }),
    )?;
    parse(p, CALL, &out)
}

/// `create-strategy.validate`.
pub fn validate(p: &Plugin, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
    if let Some(n) = &p.native {
        return n.validate(resource, obj);
    }
    const CALL: &str = "create-strategy.validate";
    p.call(CALL, |g, s| {
        exported(g.create.as_ref(), p, CALL)?.call_validate(s, resource, &to_text(obj))
    })
    .map(validation_from_wit)
}

/// `update-strategy.prepare-for-update`.
pub fn prepare_for_update(p: &Plugin, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
    if let Some(n) = &p.native {
        return n.prepare_for_update(resource, obj, old);
    }
    const CALL: &str = "update-strategy.prepare-for-update";
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.update.as_ref(), p, CALL)?.call_prepare_for_update(s, resource, &to_text(obj), &to_text(old))
        }),
    )?;
    parse(p, CALL, &out)
}

/// `update-strategy.validate-update`.
pub fn validate_update(p: &Plugin, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
    if let Some(n) = &p.native {
        return n.validate_update(resource, obj, old);
    }
    const CALL: &str = "update-strategy.validate-update";
    p.call(CALL, |g, s| {
        exported(g.update.as_ref(), p, CALL)?.call_validate_update(s, resource, &to_text(obj), &to_text(old))
    })
    .map(validation_from_wit)
}

/// `status-strategy.prepare-for-status-update`; the object unchanged when the plugin has no status strategy.
pub fn prepare_for_status_update(p: &Plugin, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
    if !p.exports.status {
        return Ok(obj.clone());
    }
    const CALL: &str = "status-strategy.prepare-for-status-update";
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.status.as_ref(), p, CALL)?.call_prepare_for_status_update(
                s,
                resource,
                &to_text(obj),
                &to_text(old),
            )
        }),
    )?;
    parse(p, CALL, &out)
}

/// `status-strategy.validate-status-update`; valid when the plugin has no status strategy.
pub fn validate_status_update(p: &Plugin, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
    if !p.exports.status {
        return Ok(Validation::valid());
    }
    const CALL: &str = "status-strategy.validate-status-update";
    p.call(CALL, |g, s| {
        exported(g.status.as_ref(), p, CALL)?.call_validate_status_update(s, resource, &to_text(obj), &to_text(old))
    })
    .map(validation_from_wit)
}

/// `update-strategy.allow-create-on-update`.
pub fn allow_create_on_update(p: &Plugin, resource: &str) -> Result<bool, PluginError> {
    if let Some(n) = &p.native {
        return Ok(n.allow_create_on_update(resource));
    }
    const CALL: &str = "update-strategy.allow-create-on-update";
    p.call(CALL, |g, s| {
        exported(g.update.as_ref(), p, CALL)?.call_allow_create_on_update(s, resource)
    })
}

/// `update-strategy.allow-unconditional-update`.
pub fn allow_unconditional_update(p: &Plugin, resource: &str) -> Result<bool, PluginError> {
    if let Some(n) = &p.native {
        return Ok(n.allow_unconditional_update(resource));
    }
    const CALL: &str = "update-strategy.allow-unconditional-update";
    p.call(CALL, |g, s| {
        exported(g.update.as_ref(), p, CALL)?.call_allow_unconditional_update(s, resource)
    })
}

/// `delete-strategy.validate-delete`.
pub fn validate_delete(p: &Plugin, resource: &str, obj: &Value) -> Result<(), PluginError> {
    if let Some(n) = &p.native {
        return n.validate_delete(resource, obj);
    }
    const CALL: &str = "delete-strategy.validate-delete";
    p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.delete.as_ref(), p, CALL)?.call_validate_delete(s, resource, &to_text(obj))
        }),
    )
}

/// `lister.get-attrs`.
pub fn get_attrs(p: &Plugin, resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
    if let Some(n) = &p.native {
        return Ok(n.get_attrs(resource, obj));
    }
    const CALL: &str = "lister.get-attrs";
    p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.lister.as_ref(), p, CALL)?.call_get_attrs(s, resource, &to_text(obj))
        }),
    )
}

/// `table-convertor.row`: the cells of a row for an object in the storage version, in a table of `version` (whose
/// columns a built-in type such as a CRD's may choose per version; a plugin's are the same in every version).
pub fn table_row(p: &Plugin, resource: &str, version: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
    if let Some(n) = &p.native {
        let name = obj.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
        return Ok(std::iter::once(name)
            .chain(n.table_row(resource, version, obj))
            .collect());
    }
    const CALL: &str = "table-convertor.row";
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.table.as_ref(), p, CALL)?.call_row(s, resource, &to_text(obj))
        }),
    )?;
    parse_cells(p.name(), CALL, &out)
}

/// `mutating-admission.admit`: the mutated object, if any.
pub fn admit(p: &Plugin, request: &AdmissionRequest<'_>) -> Result<Option<Value>, PluginError> {
    const CALL: &str = "mutating-admission.admit";
    let request = admission_request_to_wit(request);
    let out = p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.mutating.as_ref(), p, CALL)?.call_admit(s, &request)
        }),
    )?;
    out.map(|text| parse(p, CALL, &text)).transpose()
}

/// `validating-admission.validate`: warnings.
pub fn validate_admission(p: &Plugin, request: &AdmissionRequest<'_>) -> Result<Vec<String>, PluginError> {
    const CALL: &str = "validating-admission.validate";
    let request = admission_request_to_wit(request);
    p.guest(
        CALL,
        p.call(CALL, |g, s| {
            exported(g.validating.as_ref(), p, CALL)?.call_validate(s, &request)
        }),
    )
}

/// Which step of a [`create_in_one_call`] failed, and the error it returned.
pub struct StepError {
    /// The error, as the separate call would have reported it.
    pub error: PluginError,
    /// Whether the step was the defaulter (errors of which name no object).
    pub in_default: bool,
}

/// `create-pipeline.create`: the defaulter, the plugin's own mutating admission when `admission` is given, the
/// preparation and the validation of a create in one call (see the interface in `wit/strategies.wit`). Returns the
/// prepared object and its validation; an error is reported as the separate call that failed would report it.
pub fn create_in_one_call(
    p: &Plugin,
    resource: &str,
    obj: &Value,
    metadata: &Value,
    clear_status: bool,
    admission: Option<AdmissionRequest<'_>>,
) -> Result<(Value, Validation), StepError> {
    use crate::plugins::bindings::exports::wasm_apiserver::plugin::create_pipeline as cp;
    const CALL: &str = "create-pipeline.create";
    let request = cp::CreateRequest {
        resource: resource.to_string(),
        object: to_text(obj),
        metadata: to_text(metadata),
        clear_status,
        admission: admission.as_ref().map(admission_request_to_wit),
    };
    let out = p.call(CALL, |g, s| {
        exported(g.create_pipeline.as_ref(), p, CALL)?.call_create(s, &request)
    });
    let fail = |error, in_default| StepError { error, in_default };
    match out.map_err(|e| fail(e, false))? {
        Ok(created) => {
            // Named as the call whose result it is, as when made separately.
            let object = parse(p, "create-strategy.prepare-for-create", &created.object).map_err(|e| fail(e, false))?;
            Ok((object, validation_from_wit(created.validation)))
        }
        Err((step, error)) => {
            let call = match step {
                cp::CreateStep::Default => "defaulter.default",
                cp::CreateStep::Admit => "mutating-admission.admit",
                cp::CreateStep::Prepare => "create-strategy.prepare-for-create",
            };
            let in_default = matches!(step, cp::CreateStep::Default);
            Err(fail(p.guest_error(call, error), in_default))
        }
    }
}
