package guest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"wasm-apiserver.io/guest/field"
	"wasm-apiserver.io/guest/internal/registry"
)

// The internal type: a size in bytes.
type disk struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Bytes    int64
	Label    string
}

// v1 says the size in MiB and has a label defaulted to "none".
type diskV1 struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		MiB   int64  `json:"mib"`
		Label string `json:"label,omitempty"`
	} `json:"spec"`
}

// v2 says it in bytes.
type diskV2 struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		Bytes int64  `json:"bytes"`
		Label string `json:"label,omitempty"`
	} `json:"spec"`
}

type noTypeMeta struct {
	Metadata ObjectMeta `json:"metadata"`
}

func disks(seen *[]int64) resourceHooks[disk] {
	v1 := NewVersionType(
		func(in *diskV1, out *disk) error {
			out.Metadata, out.Bytes, out.Label = in.Metadata, in.Spec.MiB<<20, in.Spec.Label
			return nil
		},
		func(in *disk, out *diskV1) error {
			out.Metadata, out.Spec.MiB, out.Spec.Label = in.Metadata, in.Bytes>>20, in.Label
			return nil
		},
		func(d *diskV1) {
			if d.Spec.Label == "" {
				d.Spec.Label = "none"
			}
		})
	v2 := NewVersionType(
		func(in *diskV2, out *disk) error {
			if in.Spec.Bytes < 0 {
				return BadRequest("negative size")
			}
			out.Metadata, out.Bytes, out.Label = in.Metadata, in.Spec.Bytes, in.Spec.Label
			return nil
		},
		func(in *disk, out *diskV2) error {
			out.Metadata, out.Spec.Bytes, out.Spec.Label = in.Metadata, in.Bytes, in.Label
			return nil
		},
		nil)
	r := &Resource[disk]{
		Kind: "Disk", Plural: "disks",
		Versions:     []Version{{Name: "v2", Served: true}, {Name: "v1", Served: true, Storage: true}},
		VersionTypes: map[string]VersionType[disk]{"v1": v1, "v2": v2},
		PrepareForCreate: func(d *disk) error {
			d.Bytes += 1 << 20
			return nil
		},
		Validate: func(d *disk) field.ErrorList {
			*seen = append(*seen, d.Bytes)
			return nil
		},
	}
	return resourceHooks[disk]{r}
}

func decoded(t *testing.T, object string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(object), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, object)
	}
	return m
}

const diskInV1 = `{"apiVersion":"x.io/v1","kind":"Disk","metadata":{"name":"a","uid":"u"},"spec":{"mib":2}}`
const diskInV2 = `{"apiVersion":"x.io/v2","kind":"Disk","metadata":{"name":"a","uid":"u"},"spec":{"bytes":3145728,"label":"l"}}`

func TestHooksSeeTheInternalTypeInEveryVersion(t *testing.T) {
	var seen []int64
	h := disks(&seen)
	for _, object := range []string{diskInV1, diskInV2} {
		if errs := h.Validate(object); len(errs) != 0 {
			t.Fatalf("errors: %v", errs)
		}
	}
	if !reflect.DeepEqual(seen, []int64{2 << 20, 3 << 20}) {
		t.Fatalf("validate saw %v", seen)
	}
}

