package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, target string
		want           RequestInfo
		ok             bool
	}{
		{"GET", "/api/v1/namespaces/default/pods", RequestInfo{Version: "v1", Namespace: "default", Resource: "pods", Verb: "list"}, true},
		{"GET", "/api/v1/namespaces/default/pods/", RequestInfo{Version: "v1", Namespace: "default", Resource: "pods", Verb: "list"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web", RequestInfo{Version: "v1", Namespace: "default", Resource: "pods", Name: "web", Verb: "get"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web/", RequestInfo{Version: "v1", Namespace: "default", Resource: "pods", Name: "web", Verb: "get"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web/log", RequestInfo{Version: "v1", Namespace: "default", Resource: "pods", Name: "web", Subresource: "log", Verb: "get"}, true},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", RequestInfo{Group: "apps", Version: "v1", Namespace: "ns", Resource: "deployments", Name: "d", Subresource: "scale", Verb: "get"}, true},
		{"GET", "/api/v1/namespaces/kube-system", RequestInfo{Version: "v1", Resource: "namespaces", Name: "kube-system", Verb: "get"}, true},
		{"PUT", "/api/v1/namespaces/gone/finalize", RequestInfo{Version: "v1", Resource: "namespaces", Name: "gone", Subresource: "finalize", Verb: "update"}, true},
		{"GET", "/api/v1/namespaces/x/status", RequestInfo{Version: "v1", Resource: "namespaces", Name: "x", Subresource: "status", Verb: "get"}, true},
		{"GET", "/api/v1/nodes", RequestInfo{Version: "v1", Resource: "nodes", Verb: "list"}, true},
		// The watch parameter as the parameter codec reads a bool: only
		// "0" and "false" (any case) are false; an empty value is true.
		{"GET", "/api/v1/pods?watch=true", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=True", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=TRUE", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=1", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=t", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=false", RequestInfo{Version: "v1", Resource: "pods", Verb: "list"}, true},
		{"GET", "/api/v1/pods?watch=False", RequestInfo{Version: "v1", Resource: "pods", Verb: "list"}, true},
		{"GET", "/api/v1/pods?watch=0", RequestInfo{Version: "v1", Resource: "pods", Verb: "list"}, true},
		// A query that does not decode still watches on a true watch value.
		{"GET", "/api/v1/pods?watch=yes&limit=lots", RequestInfo{Version: "v1", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/pods?watch=false&limit=lots", RequestInfo{Version: "v1", Resource: "pods", Verb: "list"}, true},
		// watch on a named object is a get, as upstream.
		{"GET", "/api/v1/namespaces/d/pods/web?watch=true", RequestInfo{Version: "v1", Namespace: "d", Resource: "pods", Name: "web", Verb: "get"}, true},
		// The deprecated /watch/ path prefix.
		{"GET", "/api/v1/watch/namespaces/d/pods", RequestInfo{Version: "v1", Namespace: "d", Resource: "pods", Verb: "watch"}, true},
		{"GET", "/api/v1/watch/namespaces/d/pods/web", RequestInfo{Version: "v1", Namespace: "d", Resource: "pods", Name: "web", Verb: "watch"}, true},
		{"GET", "/apis/apps/v1/watch/deployments", RequestInfo{Group: "apps", Version: "v1", Resource: "deployments", Verb: "watch"}, true},
		{"GET", "/api/v1/watch/namespaces/d/pods/web/status", RequestInfo{}, false},
		{"POST", "/api/v1/watch/namespaces/d/pods", RequestInfo{}, false},
		{"GET", "/api/v1/watch", RequestInfo{}, false},
		{"POST", "/api/v1/namespaces/d/configmaps", RequestInfo{Version: "v1", Namespace: "d", Resource: "configmaps", Verb: "create"}, true},
		{"PATCH", "/api/v1/namespaces/d/configmaps/c", RequestInfo{Version: "v1", Namespace: "d", Resource: "configmaps", Name: "c", Verb: "patch"}, true},
		{"DELETE", "/api/v1/namespaces/d/configmaps/c", RequestInfo{Version: "v1", Namespace: "d", Resource: "configmaps", Name: "c", Verb: "delete"}, true},
		{"DELETE", "/api/v1/namespaces/d/configmaps", RequestInfo{Version: "v1", Namespace: "d", Resource: "configmaps", Verb: "deletecollection"}, true},
		{"GET", "/api/v1", RequestInfo{}, false},
		{"GET", "/apis/apps/v1", RequestInfo{}, false},
		{"GET", "/api/v1/namespaces/d/pods/web/log/extra", RequestInfo{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			t.Parallel()
			got, ok := parseRequestInfo(httptest.NewRequest(tc.method, tc.target, nil))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if ok && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVerbOfHead(t *testing.T) {
	t.Parallel()
	if v := verbOf(httptest.NewRequest(http.MethodHead, "/api/v1/pods", nil), ""); v != "list" {
		t.Errorf("HEAD of a collection = %q, want list", v)
	}
}

// BenchmarkParseRequestInfo measures reading a list's path and query, which
// decodes the query with apimachinery's parameter codec to tell a list from
// a watch.
func BenchmarkParseRequestInfo(b *testing.B) {
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb&limit=500&resourceVersion=0", nil)
	for b.Loop() {
		if ri, ok := parseRequestInfo(r); !ok || ri.Verb != "list" {
			b.Fatalf("%+v", ri)
		}
	}
}
