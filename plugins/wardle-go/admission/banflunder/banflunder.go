// Package banflunder is BanFlunder, a mutating admission plugin refusing flunders whose name a fischer disallows
// (sample-apiserver's pkg/admission/plugin/banflunder).
package banflunder

import (
	"encoding/json"
	"fmt"
	"slices"

	"wardle/apis/wardle"
	"wardle/apis/wardle/v1alpha1"

	guest "wasm-apiserver.io/guest"
)

// Reason is why BanFlunder refuses; the host prefixes `flunders.wardle.example.com "<name>" is forbidden: `.
const Reason = "this name may not be used, please change the resource name"

// Rules: BanFlunder sees the creation of flunders, in any version.
var Rules = []guest.AdmissionRule{{Group: wardle.GroupName, Resources: []string{"flunders"}, Operations: []string{"CREATE"}}}

// ListFischers lists the fischers: the host's read, replaced in tests.
var ListFischers = func() ([]v1alpha1.Fischer, error) {
	items, err := guest.List(wardle.GroupName, "fischers", "", "")
	if err != nil {
		return nil, err
	}
	fischers := make([]v1alpha1.Fischer, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &fischers[i]); err != nil {
			return nil, fmt.Errorf("reading a fischer: %w", err)
		}
	}
	return fischers, nil
}

// Admit refuses the creation of a flunder whose name is in a fischer's disallowed flunders; it leaves the object
// unchanged.
func Admit(request *guest.AdmissionRequest) (any, error) {
	if request.Group != wardle.GroupName || request.Resource != "flunders" || request.Operation != "CREATE" {
		return nil, nil
	}
	name, err := flunderName(request)
	if err != nil {
		return nil, err
	}
	fischers, err := ListFischers()
	if err != nil {
		return nil, err
	}
	if IsBanned(name, fischers) {
		return nil, guest.Forbidden(Reason)
	}
	return nil, nil
}

// IsBanned says whether any fischer disallows the name.
func IsBanned(name string, fischers []v1alpha1.Fischer) bool {
	for _, f := range fischers {
		if slices.Contains(f.DisallowedFlunders, name) {
			return true
		}
	}
	return false
}

// flunderName is the name of the object being created, else the request's.
func flunderName(request *guest.AdmissionRequest) (string, error) {
	var object struct {
		Metadata guest.ObjectMeta `json:"metadata"`
	}
	if request.Object != nil {
		if err := json.Unmarshal(request.Object, &object); err != nil {
			return "", guest.BadRequest(fmt.Sprintf("reading the flunder: %v", err))
		}
	}
	if object.Metadata.Name != "" {
		return object.Metadata.Name, nil
	}
	return request.Name, nil
}
