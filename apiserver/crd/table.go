package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
)

// printer returns the table columns of a version's additionalPrinterColumns
// and the function printing one object's row, as upstream's tableconvertor
// does: a Name column first, then the columns (an Age column when there are
// none), with values found by JSONPath.
func printer(cols []apiextensionsv1.CustomResourceColumnDefinition) ([]metav1.TableColumnDefinition, func(runtime.Object, time.Time) ([]any, error), error) {
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", Description: metaDescriptions["creationTimestamp"], JSONPath: ".metadata.creationTimestamp",
		}}
	}
	headers := []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metaDescriptions["name"]},
	}
	paths := make([]*jsonpath.JSONPath, 0, len(cols))
	for _, c := range cols {
		p := jsonpath.New(c.Name)
		if err := p.Parse("{" + c.JSONPath + "}"); err != nil {
			return nil, nil, fmt.Errorf("unrecognized column definition %q: %w", c.JSONPath, err)
		}
		p.AllowMissingKeys(true)
		paths = append(paths, p)
		desc := c.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + c.JSONPath
		}
		headers = append(headers, metav1.TableColumnDefinition{
			Name: c.Name, Type: c.Type, Format: c.Format, Description: desc, Priority: c.Priority,
		})
	}
	cells := func(obj runtime.Object, now time.Time) ([]any, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("printing %T: %w", obj, err)
		}
		content, err := unstructuredContent(obj)
		if err != nil {
			return nil, err
		}
		row := make([]any, 1, 1+len(paths))
		row[0] = m.GetName()
		var buf bytes.Buffer
		for i, p := range paths {
			results, err := p.FindResults(content)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				row = append(row, nil)
				continue
			}
			value := results[0][0].Interface()
			typ := headers[i+1].Type
			if typ == "string" {
				buf.Reset()
				if err := p.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
					row = append(row, nil)
				} else {
					row = append(row, buf.String())
				}
				continue
			}
			row = append(row, cellFor(typ, value, now))
		}
		return row, nil
	}
	return headers, cells, nil
}

func unstructuredContent(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T to unstructured: %w", obj, err)
	}
	return m, nil
}

// cellFor converts a JSON value to the cell of a column type, as upstream's
// tableconvertor does; dates print as their age at now.
func cellFor(typ string, value any, now time.Time) any {
	switch typ {
	case "integer":
		switch n := value.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch n := value.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		case json.Number:
			if f, err := n.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			if t.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now.Sub(t.Time))
		}
	}
	return nil
}
