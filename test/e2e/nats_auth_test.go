package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationNATSAuth: the all-in-one's bus takes only mutual-TLS
// connections of known identities, and a kubelet's credentials cannot
// forge an event: what it publishes never reaches a stream, the API or the
// tap, while a real change does.
func TestIntegrationNATSAuth(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	url := s.BusURL(t)

	// No TLS, or TLS without a client certificate: refused.
	if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a plain connection to the bus was accepted")
	}
	caPEM, err := os.ReadFile(filepath.Join(s.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	if nc, err := nats.Connect(url, nats.NoReconnect(), nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})); err == nil {
		nc.Close()
		t.Fatal("a TLS connection without a client certificate was accepted")
	}
	// A certificate of the cluster CA for a user the bus does not know.
	if nc, _, err := bus.ConnectOnce(url, "e2e", s.BusCredentials(t, "alice", "system:authenticated"), false); err == nil {
		nc.Close()
		t.Fatal("an unknown identity was accepted")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := s.Clientset(t)

	// The kubelet of node e2e-node forges a pod ADDED event on the
	// history stream and on its own node's subject.
	const node, name = "e2e-node", "forged"
	forged := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "forged-uid", ResourceVersion: "999999"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	obj, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := json.Marshal(bus.Event{Type: bus.Added, Revision: 999999, Resource: "pods", Namespace: "default", Name: name, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	nodeConn, nodeJS := harness.BusConnectAs(t, url, s.BusCredentials(t, "system:node:"+node, "system:nodes"))
	podKey := bus.ObjectKey{Resource: "pods", Namespace: "default", Name: name}
	subjects := []string{bus.HistorySubject(podKey), bus.NodeSubject(node, "default", name), bus.StateSubject(podKey), bus.StateNodeSubject(node, "default", name)}
	for _, subj := range subjects {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := nodeJS.Publish(pctx, subj, ev)
		cancel()
		if err == nil {
			t.Errorf("the kubelet's publish to %s was acknowledged", subj)
		}
		if err := nodeConn.Publish(subj, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodeConn.Flush(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(nodeConn.LastError(), nats.ErrPermissionViolation) {
		t.Errorf("the server reported %v to the kubelet, want a permissions violation", nodeConn.LastError())
	}

	// A real change for comparison: a ConfigMap through the API.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "real"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tap := func(resource string) []map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"tap"}, s.BusFlags(t)...)
		args = append(args, "--resource", resource, "-n", "default", "--since=1", "--follow=false", "-o", "json")
		if err := app.Run(ctx, args, &out, &errb); err != nil {
			t.Fatalf("kubebus %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		var recs []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("tap line %q: %v", line, err)
			}
			recs = append(recs, r)
		}
		return recs
	}
	harness.Eventually(t, 30*time.Second, func() error {
		for _, r := range tap("configmaps") {
			if r["name"] == "real" {
				return nil
			}
		}
		return errors.New("the tap has not shown ConfigMap real yet")
	})

	// The forged event is nowhere: not in the tap, not in any stream
	// (read as the admin), not in the API.
	for _, r := range tap("pods") {
		if r["name"] == name {
			t.Errorf("the tap shows the forged event: %v", r)
		}
	}
	_, admin := s.BusConnect(t, "kubebus-admin", "system:masters")
	for stream, subj := range map[string]string{
		bus.HistoryStream: subjects[0], bus.NodePodsStream: subjects[1], bus.StateStream: subjects[2],
	} {
		st, err := admin.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := st.GetLastMsgForSubject(ctx, subj); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s holds %s: %v %v", stream, subj, m, err)
		}
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s: %v, want NotFound", name, err)
	}
	// The admin, a reader, cannot delete a stream either.
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	err = admin.DeleteStream(dctx, bus.HistoryStream)
	dcancel()
	if err == nil {
		t.Error("the admin deleted KUBE_HISTORY")
	}
	if _, err := admin.Stream(ctx, bus.HistoryStream); err != nil {
		t.Errorf("KUBE_HISTORY after the admin's delete: %v", err)
	}
}
