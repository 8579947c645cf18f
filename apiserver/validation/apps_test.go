package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
}

func validDeployment() *appsv1.Deployment {
	return defaulted(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "3"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: validTemplate(),
		},
	})
}

func validReplicaSet() *appsv1.ReplicaSet {
	return defaulted(&appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: "default", ResourceVersion: "3"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: validTemplate(),
		},
	})
}

func TestValidateDeployment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*appsv1.Deployment)
		wants  []want
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"selector required", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []want{required("spec.selector")}},
		{"selector not empty", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []want{invalid("spec.selector")}},
		{"selector matches template", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }, []want{invalid("spec.template.metadata.labels")}},
		{"selector expression", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}
		}, []want{required("spec.selector.matchExpressions[0].values"), invalid("spec.selector")}},
		{"replicas not negative", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(-1)) }, []want{invalid("spec.replicas")}},
		{"zero replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(0)) }, nil},
		{"surge and unavailable not both zero", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = new(intstr.FromInt32(0))
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = new(intstr.FromString("0%"))
		}, []want{invalid("spec.strategy.rollingUpdate.maxUnavailable")}},
		{"unavailable at most 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = new(intstr.FromString("150%"))
		}, []want{invalid("spec.strategy.rollingUpdate.maxUnavailable")}},
		{"surge is a percentage", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = new(intstr.FromString("25"))
		}, []want{invalid("spec.strategy.rollingUpdate.maxSurge")}},
		{"recreate has no rolling update", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }, []want{
			forbidden("spec.strategy.rollingUpdate"),
		}},
		{"strategy type", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []want{notSupported("spec.strategy.type")}},
		{"revision history", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = new(int32(-1)) }, []want{invalid("spec.revisionHistoryLimit")}},
		{"progress deadline beyond min ready", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }, []want{invalid("spec.progressDeadlineSeconds")}},
		{"template restarts always", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, []want{
			notSupported("spec.template.spec.restartPolicy"),
		}},
		{"template has no deadline", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(5)) }, []want{
			forbidden("spec.template.spec.activeDeadlineSeconds"),
		}},
		{"template image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, []want{required("spec.template.spec.containers[0].image")}},
		{"template labels", func(d *appsv1.Deployment) { d.Spec.Template.Labels["x"] = "a b" }, []want{invalid("spec.template.labels")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := validDeployment()
			tt.change(d)
			expectErrors(t, ValidateCreate(d), tt.wants...)
		})
	}
}

func TestValidateDeploymentMessage(t *testing.T) {
	t.Parallel()
	d := validDeployment()
	d.Spec.Template.Labels = map[string]string{"app": "api"}
	expectDetail(t, ValidateCreate(d), "spec.template.metadata.labels", "`selector` does not match template `labels`")
}

func TestValidateReplicaSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*appsv1.ReplicaSet)
		wants  []want
	}{
		{"valid", func(*appsv1.ReplicaSet) {}, nil},
		{"selector required", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil }, []want{required("spec.selector")}},
		{"selector not empty", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector.MatchLabels = nil }, []want{invalid("spec.selector")}},
		{"selector matches template", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector.MatchLabels["v"] = "2" }, []want{invalid("spec.template.metadata.labels")}},
		{"replicas not negative", func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = new(int32(-3)) }, []want{invalid("spec.replicas")}},
		{"template restarts always", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, []want{
			notSupported("spec.template.spec.restartPolicy"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs := validReplicaSet()
			tt.change(rs)
			expectErrors(t, ValidateCreate(rs), tt.wants...)
		})
	}
}

func TestValidateWorkloadUpdate(t *testing.T) {
	t.Parallel()
	t.Run("deployment template may change", func(t *testing.T) {
		t.Parallel()
		old := validDeployment()
		d := old.DeepCopy()
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		d.Spec.Replicas = new(int32(5))
		expectErrors(t, ValidateUpdate(d, old))
	})
	t.Run("deployment selector is immutable", func(t *testing.T) {
		t.Parallel()
		old := validDeployment()
		d := old.DeepCopy()
		d.Spec.Selector.MatchLabels["tier"] = "front"
		errs := ValidateUpdate(d, old)
		expectErrors(t, errs, invalid("spec.selector"))
		expectDetail(t, errs, "spec.selector", "field is immutable")
	})
	t.Run("replicaset selector is immutable", func(t *testing.T) {
		t.Parallel()
		old := validReplicaSet()
		rs := old.DeepCopy()
		rs.Spec.Selector.MatchLabels = map[string]string{"tier": "front"}
		expectErrors(t, ValidateUpdate(rs, old), invalid("spec.selector"))
	})
}
