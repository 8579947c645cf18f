package apiserver

import (
	"errors"
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
