//go:build conformance

// Package differential_test runs one script of operations against real Apache Flink and
// against the fake Flink the controller's other tests use (internal/test/fakeflink, attached
// to the pods by internal/test/flinksim as make run does), and compares what the controller
// reads of each: the REST answers its flinkclient decodes (their fields, the job states in
// the order they were seen, savepoint and checkpoint locations, checkpoint IDs), the HA
// ConfigMaps (names, labels, data keys, when each appears and goes) and the JobManager's
// exit code. IDs, timestamps, pod addresses and directories are normalized first (see
// normalize in compare_test.go); what is left must be equal, or be one of the divergences
// fakeflink's package documentation lists as deliberate (deliberate in script_test.go).
//
// No controller runs: the test renders the cluster's objects with the controller's own
// resources package (the Flink configuration ConfigMap, the Service, the JobManager as a
// batch Job, the TaskManagers' StatefulSet) in a namespace per side and scenario, and drives
// Flink through its REST API and the HA ConfigMaps itself, so that both sides see the same
// operations at the same points of the script.
//
// It builds with -tags conformance (it starts Flink JVMs); make conformance runs it.
// DIFFERENTIAL_FLINK_VERSION picks the Flink version (default realflink.Default),
// DIFFERENTIAL_SCENARIOS (comma-separated) some of the scenarios. The
// real side's observations are written to .conformance/differential-<version>.json (a
// scenario that failed keeps its earlier record); DIFFERENTIAL_REAL=<that file> compares the
// fake against a recorded run instead of starting JVMs, for a quick loop on the fake.
// DIFFERENTIAL_KEEP=1 keeps the JVMs' logs and the sides' directories.
package differential_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

var (
	cp       *testenv.ControlPlane
	k8s      client.Client
	launcher *realflink.Launcher
	version  string
	// recorded is the real side's recorded observations (DIFFERENTIAL_REAL), or nil.
	recorded map[string][]observation
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("DIFFERENTIAL_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	version = os.Getenv("DIFFERENTIAL_FLINK_VERSION")
	if version == "" {
		version = realflink.Default
	}
	os.Exit(func() int {
		if path := os.Getenv("DIFFERENTIAL_REAL"); path != "" {
			var err error
			if recorded, err = readObservations(path); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		stop, err := start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		return m.Run()
	}())
}

// start brings up the control plane and, unless the real side is recorded, the launcher of
// Flink JVMs.
func start() (func(), error) {
	scheme, err := controllerenv.NewScheme()
	if err != nil {
		return nil, err
	}
	var arts *realflink.Artifacts
	if recorded == nil {
		arts = &realflink.Artifacts{}
		if _, err := arts.Lib(version); err != nil {
			return nil, err
		}
		if _, err := arts.JobsJar(); err != nil {
			return nil, err
		}
	}
	cp, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{NodeLeaseDuration: 8 * time.Second, NodeMonitorGracePeriod: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (func(), error) { _ = cp.Stop(); return nil, err }
	// Every control plane numbers its nodes from 0, and node n's pods get 127.1.n.0/24: the
	// JVMs of another suite running on this machine (make conformance) bind the first
	// nodes' addresses. Skip past them: the node indices below padNodes are taken by KWOK
	// processes stopped at once, and the one node of the suite gets the next.
	for i := range padNodes {
		name := fmt.Sprintf("unused-%d", i)
		if err := cp.StartNode(name); err != nil {
			return fail(err)
		}
		if err := cp.StopNode(name); err != nil {
			return fail(err)
		}
	}
	if err := cp.AddNode(context.Background(), "kwok-node-differential"); err != nil {
		return fail(err)
	}
	if k8s, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "flink-admission-differential-")
	if err != nil {
		return fail(err)
	}
	if arts != nil {
		launcher, err = realflink.New(realflink.Options{Config: cp.Config, Artifacts: arts, Dir: dir, MaxJVMs: 4, Log: ctrl.Log.WithName("realflink")})
		if err != nil {
			return fail(err)
		}
	}
	return func() {
		if launcher != nil {
			launcher.Close()
		}
		_ = cp.Stop()
		if os.Getenv("DIFFERENTIAL_KEEP") == "" {
			_ = os.RemoveAll(dir)
		} else if launcher != nil {
			fmt.Fprintln(os.Stderr, "differential: JVM logs kept in", launcher.LogDir())
		}
	}, nil
}

// padNodes is how many pod address ranges the suite leaves to others (see start).
const padNodes = 7

// waitFor polls cond every 200 ms until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}
