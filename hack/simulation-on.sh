#!/usr/bin/env bash
# Runs this tree's controller simulation (controller/simulation, on controller/fakeflink)
# against the controller of an older commit, to show which holes that controller has (the
# tables in controller/simulation/doc.go):
#   adf65c7  the main on which issue 8 was filed
#   61c15d7  the main on which issue 17 was filed (also runs the hole-7 rendering test of
#            controller/resources)
#
# usage: hack/simulation-on.sh <commit> [worktree-dir] [go test flags for the simulation...]
#   e.g. hack/simulation-on.sh 61c15d7 /tmp/old61 -run 'TestHole17|TestIssue17' -v
#        hack/simulation-on.sh adf65c7 /tmp/old -run 'TestHole|TestInvariants' -v
#
# It makes a detached worktree of the commit (kept for inspection; remove it with
# `git worktree remove --force <dir>`) and copies in, besides the old controller:
#   - the simulation, fakeflink, flinkha and this tree's flinkclient (as controller/simnew/…,
#     for the fake's and the simulation's own use); the differential test of the model
#     (differential_test.go) is left out: it runs the real control plane, not the controller;
#   - this tree's API types (api/v1beta1: fields the old controller never reads or sets are
#     only more fields to it), test builder (internal/test/builder) and lifecycle predicates
#     (flinkcluster), which the checks use;
#   - glue that changes no behaviour of the old controller: the job state machine table
#     (controller/state/machine.go, which the old controller never consults; the simulation
#     checks the old controller's transitions against it from its Events), and the names of
#     conditions, reasons and constants the old controller never sets.
set -euo pipefail

usage="usage: hack/simulation-on.sh <adf65c7|61c15d7> [worktree-dir] [go test flags...]"
base=${1:?$usage}
shift
case $base in adf65c7 | 61c15d7) ;; *)
	echo "$usage" >&2
	exit 2
	;;
esac
here=$(git rev-parse --show-toplevel)
dir=${1:-$(mktemp -d)/flink-admission-$base}
shift || true
mod=github.com/flink-admission/flink-admission

if [[ ! -e $dir/.git ]]; then
	git -C "$here" worktree add --detach "$dir" "$base" >/dev/null
fi
git -C "$dir" checkout -q "$base" -- .
git -C "$dir" clean -qfd controller internal flinkcluster api

copy() { # copy <from package dir> <to package dir>: the package's files, imports moved to simnew
	mkdir -p "$dir/$2"
	for f in "$here/$1"/*.go; do
		case $f in
		*/differential_test.go) continue ;;
		*_test.go) [[ $1 == controller/simulation ]] || continue ;;
		esac
		sed -e "s#\"$mod/controller/fakeflink\"#\"$mod/controller/simnew/fakeflink\"#" \
			-e "s#\"$mod/controller/flinkha\"#\"$mod/controller/simnew/flinkha\"#" \
			-e "s#\"$mod/controller/flinkclient\"#\"$mod/controller/simnew/flinkclient\"#" \
			"$f" >"$dir/$2/$(basename "$f")"
	done
}
copy controller/flinkclient controller/simnew/flinkclient
copy controller/flinkha controller/simnew/flinkha
copy controller/fakeflink controller/simnew/fakeflink
copy api/v1beta1 api/v1beta1
copy internal/test/builder internal/test/builder
copy internal/containerargs internal/containerargs
copy flinkcluster flinkcluster
copy controller/simulation controller/simulation
cp "$here/controller/state/machine.go" "$dir/controller/state/machine.go"

# The old controller reaches Flink through its own flinkclient; adf65c7 has neither a wait
# bound nor an injectable ID source.
options='WaitBound: waitBound, NewID: func() string { return fmt.Sprintf("%016x%016x", w.rng.Uint64(), w.rng.Uint64()) },'
[[ $base == adf65c7 ]] && options=''
cat >"$dir/controller/simulation/controller_test.go" <<GO
package simulation_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"$mod/api/v1beta1"
	"$mod/controller"
	oldclient "$mod/controller/flinkclient"
)

func newController(w *world, hc *http.Client) (*controller.Reconciler, error) {
	rest, err := oldclient.New(w.fl.URL(), hc)
	if err != nil {
		return nil, err
	}
	return controller.NewReconciler(w.cl, w.cl, w.rec, controller.Options{
		Clock:           w.controllerClock(),
		HARecoveryGrace: 2 * time.Minute,
		LostTimeout:     10 * time.Minute,
		RequeueInterval: 10 * time.Second,
		FlinkClientFor:  func(*v1beta1.FlinkCluster) (oldclient.Client, error) { return rest, nil },
		$options
	}, prometheus.NewRegistry())
}

