package tap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/serve"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/tap"
	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/test/harness"
)

// apiServerFixture is an in-process API server on an embedded etcd,
// publishing to a NATS server in the test process; both share one CA.
type apiServerFixture struct {
	pkiDir string
	url    string
	admin  string // the admin's kubeconfig
	nats   *harness.NATS
}

func startAPIServer(t *testing.T) *apiServerFixture {
	t.Helper()
	harness.SkipShort(t)
	dir := t.TempDir()
	f := &apiServerFixture{pkiDir: filepath.Join(dir, "pki"), admin: filepath.Join(dir, "admin.kubeconfig")}
	f.nats = harness.StartNATS(t, f.pkiDir)
	etcd := harness.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{EtcdServers: []string{etcd.Endpoint}, NATSURL: f.nats.URL(), PKIDir: f.pkiDir,
			Kubeconfig: f.admin, Listening: listening, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the API server ended with %v", err)
		}
	})
	select {
	case addr := <-listening:
		f.url = "https://" + addr
	case err := <-done:
		t.Fatalf("the API server did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the API server did not start in 2 minutes")
	}
	return f
}

// kubeconfig writes a kubeconfig for user (a client certificate of the
// cluster CA, in no group) and returns its path.
func (f *apiServerFixture) kubeconfig(t *testing.T, user string) string {
	t.Helper()
	b, err := pki.Load(f.pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := b.IssueClient(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := pki.WriteKubeconfig(path, f.url, b, cert, key); err != nil {
		t.Fatal(err)
	}
	return path
}

// grant binds user cluster-wide to a ClusterRole allowing verbs on
// resources in groups.
func (f *apiServerFixture) grant(t *testing.T, user string, groups, resources, verbs []string) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", f.admin)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tap-" + user},
		Rules: []rbacv1.PolicyRule{{APIGroups: groups, Resources: resources, Verbs: verbs}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tap-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lagStatus GETs the lag endpoint with kubeconfig's credentials and
// returns the status code and body.
func lagStatus(t *testing.T, kubeconfig string) (int, []byte) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(rc.Host + tap.LagEndpointPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// TestIntegrationTapLagThroughAPIServer: `kubebus tap lag --kubeconfig`
// prints the lag table the API server reads with its own bus connection,
// for a user who may list and watch everything everywhere, and nobody
// else (a 403 Status).
func TestIntegrationTapLagThroughAPIServer(t *testing.T) {
	f := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A controller-manager's durable consumer of pods, behind by the pod
	// events published so far (the API server publishes the
	// bootstrapped objects; a pod makes sure there is one of pods).
	_, js := f.nats.Connect(t, busauth.ControllerManagerUser)
	var st jetstream.Stream
	harness.Eventually(t, time.Minute, func() error {
		var err error
		st, err = js.Stream(ctx, bus.HistoryStream)
		return err
	})
	const consumer = "kube-controller-manager_namespaces_lag-test"
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumer, FilterSubject: bus.ResourceFilter("", "namespaces", ""),
		AckPolicy: jetstream.AckExplicitPolicy, MemoryStorage: true}); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		err := app.Run(rctx, args, &out, &errb)
		if err != nil && errb.Len() > 0 {
			err = fmt.Errorf("%w (stderr: %s)", err, errb.String())
		}
		return out.String(), err
	}
	checkTable := func(t *testing.T, out string) {
		t.Helper()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if f := strings.Fields(lines[0]); strings.Join(f, " ") != "CONSUMER STREAM FILTER PENDING OLDEST LAST-ACK-REVISION" {
			t.Fatalf("header %q in\n%s", lines[0], out)
		}
		for _, l := range lines[1:] {
			c := strings.Fields(l)
			if c[0] != consumer {
				continue
			}
			// The namespaces the API server bootstrapped are pending.
			if c[1] != bus.HistoryStream || c[2] != "kube.core.namespaces.>" || c[3] == "0" || c[4] == "-" || c[5] != "-" {
				t.Fatalf("row %q", l)
			}
			return
		}
		t.Fatalf("no row of %s:\n%s", consumer, out)
	}
	for _, args := range [][]string{{"tap", "lag", "--kubeconfig", f.admin}, {"tap", "--lag", "--kubeconfig", f.admin}} {
		t.Run(strings.Join(args[:2], " ")+" as the admin", func(t *testing.T) {
			out, err := run(args...)
			if err != nil {
				t.Fatal(err)
			}
			checkTable(t, out)
		})
	}

	t.Run("--kubeconfig with --nats-url", func(t *testing.T) {
		if _, err := run("tap", "lag", "--kubeconfig", f.admin, "--nats-url", f.nats.URL()); err == nil || !strings.Contains(err.Error(), "pick one") {
			t.Fatalf("tap lag with both = %v, want an error", err)
		}
	})

	// Who may list and watch everything everywhere reads the lag; who may
	// not, not even with every right on pods, gets a 403 Status (asked
	// once the authorizer's cache holds the last of these bindings).
	f.grant(t, "pods-reader", []string{""}, []string{"pods"}, []string{"get", "list", "watch"})
	f.grant(t, "lister", []string{"*"}, []string{"*"}, []string{"list"})
	f.grant(t, "watcher", []string{"*"}, []string{"*"}, []string{"list", "watch"})
	t.Run("a user who may list and watch everything", func(t *testing.T) {
		kc := f.kubeconfig(t, "watcher")
		// The authorizer's cache sees the new binding soon after.
		harness.Eventually(t, 30*time.Second, func() error {
			if code, body := lagStatus(t, kc); code != http.StatusOK {
				return errors.New(string(body))
			}
			return nil
		})
		out, err := run("tap", "lag", "--kubeconfig", kc)
		if err != nil {
			t.Fatal(err)
		}
		checkTable(t, out)
		code, body := lagStatus(t, kc)
		var rep tap.LagReport
		if err := json.Unmarshal(body, &rep); err != nil || code != http.StatusOK || rep.Time.IsZero() || len(rep.Consumers) == 0 {
			t.Fatalf("GET %s: %d %s", tap.LagEndpointPath, code, body)
		}
	})
	for _, user := range []string{"nobody", "pods-reader", "lister"} {
		t.Run(user+" is refused", func(t *testing.T) {
			kc := f.kubeconfig(t, user)
			code, body := lagStatus(t, kc)
			var status metav1.Status
			if err := json.Unmarshal(body, &status); err != nil || code != http.StatusForbidden || status.Kind != "Status" ||
				status.Code != http.StatusForbidden || status.Reason != metav1.StatusReasonForbidden || !strings.Contains(status.Message, user) {
				t.Fatalf("GET %s as %s: %d %s", tap.LagEndpointPath, user, code, body)
			}
			if strings.Contains(string(body), consumer) {
				t.Fatalf("the refusal names a consumer: %s", body)
			}
			out, err := run("tap", "lag", "--kubeconfig", kc)
			if err == nil || !strings.Contains(err.Error(), "403") || out != "" {
				t.Fatalf("tap lag as %s = %v with output %q, want a 403", user, err, out)
			}
		})
	}
}
