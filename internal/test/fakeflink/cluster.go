// Package fakeflink is a deterministic stand-in for a Flink cluster in application mode,
// with the behaviour that decides whether a job is rerun, rewound or lost:
//
//   - every JobManager process is its own REST server (httptest, 127.0.0.1) with its own
//     jobs, savepoint operations and lifetime (Start, Kill, Stop, Exit);
//   - leadership is elected through Flink's HA ConfigMaps (package flinkha) in an HAStore:
//     a real API server (KubeHA) or memory (MemoryHA); leases run on an injected clock, and
//     the leader reads and renews its lease once a renew period (a third of the lease, as
//     Flink's retry period), not on every call;
//   - the job graph store: a new leader with the same cluster ID recovers the stored job
//     graphs, from their latest checkpoint or their original savepoint, whatever its own
//     command line says;
//   - the checkpoint store as Flink lays it out (KubernetesStateHandleStore): a job's
//     ConfigMap keeps checkpointID-<19 digits> entries (state.checkpoints.num-retained of
//     them) and the ID counter, each entry a serialized state handle of a file in
//     high-availability.storageDir, as is each stored job graph; a job started under a job ID
//     whose store holds a checkpoint restores the newest one, whatever its savepoint path
//     says (a last-state redeploy), and a graph carries its submitter's revision;
//   - the job result store (job-result-store.storage-path and delete-on-commit) lives in the
//     cluster's shared "filesystem", so results survive process restarts; with
//     delete-on-commit=true a restarted JobManager reruns main() (FLINK-27569); with a clean
//     result it lists no job, with a dirty one the job in its result's state;
//   - a restore path that does not exist (a relative one) fails the job before it runs;
//   - the leader exits when its HA ConfigMap is deleted externally;
//   - with Options.JobStartup, a job is INITIALIZING, then CREATED, before RUNNING;
//   - Application mode main(): a fixed job ID ($internal.pipeline.job-id), a job whose ID
//     already has a result is not run again; a throwing main() and
//     execution.submit-failed-job-on-application-error;
//   - periodic checkpoints every execution.checkpointing.interval while a job runs (from the
//     time it became RUNNING; each completes Options.CheckpointDuration after its trigger),
//     stored in the checkpoint store and counted in /jobs/:id/checkpoints (checkpointing.go);
//   - savepoint operations idempotent per triggerId, whose results expire after
//     rest.async.store-duration; /jobs/:id/checkpoints;
//   - the Dispatcher's job store: an application cluster lists its ended job for as long as
//     the process runs, a session cluster forgets one after jobstore.expiration-time;
//   - Flink 1.20, 2.2 and 2.3 (only 2.3 has /applications, with 32-hex application IDs).
//
// Nothing runs in the background: state changes only through REST calls and the test
// controls, and time only moves with the clock, so tests never sleep. With Options.Driven the
// timers (lease renewals once a retry period, periodic checkpoints as they complete) run only
// when a driver calls Tick, as flinksim does for make run and make bench, and a REST answer
// then reads no HA ConfigMap.
//
// Checked against real Flink 1.20.0, 2.2.1 and 2.3.0 (make conformance, internal/test/realflink),
// and compared with each by the differential test (e2e/differential: the same script against
// both, what the controller reads of each compared), it follows Flink in: the entrypoint's
// command line (ParseApplicationArgs); the HA ConfigMaps' names, their labels (configmap-type
// on 1.x only) and keys (the leaders' addresses, a running job's
// org.apache.flink.k8s.leader.job-<job ID> and execution plan in the cluster ConfigMap, its
// checkpoint IDs and counter in its own); a job's ConfigMap created when its JobMaster starts
// and never again, so that once it is deleted every checkpoint fails (counted in the
// statistics, the job runs on) and every savepoint and stop-with-savepoint fails with the job
// still RUNNING; the leaders' addresses removed when the JobManager exits; checkpoint and
// savepoint locations as Flink reports them (file:/x, never file:///x, from
// execution.checkpointing.dir and execution.checkpointing.savepoint-dir or their older keys;
// savepoint-<the job ID's first 6 hex>-<12 hex>); the restored checkpoint's ID in the
// statistics, and checkpoint IDs going on from a restored savepoint's; a savepoint trigger
// for a job the JobManager does not run accepted (202) and failed by its operation
// (CompletionException of FlinkJobNotFoundException); a main() that throws before 2.3 ending
// the process with exit code 2 (a fatal error); the cluster ConfigMap deleted under the
// leader ending it with 239 (found at its next renewal in a driven cluster, where Flink's
// informer reports it at once), the ConfigMap written again by its elector with the lock and
// no leader address.
//
// Where it differs, on purpose: a job is RUNNING at once unless Options.JobStartup (Flink
// shows INITIALIZING, then CREATED, for seconds); the REST answers are the live state, where
// Flink serves /jobs/:id, its exceptions and its checkpoint statistics from caches
// (web.refresh-interval, rest.cache.checkpoint-statistics.timeout: an answer right after a
// savepoint may not list it for up to 3 s); a real JobManager asked to shut down (DELETE
// /cluster) after its job's end may never exit on 2.2.1 (its job's HA cleanup is scheduled on
// an executor its shutdown stopped; seen in make conformance, not in the differential test's
// runs), where this one exits 0 unless a test says it hangs (SetShutdownHangs); a
// termination message is the failure's cause, where Flink's is the tail of its log; failure
// causes and stack traces are short. Flink's exit code after a fatal error may also be 239
// where the fake's is 2, or the reverse: a thread that dies while the JVM shuts down (Pekko's
// classes unloaded) ends it through FatalExitExceptionHandler (-17) first; the controller
// reads any non-zero code alike. LoseHA leaves no ConfigMap behind, where Flink's elector may
// write its lock again.
//
// With Options.InProcess nothing listens: tests reach the cluster or a process with
// HTTPClient (or ServeHTTP), so that a simulation can start thousands of processes; an
// Options.Observer is told of every execution's start and end and every completed savepoint
// as it happens (controller/simulation checks its invariants there).
//
// Test controls, on a Cluster: Start(Config) a process; Advance(d) the clock (leases expire,
// standbys take over, savepoint results expire); SetProgram and ReleaseMain script main();
// LoseHA deletes the HA ConfigMaps (the leader exits, as Flink's does), LoseJobGraphs the
// job graphs and the jobs' ConfigMaps (the leader runs on, unable to checkpoint),
// LoseExecutionPlans only the job graphs, MarkResultDirty leaves a job result dirty; Tick and
// NextTick run a driven cluster's timers; URL is the
// JobManager Service; Leader, Process, ProcessAt
// and Processes find processes; Executions, Violations and HasResult tell what happened.
// On a JobManager: Kill (or Crash), Stop, Exit, Restart, Partition; SetUnavailable (503) and
// Hold/Release (a hung REST API); SetJobState, SetJobs, SetExceptions, AddException, SetApplications,
// SetApplicationExceptions script Flink's answers; SetCancelHold and CompleteCancels make a
// cancel take time; SetSavepointMode, CompleteSavepoints, FailSavepoints,
// CompleteStopsThenRestart (a stop whose savepoint completed but whose job restarted) and
// ExpireSavepointResults drive savepoint operations; CompleteCheckpoint takes a checkpoint;
// JobState, RestoredFrom, LatestSavepoint, ApplicationID, ApplicationState, Leads, Requests
// and CountRequests observe it.
//
// New() is the single-process, HA-less fake of earlier tests: a Session process whose jobs
// are whatever the test scripts.
package fakeflink

