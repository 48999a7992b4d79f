// Package guest is the Go SDK of wasm-apiserver plugins: a plugin serves an API group whose resources are Go types,
// with hooks as k8s.io/apiserver's strategies have them (defaulting, prepare-for-create and -update, validation,
// field selectors), built with stock Go for WebAssembly (GOOS=wasip1, `go:wasmexport`) into a component.
//
// A plugin registers itself from an init function of its package main, which also imports the exports:
//
//	import (
//		guest "wasm-apiserver.io/guest"
//		_ "wasm-apiserver.io/guest/bindings/wit_exports"
//	)
//
//	func init() {
//		guest.Register(guest.Plugin{Group: "greetings.example.com", Resources: []guest.Definition{
//			&guest.Resource[Greeting]{Kind: "Greeting", Plural: "greetings", ...},
//		}})
//	}
//
//	func main() {}
//
// A panic in a hook is logged with its stack at error level and answered as an internal error (500) naming the
// call and the panic's message; a fatal runtime error ends the instance, and the host answers 500 with what the
// runtime wrote to standard error.
package guest

import (
	"encoding/json"
	"fmt"
	"sort"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wasm-apiserver.io/guest/bindings/wasm_apiserver_plugin_scheme"
	"wasm-apiserver.io/guest/field"
	"wasm-apiserver.io/guest/internal/registry"
)

// TypeMeta is an object's apiVersion and kind.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta is an object's metadata. The host owns it: it sets uid, resourceVersion, generation and the
// timestamps, and keeps a plugin's changes to labels and annotations only.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          string            `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
	ManagedFields              json.RawMessage   `json:"managedFields,omitempty"`
}

// OwnerReference names an object's owner.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// Version is one version of a resource.
type Version struct {
	// Name, such as v1alpha1.
	Name string
	// Served over HTTP.
	Served bool
	// The version objects are stored in: exactly one of a resource's versions.
	Storage bool
	// Deprecated: clients are warned (with DeprecationWarning, or a default text).
	Deprecated         bool
	DeprecationWarning string
	// The OpenAPI v3 schema of the object, as JSON: `type: object` with spec, status and any other top-level
	// field (the host adds apiVersion, kind and metadata).
	Schema string
}

// GroupResource names a resource of the tenant a plugin reads through Get and List.
type GroupResource struct {
	Group    string
	Resource string
}

// Definition is a resource of a plugin: a *Resource[T].
type Definition interface {
	hooks() registry.Hooks
}

// Column is a column of a resource's table (kubectl get).
type Column = registry.Column

// ScalePaths locates an object's replica counts for its /scale subresource.
type ScalePaths = registry.ScalePaths

// AdmissionRule says which requests an admission hook sees.
type AdmissionRule = registry.AdmissionRule

// AdmissionRequest is what an admission hook is told about the request it admits.
type AdmissionRequest = registry.AdmissionRequest

// Plugin is what a plugin serves.
type Plugin struct {
	// The API group, such as wardle.example.com.
	Group string
	// Its resources.
	Resources []Definition
	// The resources it reads through Get and List; any other read is refused.
	Reads []GroupResource

	// Mutating admission (needs the world to export mutating-admission): the requests Admit sees, and Admit,
	// which returns the object to store instead (any value, marshalled to JSON) or nil to keep it, or an error
	// that rejects the request.
	MutatingRules []AdmissionRule
	Admit         func(request *AdmissionRequest) (any, error)
	// Validating admission (validating-admission): the requests ValidateAdmission sees, and ValidateAdmission,
	// which returns warnings, or an error that rejects the request (Forbidden, as the BanFlunder plugin does).
	ValidatingRules   []AdmissionRule
	ValidateAdmission func(request *AdmissionRequest) ([]string, error)
}

