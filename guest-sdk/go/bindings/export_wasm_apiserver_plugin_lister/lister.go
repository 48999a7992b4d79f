// Package export_wasm_apiserver_plugin_lister answers the host's lister calls (field selectors).
package export_wasm_apiserver_plugin_lister

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

type attrs = witTypes.Result[[]witTypes.Tuple2[string, string], wasm_apiserver_plugin_types.Error]

// SelectableFields lists the fields a field selector may name, besides metadata.name and metadata.namespace.
func SelectableFields(resource string) []string {
	r, err := registry.Find(resource)
	if err != nil {
		return []string{}
	}
	return r.SelectableFields()
}

// GetAttrs reads the selectable fields' values of an object.
func GetAttrs(resource string, object string) attrs {
	failed := func(message string) attrs {
		return witTypes.Err[[]witTypes.Tuple2[string, string]](registry.Internal(message))
	}
	return registry.Guard("get-attrs", failed, func() attrs {
		r, err := registry.Find(resource)
		if err != nil {
			return failed(err.Error())
		}
		fields, err := r.Fields(object)
		if err != nil {
			return witTypes.Err[[]witTypes.Tuple2[string, string]](registry.ToError(err))
		}
		out := make([]witTypes.Tuple2[string, string], 0, len(fields))
		for _, f := range fields {
			out = append(out, witTypes.Tuple2[string, string]{F0: f[0], F1: f[1]})
		}
		return witTypes.Ok[[]witTypes.Tuple2[string, string], wasm_apiserver_plugin_types.Error](out)
	})
}
