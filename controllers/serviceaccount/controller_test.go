package serviceaccount

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// store is a cache the test fills.
type store[T metav1.Object] map[string]T

func (s store[T]) Get(ns, name string) (T, bool) { v, ok := s[ns+"/"+name]; return v, ok }

func newStore[T metav1.Object](objs ...T) store[T] {
	s := store[T]{}
	for _, o := range objs {
		s[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return s
}

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	tests := []struct {
		name       string
		namespaces []*corev1.Namespace
		accounts   []*corev1.ServiceAccount
		createErr  error
		wantCreate bool
		wantErr    bool
	}{
		{name: "active namespace without default", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)}, wantCreate: true},
		{name: "default present", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)},
			accounts: []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}}},
		{name: "other accounts do not count", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)},
			accounts: []*corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ns"}}}, wantCreate: true},
		{name: "terminating namespace", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceTerminating)}},
		{name: "no namespace"},
		{name: "cache lags behind a create", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)},
			createErr: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "serviceaccounts"}, "default"), wantCreate: true},
		{name: "namespace started terminating", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)},
			createErr: terminating, wantCreate: true},
		{name: "server error retries", namespaces: []*corev1.Namespace{namespace("ns", corev1.NamespaceActive)},
			createErr: apierrors.NewServiceUnavailable("etcd"), wantCreate: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			if tt.createErr != nil {
				client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.createErr
				})
			}
			r := &reconciler{client: client, namespaces: newStore(tt.namespaces...), serviceAccounts: newStore(tt.accounts...),
				names: []string{DefaultName}, log: slog.New(slog.DiscardHandler)}
			_, err := r.Reconcile(context.Background(), controllers.Request{Name: "ns"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error = %v, want error %v", err, tt.wantErr)
			}
			var created []*corev1.ServiceAccount
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" {
					created = append(created, a.(k8stesting.CreateAction).GetObject().(*corev1.ServiceAccount))
				}
			}
			if !tt.wantCreate {
				if len(created) != 0 {
					t.Fatalf("created %d service accounts, want none", len(created))
				}
				return
			}
			if len(created) != 1 || created[0].Name != "default" || created[0].Namespace != "ns" {
				t.Fatalf("created = %+v, want ns/default", created)
			}
		})
	}
}
