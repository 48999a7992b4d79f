package guest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// VersionType is the Go type of one version of a resource whose hooks see an internal type T, as
// k8s.io/apiserver's strategies see a resource's internal type whatever the version of the request: made by
// NewVersionType, given in Resource.VersionTypes.
type VersionType[T any] interface {
	// toInternal reads an object of this version (JSON) as the internal type.
	toInternal(object []byte) (*T, error)
	// fromInternal writes an internal object as this version (JSON), with apiVersion and kind set.
	fromInternal(obj *T, apiVersion, kind string) ([]byte, error)
	// setDefaults sets this version's defaults on an object of it (JSON); ok is false when it has none.
	setDefaults(object []byte) (defaulted []byte, ok bool, err error)
}

// NewVersionType describes a version whose Go type is V (with TypeMeta embedded, ObjectMeta under
// `json:"metadata"`): toInternal and fromInternal convert between V and the internal type T, as the conversion
// functions of a Kubernetes API group do (Convert_v1alpha1_Flunder_To_wardle_Flunder...), and setDefaults (nil
// for none) sets the version's defaults, as its SetDefaults_ functions do: on objects of this version only, before
// they are converted.
//
// A version's Go type without TypeMeta cannot carry its apiVersion: NewVersionType panics, which stops the plugin
// from loading with that message.
func NewVersionType[V, T any](toInternal func(in *V, out *T) error, fromInternal func(in *T, out *V) error,
	setDefaults func(obj *V)) VersionType[T] {
	if _, ok := any(new(V)).(typeMetaHolder); !ok {
		var v V
		panic(fmt.Sprintf("guest.NewVersionType: %T does not embed guest.TypeMeta, so it cannot carry its apiVersion", v))
	}
	if toInternal == nil || fromInternal == nil {
		var v V
		panic(fmt.Sprintf("guest.NewVersionType: %T needs both conversion functions", v))
	}
	return versionType[V, T]{toInternal, fromInternal, setDefaults}
}

type versionType[V, T any] struct {
	to       func(in *V, out *T) error
	from     func(in *T, out *V) error
	defaults func(obj *V)
}

type typeMetaHolder interface{ typeMeta() *TypeMeta }

func (t *TypeMeta) typeMeta() *TypeMeta { return t }

func (vt versionType[V, T]) toInternal(object []byte) (*T, error) {
	var v V
	if err := json.Unmarshal(object, &v); err != nil {
		return nil, BadRequest(fmt.Sprintf("reading the object: %v", err))
	}
	var out T
	if err := vt.to(&v, &out); err != nil {
		return nil, err
	}
	if tm, ok := any(&out).(typeMetaHolder); ok {
		*tm.typeMeta() = *any(&v).(typeMetaHolder).typeMeta()
	}
	return &out, nil
}

func (vt versionType[V, T]) fromInternal(obj *T, apiVersion, kind string) ([]byte, error) {
	var v V
	if err := vt.from(obj, &v); err != nil {
		return nil, err
	}
	*any(&v).(typeMetaHolder).typeMeta() = TypeMeta{APIVersion: apiVersion, Kind: kind}
	return marshal(&v)
}

func (vt versionType[V, T]) setDefaults(object []byte) ([]byte, bool, error) {
	if vt.defaults == nil {
		return nil, false, nil
	}
	var v V
	if err := json.Unmarshal(object, &v); err != nil {
		return nil, false, BadRequest(fmt.Sprintf("reading the object: %v", err))
	}
	vt.defaults(&v)
	b, err := marshal(&v)
	return b, true, err
}

func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("writing the object: %w", err)
	}
	return b, nil
}

// typeMetaOf reads an object's apiVersion and kind.
func typeMetaOf(object []byte) (TypeMeta, error) {
	var tm TypeMeta
	if err := json.Unmarshal(object, &tm); err != nil {
		return tm, BadRequest(fmt.Sprintf("reading the object: %v", err))
	}
	return tm, nil
}

// versionOf is the version of an apiVersion (group/version, or version alone).
func versionOf(apiVersion string) string {
	return apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
}

// object is an object a hook was given, as the hook sees it (T), with what writing it back needs.
type object[T any] struct {
	obj      *T
	typeMeta TypeMeta
	// The version's type, nil for a resource without VersionTypes (T is then the object's type in every version).
	vt VersionType[T]
}

// read reads an object the host sent, in the version its apiVersion names.
func (h resourceHooks[T]) read(data string) (object[T], error) {
	raw := []byte(data)
	if h.r.VersionTypes == nil {
		var obj T
		if err := json.Unmarshal(raw, &obj); err != nil {
			return object[T]{}, BadRequest(fmt.Sprintf("reading the object: %v", err))
		}
		return object[T]{obj: &obj}, nil
	}
	tm, err := typeMetaOf(raw)
	if err != nil {
		return object[T]{}, err
	}
	vt, err := h.versionType(tm.APIVersion)
	if err != nil {
		return object[T]{}, err
	}
	obj, err := vt.toInternal(raw)
	if err != nil {
		return object[T]{}, err
	}
	return object[T]{obj: obj, typeMeta: tm, vt: vt}, nil
}

// write writes an object back in the version it was read in.
func (o object[T]) write() (string, error) {
	var b []byte
	var err error
	if o.vt == nil {
		b, err = marshal(o.obj)
	} else {
		b, err = o.vt.fromInternal(o.obj, o.typeMeta.APIVersion, o.typeMeta.Kind)
	}
	return string(b), err
}

func (h resourceHooks[T]) versionType(apiVersion string) (VersionType[T], error) {
	version := versionOf(apiVersion)
	vt, ok := h.r.VersionTypes[version]
	if !ok {
		return nil, BadRequest(fmt.Sprintf("%s has no Go type for the version %q (apiVersion %q): VersionTypes names %s",
			h.r.Plural, version, apiVersion, h.versionNames()))
	}
	return vt, nil
}

func (h resourceHooks[T]) versionNames() string {
	names := make([]string, 0, len(h.r.VersionTypes))
	for _, v := range h.r.Versions {
		if _, ok := h.r.VersionTypes[v.Name]; ok {
			names = append(names, v.Name)
		}
	}
	return strings.Join(names, ", ")
}

// convertThroughInternal converts an object to toVersion through the internal type.
func (h resourceHooks[T]) convertThroughInternal(data, toVersion string) (string, error) {
	o, err := h.read(data)
	if err != nil {
		return "", err
	}
	if versionOf(o.typeMeta.APIVersion) == toVersion {
		// No conversion, which could lose what the internal type does not hold: only apiVersion is written.
		return data, nil
	}
	to, ok := h.r.VersionTypes[toVersion]
	if !ok {
		return "", BadRequest(fmt.Sprintf("%s has no version %q: VersionTypes names %s", h.r.Plural, toVersion, h.versionNames()))
	}
	group := o.typeMeta.APIVersion[:max(strings.LastIndexByte(o.typeMeta.APIVersion, '/'), 0)]
	apiVersion := toVersion
	if group != "" {
		apiVersion = group + "/" + toVersion
	}
	b, err := to.fromInternal(o.obj, apiVersion, o.typeMeta.Kind)
	return string(b), err
}
