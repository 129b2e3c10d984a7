package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// referenceDecode decodes raw with the decoder the API server and controller-runtime use,
// sigs.k8s.io/json, strictly: case-sensitive names, the last of duplicate names wins,
// unknown fields are errors (duplicates are reported too, but as the object still decodes
// with the last value, they are not).
func referenceDecode(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	strict, err := sigsjson.UnmarshalStrict(raw, fc, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	for _, e := range strict {
		if !strings.Contains(e.Error(), "duplicate field") {
			return nil, e
		}
	}
	if err := checkTypeMeta(fc); err != nil {
		return nil, err
	}
	return fc, nil
}

// decodeCases are inputs where decoders are known to differ from encoding/json's
// semantics: each must decode (or fail) as with the reference decoder.
var decodeCases = map[string]string{
	"duplicate name, last wins":          `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.14","flinkVersion":"1.20"}}`,
	"duplicate object merges":            `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"image":{"name":"a"},"image":{"pullPolicy":"Always"}}}`,
	"duplicate map merges":               `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"a":"1"},"flinkProperties":{"b":"2"}}}`,
	"name in another case":               `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","Spec":{}}`,
	"unknown field":                      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"nope":1}}`,
	"int32 out of range":                 `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":2147483648}}}`,
	"int32 negative out of range":        `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":-2147483649}}}`,
	"int64 out of range":                 `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"terminationGracePeriodSeconds":9223372036854775808}}}`,
	"fraction for an integer":            `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":1.5}}}`,
	"exponent for an integer":            `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":1e2}}}`,
	"null for a struct":                  `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":null}`,
	"string for a number":                `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":"3"}}}`,
	"quantity":                           `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"memoryOffHeapMin":"600M"}}}`,
	"bad quantity":                       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"memoryOffHeapMin":"lots"}}}`,
	"time":                               `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z"}}`,
	"escaped name":                       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","\u0073pec":{}}`,
	"invalid UTF-8 in a string":          "{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkCluster\",\"spec\":{\"flinkVersion\":\"\xff\"}}",
	"lone surrogate":                     `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"\ud800"}}`,
	"trailing data":                      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster"} {}`,
	"wrong kind":                         `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkSession"}`,
	"bool for a string":                  `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":true}}`,
	"int-or-string":                      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"tcpSocket":{"port":"rpc"}}}}}`,
	"duplicate name, null last":          `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.14","flinkVersion":null}}`,
	"duplicate struct, null last":        `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"image":{"name":"a"},"image":null}}`,
	"duplicate list, shorter last":       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"envVars":[{"name":"A"},{"name":"B"}],"envVars":[{"name":"C"}]}}`,
	"duplicate list element merges":      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"envVars":[{"name":"A"}],"envVars":[{"value":"v"}]}}`,
	"unknown field in a list of structs": `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"envVars":[{"name":"A","x":1}]}}`,
	"duplicate list, longer last":        `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"envVars":[{"name":"A"},{"name":"B"},{"name":"C"}],"envVars":[{"value":"x"}],"envVars":[{},{},{},{"name":"D"}]}}`,
	"duplicate list, empty last":         `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"envVars":[{"name":"A"}],"envVars":[]}}`,
	"duplicate pointer merges":           `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"periodSeconds":3}},"jobManager":{"livenessProbe":{"timeoutSeconds":4}}}}`,
	"int-or-string number":               `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"tcpSocket":{"port":6123}}}}}`,
	"int-or-string null after a string":  `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"tcpSocket":{"port":"rpc","port":null}}}}}`,
	"int-or-string fraction":             `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"tcpSocket":{"port":1.5}}}}}`,
	"int-or-string bool":                 `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"livenessProbe":{"tcpSocket":{"port":true}}}}}`,
	"time null after a time":             `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","creationTimestamp":null}}`,
	"time escaped":                       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"creationTimestamp":"2026-01-02T03:04:05\u005a"}}`,
	"time number":                        `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"creationTimestamp":5}}`,
	"quantity number":                    `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"memoryOffHeapMin":600}}}`,
	"quantity null after a value":        `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"memoryOffHeapMin":"1Gi","memoryOffHeapMin":null}}}`,
	"quantity escaped":                   `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"memoryOffHeapMin":"1G\u0069"}}}`,
	"resource list":                      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"jobManager":{"resources":{"limits":{"cpu":"1","cpu":"2"},"requests":{"memory":" 1Gi "}}}}}`,
	"escapes and a surrogate pair":       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}}`,
	"bad escape":                         `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"\x"}}`,
	"control character in a string":      "{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkCluster\",\"spec\":{\"flinkVersion\":\"a\tb\"}}",
	"escaped map key":                    `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"a\u002fb":"1","\u00e9":"2"}}}`,
	"negative zero and exponent sign":    `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":-0},"job":{"parallelism":1E+0}}}`,
	"leading zero":                       `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":01}}}`,
	"trailing comma":                     `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.20",}}`,
	"missing colon":                      `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion" "1.20"}}`,
	"truncated":                          `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.2`,
	"white space everywhere":             " \t\r\n{ \"apiVersion\" : \"flinkoperator.k8s.io/v1beta1\" , \"kind\":\"FlinkCluster\", \"spec\" : { \"envVars\" : [ { \"name\" : \"A\" } , { } ] } } \n",
	"deep nesting in managed fields":     `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"managedFields":[{"fieldsV1":{"f:a":{"f:b":[[[{}]]]}}}]}}`,
}