import (
	"context"
	"crypto/tls"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// Version is the Flink version the fake behaves like.
type Version string

// Supported versions.
const (
	Version1_20 Version = "1.20"
	Version2_2  Version = "2.2"
	Version2_3  Version = "2.3"
)

// hasApplications reports whether the version serves /applications (FLIP-549, Flink 2.3).
func (v Version) hasApplications() bool { return v == Version2_3 }

// Flink configuration keys the fake reads from a process's Config.Properties.
const (
	PropHAType             = "high-availability.type"
	PropHAStorageDir       = "high-availability.storageDir"
	PropJobID              = "$internal.pipeline.job-id"
	PropJRSDeleteOnCommit  = "job-result-store.delete-on-commit"
	PropJRSStoragePath     = "job-result-store.storage-path"
	PropAsyncStoreDuration = "rest.async.store-duration"
	PropSubmitFailedJob    = "execution.submit-failed-job-on-application-error"
	PropSavepointDir       = "state.savepoints.dir"
	PropCheckpointDir      = "state.checkpoints.dir"
	PropSavepointPath      = "execution.savepoint.path"
	PropIgnoreUnclaimed    = "execution.savepoint.ignore-unclaimed-state"
	PropLeaseDuration      = "high-availability.kubernetes.leader-election.lease-duration"
	// PropJobStoreExpiration is jobstore.expiration-time, in seconds: how long a session
	// cluster's Dispatcher keeps a globally terminated job (see expireJobsLocked).
	PropJobStoreExpiration = "jobstore.expiration-time"
)

// Flink's defaults for what Config.Properties leaves out.
const (
	defaultAsyncStoreDuration     = 5 * time.Minute
	defaultLeaseDuration          = 15 * time.Second
	defaultJobStoreExpiration     = time.Hour
	defaultSavepointDir           = "file:/savepoints"
	defaultCheckpointDir          = "file:/checkpoints"
	defaultHAStorageDir           = "file:///flink-ha"
	applicationDriverJobName      = flinkclient.ApplicationDriverJobName
	leaderElectionUnavailableBody = `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`
)

// Options configure a cluster.
type Options struct {
	// ClusterID is kubernetes.cluster-id of every process; default "flink". Clusters with
	// different IDs may share one HAStore.
	ClusterID string
	// Version is the Flink version; default 2.2.
	Version Version
	// HA stores the HA ConfigMaps; default a fresh MemoryHA.
	HA HAStore
	// Clock drives leases, savepoint result expiry and timestamps; default a fake clock at
	// 2026-11-30T12:00:00Z.
	Clock *clocktesting.FakeClock
	// Program is what the application's main() does; see Program.
	Program Program
	// InProcess opens no socket: neither the Service nor the processes listen, and tests
	// reach them with HTTPClient (or ServeHTTP), so that simulations can start thousands of
	// processes cheaply. URL and JobManager.URL are then placeholders.
	InProcess bool
	// ElectInBackground makes a started process run for leadership from a goroutine of its
	// own, as Flink's leader election driver does, instead of within Start: whoever starts
	// many processes at once (the simulated Flink of make run and make bench) then does not
	// wait on each one's HA reads and writes in turn. Off, Start returns with the election
	// done, which a deterministic world that steps its processes relies on.
	ElectInBackground bool
	// Driven leaves the cluster's timers to a driver that calls Tick when NextTick is due,
	// as Flink's own threads run them whether anyone looks or not: the leader renews its lease
	// (and standbys try for it) once a retry period, and each periodic checkpoint is written
	// to the HA store when it completes. A REST answer then never reads or writes an HA
	// ConfigMap. Off, the cluster catches up with its clock whenever it is looked at (a REST
	// answer, a control), which a deterministic world that steps its clock relies on. The
	// simulated Flink of make run and make bench (flinksim) drives its clusters so.
	Driven bool
	// FileSystem is the file system the cluster's savepoints go to; default one of its own.
	// Clusters that restore each other's savepoints (a deploy after a deploy) share one.
	FileSystem *FileSystem
	// Observer, when set, is told what happens to jobs as it happens (see Observer).
	Observer Observer
	// JobStartup, when set, is how long a job main() submits (or a JobManager recovers)
	// takes to run: INITIALIZING for the first half (the Dispatcher's JobManagerRunner
	// creates the JobMaster and restores its state: JobStatus.INITIALIZING), CREATED for the
	// second (the scheduler waits for slots: JobStatus.CREATED), then RUNNING. Zero starts
	// jobs RUNNING at once, as earlier tests expect. Program.InitialState overrides it.
	JobStartup time.Duration
	// CheckpointDuration is how long a periodic checkpoint (PropCheckpointInterval) takes
	// from its trigger to its completion; default a tenth of the interval.
	CheckpointDuration time.Duration
	// TLS, when set, makes the Service serve HTTPS with this configuration, as a cluster with
	// security.ssl.rest.enabled does (set ClientAuth for authentication-enabled); URL is then
	// https. The processes' own addresses stay plain HTTP.
	TLS *tls.Config
}

// Program scripts the user's main() in Application mode.
type Program struct {
	// JobName is the name of the job main() submits; default "job".
	JobName string
	// Throw makes main() throw this exception (e.g. "java.lang.IllegalArgumentException: bad
	// arg"); empty lets it submit the job.
	Throw string
	// ThrowAfterSubmit throws after the job was submitted (the job is then cancelled).
	ThrowAfterSubmit bool
	// BlockBeforeExecute keeps main() from reaching execute() until ReleaseMain: on Flink
	// 2.3 a recovered job waits for it (FLIP-560), and the application is RUNNING without a job.
	BlockBeforeExecute bool
	// InitialState is the state of a submitted job; default RUNNING.
	InitialState string
}

// Execution is one run of a job by one JobManager process, for checks across a test.
type Execution struct {
	// Process is the JobManager's name.
	Process string
	JobID   string
	// Recovered is true when the job came from the job graph store, false when main()
	// submitted it.
	Recovered bool
	// RestoredFrom is the savepoint or checkpoint the execution started from, or "".
	RestoredFrom string
	// RestoredCheckpoint is true when RestoredFrom came from the checkpoint store in HA
	// (a recovery, or main() under a job ID whose checkpoints were kept: last-state).
	RestoredCheckpoint bool
	// Revision is the revision (Config.Revision) of the process that submitted the job
	// graph this execution runs: a recovered graph keeps its submitter's revision.
	Revision string
	// ProcessRevision is the revision of the process running the execution.
	ProcessRevision string
	Start           time.Time
	// End and State are set once the execution ended: a globally terminal state, or
	// SUSPENDED when its JobManager lost leadership or died.
	End   time.Time
	State string
}

// jrsEntry is one job result store file.
type jrsEntry struct {
	state string
	clean bool
}

// Cluster is a fake Flink cluster: its JobManager processes and what they share (the HA
// store, the job result store and savepoints on the "filesystem", the clock). Its methods
// are safe for concurrent use.
type Cluster struct {
	mu      sync.Mutex
	opts    Options
	clock   *clocktesting.FakeClock
	ha      HAStore
	program Program
	// jrs maps a job result store path to job IDs to entries.
	jrs map[string]map[string]jrsEntry
	// haFiles are the files of high-availability.storageDir: the state handles' targets.
	haFiles map[string][]byte
	procs   []*JobManager
	// lastElection is when the leader election last read the lease (tickLocked).
	lastElection time.Time
	history      []*Execution
	violation    []string
	seq          int
	svc          *httptest.Server
	svcReqs      []string
	// savepointFiles are the savepoints on the "filesystem": true while they exist, false
	// once disposed of (rest.go, POST /savepoint-disposal).
	savepointFiles map[string]bool
	// unclaimed maps a savepoint location to an operator whose state it holds and the
	// program no longer has (SetUnclaimedState).
	unclaimed map[string]string
}

// FileSystem is what clusters share of the file system: the savepoints' metadata, from which
// a JobManager restoring a savepoint reads its checkpoint ID. The zero value is ready to use;
// it is safe for concurrent use.
type FileSystem struct {
	mu  sync.Mutex
	ids map[string]int64
}

func (f *FileSystem) writeSavepoint(location string, id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]int64{}
	}
	f.ids[location] = id
}

