package flinkclient

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// seedTestdata adds every testdata answer to a fuzz corpus.
func seedTestdata(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
}

// FuzzApplication decodes arbitrary bytes as an application: an error or a value whose job
// counts agree with its job list, never a panic.
func FuzzApplication(f *testing.F) {
	seedTestdata(f)
	f.Add([]byte(`{"id":"a","jobs":{"RUNNING":1}}`))
	f.Add([]byte(`{"id":"a","jobs":[{"jid":"b","state":"FAILED"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a Application
		if err := json.Unmarshal(data, &a); err != nil {
			return
		}
		if a.Jobs != nil {
			n := 0
			for _, c := range a.JobCounts {
				n += c
			}
			if n != len(a.Jobs) {
				t.Fatalf("%d jobs counted, %d listed", n, len(a.Jobs))
			}
		}
	})
}

// FuzzExceptions decodes arbitrary bytes as an exception history: sorted newest first.
func FuzzExceptions(f *testing.F) {
	seedTestdata(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var b exceptionsBody
		if err := json.Unmarshal(data, &b); err != nil {
			return
		}
		list := b.list()
		for i := 1; i < len(list); i++ {
			if list[i-1].Timestamp < list[i].Timestamp {
				t.Fatalf("not newest first: %v", list)
			}
		}
		_ = Summary(list)
	})
}

// FuzzCheckpoints decodes arbitrary bytes as checkpoint statistics: a savepoint offered for
// restore always has a usable path.
func FuzzCheckpoints(f *testing.F) {
	seedTestdata(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Checkpoints
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		if sp := c.LatestSavepoint(); sp != nil && (sp.ExternalPath == "" || sp.ExternalPath == NotExternallyAddressable || sp.Discarded) {
			t.Fatalf("unusable savepoint offered: %+v", sp)
		}
	})
}
