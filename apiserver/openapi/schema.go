package openapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jsonSchema is the version-neutral form of one schema. The v2 and v3
// renderers turn it into their own JSON: a Ref with siblings is a plain
// $ref in v2 and an allOf wrapper in v3, OneOfTypes is v3 only.
type jsonSchema struct {
	Ref                  string // definition name, not a JSON pointer
	Type                 string
	Format               string
	Description          string
	OneOfTypes           []string // v3 alternatives for primitives such as Quantity
	Items                *jsonSchema
	AdditionalProperties *jsonSchema
	Properties           map[string]*jsonSchema
	Required             []string
	Extensions           map[string]any
	GVKs                 []schema.GroupVersionKind // top-level kinds only
}

// Method sets the reflection looks for. k8s.io/api and apimachinery types
// implement them (the kube-openapi generator reads the same ones).
type (
	swaggerDocer interface{ SwaggerDoc() map[string]string }
	modelNamer   interface{ OpenAPIModelName() string }
	schemaTyper  interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	v3OneOfTyper interface{ OpenAPIV3OneOfTypes() []string }
)

// Struct tags kubectl apply reads through the schema.
const (
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extGVK           = "x-kubernetes-group-version-kind"
	extAction        = "x-kubernetes-action"
	extIntOrString   = "x-kubernetes-int-or-string"
)

// registry turns Go types into named definitions. Every named struct (and
// every named type with its own OpenAPI type) becomes a definition that
// others reference, which also makes recursive types finite.
type registry struct {
	defs  map[string]*jsonSchema
	names map[reflect.Type]string
	types map[string]reflect.Type
	errs  []error
}

func newRegistry() *registry {
	return &registry{
		defs:  map[string]*jsonSchema{},
		names: map[reflect.Type]string{},
		types: map[string]reflect.Type{},
	}
}

// err returns the first problem met while reflecting, if any.
func (r *registry) err() error {
	if len(r.errs) == 0 {
		return nil
	}
	return r.errs[0]
}

// schemaOf returns the schema of a value of type t: a reference for
// definitions, an inline schema otherwise.
func (r *registry) schemaOf(t reflect.Type) *jsonSchema {
	t = deref(t)
	if isDefinition(t) {
		return &jsonSchema{Ref: r.define(t)}
	}
	switch t.Kind() {
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return &jsonSchema{Type: "integer", Format: "int64"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return &jsonSchema{Type: "integer", Format: "int32"}
	case reflect.Float32:
		return &jsonSchema{Type: "number", Format: "float"}
	case reflect.Float64:
		return &jsonSchema{Type: "number", Format: "double"}
	case reflect.String:
		return &jsonSchema{Type: "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &jsonSchema{Type: "string", Format: "byte"}
		}
		return &jsonSchema{Type: "array", Items: r.schemaOf(t.Elem())}
	case reflect.Map:
		return &jsonSchema{Type: "object", AdditionalProperties: r.schemaOf(t.Elem())}
	case reflect.Struct:
		s := &jsonSchema{}
		r.fillStruct(s, t)
		return s
	case reflect.Interface:
		return &jsonSchema{} // any JSON value
	default:
		r.errs = append(r.errs, fmt.Errorf("openapi: type %s has kind %s, which JSON cannot encode", t, t.Kind()))
		return &jsonSchema{}
	}
}

// define registers t as a definition (once) and returns its name.
func (r *registry) define(t reflect.Type) string {
	if name, ok := r.names[t]; ok {
		return name
	}
	name := modelName(t)
	if other, taken := r.types[name]; taken && other != t {
		r.errs = append(r.errs, fmt.Errorf("openapi: types %s and %s both map to definition %q", other, t, name))
	}
	r.names[t] = name
	r.types[name] = t
	s := &jsonSchema{}
	r.defs[name] = s // before walking fields, so self references terminate

	s.Description = swaggerDoc(t)[""]
	inst := reflect.New(t).Interface()
	switch v := inst.(type) {
	case schemaTyper:
		if types := v.OpenAPISchemaType(); len(types) > 0 {
			s.Type = types[0]
		}
		s.Format = v.OpenAPISchemaFormat()
		if o, ok := inst.(v3OneOfTyper); ok {
			s.OneOfTypes = o.OpenAPIV3OneOfTypes()
		}
	case json.Marshaler:
		s.Type = "object" // opaque JSON such as RawExtension and FieldsV1
	case encoding.TextMarshaler:
		s.Type = "string"
	default:
		r.fillStruct(s, t)
	}
	return name
}

// fillStruct sets the object properties of struct type t on s, the way
// encoding/json sees them: tag names, "-" skipped, embedded structs without
// a name flattened, outer fields winning over embedded ones.
func (r *registry) fillStruct(s *jsonSchema, t reflect.Type) {
	s.Type = "object"
	r.addFields(s, t, swaggerDoc(t), map[reflect.Type]bool{t: true})
}

func (r *registry) addFields(s *jsonSchema, t reflect.Type, docs map[string]string, seen map[reflect.Type]bool) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
			embedded = append(embedded, deref(f.Type))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.Properties[name]; dup {
			continue
		}
		fs := r.schemaOf(f.Type)
		fs.Description = docs[name]
		if v := f.Tag.Get("patchStrategy"); v != "" {
			fs.setExtension(extPatchStrategy, v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			fs.setExtension(extPatchMergeKey, v)
		}
		if s.Properties == nil {
			s.Properties = map[string]*jsonSchema{}
		}
		s.Properties[name] = fs
		// Without +optional markers to read, a field is taken as required
		// when encoding/json always writes it, as upstream's generator does
		// for fields without +optional (DeploymentSpec.selector, a pointer,
		// is required).
		if !hasOption(opts, "omitempty") && !hasOption(opts, "omitzero") {
			s.Required = append(s.Required, name)
		}
	}
	for _, et := range embedded {
		if seen[et] {
			continue
		}
		seen[et] = true
		r.addFields(s, et, swaggerDoc(et), seen)
	}
}

