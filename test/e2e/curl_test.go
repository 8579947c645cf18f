package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// curlClient runs the real curl against a server with the admin's client
// certificate, as the seeds' raw REST examples do.
type curlClient struct {
	s   *harness.Server
	dir string // for response headers and bodies
}

func newCurl(t *testing.T, s *harness.Server) *curlClient {
	t.Helper()
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Fatalf("curl is not installed (%v); `make deps` installs it", err)
	}
	return &curlClient{s: s, dir: t.TempDir()}
}

func (c *curlClient) tlsArgs() []string {
	pki := filepath.Join(c.s.Dir, "pki")
	return []string{"--cacert", filepath.Join(pki, "ca.crt"), "--cert", filepath.Join(pki, "admin.crt"), "--key", filepath.Join(pki, "admin.key")}
}

// curlResult is one response as curl saw it.
type curlResult struct {
	code    int
	headers http.Header
	body    string
}

// do runs curl on path with extra arguments and returns the response.
func (c *curlClient) do(t *testing.T, path string, args ...string) curlResult {
	t.Helper()
	f, err := os.CreateTemp(c.dir, "resp-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	hdr, body := f.Name()+".h", f.Name()+".b"
	all := append(append([]string{"-sS", "--max-time", "60", "-D", hdr, "-o", body, "-w", "%{http_code}"}, c.tlsArgs()...), args...)
	all = append(all, c.s.URL+path)
	out, err := exec.CommandContext(t.Context(), "/usr/bin/curl", all...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %s: %v: %s", strings.Join(args, " ")+" "+path, err, out)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("curl %s printed %q, not a status code", path, out)
	}
	r := curlResult{code: code, headers: http.Header{}}
	rawHdr, _ := os.ReadFile(hdr)
	for _, line := range strings.Split(string(rawHdr), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			r.headers.Add(k, strings.TrimSpace(v))
		}
	}
	rawBody, _ := os.ReadFile(body)
	r.body = string(rawBody)
	return r
}

// mustJSON decodes a 2xx JSON body into v.
func (r curlResult) mustJSON(t *testing.T, what string, want int, v any) {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: HTTP %d, want %d: %s", what, r.code, want, truncate([]byte(r.body)))
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, truncate([]byte(r.body)))
	}
}

