package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver/storage"
)

// A write etcd may have committed must not be answered in a way that
// makes client-go send it again: a repeated create with generateName would
// store a second object.
func TestUncertainWritesAreNotRepeatedByClients(t *testing.T) {
	t.Parallel()
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name  string
		cause error
		code  int
	}{
		{"etcd timed out", rpctypes.ErrTimeout, http.StatusInternalServerError},
		{"leader lost", rpctypes.ErrTimeoutDueToLeaderFail, http.StatusInternalServerError},
		{"deadline", context.DeadlineExceeded, http.StatusGatewayTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := testServer(Config{})
			var sent atomic.Int32
			var retryAfter atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sent.Add(1)
				stored := fmt.Errorf("creating /registry/pods/ns/x: %w", errors.Join(tc.cause, storage.ErrUncertain))
				s.writeError(w, r, storageError(stored, pods, "x"))
				retryAfter.Store(w.Header().Get("Retry-After"))
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"}}, metav1.CreateOptions{})
			var st apierrors.APIStatus
			if !errors.As(err, &st) || int(st.Status().Code) != tc.code {
				t.Fatalf("create answered %v, want a Status with code %d", err, tc.code)
			}
			if n := sent.Load(); n != 1 {
				t.Errorf("client-go sent the create %d times, want once", n)
			}
			if ra := retryAfter.Load(); ra != "" {
				t.Errorf("the answer carries Retry-After %q", ra)
			}
		})
	}
}

// A write etcd refused before proposing it may be sent again.
func TestRefusedWritesAskForARetry(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{rpctypes.ErrTooManyRequests, rpctypes.ErrNoLeader} {
		err := storageError(fmt.Errorf("creating /registry/pods/ns/x: %w", cause), schema.GroupResource{Resource: "pods"}, "x")
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("%v gives %v, want ServiceUnavailable", cause, err)
		}
	}
}
