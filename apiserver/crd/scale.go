package crd

import (
	"encoding/json"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// scaleAccess reads and writes the replica paths of a scale subresource.
// Missing or mistyped values read as 0 and "".
func scaleAccess(spec *apiextensions.CustomResourceSubresourceScale) *resource.ScaleAccess {
	specPath := splitPath(spec.SpecReplicasPath)
	statusPath := splitPath(spec.StatusReplicasPath)
	var selectorPath []string
	if spec.LabelSelectorPath != nil {
		selectorPath = splitPath(*spec.LabelSelectorPath)
	}
	return &resource.ScaleAccess{
		Get: func(obj runtime.Object) (int32, int32, string) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return 0, 0, ""
			}
			var selector string
			if selectorPath != nil {
				selector, _, _ = unstructured.NestedString(u.Object, selectorPath...)
			}
			return readInt32(u.Object, specPath), readInt32(u.Object, statusPath), selector
		},
		Set: func(obj runtime.Object, replicas int32) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				_ = unstructured.SetNestedField(u.Object, int64(replicas), specPath...)
			}
		},
	}
}

// splitPath turns ".spec.replicas" into ["spec", "replicas"].
func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

func readInt32(obj map[string]any, path []string) int32 {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return int32(n)
	case int:
		return int32(n)
	case int32:
		return n
	case float64:
		return int32(n)
	case json.Number:
		i, _ := n.Int64()
		return int32(i)
	}
	return 0
}
