package openapi

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// param is one operation or path parameter.
type param struct {
	Name        string
	In          string // "query" or "path"
	Type        string // boolean, integer, string
	Description string
	Required    bool
}

// paramSets holds the query parameters of each kind of operation. They are
// read from the option types the server decodes them into, so names, types
// and descriptions follow the Go API.
type paramSets struct {
	pretty           param
	list             []param // list and watch
	deleteCollection []param
	create, update   []param
	patch            []param
	delete           []param
	log              []param
	exec, attach     []param
	portForward      []param
}

func newParamSets() paramSets {
	list := queryParams(reflect.TypeFor[metav1.ListOptions]())
	del := queryParams(reflect.TypeFor[metav1.DeleteOptions]())
	var collection []param
	for _, p := range list {
		if p.Name != "watch" && p.Name != "allowWatchBookmarks" {
			collection = append(collection, p)
		}
	}
	for _, p := range del {
		if !hasParam(collection, p.Name) {
			collection = append(collection, p)
		}
	}
	return paramSets{
		pretty: param{
			Name: "pretty", In: "query", Type: "string",
			Description: "If 'true', the response body is indented for humans.",
		},
		list:             list,
		deleteCollection: collection,
		create:           queryParams(reflect.TypeFor[metav1.CreateOptions]()),
		update:           queryParams(reflect.TypeFor[metav1.UpdateOptions]()),
		patch:            queryParams(reflect.TypeFor[metav1.PatchOptions]()),
		delete:           del,
		log:              queryParams(reflect.TypeFor[corev1.PodLogOptions]()),
		exec:             queryParams(reflect.TypeFor[corev1.PodExecOptions]()),
		attach:           queryParams(reflect.TypeFor[corev1.PodAttachOptions]()),
		portForward:      queryParams(reflect.TypeFor[corev1.PodPortForwardOptions]()),
	}
}

// queryParams lists the scalar fields of an options struct as query
// parameters; embedded TypeMeta and nested objects are not parameters.
func queryParams(t reflect.Type) []param {
	docs := swaggerDoc(t)
	var out []param
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		typ := paramType(f.Type)
		if typ == "" {
			continue
		}
		out = append(out, param{Name: name, In: "query", Type: typ, Description: docs[name]})
	}
	return out
}

// paramType is the OpenAPI type of a query parameter, "" when the field
// cannot be one. Repeated parameters take their element's type.
func paramType(t reflect.Type) string {
	t = deref(t)
	if t.Kind() == reflect.Slice {
		t = deref(t.Elem())
	}
	if st, ok := reflect.New(t).Interface().(schemaTyper); ok {
		if types := st.OpenAPISchemaType(); len(types) > 0 {
			return types[0]
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.String:
		return "string"
	}
	return ""
}

func hasParam(ps []param, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

func pathParam(name, description string) param {
	return param{Name: name, In: "path", Type: "string", Description: description, Required: true}
}
