//go:build wasip1

package guest

import (
	"encoding/json"
	"fmt"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_host"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/field"
	"wasm-apiserver.io/guest/internal/registry"
)

// Debugf logs at debug level in the server's log, under the plugin's name.
func Debugf(format string, args ...any) {
	logf(wasm_apiserver_plugin_host.LogLevelDebug, format, args...)
}

// Infof logs at info level.
func Infof(format string, args ...any) {
	logf(wasm_apiserver_plugin_host.LogLevelInfo, format, args...)
}

// Warnf logs at warn level.
func Warnf(format string, args ...any) {
	logf(wasm_apiserver_plugin_host.LogLevelWarn, format, args...)
}

// Errorf logs at error level; when the call then fails, the client's message carries the last such line.
func Errorf(format string, args ...any) {
	logf(wasm_apiserver_plugin_host.LogLevelError, format, args...)
}

func logf(level wasm_apiserver_plugin_host.LogLevel, format string, args ...any) {
	wasm_apiserver_plugin_host.Log(level, fmt.Sprintf(format, args...))
}

func namespaceOption(namespace string) witTypes.Option[string] {
	if namespace == "" {
		return witTypes.None[string]()
	}
	return witTypes.Some(namespace)
}

// Get reads one object of a resource the plugin declared in Reads (namespace "" for a cluster-scoped one) into
// into; false when there is none.
func Get(group, resource, namespace, name string, into any) (bool, error) {
	var r witTypes.Result[witTypes.Option[string], wasm_apiserver_plugin_types.Error]
	registry.HostCall(func() { r = wasm_apiserver_plugin_host.Get(group, resource, namespaceOption(namespace), name) })
	if r.IsErr() {
		return false, hostError(r.Err())
	}
	found := r.Ok()
	if found.IsNone() {
		return false, nil
	}
	return true, json.Unmarshal([]byte(found.Some()), into)
}

// List reads the objects of a resource the plugin declared in Reads (namespace "" for every namespace) that match a
// label selector ("" for all), as JSON.
func List(group, resource, namespace, labelSelector string) ([]json.RawMessage, error) {
	var r witTypes.Result[[]string, wasm_apiserver_plugin_types.Error]
	registry.HostCall(func() {
		r = wasm_apiserver_plugin_host.List(group, resource, namespaceOption(namespace), labelSelector)
	})
	if r.IsErr() {
		return nil, hostError(r.Err())
	}
	items := r.Ok()
	out := make([]json.RawMessage, len(items))
	for i, item := range items {
		out[i] = json.RawMessage(item)
	}
	return out, nil
}

func hostError(e wasm_apiserver_plugin_types.Error) error {
	switch e.Tag() {
	case wasm_apiserver_plugin_types.ErrorForbidden:
		return Forbidden(e.Forbidden())
	case wasm_apiserver_plugin_types.ErrorNotFound:
		return NotFound(e.NotFound())
	case wasm_apiserver_plugin_types.ErrorBadRequest:
		return BadRequest(e.BadRequest())
	case wasm_apiserver_plugin_types.ErrorConflict:
		return Conflict(e.Conflict())
	case wasm_apiserver_plugin_types.ErrorInternal:
		return fmt.Errorf("%s", e.Internal())
	case wasm_apiserver_plugin_types.ErrorInvalid:
		var causes field.ErrorList
		for _, c := range e.Invalid() {
			causes = append(causes, &field.Error{Type: field.ErrorType(c.Kind), Field: c.Field, Detail: c.Detail})
		}
		return Invalid(causes)
	default:
		return fmt.Errorf("the host refused the read")
	}
}
