#!/usr/bin/env bash
# Runs this tree's controller simulation (controller/simulation, on controller/fakeflink)
# against the controller of commit 61c15d7, the main on which issue 17 was filed, to show
# which of the issue's holes that controller has (the table in controller/simulation/doc.go).
# The twin of hack/simulation-on-adf65c7.sh (issue 8).
#
# usage: hack/simulation-on-61c15d7.sh [worktree-dir] [go test flags for the simulation...]
#   e.g. hack/simulation-on-61c15d7.sh /tmp/old61 -run 'TestIssue17|TestInvariants' -v
#
# It makes a detached worktree of 61c15d7 (kept for inspection; remove it with
# `git worktree remove --force <dir>`), copies in the simulation, fakeflink, flinkha and this
# tree's flinkclient (as controller/simnew/…, for the fake's and the simulation's own use),
# this tree's test builder (internal/test/builder) and lifecycle predicates (flinkcluster),
# which 61c15d7 had elsewhere and the checks use, and glue that
# changes no behaviour of the old controller: the job state machine table
# (controller/state/machine.go, which the old controller never consults; the simulation
# checks the old controller's transitions against it from its Events) and the name of an
# Event reason the old controller never records.
set -euo pipefail

base=61c15d7
here=$(git rev-parse --show-toplevel)
dir=${1:-$(mktemp -d)/flink-admission-$base}
shift || true
mod=github.com/flink-admission/flink-admission

if [[ ! -e $dir/.git ]]; then
	git -C "$here" worktree add --detach "$dir" "$base" >/dev/null
fi
git -C "$dir" checkout -q "$base" -- .
git -C "$dir" clean -qfd controller internal flinkcluster

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
copy internal/test/builder internal/test/builder
copy flinkcluster flinkcluster
copy controller/simulation controller/simulation
cp "$here/controller/state/machine.go" "$dir/controller/state/machine.go"
# Hole 7 (allowNonRestoredState) is a rendering test, not a simulation.
cp "$here/controller/resources/restoreargs_test.go" "$dir/controller/resources/"

# The old controller reaches Flink through its own flinkclient.
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
		WaitBound:       waitBound,
		FlinkClientFor:  func(*v1beta1.FlinkCluster) (oldclient.Client, error) { return rest, nil },
		NewID:           func() string { return fmt.Sprintf("%016x%016x", w.rng.Uint64(), w.rng.Uint64()) },
	}, prometheus.NewRegistry())
}
GO

cat >"$dir/controller/zz_simulation_glue.go" <<'GO'
package controller

// ReasonUnlistedTransition names an Event this controller never records: it has no job
// state machine table to check its transitions against.
const ReasonUnlistedTransition = "UnlistedTransition"
GO

cd "$dir"
status=0
go test ./controller/simulation/ "$@" || status=$?
go test ./controller/resources/ -run TestAllowNonRestoredStateSurvivesTheEntrypoint || status=$?
exit $status