// Register makes p the plugin this component serves: call it once, from an init function.
func Register(p Plugin) {
	reg := &registry.Plugin{Group: p.Group}
	for _, d := range p.Resources {
		reg.Resources = append(reg.Resources, d.hooks())
	}
	for _, r := range p.Reads {
		reg.Reads = append(reg.Reads, wasm_apiserver_plugin_scheme.GroupResource{Group: r.Group, Resource: r.Resource})
	}
	reg.MutatingRules = p.MutatingRules
	reg.ValidatingRules = p.ValidatingRules
	reg.ValidateAdmission = p.ValidateAdmission
	if p.Admit != nil {
		admit := p.Admit
		reg.Admit = func(request *AdmissionRequest) ([]byte, error) {
			patched, err := admit(request)
			if err != nil || patched == nil {
				return nil, err
			}
			return json.Marshal(patched)
		}
	}
	registry.Current = reg
}

// Resource is a resource whose objects are T (their Go type in every version, or with VersionTypes the internal
// type; with TypeMeta, ObjectMeta under `json:"metadata"`, and the rest of the object: fields T leaves out are lost
// when a hook returns the object). Every hook is optional.
type Resource[T any] struct {
	Kind, Plural, Singular string
	ShortNames, Categories []string
	// Cluster-wide objects; namespaced when false.
	ClusterScoped bool
	// The versions, most preferred first.
	Versions []Version

	// Default sets the defaults of an object read from a request or from storage (with VersionTypes, after its
	// version's own defaults).
	Default func(obj *T)
	// PrepareForCreate changes a new object before it is validated and stored (clear status, set fields).
	PrepareForCreate func(obj *T) error
	// Validate checks a new object.
	Validate func(obj *T) field.ErrorList
	// PrepareForUpdate changes an updated object, knowing the stored one.
	PrepareForUpdate func(obj, old *T) error
	// ValidateUpdate checks an update.
	ValidateUpdate func(obj, old *T) field.ErrorList
	// ValidateDelete may refuse a deletion (Forbidden, Conflict...).
	ValidateDelete func(obj *T) error
	// SelectableFields are the fields a field selector may name (besides metadata.name and metadata.namespace), with
	// how to read each from an object.
	SelectableFields map[string]func(obj *T) string
	// AllowCreateOnUpdate lets a PUT create the object.
	AllowCreateOnUpdate bool
	// RequireResourceVersionOnUpdate refuses a PUT without metadata.resourceVersion (an unconditional update).
	RequireResourceVersionOnUpdate bool

	// Columns are the columns of kubectl get (needs the world to export table-convertor), and Row an object's
	// cells, one per column (a column named Age of type date shows the age of the timestamp given).
	Columns []Column
	Row     func(obj *T) []any

	// StatusSubresource serves /status (status-strategy): a status update keeps only the object's status, after
	// the two optional hooks.
	StatusSubresource      bool
	PrepareForStatusUpdate func(obj, old *T) error
	ValidateStatusUpdate   func(obj, old *T) field.ErrorList

	// Scale serves /scale (scaler): where the replica counts are.
	Scale *ScalePaths

	// VersionTypes makes T the resource's internal type, which every hook sees whatever the version of the object
	// (as k8s.io/apiserver's strategies see internal types): each served version's Go type, by version name, with
	// its conversions to and from T and its defaults (NewVersionType). Objects are read into their version's type,
	// defaulted in it, converted to T for the hooks, and written back in their version; conversion between versions
	// goes through T, unless Convert is given. Without VersionTypes, T is the objects' type in every version.
	VersionTypes map[string]VersionType[T]

	// Convert converts an object (JSON, its apiVersion names its version) to toVersion (converter): the returned
	// value is marshalled to JSON, with apiVersion set and metadata carried over unchanged.
	Convert func(object []byte, toVersion string) (any, error)
}

func (r *Resource[T]) hooks() registry.Hooks { return resourceHooks[T]{r} }

type resourceHooks[T any] struct{ r *Resource[T] }

