// Package export_wasm_apiserver_plugin_table_convertor: table columns are not in the Go SDK yet.
package export_wasm_apiserver_plugin_table_convertor

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_table_convertor"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Columns: none.
func Columns(resource string) []wasm_apiserver_plugin_table_convertor.Column {
	return []wasm_apiserver_plugin_table_convertor.Column{}
}

// Row answers that the Go SDK has no table columns yet.
func Row(resource string, object string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Failure("the Go SDK has no table columns yet: do not export table-convertor")
}
