package openapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	protovalidation "k8s.io/kube-openapi/pkg/util/proto/validation"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// newServer serves the test documents and returns a discovery client for it.
func newServer(t *testing.T) (*httptest.Server, *discovery.DiscoveryClient) {
	t.Helper()
	r := chi.NewRouter()
	mustBuild(t).Register(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return srv, dc
}

// field follows references down to an object and returns its named field.
func field(t *testing.T, s proto.Schema, name string) proto.Schema {
	t.Helper()
	for {
		switch v := s.(type) {
		case proto.Reference:
			s = v.SubSchema()
			continue
		case *proto.Array:
			s = v.SubType
			continue
		case *proto.Kind:
			f, ok := v.Fields[name]
			if !ok {
				t.Fatalf("%s has no field %q (fields %v)", v.GetPath(), name, v.Keys())
			}
			return f
		default:
			t.Fatalf("%s: cannot take field %q of %T", s.GetPath(), name, s)
		}
	}
}

// TestV2Protobuf reads /openapi/v2 the way kubectl does (client-go's
// OpenAPISchema asks for protobuf) and walks the parsed models.
func TestV2Protobuf(t *testing.T) {
	t.Parallel()
	_, dc := newServer(t)
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	deploy := models.LookupModel("io.k8s.api.apps.v1.Deployment")
	if deploy == nil {
		t.Fatal("no model io.k8s.api.apps.v1.Deployment")
	}
	gvks, _ := deploy.GetExtensions()[extGVK].([]any)
	if len(gvks) != 1 {
		t.Errorf("Deployment %s = %v, want one entry", extGVK, deploy.GetExtensions()[extGVK])
	}

	tests := []struct {
		path                []string
		strategy, mergeKey  string
		wantType, wantDescr string
	}{
		{path: []string{"spec", "template", "spec", "containers"}, strategy: "merge", mergeKey: "name", wantType: "array"},
		{path: []string{"spec", "template", "spec", "containers", "ports"}, strategy: "merge", mergeKey: "containerPort", wantType: "array"},
		{path: []string{"spec", "template", "spec", "volumes"}, strategy: "merge,retainKeys", mergeKey: "name", wantType: "array"},
		{path: []string{"spec", "strategy"}, strategy: "retainKeys"},
		{path: []string{"spec", "replicas"}, wantType: "integer", wantDescr: "Number of desired pods"},
		{path: []string{"metadata", "creationTimestamp"}, wantType: "string"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "."), func(t *testing.T) {
			t.Parallel()
			s := proto.Schema(deploy)
			for _, name := range tt.path {
				s = field(t, s, name)
			}
			ext := s.GetExtensions()
			if got, _ := ext[extPatchStrategy].(string); got != tt.strategy {
				t.Errorf("%s = %q, want %q", extPatchStrategy, got, tt.strategy)
			}
			if got, _ := ext[extPatchMergeKey].(string); got != tt.mergeKey {
				t.Errorf("%s = %q, want %q", extPatchMergeKey, got, tt.mergeKey)
			}
			if tt.wantType != "" {
				if r, ok := s.(proto.Reference); ok {
					s = r.SubSchema()
				}
				typ := ""
				switch v := s.(type) {
				case *proto.Array:
					typ = "array"
				case *proto.Primitive:
					typ = v.Type
				}
				if typ != tt.wantType {
					t.Errorf("type %q (%T), want %q", typ, s, tt.wantType)
				}
			}
			if !strings.Contains(s.GetDescription(), tt.wantDescr) {
				t.Errorf("description %q does not contain %q", s.GetDescription(), tt.wantDescr)
			}
		})
	}

	// kubectl apply's v2 fallback computes strategic merge patches from
	// these models.
	patch, err := strategicpatch.CreateThreeWayMergePatch(
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`),
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:2"},{"name":"b","image":"y:1"}]}}}}`),
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`),
		strategicpatch.NewPatchMetaFromOpenAPI(deploy), false)
	if err != nil {
		t.Fatalf("strategic merge patch from v2 models: %v", err)
	}
	if want := `"name":"a"`; !strings.Contains(string(patch), want) || strings.Contains(string(patch), "y:1") {
		t.Errorf("patch %s should carry container a by merge key and leave b out", patch)
	}
}

// lookupKind finds the model of a kind by its GVK extension, as kubectl's
// openapi.Resources does.
func lookupKind(models proto.Models, gvk schema.GroupVersionKind) proto.Schema {
	for _, name := range models.ListModels() {
		m := models.LookupModel(name)
		list, _ := m.GetExtensions()[extGVK].([]any)
		for _, e := range list {
			g, _ := e.(map[any]any)
			if g["group"] == gvk.Group && g["version"] == gvk.Version && g["kind"] == gvk.Kind {
				return m
			}
		}
	}
	return nil
}

// TestV2ClientValidation runs kubectl's client-side validation (the v2
// fallback used when the server does not validate fields) on manifests.
func TestV2ClientValidation(t *testing.T) {
	t.Parallel()
	_, dc := newServer(t)
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}, creationTimestamp: "2024-01-02T03:04:05Z"}
spec:
  replicas: %s
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "25%%", maxUnavailable: 1}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - %s
        image: nginx
        resources: {limits: {cpu: 500m, memory: 1Gi}}
        ports: [{containerPort: 80}]
`
	tests := []struct {
		name     string
		manifest string
		wantErr  string
	}{
		{"valid", fmt.Sprintf(deployment, "3", "name: web"), ""},
		{"unknown field", fmt.Sprintf(deployment, "3", "name: web\n        imagePolicy: Always"), "imagePolicy"},
		{"missing required", fmt.Sprintf(deployment, "3", "tty: true"), "name"},
		{"wrong type", fmt.Sprintf(deployment, `"three"`, "name: web"), "replicas"},
		{"pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], nodeSelector: {a: b}}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tt.manifest), &obj); err != nil {
				t.Fatal(err)
			}
			gv, err := schema.ParseGroupVersion(obj["apiVersion"].(string))
			if err != nil {
				t.Fatal(err)
			}
			model := lookupKind(models, gv.WithKind(obj["kind"].(string)))
			if model == nil {
				t.Fatalf("no model for %v %v", obj["apiVersion"], obj["kind"])
			}
			errs := protovalidation.ValidateModel(obj, model, obj["kind"].(string))
			if tt.wantErr == "" {
				if len(errs) > 0 {
					t.Errorf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), tt.wantErr) {
				t.Errorf("errors %v, want one about %q", errs, tt.wantErr)
			}
		})
	}
}

