package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkpoll"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// flinkCallTimeout bounds the REST calls of one reconcile.
const flinkCallTimeout = 10 * time.Second

// observed is what one reconcile saw.
type observed struct {
	// jmJob or jmDeployment is the JobManager workload, by deployment type; nil when missing.
	jmJob        *batchv1.Job
	jmDeployment *appsv1.Deployment
	wl           *state.Workload
	// pods are every JobManager pod of the cluster, terminating ones and old revisions'
	// included, read from the API server.
	pods []corev1.Pod
	// pod is the JobManager pod the workload runs now.
	pod *corev1.Pod
	// flink is the REST API's answer when the API was reachable and trusted.
	flink *state.Flink
	// untrusted says why the REST API was not asked or not believed; "" when it was.
	untrusted string
	// notLeader is set when the selected pod is ready but another JobManager leads.
	notLeader bool
	// watched is set when what kept the REST API from being asked is an object the
	// controller watches (the JobManager workload and its pods): its change wakes the next
	// reconcile.
	watched bool
	// flinkTarget names the JobManager pod and the job the REST API was asked about, and
	// flinkRead asks again (the poller's read, trackFlink); nil when it was not asked.
	flinkTarget string
	flinkRead   flinkpoll.Read[*state.Flink]
	// ha is what the cluster's HA ConfigMaps say.
	ha haView
	// submitted is the job ID of the current deploy when its main() submitted the job before
	// the controller saw it run (observeSubmitted); "" otherwise.
	submitted string

	tmExists, serviceExists, configMapExists bool
	tmReplicas, tmReady                      int32
	// ingress is the cluster's JobManager Ingress (extras.go); nil when it has none.
	ingress *networkingv1.Ingress
}

func (c *cycle) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: c.fc.Namespace, Name: name}
}

