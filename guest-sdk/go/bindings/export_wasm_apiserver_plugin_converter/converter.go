// Package export_wasm_apiserver_plugin_converter answers the host's conversions between versions.
package export_wasm_apiserver_plugin_converter

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Convert runs the resource's Convert hook.
func Convert(resource string, object string, toVersion string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("convert", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.Convert(object, toVersion))
	})
}
