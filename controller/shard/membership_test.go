package shard_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// TestMembershipOnAnAPIServer runs two members against a real kube-apiserver: both join and
// act on their own shares only, each action's context ends with the member's right to act,
// and a member that stops with Release deletes its Lease, so that the other takes its keys
// at its next list, even when the answer to its last renewal was lost; one that stops
// without leaves its Lease behind.
func TestMembershipOnAnAPIServer(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithoutCRD: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	cl, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()
	const ns = "flink-admission-system"
	require.NoError(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	timing := shard.Timing{LeaseDuration: 6 * time.Second, RenewPeriod: time.Second, Margin: 1500 * time.Millisecond}
	lossy := &answerLosingWriter{Writer: cl}
	start := func(name string, release bool) (*shard.Membership, func()) {
		var w client.Writer = cl
		if name == "member-a" {
			w = lossy
		}
		m, err := shard.New(shard.Options{Reader: cl, Writer: w, Namespace: ns, Group: "install", Identity: name,
			Timing: timing, Log: logr.Discard(), Release: release})
		require.NoError(t, err)
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Start(mctx) }()
		stop := sync.OnceFunc(func() { cancel(); assert.NoError(t, <-done) })
		return m, stop
	}
	a, stopA := start("member-a", true)
	b, stopB := start("member-b", false)
	t.Cleanup(stopB)
	gained := make(chan string, 100)
	b.OnChange(func(old, cur shard.View) {
		for _, k := range keys(50) {
			if cur.Owns(k) && !old.Owns(k) {
				gained <- k
			}
		}
	})

	both := []string{"member-a", "member-b"}
	waitUntil(t, "both members acting, each seeing both", func() bool {
		va, vb := a.View(), b.View()
		return va.Acting && vb.Acting && slices.Equal(va.Members, both) && slices.Equal(vb.Members, both)
	})
	tenureB := b.Tenure()
	lease := &coordinationv1.Lease{}
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-a"}, lease))
	assert.Equal(t, "install", lease.Labels[shard.GroupLabel])
	assert.Equal(t, "member-a", *lease.Spec.HolderIdentity)
	assert.EqualValues(t, 6, *lease.Spec.LeaseDurationSeconds)

	var ofA, ofB []string
	for _, k := range keys(50) {
		if shard.Owner(k, both) == "member-a" {
			ofA = append(ofA, k)
		} else {
			ofB = append(ofB, k)
		}
	}
	require.NotEmpty(t, ofA)
	require.NotEmpty(t, ofB)
	// Begin asks at the moment: a renewal slower than the margin on a loaded machine pauses
	// the member until it has joined again.
	var actx context.Context
	var release func()
	waitUntil(t, "member-a acting on its own key", func() bool {
		var ok bool
		actx, release, ok = a.Begin(ctx, ofA[0])
		return ok
	})
	deadline, hasDeadline := actx.Deadline()
	require.True(t, hasDeadline, "an action ends with the member's right to act")
	assert.False(t, deadline.After(time.Now().Add(timing.LeaseDuration-2*timing.Margin)), "at most D - 2m after a renewal")
	release()
	_, _, ok := a.Begin(ctx, ofB[0])
	assert.False(t, ok, "a member does not act on the other's key")

	// The shutdown cuts a renewal short: it lands, its answer is lost (the member forgets
	// the version it wrote), and the member must still delete its Lease.
	lossy.lose.Store(true)
	waitUntil(t, "a renewal of member-a whose answer was lost", func() bool { return lossy.lost.Load() > 0 })
	stopA()
	err = cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-a"}, &coordinationv1.Lease{})
	assert.True(t, apierrors.IsNotFound(err), "a member that stops with Release deletes its Lease: %v", err)
	waitUntil(t, "member-b alone", func() bool { return slices.Equal(b.View().Members, []string{"member-b"}) })
	assert.Greater(t, b.Tenure(), tenureB, "a member gone changes the others' tenure: what they remember of a cluster from before it is not trusted")
	// Told of every key it gains (its own share too, when it started acting).
	missing := map[string]bool{}
	for _, k := range ofA {
		missing[k] = true
	}
	for len(missing) > 0 {
		select {
		case k := <-gained:
			delete(missing, k)
		case <-time.After(time.Minute):
			t.Fatalf("member-b was not told it gained %d of member-a's keys", len(missing))
		}
	}
	waitUntil(t, "member-b acting on member-a's key", func() bool {
		var ok bool
		_, release, ok = b.Begin(ctx, ofA[0])
		return ok
	})
	release()

	stopB()
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-b"}, &coordinationv1.Lease{}),
		"a member that stops without Release leaves its Lease, to expire")

	// A successor of the same identity (a recreated pod of the same name) wrote the Lease
	// last: the member that leaves keeps its hands off it.
	cut := &answerLosingWriter{Writer: cl}
	c, err := shard.New(shard.Options{Reader: cl, Writer: cut, Namespace: ns, Group: "install", Identity: "member-c",
		Timing: timing, Log: logr.Discard(), Release: true})
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	waitUntil(t, "member-c's Lease written", func() bool {
		return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-c"}, &coordinationv1.Lease{}) == nil
	})
	cut.drop.Store(true)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := &coordinationv1.Lease{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-c"}, l); err != nil {
			return err
		}
		l.Annotations[shard.IncarnationAnnotation] = "successor"
		return cl.Update(ctx, l)
	}))
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "member-c"}, &coordinationv1.Lease{}),
		"a Lease another process of the same identity wrote is not this member's to delete")
}

func TestNewRefusesBadOptions(t *testing.T) {
	good := shard.Options{Reader: nopClient{}, Writer: nopClient{}, Namespace: "ns", Group: "g", Identity: "m"}
	_, err := shard.New(good)
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		edit func(o *shard.Options)
	}{
		{"no writer", func(o *shard.Options) { o.Writer = nil }},
		{"an identity that is no Lease name", func(o *shard.Options) { o.Identity = "Member_A" }},
		{"no namespace", func(o *shard.Options) { o.Namespace = "" }},
		{"a group that is no label value", func(o *shard.Options) { o.Group = "a group" }},
		{"a timing that loses the shard between renewals", func(o *shard.Options) {
			o.Timing = shard.Timing{LeaseDuration: 4 * time.Second, RenewPeriod: time.Second, Margin: time.Second}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.edit(&o)
			_, err := shard.New(o)
			assert.Error(t, err)
		})
	}
}

// nopClient is a client New accepts; the test starts nothing.
type nopClient struct{ client.Client }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answerLosingWriter sends every write; once lose is set, it reports each Update as failed,
// as when a shutdown or a timeout cancels a request the API server carried out. Once drop is
// set, it sends no Update at all, as through a partition.
type answerLosingWriter struct {
	client.Writer
	lose, drop atomic.Bool
	lost       atomic.Int32
}

func (w *answerLosingWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if w.drop.Load() {
		return context.DeadlineExceeded
	}
	if err := w.Writer.Update(ctx, obj, opts...); err != nil || !w.lose.Load() {
		return err
	}
	w.lost.Add(1)
	return context.Canceled
}
