package shell

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// TestBindFailure: what a failed binding does to the queue and the
// snapshot, by cause.
func TestBindFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		cancel     bool // the leader's context ends during the binding
		wantQueued bool // the pod is still in the queue (backing off)
		wantEvent  bool // a FailedScheduling event is recorded
	}{
		// Lost leadership must not drop the pod: the next term binds it.
		{name: "leadership lost", err: context.Canceled, cancel: true, wantQueued: true},
		{name: "pod gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")},
		{name: "rejected", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("pod p is already assigned to node \"x\"")),
			wantQueued: true, wantEvent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "binding" {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			rec := record.NewFakeRecorder(10)
			s := &Scheduler{client: client, recorder: rec, queue: queue.New(queue.Config{}),
				snap: framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Obj()}, nil, nil), log: slog.New(slog.DiscardHandler)}
			pod := ft.MakePod("p").UID("u").Obj()
			s.queue.Add(pod)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			qp, err := s.queue.Pop(ctx)
			if err != nil {
				t.Fatal(err)
			}
			assumed := pod.DeepCopy()
			assumed.Spec.NodeName = "n"
			s.snap.AddPod(assumed)
			if tc.cancel {
				cancel()
			}
			s.bind(ctx, qp, pod, assumed)

			if _, ok := s.snap.NodeNameOf(pod); ok {
				t.Error("the pod is still assumed on its node")
			}
			active, backoff, unsched := s.queue.Len()
			if queued := active+backoff+unsched == 1; queued != tc.wantQueued {
				t.Errorf("queued = %v (active %d, backoff %d, unschedulable %d), want %v", queued, active, backoff, unsched, tc.wantQueued)
			}
			if got := len(rec.Events) > 0; got != tc.wantEvent {
				t.Errorf("event recorded = %v, want %v", got, tc.wantEvent)
			}
		})
	}
}
