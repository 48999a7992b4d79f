// Package export_wasm_apiserver_plugin_scaler answers the host's /scale calls.
package export_wasm_apiserver_plugin_scaler

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_scaler"
	"wasm-apiserver.io/guest/internal/registry"
)

// ScalePaths locates the resource's replica counts, if it has a /scale subresource.
func ScalePaths(resource string) witTypes.Option[wasm_apiserver_plugin_scaler.ReplicaPaths] {
	r, err := registry.Find(resource)
	if err != nil || r.Scale() == nil {
		return witTypes.None[wasm_apiserver_plugin_scaler.ReplicaPaths]()
	}
	s := r.Scale()
	selector := witTypes.None[string]()
	if s.LabelSelectorPath != "" {
		selector = witTypes.Some(s.LabelSelectorPath)
	}
	return witTypes.Some(wasm_apiserver_plugin_scaler.ReplicaPaths{
		SpecReplicasPath: s.SpecReplicasPath, StatusReplicasPath: s.StatusReplicasPath, LabelSelectorPath: selector,
	})
}
