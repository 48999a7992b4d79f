//! A component's typed calls, one per function of the strategy and admission interfaces: objects go in as
//! `serde_json::Value`, are serialized for the plugin, and what it returns is parsed back into the host's types
//! ([`apimachinery::plugin`]), garbage reported as a plugin failure. This is the JSON/WIT edge: no WIT type goes past it.

use serde_json::Value;

use super::bindings::exports::wasm_apiserver::plugin::create_pipeline as cp;
use super::component::PluginComponent;
use super::contract::{admission_request_to_wit, user_to_wit, validation_from_wit};
use apimachinery::plugin::{AdmissionRequest, CreateStepError, PluginError, Validation};

fn to_text(v: &Value) -> String {
    v.to_string()
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

fn exported<'a, T>(g: Option<&'a T>, c: &PluginComponent, call: &'static str) -> wasmtime::Result<&'a T> {
    g.ok_or_else(|| wasmtime::format_err!("plugin {} does not export the interface of {call}", c.name()))
}

impl PluginComponent {
    fn parse(&self, call: &'static str, text: &str) -> Result<Value, PluginError> {
        parse_object(self.name(), call, text)
    }

    /// `defaulter.default`; the object unchanged when the component has no defaulter.
    pub fn default(&self, resource: &str, obj: Value) -> Result<Value, PluginError> {
        if !self.exports.defaulter {
            return Ok(obj);
        }
        const CALL: &str = "defaulter.default";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.defaulter.as_ref(), self, CALL)?.call_default(s, resource, &to_text(&obj))
            }),
        )?;
        self.parse(CALL, &out)
    }

    /// `converter.convert` to `version`: the converted object, whose `apiVersion` must be `target` (the group and
    /// version).
    pub fn convert(&self, resource: &str, obj: &Value, version: &str, target: &str) -> Result<Value, PluginError> {
        const CALL: &str = "converter.convert";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.converter.as_ref(), self, CALL)?.call_convert(s, resource, &to_text(obj), version)
            }),
        )?;
        let converted = self.parse(CALL, &out)?;
        if converted.get("apiVersion").and_then(Value::as_str) != Some(target) {
            return Err(PluginError::Failed {
                plugin: self.name().to_string(),
                call: CALL,
                message: format!("the converted object's apiVersion is not {target}"),
            });
        }
        Ok(converted)
    }

    /// `create-strategy.prepare-for-create`.
    pub fn prepare_for_create(&self, resource: &str, obj: &Value) -> Result<Value, PluginError> {
        const CALL: &str = "create-strategy.prepare-for-create";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.create.as_ref(), self, CALL)?.call_prepare_for_create(s, resource, &to_text(obj))
            }),
        )?;
        self.parse(CALL, &out)
    }

    /// `create-strategy.validate`.
    pub fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        const CALL: &str = "create-strategy.validate";
        self.call(CALL, |g, s| {
            exported(g.create.as_ref(), self, CALL)?.call_validate(s, resource, &to_text(obj))
        })
        .map(validation_from_wit)
    }

    /// `update-strategy.prepare-for-update`.
    pub fn prepare_for_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        const CALL: &str = "update-strategy.prepare-for-update";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.update.as_ref(), self, CALL)?.call_prepare_for_update(
                    s,
                    resource,
                    &to_text(obj),
                    &to_text(old),
                )
            }),
        )?;
        self.parse(CALL, &out)
    }

    /// `update-strategy.validate-update`.
    pub fn validate_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        const CALL: &str = "update-strategy.validate-update";
        self.call(CALL, |g, s| {
            exported(g.update.as_ref(), self, CALL)?.call_validate_update(s, resource, &to_text(obj), &to_text(old))
        })
        .map(validation_from_wit)
    }

    /// `status-strategy.prepare-for-status-update`; the object unchanged when the component has no status strategy.
    pub fn prepare_for_status_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        if !self.exports.status {
            return Ok(obj.clone());
        }
        const CALL: &str = "status-strategy.prepare-for-status-update";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.status.as_ref(), self, CALL)?.call_prepare_for_status_update(
                    s,
                    resource,
                    &to_text(obj),
                    &to_text(old),
                )
            }),
        )?;
        self.parse(CALL, &out)
    }

    /// `status-strategy.validate-status-update`; valid when the component has no status strategy.
    pub fn validate_status_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        if !self.exports.status {
            return Ok(Validation::valid());
        }
        const CALL: &str = "status-strategy.validate-status-update";
        self.call(CALL, |g, s| {
            exported(g.status.as_ref(), self, CALL)?.call_validate_status_update(
                s,
                resource,
                &to_text(obj),
                &to_text(old),
            )
        })
        .map(validation_from_wit)
    }

    /// `update-strategy.allow-create-on-update`.
    pub fn allow_create_on_update(&self, resource: &str) -> Result<bool, PluginError> {
        const CALL: &str = "update-strategy.allow-create-on-update";
        self.call(CALL, |g, s| {
            exported(g.update.as_ref(), self, CALL)?.call_allow_create_on_update(s, resource)
        })
    }

    /// `update-strategy.allow-unconditional-update`.
    pub fn allow_unconditional_update(&self, resource: &str) -> Result<bool, PluginError> {
        const CALL: &str = "update-strategy.allow-unconditional-update";
        self.call(CALL, |g, s| {
            exported(g.update.as_ref(), self, CALL)?.call_allow_unconditional_update(s, resource)
        })
    }

    /// `delete-strategy.validate-delete`.
    pub fn validate_delete(&self, resource: &str, obj: &Value) -> Result<(), PluginError> {
        const CALL: &str = "delete-strategy.validate-delete";
        self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.delete.as_ref(), self, CALL)?.call_validate_delete(s, resource, &to_text(obj))
            }),
        )
    }

    /// `lister.get-attrs`.
    pub fn get_attrs(&self, resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        const CALL: &str = "lister.get-attrs";
        self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.lister.as_ref(), self, CALL)?.call_get_attrs(s, resource, &to_text(obj))
            }),
        )
    }

    /// `table-convertor.row`: the cells of a row (the name's first) for an object.
    pub fn table_row(&self, resource: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
        const CALL: &str = "table-convertor.row";
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                exported(g.table.as_ref(), self, CALL)?.call_row(s, resource, &to_text(obj))
            }),
        )?;
        parse_cells(self.name(), CALL, &out)
    }

    /// `mutating-admission.admit`: the mutated object, if any.
    pub fn admit(&self, request: &AdmissionRequest<'_>) -> Result<Option<Value>, PluginError> {
        const CALL: &str = "mutating-admission.admit";
        let user = user_to_wit(request.user);
        let request = admission_request_to_wit(request);
        let out = self.guest(
            CALL,
            self.call(CALL, |g, s| {
                s.data_mut().request_user = Some(user);
                exported(g.mutating.as_ref(), self, CALL)?.call_admit(s, &request)
            }),
        )?;
        out.map(|text| self.parse(CALL, &text)).transpose()
    }

    /// `validating-admission.validate`: warnings.
    pub fn validate_admission(&self, request: &AdmissionRequest<'_>) -> Result<Vec<String>, PluginError> {
        const CALL: &str = "validating-admission.validate";
        let user = user_to_wit(request.user);
        let request = admission_request_to_wit(request);
        self.guest(
            CALL,
            self.call(CALL, |g, s| {
                s.data_mut().request_user = Some(user);
                exported(g.validating.as_ref(), self, CALL)?.call_validate(s, &request)
            }),
        )
    }

    /// `create-pipeline.create`: the defaulter, the plugin's own mutating admission when `admission` is given, the
    /// preparation and the validation of a create in one call (see the interface in `wit/strategies.wit`). Returns
    /// the prepared object and its validation; an error is reported as the separate call that failed would report
    /// it.
    pub fn create_in_one_call(
        &self,
        resource: &str,
        obj: &Value,
        metadata: &Value,
        clear_status: bool,
        admission: Option<AdmissionRequest<'_>>,
    ) -> Result<(Value, Validation), CreateStepError> {
        const CALL: &str = "create-pipeline.create";
        let user = admission.as_ref().map(|a| user_to_wit(a.user));
        let request = cp::CreateRequest {
            resource: resource.to_string(),
            object: to_text(obj),
            metadata: to_text(metadata),
            clear_status,
            admission: admission.as_ref().map(admission_request_to_wit),
        };
        let out = self.call(CALL, |g, s| {
            s.data_mut().request_user = user;
            exported(g.create_pipeline.as_ref(), self, CALL)?.call_create(s, &request)
        });
        let fail = |error, in_default| CreateStepError { error, in_default };
        match out.map_err(|e| fail(e, false))? {
            Ok(created) => {
                // Named as the call whose result it is, as when made separately.
                let object = self
                    .parse("create-strategy.prepare-for-create", &created.object)
                    .map_err(|e| fail(e, false))?;
                Ok((object, validation_from_wit(created.validation)))
            }
            Err((step, error)) => {
                let call = match step {
                    cp::CreateStep::Default => "defaulter.default",
                    cp::CreateStep::Admit => "mutating-admission.admit",
                    cp::CreateStep::Prepare => "create-strategy.prepare-for-create",
                };
                let in_default = matches!(step, cp::CreateStep::Default);
                Err(fail(self.guest_error(call, error), in_default))
            }
        }
    }
}

#[cfg(test)]
mod tests;
