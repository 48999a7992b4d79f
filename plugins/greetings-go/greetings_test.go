package main

import (
	"strings"
	"testing"

	guest "wasm-apiserver.io/guest"
)

func greeting(message string, replicas *int64) *Greeting {
	return &Greeting{Spec: GreetingSpec{Message: message, Replicas: replicas}}
}

func TestDefaultSetsOneReplica(t *testing.T) {
	g := greeting("hi", nil)
	Default(g)
	if g.Spec.Replicas == nil || *g.Spec.Replicas != 1 {
		t.Fatalf("replicas: %v", g.Spec.Replicas)
	}
	three := int64(3)
	g = greeting("hi", &three)
	Default(g)
	if *g.Spec.Replicas != 3 {
		t.Fatalf("a set value changed: %d", *g.Spec.Replicas)
	}
}

func TestValidateNamesEachBrokenField(t *testing.T) {
	eleven := int64(11)
	errs := Validate(greeting(strings.Repeat("a", MaxMessage+1), &eleven))
	if len(errs) != 2 || errs[0].Field != "spec.message" || errs[1].Field != "spec.replicas" {
		t.Fatalf("errors: %v", errs)
	}
	if errs := Validate(greeting("", nil)); len(errs) != 1 || errs[0].Detail != "a greeting says something" {
		t.Fatalf("errors: %v", errs)
	}
	if errs := Validate(greeting("hello", nil)); len(errs) != 0 {
		t.Fatalf("a valid greeting: %v", errs)
	}
}

func TestTheMessageIsImmutable(t *testing.T) {
	errs := ValidateUpdate(greeting("bye", nil), greeting("hello", nil))
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "field is immutable") {
		t.Fatalf("errors: %v", errs)
	}
}

func TestAdmissionRefusesGoodbyesAndWarnsOfShouting(t *testing.T) {
	request := func(message string) *guest.AdmissionRequest {
		return &guest.AdmissionRequest{Operation: "CREATE", Object: []byte(`{"spec":{"message":"` + message + `"}}`)}
	}
	if _, err := ValidateAdmission(request("Goodbye, world")); err == nil || err.Error() != "a greeting may not say goodbye" {
		t.Fatalf("err: %v", err)
	}
	if warnings, err := ValidateAdmission(request("HELLO")); err != nil || len(warnings) != 1 {
		t.Fatalf("warnings %v, err %v", warnings, err)
	}
	if warnings, err := ValidateAdmission(request("Hello")); err != nil || len(warnings) != 0 {
		t.Fatalf("warnings %v, err %v", warnings, err)
	}
}
