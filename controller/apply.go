package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// specHashAnnotation holds the hash of the desired object an owned object was written from:
// hashes ignore API server defaults, so an unchanged cluster causes no writes (nor watch events).
const specHashAnnotation = "flinkoperator.k8s.io/spec-hash"

func hashOf(obj any) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encoding %T for its spec hash: %w", obj, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// applyOwned creates desired, or updates current when desired changed (merge copies its mutable parts).
func applyOwned[T client.Object](ctx context.Context, c *cycle, desired, current T, merge func(current, desired T)) (bool, error) {
	hash, err := hashOf(desired)
	if err != nil {
		return false, err
	}
	ann := maps.Clone(desired.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[specHashAnnotation] = hash
	desired.SetAnnotations(ann)

	key := client.ObjectKeyFromObject(desired)
	if err := c.r.Client.Get(ctx, key, current); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("reading %T %s: %w", current, key.Name, err)
		}
		err := c.r.Client.Create(ctx, desired)
		if err == nil {
			c.wroteOwned(desired)
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating %T %s: %w", desired, desired.GetName(), err)
		}
		// Not in the cache (unlabelled, or not seen yet): read it from the API server.
		if err := c.r.Reader.Get(ctx, key, current); err != nil {
			return false, fmt.Errorf("reading %T %s: %w", desired, desired.GetName(), err)
		}
	}
	if !metav1.IsControlledBy(current, c.fc) {
		return false, fmt.Errorf("%T %s exists and is not owned by FlinkCluster %s", current, current.GetName(), c.fc.Name)
	}
	if current.GetAnnotations()[specHashAnnotation] == hash &&
		labels.SelectorFromSet(desired.GetLabels()).Matches(labels.Set(current.GetLabels())) {
		return true, nil
	}
	merge(current, desired)
	current.SetLabels(desired.GetLabels())
	curAnn := current.GetAnnotations()
	if curAnn == nil {
		curAnn = map[string]string{}
	}
	maps.Copy(curAnn, desired.GetAnnotations())
	current.SetAnnotations(curAnn)
	if err := c.r.Client.Update(ctx, current); err != nil {
		return false, fmt.Errorf("updating %T %s: %w", current, current.GetName(), err)
	}
	c.wroteOwned(current)
	return true, nil
}

// applyComponents writes the ConfigMap, Service, TaskManagers and optional objects of the spec,
// and returns what stands of them, as far as it got.
func (c *cycle) applyComponents(ctx context.Context) (acted, error) {
	var a acted
	rev := c.st.Revision.CurrentRevision
	cm, err := resources.ConfigMap(c.fc, c.deployment())
	if err != nil {
		return a, fmt.Errorf("building the Flink ConfigMap: %w", err)
	}
	ok, err := applyOwned(ctx, c, cm, &corev1.ConfigMap{}, func(cur, des *corev1.ConfigMap) {
		cur.Data = des.Data
	})
	if a.configMap = presenceOf(ok); err != nil {
		return a, fmt.Errorf("writing the Flink ConfigMap: %w", err)
	}
	ok, err = applyOwned(ctx, c, resources.Service(c.fc, rev), &corev1.Service{}, func(cur, des *corev1.Service) {
		// The cluster IP is allocated once and immutable.
		des.Spec.ClusterIP, des.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs
		cur.Spec = des.Spec
	})
	if a.service = presenceOf(ok); err != nil {
		return a, fmt.Errorf("writing the JobManager Service: %w", err)
	}
	if c.fc.Spec.TaskManager.GetDeploymentType() == v1beta1.TaskManagerDeploymentTypeDeployment {
		ok, err = applyOwned(ctx, c, resources.TaskManagerDeployment(c.fc, rev), &appsv1.Deployment{}, func(cur, des *appsv1.Deployment) {
			cur.Spec.Replicas, cur.Spec.Template = des.Spec.Replicas, des.Spec.Template
		})
	} else {
		ok, err = applyOwned(ctx, c, resources.TaskManagerStatefulSet(c.fc, rev), &appsv1.StatefulSet{}, func(cur, des *appsv1.StatefulSet) {
			cur.Spec.Replicas, cur.Spec.Template = des.Spec.Replicas, des.Spec.Template
		})
	}
	if a.taskManagers = presenceOf(ok); err != nil {
		return a, fmt.Errorf("writing the TaskManagers: %w", err)
	}
	a.ingressApplied = true
	a.ingress, err = c.applyExtras(ctx)
	return a, err
}

