// Package export_wasm_apiserver_plugin_status_strategy: the status subresource is not in the Go SDK yet; no
// resource has one.
package export_wasm_apiserver_plugin_status_strategy

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Resources: none has a status subresource.
func Resources() []string {
	return []string{}
}

// PrepareForStatusUpdate is never called (no resource has a status subresource).
func PrepareForStatusUpdate(resource string, object string, oldObject string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Failure("the Go SDK has no status subresource yet")
}

// ValidateStatusUpdate is never called (no resource has a status subresource).
func ValidateStatusUpdate(resource string, object string, oldObject string) wasm_apiserver_plugin_types.Validation {
	return registry.Failed("the Go SDK has no status subresource yet")
}
