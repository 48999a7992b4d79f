package clientgo

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// holdFinalizer is the finalizer the test's controller is responsible for.
const holdFinalizer = "example.com/hold"

// TestFinalizerHoldsDeleteUntilControllerReleasesIt deletes a flunder carrying a finalizer: the delete only marks
// it (the informer sees an Update with a deletionTimestamp), a controller goroutine driven by the informer removes
// its finalizer with an Update, and the object then disappears (a Delete event, Get answers NotFound).
func TestFinalizerHoldsDeleteUntilControllerReleasesIt(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	ns := newNamespace(ctx, t, client)
	resource := client.Resource(flunders).Namespace(ns)

	// The controller: the informer queues the names of flunders marked for deletion that still carry the
	// finalizer; the controller takes them once the test releases it, and removes the finalizer.
	queue := make(chan string, 16)
	rec := &recorder{t: t}
	startInformer(ctx, t, client, ns, 0, rec, controllerHandler(rec, queue))
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- runController(ctx, resource, queue, release) }()

	name := uniqueName(t, "held")
	obj := flunder(ns, name, 1)
	obj.SetFinalizers([]string{holdFinalizer})
	created, err := resource.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	rec.await(ctx, t, name, "the Add", func(e event) bool { return e.typ == added })

	// The delete succeeds but only marks the object: it is still there, with a deletionTimestamp and its finalizer.
	if err := resource.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	marked, err := resource.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s after the delete, while its finalizer holds it: %v", name, err)
	}
	if marked.GetDeletionTimestamp() == nil || !slices.Equal(marked.GetFinalizers(), []string{holdFinalizer}) {
		t.Fatalf("%s after the delete: deletionTimestamp=%v finalizers=%v, want a timestamp and [%s]",
			name, marked.GetDeletionTimestamp(), marked.GetFinalizers(), holdFinalizer)
	}
	if marked.GetUID() != created.GetUID() {
		t.Errorf("%s changed uid from %s to %s", name, created.GetUID(), marked.GetUID())
	}
	rec.await(ctx, t, name, "the Update marking it for deletion", func(e event) bool {
		return e.typ == updated && e.deletionStamped && slices.Contains(e.finalizers, holdFinalizer)
	})

	// Let the controller remove the finalizer: the object goes away.
	close(release)
	gone := rec.await(ctx, t, name, "the Delete", func(e event) bool { return e.typ == deleted })
	if !gone.deletionStamped {
		t.Errorf("the Delete event of %s carries an object without a deletionTimestamp: %v", name, gone)
	}
	if _, err := resource.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get %s after its Delete event: got %v, want NotFound", name, err)
	}
	if err := <-done; err != nil {
		t.Errorf("the controller: %v", err)
	}

	// What the informer saw: the Add, the Update marking the object, and the Delete last. kube-apiserver sends no
	// event between the last two (removing the last finalizer deletes the stored object, and the DELETED event
	// carries its last stored state); any event there must still show the object marked.
	events := rec.snapshot(name)
	t.Logf("events for %s: %v", name, events)
	if len(events) < 3 || events[0].typ != added || events[len(events)-1].typ != deleted {
		t.Fatalf("events for %s: got %v, want an Add, an Update marking it, then a Delete", name, events)
	}
	if e := events[1]; e.typ != updated || !e.deletionStamped || !slices.Contains(e.finalizers, holdFinalizer) {
		t.Errorf("the event after the Add of %s: got %v, want the Update marking it, still with %s",
			name, e, holdFinalizer)
	}
	for _, e := range events[2 : len(events)-1] {
		if e.typ != updated || !e.deletionStamped {
			t.Errorf("an event of %s between its marking and its Delete does not show it marked: %v", name, e)
		}
	}
}

// controllerHandler queues the name of each flunder the informer sees marked for deletion with holdFinalizer.
func controllerHandler(rec *recorder, queue chan<- string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		u := rec.asUnstructured(obj)
		if u.GetDeletionTimestamp() != nil && slices.Contains(u.GetFinalizers(), holdFinalizer) {
			select {
			case queue <- u.GetName():
			default: // already queued often enough; a handler must not block the informer
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}
}

// runController removes holdFinalizer from the first flunder queued after release is closed, re-reading it and
// retrying on a conflict as a controller does.
func runController(ctx context.Context, resource dynamic.ResourceInterface, queue <-chan string,
	release <-chan struct{}) error {
	select {
	case <-release:
	case <-ctx.Done():
		return ctx.Err()
	}
	var name string
	select {
	case name = <-queue:
	case <-ctx.Done():
		return ctx.Err()
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := resource.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.SetFinalizers(slices.DeleteFunc(current.GetFinalizers(), func(f string) bool {
			return f == holdFinalizer
		}))
		_, err = resource.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
}
