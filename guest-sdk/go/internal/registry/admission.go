package registry

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
)

var operations = map[string]wasm_apiserver_plugin_types.Operation{
	"CREATE": wasm_apiserver_plugin_types.OperationCreate,
	"UPDATE": wasm_apiserver_plugin_types.OperationUpdate,
	"DELETE": wasm_apiserver_plugin_types.OperationDelete,
}

// Rules is the contract's admission rules of these (an unknown operation is left out).
func Rules(rules []AdmissionRule) []wasm_apiserver_plugin_types.AdmissionRule {
	out := make([]wasm_apiserver_plugin_types.AdmissionRule, 0, len(rules))
	for _, r := range rules {
		ops := []wasm_apiserver_plugin_types.Operation{}
		for _, o := range r.Operations {
			if op, ok := operations[o]; ok {
				ops = append(ops, op)
			}
		}
		resources := r.Resources
		if resources == nil {
			resources = []string{}
		}
		out = append(out, wasm_apiserver_plugin_types.AdmissionRule{Group: r.Group, Resources: resources, Operations: ops})
	}
	return out
}

// Request is the SDK's admission request of the contract's.
func Request(r wasm_apiserver_plugin_types.AdmissionRequest) *AdmissionRequest {
	op := "CREATE"
	for name, value := range operations {
		if value == r.Operation {
			op = name
		}
	}
	bytesOf := func(o witTypes.Option[string]) []byte {
		if o.IsNone() {
			return nil
		}
		return []byte(o.Some())
	}
	namespace := ""
	if r.Namespace.IsSome() {
		namespace = r.Namespace.Some()
	}
	return &AdmissionRequest{
		Operation: op, Group: r.Group, Version: r.Version, Resource: r.Resource, Subresource: r.Subresource,
		Namespace: namespace, Name: r.Name, Object: bytesOf(r.Object), OldObject: bytesOf(r.OldObject),
		DryRun: r.DryRun, UserName: r.User.Name, UserGroups: r.User.Groups,
	}
}
