package apiserver

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Query parameters are read as upstream's handlers read them: apimachinery's
// parameter codec converts the query into the verb's options type (a bool
// is false only for "0" or "false" in any case, so watch=True and watch=1
// both watch; a bad integer is a 400), then the options are validated with
// apimachinery's validation (a bad value is a 422 naming the field).

// decodeParams converts a query into opts, answering 400 on a value the
// codec cannot convert.
func decodeParams(q url.Values, opts runtime.Object) error {
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// invalidOptions is upstream's 422 for options that fail validation.
func invalidOptions(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// listOptions reads the query of a list or, with watch, of a watch (also
// one whose path, not its query, says so).
func listOptions(q url.Values, watch bool) (*metainternalversion.ListOptions, error) {
	opts := &metainternalversion.ListOptions{}
	if err := decodeParams(q, opts); err != nil {
		return nil, err
	}
	opts.Watch = opts.Watch || watch
	if errs := metainternalvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, invalidOptions("ListOptions", errs)
	}
	return opts, nil
}

// isWatch reports whether a GET of a collection is a watch. Upstream's
// request-info parsing decodes the whole ListOptions and, when the query
// does not decode, falls back to the first watch value; both paths read
// watch with the codec's bool rule (queryBool), so that rule alone gives
// the same answer without parsing the selectors twice.
func isWatch(q url.Values) bool {
	return queryBool(q, "watch")
}

// decodeValid decodes a query into opts and validates them with validate.
func decodeValid(q url.Values, opts runtime.Object, kind string, validate func() field.ErrorList) error {
	if err := decodeParams(q, opts); err != nil {
		return err
	}
	if errs := validate(); len(errs) > 0 {
		return invalidOptions(kind, errs)
	}
	return nil
}

// checkWriteOptions decodes and validates the query of a create, update or
// patch (the verb's options type), as upstream does before reading the body.
func checkWriteOptions(r *http.Request, verb string) error {
	q := r.URL.Query()
	switch verb {
	case "create":
		opts := &metav1.CreateOptions{}
		return decodeValid(q, opts, "CreateOptions", func() field.ErrorList { return metav1validation.ValidateCreateOptions(opts) })
	case "update":
		opts := &metav1.UpdateOptions{}
		return decodeValid(q, opts, "UpdateOptions", func() field.ErrorList { return metav1validation.ValidateUpdateOptions(opts) })
	case "patch":
		pt := types.PatchType(mediaTypeOf(r.Header.Get("Content-Type")))
		switch pt {
		case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		default:
			return nil // other content types get upstream's 415 from the handler first
		}
		opts := &metav1.PatchOptions{}
		return decodeValid(q, opts, "PatchOptions", func() field.ErrorList { return metav1validation.ValidatePatchOptions(opts, pt) })
	}
	return nil
}

// validateDeleteOptions is upstream's check of DeleteOptions, body or query.
func validateDeleteOptions(opts *metav1.DeleteOptions) error {
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return invalidOptions("DeleteOptions", errs)
	}
	return nil
}

// maxRequestTimeout is upstream's default --request-timeout: the longest a
// request that is not long-running (a watch, pods/log) may take.
const maxRequestTimeout = 60 * time.Second

// requestTimeout reads the timeout query parameter (a Go duration, as
// client-go's rest.Config.Timeout sends it) as upstream's request-deadline
// filter does: a bad value is a 400; zero, none or more than the maximum
// means the maximum.
func requestTimeout(q url.Values) (time.Duration, error) {
	v := q.Get("timeout")
	if v == "" {
		return maxRequestTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, apierrors.NewBadRequest("invalid timeout specified in the request URL - " + err.Error())
	}
	if d <= 0 || d > maxRequestTimeout {
		return maxRequestTimeout, nil
	}
	return d, nil
}

// mediaTypeOf is the media type of a Content-Type header without parameters.
func mediaTypeOf(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
