package v1alpha1

import (
	"reflect"
	"testing"

	"wardle/apis/wardle"
)

func alpha(reference string, referenceType *ReferenceType) *Flunder {
	return &Flunder{Spec: FlunderSpec{Reference: reference, ReferenceType: referenceType}}
}

func ref(t ReferenceType) *ReferenceType { return &t }

func internal(flunder, fischer string, t wardle.ReferenceType) wardle.FlunderSpec {
	return wardle.FlunderSpec{FlunderReference: flunder, FischerReference: fischer, ReferenceType: t}
}

func TestTheReferenceTypePicksTheReference(t *testing.T) {
	for _, c := range []struct {
		in   *Flunder
		want wardle.FlunderSpec
	}{
		{alpha("f", ref(FlunderReferenceType)), internal("f", "", wardle.FlunderReferenceType)},
		{alpha("f", ref(FischerReferenceType)), internal("", "f", wardle.FischerReferenceType)},
		{alpha("f", nil), internal("", "", "")},
		{alpha("f", ref("Other")), internal("", "", "")},
	} {
		var out wardle.Flunder
		if err := Convert_v1alpha1_Flunder_To_wardle_Flunder(c.in, &out); err != nil || !reflect.DeepEqual(out.Spec, c.want) {
			t.Errorf("%+v: got %+v, want %+v (%v)", c.in.Spec, out.Spec, c.want, err)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	for _, in := range []*Flunder{alpha("f", ref(FlunderReferenceType)), alpha("f", ref(FischerReferenceType)), alpha("", nil)} {
		var hub wardle.Flunder
		var back Flunder
		_ = Convert_v1alpha1_Flunder_To_wardle_Flunder(in, &hub)
		_ = Convert_wardle_Flunder_To_v1alpha1_Flunder(&hub, &back)
		if !reflect.DeepEqual(&back, in) {
			t.Errorf("%+v came back as %+v", in.Spec, back.Spec)
		}
	}
	var out Flunder
	both := &wardle.Flunder{Spec: internal("a", "b", wardle.FischerReferenceType)}
	_ = Convert_wardle_Flunder_To_v1alpha1_Flunder(both, &out)
	if out.Spec.Reference != "b" || *out.Spec.ReferenceType != FischerReferenceType {
		t.Errorf("the reference type picks the reference: %+v", out.Spec)
	}
}

func TestAReferenceWithoutTypeDefaultsToFlunder(t *testing.T) {
	for _, referenceType := range []*ReferenceType{nil, ref("")} {
		f := alpha("other", referenceType)
		SetDefaults_Flunder(f)
		if f.Spec.ReferenceType == nil || *f.Spec.ReferenceType != FlunderReferenceType {
			t.Errorf("defaulted to %v", f.Spec.ReferenceType)
		}
	}
	f := alpha("other", ref(FischerReferenceType))
	SetDefaults_Flunder(f)
	if *f.Spec.ReferenceType != FischerReferenceType {
		t.Error("a set type changed")
	}
	f = alpha("", nil)
	SetDefaults_Flunder(f)
	if f.Spec.ReferenceType != nil {
		t.Error("no reference, no type")
	}
}
