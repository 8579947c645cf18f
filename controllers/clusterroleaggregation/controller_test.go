package clusterroleaggregation

import (
	"context"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// roles is a ClusterRoles cache the test fills.
type roles map[string]*rbacv1.ClusterRole

func (s roles) Get(_, name string) (*rbacv1.ClusterRole, bool) { cr, ok := s[name]; return cr, ok }

func (s roles) List() []*rbacv1.ClusterRole {
	out := make([]*rbacv1.ClusterRole, 0, len(s))
	for _, cr := range s {
		out = append(out, cr)
	}
	return out
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	view := map[string]string{"aggregate-to-view": "true"}
	withRules := func(cr *rbacv1.ClusterRole, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		cr.Rules, cr.ResourceVersion = rules, "9"
		return cr
	}
	tests := []struct {
		name      string
		roles     []*rbacv1.ClusterRole
		wantRules []rbacv1.PolicyRule // nil for no write
		wantErr   bool
	}{
		{name: "gains the rules", roles: []*rbacv1.ClusterRole{
			withRules(aggregating("view", nil, matchLabels("aggregate-to-view", "true"))), role("a", view, readPods), role("b", view, readSecrets),
		}, wantRules: []rbacv1.PolicyRule{readPods, readSecrets}},
		{name: "loses a rule no role grants any more", roles: []*rbacv1.ClusterRole{
			withRules(aggregating("view", nil, matchLabels("aggregate-to-view", "true")), readPods, writePods), role("a", view, readPods),
		}, wantRules: []rbacv1.PolicyRule{readPods}},
		{name: "up to date", roles: []*rbacv1.ClusterRole{
			withRules(aggregating("view", nil, matchLabels("aggregate-to-view", "true")), readPods), role("a", view, readPods),
		}},
		{name: "nothing to aggregate and no rules", roles: []*rbacv1.ClusterRole{
			withRules(aggregating("view", nil, matchLabels("aggregate-to-view", "true"))),
		}},
		{name: "not aggregating", roles: []*rbacv1.ClusterRole{withRules(role("view", nil), writePods), role("a", view, readPods)}},
		{name: "gone"},
		{name: "bad selector", roles: []*rbacv1.ClusterRole{
			withRules(aggregating("view", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}})),
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cache := roles{}
			client := fake.NewClientset()
			for _, cr := range tt.roles {
				cache[cr.Name] = cr
				if err := client.Tracker().Add(cr.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			before := cache["view"].DeepCopy()
			r := &reconciler{client: client, roles: cache, log: slog.New(slog.DiscardHandler)}
			_, err := r.Reconcile(context.Background(), controllers.Request{Name: "view"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tt.wantErr)
			}
			if !apiequality.Semantic.DeepEqual(cache["view"], before) {
				t.Fatal("Reconcile modified the cached object")
			}
			var updates []*rbacv1.ClusterRole
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" {
					updates = append(updates, a.(k8stesting.UpdateAction).GetObject().(*rbacv1.ClusterRole))
				}
			}
			if tt.wantRules == nil {
				if len(updates) != 0 {
					t.Fatalf("updates = %+v, want none", updates)
				}
				return
			}
			if len(updates) != 1 || updates[0].ResourceVersion != "9" || updates[0].AggregationRule == nil ||
				!apiequality.Semantic.DeepEqual(updates[0].Rules, tt.wantRules) {
				t.Fatalf("updates = %+v, want the rules %+v", updates, tt.wantRules)
			}
		})
	}
}
