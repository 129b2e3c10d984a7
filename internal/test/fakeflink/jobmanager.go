package fakeflink

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// Config is a JobManager process's command line and Flink configuration.
type Config struct {
	// Name names the process (a pod name); default jobmanager-<n>.
	Name string
	// Properties is the Flink configuration (see the Prop… keys the fake reads).
	Properties map[string]string
	// FromSavepoint is --fromSavepoint: where main()'s job starts from (when unset, the
	// configuration's PropSavepointPath). A job recovered from the job graph store ignores
	// it.
	FromSavepoint string
	// AllowNonRestoredState is --allowNonRestoredState, which counts only with FromSavepoint
	// (ignoresUnclaimedState).
	AllowNonRestoredState bool
	// Session starts no application: the process runs only the jobs a test scripts with
	// SetJobs and SetJobState.
	Session bool
	// Address is the REST address the process publishes as leader in the HA ConfigMap, as
	// Flink publishes http://<pod IP>:<rest.port>; default URL(). Tests of the controller set
	// it to the pod's address and reach the process with Cluster.ProcessAt.
	Address string
	// Revision names the spec the process was started from (the pod's revision label): a
	// job graph it stores carries it, so that an execution of another revision's graph shows.
	Revision string
	// Program, when set, is what this process's main() does instead of the cluster's
	// (Options.Program, SetProgram): a container started from another pod template.
	Program *Program
}

// SavepointMode is how a process answers savepoint and stop-with-savepoint operations.
type SavepointMode int

const (
	// SavepointComplete completes an operation on its first status poll.
	SavepointComplete SavepointMode = iota
	// SavepointHold keeps operations IN_PROGRESS until CompleteSavepoints or FailSavepoints.
	SavepointHold
	// SavepointFail completes operations with a failure cause on their first status poll.
	SavepointFail
)

// savepointFailure is the failure cause of SavepointFail.
const savepointFailure = "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending."

type checkpoint struct {
	id        int64
	savepoint bool
	// sync: a stop-with-savepoint's savepoint (SYNC_SAVEPOINT in the statistics).
	sync    bool
	path    string
	trigger int64
	ack     int64
}

type job struct {
	id, name, state string
	appID           string
	start, end      int64
	lastModified    int64
	exceptions      []flinkclient.Exception
	restoredFrom    string
	completed       *checkpoint
	// cpNext is when the next periodic checkpoint triggers (Unix ms), 0 while none is
	// scheduled (checkpointing.go); cpCompleted and cpHistory are the execution's checkpoint
	// statistics: the checkpoints and savepoints completed, the latest first.
	cpNext      int64
	cpCompleted int64
	cpFailed    int64
	cpHistory   []*checkpoint
	// restoredID is the checkpoint ID of what the execution restored (restoredFrom).
	restoredID int64
	// lastCheckpointID is the highest checkpoint ID used, restored ones included.
	lastCheckpointID int64
	savepoint        *checkpoint
	exec             *Execution
	// runningAt is when a starting job (Options.JobStartup) is RUNNING, in Unix ms; 0 once
	// it is.
	runningAt int64
	// archivedAt is when the job ended globally on this process and the Dispatcher put it in
	// its job store, in Unix ms; 0 while it runs, and for jobs a test scripted (SetJobs).
	archivedAt int64
}

type application struct {
	id, name, state string
	start, end      int64
	timestamps      map[string]int64
	jobIDs          []string
	exceptions      []flinkclient.Exception
}

type operation struct {
	jobID, triggerID string
	// stop is a stop-with-savepoint (the job ends FINISHED); cancelJob a savepoint with
	// cancel-job (the job ends CANCELED).
	stop, cancelJob bool
	// keepRunning: a stop whose job fails while stopping and is restarted
	// (CompleteStopsThenRestart); its savepoint is still a stop's (SYNC_SAVEPOINT).
	keepRunning bool
	target      string
	done        bool
	location    string
	failure     string
	completedAt time.Time
}

// JobManager is one JobManager process of a Cluster, with its own REST address. Its methods
// are safe for concurrent use.
type JobManager struct {
	c      *Cluster
	cfg    Config
	name   string
	lockID string
	srv    *httptest.Server
	mux    http.Handler
	owns   bool

	alive, leader, partitioned bool
	lastRenew                  time.Time
	unavailable                bool
	// shutdownHangs: DELETE /cluster is accepted, the REST API closes, and the process never
	// exits (SetShutdownHangs).
	shutdownHangs   bool
	hold            chan struct{}
	jobs            []*job
	app             *application
	appsOverride    []flinkclient.Application
	appsScripted    bool
	appExceptions   map[string][]flinkclient.Exception
	ops             map[string]*operation
	savepointMode   SavepointMode
	cancelHold      bool
	requests        []string
	mainBlocked     bool
	pendingRecovery []string
	// nextExec carries what startStoredLocked learnt to the execution startLocked makes.
	nextExec *Execution
	// exit is how the process ended (see ExitStatus); nil while it runs.
	exit *ExitStatus
}

