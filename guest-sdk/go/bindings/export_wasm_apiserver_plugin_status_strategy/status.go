// Package export_wasm_apiserver_plugin_status_strategy answers the host's /status calls.
package export_wasm_apiserver_plugin_status_strategy

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Resources lists the resources with a /status subresource.
func Resources() []string {
	out := []string{}
	if registry.Current == nil {
		return out
	}
	for _, r := range registry.Current.Resources {
		if r.HasStatus() {
			out = append(out, r.Info().Plural)
		}
	}
	return out
}

// PrepareForStatusUpdate runs the resource's PrepareForStatusUpdate hook.
func PrepareForStatusUpdate(resource string, object string, oldObject string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("prepare-for-status-update", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.PrepareForStatusUpdate(object, oldObject))
	})
}

// ValidateStatusUpdate runs the resource's ValidateStatusUpdate hook.
func ValidateStatusUpdate(resource string, object string, oldObject string) wasm_apiserver_plugin_types.Validation {
	return registry.Guard("validate-status-update", registry.Trap[wasm_apiserver_plugin_types.Validation], func() wasm_apiserver_plugin_types.Validation {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failed(err.Error())
		}
		return registry.Validation(r.ValidateStatusUpdate(object, oldObject))
	})
}
