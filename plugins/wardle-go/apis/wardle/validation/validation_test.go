package validation

import (
	"reflect"
	"testing"

	"wardle/apis/wardle"

	guest "wasm-apiserver.io/guest"
	"wasm-apiserver.io/guest/field"
)

func spec(flunder, fischer string, referenceType wardle.ReferenceType) *wardle.Flunder {
	return &wardle.Flunder{Spec: wardle.FlunderSpec{FlunderReference: flunder, FischerReference: fischer, ReferenceType: referenceType}}
}

// errs is each error's field and detail, all of which must be Invalid.
func errs(t *testing.T, list field.ErrorList) [][2]string {
	t.Helper()
	out := [][2]string{}
	for _, e := range list {
		if e.Type != field.ErrorTypeInvalid {
			t.Fatalf("not Invalid: %v", e)
		}
		out = append(out, [2]string{e.Field, e.Detail})
	}
	return out
}

func TestFlunderSpecs(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *wardle.Flunder
		want [][2]string
	}{
		{"empty", spec("", "", ""), [][2]string{}},
		{"flunder", spec("f", "", wardle.FlunderReferenceType), [][2]string{}},
		{"fischer", spec("", "f", wardle.FischerReferenceType), [][2]string{}},
		{"both", spec("a", "b", wardle.FlunderReferenceType), [][2]string{{"spec.fischerReference", `"b": cannot be set with flunderReference at the same time`}}},
		{"flunder without its type", spec("a", "", ""), [][2]string{{"spec.flunderReference", `"a": cannot be set if referenceType is not Flunder`}}},
		{"fischer without its type", spec("", "b", wardle.FlunderReferenceType), [][2]string{{"spec.fischerReference", `"b": cannot be set if referenceType is not Fischer`}}},
		{"fischer type without reference", spec("", "", wardle.FischerReferenceType), [][2]string{{"spec.fischerReference", `"": cannot be empty if referenceType is Fischer`}}},
		{"flunder type without reference", spec("", "", wardle.FlunderReferenceType), [][2]string{{"spec.flunderReference", `"": cannot be empty if referenceType is Flunder`}}},
		{"unknown type", spec("", "b", "Other"), [][2]string{
			{"spec.fischerReference", `"b": cannot be set if referenceType is not Fischer`},
			{"spec.referenceType", `"Other": must be Flunder or Fischer`},
		}},
	} {
		if got := errs(t, ValidateFlunder(c.in)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	minus := int64(-1)
	f := spec("", "", "")
	f.Spec.Replicas = &minus
	if got := errs(t, ValidateFlunder(f)); !reflect.DeepEqual(got, [][2]string{{"spec.replicas", "-1: must be greater than or equal to 0"}}) {
		t.Errorf("replicas: %v", got)
	}
}

func TestStatusUpdates(t *testing.T) {
	f := &wardle.Flunder{Metadata: guest.ObjectMeta{Generation: 3}, Status: wardle.FlunderStatus{Replicas: 2, ObservedGeneration: 3, Selector: "a=b"}}
	if got := errs(t, ValidateFlunderStatusUpdate(f, f)); len(got) != 0 {
		t.Fatalf("valid: %v", got)
	}
	f.Status = wardle.FlunderStatus{Replicas: -1, ObservedGeneration: 4}
	got := errs(t, ValidateFlunderStatusUpdate(f, f))
	if len(got) != 2 || got[0][0] != "status.replicas" || got[1] != [2]string{"status.observedGeneration", "4: must not be greater than metadata.generation (3)"} {
		t.Fatalf("invalid: %v", got)
	}
}
