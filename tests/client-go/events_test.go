package clientgo

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestEventRecorderWritesEvents runs client-go's event recorder (record.EventBroadcaster, what controllers record
// with) on the typed client in protobuf: an event about a ConfigMap is created, the same event again is counted on
// it (the recorder's PATCH), and the object's events are found by field selector.
func TestEventRecorderWritesEvents(t *testing.T) {
	ctx := testContext(t)
	client := newTypedClient(t)
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "recorded"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the ConfigMap: %v", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "e2e-controller"})

	selector := "involvedObject.kind=ConfigMap,involvedObject.name=recorded"
	events := func() []corev1.Event {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Logf("list events: %v", err)
			return nil
		}
		return list.Items
	}
	recorder.Event(cm, corev1.EventTypeNormal, "Configured", "configured it")
	waitFor(ctx, t, "the recorded event", func() bool { return len(events()) == 1 })
	recorder.Event(cm, corev1.EventTypeNormal, "Configured", "configured it")
	waitFor(ctx, t, "the event counted twice", func() bool {
		items := events()
		return len(items) == 1 && items[0].Count == 2
	})
	event := events()[0]
	if event.Source.Component != "e2e-controller" || event.Reason != "Configured" || event.Type != corev1.EventTypeNormal {
		t.Fatalf("the event is not the one recorded: %+v", event)
	}
	if event.InvolvedObject.UID != cm.UID || event.InvolvedObject.Namespace != "default" {
		t.Fatalf("the event names another object: %+v", event.InvolvedObject)
	}
	if !event.LastTimestamp.After(event.FirstTimestamp.Time) && !event.LastTimestamp.Equal(&event.FirstTimestamp) {
		t.Fatalf("the event's times are out of order: first %v, last %v", event.FirstTimestamp, event.LastTimestamp)
	}
}