// ExitStatus is how a JobManager process ended: what its container's terminated state shows.
type ExitStatus struct {
	// Code is the process's exit code: 0 for an application that ended FINISHED or CANCELED,
	// 1443 for one that FAILED (Flink's ApplicationStatus codes), 2 for a fatal error (main()
	// threw before Flink 2.3), 1 for an entrypoint that could not start, 143 after SIGTERM,
	// 137 after SIGKILL.
	Code int32
	// Message is the termination message: the cause the entrypoint logged last, or "".
	Message string
}

// MainMethodError begins the termination message of a JobManager whose main() threw before
// Flink 2.3 (ProgramInvocationException's message).
const MainMethodError = "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: "

// Exit codes of a JobManager process.
const (
	ExitSucceeded      int32 = 0
	ExitStartupFailure int32 = 1
	// ExitRuntimeFailure is ClusterEntrypoint.RUNTIME_FAILURE_RETURN_CODE: the entrypoint's
	// fatal error handler ended the process (a main() that threw before Flink 2.3, a leader
	// election error, among others).
	ExitRuntimeFailure int32 = 2
	// ExitHALost is how real Flink 2.2.1 exited when its cluster ConfigMap was deleted under
	// it (the differential test): the leader election's fatal error ends the process with
	// FatalExitExceptionHandler's -17.
	ExitHALost     int32 = 239
	ExitKilled     int32 = 137
	ExitTerminated int32 = 143
	ExitFailed     int32 = 1443
)

// New starts a single JobManager process without HA and without an application (Config.Session),
// on a cluster of its own: the jobs are whatever the test scripts. Close it when done.
func New() *JobManager {
	c := NewCluster(Options{})
	p := c.Start(Config{Session: true})
	p.owns = true
	return p
}

// Start starts a JobManager process. With Kubernetes HA it joins the leader election and,
// once it leads, recovers the stored job graphs or runs main(); without HA it leads alone.
func (c *Cluster) Start(cfg Config) *JobManager {
	c.mu.Lock()
	c.seq++
	p := &JobManager{
		c: c, cfg: cfg, name: cfg.Name, lockID: deriveID(c.opts.ClusterID, "lock", strconv.Itoa(c.seq)),
		alive: true, ops: map[string]*operation{}, appExceptions: map[string][]flinkclient.Exception{},
	}
	if p.name == "" {
		p.name = fmt.Sprintf("jobmanager-%d", c.seq)
	}
	c.mu.Unlock()

	// The server exists before the process joins the cluster: the Service and elections,
	// run from other goroutines, read its address.
	p.mux = p.routes()
	if !c.opts.InProcess {
		p.srv = httptest.NewServer(p)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
	switch {
	case p.ha() && c.opts.ElectInBackground:
		go func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.tickLocked()
		}()
	case p.ha():
		c.tickLocked()
	default:
		p.grantLocked(nil)
	}
	return p
}

// --- configuration ------------------------------------------------------------------------

func (p *JobManager) prop(k string) string { return p.cfg.Properties[k] }

func (p *JobManager) ha() bool {
	t := p.prop(PropHAType)
	if t == "" {
		t = p.prop("high-availability")
	}
	return strings.EqualFold(t, "kubernetes") || strings.HasSuffix(t, "KubernetesHaServicesFactory")
}

// PropRESTAddress is rest.address: the address the REST server advertises.
const PropRESTAddress = "rest.address"

// restAddress is the REST server address the leader publishes (RestServerEndpoint's
// advertised address): http://<rest.address>:8081 when rest.address is set (a Service name,
// a host name), else the process's Address. The dispatcher's RPC address stays the
// process's own host (jobmanager.rpc.address, which the JobManager's -D argument sets).
func (p *JobManager) restAddress() string {
	if a := p.prop(PropRESTAddress); a != "" {
		return "http://" + a + ":8081"
	}
	return p.Address()
}

// clusterID is kubernetes.cluster-id: the cluster's (Options.ClusterID). A JobManager with
// another cluster ID belongs to another Cluster, which may share the HAStore.
func (p *JobManager) clusterID() string { return p.c.opts.ClusterID }

// jobID is the job ID main() submits under: $internal.pipeline.job-id, else, with HA, one
// derived from the cluster ID (Flink fixes it so that a restarted JobManager finds the job
// again), else a random one.
func (p *JobManager) jobID() string {
	if id := p.prop(PropJobID); id != "" {
		return id
	}
	if p.ha() {
		return deriveID(p.clusterID(), "job")
	}
	return flinkclient.NewID()
}

// JobResultStorePath is where a process keeps job results: job-result-store.storage-path,
// else Flink's default <high-availability.storageDir>/job-result-store/<cluster-id>.
func (p *JobManager) JobResultStorePath() string {
	if v := p.prop(PropJRSStoragePath); v != "" {
		return v
	}
	dir := p.prop(PropHAStorageDir)
	if dir == "" {
		dir = defaultHAStorageDir
	}
	return strings.TrimSuffix(dir, "/") + "/job-result-store/" + p.clusterID()
}

func (p *JobManager) deleteOnCommit() bool {
	return !strings.EqualFold(p.prop(PropJRSDeleteOnCommit), "false")
}

func (p *JobManager) submitFailedJob() bool {
	return strings.EqualFold(p.prop(PropSubmitFailedJob), "true")
}

