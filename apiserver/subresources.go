package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// scaleOf builds the autoscaling/v1 Scale of an object.
func scaleOf(res *resource.Resource, obj runtime.Object) *autoscalingv1.Scale {
	m, _ := meta.Accessor(obj)
	spec, status, selector := res.Scale.Get(obj)
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}
}

func (s *Server) getScale(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	obj, _, err := s.getObject(r.Context(), res, ri.Namespace, ri.Name)
	if err != nil {
		return err
	}
	return writeNegotiated(w, r, http.StatusOK, scaleOf(res, obj))
}

// setScale writes a replica count from a Scale into the object.
func (s *Server) setScale(r *http.Request, ri RequestInfo, res *resource.Resource, isDryRun bool, desired func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) (*autoscalingv1.Scale, error) {
	result, err := s.guaranteedUpdate(r.Context(), res, ri.Namespace, ri.Name, "", isDryRun, func(cur runtime.Object) (runtime.Object, error) {
		want, err := desired(scaleOf(res, cur))
		if err != nil {
			return nil, err
		}
		if want.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), ri.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")})
		}
		m, _ := meta.Accessor(cur)
		if want.ResourceVersion != "" && want.ResourceVersion != m.GetResourceVersion() {
			return nil, errConflict(res, ri.Name)
		}
		m.SetResourceVersion("")
		res.Scale.Set(cur, want.Spec.Replicas)
		return cur, nil
	})
	if err != nil {
		return nil, err
	}
	return scaleOf(res, result.obj), nil
}

func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in := &autoscalingv1.Scale{}
	if _, err := decodeRequest(r, body, in, metav1.FieldValidationStrict); err != nil {
		return err
	}
	sc, err := s.setScale(r, ri, res, isDryRun, func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error) { return in, nil })
	if err != nil {
		return err
	}
	return writeNegotiated(w, r, http.StatusOK, sc)
}

func (s *Server) patchScale(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	pr, err := parsePatch(r)
	if err != nil {
		return err
	}
	sc, err := s.setScale(r, ri, res, isDryRun, func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		curJSON, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(pr, curJSON, &autoscalingv1.Scale{})
		if err != nil {
			return nil, err
		}
		out := &autoscalingv1.Scale{}
		if _, err := decodeJSON(patched, out, pr.directive); err != nil {
			return nil, err
		}
		if out.ResourceVersion == cur.ResourceVersion {
			out.ResourceVersion = ""
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	return writeNegotiated(w, r, http.StatusOK, sc)
}

// bind assigns a pod to a node, as POST pods/<name>/binding does upstream.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	b := &corev1.Binding{}
	if _, err := decodeRequest(r, body, b, metav1.FieldValidationStrict); err != nil {
		return err
	}
	if b.Name != "" && b.Name != ri.Name {
		return apierrors.NewBadRequest("the name of the binding does not match the pod name on the URL")
	}
	if b.Target.Name == "" {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), ri.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), ri.Name,
			field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node"})})
	}
	_, err = s.guaranteedUpdate(r.Context(), res, ri.Namespace, ri.Name, string(resource.Binding), isDryRun, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(res.GroupResource(), ri.Name, fmt.Errorf("the UID in the binding (%s) does not match the pod's (%s)", b.UID, pod.UID))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(res.GroupResource(), ri.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", ri.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(res.GroupResource(), ri.Name, fmt.Errorf("pod %s is already assigned to node %q", ri.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))})
		pod.ResourceVersion = ""
		return pod, nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

// setPodCondition sets or replaces a condition by type.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
