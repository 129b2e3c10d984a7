// Package simulation drives the controller's reconcile against a model of Kubernetes and the
// fake Flink of package fakeflink (internal/test/fakeflink), over random sequences of events,
// and checks its invariants after every reconcile: no job run again after it ended, no deploy
// from an older state than the newest, no JobManager removed without the state its next deploy
// restores, every wait said and bounded. Its tests need no API server.
//
// The model (all in the package's tests):
//   - store_test.go: an in-memory API server (typed objects deep-copied in and out, resource
//     versions, finalizers, the status subresource, merge patches); controller-runtime's fake
//     client converted every object through JSON on every call, which cost most of a step.
//   - kube_test.go: the Deployment, ReplicaSet, Job, garbage-collection, node lifecycle, taint
//     eviction and pod GC controllers, the scheduler and the kubelets (container starts,
//     crash-loop back-off, preStop and grace periods), on nodes that can be lost, come back
//     or be deleted; store_test.go deletes pods gracefully, as the API server does.
//   - differential_test.go: the model checked against a real control plane (below).
//   - flink_test.go: each container run is a fakeflink JobManager process, started from the
//     pod's command line and the Flink configuration ConfigMap, in a fakeflink.Cluster whose
//     HA ConfigMaps live in the model's API server (fakeflink.KubeHA), where the controller
//     reads them; the controller reaches the processes through the JobManager Service, an
//     in-process http.RoundTripper over the ready pods. The invariants about what Flink ran
//     are a fakeflink.Observer: no job run again after it ended; no JobManager recovering
//     another deploy's job graph; no main() rerun for a job that ran, but in the one window
//     below (and then from its deploy's own restore point).
//   - world_test.go: the checks on each reconcile (deploys, removals, terminal states,
//     waits, and every job state change a row of the job state machine, state.Transitions:
//     the controller's own UnlistedTransition Event, and the Events' "from -> to" read from
//     the outside), property_test.go: the random events and TestInvariants.
//
// The directed tests, by topic (their steps and predicates in helpers_test.go):
//   - update_test.go: an update's stop-with-savepoint, its result and what the next deploy
//     restores; restore_test.go: the savepoint a deploy restores through its configuration,
//     and whether a job ran (a job that may have run is never redeployed from its restore point);
//   - savepoints_test.go: scheduled and requested savepoints, fromSavepoint on an update, the
//     savepoint history and its disposal; laststate_test.go: the upgrade modes last-state and
//     stateless; jobmode_test.go: Job-mode JobManagers and their shutdown;
//   - cancel_test.go: cancels; lost_test.go: crash loops, restarts after the job ended, and the
//     Lost timeout; application_test.go: main() failures and Flink 2.3 applications;
//   - ha_test.go: HA data deleted or missing, unsupported HA, the leader and the wait for it,
//     and the generator's HA options (rest.address, lease durations); halost_test.go: HA data
//     lost behind a running JobManager;
//   - replicaset_test.go: a ReplicaSet that outlives its Deployment.
//
// The controller runs on its own clock (world.controllerClock): in a third of the random
// sequences it is up to 40 s ahead of or behind the clock of Flink and of the API server and
// kubelets that timestamp pods; the checks read the controller's conditions on its clock.
//
// TestInvariants explores 1,000 sequences of 60 steps in make test, a fixed set (SIM_BASE
// picks another; SIM_SEQUENCES, SIM_STEPS; SIM_SEED=<seed> replays one, SIM_TRACE=all prints its whole trace), and 50,000 drawn anew
// in make soak-controller (SIM_BASE=random); after its steps each sequence plays a quiet phase
// for the liveness invariant (liveness_test.go); a directed test runs alone with go test
// ./controller/simulation/ -run TestName.
//
// # The invariants
//
// Each is checked on every reconcile or execution start (TestInvariants, and the directed
// tests), with no exemption:
//
//   - main() run again after the job ran, once the HA ConfigMaps were deleted, for a run the
//     controller had not recorded (ExecutionStarted). The controller pins a Deployment
//     deploy to its HA data (ResumeFromHAOnly in the Flink configuration) as soon as a
//     reconcile reads the job's graph in the HA ConfigMaps, which it reads whether or not the
//     REST API answers (observeSubmitted), and a last-state deploy from the start (its only
//     restore source is the checkpoint store, which Flink prefers to any path). What is left
//     is the window no controller sees: main() submitted the job and the HA data went before
//     any reconcile ran (the model's reconciles that ended in an error). The invariant: a
//     rerun happens only in that window (graphSeen, by deploy), and restores exactly what the
//     deploy's first run restored; a rerun after a reconcile read the graph, or from another
//     restore point, is a violation.
//     TestHADeletedBeforeTheControllerSawTheJobRunFailsInsteadOfRewinding shows it with
//     the REST API down throughout.
//   - A job that ran deployed again from empty state after its HA data was deleted (checkDeploy):
//     the run is in the status or the deploy was pinned to HA, so the controller asks
//     (SavepointRequired) instead.
//   - A last-state redeploy's DeployFailed (checkDeploy): the verdict is judged for the deploy
//     that failed (job ID and revision, persistedIn), not for its job ID, whose earlier
//     revisions persisted state.
//   - The Lost timeout's afterJobFails (checkRemoval): it must never remove the JobManager of
//     a job that a JobManager in touch runs. A Lost job is one no trusted JobManager reports,
//     and the timeout ends only a job that cannot resume from HA (keepRecoverableLostJob).
//   - The upgrade modes without a savepoint (checkRemoval): stateless removes the JobManager
//     because the spec says so (its next deploy starts empty on purpose); last-state only
//     while the job's checkpoint store is in HA with a completed checkpoint (or its newest
//     state is a savepoint) and, with the operator's max checkpoint age set, that newest state
//     is no older than the bound, up to the controller's clock skew (checkLastStateRemoval);
//     what the next deploy restores is checked when it starts (checkLastStateRestore).
//   - checkHALoss: a reconcile that did not get Flink's word on the job (Waiting for the REST
//     API, for the leader, for the job's report, for a 2.3 application's job) did not see it
//     RUNNING — the invariant's precondition, reported and bounded (checkWaits); no other
//     wait (a savepoint in flight) excuses it. A leader cut off on a lost node is
//     no job that "runs on" either: its pod is evicted and cannot restart in place.
//
// The generator covers the HA settings: rest.address, Flink's lease duration, the
// controller's clock skew (a third of the sequences, up to 40 s either way), and ZooKeeper or
// a factory class for a sixth of the Deployment clusters, for its denial by the policy
// (drawUnsupportedHA; the sequence runs the cluster the webhook admits).
//
// # The model of Kubernetes against the real one
//
// TestModelMatchesTheRealControlPlane (differential_test.go) drives ten sequences of events,
// both deployment types, through the model and through a real control plane
// (testenv.StartControlPlane: kube-apiserver, etcd, kube-controller-manager, kube-scheduler,
// KWOK nodes): create, delete a pod, force-delete it, stop a node's heartbeats, bring it
// back, delete it, delete the Deployment or Job in the background, scale to 0 and back. After
// each event it compares, on a normalised view (workload, ReplicaSets and their owner, each
// pod's owner kind, phase, readiness, deletion, its node's state, restarts, the Job's tracking
// finalizer and conditions), the views the model passes through on virtual time with those
// the real plane passes through on real time: the real plane reaches the model's last view,
// shows every view the model held for two seconds or more, in order, and holds for four
// seconds or more no view the model never shows. It runs in make test.
//
// What matches the real control plane, each seen in the differential test:
//
//   - JobManager pods are made by a ReplicaSet of the Deployment (Recreate); a ReplicaSet
//     whose Deployment is gone lives until the garbage collector's next pass and, in the tick
//     the collector deletes it, still replaces a deleted pod (the worse branch of the real
//     race); its pods go a pass later. Scale-down is the ReplicaSet's.
//   - A deleted pod is Terminating: its kubelet runs preStop, sends SIGTERM after it (SIGKILL
//     at the end of the grace period, 30 s unless the template says), writes the terminal
//     phase (Failed, Succeeded after exit 0), and deletes it with grace 0 at its next sync.
//   - A lost node: its heartbeats stop; after the node monitor grace period (50 s) it is
//     tainted unreachable and its pods marked Ready=False; a pod is evicted once its
//     toleration ran out (30 s for a Deployment-mode JobManager, the API server's 300 s in Job
//     mode, added at creation as DefaultTolerationSeconds does) and stays Terminating; its
//     process runs on, cut off. Back, the node's kubelet ends the pods deleted meanwhile and
//     the taints go at the next node monitor period.
//   - A deleted node: its processes end with the machine; its pods stay Running in the API
//     until pod garbage collection (40 s) fails and force-deletes them.
//   - A force-deleted pod leaves the API at once (a finalizer aside) while its container runs
//     on until its kubelet, if in touch, notices (2 s).
//   - A crash loop: the first restart at once, then after 10 s doubling to 5 min (reset after
//     10 min without a restart), with Ready=False and CrashLoopBackOff in between.
//   - The Job controller tracks its pod with batch.kubernetes.io/job-tracking, counts it failed
//     once terminal Failed or deleted, removes the finalizer, adds JobFailureTarget (backoffLimit
//     0) and deletes what is still active, and adds JobFailed only once no pod of the Job is
//     left non-terminal (a pod stuck Terminating on a lost node holds it); it releases the
//     pods of a Job that is gone.
//
// What the model still simplifies, and why:
//
//   - Time moves in ticks of the sequence (1 to 3 s, and the jumps of the random events):
//     what Kubernetes does within a second (the garbage collector's pass, the scheduler, a
//     container start) happens in one tick, so a state that lasts milliseconds in Kubernetes
//     (a ReplicaSet outliving its Deployment) lasts a tick here, which over-weights those
//     races rather than missing them.
//   - Nodes are not API objects (the controller reads none) and the scheduler only avoids
//     deleted and tainted nodes, spreading pods by count; affinity, resources and topology
//     are not modelled. Three nodes; a sequence that loses all of them leaves pods Pending.
//   - Pod garbage collection's quarantine is a fixed 40 s (Kubernetes: 40 to 60 s); a
//     returning node's taints go a monitor period after its return, not on its first
//     heartbeat; the node lifecycle controller's zone states and eviction rate limits are
//     not modelled (one node at a time is lost here).
//   - The kubelet: readiness follows the container (no probes); a JobManager stops at once on
//     SIGTERM; a node that comes back marks its running pods Ready again (KWOK does not, so
//     the differential test does not compare that case); a crash loop is a count of restarts
//     that fail at once, not a process that runs a while before it dies.
//   - Deployments and ReplicaSets have no status (the controller reads neither) and the
//     Deployment controller does no rolling update (the JobManager's is Recreate, and the
//     controller replaces the Deployment rather than its template).
//   - KWOK keeps a deleted pod Running until its deletion deadline whatever its container
//     does; the model follows the kubelet (the pod goes after preStop and SIGTERM), so the
//     Terminating windows differ in length, not in the states passed through.
//   - The differential test compares pods and workloads, not Flink: no JobManager process
//     runs on the real plane there (controller/realplane attaches simulated Flink), and the
//     crash loop, which KWOK cannot express, is compared only in realplane's row.
package simulation
