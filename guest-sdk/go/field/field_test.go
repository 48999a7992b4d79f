package field

import "testing"

func TestPathsRenderLikeKubernetes(t *testing.T) {
	spec := NewPath("spec")
	cases := map[string]*Path{
		"spec":                        spec,
		"spec.replicas":               NewPath("spec", "replicas"),
		"spec.containers[0].name":     spec.Child("containers").Index(0).Child("name"),
		"metadata.labels[app]":        NewPath("metadata").Child("labels").Key("app"),
		"spec.template.spec.replicas": spec.Child("template", "spec", "replicas"),
	}
	for want, p := range cases {
		if got := p.String(); got != want {
			t.Errorf("%q: got %q", want, got)
		}
	}
}

func TestErrorsCarryTheirValueAndDetail(t *testing.T) {
	p := NewPath("spec", "mode")
	if e := Invalid(p, "Slow", "must be fast"); e.Detail != `"Slow": must be fast` || e.Field != "spec.mode" {
		t.Errorf("%+v", e)
	}
	if e := Invalid(p, 3, "too many"); e.Detail != `3: too many` {
		t.Errorf("%+v", e)
	}
	e := NotSupported(p, "x", []string{"Slow", "Steady"})
	if e.Detail != `"x": supported values: "Slow", "Steady"` || e.Type != ErrorTypeNotSupported {
		t.Errorf("%+v", e)
	}
	if e := Invalid(p, "<a&b>", "bad"); e.Detail != `"<a&b>": bad` {
		t.Errorf("HTML characters are kept as they are: %+v", e)
	}
	if e := TooLong(p, 100); e.Detail != "may not be more than 100 bytes" {
		t.Errorf("%+v", e)
	}
}
