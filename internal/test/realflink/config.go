package realflink

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flink-admission/flink-admission/controller/resources"
)

// javaOpens are the --add-exports and --add-opens of env.java.opts.all in the configuration
// Flink's distribution ships (flink-dist's config.yaml): what Flink needs on Java 17.
var javaOpens = []string{
	"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	"--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED",
	"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED",
	"--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

// startupOpts shorten a JVM's start on a busy 2-core machine; Flink runs the same either way.
var startupOpts = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}

// podConfiguration is the Flink configuration a container of pod reads: the cluster's
// configuration file (conf, from its ConfigMap) with what a pod's network and file system
// give it here. In a pod, Flink binds 0.0.0.0 inside the pod's own network namespace and
// writes under its own /tmp; here every JVM shares the machine, so each binds its pod's IP
// (a loopback address KWOK allocates) and writes under dir.
func podConfiguration(conf map[string]any, pod *corev1.Pod, component, dir, kubeconfig string) map[string]any {
	out := maps.Clone(conf)
	ip := pod.Status.PodIP
	tmp := filepath.Join(dir, "tmp")
	set := map[string]any{
		"io.tmp.dirs":                         tmp,
		"web.tmpdir":                          tmp,
		"user.artifacts.base-dir":             filepath.Join(dir, "artifacts"),
		"kubernetes.config.file":              kubeconfig,
		"kubernetes.namespace":                pod.Namespace,
		"metrics.internal.query-service.port": "0",
	}
	switch component {
	case "taskmanager":
		set["taskmanager.host"] = ip
		set["taskmanager.bind-host"] = ip
		set["taskmanager.resource-id"] = pod.Name
	default:
		set["jobmanager.bind-host"] = ip
		set["rest.bind-address"] = ip
		set["rest.address"] = ip
	}
	maps.Copy(out, set)
	return out
}

// writeConfiguration writes conf under confDir as Flink's image would find it: config.yaml or,
// for legacy, flink-conf.yaml, rendered as the controller's ConfigMap renders them.
func writeConfiguration(confDir string, conf map[string]any, legacy bool) error {
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	flat := make(map[string]string, len(conf))
	for k, v := range conf {
		flat[k] = fmt.Sprint(v)
	}
	text, err := resources.RenderConfig(flat, !legacy)
	if err != nil {
		return err
	}
	name := "config.yaml"
	if legacy {
		name = "flink-conf.yaml"
	}
	return os.WriteFile(filepath.Join(confDir, name), []byte(text), 0o644)
}

// writeHosts writes the JVM's name resolution (jdk.net.hosts.file): in a pod, localhost and
// the pod's own host name reach the pod's network namespace, here its IP. Flink 1.x's
// embedded executor uploads the job's files to the BlobServer at "localhost", which binds
// the pod's IP. Any other name is an error, as no JVM here resolves names: addresses come
// from the HA leader records and the API server's URL is an IP.
func writeHosts(path string, pod *corev1.Pod) error {
	names := []string{"localhost", pod.Name}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append(names, h)
	}
	return os.WriteFile(path, []byte(pod.Status.PodIP+" "+strings.Join(names, " ")+"\n"), 0o644)
}

// writeKubeconfig writes a kubeconfig for the pod's service account: a token the API server
// issues for it (TokenRequest, bound to the pod as a projected service account token is), so
// that Flink's Kubernetes HA runs with the pod's RBAC, as in a real cluster.
func writeKubeconfig(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config, pod *corev1.Pod, path string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	expiry := int64(24 * 60 * 60)
	tr, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &expiry,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["pod"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "pod", Namespace: pod.Namespace}
	kc.CurrentContext = "pod"
	return clientcmd.WriteToFile(*kc, path)
}

// bashJavaUtilsPrefix starts each result line of BashJavaUtils (flink-dist's config.sh
// reads them the same way).
const bashJavaUtilsPrefix = "BASH_JAVA_UTILS_EXEC_RESULT:"

// memoryParams runs Flink's BashJavaUtils as the image's scripts do (GET_JM_RESOURCE_PARAMS
// or GET_TM_RESOURCE_PARAMS): the JVM's memory flags and the dynamic -D properties that
// carry the derived memory sizes.
func memoryParams(ctx context.Context, java, lib, confDir, component string) (jvmArgs, dynamic []string, err error) {
	command := "GET_JM_RESOURCE_PARAMS"
	if component == "taskmanager" {
		command = "GET_TM_RESOURCE_PARAMS"
	}
	cmd := exec.CommandContext(ctx, java, append(slices.Clone(startupOpts), "-cp", filepath.Join(lib, "*"),
		"org.apache.flink.runtime.util.bash.BashJavaUtils", command, "--configDir", confDir)...)
	errOut := &tailBytes{n: 4096}
	cmd.Stderr = errOut
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("BashJavaUtils %s: %w: %s%s", command, err, errOut.buf.String(), tailString(string(out), 2048))
	}
	var results []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), bashJavaUtilsPrefix); ok {
			results = append(results, rest)
		}
	}
	if len(results) < 2 {
		return nil, nil, fmt.Errorf("BashJavaUtils %s printed %d results, want 2 (JVM flags, dynamic properties): %s", command, len(results), tailString(string(out), 2048))
	}
	return strings.Fields(results[len(results)-2]), strings.Fields(results[len(results)-1]), nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
