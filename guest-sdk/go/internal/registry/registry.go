// Package registry holds the plugin a Go plugin registered and turns its hooks' results into the contract's types:
// what the generated exports (bindings/export_*) call. Not part of the SDK's API.
package registry

import (
	"errors"
	"fmt"
	"runtime/debug"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_host"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_scheme"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_types"
	"wasm-apiserver.io/guest/field"
)

// Hooks is one resource's hooks at the contract's level: objects as JSON text.
type Hooks interface {
	Info() wasm_apiserver_plugin_scheme.Resource
	PrepareForCreate(object string) (string, error)
	Validate(object string) field.ErrorList
	PrepareForUpdate(object, old string) (string, error)
	ValidateUpdate(object, old string) field.ErrorList
	ValidateDelete(object string) error
	Default(object string) (string, error)
	SelectableFields() []string
	Fields(object string) ([][2]string, error)
	AllowCreateOnUpdate() bool
	AllowUnconditionalUpdate() bool
	Columns() []Column
	Row(object string) (string, error)
	HasStatus() bool
	PrepareForStatusUpdate(object, old string) (string, error)
	ValidateStatusUpdate(object, old string) field.ErrorList
	Scale() *ScalePaths
	Convert(object, toVersion string) (string, error)
	// Defined is the hooks the resource sets, with the interfaces that run them.
	Defined() []DefinedHook
}

// Column is a column of a resource's table (kubectl get), as Kubernetes' TableColumnDefinition.
type Column struct {
	// The header, such as Name.
	Name string
	// The OpenAPI type: string, integer, number, boolean or date (a column named Age of type date shows the age of
	// the RFC 3339 timestamp in its cells).
	Type string
	// An optional OpenAPI format, such as name for the name column.
	Format string
	// What the column shows.
	Description string
	// 0 for columns always shown; higher for -o wide only.
	Priority int32
}

// ScalePaths locates an object's replica counts for its /scale subresource: JSON paths such as .spec.replicas.
type ScalePaths struct {
	// The desired replicas, an integer under .spec.
	SpecReplicasPath string
	// The observed replicas, an integer under .status (0 when absent).
	StatusReplicasPath string
	// The label selector of the replicas in its string form, under .spec or .status ("": none).
	LabelSelectorPath string
}

// AdmissionRule says which requests an admission hook sees.
type AdmissionRule struct {
	// The API group ("*" for any).
	Group string
	// Plural resource names ("*" for any; "flunders/status", "*/scale" for subresources).
	Resources []string
	// The operations: CREATE, UPDATE, DELETE.
	Operations []string
}

// AdmissionRequest is what an admission hook is told about the request it admits.
type AdmissionRequest struct {
	// CREATE, UPDATE or DELETE.
	Operation string
	Group     string
	// The version of the request: Object and OldObject are in it.
	Version     string
	Resource    string
	Subresource string
	// "" for a cluster-scoped resource.
	Namespace string
	Name      string
	// The object being written (JSON), nil for a delete.
	Object []byte
	// The object as stored (JSON), for an update or a delete.
	OldObject []byte
	// dryRun=All: no side effects.
	DryRun bool
	// The requesting user's name and groups.
	UserName   string
	UserGroups []string
}

// Plugin is what a Go plugin registered.
type Plugin struct {
	Group     string
	Resources []Hooks
	Reads     []wasm_apiserver_plugin_scheme.GroupResource
	// Mutating admission: the requests it sees, and the hook (the object to store instead, or nil to keep it).
	MutatingRules []AdmissionRule
	Admit         func(request *AdmissionRequest) ([]byte, error)
	// Validating admission: the requests it sees, and the hook (warnings, or an error that rejects the request).
	ValidatingRules   []AdmissionRule
	ValidateAdmission func(request *AdmissionRequest) ([]string, error)
}

// Current is the registered plugin (nil until guest.Register).
var Current *Plugin

// StatusError is a hook's error that answers with a Kubernetes Status of its own reason.
type StatusError struct {
	// Reason: Forbidden, BadRequest, Conflict, NotFound, Invalid.
	Reason  string
	Message string
	Causes  field.ErrorList
}

func (e *StatusError) Error() string {
	if e.Reason == "Invalid" {
		return fmt.Sprintf("%d field error(s)", len(e.Causes))
	}
	return e.Message
}

