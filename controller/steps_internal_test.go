package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The steps of a reconcile run in order; a failed step's error names it (and keeps its cause
// for errors.Is), and ends the run but for the steps that run after a failure; a step that
// records first ends the run without failing, but for the steps that keep the record true.
func TestStepsRunInOrderUntilOneFailsOrRecordsFirst(t *testing.T) {
	var ran []string
	mk := func(name string, err error, afterRecordFirst, afterFailure bool) step {
		return step{name: name, run: func(*cycle, context.Context) error {
			ran = append(ran, name)
			return err
		}, afterRecordFirst: afterRecordFirst, afterFailure: afterFailure}
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		wantRan []string
		wantErr string
	}{
		{"all run", []step{mk("a", nil, false, false), mk("b", nil, false, false)}, []string{"a", "b"}, ""},
		{"a failure ends the run but for the steps after failures",
			[]step{mk("a", fs.ErrNotExist, false, false), mk("b", nil, true, false), mk("c", nil, true, true)},
			[]string{"a", "c"}, "a: file does not exist"},
		{"recording first ends the run, not failing, but for the steps that keep the record true",
			[]step{mk("a", fmt.Errorf("deploy: %w", errRecordFirst), false, false), mk("b", nil, false, false), mk("c", nil, true, false)},
			[]string{"a", "c"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			err := runSteps(t.Context(), nil, tc.steps)
			assert.Equal(t, tc.wantRan, ran)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.wantErr)
			assert.True(t, errors.Is(err, fs.ErrNotExist), "the cause is kept")
		})
	}
}
