// Package field is the field errors of a validation, as k8s.io/apimachinery/pkg/util/validation/field reads:
// a Path names the field (spec.containers[0].name), an Error says what is wrong with it, and the server answers
// 422 Invalid with one cause per error.
package field

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Path is the path of a field from the object's root.
type Path struct {
	name   string
	index  string
	parent *Path
}

// NewPath is the path of a top-level field and its children: NewPath("spec", "replicas") is spec.replicas.
func NewPath(name string, more ...string) *Path {
	p := &Path{name: name}
	for _, n := range more {
		p = p.Child(n)
	}
	return p
}

// Child is the path of a field of this one.
func (p *Path) Child(name string, more ...string) *Path {
	c := &Path{name: name, parent: p}
	for _, n := range more {
		c = c.Child(n)
	}
	return c
}

// Index is the path of an item of this list: spec.containers[0].
func (p *Path) Index(i int) *Path {
	return &Path{index: strconv.Itoa(i), parent: p}
}

// Key is the path of an entry of this map: metadata.labels[app].
func (p *Path) Key(key string) *Path {
	return &Path{index: key, parent: p}
}

// String is the path in Kubernetes' notation.
func (p *Path) String() string {
	if p == nil {
		return ""
	}
	var parts []*Path
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		if q.name != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(q.name)
		} else {
			b.WriteString("[" + q.index + "]")
		}
	}
	return b.String()
}

// ErrorType is what is wrong with a field: it becomes the cause's reason (FieldValueInvalid, ...).
type ErrorType int

const (
	// ErrorTypeRequired: a required field is empty (FieldValueRequired).
	ErrorTypeRequired ErrorType = iota
	// ErrorTypeInvalid: a value is malformed or out of range (FieldValueInvalid).
	ErrorTypeInvalid
	// ErrorTypeNotSupported: a value is not one of the supported values (FieldValueNotSupported).
	ErrorTypeNotSupported
	// ErrorTypeDuplicate: a value repeats one that must be unique (FieldValueDuplicate).
	ErrorTypeDuplicate
	// ErrorTypeForbidden: a field may not be set or changed (FieldValueForbidden).
	ErrorTypeForbidden
	// ErrorTypeTooLong: a value is too long (FieldValueTooLong).
	ErrorTypeTooLong
	// ErrorTypeTooMany: a list has too many items (FieldValueTooMany).
	ErrorTypeTooMany
	// ErrorTypeInternal: something went wrong inside the validator (InternalError).
	ErrorTypeInternal
)

// Error is one field's error.
type Error struct {
	Type   ErrorType
	Field  string
	Detail string
}

func (e *Error) Error() string {
	return e.Field + ": " + e.Detail
}

// ErrorList is a validation's errors: none means valid.
type ErrorList []*Error

// Required: the field must be set (FieldValueRequired, as field.Required).
func Required(p *Path, detail string) *Error {
	return &Error{ErrorTypeRequired, p.String(), detail}
}

// Invalid: the value is malformed or out of range; detail says why (FieldValueInvalid, as field.Invalid).
func Invalid(p *Path, value any, detail string) *Error {
	return &Error{ErrorTypeInvalid, p.String(), withValue(value, detail)}
}

// NotSupported: the value is not one of those supported (FieldValueNotSupported, as field.NotSupported).
func NotSupported(p *Path, value any, supported []string) *Error {
	detail := ""
	if len(supported) > 0 {
		quoted := make([]string, len(supported))
		for i, s := range supported {
			quoted[i] = quoteString(s)
		}
		detail = "supported values: " + strings.Join(quoted, ", ")
	}
	return &Error{ErrorTypeNotSupported, p.String(), withValue(value, detail)}
}

// Duplicate: the value repeats one that must be unique (FieldValueDuplicate, as field.Duplicate).
func Duplicate(p *Path, value any) *Error {
	return &Error{ErrorTypeDuplicate, p.String(), withValue(value, "")}
}

// Forbidden: the field may not be set or changed; detail says why (FieldValueForbidden, as field.Forbidden).
func Forbidden(p *Path, detail string) *Error {
	return &Error{ErrorTypeForbidden, p.String(), detail}
}

// TooLong: the value is longer than max bytes (FieldValueTooLong, as field.TooLong).
func TooLong(p *Path, max int) *Error {
	unit := "bytes"
	if max == 1 {
		unit = "byte"
	}
	return &Error{ErrorTypeTooLong, p.String(), fmt.Sprintf("may not be more than %d %s", max, unit)}
}

// TooMany: the list has more than max items (FieldValueTooMany, as field.TooMany).
func TooMany(p *Path, actual, max int) *Error {
	unit := "items"
	if max == 1 {
		unit = "item"
	}
	return &Error{ErrorTypeTooMany, p.String(), fmt.Sprintf("%d: must have at most %d %s", actual, max, unit)}
}

// InternalError: the validator itself failed (InternalError, as field.InternalError).
func InternalError(p *Path, err error) *Error {
	return &Error{ErrorTypeInternal, p.String(), err.Error()}
}

// withValue is "<value>: <detail>" (or the value alone): strings quoted, other values as JSON.
func withValue(value any, detail string) string {
	var v string
	switch value := value.(type) {
	case string:
		v = quoteString(value)
	default:
		b, err := marshal(value)
		if err != nil {
			v = "<unprintable value>"
		} else {
			v = string(b)
		}
	}
	if detail == "" {
		return v
	}
	return v + ": " + detail
}

func quoteString(s string) string {
	b, _ := marshal(s)
	return string(b)
}

// marshal is JSON without HTML escaping (<, > and & as they are), as the Rust SDK and Kubernetes quote values.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
