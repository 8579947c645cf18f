package apiserver

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTakeDisruption(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	budget := func(gen, observed int64, allowed int32, disrupted ...int) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2}}
		for _, n := range disrupted {
			b.Status.DisruptedPods = map[string]metav1.Time{}
			for i := range n {
				b.Status.DisruptedPods[fmt.Sprint("pod-", i)] = metav1.NewTime(now)
			}
		}
		return b
	}
	tests := []struct {
		name        string
		pdb         *policyv1.PodDisruptionBudget
		dryRun      bool
		wantCode    int32
		wantCause   string
		wantAllowed int32
		wantRecord  bool
		wantCond    metav1.ConditionStatus
	}{
		{name: "allowed", pdb: budget(1, 1, 2), wantAllowed: 1, wantRecord: true},
		{name: "last one sets the condition", pdb: budget(1, 1, 1), wantAllowed: 0, wantRecord: true, wantCond: metav1.ConditionFalse},
		{name: "dry run records nothing", pdb: budget(1, 1, 2), dryRun: true, wantAllowed: 1},
		{name: "none allowed", pdb: budget(1, 1, 0), wantCode: http.StatusTooManyRequests,
			wantCause: "The disruption budget web needs 2 healthy pods and has 2 currently"},
		{name: "stale generation", pdb: budget(2, 1, 3), wantCode: http.StatusTooManyRequests,
			wantCause: "The disruption budget web is still being processed by the server."},
		{name: "negative", pdb: budget(1, 1, -1), wantCode: http.StatusForbidden},
		{name: "too many disrupted", pdb: budget(1, 1, 5, maxDisruptedPods+1), wantCode: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := takeDisruption(tt.pdb, "victim", now, tt.dryRun)
			if tt.wantCode != 0 {
				var se apierrors.APIStatus
				if err == nil {
					t.Fatalf("no error, want %d", tt.wantCode)
				}
				se, _ = err.(apierrors.APIStatus)
				if se == nil || se.Status().Code != tt.wantCode {
					t.Fatalf("error %v, want code %d", err, tt.wantCode)
				}
				if tt.wantCode == http.StatusTooManyRequests {
					st := se.Status()
					if st.Message != msgViolatesBudget || len(st.Details.Causes) != 1 ||
						st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.Causes[0].Message != tt.wantCause {
						t.Fatalf("429 status %+v %+v", st, st.Details)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.pdb.Status.DisruptionsAllowed != tt.wantAllowed {
				t.Errorf("disruptionsAllowed = %d, want %d", tt.pdb.Status.DisruptionsAllowed, tt.wantAllowed)
			}
			at, recorded := tt.pdb.Status.DisruptedPods["victim"]
			if recorded != tt.wantRecord || (recorded && !at.Time.Equal(now)) {
				t.Errorf("disruptedPods = %v, want victim recorded: %v", tt.pdb.Status.DisruptedPods, tt.wantRecord)
			}
			c := apimeta.FindStatusCondition(tt.pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
			switch {
			case tt.wantCond == "" && c != nil:
				t.Errorf("condition set: %+v", c)
			case tt.wantCond != "" && (c == nil || c.Status != tt.wantCond || c.Reason != policyv1.InsufficientPodsReason):
				t.Errorf("condition %+v, want %s InsufficientPods", c, tt.wantCond)
			}
		})
	}
}

func TestMatchingBudgets(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web", "tier": "front"}}}
	pdb := func(name, ns string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	all := []*policyv1.PodDisruptionBudget{
		pdb("match", "ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		pdb("other-ns", "other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		pdb("mismatch", "ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		pdb("nil-selector", "ns", nil),
		pdb("empty-selector", "ns", &metav1.LabelSelector{}),
		pdb("invalid", "ns", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
	}
	var got []string
	for _, b := range matchingBudgets(pod, all) {
		got = append(got, b.Name)
	}
	if len(got) != 2 || got[0] != "match" || got[1] != "empty-selector" {
		t.Fatalf("matching budgets = %v, want [match empty-selector]", got)
	}
}

func TestEvictionRules(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	always, ifHealthy := policyv1.AlwaysAllow, policyv1.IfHealthyBudget
	tests := []struct {
		name        string
		pod         corev1.Pod
		ignorable   bool
		enforceRV   bool
		pdb         policyv1.PodDisruptionBudget
		unhealthyOK bool
	}{
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true},
		{name: "pending", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, ignorable: true, enforceRV: true},
		{name: "succeeded", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, ignorable: true},
		{name: "failed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, ignorable: true},
		{name: "being deleted", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, ignorable: true},
		{name: "always allow", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true,
			pdb: policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: &always}}, unhealthyOK: true},
		{name: "if healthy budget met", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true,
			pdb: policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: &ifHealthy},
				Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 2}}, unhealthyOK: true},
		{name: "default policy, budget met", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true,
			pdb: policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2}}, unhealthyOK: true},
		{name: "default policy, budget short", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true,
			pdb: policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 2}}},
		{name: "default policy, nothing desired", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, enforceRV: true,
			pdb: policyv1.PodDisruptionBudget{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := budgetIgnorable(&tt.pod); got != tt.ignorable {
				t.Errorf("budgetIgnorable = %v, want %v", got, tt.ignorable)
			}
			if got := enforceVersion(&tt.pod); got != tt.enforceRV {
				t.Errorf("enforceVersion = %v, want %v", got, tt.enforceRV)
			}
			if got := unhealthyEvictable(&tt.pdb); got != tt.unhealthyOK {
				t.Errorf("unhealthyEvictable = %v, want %v", got, tt.unhealthyOK)
			}
		})
	}
}

func TestEvictionDeleteOptions(t *testing.T) {
	t.Parallel()
	grace := int64(-5)
	tests := []struct {
		name       string
		ev         policyv1.Eviction
		dryRun     []string
		wantDryRun []string
		wantGrace  *int64
		wantErr    bool
	}{
		{name: "none"},
		{name: "query dry run", dryRun: []string{"All"}, wantDryRun: []string{"All"}},
		{name: "body dry run", ev: policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{DryRun: []string{"All"}}}, wantDryRun: []string{"All"}},
		{name: "both agree", ev: policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{DryRun: []string{"All"}}}, dryRun: []string{"All"}, wantDryRun: []string{"All"}},
		{name: "bad dry run", ev: policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{DryRun: []string{"Some"}}}, wantErr: true},
		{name: "negative grace is zero", ev: policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}, wantGrace: new(int64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts, err := evictionDeleteOptions(&tt.ev, tt.dryRun)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(opts.DryRun) != len(tt.wantDryRun) {
				t.Errorf("dryRun = %v, want %v", opts.DryRun, tt.wantDryRun)
			}
			if (opts.GracePeriodSeconds == nil) != (tt.wantGrace == nil) || (tt.wantGrace != nil && *opts.GracePeriodSeconds != *tt.wantGrace) {
				t.Errorf("grace = %v, want %v", opts.GracePeriodSeconds, tt.wantGrace)
			}
		})
	}
}

func TestSetDisruptionTarget(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{}
	setDisruptionTarget(pod, t0)
	setDisruptionTarget(pod, t0.Add(time.Minute))
	if len(pod.Status.Conditions) != 1 {
		t.Fatalf("conditions %+v", pod.Status.Conditions)
	}
	c := pod.Status.Conditions[0]
	if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue || c.Reason != "EvictionByEvictionAPI" || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("condition %+v", c)
	}
}
