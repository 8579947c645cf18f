package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// maxBodyBytes caps request bodies, as upstream's MaxRequestBodyBytes
// does (3 MiB): every write's body, patches of all three types included,
// is read through readBody.
const maxBodyBytes = 3 << 20

// Storage encoding: the versioned object with apiVersion and kind, without
// resourceVersion (the etcd mod revision is the resourceVersion). Pods are
// stored in Kubernetes' protobuf envelope, as upstream stores them: they
// are the most written objects, and protobuf is about half the bytes of
// JSON and several times faster to encode and decode, which etcd, the
// bus's streams and every informer pay per revision. Every other kind is
// stored as JSON. The bus republishes the stored bytes as they are; a
// reader decodes either (internal/storedobj), so values written before a
// kind changed encoding still read. Config.StorageMediaType (the
// --storage-media-type flag) writes pods as JSON too, for a cluster whose
// other members are older than this encoding.

// keyFor returns the etcd key of one object.
func keyFor(res *resource.Resource, ns, name string) string {
	return prefixFor(res, ns) + name
}

// prefixFor returns the key prefix of a resource, narrowed to a namespace
// when ns is set. It always ends in "/".
func prefixFor(res *resource.Resource, ns string) string {
	g := res.GVK.Group
	if g == "" {
		g = "core"
	}
	p := "/registry/" + g + "/" + res.Plural + "/"
	if res.Namespaced && ns != "" {
		p += ns + "/"
	}
	return p
}

// Storage media types (Config.StorageMediaType), upstream's
// --storage-media-type values.
const (
	StorageProtobuf = protobufMediaType
	StorageJSON     = "application/json"
)

// encodeForStorage serialises obj for etcd.
func (s *Server) encodeForStorage(res *resource.Resource, obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	m.SetSelfLink("")
	setTypeMeta(res, obj)
	var data []byte
	if s.cfg.StorageMediaType == StorageProtobuf && storedAsProtobuf(res) {
		data, err = storedobj.EncodeProtobuf(obj, res.GVK)
	} else {
		data, err = json.Marshal(obj)
	}
	m.SetResourceVersion(rv)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", res.GVK.Kind, err)
	}
	return data, nil
}

// storedAsProtobuf reports whether res's objects are stored in protobuf.
func storedAsProtobuf(res *resource.Resource) bool {
	return res.GVK.Group == "" && res.GVK.Version == "v1" && res.GVK.Kind == "Pod"
}

// decodeStored turns a stored value into an object with its resourceVersion.
func decodeStored(res *resource.Resource, kv storage.KV) (runtime.Object, error) {
	obj := res.New()
	if err := storedobj.Decode(kv.Value, obj); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", kv.Key, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	setTypeMeta(res, obj)
	return obj, nil
}

func setTypeMeta(res *resource.Resource, obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
}

// readBody reads a request body up to the cap.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	switch {
	case errors.Is(err, errBodyTimeout):
		return nil, statusError(http.StatusRequestTimeout, metav1.StatusReasonTimeout, err.Error())
	case err != nil:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// isProtobuf reports whether the request body is a Kubernetes protobuf envelope.
func isProtobuf(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == protobufMediaType
}

type protoUnmarshaler interface{ Unmarshal([]byte) error }

// decodeProtobuf decodes a protobuf envelope (magic, runtime.Unknown) into obj.
func decodeProtobuf(body []byte, obj runtime.Object) error {
	if !storedobj.IsProtobuf(body) {
		return apierrors.NewBadRequest("the protobuf body does not start with the Kubernetes envelope prefix")
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(body[len(storedobj.Magic):]); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the protobuf envelope could not be decoded: %v", err))
	}
	u, ok := obj.(protoUnmarshaler)
	if !ok {
		return errUnsupportedMediaType(protobufMediaType)
	}
	if err := u.Unmarshal(unk.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the protobuf body could not be decoded: %v", err))
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(unk.APIVersion, unk.Kind))
	return nil
}

// decodeRequest decodes a write's body (JSON, YAML or protobuf) into obj,
// honouring the fieldValidation directive for JSON and YAML.
func decodeRequest(r *http.Request, body []byte, obj runtime.Object, directive string) ([]string, error) {
	if isProtobuf(r) {
		return nil, decodeProtobuf(body, obj)
	}
	data, err := bodyToJSON(r, body)
	if err != nil {
		return nil, err
	}
	return decodeJSON(data, obj, directive)
}

// bodyToJSON converts a JSON or YAML body to JSON according to its content type.
func bodyToJSON(r *http.Request, body []byte) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		mt, _, err = mime.ParseMediaType(ct)
		if err != nil {
			return nil, errUnsupportedMediaType(ct)
		}
	}
	switch mt {
	case "application/json", "*/*":
		return body, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		out, err := yaml.YAMLToJSONStrict(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml: %v", err))
		}
		return out, nil
	default:
		return nil, errUnsupportedMediaType(ct)
	}
}

// decodeJSON decodes data into obj honouring the fieldValidation directive
// (Strict, Warn or Ignore). It returns warnings for Warn.
func decodeJSON(data []byte, obj any, directive string) ([]string, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	if len(strictErrs) == 0 {
		return nil, nil
	}
	msgs := make([]string, 0, len(strictErrs))
	for _, e := range strictErrs {
		msgs = append(msgs, e.Error())
	}
	switch directive {
	case metav1.FieldValidationStrict:
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	case metav1.FieldValidationWarn:
		return msgs, nil
	default:
		return nil, nil
	}
}

// fieldValidation returns the request's directive: Strict, Warn (the
// default) or Ignore. dispatch has validated the query (checkWriteOptions).
func fieldValidation(r *http.Request) (string, error) {
	if v := r.URL.Query().Get("fieldValidation"); v != "" {
		return v, nil
	}
	return metav1.FieldValidationWarn, nil
}

// dryRun reports whether the request asks for dryRun=All (the only value
// checkWriteOptions lets through).
func dryRun(r *http.Request) (bool, error) {
	return len(r.URL.Query()["dryRun"]) > 0, nil
}

// checkTypeMeta rejects a body whose apiVersion or kind is not the resource's.
func checkTypeMeta(res *resource.Resource, obj runtime.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != res.GVK.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, res.GVK.Kind))
	}
	if av := obj.GetObjectKind().GroupVersionKind().GroupVersion().String(); (gvk.Version != "" || gvk.Group != "") && av != res.GVK.GroupVersion().String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", av, res.GVK.GroupVersion().String()))
	}
	return nil
}