// ResumeFromHAOnly is the restore path of a Deployment-mode deploy whose job ran: it exists
// nowhere. Flink recovers a job whose graph is in HA whatever the configuration says, so only a
// main() run again because the HA data is gone reads it, and the job then fails to start rather
// than start from empty state under the same job ID (as the Flink Kubernetes operator's
// LAST_STATE_DUMMY_SP_PATH). The controller recognises the failure and asks for a savepoint.
const ResumeFromHAOnly = "flink-admission-no-savepoint-the-job-must-resume-from-its-ha-data"

// deployment is the current deploy. Its savepoint is configured only until the job is seen to
// run; then, in Deployment mode, ResumeFromHAOnly replaces it (a Job-mode JobManager never runs
// main() twice).
func (c *cycle) deployment() resources.Deploy {
	job := c.job()
	d := resources.Deploy{Revision: c.st.Revision.CurrentRevision, JobID: job.ID, FromSavepoint: job.FromSavepoint}
	if c.mustResumeFromHA() {
		d.FromSavepoint = c.restorePathAfterRun()
	}
	return d
}

// mustResumeFromHA reports whether a JobManager started now must recover the job from HA: the
// job ran or was submitted, or the deploy is last-state. Without HA data, a main() run from
// empty state would lose the job's whole state, so ResumeFromHAOnly makes it fail instead.
func (c *cycle) mustResumeFromHA() bool {
	return ranOrSubmitted(c.job(), c.obs) || c.job().FromCheckpoint
}

// ranOrSubmitted reports whether the current deploy's job ran or main() submitted it unseen.
func ranOrSubmitted(job *v1beta1.JobStatus, obs observed) bool {
	return flinkcluster.Ran(job) || (job.ID != "" && obs.submitted == job.ID)
}

func (c *cycle) restorePathAfterRun() string {
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment && flinkcluster.HAEnabled(c.fc.Spec.FlinkProperties) {
		return ResumeFromHAOnly
	}
	return ""
}

// dropRestorePath takes the deploy's savepoint out of the Flink configuration once the job
// ran or was submitted (mustResumeFromHA), in the flows that do not rebuild the ConfigMap, and
// before the status records the run: a JobManager restarted from then on reads
// ResumeFromHAOnly (Deployment mode) instead of the savepoint, older than the job's state.
func (c *cycle) dropRestorePath(ctx context.Context) error {
	if !c.mustResumeFromHA() {
		return nil
	}
	cm, err := c.ownConfigMap(ctx)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(cm, c.fc) {
		return nil
	}
	changed, err := resources.ReplaceSavepoint(cm, c.restorePathAfterRun())
	if err != nil || !changed {
		return err
	}
	if err := c.r.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("taking the savepoint out of ConfigMap %s: %w", cm.Name, err)
	}
	c.wroteOwned(cm)
	return nil
}

// ownConfigMap reads the cluster's Flink ConfigMap, whose restore path decides whether a job
// was submitted and what a restarted JobManager restores: from the cache when it shows the
// version this replica last wrote or read from the API server under its tenure, otherwise
// from the API server (the cache may not show the last write, and a stale restore path could
// be taken for the current one).
func (c *cycle) ownConfigMap(ctx context.Context) (*corev1.ConfigMap, error) {
	key := client.ObjectKey{Namespace: c.fc.Namespace, Name: resources.ConfigMapName(c.fc.Name)}
	cm := &corev1.ConfigMap{}
	if k := c.known(); k != nil && k.configMapRV != "" {
		err := c.r.Client.Get(ctx, key, cm)
		switch {
		case err == nil && cm.ResourceVersion == k.configMapRV:
			k.configMap, k.configMapOlder = nil, nil
			return cm, nil
		case k.configMap != nil && (apierrors.IsNotFound(err) || (err == nil && slices.Contains(k.configMapOlder, cm.ResourceVersion))):
			// The cache is behind this replica's write (a create or an update moments ago):
			// what it wrote is the newest version it can know.
			return k.configMap.DeepCopy(), nil
		}
	}
	cm = &corev1.ConfigMap{}
	if err := c.r.Reader.Get(ctx, key, cm); err != nil {
		return nil, err
	}
	c.wroteOwned(cm)
	return cm, nil
}

// wroteOwned records the version of the cluster's Flink ConfigMap this replica just wrote
// or read from the API server (ownConfigMap); other objects are not recorded.
func (c *cycle) wroteOwned(obj client.Object) {
	if _, ok := obj.(*corev1.ConfigMap); !ok || obj.GetName() != resources.ConfigMapName(c.fc.Name) {
		return
	}
	if k := c.known(); k != nil {
		if k.configMapRV != "" && k.configMapRV != obj.GetResourceVersion() {
			k.configMapOlder = append(k.configMapOlder, k.configMapRV)
			if n := len(k.configMapOlder); n > maxOlderVersions {
				k.configMapOlder = k.configMapOlder[n-maxOlderVersions:]
			}
		}
		k.configMapRV, k.configMap = obj.GetResourceVersion(), obj.(*corev1.ConfigMap).DeepCopy()
	}
}

