package apiserver

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// pretty indents JSON: ?pretty=true, a pretty=1 media type parameter,
	// or a browser, curl or wget user agent, as upstream.
	pretty bool
	// gzip compresses responses over gzipThreshold for a client whose
	// Accept-Encoding lists gzip.
	gzip bool
}

// The media types the server produces, in upstream's order of preference:
// a wildcard picks the first.
var servedMediaTypes = []struct{ typ, sub string }{
	{"application", "json"}, {"application", "yaml"}, {"application", "vnd.kubernetes.protobuf"},
}

// negotiate reads the Accept header as upstream's content negotiation
// does: clauses by descending quality and specificity, each tried against
// the served types in order; the first combination whose parameters the
// server can honour wins. A type whose most specific clause has q=0 is
// refused even where a wildcard would take it (RFC 9110). No Accept header
// means JSON; an Accept header nothing matches is a 406.
func negotiate(r *http.Request) (output, error) {
	base := output{pretty: prettyPrint(r), gzip: acceptsGzip(r)}
	accept := r.Header.Get("Accept")
	if accept == "" {
		return base, nil
	}
	clauses := goautoneg.ParseAccept(accept)
	refused := refusedMediaTypes(clauses)
	for _, clause := range clauses {
		if clause.Q <= 0 {
			continue
		}
		for i, mt := range servedMediaTypes {
			if refused[i] || specificity(clause, mt.typ, mt.sub) < 0 {
				continue
			}
			if o, ok := mediaTypeOutput(base, mt.sub, clause.Params, r); ok {
				return o, nil
			}
		}
	}
	return output{}, errNotAcceptable(accept)
}

// refusedMediaTypes reports, per served type, whether its most specific
// matching clause has q=0.
func refusedMediaTypes(clauses []goautoneg.Accept) []bool {
	refused := make([]bool, len(servedMediaTypes))
	for i, mt := range servedMediaTypes {
		best := -1
		for _, c := range clauses {
			if spec := specificity(c, mt.typ, mt.sub); spec > best {
				best, refused[i] = spec, c.Q <= 0
			}
		}
	}
	return refused
}

// specificity ranks how a clause matches a type: 2 exactly, 1 by type/*,
// 0 by */*, -1 not at all.
func specificity(c goautoneg.Accept, typ, sub string) int {
	switch {
	case c.Type == typ && c.SubType == sub:
		return 2
	case c.Type == typ && c.SubType == "*":
		return 1
	case c.Type == "*" && c.SubType == "*":
		return 0
	}
	return -1
}

// mediaTypeOutput applies an Accept clause's parameters to the served type
// sub (a subtype of application). ok is false when the server cannot honour
// them: a conversion it does not make, a stream other than watch, a server
// version.
func mediaTypeOutput(o output, sub string, params map[string]string, r *http.Request) (output, bool) {
	o.yaml, o.protobuf = sub == "yaml", sub == "vnd.kubernetes.protobuf"
	var as, g, v string
	for k, val := range params {
		switch k {
		case "as":
			as = val
		case "g":
			g = val
		case "v":
			v = val
		case "stream":
			if val != "" && val != "watch" {
				return o, false
			}
		case "sv":
			if val != "" {
				return o, false
			}
		case "pretty":
			o.pretty = o.pretty || val == "1"
		}
	}
	if as == "" && g == "" && v == "" {
		return o, true
	}
	if g != metav1.GroupName || (v != "v1" && v != "v1beta1") {
		return o, false
	}
	switch as {
	case "Table":
		if o.protobuf {
			return o, false // upstream serves tables as JSON or YAML only
		}
		o.kind, o.tableGV = outTable, metav1.GroupName+"/"+v
		o.includeOb = metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
		return o, true
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		if o.protobuf {
			return o, false // served as JSON or YAML here
		}
		o.kind = outMetadata
		return o, true
	}
	return o, false
}

// prettyPrint is upstream's rule: the pretty query parameter when given
// (strconv.ParseBool), else whether the user agent is a browser, curl or wget.
func prettyPrint(r *http.Request) bool {
	if pp := r.URL.Query().Get("pretty"); pp != "" {
		b, _ := strconv.ParseBool(pp)
		return b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// acceptsGzip is upstream's reading of Accept-Encoding: one of the
// comma-separated codings is exactly gzip.
func acceptsGzip(r *http.Request) bool {
	for _, coding := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(coding) == "gzip" {
			return true
		}
	}
	return false
}

// gzipThreshold is upstream's: smaller responses are not worth compressing.
const gzipThreshold = 128 << 10

// writeJSON writes v as JSON with the status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	writeOut(w, output{}, code, v)
}

// writeNegotiated negotiates the request's output and writes v in it.
func writeNegotiated(w http.ResponseWriter, r *http.Request, code int, v any) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	writeOut(w, out, code, v)
	return nil
}

// writeOut writes v in the negotiated encoding (JSON, YAML or protobuf),
// indented when pretty and compressed when large and the client takes gzip.
func writeOut(w http.ResponseWriter, out output, code int, v any) {
	var (
		data []byte
		ct   = "application/json"
		err  error
	)
	obj, isObj := v.(runtime.Object)
	switch {
	case out.protobuf && isObj:
		if data, err = encodeProtobuf(obj); err == nil {
			ct = protobufMediaType
		} else {
			data, err = json.Marshal(v) // a type without a protobuf form
		}
	case out.yaml:
		data, err = yaml.Marshal(v)
		ct = "application/yaml"
	case out.pretty:
		data, err = json.MarshalIndent(v, "", "  ")
	default:
		data, err = json.Marshal(v)
	}
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	if !out.gzip || len(data) <= gzipThreshold {
		w.WriteHeader(code)
		_, _ = w.Write(data)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Add("Vary", "Accept-Encoding")
	w.WriteHeader(code)
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return // only for a bad level
	}
	_, _ = zw.Write(data)
	_ = zw.Close()
}

// render converts objects into the negotiated representation. For a single
// object (list == nil) it returns one object, Table or metadata; for a list
// it returns the list, a Table, or a PartialObjectMetadataList.
func render(res *resource.Resource, out output, objs []runtime.Object, list runtime.Object, lm metav1.ListMeta) (any, error) {
	switch out.kind {
	case outTable:
		switch out.includeOb {
		case metav1.IncludeNone, metav1.IncludeObject, metav1.IncludeMetadata, "":
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", out.includeOb))
		}
		t, err := printers.Table(printerFor(res), objs, out.includeOb, time.Now())
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

// printerFor returns the table printer of res: its own columns (a custom
// resource's additionalPrinterColumns), else the built-in printer of its kind.
func printerFor(res *resource.Resource) printers.Printer {
	if res.Cells != nil {
		return printers.Printer{Columns: res.Columns, Cells: res.Cells}
	}
	return printers.For(res.GVK.GroupKind())
}
