package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// badRequestCase is one malformed request and the Status it must get.
type badRequestCase struct {
	name        string
	method      string
	path        string // under the server URL; {ns} is the test namespace
	contentType string
	accept      string
	body        []byte
	wantCode    int
	wantReason  metav1.StatusReason
	wantCauses  []string // fields that must appear in details.causes (422)
	wantMessage string   // substring of the Status message
	// wantWarning, when set, means the request succeeds (wantCode is 2xx)
	// with a Warning header containing it; creates names the object it
	// creates ("configmaps/name").
	wantWarning string
	creates     string
}

// TestIntegrationBadInput sends malformed requests over raw HTTP and checks
// that each gets a metav1.Status with the code and reason upstream gives,
// never a 500, and that nothing stored changes.
func TestIntegrationBadInput(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	hc := s.HTTPClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ns := newTestNamespace(t, ctx, cs, "badinput-")

	// Fixtures: a ConfigMap updated once (so its first resourceVersion is
	// stale) and a Deployment.
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "existing"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	staleRV := cm.ResourceVersion
	cm.Data["k"] = "v1"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, err := cs.AppsV1().Deployments(ns).Create(ctx, webDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changedSelector := dep.DeepCopy()
	changedSelector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "track": "new"}}
	changedSelector.Spec.Template.Labels = map[string]string{"app": "web", "track": "new"}
	changedSelector.APIVersion, changedSelector.Kind = "apps/v1", "Deployment"

	const jsonCT, yamlCT = "application/json", "application/yaml"
	cmJSON := func(name string, extra string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}%s}`, name, extra)
	}
	base := "/api/v1/namespaces/{ns}"
	tests := []badRequestCase{
		{name: "malformed JSON", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"broken"`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed YAML", method: "POST", path: base + "/configmaps", contentType: yamlCT,
			body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  labels: [unclosed\n"), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "empty body", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: nil, wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "body over 3 MiB", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body:     cmJSON("huge", fmt.Sprintf(`,"data":{"big":%q}`, strings.Repeat("x", 3<<20+512<<10))),
			wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "wrong content type", method: "POST", path: base + "/configmaps", contentType: "text/plain",
			body: cmJSON("plain", ""), wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "unknown resource", method: "GET", path: base + "/widgets",
			wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "POST", path: "/apis/widgets.example.com/v1/namespaces/{ns}/widgets", contentType: jsonCT,
			body: []byte(`{"apiVersion":"widgets.example.com/v1","kind":"Widget","metadata":{"name":"w"}}`), wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "unknown namespace on create", method: "POST", path: "/api/v1/namespaces/no-such-namespace/configmaps", contentType: jsonCT,
			body: cmJSON("orphan", ""), wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantMessage: `namespaces "no-such-namespace" not found`},
		{name: "POST to a named item", method: "POST", path: base + "/configmaps/existing", contentType: jsonCT,
			body: cmJSON("existing", ""), wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "PUT to a collection", method: "PUT", path: base + "/configmaps", contentType: jsonCT,
			body: cmJSON("existing", ""), wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "stale resourceVersion on PUT", method: "PUT", path: base + "/configmaps/existing", contentType: jsonCT,
			body:     fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing","resourceVersion":%q},"data":{"k":"stale"}}`, staleRV),
			wantCode: 409, wantReason: metav1.StatusReasonConflict},
		{name: "name in body differs from the URL", method: "PUT", path: base + "/configmaps/existing", contentType: jsonCT,
			body: cmJSON("other", `,"data":{"k":"renamed"}`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "namespace in body differs from the URL", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"elsewhere","namespace":"default"}}`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "create of an existing name", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: cmJSON("existing", ""), wantCode: 409, wantReason: metav1.StatusReasonAlreadyExists},
		{name: "invalid name", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: cmJSON("Bad_Name", ""), wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"metadata.name"}},
		{name: "invalid label value", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body:     []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"badlabel","labels":{"app":"not a valid value!"}}}`),
			wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"metadata.labels"}},
		{name: "pod without containers", method: "POST", path: base + "/pods", contentType: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty"},"spec":{}}`), wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"spec.containers"}},
		{name: "immutable deployment selector", method: "PUT", path: "/apis/apps/v1/namespaces/{ns}/deployments/web", contentType: jsonCT,
			body: mustJSON(t, changedSelector), wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"spec.selector"}},
		{name: "kind mismatch in body", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"mismatch"}}`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "apiVersion mismatch in body", method: "POST", path: base + "/configmaps", contentType: jsonCT,
			body: []byte(`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"mismatch"}}`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "bad label selector", method: "GET", path: base + "/configmaps?" + url.Values{"labelSelector": {"app in (a"}}.Encode(),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "bad field selector key", method: "GET", path: base + "/configmaps?" + url.Values{"fieldSelector": {"spec.nope=x"}}.Encode(),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "bad field selector key on watch", method: "GET", path: base + "/pods?" + url.Values{"watch": {"true"}, "fieldSelector": {"spec.nope=x"}}.Encode(),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unknown field with fieldValidation=Strict", method: "POST", path: base + "/configmaps?fieldValidation=Strict", contentType: jsonCT,
			body: cmJSON("strict", `,"bogus":1`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessage: `unknown field "bogus"`},
		{name: "unknown field with fieldValidation=Warn", method: "POST", path: base + "/configmaps?fieldValidation=Warn", contentType: jsonCT,
			body: cmJSON("warned", `,"bogus":1`), wantCode: 201, wantWarning: "bogus", creates: "configmaps/warned"},
		// Upstream validates CreateOptions and DeleteOptions and answers 422 on the field.
		{name: "bad fieldValidation value", method: "POST", path: base + "/configmaps?fieldValidation=Sometimes", contentType: jsonCT,
			body: cmJSON("sometimes", ""), wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"fieldValidation"}},
		{name: "bad continue token", method: "GET", path: base + "/configmaps?limit=1&continue=not-a-token",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "limit that is not a number", method: "GET", path: base + "/configmaps?limit=lots",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		// Upstream validates ListOptions and answers 422 on field resourceVersionMatch.
		{name: "resourceVersionMatch without resourceVersion", method: "GET", path: base + "/configmaps?resourceVersionMatch=Exact",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"resourceVersionMatch"}},
		{name: "subresource the resource does not have", method: "GET", path: base + "/configmaps/existing/status",
			wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "json-patch whose test op fails", method: "PATCH", path: base + "/configmaps/existing", contentType: "application/json-patch+json",
			body:     []byte(`[{"op":"test","path":"/data/k","value":"nope"},{"op":"replace","path":"/data/k","value":"patched"}]`),
			wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "json-patch that is not a patch", method: "PATCH", path: base + "/configmaps/existing", contentType: "application/json-patch+json",
			body: []byte(`{"op":"replace"}`), wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unknown patch content type", method: "PATCH", path: base + "/configmaps/existing", contentType: "application/x-patch",
			body: []byte(`{"data":{"k":"patched"}}`), wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "Accept of only an unsupported type", method: "GET", path: base + "/configmaps/existing", accept: "application/xml",
			wantCode: 406, wantReason: metav1.StatusReasonNotAcceptable},
		{name: "bad propagationPolicy on delete", method: "DELETE", path: base + "/configmaps/existing?propagationPolicy=Sideways",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantCauses: []string{"propagationPolicy"}},
		{name: "gracePeriodSeconds that is not a number", method: "DELETE", path: base + "/configmaps/existing?gracePeriodSeconds=soon",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := storedState(t, ctx, cs, ns)
			resp, body := doRaw(t, ctx, hc, s.URL, ns, tc)
			if resp.StatusCode >= 500 {
				t.Errorf("%s %s answered %d: %s", tc.method, tc.path, resp.StatusCode, truncate(body))
			}
			if tc.wantWarning != "" {
				checkWarned(t, resp, body, tc)
			} else {
				checkStatus(t, resp, body, tc)
			}
			after := storedState(t, ctx, cs, ns)
			if tc.creates != "" {
				if _, ok := after[tc.creates]; !ok {
					t.Errorf("%s was not created", tc.creates)
				}
				delete(after, tc.creates)
			}
			if !maps.Equal(before, after) {
				t.Errorf("stored data changed:\nbefore %v\nafter  %v", sortedKeys(before), sortedKeys(after))
				for k, v := range after {
					if before[k] != v {
						t.Errorf("  %s: rv %q -> %q", k, before[k], v)
					}
				}
			}
		})
	}
	if logs := s.Logs(); strings.Contains(logs, "panic") {
		t.Errorf("server logged a panic:\n%s", logs)
	}
}

// doRaw sends one request and returns the response and its body.
func doRaw(t *testing.T, ctx context.Context, hc *http.Client, serverURL, ns string, tc badRequestCase) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if tc.body != nil {
		body = bytes.NewReader(tc.body)
	}
	req, err := http.NewRequestWithContext(ctx, tc.method, serverURL+strings.ReplaceAll(tc.path, "{ns}", ns), body)
	if err != nil {
		t.Fatal(err)
	}
	if tc.contentType != "" {
		req.Header.Set("Content-Type", tc.contentType)
	}
	if tc.accept != "" {
		req.Header.Set("Accept", tc.accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", tc.method, tc.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", tc.method, tc.path, err)
	}
	return resp, data
}

// checkStatus checks a failure answer: the code and a metav1.Status body.
func checkStatus(t *testing.T, resp *http.Response, body []byte, tc badRequestCase) {
	t.Helper()
	if resp.StatusCode != tc.wantCode {
		t.Errorf("%s %s answered %d; want %d\nbody: %s", tc.method, tc.path, resp.StatusCode, tc.wantCode, truncate(body))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("Content-Type %q; want application/json", resp.Header.Get("Content-Type"))
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("body is not a Status: %v\n%s", err, truncate(body))
	}
	if st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("body kind/apiVersion = %q/%q; want Status/v1", st.Kind, st.APIVersion)
	}
	if st.Status != metav1.StatusFailure {
		t.Errorf("status = %q; want Failure", st.Status)
	}
	if int(st.Code) != resp.StatusCode {
		t.Errorf("Status.code %d differs from the HTTP code %d", st.Code, resp.StatusCode)
	}
	if st.Reason != tc.wantReason {
		t.Errorf("reason = %q; want %q (message %q)", st.Reason, tc.wantReason, st.Message)
	}
	if tc.wantMessage != "" && !strings.Contains(st.Message, tc.wantMessage) {
		t.Errorf("message = %q; want it to contain %q", st.Message, tc.wantMessage)
	}
	if len(tc.wantCauses) > 0 {
		var fields []string
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				fields = append(fields, c.Field)
			}
		}
		for _, want := range tc.wantCauses {
			if !slices.ContainsFunc(fields, func(f string) bool {
				return f == want || strings.HasPrefix(f, want+".") || strings.HasPrefix(f, want+"[")
			}) {
				t.Errorf("details.causes fields = %v; want one for %s (message %q)", fields, want, st.Message)
			}
		}
	}
}

// checkWarned checks a success answer that must carry a Warning header.
func checkWarned(t *testing.T, resp *http.Response, body []byte, tc badRequestCase) {
	t.Helper()
	if resp.StatusCode != tc.wantCode {
		t.Fatalf("%s %s answered %d; want %d\nbody: %s", tc.method, tc.path, resp.StatusCode, tc.wantCode, truncate(body))
	}
	warnings := resp.Header.Values("Warning")
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, "299 ") && strings.Contains(w, tc.wantWarning) }) {
		t.Errorf("Warning headers %q; want a 299 warning mentioning %q", warnings, tc.wantWarning)
	}
	var obj corev1.ConfigMap
	if err := json.Unmarshal(body, &obj); err != nil || obj.Kind != "ConfigMap" || obj.UID == "" {
		t.Errorf("body is not the created ConfigMap (err %v): %s", err, truncate(body))
	}
}

// storedState returns "resource/name" -> resourceVersion for what the test
// could have changed: the namespace's objects and every namespace.
func storedState(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(resource, name, rv string) { out[resource+"/"+name] = rv }
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		add("configmaps", o.Name, o.ResourceVersion)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		add("pods", o.Name, o.ResourceVersion)
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range secrets.Items {
		add("secrets", o.Name, o.ResourceVersion)
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range deps.Items {
		add("deployments", o.Name, o.ResourceVersion)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nss.Items {
		add("namespaces", o.Name, o.ResourceVersion)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

func truncate(b []byte) string {
	const limit = 600
	if len(b) > limit {
		return string(b[:limit]) + fmt.Sprintf("... (%d bytes)", len(b))
	}
	return string(b)
}