func (p *JobManager) storeDuration() time.Duration {
	return durationProp(p.prop(PropAsyncStoreDuration), defaultAsyncStoreDuration)
}

// jobStoreExpiration is jobstore.expiration-time: a number of seconds (the option is a Long
// of seconds), or a duration with its unit.
func (p *JobManager) jobStoreExpiration() time.Duration {
	v := strings.TrimSpace(p.prop(PropJobStoreExpiration))
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(n) * time.Second
	}
	return durationProp(v, defaultJobStoreExpiration)
}

func (p *JobManager) leaseDuration() time.Duration {
	return durationProp(p.prop(PropLeaseDuration), defaultLeaseDuration)
}

// PropRetryPeriod is high-availability.kubernetes.leader-election.retry-period: how often
// Flink's leader elector (fabric8's LeaderElector loop) renews the lease, or tries to acquire
// it.
const PropRetryPeriod = "high-availability.kubernetes.leader-election.retry-period"

// renewPeriod is how often the leader renews its lease and a standby tries for it: the
// retry period, by default a third of the lease, as Flink's defaults have it (5 s of a 15 s
// lease-duration).
func (p *JobManager) renewPeriod() time.Duration {
	return durationProp(p.prop(PropRetryPeriod), p.leaseDuration()/3)
}

func (p *JobManager) dirProp(k, def string) string {
	if v := p.prop(k); v != "" {
		return strings.TrimSuffix(v, "/")
	}
	return def
}

// Flink 2's keys of the checkpoint and savepoint directories; Flink still reads the older
// state.checkpoints.dir and state.savepoints.dir (PropCheckpointDir, PropSavepointDir) when
// they are not set.
const (
	PropCheckpointsDir = "execution.checkpointing.dir"
	PropSavepointsDir  = "execution.checkpointing.savepoint-dir"
)

// checkpointDir is where the job's checkpoints go, qualified as Flink reports it.
func (p *JobManager) checkpointDir() string {
	if v := p.prop(PropCheckpointsDir); v != "" {
		return QualifyPath(v)
	}
	return QualifyPath(p.dirProp(PropCheckpointDir, defaultCheckpointDir))
}

// savepointDir is where a savepoint without a target directory goes, qualified.
func (p *JobManager) savepointDir() string {
	if v := p.prop(PropSavepointsDir); v != "" {
		return QualifyPath(v)
	}
	return QualifyPath(p.dirProp(PropSavepointDir, defaultSavepointDir))
}

// QualifyPath spells a checkpoint or savepoint location as Flink reports it: a local path
// made a URI of the local file system with one slash after the scheme (Path.makeQualified
// gives file:/x, whether the configuration said /x, file:/x or file:///x), no trailing
// slash; other schemes as given.
func QualifyPath(path string) string {
	path = strings.TrimSuffix(path, "/")
	switch {
	case strings.HasPrefix(path, "file:///"):
		return "file:/" + strings.TrimLeft(strings.TrimPrefix(path, "file://"), "/")
	case strings.HasPrefix(path, "/"):
		return "file:/" + strings.TrimLeft(path, "/")
	}
	return path
}

// durationProp reads a Flink duration ("5 min", "300 s", "300000 ms", "5min", or Go's "5m").
func durationProp(v string, def time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n) * time.Millisecond
		}
		return def
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return def
	}
	units := map[string]time.Duration{
		"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
		"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
		"min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	if u, ok := units[strings.ToLower(strings.TrimSpace(v[i:]))]; ok {
		return time.Duration(n) * u
	}
	return def
}

// --- leadership ---------------------------------------------------------------------------

// settleJobsLocked moves starting jobs on with the clock (Options.JobStartup): INITIALIZING,
// then CREATED from half-way, then RUNNING.
func (c *Cluster) settleJobsLocked() {
	if c.opts.JobStartup <= 0 {
		return
	}
	now := c.clock.Now().UnixMilli()
	half := c.opts.JobStartup.Milliseconds() / 2
	for _, p := range c.procs {
		for _, j := range p.jobs {
			if j.runningAt == 0 || flinkclient.IsTerminalJobState(j.state) {
				continue
			}
			next := j.state
			switch {
			case now >= j.runningAt:
				next, j.runningAt = flinkclient.JobStateRunning, 0
			case now >= j.runningAt-half:
				next = flinkclient.JobStateCreated
			}
			if next != j.state {
				j.state, j.lastModified = next, now
			}
		}
	}
}

// electLocked brings the cluster up to date with the clock where something looks at it (a
// REST answer, a test's control): all of it (tickLocked), or in a driven cluster
// (Options.Driven) only what needs no API server, the timers being its driver's.
func (c *Cluster) electLocked() {
	c.settleJobsLocked()
	if c.opts.Driven {
		return
	}
	c.tickLocked()
}

