package fieldmanager

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// trustedTyped is client-go's type converter with one saving: a Go-typed
// object the field manager converts with AllowDuplicates (the live object
// and the object being written, never an apply configuration) is not
// validated against the schema. Such an object is a value of the Go type
// the schema was generated from, so it conforms by construction; the
// validation walk of every field costs as much as building its field set.
// Unstructured objects (and anything converted without AllowDuplicates)
// are validated as before.
type trustedTyped struct {
	managedfields.TypeConverter

	mu    sync.RWMutex
	types map[typeKey]typeOf
}

type typeKey struct {
	gvk schema.GroupVersionKind
	t   reflect.Type
}

// typeOf is where a kind's type sits in the schema.
type typeOf struct {
	schema *smdschema.Schema
	ref    smdschema.TypeRef
}

func newTrustedTyped(tc managedfields.TypeConverter) *trustedTyped {
	return &trustedTyped{TypeConverter: tc, types: map[typeKey]typeOf{}}
}

// ObjectToTyped converts obj; see trustedTyped.
func (c *trustedTyped) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok || !slices.Contains(opts, typed.AllowDuplicates) {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	key := typeKey{gvk: obj.GetObjectKind().GroupVersionKind(), t: reflect.TypeOf(obj)}
	c.mu.RLock()
	ty, ok := c.types[key]
	c.mu.RUnlock()
	if !ok {
		// The first object of a kind is converted validated; its schema
		// and type reference serve every later one.
		tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.types[key] = typeOf{schema: tv.Schema(), ref: tv.TypeRef()}
		c.mu.Unlock()
		return tv, nil
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: reflect %s: %w", key.gvk, err)
	}
	//lint:ignore SA1019 the object is of the Go type the schema describes (see trustedTyped).
	return typed.AsTypedUnvalidated(v, ty.schema, ty.ref), nil
}
