package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

const v2ProtoAccept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

func TestHandlers(t *testing.T) {
	t.Parallel()
	d := mustBuild(t)
	v2Proto, err := d.v2Proto.get()
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	d.Register(r)
	apps := d.groups["apis/apps/v1"]
	appsPath := "/openapi/v3/apis/apps/v1"

	isJSON := func(t *testing.T, body []byte) {
		t.Helper()
		if !json.Valid(body) {
			t.Error("body is not JSON")
		}
	}
	tests := []struct {
		name        string
		url         string
		header      map[string]string
		code        int
		contentType string
		headers     map[string]string // response headers that must match exactly
		check       func(t *testing.T, body []byte)
	}{
		{name: "v2 json by default", url: "/openapi/v2", code: 200, contentType: mediaJSON,
			headers: map[string]string{"ETag": strconv.Quote(d.v2JSON.etag)},
			check: func(t *testing.T, body []byte) {
				var doc struct{ Swagger string }
				if err := json.Unmarshal(body, &doc); err != nil || doc.Swagger != "2.0" {
					t.Errorf("swagger = %q, err %v", doc.Swagger, err)
				}
			}},
		{name: "v2 wildcard", url: "/openapi/v2", header: map[string]string{"Accept": "*/*"}, code: 200, contentType: mediaJSON},
		{name: "v2 protobuf (client-go spelling)", url: "/openapi/v2", header: map[string]string{"Accept": v2ProtoAccept},
			code: 200, contentType: mediaV2Proto,
			headers: map[string]string{"ETag": strconv.Quote(v2Proto.etag), "Vary": "Accept"},
			check: func(t *testing.T, body []byte) {
				var doc openapiv2.Document
				if err := proto.Unmarshal(body, &doc); err != nil {
					t.Fatal(err)
				}
				if doc.GetSwagger() != "2.0" || len(doc.GetDefinitions().GetAdditionalProperties()) == 0 {
					t.Errorf("swagger %q with %d definitions", doc.GetSwagger(), len(doc.GetDefinitions().GetAdditionalProperties()))
				}
			}},
		{name: "v2 protobuf (dotted spelling)", url: "/openapi/v2",
			header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"}, code: 200, contentType: mediaV2Proto},
		{name: "v2 quality order", url: "/openapi/v2",
			header: map[string]string{"Accept": "application/json;q=0.5, " + v2ProtoAccept}, code: 200, contentType: mediaV2Proto},
		{name: "v2 not acceptable", url: "/openapi/v2", header: map[string]string{"Accept": "text/html"}, code: 406},
		{name: "v2 not modified", url: "/openapi/v2",
			header: map[string]string{"If-None-Match": strconv.Quote(d.v2JSON.etag)}, code: 304},
		{name: "v2 other representation's etag", url: "/openapi/v2",
			header: map[string]string{"Accept": v2ProtoAccept, "If-None-Match": strconv.Quote(d.v2JSON.etag)}, code: 200, contentType: mediaV2Proto},
		{name: "v3 index", url: "/openapi/v3", code: 200, contentType: mediaJSON,
			check: func(t *testing.T, body []byte) {
				var idx struct {
					Paths map[string]struct{ ServerRelativeURL string }
				}
				if err := json.Unmarshal(body, &idx); err != nil {
					t.Fatal(err)
				}
				if len(idx.Paths) != 2 {
					t.Errorf("index has %d paths, want 2: %v", len(idx.Paths), idx.Paths)
				}
				url := regexp.MustCompile(`^/openapi/v3/(api/v1|apis/apps/v1)\?hash=[0-9A-F]{128}$`)
				for k, v := range idx.Paths {
					if !url.MatchString(v.ServerRelativeURL) || !strings.Contains(v.ServerRelativeURL, k+"?") {
						t.Errorf("%s: serverRelativeURL %q", k, v.ServerRelativeURL)
					}
				}
			}},
		{name: "v3 index not modified", url: "/openapi/v3",
			header: map[string]string{"If-None-Match": strconv.Quote(d.index.etag)}, code: 304},
		{name: "v3 current hash is immutable", url: apps.url, code: 200, contentType: mediaJSON,
			headers: map[string]string{"Cache-Control": "public, immutable", "ETag": strconv.Quote(apps.hash)},
			check:   isJSON},
		{name: "v3 without hash", url: appsPath, code: 200, contentType: mediaJSON,
			headers: map[string]string{"Cache-Control": ""}, check: isJSON},
		{name: "v3 stale hash redirects", url: appsPath + "?hash=0123", code: 301,
			headers: map[string]string{"Location": apps.url}},
		{name: "v3 not modified", url: apps.url,
			header: map[string]string{"If-None-Match": strconv.Quote(apps.hash)}, code: 304},
		{name: "v3 protobuf", url: apps.url,
			header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"},
			code:   200, contentType: mediaV3Proto,
			check: func(t *testing.T, body []byte) {
				var doc openapiv3.Document
				if err := proto.Unmarshal(body, &doc); err != nil {
					t.Fatal(err)
				}
				if doc.GetOpenapi() != "3.0.0" || len(doc.GetPaths().GetPath()) == 0 {
					t.Errorf("openapi %q with %d paths", doc.GetOpenapi(), len(doc.GetPaths().GetPath()))
				}
			}},
		{name: "v3 core group", url: "/openapi/v3/api/v1", code: 200, contentType: mediaJSON, check: isJSON},
		{name: "v3 unknown group", url: "/openapi/v3/apis/batch/v1", code: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.code, rec.Body.String())
			}
			if tt.contentType != "" {
				if got := rec.Header().Get("Content-Type"); got != tt.contentType {
					t.Errorf("Content-Type %q, want %q", got, tt.contentType)
				}
			}
			for k, want := range tt.headers {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if tt.code == 200 && tt.url == apps.url && rec.Header().Get("Expires") == "" {
				t.Error("no Expires header with a current hash")
			}
			if tt.check != nil {
				tt.check(t, rec.Body.Bytes())
			}
		})
	}
}
