package crd

import (
	"encoding/json"
	"testing"
)

func TestOpenAPIV3(t *testing.T) {
	tests := []struct {
		version string
		paths   []string
		wantErr bool
	}{
		{version: "v1", paths: []string{
			"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs",
			"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
			"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status",
			"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale",
			"/apis/stable.example.com/v1/crontabs",
		}},
		{version: "v1beta1", paths: []string{"/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs/{name}/status"}},
		{version: "v2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			out, err := OpenAPIV3(cronTab(t), tt.version)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error for an unknown version")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Paths      map[string]json.RawMessage `json:"paths"`
				Components struct {
					Schemas map[string]struct {
						Properties map[string]struct {
							Properties map[string]json.RawMessage `json:"properties"`
						} `json:"properties"`
					} `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			for _, p := range tt.paths {
				if _, ok := doc.Paths[p]; !ok {
					t.Errorf("no path %s", p)
				}
			}
			found := false
			for _, s := range doc.Components.Schemas {
				if _, ok := s.Properties["spec"].Properties["cronSpec"]; ok {
					found = true
				}
			}
			if !found {
				t.Error("no component schema with spec.properties.cronSpec")
			}
			if _, ok := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
				t.Error("ObjectMeta definition missing")
			}
		})
	}
}
