package informer

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/internal/storedobj"
)

func mustProto(t testing.TB, p *corev1.Pod) []byte {
	t.Helper()
	b, err := storedobj.EncodeProtobuf(p, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Pods stored in protobuf, beside pods stored as JSON before the API
// server changed encoding, reach a cluster-wide informer, a node's
// informer and a metadata-only informer whole, from the state stream at
// the start and from the live stream after, rebinding and deletion
// included.
func TestIntegrationProtobufPods(t *testing.T) {
	ctx, _, js, etcd := startBus(t)
	for i := range 12 {
		p := pod("a", fmt.Sprint("p", i), []string{"node-a", "node-b", ""}[i%3], map[string]string{"i": fmt.Sprint(i)})
		if i%2 == 0 {
			etcd.put(podKey("a", p.Name), mustProto(t, p))
		} else {
			etcd.put(podKey("a", p.Name), mustJSON(t, p))
		}
	}
	runPublisher(t, ctx, js, etcd)
	all := newPodInformer(t, js, Config[*corev1.Pod]{Component: "all"})
	onA := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kubelet", Node: "node-a"})
	meta, err := New(Config[*metav1.PartialObjectMetadata]{JetStream: js, Component: "gc", Resource: "pods", Logger: testLogger(),
		New: func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} }})
	if err != nil {
		t.Fatal(err)
	}
	recAll, recA := newRecorder(), newRecorder()
	all.AddHandler(recAll)
	onA.AddHandler(recA)
	runInformer(t, ctx, all)
	runInformer(t, ctx, onA)
	go func() { _ = meta.Run(ctx) }()
	converges(t, all, recAll, etcd.pods)
	converges(t, onA, recA, func() map[string]string { return etcd.podsOn("node-a") })

	// Live: an unbound protobuf pod is bound to node-a, a JSON pod on
	// node-b is rewritten in protobuf and moved to node-a, one on node-a
	// is deleted.
	etcd.put(podKey("a", "p2"), mustProto(t, pod("a", "p2", "node-a", map[string]string{"i": "2", "bound": "yes"})))
	etcd.put(podKey("a", "p1"), mustProto(t, pod("a", "p1", "node-a", map[string]string{"i": "1", "moved": "yes"})))
	etcd.del(podKey("a", "p0"))
	converges(t, all, recAll, etcd.pods)
	converges(t, onA, recA, func() map[string]string { return etcd.podsOn("node-a") })

	for _, p := range onA.List() {
		if p.Spec.NodeName != "node-a" || p.Kind != "Pod" || p.Spec.Containers[0].Env[0].Value != "test" || p.Labels["i"] == "" {
			t.Errorf("node-a's cache holds %+v", p)
		}
	}
	if p, ok := all.Get("a", "p2"); !ok || p.Labels["bound"] != "yes" || p.UID != "uid-a-p2" {
		t.Errorf("a/p2 in the cache: %+v, %v", p, ok)
	}
	eventually(t, 10*time.Second, "the metadata informer to hold every pod", func() bool {
		want := etcd.pods()
		if len(meta.List()) != len(want) {
			return false
		}
		for _, m := range meta.List() {
			if want[m.Namespace+"/"+m.Name] != m.ResourceVersion || m.Labels["i"] == "" {
				return false
			}
		}
		return true
	})
	for _, inf := range []interface{ Stats() Stats }{all, onA, meta} {
		if s := inf.Stats(); s.Malformed != 0 || s.Gaps != 0 {
			t.Errorf("stats %+v: want nothing malformed and no gap", s)
		}
	}
}