func (h resourceHooks[T]) Info() wasm_apiserver_plugin_scheme.Resource {
	r := h.r
	scope := wasm_apiserver_plugin_scheme.ScopeNamespaced
	if r.ClusterScoped {
		scope = wasm_apiserver_plugin_scheme.ScopeCluster
	}
	versions := make([]wasm_apiserver_plugin_scheme.Version, 0, len(r.Versions))
	for _, v := range r.Versions {
		warning := witTypes.None[string]()
		if v.DeprecationWarning != "" {
			warning = witTypes.Some(v.DeprecationWarning)
		}
		versions = append(versions, wasm_apiserver_plugin_scheme.Version{
			Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated,
			DeprecationWarning: warning, Schema: v.Schema,
		})
	}
	return wasm_apiserver_plugin_scheme.Resource{
		Kind: r.Kind, Plural: r.Plural, Singular: r.Singular,
		ShortNames: orEmpty(r.ShortNames), Categories: orEmpty(r.Categories),
		Scope: scope, Versions: versions,
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h resourceHooks[T]) Default(object string) (string, error) {
	if h.r.VersionTypes != nil {
		return h.defaultVersioned(object)
	}
	if h.r.Default == nil {
		return object, nil
	}
	o, err := h.read(object)
	if err != nil {
		return "", err
	}
	h.r.Default(o.obj)
	return o.write()
}

// defaultVersioned sets the defaults of the object's version, then the resource's Default on the internal type.
func (h resourceHooks[T]) defaultVersioned(data string) (string, error) {
	tm, err := typeMetaOf([]byte(data))
	if err != nil {
		return "", err
	}
	vt, err := h.versionType(tm.APIVersion)
	if err != nil {
		return "", err
	}
	if defaulted, ok, err := vt.setDefaults([]byte(data)); err != nil {
		return "", err
	} else if ok {
		data = string(defaulted)
	}
	if h.r.Default == nil {
		return data, nil
	}
	// The version is known: the object goes straight to its type, its apiVersion not read again.
	obj, err := vt.toInternal([]byte(data))
	if err != nil {
		return "", err
	}
	h.r.Default(obj)
	return object[T]{obj: obj, typeMeta: tm, vt: vt}.write()
}

func (h resourceHooks[T]) PrepareForCreate(object string) (string, error) {
	if h.r.PrepareForCreate == nil {
		return object, nil
	}
	o, err := h.read(object)
	if err != nil {
		return "", err
	}
	if err := h.r.PrepareForCreate(o.obj); err != nil {
		return "", err
	}
	return o.write()
}

func (h resourceHooks[T]) Validate(object string) field.ErrorList {
	if h.r.Validate == nil {
		return nil
	}
	o, err := h.read(object)
	if err != nil {
		return unreadable(err)
	}
	return h.r.Validate(o.obj)
}

// unreadable is the validation of an object a hook could not read: the reason, at the object's root.
func unreadable(err error) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, err)}
}

func (h resourceHooks[T]) PrepareForUpdate(object, old string) (string, error) {
	return prepareUpdate(h, h.r.PrepareForUpdate, object, old)
}

func (h resourceHooks[T]) ValidateUpdate(object, old string) field.ErrorList {
	return validateUpdate(h, h.r.ValidateUpdate, object, old)
}

// prepareUpdate runs a hook that prepares an update (of the object or of its status) on the two objects read.
func prepareUpdate[T any](h resourceHooks[T], hook func(obj, old *T) error, object, old string) (string, error) {
	if hook == nil {
		return object, nil
	}
	o, err := h.read(object)
	if err != nil {
		return "", err
	}
	was, err := h.read(old)
	if err != nil {
		return "", err
	}
	if err := hook(o.obj, was.obj); err != nil {
		return "", err
	}
	return o.write()
}

// validateUpdate runs a hook that validates an update (of the object or of its status) on the two objects read.
func validateUpdate[T any](h resourceHooks[T], hook func(obj, old *T) field.ErrorList, object, old string) field.ErrorList {
	if hook == nil {
		return nil
	}
	o, err := h.read(object)
	if err != nil {
		return unreadable(err)
	}
	was, err := h.read(old)
	if err != nil {
		return unreadable(err)
	}
	return hook(o.obj, was.obj)
}