// newDeploy starts a deploy that does not resume from HA: a new job ID, restoring from,
// recorded in the status before anything is created. An ID chosen earlier and recorded, but
// whose workload was never created, is kept.
func (c *cycle) newDeploy(ctx context.Context, out *flowOut, from string) error {
	job := c.job()
	recorded := c.read.Components.Job
	unused := job.State == v1beta1.JobStatePending && job.DeployTime == "" && job.ID != "" &&
		recorded != nil && recorded.ID == job.ID
	if !unused {
		prevID := job.ID
		job.ID = c.r.Options.NewID()
		job.DeployTime, job.StartTime, job.CompletionTime = "", "", nil
		job.FinalSavepoint = false
		job.FailureReasons = nil
		// A new job ID starts a new checkpoint ID counter.
		job.SavepointCheckpointID = 0
		job.UnknownSavepointTime = ""
		job.FromCheckpoint = false
		if prevID != "" {
			c.event(corev1.EventTypeNormal, ReasonJobStateChanged, "Deploy", "new deploy: job %s replaces job %s", job.ID, prevID)
		}
		if err := c.setJobState(state.EventNewDeploy, "", "new deploy", c.now); err != nil {
			return fmt.Errorf("recording the new deploy: %w", err)
		}
	}
	job.FromSavepoint = from
	if err := c.recordedBeforeActing(); err != nil {
		return err
	}
	return out.act(c.createJobManager(ctx, out))
}

// createJobManager creates the current deploy's JobManager workload: Deploying.
func (c *cycle) createJobManager(ctx context.Context, out *flowOut) (acted, error) {
	if ok, err := c.confirmAbsent(ctx); err != nil || !ok {
		return acted{}, err
	}
	// The Flink version the workload runs: an update to another one is no last-state update.
	c.job().FlinkVersion = c.fc.Spec.FlinkVersion
	a, err := c.applyComponents(ctx)
	if err != nil {
		return a, err
	}
	d := c.deployment()
	var obj client.Object
	kind := "Job"
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		obj, kind = resources.JobManagerDeployment(c.fc, d, 1), "Deployment"
	} else {
		obj = resources.JobManagerJob(c.fc, d)
	}
	if k := c.known(); k != nil {
		k.pristine = false
	}
	if err := c.r.Client.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			out.waitFor(ConditionReasonWaitingForJobManagerDeletion, "the JobManager %s %s still exists", kind, obj.GetName())
			return a, nil
		}
		return a, fmt.Errorf("creating the JobManager %s: %w", kind, err)
	}
	job := c.job()
	if rec := c.read.Components.Job; rec != nil && rec.ID == d.JobID && rec.DeployTime == "" {
		// The deploy an update recorded from the user's restore answer (deployNextRevision).
		if choice := c.restoreChoice(); choice != nil && *choice == job.FromSavepoint {
			out.removeRestore = true
		}
	}
	job.DeployTime = state.Time(c.now)
	a.merge(acted{workload: &state.Workload{Revision: d.Revision, JobID: d.JobID}})
	note := fmt.Sprintf("created JobManager %s %s for revision %s, job %s", kind, obj.GetName(), d.Revision, d.JobID)
	switch d.FromSavepoint {
	case "":
	case ResumeFromHAOnly:
		note += ", recovering the job from Flink's HA store only"
	default:
		note += " from savepoint " + d.FromSavepoint
	}
	c.event(corev1.EventTypeNormal, ReasonJobManagerCreated, "Create", "%s", note)
	// A new deployment: an earlier failure or a stop for want of a savepoint no longer stands.
	c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionFalse, ConditionReasonNoFailure, note))
	c.setCondition(condition(ConditionSavepointRequired, metav1.ConditionFalse, ConditionReasonNotRequired, note))
	out.lookAgain()
	return a, c.setJobState(state.EventJobManagerCreated, "", "", c.now)
}

