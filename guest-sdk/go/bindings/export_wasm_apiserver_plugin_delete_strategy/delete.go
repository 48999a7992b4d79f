// Package export_wasm_apiserver_plugin_delete_strategy answers the host's delete-strategy calls.
package export_wasm_apiserver_plugin_delete_strategy

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

type result = witTypes.Result[witTypes.Unit, wasm_apiserver_plugin_types.Error]

// ValidateDelete runs the resource's ValidateDelete hook.
func ValidateDelete(resource string, object string) result {
	failed := func(message string) result { return witTypes.Err[witTypes.Unit](registry.Internal(message)) }
	return registry.Guard("validate-delete", failed, func() result {
		r, err := registry.Find(resource)
		if err != nil {
			return failed(err.Error())
		}
		if err := r.ValidateDelete(object); err != nil {
			return witTypes.Err[witTypes.Unit](registry.ToError(err))
		}
		return witTypes.Ok[witTypes.Unit, wasm_apiserver_plugin_types.Error](witTypes.Unit{})
	})
}
