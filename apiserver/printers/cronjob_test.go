package printers

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCronJobCells(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	berlin := "Europe/Berlin"
	last := ago(90 * time.Second)
	tests := []struct {
		name string
		cj   batchv1.CronJob
		want map[string]interface{}
	}{
		{
			name: "running",
			cj: batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: "backup", CreationTimestamp: ago(3 * time.Hour)},
				Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", Suspend: &no, TimeZone: &berlin,
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template("dump", "upload")}}},
				Status: batchv1.CronJobStatus{LastScheduleTime: &last, Active: []corev1.ObjectReference{{Name: "backup-1"}, {Name: "backup-2"}}},
			},
			want: map[string]interface{}{"NAME": "backup", "SCHEDULE": "*/1 * * * *", "TIMEZONE": "Europe/Berlin", "SUSPEND": "False",
				"ACTIVE": int64(2), "LAST SCHEDULE": "90s", "AGE": "3h", "CONTAINERS": "dump,upload", "IMAGES": "dump:latest,upload:latest",
				"SELECTOR": "<none>"},
		},
		{
			name: "never scheduled, suspended",
			cj:   batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "@daily", Suspend: &yes}},
			want: map[string]interface{}{"TIMEZONE": "<none>", "SUSPEND": "True", "ACTIVE": int64(0), "LAST SCHEDULE": "<none>"},
		},
		{
			name: "suspend unset",
			cj:   batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "@daily"}},
			want: map[string]interface{}{"SUSPEND": "<unset>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "batch", Kind: "CronJob"}, &tt.cj, tt.want)
		})
	}
}

func TestCronJobColumns(t *testing.T) {
	t.Parallel()
	var names []string
	var wide []string
	for _, c := range For(schema.GroupKind{Group: "batch", Kind: "CronJob"}).Columns {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			wide = append(wide, c.Name)
		}
	}
	want := []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"}
	if len(names) != len(want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("column %d = %s, want %s", i, names[i], want[i])
		}
	}
	if len(wide) != 3 || wide[0] != "Containers" || wide[1] != "Images" || wide[2] != "Selector" {
		t.Errorf("wide columns %v", wide)
	}
}
