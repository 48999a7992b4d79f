package main

import "testing"

func TestPrepareTrimsTheMessage(t *testing.T) {
	obj := &@KIND@{Spec: @KIND@Spec{Message: "  Hello  "}}
	if err := Prepare(obj); err != nil || obj.Spec.Message != "Hello" {
		t.Fatalf("message %q, err %v", obj.Spec.Message, err)
	}
}

func TestABlankMessageIsRequired(t *testing.T) {
	errs := Validate(&@KIND@{Spec: @KIND@Spec{Message: "   "}})
	if len(errs) != 1 || errs[0].Field != "spec.message" {
		t.Fatalf("errors: %v", errs)
	}
	if errs := Validate(&@KIND@{Spec: @KIND@Spec{Message: "Hi"}}); len(errs) != 0 {
		t.Fatalf("a valid object: %v", errs)
	}
}
