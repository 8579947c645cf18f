package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/bus/tap"
)

// grants is an authorizer that allows exactly the listed
// "verb group/resource namespace" attributes, and records what it was asked.
type grants struct {
	allow []string
	asked []string
}

func (g *grants) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	s := a.Verb + " " + a.APIGroup + "/" + a.Resource + " " + a.Namespace
	g.asked = append(g.asked, s)
	if slices.Contains(g.allow, s) {
		return auth.Allow, "", nil
	}
	return auth.Deny, "no rule", nil
}

func TestAuthorizedTapEndpoints(t *testing.T) {
	t.Parallel()
	everything := []string{"list */* ", "watch */* "}
	tests := []struct {
		name   string
		lag    bool
		query  string
		allow  []string
		want   int
		asked  []string
		reason string // in a refusal's message
	}{
		{name: "lag: list and watch of everything everywhere", lag: true, allow: everything, want: http.StatusOK, asked: everything},
		{name: "lag: list only", lag: true, allow: everything[:1], want: http.StatusForbidden, asked: everything, reason: `cannot watch resource "*" in API group "*" through the tap's consumer lag`},
		{name: "lag: nothing", lag: true, want: http.StatusForbidden, asked: everything[:1], reason: `cannot list resource "*"`},
		{name: "lag: the query's filters do not narrow it", lag: true, query: "resource=pods&namespace=default",
			allow: []string{"list /pods default", "watch /pods default"}, want: http.StatusForbidden, asked: everything[:1]},
		{name: "tap: one resource in one namespace", query: "resource=deployments.apps&namespace=default",
			allow: []string{"list apps/deployments default", "watch apps/deployments default"}, want: http.StatusOK,
			asked: []string{"list apps/deployments default", "watch apps/deployments default"}},
		{name: "tap: no filter needs everything", allow: []string{"list /pods "}, want: http.StatusForbidden, asked: everything[:1],
			reason: "through the tap: no rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := &grants{allow: tt.allow}
			reached := false
			next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
			h, path := authorizedTap(g, next), tap.EndpointPath
			if tt.lag {
				h, path = authorizedTapLag(g, next), tap.LagEndpointPath
			}
			r := httptest.NewRequest(http.MethodGet, path+"?"+tt.query, nil)
			r = r.WithContext(auth.WithUser(r.Context(), auth.User{Name: "alice"}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want || reached != (tt.want == http.StatusOK) {
				t.Fatalf("status %d (handler reached: %v), want %d: %s", w.Code, reached, tt.want, w.Body)
			}
			if !slices.Equal(g.asked, tt.asked) {
				t.Fatalf("asked %q, want %q", g.asked, tt.asked)
			}
			if tt.want == http.StatusOK {
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != http.StatusForbidden ||
				st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, `User "alice"`) || !strings.Contains(st.Message, tt.reason) {
				t.Fatalf("refusal %s", w.Body)
			}
		})
	}
}