func TestObjectsAreWrittenBackInTheirVersion(t *testing.T) {
	h := disks(new([]int64))
	prepared, err := h.PrepareForCreate(diskInV2)
	if err != nil {
		t.Fatal(err)
	}
	got := decoded(t, prepared)
	want := decoded(t, `{"apiVersion":"x.io/v2","kind":"Disk","metadata":{"name":"a","uid":"u"},"spec":{"bytes":4194304,"label":"l"}}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prepared %s", prepared)
	}
}

func TestVersionDefaultsApplyToTheirVersionOnly(t *testing.T) {
	h := disks(new([]int64))
	defaulted, err := h.Default(diskInV1)
	if err != nil {
		t.Fatal(err)
	}
	if got := decoded(t, defaulted)["spec"]; !reflect.DeepEqual(got, map[string]any{"mib": 2.0, "label": "none"}) {
		t.Fatalf("defaulted %s", defaulted)
	}
	unchanged, err := h.Default(diskInV2)
	if err != nil || unchanged != diskInV2 {
		t.Fatalf("v2 has no defaults: %s %v", unchanged, err)
	}
}

func TestConversionGoesThroughTheInternalType(t *testing.T) {
	h := disks(new([]int64))
	converted, err := h.Convert(diskInV2, "v1")
	if err != nil {
		t.Fatal(err)
	}
	want := decoded(t, `{"apiVersion":"x.io/v1","kind":"Disk","metadata":{"name":"a","uid":"u"},"spec":{"mib":3,"label":"l"}}`)
	if got := decoded(t, converted); !reflect.DeepEqual(got, want) {
		t.Fatalf("converted %s", converted)
	}
	same, err := h.Convert(diskInV2, "v2")
	if err != nil || same != diskInV2 {
		t.Fatalf("the same version is left as it is: %s %v", same, err)
	}
}

func TestUnknownVersionsAndUnreadableObjectsAreBadRequests(t *testing.T) {
	h := disks(new([]int64))
	var status *registry.StatusError
	_, err := h.Convert(diskInV1, "v9")
	if !errors.As(err, &status) || status.Reason != "BadRequest" || !strings.Contains(err.Error(), `no version "v9"`) {
		t.Fatalf("to v9: %v", err)
	}
	_, err = h.PrepareForCreate(strings.Replace(diskInV1, "x.io/v1", "x.io/v3", 1))
	if !errors.As(err, &status) || !strings.Contains(err.Error(), "VersionTypes names v2, v1") {
		t.Fatalf("from v3: %v", err)
	}
	_, err = h.PrepareForCreate(strings.Replace(diskInV2, "3145728", "-1", 1))
	if !errors.As(err, &status) || err.Error() != "negative size" {
		t.Fatalf("the conversion's own error: %v", err)
	}
	errs := h.Validate(strings.Replace(diskInV1, `"mib":2`, `"mib":"two"`, 1))
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || !strings.Contains(errs[0].Detail, "reading the object") {
		t.Fatalf("unreadable: %v", errs)
	}
}

func TestAVersionTypeWithoutTypeMetaIsRefused(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "does not embed guest.TypeMeta") {
			t.Fatalf("panic: %v", p)
		}
	}()
	NewVersionType(func(*noTypeMeta, *disk) error { return nil }, func(*disk, *noTypeMeta) error { return nil }, nil)
}

func TestHooksOfInterfacesTheWorldDoesNotExportAreNamed(t *testing.T) {
	Register(Plugin{
		Group: "x.io",
		Resources: []Definition{&Resource[disk]{
			Kind: "Disk", Plural: "disks",
			Default:  func(*disk) {},
			Validate: func(*disk) field.ErrorList { return nil },
			Columns:  []Column{{Name: "Name"}},
		}},
		ValidateAdmission: func(*AdmissionRequest) ([]string, error) { return nil, nil },
	})
	defer func() { registry.Current = nil }()
	all := "scheme,create-strategy,update-strategy,delete-strategy,lister,defaulter,table-convertor,validating-admission"
	if problems := registry.CheckWorldExports(registry.Current, all); len(problems) != 0 {
		t.Fatalf("every interface exported: %v", problems)
	}
	problems := registry.CheckWorldExports(registry.Current, "scheme,create-strategy,update-strategy")
	want := []string{
		"disks: Resource.Default is a hook of the defaulter interface, which the world does not export, so it would " +
			"never run: add `export wasm-apiserver:plugin/defaulter@0.1.1;` to the world in wit/ (or leave the hook unset)",
		"disks: Resource.Columns is a hook of the table-convertor interface",
		"Plugin.ValidateAdmission is a hook of the validating-admission interface",
	}
	if len(problems) != len(want) {
		t.Fatalf("problems: %q", problems)
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, problems[i], w)
		}
	}
}

func TestTheResourceDefaultRunsOnTheInternalTypeAfterTheVersionDefaults(t *testing.T) {
	h := disks(new([]int64))
	h.r.Default = func(d *disk) {
		d.Label += "+resource"
	}
	defaulted, err := h.Default(diskInV1)
	if err != nil {
		t.Fatal(err)
	}
	got := decoded(t, defaulted)
	if got["apiVersion"] != "x.io/v1" || !reflect.DeepEqual(got["spec"], map[string]any{"mib": 2.0, "label": "none+resource"}) {
		t.Fatalf("v1: %s", defaulted)
	}
	defaulted, err = h.Default(diskInV2)
	if err != nil {
		t.Fatal(err)
	}
	if got := decoded(t, defaulted)["spec"]; !reflect.DeepEqual(got, map[string]any{"bytes": 3145728.0, "label": "l+resource"}) {
		t.Fatalf("v2: %s", defaulted)
	}
}
