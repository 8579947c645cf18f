package fieldmanager

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// customAdapter is the object model of a custom resource: unstructured
// objects in any of the kind's served versions, converted between them as
// a CRD's None conversion does, by rewriting apiVersion. managedFields
// entries name the version their manager wrote, so an apply in v1beta1
// compares fields recorded in v1 through this conversion.
type customAdapter struct{ res *resource.Resource }

func (a customAdapter) serves(gvk schema.GroupVersionKind) bool {
	if gvk.GroupKind() != a.res.GVK.GroupKind() {
		return false
	}
	return gvk.Version == a.res.GVK.Version || slices.Contains(a.res.Versions, gvk.Version)
}

func (a customAdapter) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if !a.serves(gvk) {
		return nil, fmt.Errorf("fieldmanager: %s is not a version of %s", gvk, a.res.GVK.GroupKind())
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (a customAdapter) Default(obj runtime.Object) {
	if a.res.Default != nil {
		a.res.Default(obj)
	}
}

func (a customAdapter) Convert(in, out, _ any) error {
	src, ok := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("fieldmanager: cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (a customAdapter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("fieldmanager: %s: cannot convert %T", a.res.GVK.GroupKind(), in)
	}
	kinds := []schema.GroupVersionKind{a.res.GVK}
	for _, v := range a.res.Versions {
		if v != a.res.GVK.Version {
			kinds = append(kinds, a.res.GVK.GroupKind().WithVersion(v))
		}
	}
	target, ok := gv.KindForGroupVersionKinds(kinds)
	if !ok || !a.serves(target) {
		return nil, fmt.Errorf("fieldmanager: no version of %s in %v", a.res.GVK.GroupKind(), gv)
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(target)
	return out, nil
}

func (a customAdapter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
