package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// decodeCluster is the tests' reference decoding of one object, written from the rules
// rather than from the handlers' code: sigs.k8s.io/json, strictly (case-sensitive names,
// unknown fields and duplicate names are errors), and a FlinkCluster of
// flinkoperator.k8s.io/v1beta1 only.
func decodeCluster(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	strict, err := sigsjson.UnmarshalStrict(raw, fc, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, strict[0]
	}
	if fc.APIVersion != "flinkoperator.k8s.io/v1beta1" || fc.Kind != "FlinkCluster" {
		return nil, &json.UnsupportedValueError{Str: fc.APIVersion + " " + fc.Kind}
	}
	return fc, nil
}

// decodeCases are objects where JSON decoders are known to differ from encoding/json's
// semantics, or that are not JSON at all.
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

// TestObjectErrorAnswers posts each decoding case as the object of a CREATE, and as the
// old object of an UPDATE, to both webhooks: an object the reference decoding refuses is
// denied with code 400 and says which object is not a FlinkCluster; one it decodes is
// judged (never refused as undecodable); a body that is no JSON is a 400 HTTP answer.
func TestObjectErrorAnswers(t *testing.T) {
	for name, raw := range decodeCases {
		t.Run(name, func(t *testing.T) { checkObjectAnswer(t, []byte(raw)) })
	}
	for name, objs := range benchObjects(t) {
		t.Run(name, func(t *testing.T) { checkObjectAnswer(t, objs[0]) })
	}
}

// FuzzObjectAnswer is the same check on random objects.
func FuzzObjectAnswer(f *testing.F) {
	for _, s := range decodeCases {
		f.Add([]byte(s))
	}
	for _, objs := range benchObjects(f) {
		f.Add(objs[0])
	}
	f.Add(mustJSON(jobCluster()))
	f.Add(mustJSON(deploymentCluster()))
	f.Fuzz(checkObjectAnswer)
}

func checkObjectAnswer(t *testing.T, raw []byte) {
	_, refErr := decodeCluster(raw)
	valid := mustJSON(jobCluster())
	for _, c := range []struct {
		name string
		h    http.Handler
		body []byte
		// msg is the refusal of an object that does not decode.
		msg string
	}{
		{"validate/create", testHandlers.Validate, reviewWithObjects("CREATE", raw, nil), msgObjectUndecodableFmt},
		{"mutate/create", testHandlers.Mutate, reviewWithObjects("CREATE", raw, nil), msgObjectUndecodableFmt},
		{"validate/update old", testHandlers.Validate, reviewWithObjects("UPDATE", valid, raw), msgOldUndecodableFmt},
	} {
		a := post(t, c.h, c.body)
		if !json.Valid(c.body) {
			if a.code != http.StatusBadRequest {
				t.Fatalf("%s: a body that is not JSON got HTTP %d, want 400: %s", c.name, a.code, a.body)
			}
			continue
		}
		if strings.TrimSpace(string(raw)) == "null" {
			continue // no object: TestFailClosed
		}
		resp := a.response(t)
		refused := !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusBadRequest &&
			strings.HasPrefix(resp.Result.Message, strings.TrimSuffix(c.msg, "%v"))
		switch {
		case a.code != http.StatusOK:
			t.Fatalf("%s: HTTP %d for a review, want 200: %s", c.name, a.code, a.body)
		case refErr != nil && !refused:
			t.Fatalf("%s: %q, which does not decode (%v), got %s", c.name, raw, refErr, a.body)
		case refErr == nil && refused:
			t.Fatalf("%s: %q decodes, but was refused: %s", c.name, raw, resp.Result.Message)
		}
	}
}

