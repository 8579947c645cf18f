package bench

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkReplicaSet5000: seconds from creating a ReplicaSet of 5,000
// replicas until its status counts 5,000 pods (every pod object exists),
// on the all-in-one server with its in-process controller-manager.
func BenchmarkReplicaSet5000(b *testing.B) {
	const replicas = 5000
	for iter := 0; iter < b.N; iter++ {
		s := harness.StartServer(b, "")
		cs := s.Clientset(b)
		ctx := context.Background()
		n := int32(replicas)
		labels := map[string]string{"app": "big"}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "big"},
			Spec: appsv1.ReplicaSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}},
		}
		// Wait until the controller-manager leads, so its start-up is not timed.
		harness.Eventually(b, 30*time.Second, func() error {
			_, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			return err
		})
		b.ResetTimer()
		start := time.Now()
		if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		harness.Eventually(b, 5*time.Minute, func() error {
			got, err := cs.AppsV1().ReplicaSets("default").Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Replicas != replicas {
				return errNotYet
			}
			return nil
		})
		b.StopTimer()
		b.ReportMetric(time.Since(start).Seconds(), "s-until-5000-pods")
	}
}

// podStages is when a watch first saw n pods created, bound and Running.
type podStages struct{ created, bound, running time.Time }

// watchStages counts distinct pods as a watch reports them created, bound to
// a node and Running, and returns when all n are Running.
func watchStages(events <-chan watch.Event, n int) podStages {
	var st podStages
	seen, bound, running := map[types.UID]bool{}, map[types.UID]bool{}, map[types.UID]bool{}
	mark := func(set map[types.UID]bool, uid types.UID, at *time.Time) {
		if !set[uid] {
			set[uid] = true
			if len(set) == n {
				*at = time.Now()
			}
		}
	}
	for ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		mark(seen, p.UID, &st.created)
		if p.Spec.NodeName != "" {
			mark(bound, p.UID, &st.bound)
		}
		if p.Status.Phase == corev1.PodRunning {
			mark(running, p.UID, &st.running)
			if len(running) == n {
				return st
			}
		}
	}
	return st
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet = notYet{}

// BenchmarkDeployment1000Running: seconds from creating a Deployment of
// 1,000 replicas until it reports 1,000 available, on 100 hollow nodes
// (`kubebus kubelet --simulate=100`), through the controller-manager, the
// scheduler and the hollow kubelets of the all-in-one server.
func BenchmarkDeployment1000Running(b *testing.B) {
	const replicas = 1000
	for iter := 0; iter < b.N; iter++ {
		s := harness.StartServer(b, "")
		cs := s.Clientset(b)
		ctx := context.Background()
		harness.StartProcess(b, "kubelet", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(b), "--simulate=100")
		waitNodesReady(b, cs, 100, time.Minute)
		n := int32(replicas)
		labels := map[string]string{"app": "run"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "run"}, Spec: appsv1.DeploymentSpec{
			Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}
		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=run"})
		if err != nil {
			b.Fatal(err)
		}
		stages := make(chan podStages, 1)
		go func() { stages <- watchStages(w.ResultChan(), replicas) }()
		b.ResetTimer()
		start := time.Now()
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var st podStages
		select {
		case st = <-stages:
		case <-time.After(5 * time.Minute):
			b.Fatal("the pods did not all reach Running in 5 minutes")
		}
		w.Stop()
		b.ReportMetric(st.created.Sub(start).Seconds(), "s-until-1000-exist")
		b.ReportMetric(st.bound.Sub(start).Seconds(), "s-until-1000-bound")
		b.ReportMetric(st.running.Sub(start).Seconds(), "s-until-1000-running")
		harness.Eventually(b, 5*time.Minute, func() error {
			got, err := cs.AppsV1().Deployments("default").Get(ctx, "run", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.AvailableReplicas != replicas {
				return errNotYet
			}
			return nil
		})
		b.StopTimer()
		b.ReportMetric(time.Since(start).Seconds(), "s-until-1000-available")
	}
}
