// Package export_wasm_apiserver_plugin_table_convertor answers the host's table calls (kubectl get's columns).
package export_wasm_apiserver_plugin_table_convertor

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_table_convertor"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Columns lists the resource's columns.
func Columns(resource string) []wasm_apiserver_plugin_table_convertor.Column {
	r, err := registry.Find(resource)
	if err != nil {
		return []wasm_apiserver_plugin_table_convertor.Column{}
	}
	columns := r.Columns()
	out := make([]wasm_apiserver_plugin_table_convertor.Column, 0, len(columns))
	for _, c := range columns {
		out = append(out, wasm_apiserver_plugin_table_convertor.Column{
			Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority,
		})
	}
	return out
}

// Row runs the resource's Row hook: one cell per column, as a JSON array.
func Row(resource string, object string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Guard("row", registry.Failure, func() witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
		r, err := registry.Find(resource)
		if err != nil {
			return registry.Failure(err.Error())
		}
		return registry.Result(r.Row(object))
	})
}
