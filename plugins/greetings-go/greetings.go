// The greetings plugin, in Go: one namespaced resource, Greeting (greetings.example.com/v1), with defaulting,
// validation on create and update, a field selector, table columns, /status, /scale and a validating admission
// hook, written with the Go SDK (guest-sdk/go).
package main

import (
	"encoding/json"
	"strings"

	guest "wasm-apiserver.io/guest"
	_ "wasm-apiserver.io/guest/bindings/wit_exports"
	"wasm-apiserver.io/guest/field"
)

// Greeting is the stored object.
type Greeting struct {
	guest.TypeMeta
	Metadata guest.ObjectMeta `json:"metadata"`
	Spec     GreetingSpec     `json:"spec"`
	Status   GreetingStatus   `json:"status"`
}

// GreetingStatus is how many times it was said (written through /status, or by /scale's readers).
type GreetingStatus struct {
	// Replicas is how many times it was said.
	Replicas int64 `json:"replicas"`
}

// GreetingSpec is what a greeting says, and how many times.
type GreetingSpec struct {
	// Message is the greeting: required, at most MaxMessage bytes, and immutable.
	Message string `json:"message"`
	// Replicas is how many times it is said: 0 to MaxReplicas, 1 by default.
	Replicas *int64 `json:"replicas,omitempty"`
}

const (
	// MaxMessage is the longest message, in bytes.
	MaxMessage = 64
	// MaxReplicas is the most replicas.
	MaxReplicas = 10
	// PanicMessage makes validation panic: it shows how the SDK answers a hook's panic (500, the stack logged).
	PanicMessage = "panic!"
	// LoopMessage makes validation spin forever: the host's CPU deadline stops it (504).
	LoopMessage = "loop!"
	// AllocateMessage makes validation allocate without bound: the host's memory cap stops it (500).
	AllocateMessage = "allocate!"
	// GarbageMessage makes validation allocate 256 KiB it drops at once: garbage collections then start and end
	// around the host's calls (an SDK that let one run while the host writes into the plugin's memory traps).
	GarbageMessage = "garbage!"
)

// sink keeps GarbageMessage's allocations from being optimised away.
var sink []byte

// kept holds what AllocateMessage allocates, so that nothing of it is collected.
var kept [][]byte

const schema = `{
  "type": "object",
  "properties": {
    "spec": {
      "type": "object",
      "description": "What the greeting says, and how many times.",
      "required": ["message"],
      "properties": {
        "message": {"type": "string", "description": "The greeting (immutable)."},
        "replicas": {"type": "integer", "description": "How many times it is said (1 by default)."}
      }
    },
    "status": {
      "type": "object",
      "properties": {
        "replicas": {"type": "integer", "description": "How many times it was said."}
      }
    }
  },
  "example": {
    "apiVersion": "greetings.example.com/v1",
    "kind": "Greeting",
    "metadata": {"name": "hello", "namespace": "default"},
    "spec": {"message": "Hello, world", "replicas": 2}
  }
}`

// Default sets spec.replicas to 1 when it is absent.
func Default(g *Greeting) {
	if g.Spec.Replicas == nil {
		one := int64(1)
		g.Spec.Replicas = &one
	}
}

// PrepareForCreate trims the message's surrounding spaces and clears the status (written through /status only).
func PrepareForCreate(g *Greeting) error {
	g.Spec.Message = strings.TrimSpace(g.Spec.Message)
	g.Status = GreetingStatus{}
	return nil
}

// PrepareForUpdate keeps the stored status: the main resource does not change it.
func PrepareForUpdate(g, old *Greeting) error {
	g.Status = old.Status
	return nil
}

// ValidateStatusUpdate checks a status update: no negative count.
func ValidateStatusUpdate(g, old *Greeting) field.ErrorList {
	if g.Status.Replicas < 0 {
		return field.ErrorList{field.Invalid(field.NewPath("status", "replicas"), g.Status.Replicas, "must be 0 or more")}
	}
	return nil
}

// Row is a greeting's cells in kubectl get: its message, replicas wanted and said, and age.
func Row(g *Greeting) []any {
	replicas := int64(0)
	if g.Spec.Replicas != nil {
		replicas = *g.Spec.Replicas
	}
	return []any{g.Metadata.Name, g.Spec.Message, replicas, g.Status.Replicas, g.Metadata.CreationTimestamp}
}

