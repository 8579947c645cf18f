package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubebus/kubebus/internal/crash/crashtest"
)

// panickingSync is the test hook: a pod sync that panics on the first sync
// of one pod and records every sync.
type panickingSync struct {
	bad      types.UID
	mu       sync.Mutex
	synced   map[types.UID]int
	panicked bool
}

func (p *panickingSync) sync(_ context.Context, uid types.UID) error {
	p.mu.Lock()
	p.synced[uid]++
	first := uid == p.bad && !p.panicked
	if first {
		p.panicked = true
	}
	p.mu.Unlock()
	if first {
		panic("pod sync hook panics on purpose")
	}
	return nil
}

func (p *panickingSync) count(uid types.UID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced[uid]
}

// TestWorkerSurvivesSyncPanic: a pod sync that panics costs that pod a
// retry with backoff; the worker goes on with the other pods, and the
// panic is counted and logged with its stack.
func TestWorkerSurvivesSyncPanic(t *testing.T) {
	var logs crashtest.Log
	k := &Kubelet{q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.UID]()),
		log: logs.Logger()}
	hook := &panickingSync{bad: "bad-uid", synced: map[types.UID]int{}}
	panics := crashtest.Watch("kubelet", "syncPod")
	done := make(chan struct{})
	go func() { defer close(done); k.work(context.Background(), hook.sync) }()
	k.q.Add("bad-uid")
	k.q.Add("good-uid")
	deadline := time.Now().Add(10 * time.Second)
	for hook.count("bad-uid") < 2 || hook.count("good-uid") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("syncs: bad %d, good %d; want the bad pod retried and the good one synced", hook.count("bad-uid"), hook.count("good-uid"))
		}
		time.Sleep(time.Millisecond)
	}
	k.q.ShutDown()
	<-done
	panics.Expect(t, 1)
	logs.Contains(t, `"key":"bad-uid"`, "pod sync hook panics on purpose", "agent.(*panickingSync).sync")
}
