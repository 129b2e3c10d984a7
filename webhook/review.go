package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

var (
	// flinkClusterKind is the only kind the webhooks admit.
	flinkClusterKind = v1beta1.GroupVersion.WithKind(v1beta1.Kind)
	// flinkClusterResource is the only resource the webhooks admit.
	flinkClusterResource = v1beta1.GroupVersion.WithResource(v1beta1.Resource)
	// flinkClusterGroupKind names the object in a denial's status.
	flinkClusterGroupKind = schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: v1beta1.Kind}
	// flinkClusterAPIVersion is the apiVersion an admitted object must carry.
	flinkClusterAPIVersion = v1beta1.GroupVersion.String()
)

// reviewKind is the kind of an admission review body.
const reviewKind = "AdmissionReview"

// decodeOptions are the API server's JSON semantics (those of sigs.k8s.io/json, which it
// decodes with), in the decoder this package uses, which is several times faster than
// encoding/json: field names are case-sensitive (the decoder's default), the last of
// duplicate names wins and merges into the earlier value as encoding/json does (a later
// null keeps it), and invalid UTF-8 is replaced rather than refused. Integers out of their
// type's range, and numbers with a fraction for an integer, are errors in both. The
// differential fuzz test FuzzDecodeCluster holds the two decoders to the same results.
var decodeOptions = json.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv1.MergeWithLegacySemantics(true),
)

// strictOptions add to decodeOptions the refusal of unknown fields, for the objects: the
// API server has already pruned unknown fields from a FlinkCluster (its schema is
// generated from the same Go types), so a field the types do not know means the object is
// not what this webhook understands. Judging it would be guessing, and a patch computed
// from it would delete the field.
var strictOptions = json.JoinOptions(decodeOptions, json.RejectUnknownMembers(true))

// review is an AdmissionReview (v1 or v1beta1, which have the same shape) as the handlers
// read it: in one pass over the body, with the objects decoded straight into the Go type.
// Members the handlers do not read (userInfo, options, ...) are skipped, not stored.
type review struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Request    *reviewRequest `json:"request"`
}

// reviewRequest is the part of an AdmissionRequest the handlers read.
type reviewRequest struct {
	UID         types.UID                   `json:"uid"`
	Kind        metav1.GroupVersionKind     `json:"kind"`
	Resource    metav1.GroupVersionResource `json:"resource"`
	SubResource string                      `json:"subResource"`
	Name        string                      `json:"name"`
	Namespace   string                      `json:"namespace"`
	Operation   admissionv1.Operation       `json:"operation"`
	DryRun      *bool                       `json:"dryRun"`
	Object      object                      `json:"object"`
	OldObject   object                      `json:"oldObject"`
}

// object is an object of a review. It decodes itself as a FlinkCluster, strictly; when
// that fails, the error is kept (the review is still answered, as a denial that says why)
// and the rest of the body is not read.
type object struct {
	// present is set for an object that is not absent or null.
	present bool
	fc      *v1beta1.FlinkCluster
	// skip makes the object only checked for presence, not decoded (the mutating webhook
	// has no use for the old object).
	skip bool
	// raw is the object's JSON, a part of body.
	raw []byte
	// body is the review body being decoded.
	body []byte
	// pair is, for the old object, the new one: what decodeOld shares members with.
	pair *object
}

// errObject marks an object that is well-formed JSON but not a FlinkCluster; it stops the
// decoding of the review there.
type errObject struct {
	old bool
	err error
}

func (e *errObject) Error() string { return e.err.Error() }
func (e *errObject) Unwrap() error { return e.err }

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (o *object) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		o.present, o.fc = false, nil
		return err
	}
	o.present = true
	if o.skip {
		return dec.SkipValue()
	}
	start := dec.InputOffset()
	if o.pair != nil && o.pair.fc != nil && o.pair.raw != nil {
		fc, err := decodeOld(dec, o.body, o.pair.raw, o.pair.fc)
		if err != nil {
			var objErr *errObject
			if errors.As(err, &objErr) {
				return err
			}
			var syntax *jsontext.SyntacticError
			if errors.As(err, &syntax) {
				return err
			}
			return &errObject{err: err}
		}
		o.fc = fc
		return nil
	}
	fc := &v1beta1.FlinkCluster{}
	base := dec.StackPointer()
	if err := json.UnmarshalDecode(dec, fc, strictOptions); err != nil {
		var syntax *jsontext.SyntacticError
		if errors.As(err, &syntax) {
			return err
		}
		return &errObject{err: objectError(err, base)}
	}
	if err := checkTypeMeta(fc); err != nil {
		return &errObject{err: err}
	}
	o.fc = fc
	if o.body != nil {
		o.raw = bytes.TrimLeft(o.body[start:dec.InputOffset()], " \t\r\n:")
	}
	return nil
}

