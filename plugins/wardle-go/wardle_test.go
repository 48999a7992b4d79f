package main

import (
	"reflect"
	"testing"

	"wardle/apis/wardle"
	"wardle/apis/wardle/v1alpha1"

	guest "wasm-apiserver.io/guest"
)

func TestRowsMatchTheColumns(t *testing.T) {
	f := &wardle.Flunder{
		Metadata: guest.ObjectMeta{Name: "a", CreationTimestamp: "2024-05-06T07:08:09Z"},
		Spec:     wardle.FlunderSpec{FischerReference: "b", ReferenceType: wardle.FischerReferenceType},
	}
	if got := FlunderRow(f); !reflect.DeepEqual(got, []any{"a", "Fischer", "b", "2024-05-06T07:08:09Z"}) {
		t.Errorf("flunder row %v", got)
	}
	if len(FlunderRow(f)) != len(Flunders.Columns) {
		t.Error("one cell a column")
	}
	fischer := &v1alpha1.Fischer{Metadata: guest.ObjectMeta{Name: "f"}, DisallowedFlunders: []string{"x", "y"}}
	if got := FischerRow(fischer); !reflect.DeepEqual(got, []any{"f", "x,y", nil}) {
		t.Errorf("fischer row %v", got)
	}
	if len(FischerRow(fischer)) != len(Fischers.Columns) {
		t.Error("one cell a column")
	}
}

func TestUpdatesKeepTheStoredStatusAndCreatesStartWithout(t *testing.T) {
	old := &wardle.Flunder{Status: wardle.FlunderStatus{Replicas: 3}}
	f := &wardle.Flunder{Status: wardle.FlunderStatus{Replicas: 9}}
	_ = PrepareForUpdate(f, old)
	if f.Status.Replicas != 3 {
		t.Errorf("status %+v", f.Status)
	}
	_ = PrepareForCreate(f)
	if f.Status != (wardle.FlunderStatus{}) {
		t.Errorf("status %+v", f.Status)
	}
}
