// Package fieldmanager builds upstream's field managers (the
// metadata.managedFields bookkeeping and the server-side apply merge of
// k8s.io/apimachinery/pkg/util/managedfields) for the served resources.
//
// Types are described by the structured-merge-diff schema client-go ships
// for every k8s.io/api kind (applyconfigurations.NewTypeConverter): it is
// generated from upstream's OpenAPI definitions, so lists merge by the
// same keys (x-kubernetes-list-type, list-map-keys) as on a Kubernetes API
// server, and typed objects are read by reflection without a conversion to
// unstructured. A kind the schema does not know is merged as upstream
// merges a CRD without a schema: every field atomic.
//
// Build the Managers once at startup; they are safe for concurrent use.
package fieldmanager

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// FieldManager is upstream's field manager of one resource and subresource.
type FieldManager = managedfields.FieldManager

// Managers holds one field manager per resource and written subresource.
type Managers struct {
	typed, deduced managedfields.TypeConverter

	mu    sync.RWMutex
	byRes map[*resource.Resource]map[resource.Subresource]*FieldManager
	// statusReset are the indexes of the top-level struct fields of a
	// built-in kind that a write through its status subresource cannot
	// change (spec): see ForStatusUpdate.
	statusReset map[*resource.Resource][]int
}

// writtenSubresources are the subresources whose writes change the stored
// object and so are tracked in managedFields. A pod's binding is not: as
// upstream's binding storage, it sets the node without a field manager.
var writtenSubresources = []resource.Subresource{resource.Status, resource.Scale, resource.Finalize, resource.Approval}

// New builds the field managers of resources. Create-only resources (the
// reviews) are never stored and get none.
func New(resources []*resource.Resource) (*Managers, error) {
	m := &Managers{
		typed:   newTrustedTyped(applyconfigurations.NewTypeConverter(scheme.Scheme)),
		deduced: managedfields.NewDeducedTypeConverter(),
		byRes:   map[*resource.Resource]map[resource.Subresource]*FieldManager{},

		statusReset: map[*resource.Resource][]int{},
	}
	for _, res := range resources {
		if err := m.Add(res); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Add builds the field managers of one more resource (a custom resource's
// version, served from now on).
func (m *Managers) Add(res *resource.Resource) error {
	if res.CreateOnly || res.New == nil {
		return nil
	}
	subs, err := m.build(res)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.byRes[res] = subs
	if _, ok := subs[resource.Status]; ok && !res.Custom() {
		m.statusReset[res] = resetStructFields(res.New())
	}
	m.mu.Unlock()
	return nil
}

// Remove forgets the field managers of res.
func (m *Managers) Remove(res *resource.Resource) {
	m.mu.Lock()
	delete(m.byRes, res)
	delete(m.statusReset, res)
	m.mu.Unlock()
}

func (m *Managers) build(res *resource.Resource) (map[resource.Subresource]*FieldManager, error) {
	custom := res.Custom()
	tc, known := m.typed, knownToSchema(res)
	switch {
	case custom && res.TypeConverter != nil:
		tc = res.TypeConverter
	case !known:
		tc = m.deduced
	}
	subs := map[resource.Subresource]*FieldManager{}
	build := func(sub resource.Subresource) error {
		var adapt adapter = builtinAdapter{res: res}
		if custom {
			adapt = customAdapter{res: res}
		}
		reset := fieldpath.NewExcludeFilterSetMap(resetFields(res, sub))
		newFM := managedfields.NewDefaultFieldManager
		if !known || custom {
			newFM = managedfields.NewDefaultCRDFieldManager
		}
		fm, err := newFM(tc, adapt, adapt, adapt, res.GVK, res.GVK.GroupVersion(), string(sub), reset)
		if err != nil {
			return fmt.Errorf("fieldmanager: %s %s: %w", res.Plural, sub, err)
		}
		subs[sub] = fm
		return nil
	}
	if err := build(""); err != nil {
		return nil, err
	}
	for _, sub := range writtenSubresources {
		if res.Serves(sub) {
			if err := build(sub); err != nil {
				return nil, err
			}
		}
	}
	return subs, nil
}

// For returns the field manager of res and sub, nil when writes there are
// not tracked.
func (m *Managers) For(res *resource.Resource, sub resource.Subresource) *FieldManager {
	if m == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byRes[res][sub]
}

// ForStatusUpdate returns obj as the status field manager of res should
// compare it in an update: a shallow copy without the top-level fields
// other than metadata and status (spec), or obj itself for a kind it does
// not know (a custom resource). Those fields are reset fields of the
// status subresource, so the field manager drops every change to them
// from what it records (resetFields); left out of both the live and the
// new object they yield the same managed fields without a walk of the
// whole spec on every status write. Only for Update: an apply merges into
// the live object and needs all of it.
func (m *Managers) ForStatusUpdate(res *resource.Resource, obj runtime.Object) runtime.Object {
	m.mu.RLock()
	drop, ok := m.statusReset[res]
	m.mu.RUnlock()
	if !ok || len(drop) == 0 {
		return obj
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	for _, i := range drop {
		cp.Elem().Field(i).SetZero()
	}
	out, ok := cp.Interface().(runtime.Object)
	if !ok {
		return obj
	}
	return out
}

// resetStructFields are the indexes of obj's top-level struct fields that
// resetFields lists for its status subresource (resetOnStatus; TypeMeta
// and ObjectMeta are embedded).
func resetStructFields(obj runtime.Object) []int {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	var idx []int
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || !f.IsExported() || name == "-" {
			continue
		}
		if resetOnStatus(name) {
			idx = append(idx, i)
		}
	}
	return idx
}

// knownToSchema reports whether client-go's schema describes the kind.
func knownToSchema(res *resource.Resource) bool {
	obj, err := scheme.Scheme.New(res.GVK)
	if err != nil {
		return false
	}
	return reflect.TypeOf(obj) == reflect.TypeOf(res.New())
}

// resetFields are the fields a write through sub may not change, which
// apply therefore neither merges nor records as owned (upstream's
// strategies' GetResetFields): status on the object itself; on status,
// everything but status, with the metadata upstream's
// ResetObjectMetaForStatus keeps.
func resetFields(res *resource.Resource, sub resource.Subresource) map[fieldpath.APIVersion]*fieldpath.Set {
	v := fieldpath.APIVersion(res.GVK.GroupVersion().String())
	switch sub {
	case "":
		if !res.Serves(resource.Status) {
			return nil
		}
		return map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
	case resource.Status:
		paths := []fieldpath.Path{
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
			fieldpath.MakePathOrDie("metadata", "finalizers"),
			fieldpath.MakePathOrDie("metadata", "ownerReferences"),
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
		}
		top := topLevelFields(res.New())
		if res.Custom() {
			// As upstream's custom resource status strategy: spec.
			top = []string{"spec"}
		}
		for _, name := range top {
			if resetOnStatus(name) {
				paths = append(paths, fieldpath.MakePathOrDie(name))
			}
		}
		return map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(paths...)}
	}
	return nil
}

// resetOnStatus reports whether a write through the status subresource
// leaves the top-level field name as stored: every field but the type,
// metadata and status.
func resetOnStatus(name string) bool {
	switch name {
	case "apiVersion", "kind", "metadata", "status":
		return false
	}
	return true
}

// topLevelFields are the JSON names of obj's fields (embedded structs
// flattened, as encoding/json does).
func topLevelFields(obj runtime.Object) []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names = append(names, name)
		}
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		walk(t.Elem())
	}
	return names
}

