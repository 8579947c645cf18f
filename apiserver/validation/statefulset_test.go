package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validStatefulSet() *appsv1.StatefulSet {
	return defaulted(&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "3"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:    validTemplate(),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
		},
	})
}

func TestValidateStatefulSet(t *testing.T) {
	t.Parallel()
	mu := func(v intstr.IntOrString) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &v }
	}
	tests := []struct {
		name   string
		change func(*appsv1.StatefulSet)
		wants  []want
		detail string
	}{
		{"valid", func(*appsv1.StatefulSet) {}, nil, ""},
		{"containers mount claim templates", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, nil, ""},
		{"and nothing else", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}
		}, []want{{field.ErrorTypeNotFound, "spec.template.spec.containers[0].volumeMounts[0].name"}}, ""},
		{"no service name is fine", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "" }, nil, ""},
		{"service name a DNS label", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "Web_1" }, []want{invalid("spec.serviceName")}, ""},
		{"selector required", func(s *appsv1.StatefulSet) { s.Spec.Selector = nil }, []want{required("spec.selector")}, ""},
		{"selector not empty", func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]want{invalid("spec.selector")}, "empty selector is invalid for statefulset"},
		{"selector matches template", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "api"} },
			[]want{invalid("spec.template.metadata.labels")}, "`selector` does not match template `labels`"},
		{"restart policy Always", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]want{notSupported("spec.template.spec.restartPolicy")}, ""},
		{"no activeDeadlineSeconds", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(5)) },
			[]want{forbidden("spec.template.spec.activeDeadlineSeconds")}, "activeDeadlineSeconds in StatefulSet is not Supported"},
		{"pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }, []want{notSupported("spec.podManagementPolicy")}, ""},
		{"replicas", func(s *appsv1.StatefulSet) { s.Spec.Replicas = new(int32(-1)) }, []want{invalid("spec.replicas")}, ""},
		{"ordinals", func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -2} }, []want{invalid("spec.ordinals.start")}, ""},
		{"history", func(s *appsv1.StatefulSet) { s.Spec.RevisionHistoryLimit = new(int32(-1)) }, []want{invalid("spec.revisionHistoryLimit")}, ""},
		{"strategy type", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = "Recreate" }, []want{notSupported("spec.updateStrategy")}, ""},
		{"OnDelete without rollingUpdate", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}, nil, ""},
		{"OnDelete with rollingUpdate", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			[]want{invalid("spec.updateStrategy.rollingUpdate")}, "only allowed for updateStrategy 'RollingUpdate'"},
		{"partition", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(-1)) },
			[]want{invalid("spec.updateStrategy.rollingUpdate.partition")}, ""},
		{"maxUnavailable 2", mu(intstr.FromInt32(2)), nil, ""},
		{"maxUnavailable 50%", mu(intstr.FromString("50%")), nil, ""},
		{"maxUnavailable 0", mu(intstr.FromInt32(0)), []want{invalid("spec.updateStrategy.rollingUpdate.maxUnavailable")}, "must be greater than 0"},
		{"maxUnavailable 150%", mu(intstr.FromString("150%")), []want{invalid("spec.updateStrategy.rollingUpdate.maxUnavailable")}, "must not be greater than 100%"},
		{"retention policy", func(s *appsv1.StatefulSet) { s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			[]want{notSupported("spec.persistentVolumeClaimRetentionPolicy.whenScaled")}, ""},
		{"claim template name", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Name = "Data!" },
			[]want{invalid("spec.volumeClaimTemplates[0].metadata.name")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validStatefulSet()
			tt.change(s)
			errs := ValidateCreate(s)
			expectErrors(t, errs, tt.wants...)
			if tt.detail != "" {
				expectDetail(t, errs, tt.wants[0].path, tt.detail)
			}
		})
	}
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	t.Parallel()
	old := validStatefulSet()
	s := old.DeepCopy()
	s.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	s.Spec.Replicas = new(int32(5))
	s.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(2))
	s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	s.Spec.MinReadySeconds = 3
	s.Spec.RevisionHistoryLimit = new(int32(2))
	s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
	expectErrors(t, ValidateUpdate(s, old))

	for name, change := range map[string]func(*appsv1.StatefulSet){
		"serviceName":          func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" },
		"podManagementPolicy":  func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement },
		"volumeClaimTemplates": func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil },
		"selector": func(s *appsv1.StatefulSet) {
			s.Spec.Selector.MatchLabels["tier"] = "x"
			s.Spec.Template.Labels["tier"] = "x"
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := old.DeepCopy()
			change(s)
			errs := ValidateUpdate(s, old)
			expectErrors(t, errs, forbidden("spec"))
			expectDetail(t, errs, "spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
		})
	}
}

func TestValidateControllerRevision(t *testing.T) {
	t.Parallel()
	valid := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: "default", ResourceVersion: "1"},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}, Revision: 1}
	expectErrors(t, ValidateCreate(valid))

	noData := valid.DeepCopy()
	noData.Data = runtime.RawExtension{}
	errs := ValidateCreate(noData)
	expectErrors(t, errs, required("data"))
	expectDetail(t, errs, "data", "data is mandatory")

	negative := valid.DeepCopy()
	negative.Revision = -1
	expectErrors(t, ValidateCreate(negative), invalid("revision"))

	renumbered := valid.DeepCopy()
	renumbered.Revision = 4
	renumbered.Data.Raw = []byte(`{"spec": {"template": {"$patch": "replace"}}}`)
	expectErrors(t, ValidateUpdate(renumbered, valid))

	changed := valid.DeepCopy()
	changed.Data.Raw = []byte(`{"spec":{}}`)
	expectErrors(t, ValidateUpdate(changed, valid), invalid("data"))
}