// deleteObject deletes obj if it exists; dependents go in the background.
func (c *cycle) deleteObject(ctx context.Context, obj client.Object) error {
	if err := c.r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// deleteJobManager deletes the JobManager workload, then its pods, so that the controller waits
// for exactly the pods it knows. A Deployment is scaled to 0 first and deleted once that took
// effect: its ReplicaSet, which outlives it, would replace a deleted pod. Callers call again
// until the workload is being deleted.
func (c *cycle) deleteJobManager(ctx context.Context, out *flowOut) (acted, error) {
	switch {
	case c.obs.jmDeployment != nil && c.obs.jmDeployment.DeletionTimestamp == nil:
		if err := c.scaleJobManager(ctx, 0); err != nil {
			return acted{}, err
		}
		if !scaledDown(c.obs.jmDeployment) ||
			slices.ContainsFunc(c.obs.pods, func(p corev1.Pod) bool { return state.MadeByReplicaSet(&p) && !state.Deleting(&p) }) {
			out.lookAgain()
			return acted{}, nil
		}
		if err := c.deleteObject(ctx, c.obs.jmDeployment); err != nil {
			return acted{}, err
		}
		c.event(corev1.EventTypeNormal, ReasonJobManagerDeleted, "Delete", "deleted JobManager Deployment %s (revision %s)", c.obs.jmDeployment.Name, c.obs.wl.Revision)
	case c.obs.jmJob != nil && c.obs.jmJob.DeletionTimestamp == nil:
		// As scaleJobManager does before a scale to 0.
		if err := c.recordedBeforeActing(); err != nil {
			return acted{}, err
		}
		if err := c.deleteObject(ctx, c.obs.jmJob); err != nil {
			return acted{}, err
		}
		c.event(corev1.EventTypeNormal, ReasonJobManagerDeleted, "Delete", "deleted JobManager Job %s (revision %s)", c.obs.jmJob.Name, c.obs.wl.Revision)
	}
	var a acted
	if wl := standing(c.obs, out.objects).wl; wl != nil {
		deleting := *wl
		deleting.Deleting = true
		a.workload = &deleting
	}
	return a, c.deleteJobManagerPods(ctx)
}

// scaledDown reports whether the Deployment controller has seen the scale to 0 and counts no
// pod (or never acted: no ReplicaSet). The cached pod list can lag behind the ReplicaSet's.
func scaledDown(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration == 0 {
		return true
	}
	return d.Spec.Replicas != nil && *d.Spec.Replicas == 0 &&
		d.Status.ObservedGeneration >= d.Generation && d.Status.Replicas == 0
}

// deleteJobManagerPods deletes the JobManager pods that are not terminating yet, but those a
// ReplicaSet controls: it would replace a deleted pod with a new JobManager beside the old one
// that may still lead. Its pods go with its scale-down, or with the ReplicaSet itself.
func (c *cycle) deleteJobManagerPods(ctx context.Context) error {
	for i := range c.obs.pods {
		p := &c.obs.pods[i]
		if state.Deleting(p) || state.MadeByReplicaSet(p) {
			continue
		}
		if err := c.r.Client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting JobManager pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// waitForNoLeader deletes leftover JobManager pods and returns the wait while any may still
// lead: one that leads, or a live one without leader information. A pod stuck Terminating that
// the leader information does not name blocks nothing.
func (c *cycle) waitForNoLeader(ctx context.Context) (*metav1.Condition, error) {
	var blocking []corev1.Pod
	for _, p := range c.obs.pods {
		if state.MayLead(&p, c.obs.ha.leader, c.now) {
			blocking = append(blocking, p)
		}
	}
	if len(blocking) == 0 {
		return nil, nil
	}
	if err := c.deleteJobManagerPods(ctx); err != nil {
		return nil, err
	}
	w := waitCondition(ConditionReasonWaitingForJobManagerPods, "waiting for the old JobManager pods to be gone: %s", podNames(blocking))
	if c.obs.ha.leader.Known {
		w = waitCondition(ConditionReasonWaitingForLeader, "JobManager pod(s) %s may still lead the cluster (HA leader %s)", podNames(blocking), c.obs.ha.leader.Address)
	}
	// One Event when this wait begins, not one per look while it lasts. The update's own
	// deletion of the workload begins a wait of the same reason without an Event
	// (replaceJobManager): the message, which names the pods, tells the two apart.
	if was := meta.FindStatusCondition(c.read.Conditions, ConditionWaiting); was == nil || was.Status != metav1.ConditionTrue || was.Reason != w.Reason || was.Message != w.Message {
		c.event(corev1.EventTypeNormal, ReasonWaitingForPods, "Wait", "waiting for JobManager pods to be gone before creating the JobManager: %s", podNames(blocking))
	}
	return w, nil
}

func podNames(pods []corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

func (c *cycle) scaleJobManager(ctx context.Context, replicas int32) error {
	d := c.obs.jmDeployment
	if d == nil || d.DeletionTimestamp != nil || (d.Spec.Replicas != nil && *d.Spec.Replicas == replicas) {
		return nil
	}
	if replicas == 0 {
		// Recorded first: once the JobManager is gone, a record lost with a failed status write (a
		// savepoint taken) could not be read again.
		if err := c.recordedBeforeActing(); err != nil {
			return err
		}
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := c.r.Client.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("scaling JobManager Deployment %s to %d: %w", d.Name, replicas, err)
	}
	c.event(corev1.EventTypeNormal, ReasonJobManagerScaled, "Scale", "scaled JobManager Deployment %s to %d", d.Name, replicas)
	return nil
}

func (c *cycle) deleteTaskManagers(ctx context.Context) (acted, error) {
	meta := metav1.ObjectMeta{Name: resources.TaskManagerName(c.fc.Name), Namespace: c.fc.Namespace}
	var obj client.Object = &appsv1.StatefulSet{ObjectMeta: meta}
	if c.fc.Spec.TaskManager.GetDeploymentType() == v1beta1.TaskManagerDeploymentTypeDeployment {
		obj = &appsv1.Deployment{ObjectMeta: meta}
	}
	if !c.obs.tmExists {
		return acted{}, nil
	}
	return acted{taskManagers: absent}, c.deleteObject(ctx, obj)
}

// deleteAll deletes every object of the cluster but the FlinkCluster.
func (c *cycle) deleteAll(ctx context.Context, out *flowOut) error {
	if err := out.act(c.deleteJobManager(ctx, out)); err != nil {
		return err
	}
	if err := out.act(c.deleteTaskManagers(ctx)); err != nil {
		return err
	}
	if err := out.act(c.deleteExtras(ctx)); err != nil {
		return err
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: c.fc.Namespace} }
	if c.obs.serviceExists {
		if err := c.deleteObject(ctx, &corev1.Service{ObjectMeta: meta(resources.JobManagerName(c.fc.Name))}); err != nil {
			return err
		}
		out.objects.merge(acted{service: absent})
	}
	if c.obs.configMapExists {
		if err := c.deleteObject(ctx, &corev1.ConfigMap{ObjectMeta: meta(resources.ConfigMapName(c.fc.Name))}); err != nil {
			return err
		}
		out.objects.merge(acted{configMap: absent})
	}
	return nil
}

func (c *cycle) setComponents() {
	o := standing(c.obs, c.out.objects)
	comps := &c.st.Components
	ready := func(ok bool) string {
		if ok {
			return v1beta1.ComponentStateReady
		}
		return v1beta1.ComponentStateDeleted
	}
	comps.ConfigMap = &v1beta1.ConfigMapStatus{Name: resources.ConfigMapName(c.fc.Name), State: ready(o.configMapExists)}
	comps.JobManagerService.Name = resources.JobManagerName(c.fc.Name)
	comps.JobManagerService.State = ready(o.serviceExists)

	jm := &v1beta1.JobManagerStatus{Name: resources.JobManagerName(c.fc.Name), State: v1beta1.ComponentStateDeleted}
	if o.wl != nil && !o.wl.Deleting {
		jm.Replicas = 1
		if d := o.jmDeployment; d != nil && d.Spec.Replicas != nil {
			jm.Replicas = *d.Spec.Replicas
		}
		if state.Ready(o.pod) {
			jm.ReadyReplicas = 1
		}
		jm.State = v1beta1.ComponentStateNotReady
		if jm.ReadyReplicas >= jm.Replicas && jm.Replicas > 0 {
			jm.State = v1beta1.ComponentStateReady
		}
	}
	jm.Ready = fmt.Sprintf("%d/%d", jm.ReadyReplicas, jm.Replicas)
	jm.DeploymentType = string(c.mode)
	comps.JobManager = jm

	tm := &v1beta1.TaskManagerStatus{
		Name:     resources.TaskManagerName(c.fc.Name),
		State:    v1beta1.ComponentStateDeleted,
		Selector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: resources.SelectorLabels(c.fc.Name, resources.ComponentTaskManager)}),
	}
	if o.tmExists {
		tm.Replicas = resources.TaskManagerReplicas(c.fc)
		tm.ReadyReplicas = o.tmReady
		tm.State = v1beta1.ComponentStateNotReady
		if tm.ReadyReplicas >= tm.Replicas {
			tm.State = v1beta1.ComponentStateReady
		}
	}
	tm.Ready = fmt.Sprintf("%d/%d", tm.ReadyReplicas, tm.Replicas)
	comps.TaskManager = tm
	comps.JobManagerIngress = jobManagerIngressStatus(comps.JobManagerIngress, o.ingress)
}