// getOwned reads an object the cluster owns; found is false when it is missing or belongs to
// someone else (a same-named object the controller must neither adopt nor delete).
func (c *cycle) getOwned(ctx context.Context, name string, obj client.Object) (bool, error) {
	if err := c.r.Client.Get(ctx, c.key(name), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return metav1.IsControlledBy(obj, c.fc), nil
}

func (c *cycle) observe(ctx context.Context) error {
	name := resources.JobManagerName(c.fc.Name)
	switch c.mode {
	case v1beta1.JobManagerDeploymentTypeDeployment:
		d := &appsv1.Deployment{}
		found, err := c.getOwned(ctx, name, d)
		if err != nil {
			return fmt.Errorf("reading the JobManager Deployment: %w", err)
		}
		if found {
			c.obs.jmDeployment = d
			c.obs.wl = &state.Workload{
				Revision:      d.Labels[resources.LabelRevision],
				JobID:         d.Labels[resources.LabelJobID],
				Deleting:      d.DeletionTimestamp != nil,
				CreateFailure: state.DeploymentFailure(d),
			}
		}
	default:
		j := &batchv1.Job{}
		found, err := c.getOwned(ctx, name, j)
		if err != nil {
			return fmt.Errorf("reading the JobManager Job: %w", err)
		}
		if found {
			c.obs.jmJob = j
			c.obs.wl = &state.Workload{Revision: j.Labels[resources.LabelRevision], JobID: j.Labels[resources.LabelJobID], Deleting: j.DeletionTimestamp != nil}
			for _, cond := range j.Status.Conditions {
				if cond.Status != corev1.ConditionTrue {
					continue
				}
				// The Job controller decides a Job's end with FailureTarget or
				// SuccessCriteriaMet and writes Failed or Complete only once every pod is
				// terminal. A JobManager pod on a lost node stays Terminating until the node
				// returns, maybe never: the decision is the Job's end, not the last condition.
				switch cond.Type {
				case batchv1.JobFailed, batchv1.JobFailureTarget:
					if !c.obs.wl.Failed {
						c.obs.wl.Failed, c.obs.wl.FailedMessage = true, joinNonEmpty(cond.Reason, cond.Message)
						c.obs.wl.FailedAt = cond.LastTransitionTime.Time
					}
					if j.Status.StartTime != nil {
						c.obs.wl.StartTime = j.Status.StartTime.Time
					}
				case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
					c.obs.wl.Complete = true
				}
			}
		}
	}

	if err := c.observeComponents(ctx); err != nil {
		return err
	}
	if err := c.observePodsAndHA(ctx); err != nil {
		return err
	}
	if err := c.observeSubmitted(ctx); err != nil {
		return err
	}
	c.judgeREST(ctx)
	c.out.observed = true
	return nil
}

// observePodsAndHA reads the JobManager pods and the HA ConfigMaps, from the API server when
// this reconcile is fresh, from the caches otherwise. Every conclusion drawn from a missing job
// graph (never submitted, HA data deleted, ended in Flink) is drawn from a fresh read: a cached
// view without the current job's graph is read again, except during the job's first deploy
// (its graph appears once main() submits it) while nothing says its HA data is gone.
func (c *cycle) observePodsAndHA(ctx context.Context) error {
	pods, err := c.listJobManagerPods(ctx, c.podReader())
	if err != nil {
		return err
	}
	c.obs.pods = pods
	c.obs.pod = c.selectPod()
	if c.obs.ha, err = c.readHA(ctx, c.haReader()); err != nil {
		return err
	}
	if id := c.jobID(); !c.fresh && !c.pristine() && c.kubernetesHA() && id != "" && !c.obs.ha.jobGraphStored(id) {
		if _, gone := c.jobHAGone(); gone || !c.deployInProgress() {
			if c.obs.ha, err = c.readHA(ctx, c.r.Reader); err != nil {
				return err
			}
		}
	}
	if l := c.obs.ha.leader; l.Known && !c.leaderPodListed(l) {
		// With rest.address set, the REST leader address is that address (a Service name,
		// a host name), not the pod's: the dispatcher's RPC address is the pod IP (-Djobmanager.rpc.address).
		l.Address = c.obs.ha.dispatcherHost
		if l.Address == "" || !c.leaderPodListed(l) {
			// Neither names a JobManager pod (a pod already gone): the leader cannot tell pods
			// apart, so pods are counted instead.
			l = state.Leader{Grace: l.Grace}
		}
		c.obs.ha.leader = l
	}
	return nil
}

// deployInProgress reports whether the current deploy's job is Deploying on its live
// workload and was never seen running.
func (c *cycle) deployInProgress() bool {
	job, wl := c.job(), c.obs.wl
	return job.State == v1beta1.JobStateDeploying && !flinkcluster.Ran(job) &&
		wl != nil && !wl.Deleting && wl.JobID == job.ID
}

// judgeREST decides whether the JobManager's REST API is asked and believed, and asks it.
func (c *cycle) judgeREST(ctx context.Context) {
	switch {
	case c.obs.wl == nil || c.obs.wl.Deleting:
		c.obs.untrusted, c.obs.watched = "no JobManager workload", true
	case c.obs.wl.JobID != "" && c.obs.wl.JobID != c.jobID():
		// Another deploy's JobManager (its creation was not recorded, or it is being
		// replaced): what it reports is not this deploy's job.
		c.obs.untrusted = fmt.Sprintf("the JobManager workload runs job %s, not %s", c.obs.wl.JobID, c.jobID())
		c.obs.watched = true
	case !state.Ready(c.obs.pod):
		c.obs.untrusted, c.obs.watched = "no ready JobManager pod", true
	case !state.Trusted(c.obs.pod, c.obs.pods, c.obs.ha.leader, c.now):
		if c.obs.ha.leader.Known {
			c.obs.notLeader = true
			c.obs.untrusted = fmt.Sprintf("JobManager pod %s does not lead the cluster (the HA leader is %s)", c.obs.pod.Name, c.obs.ha.leader.Address)
		} else {
			c.obs.untrusted = "another JobManager pod may still lead the cluster: " + podNames(c.obs.pods)
		}
	default:
		c.observeFlink(ctx)
	}
}

// podReader is where this reconcile reads the JobManager pods: the API server when it is
// fresh, the cache otherwise.
func (c *cycle) podReader() client.Reader {
	if c.fresh {
		return c.r.Reader
	}
	return c.r.Client
}

// haReader is where this reconcile reads the HA ConfigMaps: the API server when it is fresh,
// their cache otherwise.
func (c *cycle) haReader() client.Reader {
	switch {
	case c.fresh:
		return c.r.Reader
	case c.r.HAReader != nil:
		return c.r.HAReader
	}
	return c.r.Client
}

// confirmAbsent reads the JobManager pods and HA ConfigMaps again from the API server before
// an act their absence allows (a new JobManager), when the caches, which may lag, were read.
// It reports whether the API server shows nothing the caches did not; if it does, the
// reconcile looks again at once. The observation stays the one the reconcile decided from.
func (c *cycle) confirmAbsent(ctx context.Context) (bool, error) {
	if c.fresh || c.pristine() {
		return true, nil
	}
	cached := c.obs
	c.fresh = true
	err := c.observePodsAndHA(ctx)
	pods, ha := c.obs.pods, c.obs.ha.configMaps
	c.fresh, c.obs = false, cached
	if err != nil {
		return false, err
	}
	if shownIn(pods, cached.pods) && shownIn(ha, cached.ha.configMaps) {
		return true, nil
	}
	c.out.after(lookAgainNow)
	return false, nil
}

// shownIn reports whether every object of fresh is in cached at the same version.
func shownIn[T any, PT interface {
	*T
	client.Object
}](fresh, cached []T) bool {
	versions := make(map[types.UID]string, len(cached))
	for i := range cached {
		o := PT(&cached[i])
		versions[o.GetUID()] = o.GetResourceVersion()
	}
	for i := range fresh {
		o := PT(&fresh[i])
		if v, ok := versions[o.GetUID()]; !ok || v != o.GetResourceVersion() {
			return false
		}
	}
	return true
}

// leaderPodListed reports whether the leader names one of the JobManager pods.
func (c *cycle) leaderPodListed(l state.Leader) bool {
	return slices.ContainsFunc(c.obs.pods, func(p corev1.Pod) bool { return l.Leads(&p) })
}

// listJobManagerPods lists every JobManager pod of the cluster from from. An error
// is returned, never read as "no pods": the next revision must not start next to an old
// JobManager that could still be the leader.
func (c *cycle) listJobManagerPods(ctx context.Context, from client.Reader) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := from.List(ctx, list, client.InNamespace(c.fc.Namespace),
		client.MatchingLabels(resources.SelectorLabels(c.fc.Name, resources.ComponentJobManager))); err != nil {
		return nil, fmt.Errorf("listing the JobManager pods: %w", err)
	}
	return list.Items, nil
}