// errOtherVersion is returned for a conversion between versions: kubebus
// serves each kind in one version.
var errOtherVersion = errors.New("fieldmanager: kubebus serves one version of each kind")

// builtinAdapter gives the field manager a built-in resource's object
// model: it creates, defaults and converts objects of the one served
// version. Conversion
// between typed and unstructured forms is the only conversion there is; a
// typed object of the version is returned as is, as upstream's unsafe
// convertor does.
type builtinAdapter struct{ res *resource.Resource }

// adapter is what the field manager needs of the object model.
type adapter interface {
	runtime.ObjectCreater
	runtime.ObjectConvertor
	runtime.ObjectDefaulter
}

func (a builtinAdapter) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk != a.res.GVK {
		return nil, fmt.Errorf("%w: %s is not %s", errOtherVersion, gvk, a.res.GVK)
	}
	obj := a.res.New()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

func (a builtinAdapter) Default(obj runtime.Object) {
	if a.res.Default != nil {
		a.res.Default(obj)
	}
}

func (a builtinAdapter) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("%w: cannot convert %T", errOtherVersion, in)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

func (a builtinAdapter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{a.res.GVK})
	if !ok || target != a.res.GVK {
		return nil, fmt.Errorf("%w: no %s in %v", errOtherVersion, a.res.GVK, gv)
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		if in.GetObjectKind().GroupVersionKind() != a.res.GVK {
			return nil, fmt.Errorf("%w: object is %s", errOtherVersion, in.GetObjectKind().GroupVersionKind())
		}
		return in, nil
	}
	out := a.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(a.res.GVK)
	return out, nil
}

func (a builtinAdapter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
