package tap

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// builtinPatchMeta is the strategic-merge-patch metadata of the Go type of
// every resource the API server stores, by group and resource.
var builtinPatchMeta = sync.OnceValue(func() map[schema.GroupResource]strategicpatch.LookupPatchMeta {
	m := map[schema.GroupResource]strategicpatch.LookupPatchMeta{}
	for _, r := range resource.Builtin() {
		if r.CreateOnly || r.New == nil {
			continue
		}
		if meta, err := strategicpatch.NewPatchMetaFromStruct(r.New()); err == nil {
			m[r.GroupResource()] = meta
		}
	}
	return m
})

// patchMetaFor returns the patch metadata of the type of an object of
// resource (plural) in group: the built-in kind the API server stores the
// resource as, else the kind that every one of docs naming an apiVersion
// and a kind agrees on, in client-go's scheme (of group, when a resource
// is given). nil when neither is known (a custom resource) or the docs
// disagree, so the answer never depends on the order of docs.
func patchMetaFor(group, res string, docs ...any) strategicpatch.LookupPatchMeta {
	if res != "" {
		if meta, ok := builtinPatchMeta()[schema.GroupResource{Group: group, Resource: res}]; ok {
			return meta
		}
	}
	var named [2]string
	for _, doc := range docs {
		m, ok := doc.(map[string]any)
		if !ok {
			continue
		}
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		if apiVersion == "" || kind == "" {
			continue
		}
		if named[1] != "" && named != [2]string{apiVersion, kind} {
			return nil
		}
		named = [2]string{apiVersion, kind}
	}
	if named[1] == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(named[0])
	if err != nil || (res != "" && gv.Group != group) {
		return nil
	}
	obj, err := scheme.Scheme.New(gv.WithKind(named[1]))
	if err != nil {
		return nil
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(obj)
	if err != nil {
		return nil
	}
	return meta
}
