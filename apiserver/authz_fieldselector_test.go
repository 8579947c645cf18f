package apiserver

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// TestAuthorizerSeesFieldSelector: a list's, watch's or deletecollection's
// field selector reaches the authorizers (the Node authorizer lets a
// kubelet list only its pods, by spec.nodeName), parsed from the query
// value the handler filters by; a metadata.name selector names the object
// of a list or watch.
func TestAuthorizerSeesFieldSelector(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen auth.Attributes
	)
	s := testServer(Config{Authorizer: authorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
		mu.Lock()
		seen = a
		mu.Unlock()
		return auth.NoOpinion, "", nil
	})})
	for _, tc := range []struct {
		method, path string
		verb         string
		selector     string // "": none
		name         string
	}{
		{http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", "list", "spec.nodeName=n1", ""},
		{http.MethodGet, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3D%3Dn1,status.phase!%3DFailed&fieldSelector=spec.nodeName%3Dn2", "watch", "spec.nodeName=n1,status.phase!=Failed", ""},
		{http.MethodGet, "/api/v1/nodes?fieldSelector=metadata.name%3Dn1", "list", "metadata.name=n1", "n1"},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn1", "deletecollection", "spec.nodeName=n1", ""},
		{http.MethodGet, "/api/v1/pods", "list", "", ""},
		{http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName", "list", "", ""}, // does not parse: a 400 after authorization
		{http.MethodGet, "/api/v1/namespaces/ns/pods/p?fieldSelector=spec.nodeName%3Dn1", "get", "", "p"},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req = req.WithContext(auth.WithUser(req.Context(), alice()))
		s.serveResource(httptest.NewRecorder(), req)
		mu.Lock()
		a := seen
		mu.Unlock()
		var want fields.Requirements
		if tc.selector != "" {
			want = fields.ParseSelectorOrDie(tc.selector).Requirements()
		}
		if a.Verb != tc.verb || a.Name != tc.name || !sameRequirements(a.FieldSelector, want) {
			t.Errorf("%s %s: verb %q name %q selector %v, want %q %q %v", tc.method, tc.path, a.Verb, a.Name, a.FieldSelector, tc.verb, tc.name, want)
		}
	}
}

func sameRequirements(a, b fields.Requirements) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
