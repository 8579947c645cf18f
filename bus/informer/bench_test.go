package informer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
)

// benchPod is a pod about the size of a running Deployment replica (about
// 2.5 KB of JSON).
func benchPod(i int) *corev1.Pod {
	ns := fmt.Sprint("ns-", i%50)
	name := fmt.Sprintf("web-%d-7d9f8c6b5-%05d", i%200, i)
	p := pod(ns, name, fmt.Sprint("node-", i%500), map[string]string{
		"app": fmt.Sprint("web-", i%200), "pod-template-hash": "7d9f8c6b5", "tier": "frontend"})
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprint("web-", i%200, "-7d9f8c6b5"), UID: "9b1c2d3e-aaaa-bbbb-cccc-1234567890ab"}}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	p.Spec.Containers = []corev1.Container{
		{Name: "app", Image: "registry.example/web:1.2.3", Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env:       []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources: res, VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 10}},
		{Name: "sidecar", Image: "registry.example/proxy:0.9", Resources: res},
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}}
	p.Spec.ServiceAccountName = "default"
	p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.168.0.1", StartTime: &start,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: start}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example/web:1.2.3", ImageID: "sha256:0123456789abcdef", ContainerID: "containerd://abcdef0123456789",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}}}
	return p
}

// seedPods writes n pods to KUBE_STATE and KUBE_HISTORY the way the
// publisher does, with async publishes.
func seedPods(b *testing.B, ctx context.Context, js jetstream.JetStream, n int) {
	b.Helper()
	var chain int64
	for i := range n {
		p := benchPod(i)
		rev := int64(i + 2)
		k := bus.ObjectKey{Resource: "pods", Namespace: p.Namespace, Name: p.Name}
		ev := bus.Event{Type: bus.Added, Revision: rev, PrevRevision: rev - 1, Resource: "pods", Namespace: p.Namespace, Name: p.Name, Object: mustJSON(b, p)}
		data := mustJSON(b, &ev)
		for _, m := range []*nats.Msg{eventMsg(bus.HistorySubject(k), &ev, data, chain), eventMsg(bus.StateSubject(k), &ev, data, 0)} {
			if _, err := js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
		chain = rev
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
}

// BenchmarkRebuild measures a new informer loading 20,000 pods from the
// bus until it has synced.
func BenchmarkRebuild(b *testing.B) {
	const pods = 20000
	ctx := testContext(b)
	n := startNATS(b)
	js := n.connect(ctx)
	seedPods(b, ctx, js, pods)
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		inf := newPodInformer(b, js, Config[*corev1.Pod]{Component: "bench"})
		stop := runInformer(b, ctx, inf)
		if err := inf.WaitForSync(ctx); err != nil {
			b.Fatal(err)
		}
		if got := len(inf.List()); got != pods {
			b.Fatalf("the cache has %d pods, want %d", got, pods)
		}
		stop()
	}
	b.ReportMetric(float64(pods*b.N)/time.Since(start).Seconds(), "objects/s")
}

// BenchmarkPublishToHandler measures one change from the publisher's etcd
// watch to the informer's handler: publisher -> NATS -> informer -> handler.
func BenchmarkPublishToHandler(b *testing.B) {
	ctx := testContext(b)
	n := startNATS(b)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	runPublisher(b, ctx, js, etcd)
	inf := newPodInformer(b, js, Config[*corev1.Pod]{Component: "latency", CheckInterval: DefaultCheckInterval})
	seen := make(chan int64, 16)
	inf.AddHandler(HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod) { seen <- int64(mustAtoi(p.ResourceVersion)) },
		UpdateFunc: func(_, p *corev1.Pod) { seen <- int64(mustAtoi(p.ResourceVersion)) },
	})
	runInformer(b, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	p := benchPod(1)
	p.Name = "lat"
	data := mustJSON(b, p)
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		rev := etcd.put(podKey(p.Namespace, p.Name), data)
		for got := range seen {
			if got >= rev {
				break
			}
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkDecodePod(b *testing.B) {
	ev := bus.Event{Type: bus.Modified, Revision: 7, Resource: "pods", Namespace: "ns-1", Name: benchPod(1).Name, Object: mustJSON(b, benchPod(1))}
	data := mustJSON(b, &ev)
	inf, err := New(Config[*corev1.Pod]{JetStream: stubJS{}, Component: "x", Resource: "pods", New: func() *corev1.Pod { return &corev1.Pod{} }})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, p, _, err := inf.decode(data); err != nil || p.ResourceVersion != strconv.Itoa(7) {
			b.Fatal(err)
		}
	}
}