// tickLocked runs the timers due by the clock: periodic checkpoints, then the leader
// election: the holder renews its lease, a free or expired lease goes to the oldest live
// candidate (which then recovers), and a process that no longer holds the lease stops leading.
func (c *Cluster) tickLocked() {
	c.settleJobsLocked()
	c.settleCheckpointsLocked()
	now := c.clock.Now()
	for _, p := range c.procs {
		if p.alive && p.leader && p.ha() && p.partitioned && !now.Before(p.lastRenew.Add(p.leaseDuration())) {
			// A JobManager cut off from the API server gives up once it cannot renew.
			p.revokeLocked()
		}
	}
	for _, p := range c.procs {
		if p.alive && p.leader && p.ha() && !p.partitioned && now.Before(p.lastRenew.Add(p.renewPeriod())) {
			// Flink's leader elector reads and renews the lease once a retry period, not on
			// every call: until then the leader leads without asking the API server.
			return
		}
	}
	var candidates []*JobManager
	for _, p := range c.procs {
		if p.alive && p.ha() && !p.partitioned {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return
	}
	c.lastElection = now
	ctx := context.Background()
	name := flinkha.ClusterConfigMapName(c.opts.ClusterID)
	cm, err := c.ha.Get(ctx, name)
	if err != nil {
		return // the API server is unreachable: nobody can change the lease
	}
	if cm == nil {
		for _, p := range c.procs {
			if p.alive && p.leader && p.ha() && !p.partitioned {
				// Its ConfigMap was deleted under the leader: Flink's informer reports it, a
				// fatal error, while the elector's loop writes its lock again (the ConfigMap
				// is back, with the lock and no leader address).
				lock := c.haConfigMap(name)
				lock.Annotations = map[string]string{flinkha.LeaderAnnotation: flinkha.FormatElection(flinkha.Election{
					Holder: p.lockID, LeaseDuration: p.leaseDuration(), AcquireTime: now, RenewTime: now})}
				_ = c.ha.Put(ctx, lock)
				p.haLostLocked()
				return
			}
		}
	}
	var rec flinkha.Election
	held := false
	if cm != nil {
		if r, err := flinkha.ParseElection(cm.Annotations[flinkha.LeaderAnnotation]); err == nil && r.Holder != "" {
			rec = r
			held = now.Before(r.RenewTime.Add(r.LeaseDuration))
		}
	}
	var holder *JobManager
	for _, p := range c.procs {
		if p.alive && p.lockID == rec.Holder {
			holder = p
		}
	}
	if held && (holder == nil || holder.partitioned) {
		// A dead or cut-off holder keeps the lease until it expires.
		c.revokeOthersLocked(holder)
		return
	}
	if !held {
		holder = nil
		for _, p := range candidates {
			if p.leader {
				holder = p
			}
		}
		if holder == nil {
			holder = candidates[0]
		}
	}
	if cm == nil {
		cm = c.haConfigMap(name)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	restKey := flinkha.LeaderKey(flinkha.ComponentRestServer)
	if !held || rec.Holder != holder.lockID || now.Sub(rec.RenewTime) >= holder.renewPeriod() || cm.Data[restKey] == "" {
		e := flinkha.Election{Holder: holder.lockID, LeaseDuration: holder.leaseDuration(), AcquireTime: rec.AcquireTime, RenewTime: now, LeaderTransitions: rec.LeaderTransitions}
		if rec.Holder != holder.lockID {
			e.AcquireTime = now
			if rec.Holder != "" {
				e.LeaderTransitions++
			}
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[flinkha.LeaderAnnotation] = flinkha.FormatElection(e)
		session := deriveID(holder.lockID, "session")
		cm.Data[restKey] = flinkha.FormatLeaderInformation(session, holder.restAddress())
		cm.Data[flinkha.LeaderKey(flinkha.ComponentDispatcher)] = flinkha.FormatLeaderInformation(session, "pekko.tcp://flink@"+holder.rpcHost()+"/user/rpc/dispatcher_1")
		cm.Data[flinkha.LeaderKey(flinkha.ComponentResourceManager)] = flinkha.FormatLeaderInformation(session, "pekko.tcp://flink@"+holder.rpcHost()+"/user/rpc/resourcemanager_0")
		if err := c.ha.Put(ctx, cm); err != nil {
			return
		}
		holder.lastRenew = now
	}
	c.revokeOthersLocked(holder)
	if !holder.leader {
		holder.grantLocked(cm)
	}
}

func (c *Cluster) revokeOthersLocked(holder *JobManager) {
	for _, p := range c.procs {
		if p != holder && p.alive && p.leader && p.ha() && !p.partitioned {
			p.revokeLocked()
		}
	}
}

// grantLocked makes the process the leader: it recovers the job graphs stored in the cluster
// ConfigMap, or runs main().
func (p *JobManager) grantLocked(cm *corev1.ConfigMap) {
	p.leader = true
	p.lastRenew = p.c.clock.Now()
	if p.cfg.Session {
		return
	}
	now := p.c.nowMillis()
	if p.c.opts.Version.hasApplications() {
		p.app = &application{
			id: deriveID(p.clusterID(), "application"), name: p.programName(), state: flinkclient.ApplicationStateRunning,
			start: now, end: -1, timestamps: map[string]int64{flinkclient.ApplicationStateCreated: now, flinkclient.ApplicationStateRunning: now},
		}
	}
	graphs := flinkha.JobGraphs(cm)
	if len(graphs) > 0 {
		if p.c.opts.Version.hasApplications() && p.program().BlockBeforeExecute {
			// FLIP-560: the recovered job waits for main() to reach execute().
			p.mainBlocked, p.pendingRecovery = true, graphs
			return
		}
		p.recoverLocked(cm, graphs)
		return
	}
	p.runMainLocked()
}

// graphKey is the cluster ConfigMap's key of a stored job: Flink 2.0 renamed the job graph
// store the execution plan store, and its keys with it.
func (p *JobManager) graphKey(jobID string) string {
	if p.c.opts.Version == Version1_20 {
		return flinkha.JobGraphKey(jobID)
	}
	return flinkha.ExecutionPlanKey(jobID)
}

func (p *JobManager) programName() string {
	if n := p.program().JobName; n != "" {
		return n
	}
	return "job"
}

// storedGraph is a submittedJobGraph file: what the fake needs of a JobGraph.
type storedGraph struct {
	Name      string `json:"name"`
	Savepoint string `json:"savepoint,omitempty"`
	// Revision is the submitting process's Config.Revision.
	Revision string `json:"revision,omitempty"`
}

// recoverLocked restarts stored jobs from their latest checkpoint (the job's ConfigMap), else
// from the savepoint their graph was submitted with: never from this process's command line.
func (p *JobManager) recoverLocked(cm *corev1.ConfigMap, graphs []string) {
	for _, id := range graphs {
		g, _ := p.readGraphLocked(cm, id)
		p.startStoredLocked(id, g, true)
	}
}

// startStoredLocked starts a job as Flink's JobMaster does (DefaultExecutionGraphFactory):
// from the checkpoint store of its job ID when that holds a checkpoint, else from the
// graph's savepoint restore settings; checkpoint IDs continue from the store's counter.
func (p *JobManager) startStoredLocked(id string, g storedGraph, recovered bool) *job {
	from, fromStore := g.Savepoint, false
	var lastID, restoredID int64
	if cp, counter, ok := p.latestCheckpointLocked(id); ok {
		from, fromStore, lastID, restoredID = cp.ExternalPath, true, counter-1, cp.ID
	} else {
		lastID = max(counter-1, 0)
		if from != "" {
			restoredID = p.c.checkpointIDLocked(from)
		}
	}
	if p.ha() {
		p.createJobConfigMapLocked(id)
		// The job's JobMaster publishes its address beside the other leaders'.
		p.editClusterCM(func(cm *corev1.ConfigMap) {
			cm.Data[jobLeaderKey(id)] = flinkha.FormatLeaderInformation(deriveID(p.lockID, "session", id), "pekko.tcp://flink@"+p.rpcHost()+"/user/rpc/jobmanager_"+id[:6])
		})
	}
	p.nextExec = &Execution{RestoredCheckpoint: fromStore, Revision: g.Revision}
	j := p.startLocked(id, g.Name, recovered, from)
	j.restoredID = restoredID
	j.lastCheckpointID = max(j.lastCheckpointID, lastID, restoredID)
	if !fromStore && restoredID > 0 {
		// CheckpointCoordinator.restoreSavepoint sets the ID counter past the savepoint's.
		p.advanceCounterLocked(id, restoredID+1)
	}
	return j
}

// runMainLocked runs the application's main(), unless it blocks before execute().
func (p *JobManager) runMainLocked() {
	prog := p.program()
	if prog.BlockBeforeExecute {
		p.mainBlocked = true
		return
	}
	if len(p.pendingRecovery) > 0 {
		graphs := p.pendingRecovery
		p.pendingRecovery = nil
		cm, _ := p.c.ha.Get(context.Background(), flinkha.ClusterConfigMapName(p.clusterID()))
		p.recoverLocked(cm, graphs)
		return
	}
	id := p.jobID()
	if prog.Throw != "" && !prog.ThrowAfterSubmit {
		p.mainFailedLocked(id, prog.Throw, nil)
		return
	}
	if p.ha() {
		if res, ok := p.c.jrs[p.JobResultStorePath()][id]; ok {
			p.resultFoundLocked(id, res)
			return
		}
	}
	from := p.cfg.FromSavepoint
	if from == "" {
		from = p.prop(PropSavepointPath)
	}
	_, _, kept := p.latestCheckpointLocked(id)
	if !kept && missingPath(from) {
		// The savepoint path is read only when the job's checkpoint store holds nothing
		// (a checkpoint in the store wins over the restore path, as the scheduler restores).
		p.restoreFailedLocked(id, from)
		return
	}
	if op, ok := p.c.unclaimed[from]; ok && !kept && !p.ignoresUnclaimedState() {
		p.unclaimedStateLocked(id, from, op)
		return
	}
	g := storedGraph{Name: p.programName(), Savepoint: from, Revision: p.cfg.Revision}
	if p.ha() {
		// The Dispatcher stores the graph before the JobMaster starts it.
		p.storeGraphLocked(id, g)
	}
	j := p.startStoredLocked(id, g, false)
	if prog.Throw != "" {
		p.mainFailedLocked(id, prog.Throw, j)
	}
}

// resultFoundLocked is main() finding its job's ID in the job result store: the job ended
// globally before this process started, so it is not run again.
//
// A clean result (FileSystemJobResultStore's <job-id>.json): the Dispatcher recovers no job
// graph for it, the submission of main() is answered as a duplicate of a globally terminated
// job (DuplicateJobSubmissionException, which ApplicationDispatcherBootstrap takes as done)
// and the REST API lists no job; on Flink 2.3 the application is FINISHED.
//
// A dirty result (<job-id>_DIRTY.json, the cleanup did not finish): the Dispatcher runs the
// cleanup again in a CheckpointResourcesCleanupRunner, which lists the job in the state of
// its result; the cleanup then removes the job's HA data and marks the result clean (or
// deletes it with delete-on-commit).
func (p *JobManager) resultFoundLocked(id string, res jrsEntry) {
	if res.clean {
		if p.app != nil {
			p.setAppStateLocked(flinkclient.ApplicationStateFinished)
		}
		return
	}
	now := p.c.nowMillis()
	j := &job{id: id, name: p.programName(), state: res.state, start: now, end: now, lastModified: now}
	p.jobs = append(p.jobs, j)
	if p.app != nil {
		j.appID = p.app.id
		p.app.jobIDs = append(p.app.jobIDs, id)
	}
	p.recordResultLocked(j)
	p.updateAppLocked()
}

// missingPath reports whether a restore path names nothing: a relative path resolves against
// the JobManager's working directory, where no savepoint is (the controller's
// ResumeFromHAOnly). Absolute paths and URIs are taken to exist, Flink's own file:/x as
// well as file:///x: a scheme (a colon before any slash) makes a path a URI.
func missingPath(path string) bool {
	colon, slash := strings.IndexByte(path, ':'), strings.IndexByte(path, '/')
	return path != "" && slash != 0 && (colon <= 0 || (slash > 0 && slash < colon))
}

// restoreFailedLocked is a job whose restore path does not exist: the Dispatcher accepts it,
// its JobMaster fails to start (JobInitializationException, caused by the
// FileNotFoundException of AbstractFsCheckpointStorageAccess.resolveCheckpointPointer) and
// the job is FAILED without running: no execution starts. Its result goes to the job result
// store like any FAILED job's; on 2.3 the application FAILED with it.
func (p *JobManager) restoreFailedLocked(id, from string) {
	p.initFailedLocked(id, from, "Caused by: java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory '"+from+"' on file system 'file'.\n"+
		"\tat org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(AbstractFsCheckpointStorageAccess.java:272)")
}

// initFailedLocked is a job whose JobMaster failed to start restoring from, for cause (the
// stack trace's "Caused by" part): FAILED without running.
func (p *JobManager) initFailedLocked(id, from, cause string) {
	now := p.c.nowMillis()
	ex := flinkclient.Exception{
		Name: "org.apache.flink.runtime.client.JobInitializationException",
		StackTrace: "org.apache.flink.runtime.client.JobInitializationException: Could not start the JobMaster.\n" +
			"\tat org.apache.flink.runtime.jobmaster.DefaultJobMasterServiceProcess.lambda$new$0(DefaultJobMasterServiceProcess.java:97)\n" +
			cause,
		Timestamp: now,
	}
	j := &job{id: id, name: p.programName(), state: flinkclient.JobStateFailed, start: now, end: now, lastModified: now,
		restoredFrom: from, exceptions: []flinkclient.Exception{ex}}
	p.jobs = append(p.jobs, j)
	if p.app != nil {
		j.appID = p.app.id
		p.app.jobIDs = append(p.app.jobIDs, id)
		p.app.exceptions = append(p.app.exceptions, ex)
	}
	p.recordResultLocked(j)
	p.updateAppLocked()
}

// ignoresUnclaimedState is the execution.savepoint.ignore-unclaimed-state the job's restore
// uses, as Flink's application entrypoint leaves it: with --fromSavepoint on the command
// line, the command line's --allowNonRestoredState; without, before 2.3 false (the entrypoint
// writes SavepointRestoreSettings.none() over the file's value, FLINK-36973), on 2.3 the
// configuration file's.
func (p *JobManager) ignoresUnclaimedState() bool {
	switch {
	case p.cfg.FromSavepoint != "":
		return p.cfg.AllowNonRestoredState
	case p.c.opts.Version == Version2_3:
		return p.prop(PropIgnoreUnclaimed) == "true"
	default:
		return false
	}
}

// unclaimedStateLocked is a job whose savepoint holds state of an operator the program lacks,
// restored without ignoring unclaimed state: its JobMaster fails to start
// (Checkpoints.loadAndValidateCheckpoint throws) and the job is FAILED without running, as
// restoreFailedLocked.
func (p *JobManager) unclaimedStateLocked(id, from, operator string) {
	p.initFailedLocked(id, from, "Caused by: java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint "+from+
		". Cannot map checkpoint/savepoint state for operator "+operator+" to the new program, because the operator is not available in the new program. "+
		"If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.\n"+
		"\tat org.apache.flink.runtime.checkpoint.Checkpoints.throwNonRestoredStateException(Checkpoints.java:233)")
}

// mainFailedLocked is a main() that threw: the submitted job (if any) is cancelled; on 2.3 the
// application FAILED; with submit-failed-job-on-application-error a FAILED "(application
// driver)" job carries the exception; otherwise, before 2.3, the JobManager exits.
func (p *JobManager) mainFailedLocked(jobID, throw string, submitted *job) {
	now := p.c.nowMillis()
	name, _, _ := strings.Cut(throw, ":")
	ex := flinkclient.Exception{Name: strings.TrimSpace(name), StackTrace: throw + "\n\tat org.example.Job.main(Job.java:42)", Timestamp: now}
	if submitted != nil && !flinkclient.IsTerminalJobState(submitted.state) {
		p.terminateLocked(submitted, flinkclient.JobStateCanceled)
	}
	if p.app != nil {
		p.app.exceptions = append(p.app.exceptions, ex)
		p.setAppStateLocked(flinkclient.ApplicationStateFailed)
	}
	if p.submitFailedJob() && submitted == nil {
		d := &job{id: jobID, name: applicationDriverJobName, state: flinkclient.JobStateFailed, start: now, end: now, lastModified: now,
			exceptions: []flinkclient.Exception{ex}}
		p.jobs = append(p.jobs, d)
		if p.app != nil {
			p.app.jobIDs = append(p.app.jobIDs, jobID)
		}
		p.recordResultLocked(d)
		return
	}
	if p.app == nil && !p.submitFailedJob() {
		// The application's failure is fatal: the entrypoint's fatal error handler ends the
		// process with RUNTIME_FAILURE_RETURN_CODE (real Flink 2.2.1 exits 2), after the
		// leader election service stopped and removed the leaders' addresses from the
		// cluster ConfigMap (its lock annotation stays). The termination message is the
		// cause (terminationMessagePolicy FallbackToLogsOnError shows the log's last lines).
		p.clearLeaderInformationLocked()
		p.dieLocked()
		p.exit = &ExitStatus{Code: ExitRuntimeFailure, Message: MainMethodError + throw}
	}
}

// startLocked starts an execution of a job on this process.
func (p *JobManager) startLocked(id, name string, recovered bool, from string) *job {
	c := p.c
	for _, e := range c.history {
		if e.JobID != id {
			continue
		}
		if !recovered && flinkclient.IsTerminalJobState(e.State) {
			c.violation = append(c.violation, fmt.Sprintf("job %s rerun by %s after it ended %s", id, p.name, e.State))
		}
		if e.End.IsZero() && e.Process != p.name {
			c.violation = append(c.violation, fmt.Sprintf("job %s run by %s while %s runs it", id, p.name, e.Process))
		}
	}
	now := c.clock.Now()
	state := p.program().InitialState
	var runningAt int64
	switch {
	case state != "":
	case c.opts.JobStartup > 0:
		state, runningAt = flinkclient.JobStateInitializing, now.Add(c.opts.JobStartup).UnixMilli()
	default:
		state = flinkclient.JobStateRunning
	}
	e := &Execution{Process: p.name, JobID: id, Recovered: recovered, RestoredFrom: from, Start: now,
		Revision: p.cfg.Revision, ProcessRevision: p.cfg.Revision}
	if n := p.nextExec; n != nil {
		e.RestoredCheckpoint, e.Revision = n.RestoredCheckpoint, n.Revision
		p.nextExec = nil
	}
	c.history = append(c.history, e)
	if o := c.opts.Observer; o != nil {
		o.ExecutionStarted(p, *e)
	}
	j := &job{id: id, name: name, state: state, start: now.UnixMilli(), end: -1, lastModified: now.UnixMilli(), restoredFrom: from, exec: e,
		runningAt: runningAt}
	p.jobs = append(p.jobs, j)
	if p.app != nil {
		j.appID = p.app.id
		p.app.jobIDs = append(p.app.jobIDs, id)
	}
	if flinkclient.IsTerminalJobState(state) {
		p.terminateLocked(j, state)
	}
	return j
}

// terminateLocked ends a job globally: its result goes to the job result store, its HA data
// is cleaned up, and with delete-on-commit the result is deleted again.
func (p *JobManager) terminateLocked(j *job, state string) {
	p.settleCheckpointsLocked()
	now := p.c.clock.Now()
	j.state, j.end, j.lastModified, j.archivedAt = state, now.UnixMilli(), now.UnixMilli(), now.UnixMilli()
	if j.exec != nil && j.exec.End.IsZero() {
		j.exec.End, j.exec.State = now, state
		if o := p.c.opts.Observer; o != nil {
			o.ExecutionEnded(p, *j.exec)
		}
	}
	p.recordResultLocked(j)
	p.updateAppLocked()
}

func (p *JobManager) recordResultLocked(j *job) {
	if !p.ha() {
		return
	}
	path := p.JobResultStorePath()
	if p.c.jrs[path] == nil {
		p.c.jrs[path] = map[string]jrsEntry{}
	}
	p.c.jrs[path][j.id] = jrsEntry{state: j.state}
	p.editClusterCM(func(cm *corev1.ConfigMap) {
		delete(cm.Data, p.graphKey(j.id))
		delete(cm.Data, jobLeaderKey(j.id))
	})
	_ = p.c.ha.Delete(context.Background(), flinkha.JobConfigMapName(p.clusterID(), j.id))
	if p.deleteOnCommit() {
		delete(p.c.jrs[path], j.id)
	} else {
		p.c.jrs[path][j.id] = jrsEntry{state: j.state, clean: true}
	}
}

// jobLeaderKey is the cluster ConfigMap's key of a job's JobMaster leader information
// (org.apache.flink.k8s.leader.job-<job ID>), there while the job runs on the leader.
func jobLeaderKey(jobID string) string { return flinkha.LeaderKey("job-" + jobID) }

// clearLeaderInformationLocked removes the leaders' addresses from the cluster ConfigMap, as
// the leader election service does when a JobManager shuts down (the lock annotation stays
// until its lease runs out or a standby takes it).
func (p *JobManager) clearLeaderInformationLocked() {
	if !p.ha() || !p.leader {
		return
	}
	ctx := context.Background()
	cm, err := p.c.ha.Get(ctx, flinkha.ClusterConfigMapName(p.clusterID()))
	if err != nil || cm == nil {
		return
	}
	changed := false
	for k := range cm.Data {
		if strings.HasPrefix(k, flinkha.LeaderKeyPrefix) {
			delete(cm.Data, k)
			changed = true
		}
	}
	if changed {
		_ = p.c.ha.Put(ctx, cm)
	}
}

func (p *JobManager) editClusterCM(edit func(cm *corev1.ConfigMap)) {
	ctx := context.Background()
	name := flinkha.ClusterConfigMapName(p.clusterID())
	cm, err := p.c.ha.Get(ctx, name)
	if err != nil {
		return
	}
	if cm == nil {
		cm = p.c.haConfigMap(name)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	edit(cm)
	_ = p.c.ha.Put(ctx, cm)
}

// updateAppLocked derives a 2.3 application's state from its jobs once they all ended.
func (p *JobManager) updateAppLocked() {
	a := p.app
	if a == nil || flinkclient.IsTerminalApplicationState(a.state) || len(a.jobIDs) == 0 {
		return
	}
	state := flinkclient.ApplicationStateFinished
	for _, id := range a.jobIDs {
		j := p.findJob(id)
		if j == nil || !flinkclient.IsTerminalJobState(j.state) {
			return
		}
		switch j.state {
		case flinkclient.JobStateFailed:
			state = flinkclient.ApplicationStateFailed
		case flinkclient.JobStateCanceled:
			if state == flinkclient.ApplicationStateFinished {
				state = flinkclient.ApplicationStateCanceled
			}
		}
	}
	p.setAppStateLocked(state)
}

func (p *JobManager) setAppStateLocked(state string) {
	now := p.c.nowMillis()
	p.app.state = state
	p.app.timestamps[state] = now
	if flinkclient.IsTerminalApplicationState(state) {
		p.app.end = now
	}
}

// revokeLocked ends this process's leadership: its jobs are suspended and forgotten, as are
// its savepoint operations.
func (p *JobManager) revokeLocked() {
	// The checkpoints that completed while it led are in the store.
	p.settleCheckpointsLocked()
	p.leader = false
	p.suspendLocked()
}

func (p *JobManager) suspendLocked() {
	now := p.c.clock.Now()
	for _, j := range p.jobs {
		if j.exec != nil && j.exec.End.IsZero() {
			j.exec.End, j.exec.State = now, flinkclient.JobStateSuspended
		}
	}
	p.jobs, p.app, p.ops, p.mainBlocked, p.pendingRecovery = nil, nil, map[string]*operation{}, false, nil
}

// dieLocked ends the process without any cleanup; the caller closes the server unlocked.
func (p *JobManager) dieLocked() {
	p.settleCheckpointsLocked()
	p.alive, p.leader = false, false
	p.suspendLocked()
	// New connections are refused; open ones are dropped by ServeHTTP.
	if p.srv != nil {
		_ = p.srv.Listener.Close()
	}
	if p.hold != nil {
		close(p.hold)
		p.hold = nil
	}
}

// expireJobsLocked forgets the jobs that ended globally jobstore.expiration-time ago or
// longer, as a session cluster's Dispatcher does: ClusterEntrypoint builds its job store
// (FileExecutionGraphInfoStore, or MemoryExecutionGraphInfoStore with jobstore.type Memory)
// to expire an entry that long after it was written, at the job's end, and the REST API then
// lists the job no more. An application cluster's never expire: ApplicationClusterEntryPoint
// overrides the store with a MemoryExecutionGraphInfoStore built without expiry or capacity
// (Flink 2.3: a MemoryArchivedApplicationStore, likewise), so with
// execution.shutdown-on-application-finish false its ended job stays listed for as long as
// the JobManager runs.
func (p *JobManager) expireJobsLocked() {
	if !p.cfg.Session {
		return
	}
	ttl, now := p.jobStoreExpiration().Milliseconds(), p.c.nowMillis()
	p.jobs = slices.DeleteFunc(p.jobs, func(j *job) bool { return j.archivedAt > 0 && now-j.archivedAt >= ttl })
}

func (p *JobManager) findJob(id string) *job {
	for _, j := range p.jobs {
		if j.id == id {
			return j
		}
	}
	return nil
}
