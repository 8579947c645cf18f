package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validDaemonSet() *appsv1.DaemonSet {
	return defaulted(&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", ResourceVersion: "3"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: validTemplate(),
		},
	})
}

func TestValidateDaemonSet(t *testing.T) {
	t.Parallel()
	ru := func(unavailable, surge intstr.IntOrString) func(*appsv1.DaemonSet) {
		return func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &unavailable, MaxSurge: &surge}
		}
	}
	tests := []struct {
		name   string
		change func(*appsv1.DaemonSet)
		wants  []want
		detail string
	}{
		{"valid", func(*appsv1.DaemonSet) {}, nil, ""},
		{"selector required", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil }, []want{required("spec.selector")}, ""},
		{"selector not empty", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }, []want{invalid("spec.selector")}, "empty selector is invalid for daemonset"},
		{"selector matches template", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "api"} },
			[]want{invalid("spec.template.metadata.labels")}, "`selector` does not match template `labels`"},
		{"restart policy Always", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]want{notSupported("spec.template.spec.restartPolicy")}, ""},
		{"no activeDeadlineSeconds", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(30)) },
			[]want{invalid("spec.template.spec.activeDeadlineSeconds")}, "activeDeadlineSeconds in DaemonSet is not Supported"},
		{"minReadySeconds", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = -1 }, []want{invalid("spec.minReadySeconds")}, ""},
		{"revisionHistoryLimit", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = new(int32(-1)) }, []want{invalid("spec.revisionHistoryLimit")}, ""},
		{"zero history is fine", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = new(int32(0)) }, nil, ""},
		{"strategy type", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" }, []want{notSupported("spec.updateStrategy")}, ""},
		{"OnDelete", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}, nil, ""},
		{"rollingUpdate required", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			[]want{required("spec.updateStrategy.rollingUpdate")}, ""},
		{"surge alone", ru(intstr.FromInt32(0), intstr.FromString("10%")), nil, ""},
		{"percent unavailable", ru(intstr.FromString("10%"), intstr.FromInt32(0)), nil, ""},
		{"both zero", ru(intstr.FromInt32(0), intstr.FromString("0%")), []want{required("spec.updateStrategy.rollingUpdate.maxUnavailable")}, "cannot be 0 when maxSurge is 0"},
		{"both set", ru(intstr.FromInt32(1), intstr.FromInt32(1)), []want{invalid("spec.updateStrategy.rollingUpdate.maxSurge")}, "may not be set when maxUnavailable is non-zero"},
		{"over 100%", ru(intstr.FromString("150%"), intstr.FromInt32(0)), []want{invalid("spec.updateStrategy.rollingUpdate.maxUnavailable")}, "must not be greater than 100%"},
		{"negative", ru(intstr.FromInt32(-1), intstr.FromInt32(0)), []want{invalid("spec.updateStrategy.rollingUpdate.maxUnavailable")}, ""},
		{"bad percent (reads as zero, as upstream)", ru(intstr.FromString("ten"), intstr.FromInt32(0)),
			[]want{invalid("spec.updateStrategy.rollingUpdate.maxUnavailable"), required("spec.updateStrategy.rollingUpdate.maxUnavailable")}, ""},
		{"status counts", func(ds *appsv1.DaemonSet) { ds.Status.NumberReady = -1; ds.Status.CollisionCount = new(int32(-1)) },
			[]want{invalid("status.numberReady"), invalid("status.collisionCount")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds := validDaemonSet()
			tt.change(ds)
			errs := ValidateCreate(ds)
			expectErrors(t, errs, tt.wants...)
			if tt.detail != "" {
				expectDetail(t, errs, tt.wants[0].path, tt.detail)
			}
		})
	}
}

func TestValidateDaemonSetUpdate(t *testing.T) {
	t.Parallel()
	old := validDaemonSet()
	ds := old.DeepCopy()
	ds.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	expectErrors(t, ValidateUpdate(ds, old))
	ds.Spec.Selector.MatchLabels["tier"] = "front"
	errs := ValidateUpdate(ds, old)
	expectErrors(t, errs, invalid("spec.selector"))
	expectDetail(t, errs, "spec.selector", "field is immutable")
}
