package clientgo

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// TestLeaderElectionOnALease runs client-go's leader election on a coordination.k8s.io/v1 Lease, as
// controller-runtime's managers do: one candidate leads and renews (an update with the lease's resourceVersion),
// gives the lease up when it stops, and the other candidate leads then.
func TestLeaderElectionOnALease(t *testing.T) {
	ctx := testContext(t)
	client := newTypedClient(t)
	const namespace, name = "default", "e2e-election"

	// run elects `identity` on the lease until its context ends, reporting when it leads.
	run := func(ctx context.Context, identity string, leading chan<- string) {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   3 * time.Second,
			RenewDeadline:   2 * time.Second,
			RetryPeriod:     200 * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { leading <- identity },
				OnStoppedLeading: func() {},
			},
		})
	}
	holder := func(client kubernetes.Interface) string {
		lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}

	leading := make(chan string, 2)
	aCtx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { run(aCtx, "candidate-a", leading); close(aDone) }()
	select {
	case who := <-leading:
		if who != "candidate-a" {
			t.Fatalf("%s leads, not candidate-a", who)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("candidate-a never led")
	}
	if got := holder(client); got != "candidate-a" {
		t.Fatalf("the lease is held by %q, not candidate-a", got)
	}
	// It renews: the renew time moves on.
	first, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the lease: %v", err)
	}
	waitFor(ctx, t, "a renewal of the lease", func() bool {
		lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && lease.ResourceVersion != first.ResourceVersion &&
			lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(first.Spec.RenewTime.Time)
	})

	// Candidate b waits while a leads; a stops and gives the lease up; b leads.
	go run(ctx, "candidate-b", leading)
	stopA()
	<-aDone
	// Released as it stopped (ReleaseOnCancel), not left to expire: b need not wait out the lease's duration.
	if got := holder(client); got == "candidate-a" {
		t.Fatalf("candidate-a still holds the lease after it stopped")
	}
	select {
	case who := <-leading:
		if who != "candidate-b" {
			t.Fatalf("%s leads, not candidate-b", who)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("candidate-b never led after candidate-a stopped")
	}
	waitFor(ctx, t, "candidate-b to hold the lease", func() bool { return holder(client) == "candidate-b" })
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the lease: %v", err)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("the lease's transitions are %v after a change of holder", lease.Spec.LeaseTransitions)
	}
}
