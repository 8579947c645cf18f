package bench

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkServerSideApply: one client-go connection changes one
// Deployment 500 times by server-side apply and another 500 times by
// update (PUT of the last object it got back), alternating, one request
// at a time. Reports the mean and p50 per request of each; both record
// managedFields field sets, apply also merges.
func BenchmarkServerSideApply(b *testing.B) {
	const total = 500
	s := harness.StartServer(b, "", "--disable-controller-manager", "--disable-scheduler")
	cfg := s.RESTConfig(b)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	deps := cs.AppsV1().Deployments("default")
	labels := map[string]string{"app": "bench"}
	applied := func(i int) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("applied", "default").
			WithAnnotations(map[string]string{"round": strconv.Itoa(i)}).
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().WithName("app").WithImage("registry.k8s.io/pause:3.10").
						WithPorts(corev1ac.ContainerPort().WithContainerPort(8080)).
						WithEnv(corev1ac.EnvVar().WithName("MODE").WithValue("bench"))))))
	}
	updated := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "updated", Annotations: map[string]string{"round": "0"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}}, Env: []corev1.EnvVar{{Name: "MODE", Value: "bench"}}}}}},
		},
	}
	if updated, err = deps.Create(ctx, updated, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := deps.Apply(ctx, applied(0), metav1.ApplyOptions{FieldManager: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var applyMean, applyP50, updateMean, updateP50 []float64
	round := 1
	for iter := 0; iter < b.N; iter++ {
		al, ul := make([]time.Duration, total), make([]time.Duration, total)
		for i := range total {
			t0 := time.Now()
			if _, err := deps.Apply(ctx, applied(round), metav1.ApplyOptions{FieldManager: "bench"}); err != nil {
				b.Fatalf("apply %d: %v", i, err)
			}
			al[i] = time.Since(t0)
			updated.Annotations["round"] = strconv.Itoa(round)
			t0 = time.Now()
			if updated, err = deps.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				b.Fatalf("update %d: %v", i, err)
			}
			ul[i] = time.Since(t0)
			round++
		}
		m, p := meanP50(al)
		applyMean, applyP50 = append(applyMean, m), append(applyP50, p)
		m, p = meanP50(ul)
		updateMean, updateP50 = append(updateMean, m), append(updateP50, p)
	}
	b.StopTimer()
	b.ReportMetric(median(applyMean), "apply-mean-us")
	b.ReportMetric(median(applyP50), "apply-p50-us")
	b.ReportMetric(median(updateMean), "update-mean-us")
	b.ReportMetric(median(updateP50), "update-p50-us")
}

// meanP50 returns the mean and median of lat in microseconds.
func meanP50(lat []time.Duration) (float64, float64) {
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(sum.Microseconds()) / float64(len(lat)), float64(s[len(s)/2].Microseconds())
}
