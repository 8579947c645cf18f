package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestIntegrationHealthMetricsAndIdentity: health endpoints check etcd and
// NATS, /metrics has the request and etcd metrics, and the API server knows
// who is asking, from a client certificate or a bearer token.
func TestIntegrationHealthMetricsAndIdentity(t *testing.T) {
	harness.SkipShort(t)
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("s3cret,alice,1001,\"dev,ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := harness.StartServer(t, dir, "--token-auth-file", tokens)
	c := s.HTTPClient(t)
	for _, tc := range []struct{ path, want string }{
		{"/livez", "ok"},
		{"/healthz", "ok"},
		{"/readyz", "ok"},
		{"/readyz?verbose", "[+]etcd ok"},
		{"/readyz?verbose", "[+]nats ok"},
	} {
		code, body := get(t, c, s.URL+tc.path)
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d %q, want 200 containing %q", tc.path, code, body, tc.want)
		}
	}
	if _, err := s.Clientset(t).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_, metrics := get(t, c, s.URL+"/metrics")
	for _, want := range []string{
		`apiserver_request_total{code="200",resource="namespaces",subresource="",verb="list"}`,
		`apiserver_request_duration_seconds_bucket{resource="namespaces",subresource="",verb="list"`,
		`etcd_request_duration_seconds_bucket{operation="list"`,
		`kubebus_publisher_leader 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The admin's client certificate.
	out := s.MustRun(t, harness.Kubectl(t), "", "auth", "whoami", "-o", "json")
	var review authnv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(out), &review); err != nil {
		t.Fatalf("kubectl auth whoami: %v\n%s", err, out)
	}
	if review.Status.UserInfo.Username != "kubebus-admin" || !contains(review.Status.UserInfo.Groups, "system:masters") {
		t.Errorf("whoami with the admin certificate = %+v", review.Status.UserInfo)
	}

	// A bearer token, over TLS verified against the cluster CA.
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	whoami := func(token string) (int, authnv1.SelfSubjectReview) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := tc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r authnv1.SelfSubjectReview
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	code, r := whoami("s3cret")
	if code != http.StatusCreated || r.Status.UserInfo.Username != "alice" || !contains(r.Status.UserInfo.Groups, "ops") {
		t.Errorf("whoami with a token = %d %+v", code, r.Status.UserInfo)
	}
	if code, _ := whoami("wrong"); code != http.StatusUnauthorized {
		t.Errorf("a bad token got %d, want 401", code)
	}

	// The checks' own metrics, under upstream's names: alice may not list
	// pods (no authorizer has an opinion), a ConfigMap in a namespace that
	// does not exist is refused by NamespaceLifecycle, one in default is
	// admitted by every plugin.
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/namespaces/default/pods", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := tc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice listing pods got %d, want 403", resp.StatusCode)
	}
	cms := s.Clientset(t).CoreV1().ConfigMaps
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checks"}}
	if _, err := cms("no-such-namespace").Create(t.Context(), cm, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a ConfigMap in a missing namespace: %v, want NotFound", err)
	}
	if _, err := cms("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, metrics = get(t, c, s.URL+"/metrics")
	for _, series := range []string{
		`authentication_attempts{result="success"}`,
		`authentication_attempts{result="error"}`,
		`authentication_duration_seconds_count{result="success"}`,
		`authorization_attempts_total{result="allowed"}`,
		`authorization_attempts_total{result="no-opinion"}`,
		`authorization_duration_seconds_count{result="allowed"}`,
		`apiserver_admission_controller_admission_duration_seconds_count{name="NamespaceLifecycle",operation="CREATE",rejected="true",type="admit"}`,
		`apiserver_admission_controller_admission_duration_seconds_count{name="NamespaceLifecycle",operation="CREATE",rejected="false",type="admit"}`,
		`apiserver_admission_controller_admission_duration_seconds_count{name="ResourceQuota",operation="CREATE",rejected="false",type="validate"}`,
		`apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="true",type="admit"}`,
		`apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="validate"}`,
	} {
		if v := metricValue(metrics, series); v < 1 {
			t.Errorf("/metrics: %s = %v, want at least 1", series, v)
		}
	}
}

// metricValue is the value of one series in a Prometheus text exposition,
// 0 when it is absent.
func metricValue(exposition, series string) float64 {
	for line := range strings.Lines(exposition) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
