// Package export_wasm_apiserver_plugin_validating_admission: admission is not in the Go SDK yet; no rule asks for
// it.
package export_wasm_apiserver_plugin_validating_admission

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
)

// Rules: none, so Validate is never called.
func Rules() []wasm_apiserver_plugin_types.AdmissionRule {
	return []wasm_apiserver_plugin_types.AdmissionRule{}
}

// Validate admits the request, with no warning.
func Validate(request wasm_apiserver_plugin_types.AdmissionRequest) witTypes.Result[[]string, wasm_apiserver_plugin_types.Error] {
	return witTypes.Ok[[]string, wasm_apiserver_plugin_types.Error]([]string{})
}