func (h resourceHooks[T]) ValidateDelete(object string) error {
	if h.r.ValidateDelete == nil {
		return nil
	}
	o, err := h.read(object)
	if err != nil {
		return err
	}
	return h.r.ValidateDelete(o.obj)
}

func (h resourceHooks[T]) SelectableFields() []string {
	names := make([]string, 0, len(h.r.SelectableFields))
	for name := range h.r.SelectableFields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (h resourceHooks[T]) Fields(object string) ([][2]string, error) {
	if len(h.r.SelectableFields) == 0 {
		return nil, nil
	}
	o, err := h.read(object)
	if err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(h.r.SelectableFields))
	for _, name := range h.SelectableFields() {
		out = append(out, [2]string{name, h.r.SelectableFields[name](o.obj)})
	}
	return out, nil
}

func (h resourceHooks[T]) AllowCreateOnUpdate() bool { return h.r.AllowCreateOnUpdate }

func (h resourceHooks[T]) AllowUnconditionalUpdate() bool { return !h.r.RequireResourceVersionOnUpdate }

func (h resourceHooks[T]) Columns() []Column { return h.r.Columns }

func (h resourceHooks[T]) Row(object string) (string, error) {
	if h.r.Row == nil {
		return "", fmt.Errorf("resource %s has columns but no Row hook", h.r.Plural)
	}
	o, err := h.read(object)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(h.r.Row(o.obj))
	return string(b), err
}

func (h resourceHooks[T]) HasStatus() bool { return h.r.StatusSubresource }

func (h resourceHooks[T]) PrepareForStatusUpdate(object, old string) (string, error) {
	return prepareUpdate(h, h.r.PrepareForStatusUpdate, object, old)
}

func (h resourceHooks[T]) ValidateStatusUpdate(object, old string) field.ErrorList {
	return validateUpdate(h, h.r.ValidateStatusUpdate, object, old)
}

func (h resourceHooks[T]) Scale() *ScalePaths { return h.r.Scale }

func (h resourceHooks[T]) Defined() []registry.DefinedHook {
	r := h.r
	var hooks []registry.DefinedHook
	add := func(set bool, hook string, interfaces ...string) {
		if set {
			hooks = append(hooks, registry.DefinedHook{Hook: "Resource." + hook, Interfaces: interfaces})
		}
	}
	add(r.Default != nil, "Default", "defaulter")
	add(r.PrepareForCreate != nil, "PrepareForCreate", "create-strategy")
	add(r.Validate != nil, "Validate", "create-strategy")
	add(r.PrepareForUpdate != nil, "PrepareForUpdate", "update-strategy")
	add(r.ValidateUpdate != nil, "ValidateUpdate", "update-strategy")
	add(r.ValidateDelete != nil, "ValidateDelete", "delete-strategy")
	add(len(r.SelectableFields) > 0, "SelectableFields", "lister")
	add(len(r.Columns) > 0 || r.Row != nil, "Columns", "table-convertor")
	add(r.StatusSubresource, "StatusSubresource", "status-strategy")
	add(r.Scale != nil, "Scale", "scaler")
	add(r.Convert != nil, "Convert", "converter")
	add(len(r.VersionTypes) > 1, "VersionTypes", "converter")
	return hooks
}

func (h resourceHooks[T]) Convert(object, toVersion string) (string, error) {
	if h.r.Convert == nil {
		if h.r.VersionTypes != nil {
			return h.convertThroughInternal(object, toVersion)
		}
		return "", fmt.Errorf("resource %s has no Convert hook nor VersionTypes: it cannot be converted to %s", h.r.Plural, toVersion)
	}
	converted, err := h.r.Convert([]byte(object), toVersion)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(converted)
	return string(b), err
}
