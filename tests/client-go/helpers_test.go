package clientgo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfigEnv names the environment variable holding the path of a kubeconfig for the server under test.
const kubeconfigEnv = "WASM_APISERVER_KUBECONFIG"

// testTimeout bounds each test; waitTimeout bounds each wait for one condition within it.
const (
	testTimeout  = 2 * time.Minute
	waitTimeout  = 30 * time.Second
	pollInterval = 20 * time.Millisecond
)

var (
	flunders   = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1beta1", Resource: "flunders"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// restConfig returns the client configuration for the server named by WASM_APISERVER_KUBECONFIG, failing the test
// with a hint when the variable is unset.
func restConfig(t *testing.T) *rest.Config {
	t.Helper()
	path := os.Getenv(kubeconfigEnv)
	if path == "" {
		t.Fatalf("%s is not set: point it at a kubeconfig for a running wasm-apiserver serving the wardle plugin "+
			"(`cargo test --test client_go` in tests/ starts one and sets it)", kubeconfigEnv)
	}
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("read the kubeconfig %s: %v", path, err)
	}
	config.UserAgent = "wasm-apiserver-client-go-e2e"
	// The default client-side rate limit (5 QPS) would only slow the suite down.
	config.QPS = 100
	config.Burst = 200
	return config
}

// newClient returns a dynamic client for the server under test.
func newClient(t *testing.T) dynamic.Interface {
	t.Helper()
	client, err := dynamic.NewForConfig(restConfig(t))
	if err != nil {
		t.Fatalf("build the dynamic client: %v", err)
	}
	return client
}

// testContext is the test's context bounded by testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// uniqueName returns prefix followed by a random suffix, a valid DNS label.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatalf("random name suffix: %v", err)
	}
	return prefix + "-" + hex.EncodeToString(suffix)
}

// newNamespace creates a namespace of the test's own, deleted when the test ends.
func newNamespace(ctx context.Context, t *testing.T, client dynamic.Interface) string {
	t.Helper()
	name := uniqueName(t, "client-go")
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name},
	}}
	if _, err := client.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		// t.Context() is already cancelled while cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := client.Resource(namespaces).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// flunder returns a v1beta1 Flunder referring to the flunder "other", with the given replicas.
func flunder(namespace, name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wardle.example.com/v1beta1",
		"kind":       "Flunder",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"flunderReference": "other",
			"referenceType":    "Flunder",
			"replicas":         replicas,
		},
	}}
}

// int64At reads an integer field of obj, failing the test when it is present but not an integer.
func int64At(t *testing.T, obj *unstructured.Unstructured, fields ...string) (int64, bool) {
	t.Helper()
	value, found, err := unstructured.NestedInt64(obj.Object, fields...)
	if err != nil {
		t.Fatalf("%s %s: .%s: %v", obj.GetKind(), obj.GetName(), strings.Join(fields, "."), err)
	}
	return value, found
}

// waitFor polls condition until it holds, failing the test with what was awaited after waitTimeout.
func waitFor(ctx context.Context, t *testing.T, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// eventType is the kind of call an informer made to its event handler.
type eventType string

const (
	added   eventType = "Add"
	updated eventType = "Update"
	deleted eventType = "Delete"
)

// event is one call of an informer's event handler. For an update, oldRV is the resourceVersion of the object
// before; a resync is an update whose oldRV equals rv.
type event struct {
	typ             eventType
	name            string
	rv, oldRV       string
	initialList     bool
	deletionStamped bool
	finalizers      []string
	object          *unstructured.Unstructured
}

func (e event) isResync() bool { return e.typ == updated && e.oldRV == e.rv }

func (e event) String() string {
	s := fmt.Sprintf("%s %s rv=%s", e.typ, e.name, e.rv)
	if e.typ == updated {
		s += " oldRV=" + e.oldRV
	}
	if e.initialList {
		s += " (initial list)"
	}
	if e.deletionStamped {
		s += " (deletionTimestamp)"
	}
	return s
}

// recorder is an event handler that records every event it receives.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	events []event
}

// asUnstructured converts what an informer hands its handler, including a DeletedFinalStateUnknown tombstone.
func (r *recorder) asUnstructured(obj any) *unstructured.Unstructured {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		r.t.Errorf("informer handed the handler a %T, not an *unstructured.Unstructured", obj)
		return &unstructured.Unstructured{Object: map[string]any{}}
	}
	return u
}

func (r *recorder) record(typ eventType, obj, old any, initialList bool) {
	u := r.asUnstructured(obj)
	e := event{
		typ:             typ,
		name:            u.GetName(),
		rv:              u.GetResourceVersion(),
		initialList:     initialList,
		deletionStamped: u.GetDeletionTimestamp() != nil,
		finalizers:      u.GetFinalizers(),
		object:          u.DeepCopy(),
	}
	if old != nil {
		e.oldRV = r.asUnstructured(old).GetResourceVersion()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// handler returns the event handler feeding the recorder.
func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initialList bool) { r.record(added, obj, nil, initialList) },
		UpdateFunc: func(old, obj any) { r.record(updated, obj, old, false) },
		DeleteFunc: func(obj any) { r.record(deleted, obj, nil, false) },
	}
}

// snapshot returns the events recorded so far for the object name.
func (r *recorder) snapshot(name string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// find returns the first event for name that matches, if any.
func (r *recorder) find(name string, match func(event) bool) (event, bool) {
	for _, e := range r.snapshot(name) {
		if match(e) {
			return e, true
		}
	}
	return event{}, false
}

// await waits for an event for name that matches, failing the test with the events seen so far otherwise.
func (r *recorder) await(ctx context.Context, t *testing.T, name, what string, match func(event) bool) event {
	t.Helper()
	var found event
	err := wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, func(context.Context) (bool, error) {
		var ok bool
		found, ok = r.find(name, match)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s of %s: %v; events for it: %v", what, name, err, r.snapshot(name))
	}
	return found
}

// startInformer starts a dynamic shared informer on flunders in namespace with the given resync period (0: none),
// with rec and then the other handlers as its event handlers, and waits until it has synced. The informer stops
// when the test ends.
func startInformer(ctx context.Context, t *testing.T, client dynamic.Interface, namespace string,
	resync time.Duration, rec *recorder, others ...cache.ResourceEventHandler) cache.SharedIndexInformer {
	t.Helper()
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, resync, namespace, nil)
	informer := factory.ForResource(flunders).Informer()
	if err := informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		// The reflector retries; an error here is worth seeing in the test output all the same.
		t.Logf("informer watch error: %v", err)
	}); err != nil {
		t.Fatalf("set the watch error handler: %v", err)
	}
	for _, handler := range append([]cache.ResourceEventHandler{rec.handler()}, others...) {
		if _, err := informer.AddEventHandler(handler); err != nil {
			t.Fatalf("add an event handler: %v", err)
		}
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	syncCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for gvr, synced := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !synced {
			t.Fatalf("the informer on %s did not sync within %s", gvr, waitTimeout)
		}
	}
	return informer
}
