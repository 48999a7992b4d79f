// Package export_wasm_apiserver_plugin_update_strategy answers the host's update-strategy calls.
package export_wasm_apiserver_plugin_update_strategy

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// PrepareForUpdate runs the resource's PrepareForUpdate hook.
func PrepareForUpdate(resource string, object string, oldObject string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("prepare-for-update", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.PrepareForUpdate(object, oldObject))
	})
}

// ValidateUpdate runs the resource's ValidateUpdate hook.
func ValidateUpdate(resource string, object string, oldObject string) wasm_apiserver_plugin_types.Validation {
	return registry.Guard("validate-update", registry.Trap[wasm_apiserver_plugin_types.Validation], func() wasm_apiserver_plugin_types.Validation {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failed(err.Error())
		}
		return registry.Validation(r.ValidateUpdate(object, oldObject))
	})
}

// AllowCreateOnUpdate says whether a PUT may create the object.
func AllowCreateOnUpdate(resource string) bool {
	r, err := registry.Find(resource)
	return err == nil && r.AllowCreateOnUpdate()
}

// AllowUnconditionalUpdate says whether a PUT without a resourceVersion is allowed.
func AllowUnconditionalUpdate(resource string) bool {
	r, err := registry.Find(resource)
	return err == nil && r.AllowUnconditionalUpdate()
}
