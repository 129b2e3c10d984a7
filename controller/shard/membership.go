package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;create;update;delete,namespace=flink-admission-system

// GroupLabel labels a member's Lease with its install's group, so that it lists only its peers.
const GroupLabel = "shard.flinkoperator.k8s.io/group"

// IncarnationAnnotation holds a per-process token: a leaving member deletes its Lease only while
// it holds its own, not a successor's of the same identity (a recreated pod).
const IncarnationAnnotation = "shard.flinkoperator.k8s.io/incarnation"

// Options configure a Membership.
type Options struct {
	// Reader reads the Leases; not a cache, as the fence proof needs (A4).
	Reader client.Reader
	// Writer writes the Leases.
	Writer client.Writer
	// Namespace holds the Leases.
	Namespace string
	// Group names the install (GroupLabel).
	Group string
	// Identity is this member's Lease name, unique among the live members.
	Identity string
	// Timing is DefaultTiming when zero.
	Timing Timing
	// Clock is the monotonic clock of every bound; the real one when nil.
	Clock clock.WithTicker
	// Log receives the membership's changes.
	Log logr.Logger
	// Release deletes the Lease on stop, so that the others take its clusters at their next
	// list rather than once it expires.
	Release bool
}

// Membership is one replica's membership of its install, a manager Runnable on every replica.
type Membership struct {
	opts        Options
	incarnation string

	mu       sync.Mutex
	state    *State
	lease    *coordinationv1.Lease
	stopping bool
	inFlight int
	idle     chan struct{}
	onChange []func(old, cur View)

	tenure        uint64
	tenureMembers []string
}

// New checks opts and returns a Membership that has not joined yet.
func New(opts Options) (*Membership, error) {
	if opts.Timing == (Timing{}) {
		opts.Timing = DefaultTiming
	}
	if err := opts.Timing.Validate(); err != nil {
		return nil, err
	}
	if opts.Reader == nil || opts.Writer == nil {
		return nil, errors.New("shard membership needs a reader and a writer")
	}
	if opts.Namespace == "" {
		return nil, errors.New("shard membership needs a namespace for its Leases")
	}
	if errs := validation.IsDNS1123Subdomain(opts.Identity); len(errs) > 0 {
		return nil, fmt.Errorf("shard identity %q is not a Lease name: %v", opts.Identity, errs)
	}
	if errs := validation.IsValidLabelValue(opts.Group); opts.Group == "" || len(errs) > 0 {
		return nil, fmt.Errorf("shard group %q is not a label value: %v", opts.Group, errs)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Membership{opts: opts, incarnation: string(uuid.NewUUID()), state: NewState(opts.Identity, opts.Timing)}, nil
}

// Identity is this member's name.
func (m *Membership) Identity() string { return m.opts.Identity }

// NeedLeaderElection is false: every replica is a member.
func (m *Membership) NeedLeaderElection() bool { return false }

// OnChange registers f, called on its own goroutine with the old and new view at every change, and
// at once from a view that owns nothing, so a late subscriber misses nothing.
func (m *Membership) OnChange(f func(old, cur View)) {
	m.mu.Lock()
	m.onChange = append(m.onChange, f)
	cur := m.state.View(m.opts.Clock.Now())
	m.mu.Unlock()
	go f(View{Self: m.opts.Identity}, cur)
}

// View is the member's view now.
func (m *Membership) View() View {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.View(m.opts.Clock.Now())
}

// Tenure counts this member's joins and changes of its members; while it stays, what this member
// last wrote or read of a cluster it owns is newest (see the package doc).
func (m *Membership) Tenure() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tenure
}

// noteMembers is called with mu held.
func (m *Membership) noteMembers(members []string) {
	if !slices.Equal(members, m.tenureMembers) {
		m.tenure++
		m.tenureMembers = slices.Clone(members)
	}
}

// Begin asks to act on key now; if allowed, its context's deadline ends the right to act, and
// release is called when done.
func (m *Membership) Begin(ctx context.Context, key string) (_ context.Context, release func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping || !m.state.View(m.opts.Clock.Now()).Owns(key) {
		return ctx, func() {}, false
	}
	m.inFlight++
	actx, cancel := context.WithDeadline(ctx, m.state.Until())
	var once sync.Once
	return actx, func() {
		once.Do(func() {
			cancel()
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.inFlight--; m.inFlight == 0 && m.idle != nil {
				close(m.idle)
				m.idle = nil
			}
		})
	}, true
}

// Start renews and lists every RenewPeriod until ctx ends; with Options.Release it then deletes
// the Lease once the actions in flight are done.
func (m *Membership) Start(ctx context.Context) error {
	log := m.opts.Log.WithValues("member", m.opts.Identity)
	ticker := m.opts.Clock.NewTicker(m.opts.Timing.RenewPeriod)
	defer ticker.Stop()
	last := m.View()
	for {
		m.round(ctx, log)
		cur := m.View()
		if !cur.Equal(last) {
			log.Info("shard view changed", "members", cur.Members, "acting", cur.Acting)
			m.mu.Lock()
			subs := m.onChange
			m.mu.Unlock()
			for _, f := range subs {
				go f(last, cur)
			}
			last = cur
		}
		select {
		case <-ctx.Done():
			m.leave(log)
			return nil
		case <-ticker.C():
		}
	}
}