func (f *FileSystem) savepointID(location string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.ids[location]
	return id, ok
}

// SetUnclaimedState marks the savepoint at location as holding state of operator, which the
// program no longer has: a restore of it fails (Cannot map checkpoint/savepoint state for
// operator …) unless the job ignores unclaimed state, which the entrypoint decides
// (ignoresUnclaimedState).
func (c *Cluster) SetUnclaimedState(location, operator string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unclaimed == nil {
		c.unclaimed = map[string]string{}
	}
	c.unclaimed[location] = operator
}

// NewCluster returns a cluster with no JobManager; Start runs one. Close it when done.
func NewCluster(opts Options) *Cluster {
	if opts.Version == "" {
		opts.Version = Version2_2
	}
	if opts.HA == nil {
		opts.HA = &MemoryHA{}
	}
	if opts.Clock == nil {
		opts.Clock = clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	}
	if opts.ClusterID == "" {
		opts.ClusterID = "flink"
	}
	if opts.FileSystem == nil {
		opts.FileSystem = &FileSystem{}
	}
	c := &Cluster{opts: opts, clock: opts.Clock, ha: opts.HA, program: opts.Program, jrs: map[string]map[string]jrsEntry{}}
	if !opts.InProcess {
		c.svc = httptest.NewUnstartedServer(http.HandlerFunc(c.serveService))
		if opts.TLS != nil {
			c.svc.TLS = opts.TLS
			c.svc.StartTLS()
		} else {
			c.svc.Start()
		}
	}
	return c
}

