// Package export_wasm_apiserver_plugin_converter: conversion between versions is not in the Go SDK yet; a plugin
// whose world exports the converter is told so on every call.
package export_wasm_apiserver_plugin_converter

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/internal/registry"
)

// Convert answers that the Go SDK does not convert yet.
func Convert(resource string, object string, toVersion string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return registry.Failure("the Go SDK does not convert between versions yet: do not export converter")
}
