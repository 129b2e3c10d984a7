package webhook

import (
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/clusterjson"
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

// review is an AdmissionReview (v1 or v1beta1, which have the same shape) as the handlers
// read it: in one pass over the body, with the objects decoded straight into the Go type
// by package clusterjson, which keeps the API server's JSON semantics (case-sensitive
// names, the last of duplicate names wins, numbers out of range refused). Members the
// handlers do not read (userInfo, options, ...) are checked for syntax and skipped.
type review struct {
	APIVersion string
	Kind       string
	Request    *reviewRequest
}

// reviewRequest is the part of an AdmissionRequest the handlers read.
type reviewRequest struct {
	UID         types.UID
	Kind        metav1.GroupVersionKind
	Resource    metav1.GroupVersionResource
	SubResource string
	Name        string
	Namespace   string
	Operation   admissionv1.Operation
	DryRun      *bool
	Object      object
	OldObject   object
}

// object is an object of a review, decoded as a FlinkCluster, strictly: the API server
// has already pruned unknown fields from a FlinkCluster (its schema is generated from the
// same Go types), so a field the types do not know means the object is not what this
// webhook understands. Judging it would be guessing, and a patch computed from it would
// delete the field.
type object struct {
	// present is set for an object that is not absent or null.
	present bool
	fc      *v1beta1.FlinkCluster
}

// errObject marks an object that is well-formed JSON but not a FlinkCluster; it stops the
// decoding of the review there (the review is still answered, as a denial that says why).
type errObject struct {
	old bool
	err error
}

func (e *errObject) Error() string { return e.err.Error() }
func (e *errObject) Unwrap() error { return e.err }

// checkTypeMeta refuses an object of another kind or version.
func checkTypeMeta(fc *v1beta1.FlinkCluster) error {
	if fc.APIVersion != flinkClusterAPIVersion || fc.Kind != v1beta1.Kind {
		return fmt.Errorf("apiVersion %q and kind %q, want %q and %q", fc.APIVersion, fc.Kind, flinkClusterAPIVersion, v1beta1.Kind)
	}
	return nil
}

// decodeCluster decodes raw, one object, into a FlinkCluster the way the handlers decode
// the objects of a review.
func decodeCluster(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	if err := clusterjson.Unmarshal(raw, fc); err != nil {
		return nil, err
	}
	if err := checkTypeMeta(fc); err != nil {
		return nil, err
	}
	return fc, nil
}

// reviewDecoder decodes one review body.
type reviewDecoder struct {
	d *clusterjson.Decoder
	// skipOld makes the old object only checked for presence, not decoded (the mutating
	// webhook has no use for it).
	skipOld bool
	// spec records the new object's spec members, which the old object's share when
	// written the same way (see clusterjson.Sharer). Only the validating webhook decodes
	// the old object, and it never modifies the objects, so sharing is safe.
	spec clusterjson.Sharer
}

// decodeReview decodes an AdmissionReview body. It returns the review's kind (for the
// answer, which must be of the same version), the review, and, when an object is not a
// FlinkCluster, that error (the review is decoded up to the object). Any other error means
// the body is not an AdmissionReview. The decoded strings share body's memory: the caller
// must not modify body.
func decodeReview(body []byte, skipOld bool) (schema.GroupVersionKind, *review, *errObject, error) {
	rd := &reviewDecoder{d: clusterjson.NewDecoder(body, true), skipOld: skipOld}
	rv := &review{Request: &reviewRequest{}}
	err := rd.review(rv)
	if err == nil {
		err = rd.d.End()
	}
	objErr, isObjErr := errors.AsType[*errObject](err)
	if err != nil && !isObjErr {
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
	if r := rv.Request; r.UID == "" && r.Kind == (metav1.GroupVersionKind{}) && r.Resource == (metav1.GroupVersionResource{}) &&
		r.SubResource == "" && r.Name == "" && r.Namespace == "" && r.Operation == "" && r.DryRun == nil &&
		!r.Object.present && !r.OldObject.present {
		// "request": null, or no request member at all.
		rv.Request = nil
	}
	return gvk, rv, objErr, nil
}

// review decodes the review's members, as encoding/json would into its Go type (a null
// keeps a value, a duplicate merges), skipping those the handlers do not read.
func (rd *reviewDecoder) review(rv *review) error {
	d := rd.d
	if ok, err := d.Object("AdmissionReview"); !ok {
		return err
	}
	for i := 0; ; i++ {
		name, more, err := d.Member(i)
		if !more {
			return err
		}
		switch string(name) {
		case "apiVersion":
			err = d.String(&rv.APIVersion)
		case "kind":
			err = d.String(&rv.Kind)
		case "request":
			err = rd.request(rv.Request)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (rd *reviewDecoder) request(r *reviewRequest) error {
	d := rd.d
	if ok, err := d.Object("AdmissionRequest"); !ok {
		return err
	}
	for i := 0; ; i++ {
		name, more, err := d.Member(i)
		if !more {
			return err
		}
		switch string(name) {
		case "uid":
			err = d.String((*string)(&r.UID))
		case "kind":
			err = rd.triple(&r.Kind.Group, &r.Kind.Version, "kind", &r.Kind.Kind)
		case "resource":
			err = rd.triple(&r.Resource.Group, &r.Resource.Version, "resource", &r.Resource.Resource)
		case "subResource":
			err = d.String(&r.SubResource)
		case "name":
			err = d.String(&r.Name)
		case "namespace":
			err = d.String(&r.Namespace)
		case "operation":
			err = d.String((*string)(&r.Operation))
		case "dryRun":
			var null bool
			if null, err = d.Null(); null {
				r.DryRun = nil
			} else if err == nil {
				if r.DryRun == nil {
					r.DryRun = new(bool)
				}
				err = d.Bool(r.DryRun)
			}
		case "object":
			err = rd.object(&r.Object, nil)
		case "oldObject":
			err = rd.object(&r.OldObject, &r.Object)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// object decodes an object of the review; pair is, for the old object, the new one, whose
// spec members it shares when written the same way.
func (rd *reviewDecoder) object(o *object, pair *object) error {
	d := rd.d
	null, err := d.Null()
	if err != nil {
		return err
	}
	o.present, o.fc = !null, nil
	if null {
		return nil
	}
	if pair != nil && rd.skipOld {
		return d.SkipValue()
	}
	start := d.Offset()
	switch {
	case pair == nil && !rd.skipOld:
		d.Record(&rd.spec)
	case pair != nil && pair.fc != nil:
		d.Share(&rd.spec, &pair.fc.Spec)
	}
	fc := &v1beta1.FlinkCluster{}
	err = clusterjson.FlinkCluster(d, fc)
	if errors.Is(err, clusterjson.ErrShareAgain) {
		// A member taken from the new object appears twice: decode it all again.
		d.Seek(start)
		d.Plain()
		fc = &v1beta1.FlinkCluster{}
		err = clusterjson.FlinkCluster(d, fc)
	}
	d.Plain()
	if err != nil {
		if _, ok := errors.AsType[*clusterjson.SyntaxError](err); ok {
			return err
		}
		return &errObject{err: err}
	}
	if err := checkTypeMeta(fc); err != nil {
		return &errObject{err: err}
	}
	o.fc = fc
	return nil
}

// triple decodes a GroupVersionKind or GroupVersionResource: group, version and the member
// third.
func (rd *reviewDecoder) triple(group, version *string, third string, value *string) error {
	d := rd.d
	if ok, err := d.Object("metav1.GroupVersionKind"); !ok {
		return err
	}
	for i := 0; ; i++ {
		name, more, err := d.Member(i)
		if !more {
			return err
		}
		switch string(name) {
		case "group":
			err = d.String(group)
		case "version":
			err = d.String(version)
		case third:
			err = d.String(value)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return err
		}
	}
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
