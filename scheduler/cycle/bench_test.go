package cycle

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

// benchNodes are like upstream's scheduler_perf node-default: 4 cpu,
// 32Gi, 110 pods, spread over 3 zones.
func benchNodes(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = ft.MakeNode(fmt.Sprintf("node-%05d", i)).
			Capacity(map[string]string{"cpu": "4", "memory": "32Gi", "pods": "110"}).
			Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)).Obj()
	}
	return nodes
}

// benchPod is like upstream's pod-default: one container requesting 100m
// cpu and 500Mi memory.
func benchPod(i int, mutate func(*ft.PodWrapper)) *v1.Pod {
	p := ft.MakePod(fmt.Sprintf("pod-%07d", i)).Label("app", fmt.Sprintf("app-%d", i%50)).
		Image("registry.k8s.io/pause:3.10").Req(map[string]string{"cpu": "100m", "memory": "500Mi"})
	if mutate != nil {
		mutate(p)
	}
	return p.Obj()
}

// benchmarkSchedule measures scheduling cycles plus assuming each pod, at
// numNodes nodes with initPods already placed: the in-process equivalent of
// upstream's SchedulingBasic (5000 nodes, 1000 initial pods, CI floor 680
// pods/s).
func benchmarkSchedule(b *testing.B, numNodes, initPods, parallelism int, mutate func(*ft.PodWrapper)) {
	ctx := context.Background()
	p := defaultProfile(b)
	snap := framework.NewSnapshot(benchNodes(numNodes), nil, nil)
	opts := Options{Parallelism: parallelism, Choose: SeededChooser(1)}
	i := 0
	place := func() {
		pod := benchPod(i, mutate)
		i++
		r, err := Schedule(ctx, p, snap, pod, opts)
		if err != nil {
			b.Fatal(err)
		}
		opts.StartIndex = r.NextStartIndex
		pod.Spec.NodeName = r.Node
		snap.AddPod(pod)
	}
	for range initPods {
		place()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		place()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

func BenchmarkSchedulingBasic5000Nodes(b *testing.B) {
	b.Run("sequential", func(b *testing.B) { benchmarkSchedule(b, 5000, 1000, 1, nil) })
	b.Run("parallelism=16", func(b *testing.B) { benchmarkSchedule(b, 5000, 1000, 16, nil) })
}

func BenchmarkSchedulingBasic500Nodes(b *testing.B) {
	benchmarkSchedule(b, 500, 1000, 1, nil)
}

func BenchmarkSchedulingPodAntiAffinity5000Nodes(b *testing.B) {
	benchmarkSchedule(b, 5000, 1000, 16, func(p *ft.PodWrapper) {
		p.PodAntiAffinity(ft.Term(v1.LabelHostname, map[string]string{"app": p.Labels["app"]}))
	})
}

func BenchmarkSchedulingTopologySpread5000Nodes(b *testing.B) {
	benchmarkSchedule(b, 5000, 1000, 16, func(p *ft.PodWrapper) {
		p.Spread(1, v1.LabelTopologyZone, v1.DoNotSchedule, map[string]string{"app": p.Labels["app"]})
	})
}
