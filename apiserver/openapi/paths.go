package openapi

import (
	"fmt"
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// pathItem is one URL template and its operations.
type pathItem struct {
	Path   string
	Params []param // shared by every operation of the path
	Ops    []operation
}

// operation is one HTTP method on a path.
type operation struct {
	Method       string // lower-case: get, put, post, patch, delete
	ID           string
	Description  string
	Tag          string
	Action       string // x-kubernetes-action
	GVK          schema.GroupVersionKind
	Params       []param
	Body         *jsonSchema // request body, nil when none
	BodyOptional bool
	Consumes     []string
	Produces     []string
	Responses    []response
}

// response is one status code of an operation; Schema is nil for none.
type response struct {
	Code        int
	Description string
	Schema      *jsonSchema
}

// Media types. The object encodings listed are the ones kubebus serves;
// the patch types are the four a Kubernetes PATCH accepts (kubectl apply
// checks for strategic merge patch before computing one).
var (
	objectMedia = []string{"application/json", "application/yaml"}
	streamMedia = []string{"application/json", "application/yaml", "application/json;stream=watch"}
	logMedia    = []string{"text/plain", "application/json", "application/yaml"}
	anyMedia    = []string{"*/*"}
	patchMedia  = []string{
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
		"application/apply-patch+yaml",
	}
)

// Kinds of subresource bodies.
var (
	scaleGVK    = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	bindingGVK  = corev1.SchemeGroupVersion.WithKind("Binding")
	evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")
)

// pathBuilder turns resources into path items, registering the schemas it
// references.
type pathBuilder struct {
	reg    *registry
	params paramSets
}

func newPathBuilder(reg *registry) *pathBuilder {
	return &pathBuilder{reg: reg, params: newParamSets()}
}

func (b *pathBuilder) def(v any) *jsonSchema {
	return &jsonSchema{Ref: b.reg.define(deref(reflect.TypeOf(v)))}
}

// kind defines v's type as the schema of gvk and returns a reference to it.
func (b *pathBuilder) kind(v any, gvk schema.GroupVersionKind) *jsonSchema {
	ref := b.def(v)
	b.reg.defs[ref.Ref].addGVK(gvk)
	return ref
}

// apiResources is the discovery document path of a group-version.
func (b *pathBuilder) apiResources(gv schema.GroupVersion) pathItem {
	return pathItem{
		Path: gvPrefix(gv) + "/",
		Ops: []operation{{
			Method:      "get",
			ID:          "get" + gvCamel(gv) + "APIResources",
			Description: "get the resources of " + gvString(gv),
			Tag:         gvTag(gv),
			Consumes:    objectMedia,
			Produces:    objectMedia,
			Responses:   []response{{200, "OK", b.def(&metav1.APIResourceList{})}, unauthorized},
		}},
	}
}

var unauthorized = response{Code: 401, Description: "Unauthorized"}

// resource returns the paths of one resource: its collection, items,
// all-namespaces list, watch paths and subresources.
func (b *pathBuilder) resource(res Resource) ([]pathItem, error) {
	gvk := res.GVK
	gv := gvk.GroupVersion()
	obj := b.kind(res.Object, gvk)
	list := b.kind(res.List, gv.WithKind(gvk.Kind+"List"))
	status := b.def(&metav1.Status{})
	deleteOpts := b.def(&metav1.DeleteOptions{})
	watchEvent := b.def(&metav1.WatchEvent{})
	patch := b.def(&metav1.Patch{})

	r := names{gv: gv, kind: gvk.Kind}
	base := gvPrefix(gv)
	var scope []param
	coll := base + "/" + res.Plural
	watchColl := base + "/watch/" + res.Plural
	if res.Namespaced {
		r.scope = "Namespaced"
		scope = []param{pathParam("namespace", "object name and auth scope, such as for teams and projects")}
		coll = base + "/namespaces/{namespace}/" + res.Plural
		watchColl = base + "/watch/namespaces/{namespace}/" + res.Plural
	}
	nameParam := pathParam("name", "name of the "+gvk.Kind)
	itemParams := join([]param{nameParam}, scope)
	pretty := b.params.pretty
	p := b.params

	op := func(method, action, id, desc string, params []param) operation {
		return operation{
			Method: method, ID: id, Description: desc, Tag: gvTag(gv), Action: action, GVK: gvk,
			Params: params, Consumes: anyMedia, Produces: objectMedia,
		}
	}
	ok := func(s *jsonSchema, codes ...int) []response {
		var out []response
		for _, c := range codes {
			out = append(out, response{c, statusText(c), s})
		}
		return append(out, unauthorized)
	}

	listOp := op("get", "list", r.id("list", ""), "list or watch objects of kind "+gvk.Kind, p.list)
	listOp.Produces, listOp.Responses = streamMedia, ok(list, 200)
	createOp := op("post", "post", r.id("create", ""), "create a "+gvk.Kind, p.create)
	createOp.Body, createOp.Responses = obj, ok(obj, 200, 201, 202)
	deleteCollOp := op("delete", "deletecollection", r.collectionID(), "delete a collection of "+gvk.Kind, p.deleteCollection)
	deleteCollOp.Body, deleteCollOp.BodyOptional, deleteCollOp.Responses = deleteOpts, true, ok(status, 200)

	readOp := op("get", "get", r.id("read", ""), "read the specified "+gvk.Kind, nil)
	readOp.Responses = ok(obj, 200)
	replaceOp := op("put", "put", r.id("replace", ""), "replace the specified "+gvk.Kind, p.update)
	replaceOp.Body, replaceOp.Responses = obj, ok(obj, 200, 201)
	patchOp := op("patch", "patch", r.id("patch", ""), "partially update the specified "+gvk.Kind, p.patch)
	patchOp.Body, patchOp.Consumes, patchOp.Responses = patch, patchMedia, ok(obj, 200, 201)
	deleteOp := op("delete", "delete", r.id("delete", ""), "delete a "+gvk.Kind, p.delete)
	deleteOp.Body, deleteOp.BodyOptional, deleteOp.Responses = deleteOpts, true, ok(status, 200, 202)

	watchOp := func(action, id, desc string) operation {
		o := op("get", action, id, desc, p.list)
		o.Produces, o.Responses = streamMedia, ok(watchEvent, 200)
		return o
	}

	items := []pathItem{
		{Path: coll, Params: join(scope, []param{pretty}), Ops: []operation{listOp, createOp, deleteCollOp}},
		{Path: coll + "/{name}", Params: join(itemParams, []param{pretty}), Ops: []operation{readOp, replaceOp, patchOp, deleteOp}},
		{Path: watchColl, Params: join(scope, []param{pretty}), Ops: []operation{
			watchOp("watchlist", r.id("watch", "List"), "watch changes to a list of "+gvk.Kind),
		}},
		{Path: watchColl + "/{name}", Params: join(itemParams, []param{pretty}), Ops: []operation{
			watchOp("watch", r.id("watch", ""), "watch changes to one "+gvk.Kind),
		}},
	}
	if res.Namespaced {
		all := names{gv: gv, kind: gvk.Kind}
		listAll := op("get", "list", all.id("list", "ForAllNamespaces"), "list or watch objects of kind "+gvk.Kind+" in every namespace", p.list)
		listAll.Produces, listAll.Responses = streamMedia, ok(list, 200)
		items = append(items,
			pathItem{Path: base + "/" + res.Plural, Params: []param{pretty}, Ops: []operation{listAll}},
			pathItem{Path: base + "/watch/" + res.Plural, Params: []param{pretty}, Ops: []operation{
				watchOp("watchlist", all.id("watch", "ListForAllNamespaces"), "watch changes to objects of kind "+gvk.Kind+" in every namespace"),
			}},
		)
	}

	for _, sub := range res.Subresources {
		if sub == "" || strings.Contains(sub, "/") {
			return nil, fmt.Errorf("invalid subresource name %q", sub)
		}
		suffix := upperFirst(sub)
		item := pathItem{Path: coll + "/{name}/" + sub, Params: join(itemParams, []param{pretty})}
		switch sub {
		case "scale":
			scale := b.kind(&autoscalingv1.Scale{}, scaleGVK)
			get := op("get", "get", r.id("read", suffix), "read the scale of the specified "+gvk.Kind, nil)
			get.GVK, get.Responses = scaleGVK, ok(scale, 200)
			put := op("put", "put", r.id("replace", suffix), "replace the scale of the specified "+gvk.Kind, p.update)
			put.GVK, put.Body, put.Responses = scaleGVK, scale, ok(scale, 200, 201)
			pat := op("patch", "patch", r.id("patch", suffix), "partially update the scale of the specified "+gvk.Kind, p.patch)
			pat.GVK, pat.Body, pat.Consumes, pat.Responses = scaleGVK, patch, patchMedia, ok(scale, 200, 201)
			item.Ops = []operation{get, put, pat}
		case "binding", "eviction":
			bodyGVK, body := bindingGVK, b.kind(&corev1.Binding{}, bindingGVK)
			if sub == "eviction" {
				bodyGVK, body = evictionGVK, b.kind(&policyv1.Eviction{}, evictionGVK)
			}
			post := op("post", "post", r.id("create", suffix), "create the "+sub+" of a "+gvk.Kind, p.create)
			post.GVK, post.Body, post.Responses = bodyGVK, body, ok(body, 200, 201, 202)
			item.Ops = []operation{post}
		case "finalize":
			put := op("put", "put", r.id("replace", suffix), "replace the finalizers of the specified "+gvk.Kind, p.update)
			put.Body, put.Responses = obj, ok(obj, 200, 201)
			item.Ops = []operation{put}
		case "log":
			get := op("get", "get", r.id("read", suffix), "read the log of the specified "+gvk.Kind, p.log)
			get.Produces, get.Responses = logMedia, ok(&jsonSchema{Type: "string"}, 200)
			item.Ops = []operation{get}
		case "exec", "attach", "portforward":
			opts := map[string][]param{"exec": p.exec, "attach": p.attach, "portforward": p.portForward}[sub]
			kind := map[string]string{"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}[sub]
			for _, m := range []string{"get", "post"} {
				c := op(m, "connect", r.id("connect", suffix, upperFirst(m)), "connect "+strings.ToUpper(m)+" requests to "+sub+" of "+gvk.Kind, opts)
				c.GVK = corev1.SchemeGroupVersion.WithKind(kind)
				c.Produces, c.Responses = anyMedia, ok(&jsonSchema{Type: "string"}, 200)
				item.Ops = append(item.Ops, c)
			}
		default: // status and other views of the object itself
			get := op("get", "get", r.id("read", suffix), "read "+sub+" of the specified "+gvk.Kind, nil)
			get.Responses = ok(obj, 200)
			put := op("put", "put", r.id("replace", suffix), "replace "+sub+" of the specified "+gvk.Kind, p.update)
			put.Body, put.Responses = obj, ok(obj, 200, 201)
			pat := op("patch", "patch", r.id("patch", suffix), "partially update "+sub+" of the specified "+gvk.Kind, p.patch)
			pat.Body, pat.Consumes, pat.Responses = patch, patchMedia, ok(obj, 200, 201)
			item.Ops = []operation{get, put, pat}
		}
		items = append(items, item)
	}
	return items, nil
}

// names builds upstream-style operation IDs:
// <verb><Group><Version>[<Method>][Namespaced]<Kind><suffix>, for example
// patchAppsV1NamespacedDeploymentStatus or connectCoreV1GetNamespacedPodExec.
type names struct {
	gv    schema.GroupVersion
	scope string // "Namespaced" or ""
	kind  string
}

func (n names) id(verb, suffix string, method ...string) string {
	return verb + gvCamel(n.gv) + strings.Join(method, "") + n.scope + n.kind + suffix
}

func (n names) collectionID() string {
	return "delete" + gvCamel(n.gv) + "Collection" + n.scope + n.kind
}

// join concatenates parameter lists into a new slice, so path items never
// share a backing array.
func join(lists ...[]param) []param {
	var out []param
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 201:
		return "Created"
	case 202:
		return "Accepted"
	}
	return fmt.Sprint(code)
}

// gvPrefix is the URL prefix of a group-version: /api/v1 or /apis/<g>/<v>.
func gvPrefix(gv schema.GroupVersion) string {
	return "/" + gvKey(gv)
}

// gvKey names a group-version in the v3 index: api/v1 or apis/<g>/<v>.
func gvKey(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func gvString(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core/" + gv.Version
	}
	return gv.String()
}

// groupWords splits a group into the words of its camel-case form:
// "" -> core, rbac.authorization.k8s.io -> rbac, authorization.
func groupWords(group string) []string {
	g := strings.TrimSuffix(group, ".k8s.io")
	if g == "" {
		return []string{"core"}
	}
	return strings.FieldsFunc(g, func(r rune) bool { return r == '.' || r == '-' })
}

// gvCamel is the group-version part of operation IDs: CoreV1, AppsV1,
// RbacAuthorizationV1.
func gvCamel(gv schema.GroupVersion) string {
	var s strings.Builder
	for _, w := range groupWords(gv.Group) {
		s.WriteString(upperFirst(w))
	}
	s.WriteString(upperFirst(gv.Version))
	return s.String()
}

// gvTag is the operation tag: core_v1, apps_v1, rbacAuthorization_v1.
func gvTag(gv schema.GroupVersion) string {
	var s strings.Builder
	for i, w := range groupWords(gv.Group) {
		if i == 0 {
			s.WriteString(w)
		} else {
			s.WriteString(upperFirst(w))
		}
	}
	return s.String() + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
