package apiserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNegotiate(t *testing.T) {
	t.Parallel()
	type want struct {
		yaml, protobuf, pretty bool
		kind                   outputKind
	}
	tests := []struct {
		name, accept, query, agent string
		want                       want
		notAcceptable              bool
	}{
		{name: "no Accept", want: want{}},
		{name: "json", accept: "application/json", want: want{}},
		{name: "wildcard", accept: "*/*", want: want{}},
		{name: "application wildcard", accept: "application/*", want: want{}},
		{name: "yaml preferred by weight", accept: "application/yaml;q=0.9, application/json;q=0.5", want: want{yaml: true}},
		{name: "json preferred by weight", accept: "application/yaml;q=0.5, application/json;q=0.9", want: want{}},
		{name: "protobuf weighted low", accept: "application/vnd.kubernetes.protobuf;q=0.1, application/json", want: want{}},
		{name: "client-go protobuf", accept: "application/vnd.kubernetes.protobuf, */*", want: want{protobuf: true}},
		{name: "unknown then json", accept: "text/html, application/json;q=0.2", want: want{}},
		{name: "q=0 refuses", accept: "application/json;q=0", notAcceptable: true},
		{name: "q=0 refuses a type a wildcard would take", accept: "application/json;q=0, */*", want: want{yaml: true}},
		{name: "q=0 on a wildcard, a type named", accept: "*/*;q=0, application/yaml;q=0.5", want: want{yaml: true}},
		{name: "unknown only", accept: "application/xml", notAcceptable: true},
		{name: "text wildcard", accept: "text/*", notAcceptable: true},
		{name: "table", accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", want: want{kind: outTable}},
		{name: "table in yaml", accept: "application/yaml;as=Table;v=v1;g=meta.k8s.io", want: want{yaml: true, kind: outTable}},
		{name: "table of an unknown group falls through", accept: "application/json;as=Table;v=v1;g=example.com, application/yaml", want: want{yaml: true}},
		{name: "protobuf table falls back to json", accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json", want: want{kind: outTable}},
		{name: "metadata", accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", want: want{kind: outMetadata}},
		{name: "unknown conversion only", accept: "application/json;as=Pod;g=meta.k8s.io;v=v1", notAcceptable: true},
		{name: "watch stream parameter", accept: "application/json;stream=watch", want: want{}},
		{name: "other stream", accept: "application/json;stream=other", notAcceptable: true},
		{name: "pretty media parameter", accept: "application/json;pretty=1", want: want{pretty: true}},
		{name: "pretty query", query: "pretty=true", want: want{pretty: true}},
		{name: "pretty query 1", query: "pretty=1", want: want{pretty: true}},
		{name: "curl is pretty", agent: "curl/7.88.1", want: want{pretty: true}},
		{name: "curl with pretty=false", agent: "curl/7.88.1", query: "pretty=false", want: want{}},
		{name: "browser is pretty", agent: "Mozilla/5.0 (X11)", want: want{pretty: true}},
		{name: "python is not", agent: "OpenAPI-Generator/22.6.0/python", want: want{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/api/v1/pods?"+tc.query, nil)
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			r.Header.Set("User-Agent", tc.agent)
			out, err := negotiate(r)
			if tc.notAcceptable {
				if statusCode(t, err) != 406 {
					t.Fatalf("got %+v, %v; want 406", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{yaml: out.yaml, protobuf: out.protobuf, pretty: out.pretty, kind: out.kind}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]bool{
		"": false, "gzip": true, "gzip, deflate, br": true, "deflate , gzip": true, "x-gzip": false, "br": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", header, got, want)
		}
	}
}

func TestWriteOut(t *testing.T) {
	t.Parallel()
	big := &metav1.Status{Message: strings.Repeat("x", gzipThreshold)}
	small := &metav1.Status{Message: "small"}
	tests := []struct {
		name     string
		out      output
		v        any
		wantType string
		wantGzip bool
		wantBody string
	}{
		{name: "json", out: output{}, v: small, wantType: "application/json", wantBody: `{"metadata":{},"message":"small"}`},
		{name: "pretty json", out: output{pretty: true}, v: small, wantType: "application/json", wantBody: "{\n  \"metadata\": {},\n  \"message\": \"small\"\n}"},
		{name: "yaml", out: output{yaml: true, pretty: true}, v: small, wantType: "application/yaml", wantBody: "message: small\nmetadata: {}\n"},
		{name: "small response is not compressed", out: output{gzip: true}, v: small, wantType: "application/json", wantBody: `{"metadata":{},"message":"small"}`},
		{name: "large response is compressed", out: output{gzip: true}, v: big, wantType: "application/json", wantGzip: true},
		{name: "large response without gzip", out: output{}, v: big, wantType: "application/json"},
		{name: "protobuf", out: output{protobuf: true}, v: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}},
			wantType: "application/vnd.kubernetes.protobuf"},
		{name: "protobuf of an object without apiVersion is JSON", out: output{protobuf: true},
			v: &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}}, wantType: "application/json", wantBody: `{"kind":"APIVersions","versions":null,"serverAddressByClientCIDRs":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			writeOut(w, tc.out, 200, tc.v)
			if ct := w.Header().Get("Content-Type"); ct != tc.wantType {
				t.Errorf("Content-Type %q, want %q", ct, tc.wantType)
			}
			body := w.Body.Bytes()
			if gz := w.Header().Get("Content-Encoding") == "gzip"; gz != tc.wantGzip {
				t.Fatalf("gzip %v, want %v", gz, tc.wantGzip)
			}
			if tc.wantGzip {
				if w.Header().Get("Vary") != "Accept-Encoding" {
					t.Errorf("Vary %q", w.Header().Get("Vary"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(body, []byte(big.Message)) {
					t.Errorf("decompressed body lacks the message")
				}
			}
			if tc.wantBody != "" && string(body) != tc.wantBody {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
		})
	}
}

func TestRenderTableIncludeObject(t *testing.T) {
	t.Parallel()
	cms := builtin(t, "configmaps")
	cm := cms.New()
	for policy, code := range map[metav1.IncludeObjectPolicy]int32{"": 0, metav1.IncludeNone: 0, metav1.IncludeObject: 0, metav1.IncludeMetadata: 0, "Everything": 400} {
		_, err := render(cms, output{kind: outTable, tableGV: "meta.k8s.io/v1", includeOb: policy}, []runtime.Object{cm}, nil, metav1.ListMeta{})
		if got := statusCode(t, err); got != code {
			t.Errorf("includeObject=%q: code %d (%v), want %d", policy, got, err, code)
		}
	}
}
