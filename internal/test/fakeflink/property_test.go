package fakeflink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestRandomSequencesKeepTheFakeConsistent drives the fake with random sequences of process
// starts, kills, graceful stops, partitions, clock jumps, job ends, stops with savepoint and
// lost HA data, and checks after every step what Flink guarantees: at most one process leads
// among those that can reach the API server; the HA ConfigMap names the leader's address; and,
// with delete-on-commit=false, no job is ever run again after it ended.
func TestRandomSequencesKeepTheFakeConsistent(t *testing.T) {
	const sequences, steps = 150, 40
	ctx := context.Background()
	for seq := range sequences {
		rng := rand.New(rand.NewPCG(uint64(seq), 42))
		ha := &fakeflink.MemoryHA{}
		c := fakeflink.NewCluster(fakeflink.Options{ClusterID: clusterID, HA: ha, Version: []fakeflink.Version{fakeflink.Version1_20, fakeflink.Version2_2, fakeflink.Version2_3}[seq%3]})
		props := haProps(fakeflink.PropJRSDeleteOnCommit, "false")
		var trail []string
		fail := func(format string, args ...any) {
			c.Close()
			t.Fatalf("sequence %d after %s: %s", seq, strings.Join(trail, ", "), fmt.Sprintf(format, args...))
		}
		c.Start(fakeflink.Config{Properties: props})
		for range steps {
			procs := c.Processes()
			p := procs[rng.IntN(len(procs))]
			switch rng.IntN(9) {
			case 0:
				c.Start(fakeflink.Config{Properties: props, FromSavepoint: "s3://sp/initial"})
				trail = append(trail, "start")
			case 1:
				p.Kill()
				trail = append(trail, "kill "+p.Name())
			case 2:
				p.Stop()
				trail = append(trail, "stop "+p.Name())
			case 3:
				cut := rng.IntN(2) == 0
				p.Partition(cut)
				trail = append(trail, fmt.Sprintf("partition %s %v", p.Name(), cut))
			case 4:
				d := time.Duration(rng.IntN(40)) * time.Second
				c.Advance(d)
				trail = append(trail, "advance "+d.String())
			case 5:
				if l := c.Leader(); l != nil && l.JobState(jobID) == flinkclient.JobStateRunning {
					l.SetJobState(jobID, []string{flinkclient.JobStateFinished, flinkclient.JobStateFailed, flinkclient.JobStateCanceled}[rng.IntN(3)])
					trail = append(trail, "job ends")
				}
			case 6:
				if l := c.Leader(); l != nil {
					fc, _ := flinkclient.New(c.URL(), c.HTTPClient())
					tid := flinkclient.NewID()
					if _, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: tid}); err == nil {
						_, _ = fc.SavepointStatus(ctx, jobID, tid)
					}
					trail = append(trail, "stop-with-savepoint")
				}
			case 7:
				if l := c.Leader(); l != nil {
					l.CompleteCheckpoint(jobID)
					trail = append(trail, "checkpoint")
				}
			case 8:
				if rng.IntN(4) == 0 {
					_ = c.LoseHA()
					trail = append(trail, "lose HA")
				}
			}

			leaders := 0
			var leader *fakeflink.JobManager
			for _, q := range c.Processes() {
				if q.Leads() {
					leaders++
					leader = q
				}
			}
			connected := 0
			for _, q := range c.Processes() {
				if q.Leads() && !q.Partitioned() {
					connected++
				}
			}
			if connected > 1 {
				fail("%d connected leaders", connected)
			}
			if leaders == 1 && connected == 1 {
				cm, err := ha.Get(ctx, flinkha.ClusterConfigMapName(clusterID))
				if err != nil || cm == nil {
					fail("a leader without a cluster ConfigMap")
				}
				if l, ok := flinkha.Leader(cm); !ok || l.Address != leader.Address() {
					fail("the ConfigMap names %q, the leader is %s", l.Address, leader.Address())
				}
			}
			for _, v := range c.Violations() {
				if strings.Contains(v, "rerun") {
					fail("%s", v)
				}
			}
		}
		c.Close()
	}
}
