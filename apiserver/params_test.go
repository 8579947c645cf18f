package apiserver

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// statusCode is the HTTP code of an API error, 0 for nil.
func statusCode(t *testing.T, err error) int32 {
	t.Helper()
	if err == nil {
		return 0
	}
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("%v is not an API status", err)
	}
	return se.Status().Code
}

func TestListOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, query string
		watch       bool
		code        int32
	}{
		{name: "empty", query: ""},
		{name: "every parameter", query: "labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx&limit=5&continue=abc&timeoutSeconds=7&allowWatchBookmarks=True"},
		{name: "limit not a number", query: "limit=lots", code: 400},
		{name: "timeoutSeconds not a number", query: "timeoutSeconds=soon", code: 400},
		{name: "bad label selector", query: "labelSelector=app+in+%28a", code: 400},
		{name: "bad field selector", query: "fieldSelector=a%3D%3D%3Db%3Dc", code: 400},
		{name: "resourceVersionMatch without resourceVersion", query: "resourceVersionMatch=Exact", code: 422},
		{name: "unknown resourceVersionMatch", query: "resourceVersion=5&resourceVersionMatch=Sometimes", code: 422},
		{name: "Exact for resourceVersion 0", query: "resourceVersion=0&resourceVersionMatch=Exact", code: 422},
		{name: "sendInitialEvents on a list", query: "sendInitialEvents=true", code: 422},
		{name: "sendInitialEvents without NotOlderThan", query: "sendInitialEvents=true&allowWatchBookmarks=true", watch: true, code: 422},
		{name: "watch list", query: "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", watch: true},
		{name: "resourceVersionMatch on a plain watch", query: "resourceVersion=5&resourceVersionMatch=NotOlderThan", watch: true, code: 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := listOptions(q, tc.watch)
			if got := statusCode(t, err); got != tc.code {
				t.Fatalf("code = %d (%v), want %d", got, err, tc.code)
			}
			if err == nil && opts.Watch != tc.watch {
				t.Errorf("Watch = %v, want %v", opts.Watch, tc.watch)
			}
		})
	}
}

func TestListOptionsValues(t *testing.T) {
	t.Parallel()
	q, _ := url.ParseQuery("labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx&limit=5&timeoutSeconds=7&allowWatchBookmarks=True&watch=1")
	opts, err := listOptions(q, false)
	if err != nil {
		t.Fatal(err)
	}
	if !opts.Watch || !opts.AllowWatchBookmarks || opts.Limit != 5 || *opts.TimeoutSeconds != 7 {
		t.Errorf("decoded %+v", opts)
	}
	if opts.LabelSelector.String() != "app=web" || opts.FieldSelector.String() != "metadata.name=x" {
		t.Errorf("selectors %q %q", opts.LabelSelector, opts.FieldSelector)
	}
}

func TestWriteOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, verb, query, contentType string
		code                           int32
	}{
		{name: "create with nothing", verb: "create"},
		{name: "create dry run", verb: "create", query: "dryRun=All&fieldManager=me&fieldValidation=Strict"},
		{name: "create bad dryRun", verb: "create", query: "dryRun=Some", code: 422},
		{name: "create bad fieldValidation", verb: "create", query: "fieldValidation=Sometimes", code: 422},
		{name: "create fieldManager too long", verb: "create", query: "fieldManager=" + strings.Repeat("m", 129), code: 422},
		{name: "update bad dryRun", verb: "update", query: "dryRun=true", code: 422},
		{name: "update fine", verb: "update", query: "fieldValidation=Ignore"},
		{name: "merge patch", verb: "patch", query: "fieldManager=me", contentType: "application/merge-patch+json"},
		{name: "force on a non-apply patch", verb: "patch", query: "force=true", contentType: "application/strategic-merge-patch+json", code: 422},
		{name: "any force on a non-apply patch", verb: "patch", query: "force=0", contentType: "application/json-patch+json", code: 422},
		{name: "apply patch is left to the handler", verb: "patch", query: "force=true", contentType: "application/apply-patch+yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/api/v1/namespaces/d/configmaps?"+tc.query, nil)
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType+"; charset=utf-8")
			}
			err := checkWriteOptions(r, tc.verb)
			if got := statusCode(t, err); got != tc.code {
				t.Fatalf("code = %d (%v), want %d", got, err, tc.code)
			}
		})
	}
}

func TestDeleteOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, query, body string
		code              int32
		check             func(*metav1.DeleteOptions) bool
	}{
		{name: "none", check: func(o *metav1.DeleteOptions) bool { return o.PropagationPolicy == nil && o.GracePeriodSeconds == nil }},
		{name: "query", query: "propagationPolicy=Foreground&gracePeriodSeconds=3&dryRun=All",
			check: func(o *metav1.DeleteOptions) bool {
				return *o.PropagationPolicy == metav1.DeletePropagationForeground && *o.GracePeriodSeconds == 3 && len(o.DryRun) == 1
			}},
		{name: "orphanDependents as python sends it", query: "orphanDependents=True",
			check: func(o *metav1.DeleteOptions) bool { return *o.OrphanDependents }},
		{name: "negative grace is zero", query: "gracePeriodSeconds=-5",
			check: func(o *metav1.DeleteOptions) bool { return *o.GracePeriodSeconds == 0 }},
		{name: "body wins over the query", query: "propagationPolicy=Orphan", body: `{"propagationPolicy":"Background"}`,
			check: func(o *metav1.DeleteOptions) bool { return *o.PropagationPolicy == metav1.DeletePropagationBackground }},
		{name: "gracePeriodSeconds not a number", query: "gracePeriodSeconds=soon", code: 400},
		{name: "unknown propagationPolicy", query: "propagationPolicy=Sideways", code: 422},
		{name: "both orphanDependents and propagationPolicy", query: "propagationPolicy=Orphan&orphanDependents=false", code: 422},
		{name: "bad dryRun in the body", body: `{"dryRun":["Some"]}`, code: 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("DELETE", "/api/v1/namespaces/d/configmaps/c?"+tc.query, strings.NewReader(tc.body))
			opts, err := parseDeleteOptions(r)
			if got := statusCode(t, err); got != tc.code {
				t.Fatalf("code = %d (%v), want %d", got, err, tc.code)
			}
			if err == nil && tc.check != nil && !tc.check(opts) {
				t.Errorf("decoded %+v", opts)
			}
		})
	}
}

func TestParseWatchRequest(t *testing.T) {
	t.Parallel()
	pods := builtin(t, "pods")
	tests := []struct {
		name, query, pathName string
		code                  int32
		check                 func(watchRequest) bool
	}{
		{name: "from now", query: "watch=True", check: func(w watchRequest) bool { return w.initial && w.fromRevision == 0 && w.sel.everything }},
		{name: "from a resourceVersion", query: "watch=1&resourceVersion=41", check: func(w watchRequest) bool { return !w.initial && w.fromRevision == 42 }},
		{name: "bookmarks as python sends them", query: "watch=True&allowWatchBookmarks=True", check: func(w watchRequest) bool { return w.bookmarks }},
		{name: "timeout", query: "watch=true&timeoutSeconds=5", check: func(w watchRequest) bool { return w.timeout == 5*time.Second }},
		{name: "timeout 0 is the default", query: "watch=true&timeoutSeconds=0", check: func(w watchRequest) bool { return w.timeout >= 1800*time.Second }},
		{name: "one object by path", pathName: "web", check: func(w watchRequest) bool {
			return w.sel.matches(pods, pod("web", nil, "1")) && !w.sel.matches(pods, pod("other", nil, "1"))
		}},
		{name: "one object by path and the same field selector", pathName: "web", query: "fieldSelector=metadata.name%3Dweb"},
		{name: "path name and another field selector", pathName: "web", query: "fieldSelector=metadata.name%3Dother", code: 400},
		{name: "bad resourceVersion", query: "resourceVersion=abc", code: 400},
		{name: "timeout not a number", query: "timeoutSeconds=soon", code: 400},
		{name: "watch list without bookmarks", query: "sendInitialEvents=true&resourceVersionMatch=NotOlderThan", code: 400},
		{name: "unsupported field", query: "fieldSelector=spec.nope%3Dx", code: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods?"+tc.query, nil)
			wr, err := parseWatchRequest(pods, r, tc.pathName)
			if got := statusCode(t, err); got != tc.code {
				t.Fatalf("code = %d (%v), want %d", got, err, tc.code)
			}
			if err == nil && tc.check != nil && !tc.check(wr) {
				t.Errorf("parsed %+v", wr)
			}
		})
	}
}

// builtin returns the built-in resource with the plural name.
func builtin(t *testing.T, plural string) *resource.Resource {
	t.Helper()
	for _, r := range resource.Builtin() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no built-in resource %s", plural)
	return nil
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]time.Duration{
		"": maxRequestTimeout, "timeout=5s": 5 * time.Second, "timeout=1m30s": maxRequestTimeout,
		"timeout=0s": maxRequestTimeout, "timeout=-3s": maxRequestTimeout, "timeout=250ms": 250 * time.Millisecond,
	} {
		q, _ := url.ParseQuery(query)
		if got, err := requestTimeout(q); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", query, got, err, want)
		}
	}
	q, _ := url.ParseQuery("timeout=soon")
	if _, err := requestTimeout(q); statusCode(t, err) != 400 || !strings.Contains(err.Error(), "invalid timeout specified in the request URL") {
		t.Errorf("timeout=soon: %v", err)
	}
}
