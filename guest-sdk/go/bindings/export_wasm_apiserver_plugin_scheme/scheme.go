// Package export_wasm_apiserver_plugin_scheme answers the host's scheme calls from the registered plugin.
package export_wasm_apiserver_plugin_scheme

import (
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_scheme"
	"wasm-apiserver.io/guest/internal/registry"
)

// Info describes the registered plugin. Without one, the plugin cannot be served: it panics, which the host reports
// as a trap naming the plugin (with the message in its log).
func Info() wasm_apiserver_plugin_scheme.PluginInfo {
	p := registry.Current
	if p == nil {
		panic("the plugin registered nothing: call guest.Register in an init function of package main")
	}
	// A hook of an interface the world does not export would never run: the plugin is not served, saying so.
	if problems := registry.CheckWorld(p); len(problems) > 0 {
		for _, problem := range problems {
			registry.LogError(problem)
		}
		panic(problems[0])
	}
	resources := make([]wasm_apiserver_plugin_scheme.Resource, 0, len(p.Resources))
	for _, r := range p.Resources {
		resources = append(resources, r.Info())
	}
	reads := p.Reads
	if reads == nil {
		reads = []wasm_apiserver_plugin_scheme.GroupResource{}
	}
	return wasm_apiserver_plugin_scheme.PluginInfo{Group: p.Group, Resources: resources, Reads: reads}
}
