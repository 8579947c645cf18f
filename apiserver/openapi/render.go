package openapi

import (
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The renderers build plain maps; encoding/json sorts their keys, so the
// output (and with it every hash and ETag) is deterministic.

const (
	v2DefPrefix = "#/definitions/"
	v3DefPrefix = "#/components/schemas/"
)

// docInfo is the info object of every document.
func docInfo() map[string]any {
	return map[string]any{"title": "Kubernetes", "version": "kubebus"}
}

// v2Document is the Swagger 2.0 document of every path.
func v2Document(items []pathItem, defs map[string]*jsonSchema) map[string]any {
	paths := map[string]any{}
	for _, it := range items {
		p := map[string]any{}
		if len(it.Params) > 0 {
			p["parameters"] = v2Params(it.Params)
		}
		for _, op := range it.Ops {
			p[op.Method] = v2Operation(op)
		}
		paths[it.Path] = p
	}
	definitions := map[string]any{}
	for name, s := range closure(items, defs) {
		definitions[name] = v2Schema(s)
	}
	return map[string]any{
		"swagger":     "2.0",
		"info":        docInfo(),
		"paths":       paths,
		"definitions": definitions,
	}
}

func v2Operation(op operation) map[string]any {
	m := map[string]any{
		"operationId": op.ID,
		"description": op.Description,
		"tags":        []string{op.Tag},
		"consumes":    op.Consumes,
		"produces":    op.Produces,
	}
	var params []any
	if op.Body != nil {
		params = append(params, map[string]any{
			"name": "body", "in": "body", "required": !op.BodyOptional, "schema": v2Schema(op.Body),
		})
	}
	params = append(params, v2Params(op.Params)...)
	if len(params) > 0 {
		m["parameters"] = params
	}
	responses := map[string]any{}
	for _, r := range op.Responses {
		resp := map[string]any{"description": r.Description}
		if r.Schema != nil {
			resp["schema"] = v2Schema(r.Schema)
		}
		responses[strconv.Itoa(r.Code)] = resp
	}
	m["responses"] = responses
	addOperationExtensions(m, op)
	return m
}

func v2Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m := map[string]any{"name": p.Name, "in": p.In, "type": p.Type, "uniqueItems": true}
		if p.Description != "" {
			m["description"] = p.Description
		}
		if p.Required {
			m["required"] = true
		}
		out = append(out, m)
	}
	return out
}

func v2Schema(s *jsonSchema) map[string]any {
	m := map[string]any{}
	if s.Ref != "" {
		m["$ref"] = v2DefPrefix + s.Ref
	} else {
		setType(m, s)
		if s.Items != nil {
			m["items"] = v2Schema(s.Items)
		}
		if s.AdditionalProperties != nil {
			m["additionalProperties"] = v2Schema(s.AdditionalProperties)
		}
		if s.Properties != nil {
			props := map[string]any{}
			for name, p := range s.Properties {
				props[name] = v2Schema(p)
			}
			m["properties"] = props
		}
	}
	addSchemaExtensions(m, s)
	return m
}

// v3Document is the OpenAPI 3.0 document of one group-version.
func v3Document(items []pathItem, defs map[string]*jsonSchema) map[string]any {
	paths := map[string]any{}
	for _, it := range items {
		p := map[string]any{}
		if len(it.Params) > 0 {
			p["parameters"] = v3Params(it.Params)
		}
		for _, op := range it.Ops {
			p[op.Method] = v3Operation(op)
		}
		paths[it.Path] = p
	}
	schemas := map[string]any{}
	for name, s := range closure(items, defs) {
		schemas[name] = v3Schema(s)
	}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       docInfo(),
		"paths":      paths,
		"components": map[string]any{"schemas": schemas},
	}
}