func (s *jsonSchema) setExtension(key string, v any) {
	if s.Extensions == nil {
		s.Extensions = map[string]any{}
	}
	s.Extensions[key] = v
}

// addGVK marks the definition as the schema of a served kind.
func (s *jsonSchema) addGVK(gvk schema.GroupVersionKind) {
	for _, have := range s.GVKs {
		if have == gvk {
			return
		}
	}
	s.GVKs = append(s.GVKs, gvk)
}

// refs calls fn with every definition name s references directly.
func (s *jsonSchema) refs(fn func(string)) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		fn(s.Ref)
	}
	s.Items.refs(fn)
	s.AdditionalProperties.refs(fn)
	for _, p := range s.Properties {
		p.refs(fn)
	}
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isDefinition reports whether values of t are described by a named
// definition rather than inline.
func isDefinition(t reflect.Type) bool {
	if t.Name() == "" || t.PkgPath() == "" {
		return false
	}
	if t.Kind() == reflect.Struct {
		return true
	}
	_, typed := reflect.New(t).Interface().(schemaTyper)
	return typed
}

// modelName is the upstream definition name of t: the type's own
// OpenAPIModelName when it declares one, else its reversed-domain package
// path and name (k8s.io/api/apps/v1.Deployment -> io.k8s.api.apps.v1.Deployment).
func modelName(t reflect.Type) string {
	if n, ok := declared(t, func(v any) (string, bool) {
		m, ok := v.(modelNamer)
		if !ok {
			return "", false
		}
		return m.OpenAPIModelName(), true
	}); ok {
		return n
	}
	pkg := t.PkgPath()
	host, rest, _ := strings.Cut(pkg, "/")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	name := strings.Join(labels, ".")
	if rest != "" {
		name += "." + strings.ReplaceAll(rest, "/", ".")
	}
	return name + "." + sanitize(t.Name())
}

// swaggerDoc returns the field descriptions t declares ("" is the type's).
func swaggerDoc(t reflect.Type) map[string]string {
	docs, _ := declared(t, func(v any) (map[string]string, bool) {
		d, ok := v.(swaggerDocer)
		if !ok {
			return nil, false
		}
		return d.SwaggerDoc(), true
	})
	return docs
}

// declared calls get on a zero t and reports its result, unless the method
// is only promoted from an embedded field (TypeMeta declares both
// SwaggerDoc and OpenAPIModelName; a kind embedding it must not inherit them).
func declared[T any](t reflect.Type, get func(any) (T, bool)) (T, bool) {
	var zero T
	v, ok := get(reflect.New(t).Interface())
	if !ok {
		return zero, false
	}
	if t.Kind() != reflect.Struct {
		return v, true
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.Anonymous {
			continue
		}
		if ev, ok := get(reflect.New(deref(f.Type)).Interface()); ok && reflect.DeepEqual(ev, v) {
			return zero, false
		}
	}
	return v, true
}

// sanitize keeps a Go type name usable in a JSON pointer (generic
// instantiations carry brackets and package paths).
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '_'
	}, name)
}
