package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// startControlPlane starts the whole control plane of DevOptions.ControlPlane: kube-apiserver
// and etcd, kube-controller-manager, kube-scheduler and the KWOK nodes. The components' logs
// go to a logs directory beside the kubeconfig, emptied first and kept after exit, so that a
// user can read what the Kubernetes controllers did.
func (d *Dev) startControlPlane(ctx context.Context, o DevOptions, progress io.Writer) error {
	nodes := o.Nodes
	if nodes == 0 {
		nodes = DefaultDevNodes
	}
	if os.Getenv("FLINK_ADMISSION_CONTROL_PLANE") == "" && !controlPlaneBinariesCached() {
		fmt.Fprintf(progress, "First run of the control plane: building kube-controller-manager, kube-scheduler (k8s.io/kubernetes)\n"+
			"and kwok (sigs.k8s.io/kwok) from the Go module proxy, cached under %s\n"+
			"like kube-apiserver: ~6 minutes once; progress follows.\n", displayPath(cacheRoot()))
	}
	bin, err := testenv.ControlPlaneAssetsDir()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	logDir := ""
	if o.KubeconfigOut != "" {
		logDir = filepath.Join(filepath.Dir(o.KubeconfigOut), "logs")
		if err := os.RemoveAll(logDir); err != nil { // the logs of the last run
			return err
		}
	}
	fmt.Fprintf(progress, "starting kube-apiserver, etcd, kube-controller-manager, kube-scheduler and %d KWOK nodes (%s)\n", nodes, displayPath(bin))
	cp, err := testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: nodes, LogDir: logDir})
	if err != nil {
		return err
	}
	d.ControlPlane, d.Env, d.Nodes = cp, cp.Env, nodes
	if logDir != "" {
		d.LogDir = logDir
	}
	return nil
}

// controlPlaneBinariesCached reports whether some version of kube-controller-manager,
// kube-scheduler and kwok has been built already (see envtestBinariesCached).
func controlPlaneBinariesCached() bool {
	dirs, _ := filepath.Glob(filepath.Join(cacheRoot(), "controlplane", "*"))
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "kube-controller-manager")) && isExecutable(filepath.Join(dir, "kube-scheduler")) &&
			isExecutable(filepath.Join(dir, "kwok")) {
			return true
		}
	}
	return false
}
