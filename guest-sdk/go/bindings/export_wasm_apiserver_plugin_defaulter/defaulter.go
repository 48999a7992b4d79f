// Package export_wasm_apiserver_plugin_defaulter answers the host's defaulting calls.
package export_wasm_apiserver_plugin_defaulter

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Default runs the resource's Default hook.
func Default(resource string, object string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("default", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.Default(object))
	})
}
