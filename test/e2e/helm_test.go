package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// The test chart (test/helm/kubebus-demo): a Deployment of busybox httpd
// pods serving a page from a ConfigMap, behind a Service.
const (
	helmChart       = "../helm/kubebus-demo"
	helmDefaultPage = "hello from kubebus"
)

// TestIntegrationHelm: the stock Helm CLI (Helm 3, and Helm 4) installs the
// test chart on the all-in-one with hollow nodes and waits for its pods,
// upgrades it (replicas, image and page change), rolls it back to the first
// revision and uninstalls it; after each step the objects, the release
// history and the release Secrets (type helm.sh/release.v1) are what Helm
// says. Helm 4 applies server-side by default, which kubebus does not serve
// yet: its full cycle runs with --server-side=false, and its default is
// checked on its own (it either works or fails with the server's 415).
func TestIntegrationHelm(t *testing.T) {
	harness.SkipShort(t)
	helm3, helm4 := harness.Helm(t, 3), harness.Helm(t, 4)
	chart, err := filepath.Abs(helmChart)
	if err != nil {
		t.Fatal(err)
	}
	s := harness.StartServer(t, "")
	harness.StartHollowNodes(t, s, 2)
	cs := s.Clientset(t)
	harness.Eventually(t, 60*time.Second, func() error {
		l, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) != 2 {
			return fmt.Errorf("%d of 2 hollow nodes registered", len(l.Items))
		}
		return nil
	})

	t.Run("helm3", func(t *testing.T) {
		h := helmCycle{s: s, cs: cs, bin: helm3, chart: chart, release: "demo", ns: "helm3"}
		h.run(t)
	})
	t.Run("helm4", func(t *testing.T) {
		h := helmCycle{s: s, cs: cs, bin: helm4, chart: chart, release: "demo", ns: "helm4", apply: []string{"--server-side=false"}}
		h.run(t)
	})
	t.Run("helm4-default-apply", func(t *testing.T) {
		h := helmCycle{s: s, cs: cs, bin: helm4, chart: chart, release: "ssa", ns: "helm4-ssa"}
		// Not --create-namespace: Helm 4 would apply the namespace
		// server-side too, before it records the release.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := s.RunHelm(t, helm4, h.args("install", h.release, h.chart, "--wait", "--timeout", "2m")...)
		var herr *harness.HelmError
		switch {
		case err == nil:
			t.Logf("helm 4 installs with server-side apply:\n%s", out)
			h.checkRelease(t, 1, "deployed")
			h.checkObjects(t, 2, "busybox:latest", helmDefaultPage)
		case errors.As(err, &herr) && strings.Contains(herr.Stderr, "server-side apply is not supported yet"):
			// The server answers the apply PATCH with 415; Helm records
			// the release as failed.
			t.Logf("helm 4 by default (server-side apply): %s", strings.TrimSpace(herr.Stderr))
			h.checkRelease(t, 1, "failed")
			if _, err := cs.AppsV1().Deployments(h.ns).Get(context.Background(), h.name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("deployment after the failed install: want NotFound, got %v", err)
			}
		default:
			t.Fatalf("helm 4 install with its default apply: %v", err)
		}
		h.s.MustRunHelm(t, h.bin, h.args("uninstall", h.release, "--wait", "--timeout", "2m")...)
		h.checkGone(t)
	})
}

// helmCycle installs, upgrades, rolls back and uninstalls one release.
type helmCycle struct {
	s           *harness.Server
	cs          kubernetes.Interface
	bin, chart  string
	release, ns string
	apply       []string // flags of install and upgrade
}

func (h helmCycle) args(verb string, rest ...string) []string {
	return append([]string{verb, "--namespace", h.ns}, rest...)
}

func (h helmCycle) run(t *testing.T) {
	t.Logf("%s: %s", h.bin, strings.TrimSpace(h.s.MustRunHelm(t, h.bin, "version", "--short")))
	if out := h.s.MustRunHelm(t, h.bin, "lint", "--strict", h.chart); !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("helm lint says:\n%s", out)
	}
	wait := []string{"--wait", "--timeout", "2m"}

	out := h.s.MustRunHelm(t, h.bin, h.args("install", append(append([]string{h.release, h.chart, "--create-namespace"}, h.apply...), wait...)...)...)
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm install says:\n%s", out)
	}
	h.checkObjects(t, 2, "busybox:latest", helmDefaultPage)
	h.checkRelease(t, 1, "deployed")

	upgrade := append([]string{h.release, h.chart, "--set", "replicaCount=3", "--set", "image.tag=1.36", "--set", "message=second page"}, h.apply...)
	out = h.s.MustRunHelm(t, h.bin, h.args("upgrade", append(upgrade, wait...)...)...)
	if !strings.Contains(out, `Release "`+h.release+`" has been upgraded`) {
		t.Errorf("helm upgrade says:\n%s", out)
	}
	h.checkObjects(t, 3, "busybox:1.36", "second page")
	h.checkRelease(t, 2, "deployed")
	h.checkHistory(t, []string{"superseded", "deployed"}, "Upgrade complete")

	out = h.s.MustRunHelm(t, h.bin, h.args("rollback", append([]string{h.release, "1"}, wait...)...)...)
	if !strings.Contains(out, "Rollback was a success") {
		t.Errorf("helm rollback says:\n%s", out)
	}
	h.checkObjects(t, 2, "busybox:latest", helmDefaultPage)
	h.checkRelease(t, 3, "deployed")
	h.checkHistory(t, []string{"superseded", "superseded", "deployed"}, "Rollback to 1")

	out = h.s.MustRunHelm(t, h.bin, h.args("uninstall", append([]string{h.release}, wait...)...)...)
	if !strings.Contains(out, `release "`+h.release+`" uninstalled`) {
		t.Errorf("helm uninstall says:\n%s", out)
	}
	h.checkGone(t)
}

