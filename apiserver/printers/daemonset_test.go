package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDaemonSetColumns(t *testing.T) {
	t.Parallel()
	cols := For(schema.GroupKind{Group: "apps", Kind: "DaemonSet"}).Columns
	if got, want := headers(cols, false), "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	if got, want := headers(cols, true), "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE CONTAINERS IMAGES SELECTOR"; got != want {
		t.Errorf("wide columns %q, want %q", got, want)
	}
}

func TestDaemonSetCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ds   appsv1.DaemonSet
		want map[string]interface{}
	}{
		{
			name: "rolling out with a node selector",
			ds: appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: "agent", CreationTimestamp: ago(3 * time.Minute)},
				Spec: appsv1.DaemonSetSpec{Template: template("agent", "log"),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 2, NumberAvailable: 1},
			},
			want: map[string]interface{}{"NAME": "agent", "DESIRED": int64(5), "CURRENT": int64(4), "READY": int64(3), "UP-TO-DATE": int64(2),
				"AVAILABLE": int64(1), "NODE SELECTOR": "<none>", "AGE": "3m", "CONTAINERS": "agent,log", "IMAGES": "agent:latest,log:latest", "SELECTOR": "app=agent"},
		},
		{
			name: "node selector",
			ds: func() appsv1.DaemonSet {
				ds := appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: template("a"), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
				ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux", "disk": "ssd"}
				return ds
			}(),
			want: map[string]interface{}{"NODE SELECTOR": "disk=ssd,kubernetes.io/os=linux", "DESIRED": int64(0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, &tt.ds, tt.want)
		})
	}
}
