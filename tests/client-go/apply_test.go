package clientgo

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestServerSideApply applies a flunder as two field managers: the first creates it, the second's apply of a field
// the first owns with another value is a conflict naming the field and its manager, a forced apply takes the field
// over, and managedFields show both managers with the fields each owns.
func TestServerSideApply(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	ns := newNamespace(ctx, t, client)
	resource := client.Resource(flunders).Namespace(ns)
	name := uniqueName(t, "applied")

	// Manager a creates the flunder by applying all of its spec.
	created, err := resource.Apply(ctx, name, flunder(ns, name, 1), metav1.ApplyOptions{FieldManager: "a"})
	if err != nil {
		t.Fatalf("apply %s as a (create): %v", name, err)
	}
	if replicas, _ := int64At(t, created, "spec", "replicas"); replicas != 1 {
		t.Errorf("after a's apply: spec.replicas=%d, want 1", replicas)
	}
	assertManagers(t, "after a's apply", created, map[string][]string{
		"a": {"f:spec.f:flunderReference", "f:spec.f:referenceType", "f:spec.f:replicas"},
	}, nil)

	// Applying the same configuration again changes nothing.
	again, err := resource.Apply(ctx, name, flunder(ns, name, 1), metav1.ApplyOptions{FieldManager: "a"})
	if err != nil {
		t.Fatalf("apply %s as a again: %v", name, err)
	}
	if again.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("a no-op apply wrote a new resourceVersion: %s -> %s",
			created.GetResourceVersion(), again.GetResourceVersion())
	}

	// Manager b applies another value of spec.replicas, which a owns: a conflict naming the field and a.
	replicasOnly := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "wardle.example.com/v1beta1",
			"kind":       "Flunder",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       map[string]any{"replicas": replicas},
		}}
	}
	_, err = resource.Apply(ctx, name, replicasOnly(2), metav1.ApplyOptions{FieldManager: "b"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply of spec.replicas as b: got %v, want a Conflict", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("the conflict is a %T, not an API status: %v", err, err)
	}
	if !strings.Contains(err.Error(), ".spec.replicas") || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("the conflict's message does not name .spec.replicas and manager \"a\": %v", err)
	}
	if !hasCause(status.Status(), metav1.CauseTypeFieldManagerConflict, ".spec.replicas") {
		t.Errorf("the conflict has no FieldManagerConflict cause for .spec.replicas: %+v", status.Status().Details)
	}
	unchanged, err := resource.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	if unchanged.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("the refused apply wrote the object: resourceVersion %s -> %s",
			created.GetResourceVersion(), unchanged.GetResourceVersion())
	}

	// With Force, b takes spec.replicas over.
	forced, err := resource.Apply(ctx, name, replicasOnly(2), metav1.ApplyOptions{FieldManager: "b", Force: true})
	if err != nil {
		t.Fatalf("forced apply of spec.replicas as b: %v", err)
	}
	if replicas, _ := int64At(t, forced, "spec", "replicas"); replicas != 2 {
		t.Errorf("after b's forced apply: spec.replicas=%d, want 2", replicas)
	}
	assertManagers(t, "after b's forced apply", forced, map[string][]string{
		"a": {"f:spec.f:flunderReference", "f:spec.f:referenceType"},
		"b": {"f:spec.f:replicas"},
	}, map[string][]string{"a": {"f:spec.f:replicas"}})

	// a's configuration without replicas applies without conflict and leaves b's value.
	withoutReplicas := flunder(ns, name, 0)
	unstructured.RemoveNestedField(withoutReplicas.Object, "spec", "replicas")
	reapplied, err := resource.Apply(ctx, name, withoutReplicas, metav1.ApplyOptions{FieldManager: "a"})
	if err != nil {
		t.Fatalf("apply %s as a without replicas: %v", name, err)
	}
	if replicas, _ := int64At(t, reapplied, "spec", "replicas"); replicas != 2 {
		t.Errorf("after a's apply without replicas: spec.replicas=%d, want b's 2", replicas)
	}
}

// hasCause reports whether a Status has a cause of the given type for field.
func hasCause(status metav1.Status, causeType metav1.CauseType, field string) bool {
	if status.Details == nil {
		return false
	}
	for _, cause := range status.Details.Causes {
		if cause.Type == causeType && cause.Field == field {
			return true
		}
	}
	return false
}

// assertManagers checks obj's managedFields: each manager in owns has an Apply entry owning (at least) the listed
// field paths, and each manager in notOwns owns none of its listed paths. A path is "f:spec.f:replicas" for
// {"f:spec": {"f:replicas": {}}}.
func assertManagers(t *testing.T, when string, obj *unstructured.Unstructured, owns, notOwns map[string][]string) {
	t.Helper()
	owned := map[string]map[string]bool{}
	for _, entry := range obj.GetManagedFields() {
		if entry.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		if entry.FieldsType != "FieldsV1" || entry.FieldsV1 == nil {
			t.Errorf("%s: the managedFields entry of %q has fieldsType %q and fieldsV1 %v",
				when, entry.Manager, entry.FieldsType, entry.FieldsV1)
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(entry.FieldsV1.Raw, &fields); err != nil {
			t.Errorf("%s: the fieldsV1 of %q is not a JSON object: %v", when, entry.Manager, err)
			continue
		}
		paths := map[string]bool{}
		flattenFields("", fields, paths)
		owned[entry.Manager] = paths
	}
	for manager, paths := range owns {
		got, ok := owned[manager]
		if !ok {
			t.Errorf("%s: no Apply entry for manager %q in managedFields %+v", when, manager, obj.GetManagedFields())
			continue
		}
		for _, path := range paths {
			if !got[path] {
				t.Errorf("%s: manager %q does not own %s; it owns %v", when, manager, path, keys(got))
			}
		}
	}
	for manager, paths := range notOwns {
		for _, path := range paths {
			if owned[manager][path] {
				t.Errorf("%s: manager %q still owns %s", when, manager, path)
			}
		}
	}
}

// flattenFields adds the dotted path of every field in a fieldsV1 tree to paths.
func flattenFields(prefix string, fields map[string]any, paths map[string]bool) {
	for key, child := range fields {
		path := key
		if prefix != "" {
			path = prefix + "." + key
		}
		paths[path] = true
		if children, ok := child.(map[string]any); ok {
			flattenFields(path, children, paths)
		}
	}
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for key := range set {
		out = append(out, key)
	}
	return sorted(out)
}
