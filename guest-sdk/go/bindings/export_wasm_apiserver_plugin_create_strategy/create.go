// Package export_wasm_apiserver_plugin_create_strategy answers the host's create-strategy calls.
package export_wasm_apiserver_plugin_create_strategy

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// PrepareForCreate runs the resource's PrepareForCreate hook.
func PrepareForCreate(resource string, object string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("prepare-for-create", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.PrepareForCreate(object))
	})
}

// Validate runs the resource's Validate hook.
func Validate(resource string, object string) wasm_apiserver_plugin_types.Validation {
	return registry.Guard("validate", registry.Trap[wasm_apiserver_plugin_types.Validation], func() wasm_apiserver_plugin_types.Validation {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failed(err.Error())
		}
		return registry.Validation(r.Validate(object))
	})
}
