package guest

import (
	"wasm-apiserver.io/guest/field"
	"wasm-apiserver.io/guest/internal/registry"
)

// Forbidden is a hook's error that answers 403 Forbidden: the operation is not allowed, for this reason.
func Forbidden(reason string) error {
	return &registry.StatusError{Reason: "Forbidden", Message: reason}
}

// BadRequest is a hook's error that answers 400 BadRequest.
func BadRequest(message string) error {
	return &registry.StatusError{Reason: "BadRequest", Message: message}
}

// Conflict is a hook's error that answers 409 Conflict.
func Conflict(message string) error {
	return &registry.StatusError{Reason: "Conflict", Message: message}
}

// NotFound is a hook's error that answers 404 NotFound: something the operation needs does not exist.
func NotFound(message string) error {
	return &registry.StatusError{Reason: "NotFound", Message: message}
}

// Invalid is a hook's error that answers 422 Invalid with these field errors as causes.
func Invalid(errs field.ErrorList) error {
	return &registry.StatusError{Reason: "Invalid", Causes: errs}
}

// Any other error a hook returns answers 500 InternalError with its text.