// selectPod picks the JobManager pod of the current workload: the Job's first pod, or the
// Deployment's newest pod of its revision that is not being deleted.
func (c *cycle) selectPod() *corev1.Pod {
	var own []corev1.Pod
	switch {
	case c.obs.jmJob != nil:
		for _, p := range c.obs.pods {
			if slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == c.obs.jmJob.UID }) {
				own = append(own, p)
			}
		}
		return state.FirstPod(own)
	case c.obs.jmDeployment != nil:
		for _, p := range c.obs.pods {
			if p.Labels[resources.LabelRevision] == c.obs.wl.Revision {
				own = append(own, p)
			}
		}
		return state.NewestPod(own)
	}
	return nil
}

func (c *cycle) observeComponents(ctx context.Context) error {
	var err error
	tmName := resources.TaskManagerName(c.fc.Name)
	if c.fc.Spec.TaskManager.GetDeploymentType() == v1beta1.TaskManagerDeploymentTypeDeployment {
		d := &appsv1.Deployment{}
		if c.obs.tmExists, err = c.getOwned(ctx, tmName, d); err != nil {
			return fmt.Errorf("reading the TaskManager Deployment: %w", err)
		}
		c.obs.tmReplicas, c.obs.tmReady = d.Status.Replicas, d.Status.ReadyReplicas
	} else {
		s := &appsv1.StatefulSet{}
		if c.obs.tmExists, err = c.getOwned(ctx, tmName, s); err != nil {
			return fmt.Errorf("reading the TaskManager StatefulSet: %w", err)
		}
		c.obs.tmReplicas, c.obs.tmReady = s.Status.Replicas, s.Status.ReadyReplicas
	}
	if c.obs.serviceExists, err = c.getOwned(ctx, resources.JobManagerName(c.fc.Name), &corev1.Service{}); err != nil {
		return fmt.Errorf("reading the JobManager Service: %w", err)
	}
	if c.obs.configMapExists, err = c.getOwned(ctx, resources.ConfigMapName(c.fc.Name), &corev1.ConfigMap{}); err != nil {
		return fmt.Errorf("reading the Flink ConfigMap: %w", err)
	}
	return c.observeIngress(ctx)
}

