package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/apiserver/printers"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// outputKind is the representation a client asked for.
type outputKind int

const (
	outObject   outputKind = iota // the object (or list) itself
	outTable                      // meta.k8s.io Table
	outMetadata                   // PartialObjectMetadata(List)
)

// output is the negotiated response format.
type output struct {
	kind      outputKind
	yaml      bool
	protobuf  bool
	tableGV   string // meta.k8s.io/v1 or meta.k8s.io/v1beta1
	includeOb metav1.IncludeObjectPolicy
}

// negotiate reads the Accept header. It fails with 406 when no offered type
// is one the server produces.
func negotiate(r *http.Request) (output, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return output{}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*", "application/yaml", protobufMediaType:
		default:
			continue
		}
		o := output{yaml: mt == "application/yaml", protobuf: mt == protobufMediaType}
		if o.protobuf && params["as"] != "" {
			continue // tables and metadata are served as JSON only
		}
		switch params["as"] {
		case "":
			return o, nil
		case "Table":
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			o.kind, o.tableGV = outTable, "meta.k8s.io/"+params["v"]
			o.includeOb = metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
			return o, nil
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			o.kind = outMetadata
			return o, nil
		}
	}
	return output{}, errNotAcceptable(accept)
}

// writeJSON writes v as JSON with the status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeOut writes v in the negotiated encoding (JSON, YAML or protobuf).
func writeOut(w http.ResponseWriter, out output, code int, v any) {
	if out.protobuf {
		if obj, ok := v.(runtime.Object); ok {
			writeProtobuf(w, code, obj)
			return
		}
	}
	if !out.yaml {
		writeJSON(w, code, v)
		return
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// render converts objects into the negotiated representation. For a single
// object (list == nil) it returns one object, Table or metadata; for a list
// it returns the list, a Table, or a PartialObjectMetadataList.
func render(res *resource.Resource, out output, objs []runtime.Object, list runtime.Object, lm metav1.ListMeta) (any, error) {
	switch out.kind {
	case outTable:
		t, err := printers.Table(printers.For(res.GVK.GroupKind()), objs, out.includeOb, time.Now())
		if err != nil {
			return nil, err
		}
		t.APIVersion = out.tableGV
		t.ResourceVersion, t.Continue, t.RemainingItemCount = lm.ResourceVersion, lm.Continue, lm.RemainingItemCount
		return t, nil
	case outMetadata:
		if list == nil {
			return partialMeta(objs[0]), nil
		}
		pl := &metav1.PartialObjectMetadataList{ListMeta: lm}
		pl.Kind, pl.APIVersion = "PartialObjectMetadataList", "meta.k8s.io/v1"
		for _, o := range objs {
			pl.Items = append(pl.Items, *partialMeta(o))
		}
		return pl, nil
	}
	if list == nil {
		return objs[0], nil
	}
	return list, nil
}

func partialMeta(obj runtime.Object) *metav1.PartialObjectMetadata {
	pm := &metav1.PartialObjectMetadata{}
	pm.Kind, pm.APIVersion = "PartialObjectMetadata", "meta.k8s.io/v1"
	if m, err := meta.Accessor(obj); err == nil {
		om := metav1.ObjectMeta{
			Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(), CreationTimestamp: m.GetCreationTimestamp(),
			DeletionTimestamp: m.GetDeletionTimestamp(), DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(),
			Labels: m.GetLabels(), Annotations: m.GetAnnotations(), OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(),
		}
		pm.ObjectMeta = om
	}
	return pm
}
