// Package export_wasm_apiserver_plugin_scaler: the scale subresource is not in the Go SDK yet; no resource has one.
package export_wasm_apiserver_plugin_scaler

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_scaler"
)

// ScalePaths: none.
func ScalePaths(resource string) witTypes.Option[wasm_apiserver_plugin_scaler.ReplicaPaths] {
	return witTypes.None[wasm_apiserver_plugin_scaler.ReplicaPaths]()
}
