package banflunder

import (
	"errors"
	"testing"

	"wardle/apis/wardle/v1alpha1"

	guest "wasm-apiserver.io/guest"
)

func fischers(disallowed ...[]string) []v1alpha1.Fischer {
	out := []v1alpha1.Fischer{}
	for _, d := range disallowed {
		out = append(out, v1alpha1.Fischer{DisallowedFlunders: d})
	}
	return out
}

func TestBannedWhenAnyFischerDisallowsTheName(t *testing.T) {
	all := fischers([]string{"a", "b"}, []string{"c"})
	for name, want := range map[string]bool{"a": true, "c": true, "d": false} {
		if got := IsBanned(name, all); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
	if IsBanned("a", nil) {
		t.Error("no fischer bans nothing")
	}
}

func TestAdmitRefusesABannedNameFromTheObjectOrTheRequest(t *testing.T) {
	ListFischers = func() ([]v1alpha1.Fischer, error) { return fischers([]string{"bad"}), nil }
	request := &guest.AdmissionRequest{Operation: "CREATE", Group: "wardle.example.com", Resource: "flunders", Name: "ok",
		Object: []byte(`{"metadata":{"name":"bad"}}`)}
	patched, err := Admit(request)
	var status interface{ Error() string }
	if patched != nil || !errors.As(err, &status) || err.Error() != Reason {
		t.Fatalf("banned: %v %v", patched, err)
	}
	request.Object = []byte(`{}`)
	if _, err := Admit(request); err != nil {
		t.Fatalf("the request's name is allowed: %v", err)
	}
	request.Name = "bad"
	if _, err := Admit(request); err == nil {
		t.Fatal("the request's name is banned")
	}
	request.Object = []byte(`[`)
	if _, err := Admit(request); err == nil {
		t.Fatal("an unreadable object is an error")
	}
}

func TestOtherRequestsAreLeftAlone(t *testing.T) {
	ListFischers = func() ([]v1alpha1.Fischer, error) { t.Fatal("listed"); return nil, nil }
	request := &guest.AdmissionRequest{Operation: "UPDATE", Group: "wardle.example.com", Resource: "flunders", Name: "bad"}
	if patched, err := Admit(request); patched != nil || err != nil {
		t.Fatalf("%v %v", patched, err)
	}
}
