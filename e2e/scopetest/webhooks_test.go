package scopetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/server"
)

// startWebhooks serves the mutating and validating webhooks (webhook only, self-signed, on
// 127.0.0.1) with deploy/base's webhook configurations pointed at them, so that what the
// tests write with kubectl — the move's hand-over patch among it — is admitted by the live
// webhooks, as in an installation. It returns once the API server calls both.
func startWebhooks(ctx context.Context) (func(), error) {
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	mutating, validating, err := devenv.WebhookConfigurations("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	if err := k8s.Create(ctx, mutating); err != nil {
		return nil, fmt.Errorf("creating %s: %w", mutating.Name, err)
	}
	if err := k8s.Create(ctx, validating); err != nil {
		return nil, fmt.Errorf("creating %s: %w", validating.Name, err)
	}
	srv, err := server.New(server.Options{
		WebhookHost:                    "127.0.0.1",
		WebhookPort:                    port,
		CertMode:                       server.CertModeSelfSigned,
		CASecretName:                   "flink-admission-ca",
		Namespace:                      serverNamespace,
		IPAddresses:                    []net.IP{net.IPv4(127, 0, 0, 1)},
		MutatingWebhookConfiguration:   mutating.Name,
		ValidatingWebhookConfiguration: validating.Name,
		MetricsBindAddress:             "0",
		HealthProbeBindAddress:         "0",
		LogLevel:                       "error",
		Config:                         env.Config,
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Manager.Start(wctx) }()
	stop := func() { cancel(); <-done }
	if err := waitWebhooks(ctx); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// waitWebhooks waits until the validating webhook denies a cluster with an invalid
// flinkVersion (a rule only it has): before the API server has loaded the configuration and
// trusts the injected CA bundle, writes are admitted without it or fail.
func waitWebhooks(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		fc := builder.MakeFlinkCluster("webhook-probe", "team-a").Obj()
		fc.Spec.FlinkVersion = "latest"
		last = k8s.Create(ctx, fc, &client.CreateOptions{DryRun: []string{"All"}})
		var status apierrors.APIStatus
		if errors.As(last, &status) && apierrors.IsInvalid(last) {
			for _, c := range status.Status().Details.Causes {
				if c.Field == "spec.flinkVersion" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the webhooks are not called (last: %v): %w", last, err)
	}
	return nil
}
