package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationPodsStoredInProtobuf: the API server stores pods in
// upstream's protobuf envelope (read here with upstream's decoder); a pod
// stored as JSON by an earlier kubebus still reads, lists, watches and
// updates, and its update is stored in protobuf; the tap shows both as
// JSON.
func TestIntegrationPodsStoredInProtobuf(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods("default")
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	cli := serverEtcd(t, s)
	stored := func(name string) []byte {
		t.Helper()
		resp, err := cli.Get(ctx, "/registry/core/pods/default/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading pod %s from etcd: %v %v", name, resp, err)
		}
		return resp.Kvs[0].Value
	}
	upstream := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	decodeUpstream := func(name string) *corev1.Pod {
		t.Helper()
		raw := stored(name)
		if !bytes.HasPrefix(raw, []byte("k8s\x00")) {
			t.Fatalf("pod %s is not stored in protobuf: %q", name, raw[:min(len(raw), 40)])
		}
		obj, _, err := upstream.Decode(raw, nil, nil)
		if err != nil {
			t.Fatalf("upstream's decoder cannot read pod %s: %v", name, err)
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			t.Fatalf("pod %s decodes as %T", name, obj)
		}
		return p
	}

	created, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"enc": "pb"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := decodeUpstream("pb"); p.Name != "pb" || p.UID != created.UID || p.Labels["enc"] != "pb" || p.ResourceVersion != "" {
		t.Errorf("stored pod: name %q uid %q labels %v resourceVersion %q", p.Name, p.UID, p.Labels, p.ResourceVersion)
	}

	// A pod as an earlier kubebus stored it: the API server's JSON of the
	// defaulted pod, with apiVersion and kind, without resourceVersion.
	legacy := created.DeepCopy()
	legacy.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	legacy.Name, legacy.UID, legacy.ResourceVersion, legacy.Labels = "legacy", "legacy-uid", "", map[string]string{"enc": "json"}
	value, _ := json.Marshal(&legacy)
	put, err := cli.Put(ctx, "/registry/core/pods/default/legacy", string(value))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil || got.UID != "legacy-uid" || got.ResourceVersion != fmt.Sprint(put.Header.Revision) {
		t.Fatalf("GET of a JSON-stored pod: %+v, %v (put at revision %d)", got, err, put.Header.Revision)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "enc"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %v, %v; want both pods", list, err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=legacy"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patched, err := pods.Patch(ctx, "legacy", types.MergePatchType, []byte(`{"metadata":{"labels":{"enc":"was-json"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := decodeUpstream("legacy"); p.Labels["enc"] != "was-json" || p.UID != "legacy-uid" {
		t.Errorf("the updated JSON-stored pod is stored as %+v", p.ObjectMeta)
	}
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Modified || !ok || p.Labels["enc"] != "was-json" || p.ResourceVersion != patched.ResourceVersion {
			t.Errorf("watch: %s %+v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the update")
	}

	// The tap reads the bus, which carries the stored bytes: both pods,
	// and the update's change, come out as JSON.
	var seen []string
	var change string
	for _, rec := range tapJSON(t, s.Kubeconfig, "--resource=pods") {
		seen = append(seen, fmt.Sprint(rec["type"], " ", rec["name"]))
		if rec["name"] == "legacy" && rec["type"] == "MODIFIED" {
			b, _ := json.Marshal(rec["changes"])
			change = string(b)
		}
	}
	want := []string{"ADDED pb", "ADDED legacy", "MODIFIED legacy"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("tap: %v, want %v", seen, want)
	}
	if !bytes.Contains([]byte(change), []byte(`"metadata.labels.enc"`)) || !bytes.Contains([]byte(change), []byte(`was-json`)) {
		t.Errorf("tap's changes of the update: %s", change)
	}
}

// TestIntegrationPodsStoredAsJSONOnRequest: --storage-media-type=application/json
// (for a cluster still running components older than the protobuf
// encoding) writes pods as JSON, and a value it cannot take is refused.
func TestIntegrationPodsStoredAsJSONOnRequest(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", append([]string{"--storage-media-type=application/json"}, apiOnly...)...)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "js"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := serverEtcd(t, s).Get(ctx, "/registry/core/pods/default/js")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the pod from etcd: %v %v", resp, err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil || p.Name != "js" || p.Kind != "Pod" {
		t.Errorf("the pod is not stored as JSON: %q (%v)", resp.Kvs[0].Value[:min(len(resp.Kvs[0].Value), 40)], err)
	}

	out, err := exec.CommandContext(ctx, harness.Binary(t), "apiserver", "--storage-media-type=application/yaml",
		"--etcd-servers=https://127.0.0.1:1", "--pki-dir="+t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `storage media type "application/yaml"`) {
		t.Errorf("kubebus apiserver --storage-media-type=application/yaml: %v\n%s", err, out)
	}
}
