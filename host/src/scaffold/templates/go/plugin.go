// The @NAME@ plugin: serves the namespaced resource @PLURAL@ (kind @KIND@, group @GROUP@) in v1 with create, get,
// list, watch, update, patch and delete, and its own kubectl get columns.
//
//   - The schema gives spec.message (a required string) and spec.replicas (an integer of at least 0, default 1); the
//     server enforces it and applies its defaults before any hook runs.
//   - Create and update: spec.message is trimmed, then must not be blank (422 Invalid otherwise).
//   - kubectl get @PLURAL@ shows Name, Message, Replicas and Age.
//
// wit/world.wit names the exported interfaces; the server serves a verb exactly when the component exports the
// interface behind it. The SDK is in sdk/ (see sdk/README.md).
package main

import (
	"strings"

	guest "wasm-apiserver.io/guest"
	_ "wasm-apiserver.io/guest/bindings/wit_exports"
	"wasm-apiserver.io/guest/field"
)

// @KIND@ is an object of the @GROUP@ API.
type @KIND@ struct {
	guest.TypeMeta
	Metadata guest.ObjectMeta `json:"metadata"`
	Spec     @KIND@Spec `json:"spec"`
}

// @KIND@Spec is the desired state of a @KIND@.
type @KIND@Spec struct {
	// Message is what the @KIND@ says: required and not blank; leading and trailing spaces are removed.
	Message string `json:"message"`
	// Replicas is how many copies there should be: at least 0, 1 by default (the schema's default).
	Replicas *int64 `json:"replicas,omitempty"`
}

// The OpenAPI v3 schema of a v1 @KIND@ (the server adds apiVersion, kind and metadata). Its example is what
// `wasm-apiserver plugin check` runs every hook on.
const schema = `{
  "type": "object",
  "description": "@KIND@ is an object of the @GROUP@ API. Describe what it stands for here.",
  "example": {"spec": {"message": "Hello from a @KIND@", "replicas": 2}},
  "properties": {
    "spec": {
      "type": "object",
      "description": "The desired state of the @KIND@.",
      "required": ["message"],
      "properties": {
        "message": {
          "type": "string",
          "maxLength": 200,
          "description": "What the @KIND@ says. Required and not blank; leading and trailing spaces are removed."
        },
        "replicas": {
          "type": "integer",
          "format": "int32",
          "minimum": 0,
          "default": 1,
          "description": "How many copies of the @KIND@ there should be. At least 0; defaults to 1."
        }
      }
    }
  }
}`

// Prepare removes leading and trailing spaces from the message (before validation, on create and update).
func Prepare(obj *@KIND@) error {
	obj.Spec.Message = strings.TrimSpace(obj.Spec.Message)
	return nil
}

// Validate returns the field errors of a @KIND@: the message must not be blank. (Types, required, maxLength and
// minimum are the schema's, checked by the server before this runs.)
func Validate(obj *@KIND@) field.ErrorList {
	if strings.TrimSpace(obj.Spec.Message) == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "message"), "a @KIND@ needs a message that is not blank")}
	}
	return nil
}

// Row is a @KIND@'s cells in kubectl get, one per column.
func Row(obj *@KIND@) []any {
	return []any{obj.Metadata.Name, obj.Spec.Message, obj.Spec.Replicas, obj.Metadata.CreationTimestamp}
}

func init() {
	guest.Register(guest.Plugin{
		Group: "@GROUP@",
		Resources: []guest.Definition{&guest.Resource[@KIND@]{
			Kind:     "@KIND@",
			Plural:   "@PLURAL@",
			Singular: "@SINGULAR@",
			Versions: []guest.Version{{Name: "v1", Served: true, Storage: true, Schema: schema}},

			PrepareForCreate: Prepare,
			Validate:         Validate,
			PrepareForUpdate: func(obj, old *@KIND@) error { return Prepare(obj) },
			ValidateUpdate:   func(obj, old *@KIND@) field.ErrorList { return Validate(obj) },
			Columns: []guest.Column{
				{Name: "Name", Type: "string", Format: "name", Description: "The object's name."},
				{Name: "Message", Type: "string", Description: "What the object says."},
				{Name: "Replicas", Type: "integer", Description: "How many copies there should be."},
				{Name: "Age", Type: "date", Description: "How long ago the object was created."},
			},
			Row: Row,
		}},
	})
}

func main() {}
