package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/audit"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/server"
)

// runAudit implements `flink-admission audit [-n NAMESPACE | -A] [-l SELECTOR] [-o FORMAT]`:
// the stored FlinkClusters judged by this binary's policy, as if created now. Its exit codes
// are check's: 0 when none would be refused, 1 when any would, 2 for a usage error or when
// the clusters cannot be read.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit", stderr)
	kubeconfig := fs.String("kubeconfig", "", "path of a kubeconfig (default $KUBECONFIG, then the in-cluster configuration, then ~/.kube/config)")
	namespace := fs.StringP("namespace", "n", "", "the namespace to audit (default the kubeconfig context's namespace, in a pod its own)")
	allNamespaces := fs.BoolP("all-namespaces", "A", false, "audit the FlinkClusters of every namespace")
	selector := fs.StringP("selector", "l", "", "label selector of the FlinkClusters to audit (e.g. team=streaming,tier!=test)")
	output := fs.StringP("output", "o", "text", "output format: text, json, yaml, sarif (SARIF 2.1.0) or junit (JUnit XML)")
	chunkSize := fs.Int64("chunk-size", audit.DefaultPageSize, "how many FlinkClusters each list request returns (the API server answers in pages)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission audit [-n NAMESPACE | -A] [-l SELECTOR] [-o text|json|yaml|sarif|junit] [--kubeconfig PATH]")
		fmt.Fprintln(stderr, "Judges the FlinkClusters stored in a cluster by this binary's policy, as if each were created now, and says of each refusal whether ratcheting keeps the cluster editable: exit 0 when none would be refused, 1 when any would, 2 for a usage error or when the clusters cannot be read.")
		printFlags(fs.Output(), fs)
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if !slices.Contains(check.Formats, *output) {
		fmt.Fprintf(stderr, "audit: unknown output format %q: use one of %s\n", *output, strings.Join(check.Formats, ", "))
		return exitUsage
	}
	if *allNamespaces && fs.Changed("namespace") {
		fmt.Fprintln(stderr, "audit: --namespace and --all-namespaces exclude each other")
		return exitUsage
	}
	if *chunkSize < 1 {
		fmt.Fprintf(stderr, "audit: --chunk-size %d: a page holds at least one cluster\n", *chunkSize)
		return exitUsage
	}
	opts := audit.Options{PageSize: *chunkSize}
	if *selector != "" {
		sel, err := labels.Parse(*selector)
		if err != nil {
			fmt.Fprintf(stderr, "audit: --selector %q: %v\n", *selector, err)
			return exitUsage
		}
		opts.Selector = sel
	}

	cfg, err := server.LoadConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return exitUsage
	}
	if !*allNamespaces {
		opts.Namespace = *namespace
		if opts.Namespace == "" {
			if opts.Namespace, err = contextNamespace(*kubeconfig); err != nil {
				fmt.Fprintf(stderr, "audit: finding the namespace (pass --namespace or --all-namespaces): %v\n", err)
				return exitUsage
			}
		}
	}
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return exitUsage
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(stderr, "audit: connecting to the API server: %v\n", err)
		return exitUsage
	}
	results, err := audit.Run(ctx, c, policy.Validator{}, opts)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return exitUsage
	}
	if err := check.WriteStored(stdout, *output, results); err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return exitUsage
	}
	if !check.AllAllowed(results) {
		return exitDenied
	}
	return exitAllowed
}

// contextNamespace is the namespace kubectl would use: the current context's of the
// kubeconfig (path, else $KUBECONFIG, else ~/.kube/config), in a pod without one its
// service account's, else "default".
func contextNamespace(path string) (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	return ns, err
}
