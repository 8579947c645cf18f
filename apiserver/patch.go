package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// Limits on JSON patches, upstream's: a patch of more operations is
// refused before it is applied, and one whose copy operations would add
// more bytes than maxJSONPatchCopyBytes fails while being applied, so
// that doubling an array with copies costs megabytes, not gigabytes.
// Merge and strategic merge patches cannot grow an object by more than
// their own size, which readBody caps at maxBodyBytes.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 << 20
	// maxEchoedPatchBytes is the longest patch a 422 quotes back.
	maxEchoedPatchBytes = 4 << 10
)

func init() {
	// The library's copy limit is process-wide: it has no per-call
	// option. Upstream sets the same variable at start-up; only ever
	// lower it, so that a stricter limit set elsewhere stands.
	if l := jsonpatch.AccumulatedCopySizeLimit; l <= 0 || l > maxJSONPatchCopyBytes {
		jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
	}
}

// patchRequest is a parsed PATCH.
type patchRequest struct {
	typ       types.PatchType
	body      []byte
	directive string
}

func parsePatch(r *http.Request) (patchRequest, error) {
	directive, err := fieldValidation(r)
	if err != nil {
		return patchRequest{}, err
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return patchRequest{}, errUnsupportedMediaType(ct)
	}
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
	default:
		return patchRequest{}, statusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("the patch content type %q is not one of application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml", ct))
	}
	body, err := readBody(r)
	if err != nil {
		return patchRequest{}, err
	}
	return patchRequest{typ: pt, body: body, directive: directive}, nil
}

// checkPatchValues refuses an add, replace or test operation without a
// value (RFC 6902 requires one), which json-patch v4 dereferences as nil.
func checkPatchValues(p jsonpatch.Patch) error {
	for i, op := range p {
		switch kind := op.Kind(); kind {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok {
				return fmt.Errorf("operation %d (%s) has no value", i, kind)
			}
		}
	}
	return nil
}

// applyJSONPatch applies p, turning a panic of the library on input it
// did not expect into an error of the patch.
func applyJSONPatch(p jsonpatch.Patch, current []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the patch cannot be applied: %v", r)
		}
	}()
	return p.Apply(current)
}

// applyPatch applies a patch to the JSON of an object, using schemaObj
// (a zero value of the Go type) for strategic merge patches.
func applyPatch(pr patchRequest, current []byte, schemaObj any) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch pr.typ {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(pr.body); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch is not a valid JSON patch: %v", err))
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		if err = checkPatchValues(p); err == nil {
			out, err = applyJSONPatch(p, current)
		}
	case types.MergePatchType:
		if !json.Valid(pr.body) {
			return nil, apierrors.NewBadRequest("the patch is not valid JSON")
		}
		out, err = jsonpatch.MergePatch(current, pr.body)
	case types.StrategicMergePatchType:
		var patchMap map[string]any
		if err = json.Unmarshal(pr.body, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch is not valid JSON: %v", err))
		}
		{
			var curMap map[string]any
			if err = json.Unmarshal(current, &curMap); err == nil {
				var merged map[string]any
				merged, err = strategicpatch.StrategicMergeMapPatch(curMap, patchMap, schemaObj)
				if err == nil {
					out, err = json.Marshal(merged)
				}
			}
		}
	default:
		// Server-side apply is served by apply; scale does not take it.
		return nil, statusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("the patch content type %q is not supported here", pr.typ))
	}
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return nil, err
		}
		// The patch is the invalid value; one too long to read back is left out.
		var bad any = string(pr.body)
		if len(pr.body) > maxEchoedPatchBytes {
			bad = field.OmitValueType{}
		}
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), bad, err.Error())})
	}
	return out, nil
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource, sub resource.Subresource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	pr, err := parsePatch(r)
	if err != nil {
		return err
	}
	if res.Custom() && pr.typ == types.StrategicMergePatchType {
		// As upstream: a custom resource has no Go struct to take patch
		// strategies from.
		return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType))
	}
	if pr.typ == types.ApplyYAMLPatchType {
		return s.apply(w, r, ri, res, sub, pr, isDryRun, out)
	}
	var warnings []string
	result, err := s.guaranteedUpdate(r.Context(), res, ri.Namespace, ri.Name, string(sub), isDryRun, func(cur runtime.Object) (runtime.Object, error) {
		curJSON, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(pr, curJSON, res.New())
		if err != nil {
			return nil, err
		}
		obj := res.New()
		warnings, err = decodeJSON(patched, obj, pr.directive)
		if err != nil {
			return nil, err
		}
		if err := checkTypeMeta(res, obj); err != nil {
			return nil, err
		}
		more, err := pruneUnknown(res, obj, pr.directive)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, more...)
		m, _ := meta.Accessor(obj)
		cm, _ := meta.Accessor(cur)
		if m.GetResourceVersion() == cm.GetResourceVersion() {
			// The patch did not pin a version: it applies to whatever is current.
			m.SetResourceVersion("")
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	v, err := render(res, out, []runtime.Object{result.obj}, nil, listMetaOf(result.obj))
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusOK, v)
	return nil
}
