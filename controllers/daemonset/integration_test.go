package daemonset_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/daemonset"
	"github.com/kubebus/kubebus/test/harness"
)

// startController runs the DaemonSet controller alone (no scheduler, no
// kubelet) on bus-fed caches under a Manager until the test ends.
func startController(t *testing.T, s *harness.Server) kubernetes.Interface {
	t.Helper()
	cs := s.Clientset(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := s.BusConnect(t, "system:kube-controller-manager")
	inf, err := cache.New(cache.Config{JetStream: js, Component: "test-kcm", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "daemonset-controller")
	c, err := daemonset.New(daemonset.Config{Client: cs, Pods: inf.Pods, Nodes: inf.Nodes, DaemonSets: inf.DaemonSets,
		Revisions: inf.ControllerRevisions, Recorder: rec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: logger}
	m.AddCache(inf)
	m.Add(c)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
		nc.Close()
	})
	return cs
}

// TestIntegrationDaemonSetController: with no scheduler and no kubelet, the
// controller makes one unbound pod per node, each with the node affinity
// that names its node; a deleted node's pod goes; an image change makes
// revision 2 and, the old pods never having become available, replaces
// them all.
func TestIntegrationDaemonSetController(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts)
	cs := startController(t, s)
	ctx := context.Background()
	for i := range 3 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}}}}
	if _, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// podsFor returns the pods' target nodes, failing unless they all run image.
	podsFor := func(image string) ([]string, error) {
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return nil, err
		}
		var targets []string
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				return nil, fmt.Errorf("pod %s is bound to %s by the controller", p.Name, p.Spec.NodeName)
			}
			if p.Spec.Containers[0].Image != image {
				return nil, fmt.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			targets = append(targets, terms[0].MatchFields[0].Values[0])
		}
		slices.Sort(targets)
		return targets, nil
	}
	want := func(image string, nodes ...string) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			got, err := podsFor(image)
			if err != nil {
				return err
			}
			if !slices.Equal(got, nodes) {
				return fmt.Errorf("pods for %v, want %v", got, nodes)
			}
			ds, err := cs.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n := int32(len(nodes))
			if st := ds.Status; st.ObservedGeneration != ds.Generation || st.DesiredNumberScheduled != n || st.CurrentNumberScheduled != n ||
				st.UpdatedNumberScheduled != n || st.NumberReady != 0 || st.NumberUnavailable != n {
				return fmt.Errorf("status %+v", st)
			}
			return nil
		})
	}
	want("agent:1", "n0", "n1", "n2")

	if err := cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("agent:1", "n0", "n2")

	if _, err := cs.AppsV1().DaemonSets("default").Patch(ctx, "agent", "application/strategic-merge-patch+json",
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"agent:2"}]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want("agent:2", "n0", "n2")
	revs, err := cs.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int64
	for _, r := range revs.Items {
		numbers = append(numbers, r.Revision)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int64{1, 2}) {
		t.Errorf("revisions %v, want 1 and 2", numbers)
	}
	events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=SuccessfulCreate,involvedObject.name=agent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Error("no SuccessfulCreate events")
	}
}
