package daemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/controllers/history"
)

func TestSameData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"same bytes", `{"spec":{"a":1}}`, `{"spec":{"a":1}}`, true},
		{"keys in another order", `{"b":2,"a":1}`, `{"a":1,"b":2}`, true},
		{"different", `{"a":1}`, `{"a":2}`, false},
		{"not JSON", `{"a":`, `{"a":`, true},
		{"not JSON, different", `{"a":x`, `{"a":y`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sameData([]byte(tt.a), []byte(tt.b)); got != tt.want {
				t.Errorf("sameData = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSplitRevisions(t *testing.T) {
	t.Parallel()
	ds := testDS()
	data, err := history.TemplatePatch(ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	other := testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	otherData, err := history.TemplatePatch(other.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	revs := []*appsv1.ControllerRevision{
		{Data: runtime.RawExtension{Raw: otherData.Raw}, Revision: 1},
		{Data: runtime.RawExtension{Raw: data.Raw}, Revision: 2},
	}
	cur, old := splitRevisions(revs, data)
	if len(cur) != 1 || cur[0].Revision != 2 || len(old) != 1 || old[0].Revision != 1 {
		t.Errorf("cur %d old %d", len(cur), len(old))
	}
}