// URL is the address of the cluster's JobManager Service: it reaches whichever live
// JobManager process can answer (any live process answers for the leader, as Flink's REST
// handlers retrieve the leading Dispatcher), or answers 503 while nobody leads.
func (c *Cluster) URL() string {
	if c.svc == nil {
		return "http://" + c.opts.ClusterID + "-rest.invalid"
	}
	return c.svc.URL
}

// Close stops every process and the Service.
func (c *Cluster) Close() {
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	for _, p := range procs {
		if p.hold != nil {
			close(p.hold)
			p.hold = nil
		}
	}
	c.mu.Unlock()
	for _, p := range procs {
		if p.srv != nil {
			p.srv.Close()
		}
	}
	if c.svc != nil {
		c.svc.Close()
	}
}

// Clock is the cluster's clock.
func (c *Cluster) Clock() *clocktesting.FakeClock { return c.clock }

// Advance moves the clock forward and lets leadership follow (leases expire, standbys take over).
func (c *Cluster) Advance(d time.Duration) {
	c.clock.Step(d)
	c.Tick()
}

// Driven reports whether the cluster's timers wait for Tick (Options.Driven).
func (c *Cluster) Driven() bool { return c.opts.Driven }

// Tick runs the cluster's timers due by its clock: periodic checkpoints that completed are
// written to the HA store, the leader renews its lease once a retry period, a standby takes
// an expired or free lease. A driver calls it when NextTick is due.
func (c *Cluster) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tickLocked()
}