// observeIngress reads the cluster's Ingress for the status, in the reconciles that do not
// apply the components.
func (c *cycle) observeIngress(ctx context.Context) error {
	c.obs.ingress = nil
	in := &networkingv1.Ingress{}
	if err := c.r.Client.Get(ctx, c.key(resources.IngressName(c.fc.Name)), in); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if metav1.IsControlledBy(in, c.fc) {
		c.obs.ingress = in
	}
	return nil
}

// observeSubmitted notes that the current deploy's main() submitted the job before the
// controller saw it run (Deployment mode): its graph is in the HA ConfigMaps, or the Flink
// ConfigMap already names ResumeFromHAOnly for this deploy. From then on a JobManager that
// starts again must recover the job from HA, never from the deploy's savepoint, which would
// rewind it; the REST API need not answer for that. The ConfigMap is read as ownConfigMap does.
func (c *cycle) observeSubmitted(ctx context.Context) error {
	job := c.job()
	if job.ID == "" || flinkcluster.Ran(job) || c.restorePathAfterRun() != ResumeFromHAOnly || c.pristine() {
		return nil
	}
	if c.kubernetesHA() && c.obs.ha.jobGraphStored(job.ID) {
		c.obs.submitted = job.ID
		return nil
	}
	cm, err := c.ownConfigMap(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading ConfigMap %s: %w", resources.ConfigMapName(c.fc.Name), err)
	}
	if !metav1.IsControlledBy(cm, c.fc) {
		return nil
	}
	conf := resources.Configuration(cm)
	if path, jrs := conf[resources.KeySavepointPath], conf[resources.KeyJRSStoragePath]; path == ResumeFromHAOnly && jrs != "" && jrs == resources.JobResultStorePath(c.fc, job.ID) {
		c.obs.submitted = job.ID
	}
	return nil
}

// flinkClient is the REST client of the cluster's JobManager, made once per reconcile: over
// TLS when the cluster's Flink configuration enables REST SSL (see restTLS).
func (c *cycle) flinkClient(ctx context.Context) (flinkclient.Client, error) {
	if c.client == nil {
		cfg, err := c.r.restTLS(ctx, c.fc)
		if err != nil {
			return nil, err
		}
		var cl flinkclient.Client
		if cfg != nil {
			cl, err = c.r.Options.FlinkTLSClientFor(c.fc, cfg)
		} else {
			cl, err = c.r.Options.FlinkClientFor(c.fc)
		}
		if err != nil {
			return nil, fmt.Errorf("building the Flink REST client: %w", err)
		}
		c.client = cl
	}
	return c.client, nil
}

// isDriverJob reports whether j is the FAILED job Flink lists for a main() that threw
// (execution.submit-failed-job-on-application-error): it stands for the application, not
// for a job that ran.
func isDriverJob(j *flinkclient.Job) bool {
	return j.Name == flinkclient.ApplicationDriverJobName && j.State == flinkclient.JobStateFailed
}

// mentionsResumeFromHAOnly reports whether a job's exceptions name ResumeFromHAOnly: the
// restore of main() rerun without HA data failed on it (the path is in a "Caused by" of the
// stack trace, under JobInitializationException).
func mentionsResumeFromHAOnly(ex []flinkclient.Exception) bool {
	return slices.ContainsFunc(ex, func(e flinkclient.Exception) bool { return strings.Contains(e.StackTrace, ResumeFromHAOnly) })
}

