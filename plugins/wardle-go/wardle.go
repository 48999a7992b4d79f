// The wardle plugin, in Go: kubernetes/sample-apiserver's wardle.example.com group written with the Go SDK
// (guest-sdk/go), serving what the Rust plugins/wardle serves.
//
//   - flunders (namespaced, kind Flunder) in v1beta1 (preferred) and v1alpha1 (storage); the hooks see the internal
//     type of apis/wardle, whatever the version, and conversion goes through it; v1alpha1 has defaults.
//   - fischers (cluster-scoped, kind Fischer) in v1alpha1, listing flunder names that may not be used.
//   - BanFlunder (admission/banflunder), a mutating admission plugin refusing flunders whose name a fischer disallows.
//   - Flunders have a /status (observed replicas, observed generation, selector) and a /scale on spec.replicas.
package main

import (
	"strings"

	"wardle/admission/banflunder"
	"wardle/apis/wardle"
	"wardle/apis/wardle/v1alpha1"
	"wardle/apis/wardle/v1beta1"
	"wardle/apis/wardle/validation"

	guest "wasm-apiserver.io/guest"
	_ "wasm-apiserver.io/guest/bindings/wit_exports"
	"wasm-apiserver.io/guest/field"
)

// ReferenceTypeField is the field selectors may use on flunders, besides metadata.name and metadata.namespace.
const ReferenceTypeField = "spec.referenceType"

// PrepareForCreate clears the status: it is written through /status only.
func PrepareForCreate(f *wardle.Flunder) error {
	f.Status = wardle.FlunderStatus{}
	return nil
}

// PrepareForUpdate keeps the stored status.
func PrepareForUpdate(f, old *wardle.Flunder) error {
	f.Status = old.Status
	return nil
}

// ValidateUpdate validates the new flunder as a new one.
func ValidateUpdate(f, _ *wardle.Flunder) field.ErrorList {
	return validation.ValidateFlunder(f)
}

// Reference is the name a flunder refers to, whichever kind of object it is.
func Reference(f *wardle.Flunder) string {
	if f.Spec.ReferenceType == wardle.FischerReferenceType {
		return f.Spec.FischerReference
	}
	return f.Spec.FlunderReference
}

// FlunderRow is a flunder's cells in kubectl get.
func FlunderRow(f *wardle.Flunder) []any {
	return []any{f.Metadata.Name, string(f.Spec.ReferenceType), Reference(f), createdAt(&f.Metadata)}
}

// FischerRow is a fischer's cells in kubectl get.
func FischerRow(f *v1alpha1.Fischer) []any {
	return []any{f.Metadata.Name, strings.Join(f.DisallowedFlunders, ","), createdAt(&f.Metadata)}
}

// createdAt is the creation timestamp as kubectl shows it in "Created At" (null when unset).
func createdAt(m *guest.ObjectMeta) any {
	if m.CreationTimestamp == "" {
		return nil
	}
	return m.CreationTimestamp
}

// Flunders is the flunders resource.
var Flunders = &guest.Resource[wardle.Flunder]{
	Kind: "Flunder", Plural: "flunders", Singular: "flunder",
	ShortNames: []string{"fl"}, Categories: []string{"wardle"},
	Versions: []guest.Version{
		{Name: v1beta1.Version, Served: true, Schema: flunderV1beta1Schema},
		{Name: v1alpha1.Version, Served: true, Storage: true, Schema: flunderV1alpha1Schema},
	},
	VersionTypes: map[string]guest.VersionType[wardle.Flunder]{
		v1alpha1.Version: guest.NewVersionType(v1alpha1.Convert_v1alpha1_Flunder_To_wardle_Flunder,
			v1alpha1.Convert_wardle_Flunder_To_v1alpha1_Flunder, v1alpha1.SetDefaults_Flunder),
		v1beta1.Version: guest.NewVersionType(v1beta1.Convert_v1beta1_Flunder_To_wardle_Flunder,
			v1beta1.Convert_wardle_Flunder_To_v1beta1_Flunder, nil),
	},

	PrepareForCreate: PrepareForCreate,
	Validate:         validation.ValidateFlunder,
	PrepareForUpdate: PrepareForUpdate,
	ValidateUpdate:   ValidateUpdate,
	// A PUT must name the resourceVersion it replaces.
	RequireResourceVersionOnUpdate: true,
	SelectableFields: map[string]func(*wardle.Flunder) string{
		ReferenceTypeField: func(f *wardle.Flunder) string { return string(f.Spec.ReferenceType) },
	},

	Columns: []guest.Column{
		nameColumn,
		{Name: "Reference Type", Type: "string", Description: "The reference type."},
		{Name: "Reference", Type: "string", Description: "The name of the referenced flunder or fischer."},
		createdAtColumn,
	},
	Row: FlunderRow,

	StatusSubresource:    true,
	ValidateStatusUpdate: validation.ValidateFlunderStatusUpdate,
	Scale: &guest.ScalePaths{
		SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ".status.selector",
	},
}

// Fischers is the fischers resource.
var Fischers = &guest.Resource[v1alpha1.Fischer]{
	Kind: "Fischer", Plural: "fischers", Singular: "fischer",
	ShortNames: []string{"fi"}, Categories: []string{"wardle"},
	ClusterScoped:                  true,
	Versions:                       []guest.Version{{Name: v1alpha1.Version, Served: true, Storage: true, Schema: fischerSchema}},
	RequireResourceVersionOnUpdate: true,
	Columns: []guest.Column{
		nameColumn,
		{Name: "Disallowed Flunders", Type: "string", Description: "The names of flunders that are disallowed."},
		createdAtColumn,
	},
	Row: FischerRow,
}

var nameColumn = guest.Column{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique " +
	"within a namespace. Is required when creating resources, although some resources may allow a client to request " +
	"the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and " +
	"configuration definition. Cannot be updated. More info: " +
	"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"}

var createdAtColumn = guest.Column{Name: "Created At", Type: "date", Description: "CreationTimestamp is a " +
	"timestamp representing the server time when this object was created. It is not guaranteed to be set in " +
	"happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 " +
	"form and is in UTC."}

func init() {
	guest.Register(guest.Plugin{
		Group:     wardle.GroupName,
		Resources: []guest.Definition{Flunders, Fischers},
		// BanFlunder lists the fischers.
		Reads:         []guest.GroupResource{{Group: wardle.GroupName, Resource: "fischers"}},
		MutatingRules: banflunder.Rules,
		Admit:         banflunder.Admit,
	})
}

func main() {}
