package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func quotaList(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func errorsText(errs field.ErrorList) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

func TestValidateLimitRange(t *testing.T) {
	t.Parallel()
	lr := func(items ...corev1.LimitRangeItem) *corev1.LimitRange {
		return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	}
	tests := []struct {
		name string
		lr   *corev1.LimitRange
		want string
	}{
		{"valid", lr(
			corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: quotaList("cpu", "100m"), Max: quotaList("cpu", "2"),
				Default: quotaList("cpu", "1"), DefaultRequest: quotaList("cpu", "500m"), MaxLimitRequestRatio: quotaList("cpu", "4")},
			corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: quotaList("memory", "4Gi")},
			corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Max: quotaList("storage", "10Gi")}), ""},
		{"duplicate type", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod}, corev1.LimitRangeItem{Type: corev1.LimitTypePod}),
			`spec.limits[1].type: Duplicate value: "Pod"`},
		{"unknown type", lr(corev1.LimitRangeItem{Type: "Node"}),
			`spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified`},
		{"pod defaults", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: quotaList("cpu", "1")}),
			"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"},
		{"container resource", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: quotaList("pods", "1")}),
			`spec.limits[0].max[pods]: Invalid value: "pods": must be a standard resource for containers`},
		{"claim without storage", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim}),
			"spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"},
		{"min over max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: quotaList("cpu", "2"), Max: quotaList("cpu", "1")}),
			`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`},
		{"default over max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: quotaList("memory", "2Gi"), Max: quotaList("memory", "1Gi")}),
			`spec.limits[0].default[memory]: Invalid value: "1Gi": default value 2Gi is greater than max value 1Gi`},
		{"default request over default", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: quotaList("cpu", "1"), DefaultRequest: quotaList("cpu", "2")}),
			`spec.limits[0].defaultRequest[cpu]: Invalid value: "2": default request value 2 is greater than default limit value 1`},
		{"ratio below 1", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: quotaList("cpu", "500m")}),
			`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1`},
		{"ratio over max/min", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: quotaList("cpu", "1"), Max: quotaList("cpu", "2"), MaxLimitRequestRatio: quotaList("cpu", "3")}),
			`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "3": ratio 3 is greater than max/min = 2.000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errorsText(validateLimitRange(tt.lr)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestValidateResourceQuota(t *testing.T) {
	t.Parallel()
	rq := func(hard corev1.ResourceList, mut ...func(*corev1.ResourceQuotaSpec)) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		for _, m := range mut {
			m(&q.Spec)
		}
		return q
	}
	scopes := func(s ...corev1.ResourceQuotaScope) func(*corev1.ResourceQuotaSpec) {
		return func(spec *corev1.ResourceQuotaSpec) { spec.Scopes = s }
	}
	selector := func(reqs ...corev1.ScopedResourceSelectorRequirement) func(*corev1.ResourceQuotaSpec) {
		return func(spec *corev1.ResourceQuotaSpec) {
			spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: reqs}
		}
	}
	tests := []struct {
		name string
		q    *corev1.ResourceQuota
		want string
	}{
		{"valid", rq(quotaList("pods", "10", "requests.cpu", "2", "count/deployments.apps", "5", "requests.nvidia.com/gpu", "1", "services.nodeports", "0")), ""},
		{"unknown name", rq(quotaList("widgets", "1")),
			"spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource type or fully qualified\n" +
				"spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource for quota"},
		{"storage is not a quota name", rq(quotaList("storage", "1Gi")), `spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota`},
		{"negative", rq(quotaList("requests.cpu", "-1")), `spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"fraction of a count", rq(quotaList("pods", "1500m")), `spec.hard[pods]: Invalid value: "1500m": must be an integer`},
		{"pod scope", rq(quotaList("pods", "1", "requests.cpu", "1"), scopes(corev1.ResourceQuotaScopeNotTerminating)), ""},
		{"scope on services", rq(quotaList("services", "1"), scopes(corev1.ResourceQuotaScopeTerminating)),
			`spec.scopes: Invalid value: ["Terminating"]: unsupported scope applied to resource`},
		{"best effort limits pods only", rq(quotaList("requests.cpu", "1"), scopes(corev1.ResourceQuotaScopeBestEffort)),
			`spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`},
		{"conflicting scopes", rq(quotaList("pods", "1"), scopes(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort)),
			`spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes`},
		{"unknown scope", rq(quotaList("pods", "1"), scopes("Sometimes")), `spec.scopes: Invalid value: ["Sometimes"]: unsupported scope`},
		{"priority selector", rq(quotaList("pods", "1"), selector(corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}})), ""},
		{"In without values", rq(quotaList("pods", "1"), selector(corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn})),
			"spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"},
		{"BestEffort with In", rq(quotaList("pods", "1"), selector(corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}})),
			`spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity`},
		{"bad operator", rq(quotaList("pods", "1"), selector(corev1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near"})),
			`spec.scopeSelector.matchExpressions.operator: Invalid value: "Near": not a valid selector operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errorsText(validateResourceQuota(tt.q)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestValidateResourceQuotaUpdate(t *testing.T) {
	t.Parallel()
	old := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.ResourceQuotaSpec{Hard: quotaList("pods", "1"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}}
	ok := old.DeepCopy()
	ok.Spec.Hard = quotaList("pods", "5")
	ok.Status = corev1.ResourceQuotaStatus{Hard: quotaList("pods", "5"), Used: quotaList("pods", "2")}
	if errs := validateResourceQuotaUpdate(ok, old); len(errs) > 0 {
		t.Errorf("raising hard and writing status: %v", errs)
	}
	bad := old.DeepCopy()
	bad.Spec.Scopes = nil
	bad.Status.Used = quotaList("pods", "-1")
	want := "status.used[pods]: Invalid value: \"-1\": must be greater than or equal to 0\n" +
		"spec.scopes: Invalid value: null: field is immutable"
	if got := errorsText(validateResourceQuotaUpdate(bad, old)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", ResourceVersion: "1"}}
	lr2 := lr.DeepCopy()
	lr2.Spec.Limits = []corev1.LimitRangeItem{{Type: "Bogus"}}
	if got := errorsText(validateLimitRangeUpdate(lr2, lr)); got != `spec.limits[0].type: Invalid value: "Bogus": must be a standard limit type or fully qualified` {
		t.Errorf("limit range update: %s", got)
	}
}