// objectError words a decoding error of an object at base for a message: an unknown
// field is named by its path in the object, as the API server names it.
func objectError(err error, base jsontext.Pointer) error {
	var sem *json.SemanticError
	if !errors.As(err, &sem) || !errors.Is(sem.Err, json.ErrUnknownName) {
		return err
	}
	rel := jsontext.Pointer(strings.TrimPrefix(string(sem.JSONPointer), string(base)))
	return fmt.Errorf("unknown field %q", strings.Join(slices.Collect(rel.Tokens()), "."))
}

// checkTypeMeta refuses an object of another kind or version.
func checkTypeMeta(fc *v1beta1.FlinkCluster) error {
	if fc.APIVersion != flinkClusterAPIVersion || fc.Kind != v1beta1.Kind {
		return fmt.Errorf("apiVersion %q and kind %q, want %q and %q", fc.APIVersion, fc.Kind, flinkClusterAPIVersion, v1beta1.Kind)
	}
	return nil
}

// decodeCluster decodes raw, one object, into a FlinkCluster the way the handlers decode
// the objects of a review: strictly, with the API server's JSON semantics.
func decodeCluster(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(raw, fc, strictOptions); err != nil {
		return nil, objectError(err, "")
	}
	if err := checkTypeMeta(fc); err != nil {
		return nil, err
	}
	return fc, nil
}

// decodeReview decodes an AdmissionReview body. It returns the review's kind (for the
// answer, which must be of the same version), the review, and, when an object is not a
// FlinkCluster, that error (the review is decoded up to the object). Any other error means
// the body is not an AdmissionReview.
func decodeReview(body []byte, skipOld bool) (schema.GroupVersionKind, *review, *errObject, error) {
	rv := &review{Request: &reviewRequest{OldObject: object{skip: skipOld}}}
	if !skipOld {
		// The validating webhook decodes the old object sharing what it has in common
		// with the new one (see decodeOld).
		rv.Request.Object.body = body
		rv.Request.OldObject.body, rv.Request.OldObject.pair = body, &rv.Request.Object
	}
	err := json.Unmarshal(body, rv, decodeOptions)
	var objErr *errObject
	if err != nil && !errors.As(err, &objErr) {
		return schema.GroupVersionKind{}, nil, nil, err
	}
	if objErr != nil {
		// Which object failed: the new one is decoded before the old one in every review
		// the API server sends, but a hand-made body may order them either way.
		objErr.old = rv.Request.Object.present && rv.Request.Object.fc != nil
	}
	gvk, err := reviewGVK(rv)
	if err != nil {
		return schema.GroupVersionKind{}, nil, nil, err
	}
	if r := rv.Request; r != nil && r.UID == "" && r.Kind == (metav1.GroupVersionKind{}) && r.Resource == (metav1.GroupVersionResource{}) &&
		r.SubResource == "" && r.Name == "" && r.Namespace == "" && r.Operation == "" && r.DryRun == nil &&
		!r.Object.present && !r.OldObject.present {
		// "request": null, or no request member at all.
		rv.Request = nil
	}
	return gvk, rv, objErr, nil
}

// reviewGVK returns the kind of the review, refusing anything but an AdmissionReview of
// admission.k8s.io/v1 or v1beta1. A missing apiVersion or kind is taken from v1, as
// controller-runtime's decoder does.
func reviewGVK(rv *review) (schema.GroupVersionKind, error) {
	gv := admissionv1.SchemeGroupVersion
	if rv.APIVersion != "" {
		parsed, err := schema.ParseGroupVersion(rv.APIVersion)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		gv = parsed
	}
	kind := rv.Kind
	if kind == "" {
		kind = reviewKind
	}
	if kind != reviewKind || (gv != admissionv1.SchemeGroupVersion && gv != admissionv1beta1.SchemeGroupVersion) {
		return schema.GroupVersionKind{}, fmt.Errorf("the body is a %s %s, not an AdmissionReview of %s or %s",
			gv, kind, admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion)
	}
	return gv.WithKind(kind), nil
}
