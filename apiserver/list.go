package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// selection is what a list or watch asks for.
type selection struct {
	labels labels.Selector
	fields fields.Selector
	// everything is true when neither selector restricts anything.
	everything bool
}

func (sel selection) matches(res *resource.Resource, obj runtime.Object) bool {
	if sel.everything {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return sel.fields.Empty() || sel.fields.Matches(res.FieldSet(obj))
}

// parseSelection takes the label and field selectors of decoded
// ListOptions and checks that every field the selector names is one the
// resource supports.
func parseSelection(res *resource.Resource, opts *metainternalversion.ListOptions) (selection, error) {
	ls, fs := opts.LabelSelector, opts.FieldSelector
	if ls == nil {
		ls = labels.Everything()
	}
	if fs == nil {
		fs = fields.Everything()
	}
	if !fs.Empty() {
		known := res.FieldSet(res.New())
		for _, req := range fs.Requirements() {
			if _, ok := known[req.Field]; !ok {
				names := make([]string, 0, len(known))
				for k := range known {
					names = append(names, fmt.Sprintf("%q", k))
				}
				sort.Strings(names)
				return selection{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (supported: %s)", req.Field, strings.Join(names, ", ")))
			}
		}
	}
	return selection{labels: ls, fields: fs, everything: ls.Empty() && fs.Empty()}, nil
}

// continueToken is the opaque continue value of a paginated list.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	Start      string `json:"start"`
}

func encodeContinue(rev int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &t)
	}
	if err != nil || t.APIVersion != "meta.k8s.io/v1" || t.Revision <= 0 || strings.Contains(t.Start, "..") {
		return t, apierrors.NewBadRequest("continue key is not valid")
	}
	return t, nil
}

// listRequest is a parsed list.
type listRequest struct {
	sel      selection
	limit    int64
	revision int64  // 0: newest
	start    string // key to start at
}

// parseListRequest reads a list's query (also a deletecollection's) as
// upstream does; a limit of zero or less lists everything.
func parseListRequest(res *resource.Resource, r *http.Request, prefix string) (listRequest, error) {
	opts, err := listOptions(r.URL.Query(), false)
	if err != nil {
		return listRequest{}, err
	}
	sel, err := parseSelection(res, opts)
	if err != nil {
		return listRequest{}, err
	}
	lr := listRequest{sel: sel}
	if opts.Limit > 0 {
		lr.limit = opts.Limit
	}
	rv := opts.ResourceVersion
	if opts.Continue != "" {
		if rv != "" && rv != "0" {
			return lr, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		tok, err := decodeContinue(opts.Continue)
		if err != nil {
			return lr, err
		}
		lr.revision, lr.start = tok.Revision, prefix+tok.Start
		return lr, nil
	}
	if rv != "" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil || n < 0 {
			return lr, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
		}
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			lr.revision = n
		}
	}
	return lr, nil
}

// listObjects reads the objects under prefix that match, paginated.
func (s *Server) listObjects(ctx context.Context, res *resource.Resource, prefix string, lr listRequest) ([]runtime.Object, metav1.ListMeta, error) {
	var objs []runtime.Object
	rev, start := lr.revision, lr.start
	pageSize := lr.limit
	if pageSize > 0 && !lr.sel.everything && pageSize < 500 {
		pageSize = 500
	}
	for {
		page, err := s.store.List(ctx, prefix, start, rev, pageSize)
		if err != nil {
			if lr.start != "" {
				return nil, metav1.ListMeta{}, apierrors.NewResourceExpired("the provided continue parameter is too old to display a consistent list result; start a new list without the continue parameter")
			}
			return nil, metav1.ListMeta{}, storageError(err, res.GroupResource(), "")
		}
		rev = page.Revision
		for i, kv := range page.KVs {
			obj, err := decodeStored(res, kv)
			if err != nil {
				return nil, metav1.ListMeta{}, err
			}
			if !lr.sel.matches(res, obj) {
				continue
			}
			objs = append(objs, obj)
			if lr.limit > 0 && int64(len(objs)) == lr.limit {
				if i < len(page.KVs)-1 || page.More {
					lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10), Continue: encodeContinue(rev, strings.TrimPrefix(kv.Key, prefix)+"\x00")}
					return objs, lm, nil
				}
			}
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		start = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
	return objs, metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	prefix := prefixFor(res, ri.Namespace)
	lr, err := parseListRequest(res, r, prefix)
	if err != nil {
		return err
	}
	objs, lm, err := s.listObjects(r.Context(), res, prefix, lr)
	if err != nil {
		return err
	}
	list, err := newList(res, objs, lm)
	if err != nil {
		return err
	}
	v, err := render(res, out, objs, list, lm)
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusOK, v)
	return nil
}

// newList builds the typed list object.
func newList(res *resource.Resource, objs []runtime.Object, lm metav1.ListMeta) (runtime.Object, error) {
	list := res.NewList()
	if err := meta.SetList(list, objs); err != nil {
		return nil, fmt.Errorf("building %s list: %w", res.GVK.Kind, err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	list.GetObjectKind().SetGroupVersionKind(res.GVK.GroupVersion().WithKind(res.GVK.Kind + "List"))
	return list, nil
}

func listMetaOf(obj runtime.Object) metav1.ListMeta {
	if m, err := meta.Accessor(obj); err == nil {
		return metav1.ListMeta{ResourceVersion: m.GetResourceVersion()}
	}
	return metav1.ListMeta{}
}
