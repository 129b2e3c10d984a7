package certs

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxCAAttempts bounds how often ensureCA re-reads the Secret after losing a race to another
// replica. Every lost race means someone else wrote a CA, so the next read normally adopts it;
// the bound only stops a pathological fight from spinning.
const maxCAAttempts = 5

// managedByLabel marks the CA Secret as ours, for people wondering where it came from.
var managedByLabel = map[string]string{"app.kubernetes.io/managed-by": "flink-admission"}

// ensureCA returns the CA in the Secret, creating the Secret when absent and replacing the CA
// when it is unusable or has less than a third of its life left.
//
// Replicas starting at once must end up with ONE CA, so nothing is ever written blindly:
//   - creation is create-if-absent: the replica that loses gets AlreadyExists, re-reads, and
//     adopts the winner's CA;
//   - rotation is an update carrying the resourceVersion that was read (optimistic
//     concurrency): the replica that loses gets Conflict, re-reads, finds a fresh CA and adopts
//     it instead of replacing it again.
//
// Reads go to the API server, not a cache, so that a re-read after a lost race sees the winner.
func (s *SelfSignedSource) ensureCA(ctx context.Context, now time.Time) (*authority, error) {
	secrets := s.opts.Client.CoreV1().Secrets(s.opts.Namespace)
	for range maxCAAttempts {
		secret, err := secrets.Get(ctx, s.opts.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			ca, err := newAuthority(s.opts.CACommonName, now, s.opts.CADuration, nil)
			if err != nil {
				return nil, err
			}
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: s.opts.SecretName, Namespace: s.opts.Namespace, Labels: managedByLabel},
				Type:       corev1.SecretTypeTLS,
				Data:       ca.secretData(),
			}, metav1.CreateOptions{})
			switch {
			case err == nil:
				s.log.Info("created the CA secret", "secret", s.secretRef(), "serial", ca.cert.SerialNumber.String(), "notAfter", ca.cert.NotAfter)
				return ca, nil
			case apierrors.IsAlreadyExists(err):
				s.log.Info("another replica created the CA secret first; adopting its CA", "secret", s.secretRef())
				continue
			default:
				return nil, fmt.Errorf("creating the CA secret %s: %w", s.secretRef(), err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("reading the CA secret %s: %w", s.secretRef(), err)
		}

		current, parseErr := parseAuthority(secret.Data, now)
		var why string
		switch {
		case parseErr != nil:
			why = parseErr.Error()
		case NeedsRenewal(current.cert, now):
			why = fmt.Sprintf("the CA is due for renewal since %s", RenewAt(current.cert).UTC().Format(time.RFC3339))
		default:
			return current, nil
		}

		next, err := newAuthority(s.opts.CACommonName, now, s.opts.CADuration, current)
		if err != nil {
			return nil, err
		}
		updated := secret.DeepCopy()
		updated.Data = next.secretData()
		// updated keeps the resourceVersion read above: the update fails with Conflict if the
		// Secret changed since, rather than overwriting another replica's CA.
		_, err = secrets.Update(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil:
			s.log.Info("rotated the CA", "secret", s.secretRef(), "reason", why, "serial", next.cert.SerialNumber.String(), "notAfter", next.cert.NotAfter)
			return next, nil
		case apierrors.IsConflict(err):
			s.log.Info("the CA secret changed while rotating it; re-reading", "secret", s.secretRef())
			continue
		default:
			return nil, fmt.Errorf("rotating the CA in secret %s (%s): %w", s.secretRef(), why, err)
		}
	}
	return nil, errors.New("the CA secret kept changing while reconciling it; will retry")
}

func (s *SelfSignedSource) secretRef() string {
	return s.opts.Namespace + "/" + s.opts.SecretName
}
