// Package export_wasm_apiserver_plugin_validating_admission answers the host's validating admission calls.
package export_wasm_apiserver_plugin_validating_admission

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

type result = witTypes.Result[[]string, wasm_apiserver_plugin_types.Error]

// Rules says which requests the plugin's ValidateAdmission sees.
func Rules() []wasm_apiserver_plugin_types.AdmissionRule {
	if registry.Current == nil || registry.Current.ValidateAdmission == nil {
		return []wasm_apiserver_plugin_types.AdmissionRule{}
	}
	return registry.Rules(registry.Current.ValidatingRules)
}

// Validate runs the plugin's ValidateAdmission hook: warnings, or an error that rejects the request.
func Validate(request wasm_apiserver_plugin_types.AdmissionRequest) result {
	failed := func(message string) result { return witTypes.Err[[]string](registry.Internal(message)) }
	return registry.Guard("validating-admission", failed, func() result {
		if registry.Current == nil || registry.Current.ValidateAdmission == nil {
			return witTypes.Ok[[]string, wasm_apiserver_plugin_types.Error]([]string{})
		}
		warnings, err := registry.Current.ValidateAdmission(registry.Request(request))
		if err != nil {
			return witTypes.Err[[]string](registry.ToError(err))
		}
		if warnings == nil {
			warnings = []string{}
		}
		return witTypes.Ok[[]string, wasm_apiserver_plugin_types.Error](warnings)
	})
}
