package webhook

import (
	"errors"
	"testing"
)

func TestReadyCheck(t *testing.T) {
	certErr := errors.New("no serving certificate loaded yet")
	tests := []struct {
		name    string
		cert    func() error
		wantErr bool
	}{
		{name: "ready: certificate loaded", cert: func() error { return nil }},
		{name: "not ready: no certificate yet", cert: func() error { return certErr }, wantErr: true},
		{name: "not ready: no certificate source", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ReadyCheck(tt.cert)(nil)
			if (err != nil) != tt.wantErr {
				t.Errorf("ReadyCheck() = %v, want error %v", err, tt.wantErr)
			}
			if tt.cert != nil && tt.cert() != nil && !errors.Is(err, certErr) {
				t.Errorf("ReadyCheck() = %v, want it to wrap the certificate's error", err)
			}
		})
	}
}