func (m *Membership) round(ctx context.Context, log logr.Logger) {
	t := m.opts.Timing
	rctx, cancel := context.WithTimeout(ctx, t.Margin)
	sent, err := m.renew(rctx)
	answered := m.opts.Clock.Now()
	cancel()
	m.mu.Lock()
	if err == nil {
		if m.state.Renewed(sent, answered) {
			m.tenure++
		}
	} else {
		m.lease = nil // read it again next round
	}
	m.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		log.Info("renewing the shard Lease failed", "error", err.Error())
	}

	lctx, cancel := context.WithTimeout(ctx, t.RenewPeriod)
	defer cancel()
	list := &coordinationv1.LeaseList{}
	sent = m.opts.Clock.Now()
	if err := m.opts.Reader.List(lctx, list, client.InNamespace(m.opts.Namespace), client.MatchingLabels{GroupLabel: m.opts.Group}); err != nil {
		if ctx.Err() == nil {
			log.Info("listing the shard Leases failed", "error", err.Error())
		}
		return
	}
	answered = m.opts.Clock.Now()
	records := make([]Record, 0, len(list.Items))
	for _, l := range list.Items {
		if l.DeletionTimestamp == nil {
			records = append(records, Record{Name: l.Name, Version: l.ResourceVersion})
		}
	}
	m.mu.Lock()
	stale := m.state.Listed(sent, answered, records)
	m.noteMembers(m.state.View(answered).Members)
	m.mu.Unlock()
	for _, rec := range stale {
		// The version as a precondition: a member that renewed since keeps its Lease.
		err := m.opts.Writer.Delete(lctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: rec.Name, Namespace: m.opts.Namespace}},
			client.Preconditions{ResourceVersion: &rec.Version})
		if err == nil {
			log.Info("deleted the Lease of a member gone for long", "gone", rec.Name)
		}
	}
}

func (m *Membership) renew(ctx context.Context) (time.Time, error) {
	m.mu.Lock()
	lease := m.lease
	m.mu.Unlock()
	if lease == nil {
		lease = &coordinationv1.Lease{}
		err := m.opts.Reader.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.Identity}, lease)
		if apierrors.IsNotFound(err) {
			lease = nil
		} else if err != nil {
			return time.Time{}, err
		}
	}
	sent := m.opts.Clock.Now()
	now := metav1.NewMicroTime(sent)
	if lease == nil {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: m.opts.Identity, Namespace: m.opts.Namespace,
				Labels:      map[string]string{GroupLabel: m.opts.Group},
				Annotations: map[string]string{IncarnationAnnotation: m.incarnation}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(m.opts.Identity),
				LeaseDurationSeconds: ptr.To(int32(m.opts.Timing.LeaseDuration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		if err := m.opts.Writer.Create(ctx, lease); err != nil {
			return time.Time{}, err
		}
	} else {
		lease = lease.DeepCopy()
		lease.Spec.RenewTime = &now
		metav1.SetMetaDataAnnotation(&lease.ObjectMeta, IncarnationAnnotation, m.incarnation)
		if err := m.opts.Writer.Update(ctx, lease); err != nil {
			return time.Time{}, err
		}
	}
	m.mu.Lock()
	m.lease = lease
	m.mu.Unlock()
	return sent, nil
}

func (m *Membership) leave(log logr.Logger) {
	m.mu.Lock()
	m.stopping = true
	until := m.state.Until().Add(m.opts.Timing.Margin)
	m.state.Lost()
	var idle chan struct{}
	if m.inFlight > 0 {
		m.idle = make(chan struct{})
		idle = m.idle
	}
	m.mu.Unlock()
	if !m.opts.Release {
		return
	}
	if idle != nil {
		timer := m.opts.Clock.NewTimer(until.Sub(m.opts.Clock.Now()))
		select {
		case <-idle:
			timer.Stop()
		case <-timer.C():
		}
	}
	// A cancelled request or renewal may land within the margin: wait it out before leaving.
	<-m.opts.Clock.After(m.opts.Timing.Margin)
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.Timing.RenewPeriod)
	defer cancel()
	if err := m.release(ctx); err != nil {
		log.Info("deleting the shard Lease failed; the others take this member's clusters once it expires", "error", err.Error())
	}
}

// release deletes this member's Lease while this process wrote it last.
func (m *Membership) release(ctx context.Context) error {
	for {
		lease := &coordinationv1.Lease{}
		err := m.opts.Reader.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.Identity}, lease)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if lease.Annotations[IncarnationAnnotation] != m.incarnation {
			return nil
		}
		err = m.opts.Writer.Delete(ctx, lease, client.Preconditions{ResourceVersion: &lease.ResourceVersion})
		if !apierrors.IsConflict(err) {
			return client.IgnoreNotFound(err)
		}
	}
}