func v3Operation(op operation) map[string]any {
	m := map[string]any{
		"operationId": op.ID,
		"description": op.Description,
		"tags":        []string{op.Tag},
	}
	if len(op.Params) > 0 {
		m["parameters"] = v3Params(op.Params)
	}
	if op.Body != nil {
		m["requestBody"] = map[string]any{
			"content":  v3Content(op.Consumes, op.Body),
			"required": !op.BodyOptional,
		}
	}
	responses := map[string]any{}
	for _, r := range op.Responses {
		resp := map[string]any{"description": r.Description}
		if r.Schema != nil {
			resp["content"] = v3Content(op.Produces, r.Schema)
		}
		responses[strconv.Itoa(r.Code)] = resp
	}
	m["responses"] = responses
	addOperationExtensions(m, op)
	return m
}

func v3Content(media []string, s *jsonSchema) map[string]any {
	content := map[string]any{}
	for _, mt := range media {
		content[mt] = map[string]any{"schema": v3Schema(s)}
	}
	return content
}

func v3Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m := map[string]any{
			"name":   p.Name,
			"in":     p.In,
			"schema": map[string]any{"type": p.Type, "uniqueItems": true},
		}
		if p.Description != "" {
			m["description"] = p.Description
		}
		if p.Required {
			m["required"] = true
		}
		out = append(out, m)
	}
	return out
}

// v3Schema renders s for OpenAPI 3.0, where siblings of $ref are ignored:
// a reference that carries a description or extensions is wrapped in allOf.
func v3Schema(s *jsonSchema) map[string]any {
	m := map[string]any{}
	if s.Ref != "" {
		ref := map[string]any{"$ref": v3DefPrefix + s.Ref}
		if s.Description == "" && len(s.Extensions) == 0 {
			return ref
		}
		m["allOf"] = []any{ref}
	} else {
		if len(s.OneOfTypes) > 0 {
			var alts []any
			for _, t := range s.OneOfTypes {
				alts = append(alts, map[string]any{"type": t})
			}
			m["oneOf"] = alts
			if s.Format != "" {
				m["format"] = s.Format
			}
		} else {
			setType(m, s)
		}
		if s.Format == "int-or-string" {
			m[extIntOrString] = true
		}
		if s.Items != nil {
			m["items"] = v3Schema(s.Items)
		}
		if s.AdditionalProperties != nil {
			m["additionalProperties"] = v3Schema(s.AdditionalProperties)
		}
		if s.Properties != nil {
			props := map[string]any{}
			for name, p := range s.Properties {
				props[name] = v3Schema(p)
			}
			m["properties"] = props
		}
	}
	addSchemaExtensions(m, s)
	return m
}

func setType(m map[string]any, s *jsonSchema) {
	if s.Type != "" {
		m["type"] = s.Type
	}
	if s.Format != "" {
		m["format"] = s.Format
	}
}

func addSchemaExtensions(m map[string]any, s *jsonSchema) {
	if s.Description != "" {
		m["description"] = s.Description
	}
	if len(s.Required) > 0 {
		m["required"] = s.Required
	}
	for k, v := range s.Extensions {
		m[k] = v
	}
	if len(s.GVKs) > 0 {
		list := make([]any, 0, len(s.GVKs))
		for _, gvk := range s.GVKs {
			list = append(list, gvkObject(gvk))
		}
		m[extGVK] = list
	}
}

func addOperationExtensions(m map[string]any, op operation) {
	if op.Action != "" {
		m[extAction] = op.Action
	}
	if op.GVK.Kind != "" {
		m[extGVK] = gvkObject(op.GVK)
	}
}

func gvkObject(gvk schema.GroupVersionKind) map[string]string {
	return map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// closure returns the definitions the paths reference, directly or through
// other definitions.
func closure(items []pathItem, defs map[string]*jsonSchema) map[string]*jsonSchema {
	out := map[string]*jsonSchema{}
	var visit func(name string)
	visit = func(name string) {
		if _, done := out[name]; done {
			return
		}
		s := defs[name]
		out[name] = s
		s.refs(visit)
	}
	for _, it := range items {
		for _, op := range it.Ops {
			op.Body.refs(visit)
			for _, r := range op.Responses {
				r.Schema.refs(visit)
			}
		}
	}
	return out
}