// reviewWithObjects writes a review of a FlinkCluster with the objects as given, byte for
// byte.
func reviewWithObjects(op string, object, old []byte) []byte {
	b := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"` + op + `",` +
		`"kind":{"group":"flinkoperator.k8s.io","version":"v1beta1","kind":"FlinkCluster"},` +
		`"resource":{"group":"flinkoperator.k8s.io","version":"v1beta1","resource":"flinkclusters"},"object":` + string(object)
	if old != nil {
		b += `,"oldObject":` + string(old)
	}
	return []byte(b + `}}`)
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

// TestDecodeReviewObjects checks the validating webhook's one-pass decoding: a review the
// API server sends is decoded with its objects, exactly as decodeReview and decodeObject
// decode it; any other review is left to those two (the other tests check their answers),
// and one with a member the review does not define is still judged.
func TestDecodeReviewObjects(t *testing.T) {
	valid, other := mustJSON(jobCluster()), mustJSON(set(jobCluster(), "spec.flinkVersion", "1.20"))
	for name, body := range map[string][]byte{
		"create":                              reviewWithObjects("CREATE", valid, nil),
		"update":                              reviewWithObjects("UPDATE", other, valid),
		"typical validate update (benchmark)": benchReviews(t)["typical-validate-update"],
		"typical validate create (benchmark)": benchReviews(t)["typical-validate-create"],
	} {
		t.Run("one pass: "+name, func(t *testing.T) {
			var got admission.Request
			gvk, ok := decodeReviewObjects(body, &got)
			require.True(t, ok, "the review was not decoded in one pass")
			var want admission.Request
			wantGVK, err := decodeReview(body, &want)
			require.NoError(t, err)
			assert.Equal(t, wantGVK, gvk)
			for _, o := range []struct {
				name      string
				got, want runtime.RawExtension
			}{{"object", got.Object, want.Object}, {"old object", got.OldObject, want.OldObject}} {
				if o.want.Raw == nil {
					assert.Nil(t, o.got.Object, "%s: none was sent", o.name)
					continue
				}
				fc, err := decodeCluster(o.want.Raw)
				require.NoError(t, err)
				assert.Equal(t, fc, o.got.Object, o.name)
			}
			got.Object, got.OldObject, want.Object, want.OldObject = runtime.RawExtension{}, runtime.RawExtension{}, runtime.RawExtension{}, runtime.RawExtension{}
			assert.Equal(t, want, got, "the review's other members")
		})
	}
	unknownInReview := strings.Replace(string(reviewWithObjects("CREATE", valid, nil)), `"uid":"u",`, `"uid":"u","future":1,`, 1)
	for name, body := range map[string]string{
		"a member the review does not define": unknownInReview,
		"a name twice in the review":          strings.Replace(string(reviewWithObjects("CREATE", valid, nil)), `"uid":"u",`, `"uid":"x","uid":"u",`, 1),
		"no request":                          `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
		"a null object":                       string(reviewWithObjects("CREATE", []byte("null"), nil)),
		"an object with an unknown field":     string(reviewWithObjects("CREATE", mustJSON(set(jobCluster(), "spec.unknown", true)), nil)),
		"a name twice in an object's map": string(reviewWithObjects("CREATE",
			[]byte(strings.Replace(string(valid), `"flinkProperties":{`, `"flinkProperties":{"a":"1","a":"2",`, 1)), nil)),
		"a name twice in an old object's spec": string(reviewWithObjects("UPDATE", valid,
			[]byte(strings.Replace(string(valid), `"spec":{`, `"spec":{"flinkVersion":"1.14",`, 1)))),
		"a name escaped and not": string(reviewWithObjects("CREATE",
			[]byte(strings.Replace(string(valid), `"spec":{`, `"\u0073pec":{},"spec":{`, 1)), nil)),
		"an old object of another kind": string(reviewWithObjects("UPDATE", valid, mustJSON(set(jobCluster(), "kind", "Pod")))),
		"a malformed old object":        string(reviewWithObjects("UPDATE", valid, []byte(`{"spec":[`))),
		"another review version":        strings.Replace(string(reviewWithObjects("CREATE", valid, nil)), "admission.k8s.io/v1", "admission.k8s.io/v2", 1),
	} {
		t.Run("left to decodeReview: "+name, func(t *testing.T) {
			_, ok := decodeReviewObjects([]byte(body), &admission.Request{})
			assert.False(t, ok)
		})
	}
	t.Run("a member the review does not define is ignored", func(t *testing.T) {
		resp := post(t, testHandlers.Validate, []byte(unknownInReview)).response(t)
		assert.True(t, resp.Allowed, "%+v", resp.Result)
	})
}
