package history

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// TemplatePatch is the revision data for a pod template: the strategic
// merge patch {"spec":{"template":{...,"$patch":"replace"}}} that, applied
// to a StatefulSet or DaemonSet, puts template back. kubectl rollout undo
// applies exactly this patch; kubectl rollout history prints its template.
func TemplatePatch(template corev1.PodTemplateSpec) (runtime.RawExtension, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding the pod template: %w", err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return runtime.RawExtension{}, fmt.Errorf("decoding the pod template: %w", err)
	}
	tmpl["$patch"] = "replace"
	// encoding/json writes map keys sorted: the same template always
	// gives the same bytes, so the same hash.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding the template patch: %w", err)
	}
	return runtime.RawExtension{Raw: patch}, nil
}

// ApplyTemplatePatch applies revision data made by TemplatePatch (or any
// strategic merge patch of spec.template) to template and returns the
// result. Both StatefulSet and DaemonSet keep their template at
// spec.template, so a StatefulSet stands in for either.
func ApplyTemplatePatch(template corev1.PodTemplateSpec, data runtime.RawExtension) (corev1.PodTemplateSpec, error) {
	orig, err := json.Marshal(appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: template}})
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("encoding the pod template: %w", err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, data.Raw, &appsv1.StatefulSet{})
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("applying the revision patch: %w", err)
	}
	var out appsv1.StatefulSet
	if err := json.Unmarshal(patched, &out); err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("decoding the patched template: %w", err)
	}
	return out.Spec.Template, nil
}