// Find is the resource `plural`'s hooks, or an internal error naming it.
func Find(plural string) (Hooks, error) {
	if Current == nil {
		return nil, fmt.Errorf("the plugin registered nothing: call guest.Register in an init function")
	}
	for _, r := range Current.Resources {
		if r.Info().Plural == plural {
			return r, nil
		}
	}
	return nil, fmt.Errorf("the plugin has no resource %q", plural)
}

// Guard runs a hook: a panic in it is logged at error level with its stack, and answered with onPanic's result (an
// internal error naming the call and the panic's message).
//
// The garbage collector runs during the hook only (see GCPercent).
func Guard[R any](call string, onPanic func(message string) R, f func() R) (r R) {
	enterHook()
	defer leaveHook()
	defer func() {
		if p := recover(); p != nil {
			message := fmt.Sprintf("panic in %s: %v", call, p)
			wasm_apiserver_plugin_host.Log(wasm_apiserver_plugin_host.LogLevelError, message+"\n"+string(debug.Stack()))
			r = onPanic(message)
		}
	}()
	return f()
}

// Trap is what a hook whose result cannot carry an error (a validation) answers a panic with: the panic again,
// already logged, which ends the instance; the host answers 500 naming the plugin and the call, with the message.
// (A validation error with an empty field path would answer 422, as if the object were at fault.)
func Trap[R any](message string) R {
	panic(message)
}

// ToError is the contract's error for a hook's error: a StatusError's own, else internal.
func ToError(err error) wasm_apiserver_plugin_types.Error {
	var e *StatusError
	if errors.As(err, &e) {
		switch e.Reason {
		case "Forbidden":
			return wasm_apiserver_plugin_types.MakeErrorForbidden(e.Message)
		case "BadRequest":
			return wasm_apiserver_plugin_types.MakeErrorBadRequest(e.Message)
		case "Conflict":
			return wasm_apiserver_plugin_types.MakeErrorConflict(e.Message)
		case "NotFound":
			return wasm_apiserver_plugin_types.MakeErrorNotFound(e.Message)
		case "Invalid":
			return wasm_apiserver_plugin_types.MakeErrorInvalid(FieldErrors(e.Causes))
		}
	}
	return wasm_apiserver_plugin_types.MakeErrorInternal(err.Error())
}

// Internal is the contract's internal error with this message.
func Internal(message string) wasm_apiserver_plugin_types.Error {
	return wasm_apiserver_plugin_types.MakeErrorInternal(message)
}

// FieldErrors is the contract's field errors of a validation.
func FieldErrors(errs field.ErrorList) []wasm_apiserver_plugin_types.FieldError {
	out := make([]wasm_apiserver_plugin_types.FieldError, 0, len(errs))
	for _, e := range errs {
		if e == nil {
			continue
		}
		out = append(out, wasm_apiserver_plugin_types.FieldError{
			Kind:   wasm_apiserver_plugin_types.FieldErrorKind(e.Type),
			Field:  e.Field,
			Detail: e.Detail,
		})
	}
	return out
}

// Validation is the contract's validation of field errors.
func Validation(errs field.ErrorList) wasm_apiserver_plugin_types.Validation {
	return wasm_apiserver_plugin_types.Validation{Errors: FieldErrors(errs), Warnings: []string{}}
}

// Failed is a validation that says the validator failed (a panic, an object that cannot be read).
func Failed(message string) wasm_apiserver_plugin_types.Validation {
	return Validation(field.ErrorList{{Type: field.ErrorTypeInternal, Field: "", Detail: message}})
}

// Result is a hook's object (or error) as the contract's result.
func Result(object string, err error) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	if err != nil {
		return witTypes.Err[string](ToError(err))
	}
	return witTypes.Ok[string, wasm_apiserver_plugin_types.Error](object)
}

// Failure is a failed result whose error is internal, with this message.
func Failure(message string) witTypes.Result[string, wasm_apiserver_plugin_types.Error] {
	return witTypes.Err[string](Internal(message))
}

// LogError logs a message at error level in the server's log; when the call then fails, the client's message
// carries it.
func LogError(message string) {
	wasm_apiserver_plugin_host.Log(wasm_apiserver_plugin_host.LogLevelError, message)
}
