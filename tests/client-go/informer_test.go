package clientgo

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic/dynamiclister"
)

// informerResync is the resync period of the informer test: short, so that resyncs happen within the test.
const informerResync = time.Second

// TestInformerSeesAddUpdateDeleteAndResync runs a dynamic shared informer with a one-second resync on flunders in a
// namespace: its handler sees the object listed at start, an Add for a created flunder, an Update for a modified
// one, resync Updates (same resourceVersion before and after), and a Delete; its lister agrees with a list from
// the server.
func TestInformerSeesAddUpdateDeleteAndResync(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	ns := newNamespace(ctx, t, client)
	resource := client.Resource(flunders).Namespace(ns)

	// One flunder exists before the informer starts: it comes in the initial list.
	early, err := resource.Create(ctx, flunder(ns, uniqueName(t, "early"), 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a flunder: %v", err)
	}

	rec := &recorder{t: t}
	informer := startInformer(ctx, t, client, ns, informerResync, rec)
	first := rec.await(ctx, t, early.GetName(), "the Add of the initial list", func(e event) bool {
		return e.typ == added
	})
	if !first.initialList || first.rv != early.GetResourceVersion() {
		t.Errorf("first event for %s: got %v, want an Add in the initial list at rv=%s",
			early.GetName(), first, early.GetResourceVersion())
	}

	// Create: an Add outside the initial list, at the created resourceVersion.
	name := uniqueName(t, "watched")
	created, err := resource.Create(ctx, flunder(ns, name, 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	add := rec.await(ctx, t, name, "an Add", func(e event) bool { return e.typ == added })
	if add.initialList || add.rv != created.GetResourceVersion() {
		t.Errorf("Add of %s: got %v, want rv=%s outside the initial list", name, add, created.GetResourceVersion())
	}

	// Update: an Update from the created resourceVersion to the new one, with the new spec.
	changed := created.DeepCopy()
	if err := unstructured.SetNestedField(changed.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatalf("set spec.replicas: %v", err)
	}
	modified, err := resource.Update(ctx, changed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	if modified.GetResourceVersion() == created.GetResourceVersion() {
		t.Fatalf("update of %s kept resourceVersion %s", name, created.GetResourceVersion())
	}
	update := rec.await(ctx, t, name, "the Update", func(e event) bool {
		return e.typ == updated && e.rv == modified.GetResourceVersion()
	})
	if update.oldRV != created.GetResourceVersion() {
		t.Errorf("Update of %s: got %v, want oldRV=%s", name, update, created.GetResourceVersion())
	}
	if replicas, _ := int64At(t, update.object, "spec", "replicas"); replicas != 3 {
		t.Errorf("Update of %s carries spec.replicas=%d, want 3", name, replicas)
	}

	// Resync: Updates whose old and new objects are the same, at the current resourceVersion, for both objects.
	rec.await(ctx, t, name, "a resync Update", func(e event) bool {
		return e.isResync() && e.rv == modified.GetResourceVersion()
	})
	rec.await(ctx, t, early.GetName(), "a resync Update", func(e event) bool {
		return e.isResync() && e.rv == early.GetResourceVersion()
	})

	// The informer's lister holds what the server lists.
	lister := dynamiclister.New(informer.GetIndexer(), flunders).Namespace(ns)
	list, err := resource.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list flunders in %s: %v", ns, err)
	}
	listed := namesAndVersions(list.Items)
	if want := []string{early.GetName() + "@" + early.GetResourceVersion(),
		name + "@" + modified.GetResourceVersion()}; !slices.Equal(listed, sorted(want)) {
		t.Errorf("the server lists %v, want %v", listed, sorted(want))
	}
	cached, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatalf("lister list: %v", err)
	}
	if got := namesAndVersions(derefAll(cached)); !slices.Equal(got, listed) {
		t.Errorf("the informer's lister holds %v, the server lists %v", got, listed)
	}

	// Delete: a Delete event with the last state, and the object is gone.
	if err := resource.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	rec.await(ctx, t, name, "the Delete", func(e event) bool { return e.typ == deleted })
	if _, err := resource.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get %s after its Delete event: got %v, want NotFound", name, err)
	}
	if _, err := lister.Get(name); !apierrors.IsNotFound(err) {
		t.Errorf("lister get %s after its Delete event: got %v, want NotFound", name, err)
	}

	// Apart from resyncs, the handler saw exactly Add, Update, Delete for the object, in that order.
	var changes []eventType
	for _, e := range rec.snapshot(name) {
		if !e.isResync() {
			changes = append(changes, e.typ)
		}
	}
	if want := []eventType{added, updated, deleted}; !slices.Equal(changes, want) {
		t.Errorf("events for %s (resyncs left out): got %v, want %v; all: %v", name, changes, want, rec.snapshot(name))
	}
	for _, e := range rec.snapshot(early.GetName()) {
		if e.typ != added && !e.isResync() {
			t.Errorf("unexpected event for %s, which nobody changed: %v", early.GetName(), e)
		}
	}
}

// namesAndVersions renders objects as sorted "name@resourceVersion" strings.
func namesAndVersions(items []unstructured.Unstructured) []string {
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, item.GetName()+"@"+item.GetResourceVersion())
	}
	return sorted(out)
}

func derefAll(items []*unstructured.Unstructured) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		out = append(out, *item)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