// TestIntegrationCurl: the raw REST forms upstream's API server accepts,
// sent by the real curl: trailing slashes, watch=1/true/True, pretty, gzip
// and Accept lists with weights.
func TestIntegrationCurl(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	c := newCurl(t, s)
	cs := s.Clientset(t)
	ns := "curl"
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("discovery with and without a trailing slash", func(t *testing.T) {
		for _, tc := range []struct{ path, kind string }{
			{"/version", ""}, {"/version/", ""},
			{"/api", "APIVersions"}, {"/api/", "APIVersions"},
			{"/apis", "APIGroupList"}, {"/apis/", "APIGroupList"},
			{"/api/v1", "APIResourceList"}, {"/api/v1/", "APIResourceList"},
			{"/apis/apps", "APIGroup"}, {"/apis/apps/", "APIGroup"},
			{"/apis/apps/v1", "APIResourceList"}, {"/apis/apps/v1/", "APIResourceList"},
		} {
			var got struct {
				Kind       string `json:"kind"`
				GitVersion string `json:"gitVersion"`
			}
			c.do(t, tc.path).mustJSON(t, tc.path, 200, &got)
			if got.Kind != tc.kind || (tc.kind == "" && !strings.HasPrefix(got.GitVersion, "v1.")) {
				t.Errorf("GET %s: kind %q gitVersion %q, want kind %q", tc.path, got.Kind, got.GitVersion, tc.kind)
			}
		}
	})

	t.Run("create, read, list and delete a pod", func(t *testing.T) {
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"raw","labels":{"via":"curl"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
		var created corev1.Pod
		c.do(t, "/api/v1/namespaces/"+ns+"/pods", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", pod).
			mustJSON(t, "POST pod", 201, &created)
		if created.UID == "" || created.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("created pod: uid %q restartPolicy %q", created.UID, created.Spec.RestartPolicy)
		}
		for _, path := range []string{"/api/v1/namespaces/" + ns + "/pods", "/api/v1/namespaces/" + ns + "/pods/", "/api/v1/pods?labelSelector=via%3Dcurl"} {
			var list corev1.PodList
			c.do(t, path).mustJSON(t, "GET "+path, 200, &list)
			if len(list.Items) != 1 || list.Items[0].Name != "raw" || list.Kind != "PodList" {
				t.Errorf("GET %s: %s with %d items", path, list.Kind, len(list.Items))
			}
		}
		var got corev1.Pod
		c.do(t, "/api/v1/namespaces/"+ns+"/pods/raw/").mustJSON(t, "GET pod/", 200, &got)
		if got.UID != created.UID {
			t.Errorf("GET pods/raw/ = %q", got.UID)
		}
		var deleted corev1.Pod
		c.do(t, "/api/v1/namespaces/"+ns+"/pods/raw?gracePeriodSeconds=0", "-X", "DELETE").mustJSON(t, "DELETE pod", 200, &deleted)
		if r := c.do(t, "/api/v1/namespaces/"+ns+"/pods/raw"); r.code != 404 {
			t.Errorf("GET after DELETE: HTTP %d", r.code)
		}
	})

	t.Run("watch=1, watch=true and watch=True each stream events", func(t *testing.T) {
		for i, form := range []string{"watch=1", "watch=true", "watch=True", "watch", "watch=t"} {
			name := fmt.Sprintf("w%d", i)
			path := "/api/v1/namespaces/" + ns + "/configmaps?" + form + "&labelSelector=form%3D" + name
			if i == 1 {
				path = "/api/v1/namespaces/" + ns + "/configmaps/?" + form + "&labelSelector=form%3D" + name
			}
			c.watchSeesCreate(t, cs, ns, path, name)
		}
		c.watchSeesCreate(t, cs, ns, "/api/v1/watch/namespaces/"+ns+"/configmaps?labelSelector=form%3Dpathwatch", "pathwatch")
		// watch=false and watch=0 are lists.
		for _, form := range []string{"watch=false", "watch=0", "watch=False"} {
			var list corev1.ConfigMapList
			c.do(t, "/api/v1/namespaces/"+ns+"/configmaps?"+form).mustJSON(t, form, 200, &list)
			if list.Kind != "ConfigMapList" {
				t.Errorf("%s answered kind %q", form, list.Kind)
			}
		}
	})

	t.Run("pretty", func(t *testing.T) {
		indented := func(body string) bool { return strings.Contains(body, "\n  \"") }
		path := "/api/v1/namespaces/" + ns
		if r := c.do(t, path); r.code != 200 || !indented(r.body) {
			t.Errorf("curl's user agent gets indented JSON, as upstream: %d %q", r.code, truncate([]byte(r.body)))
		}
		if r := c.do(t, path+"?pretty=false"); r.code != 200 || indented(r.body) {
			t.Errorf("pretty=false: %q", truncate([]byte(r.body)))
		}
		for _, q := range []string{"?pretty=true", "?pretty=1", "?pretty=True"} {
			if r := c.do(t, path+q, "-A", "python-client"); r.code != 200 || !indented(r.body) {
				t.Errorf("%s with another user agent: %q", q, truncate([]byte(r.body)))
			}
		}
		if r := c.do(t, path, "-A", "python-client"); indented(r.body) {
			t.Errorf("no pretty and a program's user agent: %q", truncate([]byte(r.body)))
		}
		if r := c.do(t, path, "-A", "python-client", "-H", "Accept: application/json;pretty=1"); !indented(r.body) {
			t.Errorf("Accept pretty=1: %q", truncate([]byte(r.body)))
		}
	})

	t.Run("gzip for a large list", func(t *testing.T) {
		payload := strings.Repeat("0123456789abcdef", 256) // 4 KiB
		for i := range 40 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i), Labels: map[string]string{"size": "big"}}, Data: map[string]string{"d": payload}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		path := "/api/v1/namespaces/" + ns + "/configmaps?labelSelector=size%3Dbig"
		r := c.do(t, path, "--compressed")
		if r.headers.Get("Content-Encoding") != "gzip" || r.headers.Get("Vary") != "Accept-Encoding" {
			t.Errorf("a %d-item list with --compressed: headers %v", 40, r.headers)
		}
		var list corev1.ConfigMapList
		r.mustJSON(t, "compressed list", 200, &list)
		if len(list.Items) != 40 {
			t.Errorf("decompressed list has %d items", len(list.Items))
		}
		if r := c.do(t, path, "-H", "Accept-Encoding: gzip, deflate"); r.headers.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(r.body, "\x1f\x8b") {
			t.Errorf("Accept-Encoding: gzip, deflate: headers %v", r.headers)
		}
		if r := c.do(t, path); r.headers.Get("Content-Encoding") != "" {
			t.Errorf("no Accept-Encoding but Content-Encoding %q", r.headers.Get("Content-Encoding"))
		}
		if r := c.do(t, "/api/v1/namespaces/"+ns, "--compressed"); r.code != 200 || r.headers.Get("Content-Encoding") != "" {
			t.Errorf("a small response is not compressed (upstream's 128 KiB threshold): %v", r.headers)
		}
	})

	t.Run("Accept with several types and weights", func(t *testing.T) {
		path := "/api/v1/namespaces/" + ns
		for _, tc := range []struct{ accept, wantType, wantPrefix string }{
			{"application/yaml;q=0.9, application/json;q=0.5", "application/yaml", "apiVersion: v1"},
			{"application/json;q=0.5, application/yaml", "application/yaml", "apiVersion: v1"},
			{"application/vnd.kubernetes.protobuf;q=0.1, application/json", "application/json", "{"},
			{"text/html, application/json;q=0.1", "application/json", "{"},
			{"*/*", "application/json", "{"},
			{"application/vnd.kubernetes.protobuf, */*", "application/vnd.kubernetes.protobuf", "k8s\x00"},
			{"application/json;as=Table;v=v1;g=meta.k8s.io, application/json", "application/json", "{"},
		} {
			r := c.do(t, path, "-H", "Accept: "+tc.accept)
			if r.code != 200 || r.headers.Get("Content-Type") != tc.wantType || !strings.HasPrefix(r.body, tc.wantPrefix) {
				t.Errorf("Accept %q: HTTP %d %q %q, want %q", tc.accept, r.code, r.headers.Get("Content-Type"), truncate([]byte(r.body)), tc.wantType)
			}
		}
		var table metav1.Table
		c.do(t, path, "-H", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io").mustJSON(t, "table", 200, &table)
		if table.Kind != "Table" || len(table.Rows) != 1 {
			t.Errorf("as=Table: kind %q, %d rows", table.Kind, len(table.Rows))
		}
		// Errors come in the negotiated encoding too.
		if r := c.do(t, path+"/nothing-here", "-H", "Accept: application/yaml"); r.code != 404 || r.headers.Get("Content-Type") != "application/yaml" || !strings.Contains(r.body, "reason: NotFound") {
			t.Errorf("a 404 for a YAML client: %d %q %q", r.code, r.headers.Get("Content-Type"), truncate([]byte(r.body)))
		}
		// Upstream has no YAML watch framing: a watch that prefers YAML is a 406.
		if r := c.do(t, "/api/v1/namespaces/"+ns+"/configmaps?watch=1", "-H", "Accept: application/yaml, application/json;q=0.5"); r.code != 406 {
			t.Errorf("a YAML watch: HTTP %d %q", r.code, truncate([]byte(r.body)))
		}
		for _, accept := range []string{"application/xml", "text/html;q=0.9, image/png", "application/json;q=0", "application/json;q=0, application/yaml;q=0, application/vnd.kubernetes.protobuf;q=0, */*"} {
			var st metav1.Status
			c.do(t, path, "-H", "Accept: "+accept).mustJSON(t, accept, 406, &st)
			if st.Reason != metav1.StatusReasonNotAcceptable {
				t.Errorf("Accept %q: reason %q", accept, st.Reason)
			}
		}
	})

	t.Run("bad query values are upstream's errors", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
		}{
			{"/api/v1/namespaces/" + ns + "/configmaps?limit=lots", 400},
			{"/api/v1/namespaces/" + ns + "/configmaps?watch=1&timeoutSeconds=soon", 400},
			{"/api/v1/namespaces/" + ns + "/configmaps?resourceVersionMatch=Exact", 422},
			{"/api/v1/namespaces/" + ns + "/configmaps?limit=-1", 200}, // upstream lists everything
			{"/api/v1/namespaces/" + ns + "/configmaps?timeout=soon", 400},
			{"/api/v1/namespaces/" + ns + "/configmaps?timeout=5s", 200},
			{"/api/v1/namespaces/" + ns + "?fieldSelector=%3D%3D%3D", 200}, // a get reads GetOptions only
		} {
			if r := c.do(t, tc.path); r.code != tc.code {
				t.Errorf("GET %s: HTTP %d, want %d: %s", tc.path, r.code, tc.code, truncate([]byte(r.body)))
			}
		}
	})
}

