// Package export_wasm_apiserver_plugin_mutating_admission answers the host's mutating admission calls.
package export_wasm_apiserver_plugin_mutating_admission

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

type result = witTypes.Result[witTypes.Option[string], wasm_apiserver_plugin_types.Error]

// Rules says which requests the plugin's Admit sees.
func Rules() []wasm_apiserver_plugin_types.AdmissionRule {
	if registry.Current == nil || registry.Current.Admit == nil {
		return []wasm_apiserver_plugin_types.AdmissionRule{}
	}
	return registry.Rules(registry.Current.MutatingRules)
}

// Admit runs the plugin's Admit hook: the object to store instead, or none to keep it.
func Admit(request wasm_apiserver_plugin_types.AdmissionRequest) result {
	failed := func(message string) result { return witTypes.Err[witTypes.Option[string]](registry.Internal(message)) }
	return registry.Guard("admit", failed, func() result {
		if registry.Current == nil || registry.Current.Admit == nil {
			return witTypes.Ok[witTypes.Option[string], wasm_apiserver_plugin_types.Error](witTypes.None[string]())
		}
		patched, err := registry.Current.Admit(registry.Request(request))
		if err != nil {
			return witTypes.Err[witTypes.Option[string]](registry.ToError(err))
		}
		if patched == nil {
			return witTypes.Ok[witTypes.Option[string], wasm_apiserver_plugin_types.Error](witTypes.None[string]())
		}
		return witTypes.Ok[witTypes.Option[string], wasm_apiserver_plugin_types.Error](witTypes.Some(string(patched)))
	})
}
