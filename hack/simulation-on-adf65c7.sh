#!/usr/bin/env bash
# Runs this tree's controller simulation (controller/simulation, on controller/fakeflink)
# against the controller of commit adf65c7, the main on which issue 8 was filed, to show
# which of the issue's invariants that controller breaks (the table in
# controller/simulation/doc.go).
#
# usage: hack/simulation-on-adf65c7.sh [worktree-dir] [go test flags...]
#   e.g. hack/simulation-on-adf65c7.sh /tmp/old -run 'TestHole|TestInvariants' -v
#
# It makes a detached worktree of adf65c7 (kept for inspection; remove it with
# `git worktree remove --force <dir>`), copies in the simulation, fakeflink, flinkha and this
# tree's flinkclient (as controller/simnew/…, for the fake's and the simulation's own use),
# and adds glue that changes no behaviour of the old controller: a NewReconciler (adf65c7
# builds its reconciler only inside Setup), the names of conditions and annotations it did
# not have yet (so it never sets them), and the lifecycle predicates the checks use.
set -euo pipefail

base=adf65c7
here=$(git rev-parse --show-toplevel)
dir=${1:-$(mktemp -d)/flink-admission-$base}
shift || true
mod=github.com/flink-admission/flink-admission

if [[ ! -e $dir/.git ]]; then
	git -C "$here" worktree add --detach "$dir" "$base" >/dev/null
fi
git -C "$dir" checkout -q "$base" -- .
git -C "$dir" clean -qfd controller

copy() { # copy <from package dir> <to package dir>: the package's files, imports moved to simnew
	mkdir -p "$dir/$2"
	for f in "$here/$1"/*.go; do
		case $f in *_test.go) [[ $1 == controller/simulation ]] || continue ;; esac
		sed -e "s#\"$mod/controller/fakeflink\"#\"$mod/controller/simnew/fakeflink\"#" \
			-e "s#\"$mod/controller/flinkha\"#\"$mod/controller/simnew/flinkha\"#" \
			-e "s#\"$mod/controller/flinkclient\"#\"$mod/controller/simnew/flinkclient\"#" \
			"$f" >"$dir/$2/$(basename "$f")"
	done
}
copy controller/flinkclient controller/simnew/flinkclient
copy controller/flinkha controller/simnew/flinkha
copy controller/fakeflink controller/simnew/fakeflink
copy controller/lifecycle controller/lifecycle
copy controller/simulation controller/simulation

# The old controller reaches Flink through its own flinkclient, and has neither a wait bound
# nor an injectable ID source.
cat >"$dir/controller/simulation/controller_test.go" <<EOF
package simulation_test

import (
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
		Clock:           w.clock,
		HARecoveryGrace: 2 * time.Minute,
		LostTimeout:     10 * time.Minute,
		RequeueInterval: 10 * time.Second,
		FlinkClientFor:  func(*v1beta1.FlinkCluster) (oldclient.Client, error) { return rest, nil },
	}, prometheus.NewRegistry())
}
EOF

cat >"$dir/controller/zz_simulation_glue.go" <<'EOF'
package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names the simulation reads that this controller never sets.
const (
	ConditionWaiting                 = "Waiting"
	ConditionSavepointRequired       = "SavepointRequired"
	ConditionReasonHAMetadataMissing = "HAMetadataMissing"
	RestoreAnnotation                = "flinkclusters.flinkoperator.k8s.io/restore-from"
	RestoreEmptyState                = "empty-state"
	ConditionReasonWaitingForApplication = "WaitingForApplication"
	ReasonWaitExceeded                   = "WaitExceeded"
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
EOF

cat >"$dir/controller/resources/zz_simulation_glue.go" <<'EOF'
package resources

// KeySavepointPath is Flink's restore path option, which this controller does not write.
const KeySavepointPath = "execution.savepoint.path"
EOF

cd "$dir"
go test ./controller/simulation/ "$@"