// BannedPrefix starts the messages the validating admission hook refuses, as sample-apiserver's BanFlunder refuses
// flunders named in a Fischer.
const BannedPrefix = "Goodbye"

// ValidateAdmission refuses greetings whose message says goodbye, and warns about shouting ones.
func ValidateAdmission(request *guest.AdmissionRequest) ([]string, error) {
	var g Greeting
	if err := json.Unmarshal(request.Object, &g); err != nil {
		return nil, err
	}
	if strings.HasPrefix(g.Spec.Message, BannedPrefix) {
		return nil, guest.Forbidden("a greeting may not say goodbye")
	}
	if g.Spec.Message != "" && g.Spec.Message == strings.ToUpper(g.Spec.Message) && strings.ToLower(g.Spec.Message) != g.Spec.Message {
		return []string{"this greeting shouts"}, nil
	}
	return nil, nil
}

// Validate checks a greeting's spec.
func Validate(g *Greeting) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch {
	case g.Spec.Message == PanicMessage:
		panic("asked to: spec.message is " + PanicMessage)
	case g.Spec.Message == LoopMessage:
		for n := uint64(0); ; n++ {
			if n == ^uint64(0) {
				guest.Infof("never")
			}
		}
	case g.Spec.Message == AllocateMessage:
		for {
			block := make([]byte, 1<<20)
			block[0] = 1
			kept = append(kept, block)
		}
	case g.Spec.Message == GarbageMessage:
		for i := 0; i < 4096; i++ {
			sink = make([]byte, 64)
		}
	case g.Spec.Message == "":
		errs = append(errs, field.Required(spec.Child("message"), "a greeting says something"))
	case len(g.Spec.Message) > MaxMessage:
		errs = append(errs, field.TooLong(spec.Child("message"), MaxMessage))
	}
	if r := g.Spec.Replicas; r != nil && (*r < 0 || *r > MaxReplicas) {
		errs = append(errs, field.Invalid(spec.Child("replicas"), *r, "must be between 0 and 10"))
	}
	return errs
}

// ValidateUpdate checks the new spec, and that the message did not change.
func ValidateUpdate(g, old *Greeting) field.ErrorList {
	errs := Validate(g)
	if g.Spec.Message != old.Spec.Message {
		errs = append(errs, field.Invalid(field.NewPath("spec", "message"), g.Spec.Message, "field is immutable"))
	}
	return errs
}

func init() {
	guest.Register(guest.Plugin{
		Group: "greetings.example.com",
		Resources: []guest.Definition{&guest.Resource[Greeting]{
			Kind:       "Greeting",
			Plural:     "greetings",
			Singular:   "greeting",
			ShortNames: []string{"gr"},
			Versions:   []guest.Version{{Name: "v1", Served: true, Storage: true, Schema: schema}},

			Default:          Default,
			PrepareForCreate: PrepareForCreate,
			Validate:         Validate,
			PrepareForUpdate: PrepareForUpdate,
			ValidateUpdate:   ValidateUpdate,
			SelectableFields: map[string]func(*Greeting) string{
				"spec.message": func(g *Greeting) string { return g.Spec.Message },
			},

			Columns: []guest.Column{
				{Name: "Name", Type: "string", Format: "name", Description: "The greeting's name."},
				{Name: "Message", Type: "string", Description: "What it says."},
				{Name: "Replicas", Type: "integer", Description: "How many times it is to be said."},
				{Name: "Said", Type: "integer", Description: "How many times it was said.", Priority: 1},
				{Name: "Age", Type: "date", Description: "How long ago it was created."},
			},
			Row: Row,

			StatusSubresource:    true,
			ValidateStatusUpdate: ValidateStatusUpdate,
			Scale:                &guest.ScalePaths{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
		}},
		ValidatingRules: []guest.AdmissionRule{
			{Group: "greetings.example.com", Resources: []string{"greetings"}, Operations: []string{"CREATE", "UPDATE"}},
		},
		ValidateAdmission: ValidateAdmission,
	})
}

func main() {}
