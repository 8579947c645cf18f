package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// TestAuthorizationResults: the result label of an authorizer's answer,
// as upstream gives it: an error wins over Deny and no opinion, not over
// Allow.
func TestAuthorizationResults(t *testing.T) {
	t.Parallel()
	errBroken := errors.New("broken")
	for _, tc := range []struct {
		dec  auth.Decision
		err  error
		want string
	}{
		{auth.Allow, nil, "allowed"},
		{auth.Allow, errBroken, "allowed"},
		{auth.Deny, nil, "denied"},
		{auth.Deny, errBroken, "error"},
		{auth.NoOpinion, nil, "no-opinion"},
		{auth.NoOpinion, errBroken, "error"},
	} {
		m := NewMetrics()
		m.observeAuthorization(tc.dec, tc.err, time.Millisecond)
		if got := testutil.ToFloat64(m.authzAttempts.WithLabelValues(tc.want)); got != 1 {
			t.Errorf("decision %d, error %v: authorization_attempts_total{result=%q} = %v, want 1", tc.dec, tc.err, tc.want, got)
		}
		if n := testutil.CollectAndCount(m.authzAttempts); n != 1 {
			t.Errorf("decision %d, error %v: %d results counted, want 1", tc.dec, tc.err, n)
		}
	}
}

// TestAdmissionObserversAreShared: the observers handed out for the same
// labels are one series, so a chain that keeps them and one that asks
// again count together.
func TestAdmissionObserversAreShared(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.PluginObserver("PodSecurity", true, auth.Create, false).Observe(0.5)
	m.PluginObserver("PodSecurity", true, auth.Create, false).Observe(0.25)
	m.StepObserver(false, auth.Update, true).Observe(1)
	if n := testutil.CollectAndCount(m.admissionPlugin); n != 1 {
		t.Errorf("%d plugin series, want 1", n)
	}
	if n := testutil.CollectAndCount(m.admissionStep); n != 1 {
		t.Errorf("%d step series, want 1", n)
	}
}

// TestRequestMetricsLabelsAreBounded: requests with subresources and
// methods of the client's own making, refused or not found, add no
// series of their own: their subresource is not a label and their verb
// is "other", as upstream, so a client cannot grow /metrics (and the
// server's memory) by sending many of them.
func TestRequestMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	allowPods := authorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
		if a.Resource == "pods" && a.User.Name == "alice" {
			return auth.Allow, "", nil
		}
		return auth.NoOpinion, "", nil
	})
	s := testServer(Config{Authorizer: allowPods})
	anonymous := auth.Anonymous
	serve := func(u auth.User, method, path string) int {
		req := httptest.NewRequest(method, path, nil)
		req = req.WithContext(auth.WithUser(req.Context(), u))
		rec := httptest.NewRecorder()
		s.serveResource(rec, req)
		return rec.Code
	}
	for i := range 50 {
		if code := serve(anonymous, http.MethodGet, fmt.Sprintf("/api/v1/namespaces/x/pods/y/made-up-%d", i)); code != http.StatusForbidden {
			t.Fatalf("anonymous GET of a made-up subresource: %d, want 403", code)
		}
		if code := serve(anonymous, fmt.Sprintf("MADEUP%d", i), "/api/v1/pods"); code != http.StatusForbidden {
			t.Fatalf("anonymous made-up method: %d, want 403", code)
		}
		if code := serve(alice(), http.MethodGet, fmt.Sprintf("/api/v1/namespaces/x/pods/y/made-up-%d", i)); code != http.StatusNotFound {
			t.Fatalf("alice's GET of a made-up subresource: %d, want 404", code)
		}
	}
	for _, want := range []struct{ verb, resource, sub, code string }{
		{"get", "unknown", "", "403"},
		{"other", "unknown", "", "403"},
		{"get", "pods", "", "404"},
	} {
		if got := testutil.ToFloat64(s.cfg.Metrics.requests.WithLabelValues(want.verb, want.resource, want.sub, want.code)); got != 50 {
			t.Errorf("apiserver_request_total%v = %v, want 50", want, got)
		}
	}
	if n := testutil.CollectAndCount(s.cfg.Metrics.requests); n != 3 {
		t.Errorf("%d request series after 150 requests of three kinds, want 3", n)
	}
	if n := testutil.CollectAndCount(s.cfg.Metrics.latency); n != 3 {
		t.Errorf("%d latency series after 150 requests of three kinds, want 3", n)
	}
}