// TestDecodeLikeReference checks the decoder against the reference decoder on the inputs
// where JSON decoders are known to differ, and on every benchmark object.
func TestDecodeLikeReference(t *testing.T) {
	cases := map[string][]byte{}
	for name, s := range decodeCases {
		cases[name] = []byte(s)
	}
	for name, objs := range benchObjects(t) {
		cases[name] = objs[0]
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) { compareDecoders(t, raw) })
	}
}

// FuzzDecodeCluster is the differential test of the decoder: on any input, it decodes
// exactly what the reference decoder decodes, and refuses exactly what it refuses.
func FuzzDecodeCluster(f *testing.F) {
	for _, s := range decodeCases {
		f.Add([]byte(s))
	}
	for _, objs := range benchObjects(f) {
		f.Add(objs[0])
	}
	f.Add(mustJSON(jobCluster()))
	f.Add(mustJSON(deploymentCluster()))
	f.Fuzz(compareDecoders)
}

func compareDecoders(t *testing.T, raw []byte) {
	want, wantErr := referenceDecode(raw)
	got, gotErr := decodeCluster(raw)
	switch {
	case wantErr != nil && gotErr == nil:
		t.Fatalf("decoded %q, which the reference refuses: %v", raw, wantErr)
	case wantErr == nil && gotErr != nil:
		t.Fatalf("refused %q, which the reference decodes: %v", raw, gotErr)
	case wantErr == nil && !equality.Semantic.DeepEqual(want, got):
		t.Fatalf("decoded %q differently (-reference +ours):\n%s", raw, cmp.Diff(want, got))
	}
}

// TestDecodeOldLikeReference checks that the old object of every benchmark UPDATE review,
// decoded with the members it shares with the new one, is what the reference decoder
// makes of it alone.
func TestDecodeOldLikeReference(t *testing.T) {
	for name, objs := range benchObjects(t) {
		if objs[1] != nil {
			t.Run(name, func(t *testing.T) { compareOld(t, objs[0], objs[1]) })
		}
	}
}

// FuzzDecodeOld is the differential test of the old object's decoding, which takes from
// the new object the spec members written the same way (clusterjson.Sharer): whatever the
// two objects of an UPDATE, the old one decodes exactly as the reference decoder decodes
// it alone, and the new one is left as it was.
func FuzzDecodeOld(f *testing.F) {
	for _, objs := range benchObjects(f) {
		if objs[1] != nil {
			f.Add(objs[0], objs[1])
		}
	}
	d := mustJSON(deploymentCluster())
	f.Add(d, mustJSON(set(deploymentCluster(), "spec.taskManager.replicas", int64(4))))
	f.Add(d, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.14","flinkVersion":"1.20"}}`))
	f.Add(d, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"image":{"name":"a"},"image":null}}`))
	f.Add(d, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"\u0069mage":{"name":"a"}}}`))
	// A member taken from the new object, then repeated: merging must not modify the new one.
	r := []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"a":"1"},"taskManager":{"replicas":1}}}`)
	f.Add(r, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"a":"1"},"flinkProperties":{"b":"2"}}}`))
	// A number written as the new one's, followed by more digits.
	f.Add(r, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"taskManager":{"replicas":1}}}`))
	f.Add([]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"revisionHistoryLimit":1}}`),
		[]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"revisionHistoryLimit":12}}`))
	// A duplicate member in the new object: its bytes are not its value.
	f.Add([]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"a":"1"},"flinkProperties":{"b":"2"}}}`),
		[]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkProperties":{"b":"2"}}}`))
	// Two specs in the new object.
	f.Add([]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"flinkVersion":"1.20"},"spec":{"image":{"name":"a"}}}`),
		[]byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":{"image":{"name":"a"}}}`))
	f.Fuzz(compareOld)
}

func compareOld(t *testing.T, newRaw, oldRaw []byte) {
	wantNew, err := referenceDecode(newRaw)
	if err != nil || strings.TrimSpace(string(oldRaw)) == "null" {
		return
	}
	want, wantErr := referenceDecode(oldRaw)
	body := []byte(`{"request":{"uid":"u","object":` + string(newRaw) + `,"oldObject":` + string(oldRaw) + `}}`)
	_, rv, objErr, err := decodeReview(body, false)
	switch {
	case wantErr == nil && (err != nil || objErr != nil):
		t.Fatalf("refused the old object %q, which the reference decodes: %v %v", oldRaw, err, objErr)
	case wantErr != nil && err == nil && objErr == nil:
		t.Fatalf("decoded the old object %q, which the reference refuses: %v", oldRaw, wantErr)
	case wantErr == nil && !equality.Semantic.DeepEqual(want, rv.Request.OldObject.fc):
		t.Fatalf("decoded the old object %q differently (-reference +ours):\n%s", oldRaw, cmp.Diff(want, rv.Request.OldObject.fc))
	case err == nil && !equality.Semantic.DeepEqual(wantNew, rv.Request.Object.fc):
		// Sharing members must never modify the new object.
		t.Fatalf("decoding the old object %q changed the new one (-reference +ours):\n%s", oldRaw, cmp.Diff(wantNew, rv.Request.Object.fc))
	}
}

// benchObjects returns the objects of each benchmark review as sent: the object and the
// old object (nil on create).
func benchObjects(tb testing.TB) map[string][2][]byte {
	tb.Helper()
	out := map[string][2][]byte{}
	for name, body := range benchReviews(tb) {
		var rv struct {
			Request struct{ Object, OldObject json.RawMessage }
		}
		if err := json.Unmarshal(body, &rv); err != nil {
			tb.Fatal(err)
		}
		out[name] = [2][]byte{rv.Request.Object, rv.Request.OldObject}
	}
	return out
}