// NextTick is when the cluster's next timer is due (see Tick): the leader's next renewal (or,
// cut off from the API server, the end of its lease), a standby's next try for the lease, the
// next periodic checkpoint's completion; the zero time when no process runs.
func (c *Cluster) NextTick() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var standby *JobManager
	led := false
	for _, p := range c.procs {
		switch {
		case !p.alive:
		case p.leader:
			led = led || p.ha()
			if p.ha() && p.partitioned {
				consider(p.lastRenew.Add(p.leaseDuration()))
			} else if p.ha() {
				consider(p.lastRenew.Add(p.renewPeriod()))
			}
			for _, j := range p.jobs {
				if due := p.nextCheckpointLocked(j); due > 0 {
					consider(time.UnixMilli(due))
				}
			}
		case p.ha() && !p.partitioned && standby == nil:
			standby = p
		}
	}
	if !led && standby != nil {
		consider(c.lastElection.Add(standby.renewPeriod()))
	}
	return next
}

// SetProgram changes what main() does from now on (processes already running keep their
// submitted jobs).
func (c *Cluster) SetProgram(p Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.program = p
}

// ReleaseMain lets every main() blocked before execute() go on (see Program.BlockBeforeExecute).
func (c *Cluster) ReleaseMain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.program.BlockBeforeExecute = false
	for _, p := range c.procs {
		if p.alive && p.leader && p.mainBlocked {
			p.mainBlocked = false
			p.runMainLocked()
		}
	}
}

