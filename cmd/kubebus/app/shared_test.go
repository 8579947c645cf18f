package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/test/harness"
)

// TestServerSharesThePodsCache: in `kubebus server` the components read
// pods from the API server's pods cache, so the process follows pods on
// the bus with one durable consumer (the API server's), while the shared
// informers keep their own consumers of the other resources; and the
// controllers see pods through it (a ReplicaSet counts the pods it made).
func TestServerSharesThePodsCache(t *testing.T) {
	s := harness.StartServer(t, "")
	cs, err := kubernetes.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	labels := map[string]string{"app": "shared"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ReplicaSet controller sets status.replicas from the pods its
	// pods informer holds: the API server's cache.
	harness.Eventually(t, time.Minute, func() error {
		got, err := cs.AppsV1().ReplicaSets("default").Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Replicas != 2 || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status.replicas %d at generation %d/%d, want 2", got.Status.Replicas, got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})

	_, js := s.BusConnect(t, "e2e", "system:masters")
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	lister := st.ConsumerNames(ctx)
	for name := range lister.Name() {
		names = append(names, name)
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	count := func(prefix string) int {
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				n++
			}
		}
		return n
	}
	if n := count(apiServerPodsDurable); n != 1 {
		t.Errorf("%d durable consumers of pods named %s*, want 1 (consumers: %v)", n, apiServerPodsDurable, names)
	}
	if n := count(sharedComponent + "_pods_"); n != 0 {
		t.Errorf("the shared informers follow pods themselves (%d consumers; consumers: %v)", n, names)
	}
	if n := count(sharedComponent + "_replicasets-apps_"); n != 1 {
		t.Errorf("%d shared consumers of ReplicaSets, want 1 (consumers: %v)", n, names)
	}
}

// apiServerPodsDurable starts the name of the API server's durable
// consumer of pods.
const apiServerPodsDurable = "kube-apiserver_pods_"
