package simulate

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kubebus/kubebus/internal/crash/crashtest"
)

// TestWorkerSurvivesSyncPanic: a key whose sync panics (here a node index
// out of range) is logged with the stack, counted and retried; the worker
// keeps serving the queue until it shuts down.
func TestWorkerSurvivesSyncPanic(t *testing.T) {
	var logs crashtest.Log
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())
	s := &syncer{cfg: Config{Logger: logs.Logger()}, q: q}
	panics := crashtest.Watch("kubelet-simulated", "syncPod")
	done := make(chan struct{})
	go func() { defer close(done); s.work(context.Background()) }()
	q.Add(key{node: 3, namespace: "ns", name: "p"})
	deadline := time.Now().Add(10 * time.Second)
	for panics.Rise() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("counted %v panics, want the key retried after its panic", panics.Rise())
		}
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	<-done
	logs.Contains(t, `"key":"ns/p"`, "index out of range", "simulate.(*syncer).sync")
}
