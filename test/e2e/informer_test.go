package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationInformerRebuildsWithoutLists: a consumer started after
// 20,000 objects exist rebuilds its cache from the bus and reports synced
// with zero LIST (and zero WATCH) requests to the API server.
func TestIntegrationInformerRebuildsWithoutLists(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx := context.Background()
	const ns, total = "many", 20000
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"shard": fmt.Sprint(i % 10)}}, Data: map[string]string{"i": fmt.Sprint(i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Errorf("create %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	nc, js, err := bus.Connect(s.BusURL(t), "e2e-informer", s.BusCredentials(t, "kubebus-admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The publisher may still be writing the tail of the 20,000 creates:
	// the informer must end up with all of them either way.
	lists, watches := s.APIRequests(t, `verb="list"`), s.APIRequests(t, `verb="watch"`)
	inf, err := informer.New(informer.Config[*corev1.ConfigMap]{
		JetStream: js, Component: "e2e-zero-list", Resource: "configmaps", Namespace: ns,
		New:    func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	go func() { _ = inf.Run(rctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	if err := inf.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	synced := time.Since(start)
	harness.Eventually(t, time.Minute, func() error {
		n := 0
		for _, cm := range inf.List() {
			if cm.Name != "kube-root-ca.crt" { // the root CA publisher's
				n++
			}
		}
		if n != total {
			return fmt.Errorf("cache holds %d of %d objects", n, total)
		}
		return nil
	})
	t.Logf("informer synced in %v and holds all %d objects", synced, total)
	if got := s.APIRequests(t, `verb="list"`); got != lists {
		t.Fatalf("LIST requests went from %v to %v while the informer rebuilt", lists, got)
	}
	if got := s.APIRequests(t, `verb="watch"`); got != watches {
		t.Fatalf("WATCH requests went from %v to %v while the informer rebuilt", watches, got)
	}
	got, ok := inf.Get(ns, "cm-12345")
	if !ok || got.Data["i"] != "12345" || got.ResourceVersion == "" {
		t.Fatalf("cache entry cm-12345 = %+v, %v", got, ok)
	}
}