var _ = fmt.Sprintf // used by the options of some commits only
GO

# Names the simulation reads that the old controller never sets (issue 17's and later).
cat >"$dir/controller/zz_simulation_glue.go" <<'GO'
package controller

// Names the simulation reads that this controller never sets or records.
const (
	ReasonUnlistedTransition        = "UnlistedTransition"
	ConditionReasonUnsupportedHA    = "UnsupportedHA"
	ConditionReasonLostRecoverable  = "LostRecoverableFromHA"
	ConditionReasonEndedUnobserved  = "EndedUnobserved"
	ReasonLastStateRedeploy         = "LastStateRedeploy"
	ReasonLastStateRefused          = "LastStateRefused"
	ReasonStatelessRedeploy         = "StatelessRedeploy"
	ReasonSavepointDisposed         = "SavepointDisposed"
	ReasonSavepointDisposalFailed   = "SavepointDisposalFailed"
	ResumeFromHAOnly                = "flink-admission-no-savepoint-the-job-must-resume-from-its-ha-data"

	ConditionReasonWaitingForJobReport          = "WaitingForJobReport"
	ConditionReasonWaitingForJobManagerShutdown = "WaitingForJobManagerShutdown"
	ReasonJobManagerShutdown                    = "JobManagerShutdown"
	ReasonJobManagerShutdownUnanswered          = "JobManagerShutdownUnanswered"
)
GO
# The restore path through the container's env (issue 17 hole 7), and the policy rule of
# hole 1: names the old tree lacks, so that the simulation builds; the old controller never
# writes that entry, and its policy has no such rule (the simulation then reports it admits
# ZooKeeper).
cat >"$dir/controller/resources/zz_simulation_glue_restore.go" <<'GO'
package resources

// The restore path entry and env variable of this tree's JobManager, unused by this controller.
const (
	KeyRestorePath = "flink-admission-restore-path"
	EnvRestorePath = "FLINK_ADMISSION_RESTORE_PATH"
)
GO
if ! grep -rqs RuleDeploymentRequiresKubernetesHA "$dir/policy"; then
	cat >"$dir/policy/zz_simulation_glue.go" <<'GO'
package policy

// RuleDeploymentRequiresKubernetesHA is this tree's rule name; this policy has no such rule.
const RuleDeploymentRequiresKubernetesHA = "deployment-requires-kubernetes-ha"
GO
fi
cat >"$dir/controller/state/zz_simulation_glue.go" <<'GO'
package state

import "time"

// SubmitBound is this tree's bound on a JobManager run that may have run its job, which the
// simulation's model of container runs keeps above; this controller has no such rule.
const SubmitBound = 10 * time.Second
GO

if [[ $base == adf65c7 ]]; then
	# adf65c7 builds its reconciler only inside Setup, and had none of issue 8's conditions,
	# annotations and restore path yet.
	cat >>"$dir/controller/zz_simulation_glue.go" <<'GO'

const (
	ConditionWaiting                     = "Waiting"
	ConditionSavepointRequired           = "SavepointRequired"
	ConditionReasonHAMetadataMissing     = "HAMetadataMissing"
	ReasonHAMetadataMissing              = "HAMetadataMissing"
	RestoreAnnotation                    = "flinkclusters.flinkoperator.k8s.io/restore-from"
	RestoreEmptyState                    = "empty-state"
	ConditionReasonWaitingForApplication = "WaitingForApplication"
	ReasonWaitExceeded                   = "WaitExceeded"
)
GO
	cat >"$dir/controller/zz_simulation_reconciler.go" <<'GO'
package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewReconciler builds the reconciler as Setup does, without a manager.
func NewReconciler(cl client.Client, reader client.Reader, recorder events.EventRecorder, opts Options, reg prometheus.Registerer) (*Reconciler, error) {
	opts, err := opts.complete()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Reconciler{Client: cl, Reader: reader, Recorder: recorder, Options: opts, metrics: m}, nil
}
GO
	cat >>"$dir/controller/state/zz_simulation_glue.go" <<'GO'

// FailureApplication is this tree's DeploymentFailed kind of a failed main().
const FailureApplication = "ApplicationFailed"
GO
	cat >"$dir/controller/resources/zz_simulation_glue.go" <<'GO'
package resources

// KeySavepointPath is Flink's restore path option, which this controller does not write.
const KeySavepointPath = "execution.savepoint.path"
GO
fi

cd "$dir"
status=0
go test ./controller/simulation/ "$@" || status=$?
exit $status
