package clientgo

import (
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStatusAndSpecUpdatesLeaveEachOtherAlone writes a flunder's status through `/status` (UpdateStatus), which
// leaves the spec and the generation alone, and its spec through the object (Update), which leaves the status alone
// and bumps the generation.
func TestStatusAndSpecUpdatesLeaveEachOtherAlone(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	ns := newNamespace(ctx, t, client)
	resource := client.Resource(flunders).Namespace(ns)

	name := uniqueName(t, "status")
	created, err := resource.Create(ctx, flunder(ns, name, 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	generation := created.GetGeneration()

	// UpdateStatus with a new status and a changed spec: only the status is written.
	status := map[string]any{"replicas": int64(1), "observedGeneration": generation, "selector": "app=" + name}
	request := created.DeepCopy()
	setField(t, request, status, "status")
	setField(t, request, int64(5), "spec", "replicas")
	written, err := resource.UpdateStatus(ctx, request, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update the status of %s: %v", name, err)
	}
	assertField(t, "after UpdateStatus", written, status, "status")
	assertField(t, "after UpdateStatus (the spec is the stored one)", written, created.Object["spec"], "spec")
	if written.GetGeneration() != generation {
		t.Errorf("UpdateStatus changed the generation from %d to %d", generation, written.GetGeneration())
	}
	if written.GetResourceVersion() == created.GetResourceVersion() {
		t.Errorf("UpdateStatus kept resourceVersion %s", created.GetResourceVersion())
	}
	read, err := resource.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	assertField(t, "read after UpdateStatus", read, status, "status")
	assertField(t, "read after UpdateStatus", read, created.Object["spec"], "spec")
	viaStatus, err := resource.Get(ctx, name, metav1.GetOptions{}, "status")
	if err != nil {
		t.Fatalf("get %s/status: %v", name, err)
	}
	assertField(t, "read through /status", viaStatus, status, "status")

	// Update with a changed spec and a changed status: only the spec is written, and the generation moves on.
	request = written.DeepCopy()
	setField(t, request, int64(3), "spec", "replicas")
	setField(t, request, int64(99), "status", "replicas")
	updated, err := resource.Update(ctx, request, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	if replicas, _ := int64At(t, updated, "spec", "replicas"); replicas != 3 {
		t.Errorf("after Update: spec.replicas=%d, want 3", replicas)
	}
	assertField(t, "after Update (the status is the stored one)", updated, status, "status")
	if updated.GetGeneration() != generation+1 {
		t.Errorf("after a spec Update: generation %d, want %d", updated.GetGeneration(), generation+1)
	}

	// A status write from a stale copy is a conflict, as any update.
	stale := written.DeepCopy()
	setField(t, stale, int64(2), "status", "replicas")
	if _, err := resource.UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateStatus from a stale resourceVersion: got %v, want a Conflict", err)
	}
}

// setField sets a field of obj, failing the test when it cannot.
func setField(t *testing.T, obj *unstructured.Unstructured, value any, fields ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj.Object, value, fields...); err != nil {
		t.Fatalf("set %v of %s: %v", fields, obj.GetName(), err)
	}
}

// assertField checks that a field of obj equals want, as JSON would compare them.
func assertField(t *testing.T, when string, obj *unstructured.Unstructured, want any, fields ...string) {
	t.Helper()
	got, _, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if err != nil {
		t.Errorf("%s: %v of %s: %v", when, fields, obj.GetName(), err)
		return
	}
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		t.Errorf("%s: %v of %s is %v, want %v", when, fields, obj.GetName(), got, want)
	}
}

// normalize makes JSON numbers comparable: unstructured content holds int64 where Go literals may be int.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		return out
	case int:
		return int64(v)
	case int32:
		return int64(v)
	default:
		return v
	}
}