// Processes returns every process started, oldest first, dead ones included.
func (c *Cluster) Processes() []*JobManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.procs)
}

// ProcessAt returns the most recent process that publishes address (see Config.Address), or nil.
func (c *Cluster) ProcessAt(address string) *JobManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].Address() == address {
			return c.procs[i]
		}
	}
	return nil
}

// Process returns the most recent process named name, or nil.
func (c *Cluster) Process(name string) *JobManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == name {
			return c.procs[i]
		}
	}
	return nil
}

// Leader returns the process that leads, or nil.
func (c *Cluster) Leader() *JobManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.electLocked()
	return c.leaderLocked()
}

func (c *Cluster) leaderLocked() *JobManager {
	for _, p := range c.procs {
		if p.alive && p.leader {
			return p
		}
	}
	return nil
}

// Executions returns every job execution so far, in start order.
func (c *Cluster) Executions() []Execution {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Execution, len(c.history))
	for i, e := range c.history {
		out[i] = *e
	}
	return out
}

// Violations lists what must never happen to a job and happened: a job run again by main()
// after one of its executions ended globally (rerun), or run by two live processes at once.
func (c *Cluster) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violation)
}

// HasResult reports whether the job result store at the path a process would use holds a
// result for jobID (see JobResultStorePath).
func (c *Cluster) HasResult(storePath, jobID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.jrs[storePath][jobID]
	return ok
}

// LoseHA deletes every HA ConfigMap of the cluster, as a user or a namespace cleanup might:
// the job graphs and checkpoint pointers are gone. The leader's leader election driver sees
// its ConfigMap deleted and treats it as a fatal error
// (KubernetesLeaderElectionDriver.ConfigMapCallbackHandlerImpl.onDeleted, "ConfigMap … has
// been deleted externally", in Flink 1.15 to 2.x): the JobManager process exits
// (ExitHALost), its jobs suspended, not ended. Its container's restart then runs main()
// again. A cluster ConfigMap deleted some other way is found so by the leader's next renewal
// (tickLocked).
func (c *Cluster) LoseHA() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settleCheckpointsLocked()
	if err := c.ha.DeleteAll(context.Background(), c.opts.ClusterID); err != nil {
		return err
	}
	for _, p := range c.procs {
		if p.alive && p.leader && p.ha() && !p.partitioned {
			p.haLostLocked()
		}
	}
	return nil
}

// haLostLocked ends the leader whose cluster ConfigMap was deleted: a fatal error of its
// leader election (the ResourceManager's, first), with which real Flink 2.2.1 exited 239.
func (p *JobManager) haLostLocked() {
	p.dieLocked()
	p.exit = &ExitStatus{Code: ExitHALost,
		Message: "org.apache.flink.runtime.leaderelection.LeaderElectionException: ConfigMap " + flinkha.ClusterConfigMapName(p.clusterID()) + " has been deleted externally."}
}

