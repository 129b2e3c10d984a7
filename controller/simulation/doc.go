// Package simulation drives the controller's reconcile against a model of Kubernetes and the
// fake Flink of package fakeflink, over random sequences of events, and checks the issue-8
// invariants after every reconcile. Its tests need no API server.
//
// The model (all in the package's tests):
//   - store_test.go: an in-memory API server (typed objects deep-copied in and out, resource
//     versions, finalizers, the status subresource, merge patches); controller-runtime's fake
//     client converted every object through JSON on every call, which cost most of a step.
//   - kube_test.go: the Deployment, Job and garbage-collection controllers, the kubelet
//     (container starts, restarts, crash loops) and lost nodes (pods stuck Terminating).
//   - flink_test.go: each container run is a fakeflink JobManager process, started from the
//     pod's command line and the Flink configuration ConfigMap, in a fakeflink.Cluster whose
//     HA ConfigMaps live in the model's API server (fakeflink.KubeHA), where the controller
//     reads them; the controller reaches the processes through the JobManager Service, an
//     in-process http.RoundTripper over the ready pods. The invariants about what Flink ran
//     are a fakeflink.Observer: no job run again after it ended; no JobManager recovering
//     another deploy's job graph; no main() rerun, while the HA data is there, for a job that
//     ran; no main() rerun from the deploy's savepoint once the controller saw the job run.
//   - world_test.go: the checks on each reconcile (deploys, removals, terminal states,
//     waits), property_test.go: the random events and TestInvariants, holes_test.go,
//     holes_more_test.go and halost_test.go: directed tests of the holes of issue 8,
//     holes17ha_test.go: of the HA holes of issue 17 (ZooKeeper, HA deleted under the leader,
//     clean job results, rest.address), and the generator's HA options (rest.address, lease
//     durations).
//
// TestInvariants explores 1,000 sequences of 60 steps in make test (SIM_SEQUENCES,
// SIM_STEPS; SIM_SEED=<seed> replays one) and 50,000 in make soak-controller.
//
// # On the controller issue 8 was filed against
//
// hack/simulation-on-adf65c7.sh runs these tests against the controller of commit adf65c7
// (it copies the simulation, fakeflink and glue that changes no behaviour into a worktree of
// that commit). Every directed test fails there and passes now:
//
//	test (seed)                                              on adf65c7
//	TestHole2LostStopResultRecoveredFromCheckpoints (1)      deployed from "" while the newest savepoint is …/savepoint-374953-…;
//	                                                         rerun after it ended: main() ran again (no job result found)
//	TestHole2NoConfirmedFinalSavepointStops (2)              no SavepointRequired; rerun after it ended: main() ran again
//	TestHole2FailingStopThenRevert (5)                       Updating for 20m12s with nothing said about why
//	TestHole3MissingHAFailsTheDeployment (4)                 no failure: the Deployment is recreated and main() runs again
//	                                                         from empty state (the HA data is gone, so no invariant names it)
//	TestHole1NewRevisionGetsANewJobID (11)                   the next revision is deployed under the old job ID: rerun after it
//	                                                         ended: main() ran again (no job result found); the pod template
//	                                                         names a savepoint
//	TestHole1RestartAfterTheJobEndedFindsItsResult (12)      the restarted JobManager finds no job result (delete-on-commit):
//	                                                         main() ran again, the FINISHED job RUNNING again, never Succeeded
//	TestHole4StuckTerminatingPodThatDoesNotLeadBlocksNothing (13)
//	                                                         the stuck pod blinds the controller: the savepoint is never taken
//	TestHole4WaitWithoutLeaderIsBounded (14)                 no Waiting condition, no WaitExceeded: the job stays Running with
//	                                                         nothing said about the JobManager it cannot reach
//	TestHole5CrashLoopOfARunningJobIsNotTerminal (15)        Failed after 3 restarts (CrashLoopBackOff), the Deployment deleted
//	TestHole5CrashLoopEndsAtTheLostTimeout (19)              the same: Failed at once, never Lost, no Lost timeout
//	TestHole6ApplicationFailedWithJobCanceledIsNotCancelled (16)
//	                                                         Cancelled, with no failure reason
//	TestHole6ApplicationDriverJobIsDeployFailed (17)         Failed, not DeployFailed
//	TestHole6RunningApplicationWithoutJobIsNotLost (18)      Lost two minutes after the restart (the HA recovery grace), while
//	                                                         the application waits for execute()
//	TestHole7CancelFallsBackToPlainCancel (3)                the cancel's savepoint fails, the control fails, the job runs on
//	TestInitialSavepointLeavesTheConfigurationOnceTheJobRan (5)
//	                                                         the pod template names a savepoint; re-ran main() from its
//	                                                         deploy's savepoint after the controller saw it run
//	TestSavepointLeavesTheConfigurationWhenACancelComesFirst (6)
//	                                                         the pod template names a savepoint
//
// TestInvariants on adf65c7, one run of 300 sequences of 30 steps (the seeds change with
// every run): 168 sequences violated an invariant. By invariant (a sequence stops at its
// first violating step, which may break several):
//
//	sequences  invariant broken on adf65c7
//	   57      a new revision deployed while the old one's job graph remains in HA
//	   52      job rerun after it ended: main() ran again (no job result found)
//	   48      the JobManager Deployment's pod template names a savepoint
//	   44      main() re-ran after the job had run (its state since is lost)
//	   41      deployed from empty state after the previous deploy's job ran
//	   17      a new revision's JobManager recovered the old revision's job from HA
//	    7      deployed from a savepoint older than the newest one
//	    2      a job non-terminal for 20 min with nothing said about why (no bounded wait)
//	    1      Cancelled recorded while Flink still runs the job
//	    1      the JobManager of a running job removed without a completed savepoint
//
// (An earlier run also had Succeeded recorded for a job that a stop-with-savepoint ended.)
//
// Now: every directed test passes, and TestInvariants finds no violation. The last gap it
// found — a job that ran and ended while the Flink API never answered, whose Job-mode
// JobManager exited and whose HA data Flink removed, taken by the controller as never run —
// is closed (a deploy whose JobManagers went away unobserved counts as one that ran:
// TestUnobservedRunIsNotTakenForNeverRan, in both modes).
//
// What the model of Kubernetes (kube_test.go) still simplifies, read against the real control
// plane of controller/realplane (kube-controller-manager, kube-scheduler, KWOK nodes, Flink
// simulated by internal/flinksim). These were seen there; no differential test drives the same
// sequences through both yet, so the model has not been changed for them:
//
//   - JobManager pods are owned by the Deployment itself: there is no ReplicaSet, which in
//     Kubernetes outlives a background-propagation delete of its Deployment until the garbage
//     collector reaches it (the controller copes: realplane's "Deployment deleted while its
//     ReplicaSet lives" ends with one JobManager and the job recovered);
//   - garbage collection of orphans and scale-down are immediate, in the same step;
//   - a deleted pod stops and goes in one step: no preStop delay, no grace period, no
//     terminal phase written before the removal;
//   - a lost node only freezes its pods: no taint, no toleration, no eviction. Kubernetes marks
//     the node unreachable after the node monitor grace period, evicts the pod once its
//     tolerationSeconds ran out (30 s for a Deployment-mode JobManager, 300 s in Job mode), and
//     the evicted pod stays Terminating until the node comes back or is deleted;
//   - a deleted node is not modelled: in Kubernetes its pods stay Running in the API until pod
//     garbage collection force-deletes them (about 40 to 50 s here), and their processes end
//     with the machine;
//   - a force-deleted pod is not modelled apart: in Kubernetes the object goes at once while
//     its container runs on (until a kubelet still in touch stops it);
//   - a crash loop restarts without back-off: the kubelet restarts at once the first time,
//     then after 10 s doubling to 5 min, with Ready=False and CrashLoopBackOff in between;
//   - the Job controller is a condition written from the pod's phase: the real one tracks its
//     pod with the batch.kubernetes.io/job-tracking finalizer, removed once the pod is counted,
//     and fails the Job (backoffLimit 0) through JobFailureTarget, then JobFailed.
package simulation