// servedGVKs are the kinds testResources serves.
var servedGVKs = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Pod"),
	corev1.SchemeGroupVersion.WithKind("Namespace"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
}

func opGVK(op *spec3.Operation) schema.GroupVersionKind {
	var m map[string]string
	if err := op.Extensions.GetObject(extGVK, &m); err != nil || m == nil {
		return schema.GroupVersionKind{}
	}
	return schema.GroupVersionKind{Group: m["group"], Version: m["version"], Kind: m["kind"]}
}

// TestV3Documents reads the index and every group-version document with
// client-go's openapi3 root, as kubectl does, and checks what kubectl's
// field-validation verifier (cli-runtime query_param_verifier_v3.go) and
// apply's patcher look for.
func TestV3Documents(t *testing.T) {
	t.Parallel()
	_, dc := newServer(t)
	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatalf("GroupVersions: %v", err)
	}
	slices.SortFunc(gvs, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	if want := []schema.GroupVersion{appsv1.SchemeGroupVersion, corev1.SchemeGroupVersion}; !slices.Equal(gvs, want) {
		t.Errorf("group versions %v, want %v", gvs, want)
	}

	for _, gv := range gvs {
		t.Run(gv.String()+"/refs", func(t *testing.T) {
			raw, err := root.GVSpecAsMap(gv)
			if err != nil {
				t.Fatal(err)
			}
			schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
			n := 0
			walkRefs(raw, func(ref string) {
				n++
				name, ok := strings.CutPrefix(ref, v3DefPrefix)
				if _, found := schemas[name]; !ok || !found {
					t.Errorf("$ref %q does not resolve", ref)
				}
			})
			if n == 0 {
				t.Error("no $ref found")
			}
		})
	}

	for _, gvk := range servedGVKs {
		t.Run(gvk.Kind+"/patch", func(t *testing.T) {
			doc, err := root.GVSpec(gvk.GroupVersion())
			if err != nil {
				t.Fatal(err)
			}
			// kubectl stops at the first PATCH it finds for the kind, in
			// map order, so every one of them must pass.
			patches := 0
			for path, item := range doc.Paths.Paths {
				op := item.Patch
				if op == nil || opGVK(op) != gvk {
					continue
				}
				patches++
				if !slices.ContainsFunc(op.Parameters, func(p *spec3.Parameter) bool {
					return p.Name == "fieldValidation" && p.In == "query"
				}) {
					t.Errorf("PATCH %s has no fieldValidation query parameter", path)
				}
				if op.RequestBody == nil || op.RequestBody.Content["application/strategic-merge-patch+json"] == nil {
					t.Errorf("PATCH %s does not accept strategic merge patch", path)
				}
			}
			if patches == 0 {
				t.Fatal("no PATCH operation for the kind")
			}

			// kubectl apply finds the kind's schema by its GVK extension
			// and computes a strategic merge patch from it.
			var kind *spec.Schema
			for _, s := range doc.Components.Schemas {
				var list []map[string]string
				if s.Extensions.GetObject(extGVK, &list) == nil && slices.ContainsFunc(list, func(m map[string]string) bool {
					return m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind
				}) {
					kind = s
				}
			}
			if kind == nil {
				t.Fatal("no component schema carries the kind's GVK")
			}
			meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: kind, SchemaList: doc.Components.Schemas}
			if _, err := strategicpatch.CreateThreeWayMergePatch(
				[]byte(`{"metadata":{"labels":{"a":"1"}}}`),
				[]byte(`{"metadata":{"labels":{"a":"2"},"finalizers":["x"]}}`),
				[]byte(`{"metadata":{"labels":{"a":"1"}}}`), meta, false); err != nil {
				t.Errorf("strategic merge patch from v3: %v", err)
			}
		})
	}

	t.Run("containers merge by name", func(t *testing.T) {
		doc, err := root.GVSpec(appsv1.SchemeGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		meta := strategicpatch.PatchMetaFromOpenAPIV3{
			Schema:     doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"],
			SchemaList: doc.Components.Schemas,
		}
		patch, err := strategicpatch.CreateThreeWayMergePatch(
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`),
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:2"},{"name":"b","image":"y:1"}]}}}}`),
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`),
			meta, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(patch), "$setElementOrder/containers") {
			t.Errorf("patch %s is not a list merge by key", patch)
		}
	})
}

func walkRefs(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				fn(s)
			} else {
				walkRefs(e, fn)
			}
		}
	case []any:
		for _, e := range v {
			walkRefs(e, fn)
		}
	}
}

// TestOperations checks paths, operation IDs, actions and kinds against
// the upstream conventions.
func TestOperations(t *testing.T) {
	t.Parallel()
	d := mustBuild(t)
	docs := map[string]*spec3.OpenAPI{}
	for key, g := range d.groups {
		var doc spec3.OpenAPI
		if err := json.Unmarshal(g.json.data, &doc); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		docs[key] = &doc
	}
	const (
		nsDeploy = "/apis/apps/v1/namespaces/{namespace}/deployments"
		nsPods   = "/api/v1/namespaces/{namespace}/pods"
	)
	tests := []struct {
		doc, path, method string
		id, action, kind  string
		params            []string // query parameters that must be on the operation
		absent            []string // and must not
	}{
		{"apis/apps/v1", "/apis/apps/v1/", "get", "getAppsV1APIResources", "", "", nil, nil},
		{"apis/apps/v1", nsDeploy, "get", "listAppsV1NamespacedDeployment", "list", "Deployment",
			[]string{"labelSelector", "fieldSelector", "watch", "resourceVersion", "limit", "continue", "timeoutSeconds", "allowWatchBookmarks"}, nil},
		{"apis/apps/v1", nsDeploy, "post", "createAppsV1NamespacedDeployment", "post", "Deployment",
			[]string{"dryRun", "fieldManager", "fieldValidation"}, nil},
		{"apis/apps/v1", nsDeploy, "delete", "deleteAppsV1CollectionNamespacedDeployment", "deletecollection", "Deployment",
			[]string{"labelSelector", "gracePeriodSeconds", "propagationPolicy", "dryRun"}, []string{"watch", "allowWatchBookmarks"}},
		{"apis/apps/v1", nsDeploy + "/{name}", "get", "readAppsV1NamespacedDeployment", "get", "Deployment", nil, nil},
		{"apis/apps/v1", nsDeploy + "/{name}", "put", "replaceAppsV1NamespacedDeployment", "put", "Deployment",
			[]string{"dryRun", "fieldManager", "fieldValidation"}, nil},
		{"apis/apps/v1", nsDeploy + "/{name}", "patch", "patchAppsV1NamespacedDeployment", "patch", "Deployment",
			[]string{"dryRun", "fieldManager", "fieldValidation", "force"}, nil},
		{"apis/apps/v1", nsDeploy + "/{name}", "delete", "deleteAppsV1NamespacedDeployment", "delete", "Deployment",
			[]string{"gracePeriodSeconds", "propagationPolicy", "orphanDependents", "dryRun"}, nil},
		{"apis/apps/v1", "/apis/apps/v1/deployments", "get", "listAppsV1DeploymentForAllNamespaces", "list", "Deployment", []string{"watch"}, nil},
		{"apis/apps/v1", "/apis/apps/v1/watch/namespaces/{namespace}/deployments", "get", "watchAppsV1NamespacedDeploymentList", "watchlist", "Deployment", nil, nil},
		{"apis/apps/v1", "/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}", "get", "watchAppsV1NamespacedDeployment", "watch", "Deployment", nil, nil},
		{"apis/apps/v1", "/apis/apps/v1/watch/replicasets", "get", "watchAppsV1ReplicaSetListForAllNamespaces", "watchlist", "ReplicaSet", nil, nil},
		{"apis/apps/v1", nsDeploy + "/{name}/status", "patch", "patchAppsV1NamespacedDeploymentStatus", "patch", "Deployment", []string{"fieldValidation"}, nil},
		{"apis/apps/v1", nsDeploy + "/{name}/scale", "get", "readAppsV1NamespacedDeploymentScale", "get", "Scale", nil, nil},
		{"apis/apps/v1", nsDeploy + "/{name}/scale", "put", "replaceAppsV1NamespacedDeploymentScale", "put", "Scale", []string{"fieldValidation"}, nil},
		{"apis/apps/v1", nsDeploy + "/{name}/scale", "patch", "patchAppsV1NamespacedDeploymentScale", "patch", "Scale", []string{"fieldValidation"}, nil},
		{"api/v1", "/api/v1/", "get", "getCoreV1APIResources", "", "", nil, nil},
		{"api/v1", "/api/v1/namespaces", "get", "listCoreV1Namespace", "list", "Namespace", nil, nil},
		{"api/v1", "/api/v1/namespaces/{name}", "patch", "patchCoreV1Namespace", "patch", "Namespace", []string{"fieldValidation"}, nil},
		{"api/v1", "/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put", "Namespace", nil, nil},
		{"api/v1", "/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list", "Pod", nil, nil},
		{"api/v1", nsPods + "/{name}/log", "get", "readCoreV1NamespacedPodLog", "get", "Pod",
			[]string{"container", "follow", "previous", "sinceSeconds", "tailLines", "timestamps", "limitBytes"}, nil},
		{"api/v1", nsPods + "/{name}/binding", "post", "createCoreV1NamespacedPodBinding", "post", "Binding", []string{"dryRun"}, nil},
		{"api/v1", nsPods + "/{name}/eviction", "post", "createCoreV1NamespacedPodEviction", "post", "Eviction", nil, nil},
		{"api/v1", nsPods + "/{name}/exec", "post", "connectCoreV1PostNamespacedPodExec", "connect", "PodExecOptions",
			[]string{"command", "container", "stdin", "stdout", "stderr", "tty"}, nil},
		{"api/v1", "/api/v1/namespaces/{namespace}/configmaps/{name}", "patch", "patchCoreV1NamespacedConfigMap", "patch", "ConfigMap", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			item, ok := docs[tt.doc].Paths.Paths[tt.path]
			if !ok {
				t.Fatalf("%s has no path %s", tt.doc, tt.path)
			}
			op := map[string]*spec3.Operation{
				"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete,
			}[tt.method]
			if op == nil {
				t.Fatalf("no %s on %s", tt.method, tt.path)
			}
			if op.OperationId != tt.id {
				t.Errorf("operationId %q, want %q", op.OperationId, tt.id)
			}
			if action, _ := op.Extensions.GetString(extAction); action != tt.action {
				t.Errorf("%s %q, want %q", extAction, action, tt.action)
			}
			if kind := opGVK(op).Kind; kind != tt.kind {
				t.Errorf("kind %q, want %q", kind, tt.kind)
			}
			has := func(name string) bool {
				return slices.ContainsFunc(op.Parameters, func(p *spec3.Parameter) bool { return p.Name == name && p.In == "query" })
			}
			for _, p := range tt.params {
				if !has(p) {
					t.Errorf("missing query parameter %q", p)
				}
			}
			for _, p := range tt.absent {
				if has(p) {
					t.Errorf("unexpected query parameter %q", p)
				}
			}
			if tt.method == "patch" {
				var got []string
				for mt := range op.RequestBody.Content {
					got = append(got, mt)
				}
				slices.Sort(got)
				want := []string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
				if !slices.Equal(got, want) {
					t.Errorf("patch content types %v, want %v", got, want)
				}
			}
		})
	}
}