// observeFlink asks the REST API for the job and, on Flink 2.3+, the application, or takes
// the poller's reading of them when one is fresh and nothing is in flight
// (flinkReadingReusable). A failed call leaves obs.flink nil: the API counts as unreachable
// and the recorded state is kept.
func (c *cycle) observeFlink(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx)
	cl, err := c.flinkClient(ctx)
	if err != nil {
		// Said in the Waiting condition: a TLS setting to fix is not a controller failure.
		log.V(1).Info("building the Flink REST client", "error", err.Error())
		c.obs.untrusted = "the Flink REST API cannot be reached: " + err.Error()
		return
	}
	id, key := c.jobID(), c.key(c.fc.Name)
	c.obs.flinkTarget = id + "@" + string(c.obs.pod.UID)
	c.obs.flinkRead = func(ctx context.Context) (*state.Flink, error) { return readFlink(ctx, cl, id) }
	p := c.r.polls
	if p != nil && c.flinkReadingReusable() {
		if f, ok := p.Latest(key, c.obs.flinkTarget); ok {
			c.obs.flink = f
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	f, err := readFlink(ctx, cl, id)
	if p != nil {
		p.Record(key, c.obs.flinkTarget, f, err == nil)
	}
	if err != nil {
		log.V(1).Info("Flink REST API unreachable", "error", err.Error())
		c.obs.untrusted = "the Flink REST API does not answer: " + err.Error()
		return
	}
	c.obs.flink = f
}

// flinkReadingReusable reports whether a reading the poller took may stand for this
// reconcile's own: only while no operation of the controller is in flight on the job (an
// update, a cancel, a stop, a savepoint, a user control), whose every step needs Flink's
// answer after the step before.
func (c *cycle) flinkReadingReusable() bool {
	if c.updatePending() || c.cancelPending() || c.stopping() || controlInFlight(c.st.Control) {
		return false
	}
	if _, ok := c.fc.Annotations[v1beta1.ControlAnnotation]; ok {
		return false
	}
	sp := c.st.Savepoint
	return sp == nil || sp.State != SavepointStateInProgress
}

// readFlink reads the job id of a JobManager, and the application on Flink 2.3+: what the
// controller decides on. It fails only when the job overview does not answer; the failure
// of a detail (exceptions, the application API) leaves that detail out.
func readFlink(ctx context.Context, cl flinkclient.Client, id string) (*state.Flink, error) {
	log := ctrl.LoggerFrom(ctx)
	jobs, err := cl.ListJobs(ctx)
	if err != nil {
		return nil, err
	}
	f := &state.Flink{JobCount: len(jobs)}
	// Only the deploy's own job ID is this job: a job listed under another ID (an earlier
	// deploy's, recovered from HA or the job result store) is never adopted.
	for i := range jobs {
		if id != "" && jobs[i].ID == id {
			f.Job = &jobs[i]
		}
	}
	if f.Job == nil || isDriverJob(f.Job) {
		f.Job = nil
		for i := range jobs {
			// A failed main() with submit-failed-job-on-application-error: the driver job,
			// which Flink submits under the deploy's fixed job ID (--job-id, which every
			// deploy of the controller has). A driver job under another ID is another
			// deploy's (recovered from the job result store), not this deploy's failure.
			if isDriverJob(&jobs[i]) && jobs[i].ID == id {
				f.DriverJob = &jobs[i]
				if ex, err := cl.GetExceptions(ctx, jobs[i].ID); err == nil {
					f.DriverFailure = flinkclient.Summary(ex)
				}
			}
		}
	}
	if f.Job != nil && f.Job.State == flinkclient.JobStateFailed {
		if ex, err := cl.GetExceptions(ctx, f.Job.ID); err == nil {
			f.JobFailure = flinkclient.Summary(ex)
			f.RestoreRefused = mentionsResumeFromHAOnly(ex)
		}
	}
	apps, err := cl.ListApplications(ctx)
	switch {
	case errors.Is(err, flinkclient.ErrNotFound):
		// Flink before 2.3 has no application API.
	case err != nil:
		log.V(1).Info("reading the Flink application status", "error", err.Error())
	case len(apps) > 0:
		app := slices.MaxFunc(apps, func(a, b flinkclient.Application) int { return cmp.Compare(a.StartTime, b.StartTime) })
		f.Application = &app
		if app.Status == flinkclient.ApplicationStateFailed {
			if ex, err := cl.GetApplicationExceptions(ctx, app.ID); err == nil {
				f.ApplicationFailure = flinkclient.Summary(ex)
			}
		}
	}
	return f, nil
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}