// LoseJobGraphs deletes the job graphs (execution plans) from the cluster ConfigMap and every
// job's ConfigMap (checkpoint IDs and pointers), leaving the leader election record: what a
// partial cleanup, or an edit of the ConfigMap, does. The leader's driver sees only a
// modification, so the JobManager runs on, while a restart of it would find nothing to
// recover. As in Flink, nothing creates a job's ConfigMap again while the job runs: its
// checkpoints and savepoints, a stop's included, fail from then on.
func (c *Cluster) LoseJobGraphs() error { return c.loseJobGraphs(true) }

// LoseExecutionPlans deletes only the job graphs (execution plans) from the cluster
// ConfigMap: the jobs' ConfigMaps stay, so checkpoints and savepoints go on, while a restart of
// the JobManager would find no job to recover.
func (c *Cluster) LoseExecutionPlans() error { return c.loseJobGraphs(false) }

func (c *Cluster) loseJobGraphs(jobConfigMaps bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settleCheckpointsLocked()
	ctx := context.Background()
	names, err := c.ha.List(ctx, c.opts.ClusterID)
	if err != nil {
		return err
	}
	cluster := flinkha.ClusterConfigMapName(c.opts.ClusterID)
	for _, n := range names {
		if n != cluster {
			if !jobConfigMaps {
				continue
			}
			if err := c.ha.Delete(ctx, n); err != nil {
				return err
			}
			continue
		}
		cm, err := c.ha.Get(ctx, n)
		if err != nil || cm == nil {
			return err
		}
		for _, id := range flinkha.JobGraphs(cm) {
			delete(cm.Data, flinkha.JobGraphKey(id))
			delete(cm.Data, flinkha.ExecutionPlanKey(id))
		}
		if err := c.ha.Put(ctx, cm); err != nil {
			return err
		}
	}
	return nil
}

// MarkResultDirty turns a job's clean result in the job result store at storePath into a
// dirty one, as a JobManager that died after the job ended but before its cleanup leaves it
// (FileSystemJobResultStore writes <job-id>_DIRTY.json first and renames it once the
// cleanup is done). It reports whether there was a result.
func (c *Cluster) MarkResultDirty(storePath, jobID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.jrs[storePath][jobID]
	if ok {
		e.clean = false
		c.jrs[storePath][jobID] = e
	}
	return ok
}

// ResultClean reports whether the job result store at storePath holds a clean result for
// jobID.
func (c *Cluster) ResultClean(storePath, jobID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jrs[storePath][jobID].clean
}

// HAConfigMaps lists the names of the cluster's HA ConfigMaps.
func (c *Cluster) HAConfigMaps() ([]string, error) {
	return c.ha.List(context.Background(), c.opts.ClusterID)
}

// ServiceRequests returns the calls received through URL, as "METHOD /path".
func (c *Cluster) ServiceRequests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.svcReqs)
}

func (c *Cluster) nowMillis() int64 { return c.clock.Now().UnixMilli() }

// deriveID returns a stable 32-hex ID from parts, as Flink derives a fixed job ID from the
// cluster ID in HA Application mode.
func deriveID(parts ...string) string {
	h1, h2 := fnv.New64a(), fnv.New64()
	for _, p := range parts {
		_, _ = h1.Write([]byte(p))
		_, _ = h2.Write([]byte(p))
	}
	return fmt.Sprintf("%016x%016x", h1.Sum64(), h2.Sum64())
}

func (c *Cluster) serveService(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.svcReqs = append(c.svcReqs, r.Method+" "+r.URL.Path)
	c.electLocked()
	target := c.leaderLocked()
	if target == nil {
		for _, p := range c.procs {
			if p.alive {
				target = p
				break
			}
		}
	}
	c.mu.Unlock()
	if target == nil {
		// No endpoint behind the Service: the connection would be refused.
		http.Error(w, `{"errors":["no JobManager"]}`, http.StatusBadGateway)
		return
	}
	target.ServeHTTP(w, r)
}
