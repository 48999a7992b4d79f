// Package export_wasm_apiserver_plugin_mutating_admission: admission is not in the Go SDK yet; no rule asks for it.
package export_wasm_apiserver_plugin_mutating_admission

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
)

// Rules: none, so Admit is never called.
func Rules() []wasm_apiserver_plugin_types.AdmissionRule {
	return []wasm_apiserver_plugin_types.AdmissionRule{}
}

// Admit leaves the object as it is.
func Admit(request wasm_apiserver_plugin_types.AdmissionRequest) witTypes.Result[witTypes.Option[string], wasm_apiserver_plugin_types.Error] {
	return witTypes.Ok[witTypes.Option[string], wasm_apiserver_plugin_types.Error](witTypes.None[string]())
}