func (h helmCycle) name() string { return h.release + "-kubebus-demo" }

// checkObjects checks the Deployment (replicas, image, all pods ready, as
// helm --wait waited for), the ConfigMap's page and the Service.
func (h helmCycle) checkObjects(t *testing.T, replicas int32, image, page string) {
	t.Helper()
	ctx := context.Background()
	harness.Eventually(t, 60*time.Second, func() error {
		d, err := h.cs.AppsV1().Deployments(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
			return fmt.Errorf("deployment %s has spec.replicas %v, want %d", d.Name, d.Spec.Replicas, replicas)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			return fmt.Errorf("deployment %s runs %s, want %s", d.Name, got, image)
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != replicas ||
			d.Status.ReadyReplicas != replicas || d.Status.Replicas != replicas {
			return fmt.Errorf("deployment %s status %+v, want %d updated and ready", d.Name, d.Status, replicas)
		}
		return nil
	})
	cm, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["index.html"]; got != page {
		t.Errorf("configmap %s serves %q, want %q", cm.Name, got, page)
	}
	svc, err := h.cs.CoreV1().Services(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.ClusterIP == "" {
		t.Errorf("service %s: ports %+v, cluster IP %q", svc.Name, svc.Spec.Ports, svc.Spec.ClusterIP)
	}
	if got := svc.Labels["app.kubernetes.io/managed-by"]; got != "Helm" {
		t.Errorf("service %s managed-by %q, want Helm", svc.Name, got)
	}
}

// checkRelease checks `helm status` and the release's Secrets: one of type
// helm.sh/release.v1 per revision, the newest (version) with status.
func (h helmCycle) checkRelease(t *testing.T, version int, status string) {
	t.Helper()
	var st struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
		Info    struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	out := h.s.MustRunHelm(t, h.bin, h.args("status", h.release, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("helm status -o json: %v\n%s", err, out)
	}
	if st.Name != h.release || st.Version != version || st.Info.Status != status {
		t.Errorf("helm status: release %q revision %d %q, want %q revision %d %q", st.Name, st.Version, st.Info.Status, h.release, version, status)
	}
	secrets := h.releaseSecrets(t)
	if len(secrets) != version {
		t.Fatalf("%d release secrets (%v), want %d", len(secrets), secrets, version)
	}
	name := fmt.Sprintf("sh.helm.release.v1.%s.v%d", h.release, version)
	if got := secrets[name]; got != status {
		t.Errorf("release secret %s has status %q, want %q (all: %v)", name, got, status, secrets)
	}
}

// releaseSecrets maps the release's Secrets (owner=helm) to their status
// label, checking their type.
func (h helmCycle) releaseSecrets(t *testing.T) map[string]string {
	t.Helper()
	l, err := h.cs.CoreV1().Secrets(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + h.release})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, s := range l.Items {
		if s.Type != "helm.sh/release.v1" {
			t.Errorf("release secret %s has type %q, want helm.sh/release.v1", s.Name, s.Type)
		}
		if len(s.Data["release"]) == 0 {
			t.Errorf("release secret %s holds no release", s.Name)
		}
		m[s.Name] = s.Labels["status"]
	}
	return m
}

// checkHistory checks `helm history`: the statuses of the revisions in order
// and the newest one's description.
func (h helmCycle) checkHistory(t *testing.T, statuses []string, description string) {
	t.Helper()
	var hist []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Chart       string `json:"chart"`
		Description string `json:"description"`
	}
	out := h.s.MustRunHelm(t, h.bin, h.args("history", h.release, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("helm history -o json: %v\n%s", err, out)
	}
	var got []string
	for i, r := range hist {
		got = append(got, r.Status)
		if r.Revision != i+1 || r.Chart != "kubebus-demo-0.1.0" {
			t.Errorf("history entry %d: revision %d chart %q", i, r.Revision, r.Chart)
		}
	}
	if strings.Join(got, ",") != strings.Join(statuses, ",") {
		t.Errorf("helm history statuses %v, want %v", got, statuses)
	}
	if len(hist) > 0 && hist[len(hist)-1].Description != description {
		t.Errorf("newest revision's description %q, want %q", hist[len(hist)-1].Description, description)
	}
}

// checkGone checks that the chart's objects, its pods and the release's
// Secrets are gone and that Helm knows the release no more.
func (h helmCycle) checkGone(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, get := range []func() error{
		func() error {
			_, err := h.cs.AppsV1().Deployments(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := h.cs.CoreV1().Services(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, h.name(), metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall: want NotFound, got %v", err)
		}
	}
	if s := h.releaseSecrets(t); len(s) != 0 {
		t.Errorf("release secrets left after helm uninstall: %v", s)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		l, err := h.cs.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + h.release})
		if err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d pods of the release left", len(l.Items))
		}
		return nil
	})
	out := h.s.MustRunHelm(t, h.bin, h.args("list", "-q", "--deployed", "--failed", "--pending", "--superseded")...)
	if strings.TrimSpace(out) != "" {
		t.Errorf("helm list after uninstall: %q", out)
	}
	if _, err := h.s.RunHelm(t, h.bin, h.args("status", h.release)...); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("helm status after uninstall: %v, want release: not found", err)
	}
}
