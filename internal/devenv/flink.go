package devenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
)

// SimulationLogName names the logger of the simulated Flink, so that every line it writes
// says it comes from a simulation, not from Flink.
const SimulationLogName = "SIMULATED-flink"

// clockStep is how often the simulated Flink's clock catches up with the real one: its
// leases and savepoint results are timed on it.
const clockStep = 100 * time.Millisecond

// Simulation is the simulated Flink of dev: one fake Flink cluster (package fakeflink) per
// FlinkCluster, made when first needed, whose JobManager processes a flinksim.Simulator
// attaches to the running JobManager pods. Its HA ConfigMaps are real ConfigMaps of the
// cluster's namespace, as Flink's Kubernetes HA writes them, so the controller reads and
// cleans up what Flink would have written. Nothing listens on a socket: the controller's
// REST calls are served in process (FlinkClientFor).
type Simulation struct {
	client client.Client
	// clock is the fake Flink clusters' clock, kept at the real time: fakeflink only moves
	// time when told, and the controller judges Flink's leases by the real clock.
	clock *clocktesting.FakeClock
	sim   *flinksim.Simulator
	log   logr.Logger

	mu sync.Mutex
	// clusters are the fake Flink clusters by FlinkCluster UID: a FlinkCluster deleted and
	// created again under its name gets a fresh Flink, as a new Flink deployment would.
	clusters map[types.UID]*fakeflink.Cluster
}

// NewSimulation returns the simulated Flink of the API server cfg reaches; run it with Start.
func NewSimulation(cfg *rest.Config, log logr.Logger) (*Simulation, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	s := &Simulation{
		client:   c,
		clock:    clocktesting.NewFakeClock(time.Now()),
		log:      log.WithName(SimulationLogName),
		clusters: map[types.UID]*fakeflink.Cluster{},
	}
	s.sim, err = flinksim.New(flinksim.Options{
		Config:   cfg,
		Clusters: func(_ context.Context, fc *v1beta1.FlinkCluster) *fakeflink.Cluster { return s.Cluster(fc) },
		Log:      s.log,
		OnExit: func(pod *corev1.Pod, p *fakeflink.JobManager, st fakeflink.ExitStatus) {
			s.log.Info("simulated Flink JobManager process exited", "pod", client.ObjectKeyFromObject(pod), "process", p.Name(), "exitCode", st.Code)
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Cluster returns the fake Flink cluster standing in for fc's Flink, made on first use.
func (s *Simulation) Cluster(fc *v1beta1.FlinkCluster) *fakeflink.Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clusters[fc.UID]; ok {
		return c
	}
	c := fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(fc),
		Version:   fakeflink.Version(fc.Spec.FlinkVersion),
		HA:        &fakeflink.KubeHA{Client: s.client, Namespace: fc.Namespace},
		Clock:     s.clock,
		Program:   fakeflink.Program{JobName: fc.Name},
		InProcess: true,
		// A thousand pods may start at once (make bench): each elects off the Simulator's
		// loop, as Flink does.
		ElectInBackground: true,
		// Leases and checkpoints on Flink's timers, from the Simulator: no HA read per REST
		// answer (flinksim's timers).
		Driven: true,
	})
	s.clusters[fc.UID] = c
	return c
}

// FlinkClientFor is the controller's Flink REST client of fc: its fake cluster's JobManager
// Service, reached in process.
func (s *Simulation) FlinkClientFor(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	c := s.Cluster(fc)
	cl, err := flinkclient.New(c.URL(), c.HTTPClient())
	if err != nil {
		return nil, fmt.Errorf("the simulated Flink of %s/%s: %w", fc.Namespace, fc.Name, err)
	}
	return cl, nil
}

// Start runs the simulation until ctx ends: the clock follows the real one, and the
// Simulator attaches processes to pods. It implements controller-runtime's Runnable.
func (s *Simulation) Start(ctx context.Context) error {
	go func() {
		tick := time.NewTicker(clockStep)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if now.After(s.clock.Now()) {
					s.clock.SetTime(now)
				}
			}
		}
	}()
	err := s.sim.Start(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, c := range s.clusters {
		c.Close()
		delete(s.clusters, uid)
	}
	return err
}