// watchSeesCreate starts `curl -N` on a watch path and, once the stream has
// delivered the ADDED event of a first object, creates a second one and
// waits for its event: the watch both lists and follows. curl ends with
// the test's deadline for it, so a silent stream fails instead of hanging.
func (c *curlClient) watchSeesCreate(t *testing.T, cs kubernetes.Interface, ns, path, label string) {
	t.Helper()
	mk := func(name string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"form": label}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := label+"-first", label+"-second"
	mk(first)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	args := append(append([]string{"-sS", "-N"}, c.tlsArgs()...), c.s.URL+path)
	cmd := exec.CommandContext(ctx, "/usr/bin/curl", args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var got []string
	for {
		typ, name, ok := readWatch(t, sc)
		if !ok {
			t.Fatalf("GET %s: the stream ended after %v (curl: %s)", path, got, stderr.String())
		}
		got = append(got, typ+" "+name)
		switch {
		case typ == "ADDED" && name == first:
			mk(second)
		case typ == "ADDED" && name == second:
			return
		}
	}
}

// readWatch reads watch events (one JSON object a line) from curl's stdout.
func readWatch(t *testing.T, sc *bufio.Scanner) (typ, name string, ok bool) {
	t.Helper()
	if !sc.Scan() {
		return "", "", false
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type == "" {
		t.Fatalf("watch line %q is not a watch event (%v)", truncate(sc.Bytes()), err)
	}
	return ev.Type, ev.Object.Metadata.Name, true
}
