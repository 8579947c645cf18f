package admission

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// namespaceMap is a NamespaceGetter over a fixed set of namespaces.
type namespaceMap map[string]*corev1.Namespace

func (m namespaceMap) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := m[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(namespacesResource, name)
}

// failingNamespaces is a NamespaceGetter whose store is down.
type failingNamespaces struct{}

func (failingNamespaces) GetNamespace(context.Context, string) (*corev1.Namespace, error) {
	return nil, errors.New("etcd is down")
}

func labelledNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
}

// expectStatus checks that err is an API status error with code and
// message; code 0 expects no error.
func expectStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a %d status error", err, err, code)
	}
	if s := se.Status(); s.Code != code || s.Message != msg {
		t.Fatalf("status = %d %q, want %d %q", s.Code, s.Message, code, msg)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	terminating := labelledNamespace("ending", nil)
	terminating.Status.Phase = corev1.NamespaceTerminating
	deleted := labelledNamespace("deleted", nil)
	deleted.DeletionTimestamp = &metav1.Time{}
	nss := namespaceMap{"app": labelledNamespace("app", nil), "ending": terminating, "deleted": deleted}

	req := func(op auth.Operation, group, resource, ns, name string) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: op, Attributes: auth.Attributes{APIGroup: group, Resource: resource, Namespace: ns, Name: name}}
	}
	tests := []struct {
		name     string
		getter   NamespaceGetter
		req      *auth.AdmissionRequest
		code     int32
		msg      string
		terminus bool // the NamespaceTerminating cause is expected
	}{
		{name: "create in an active namespace", req: req(auth.Create, "", "pods", "app", "p")},
		{name: "create in a missing namespace", req: req(auth.Create, "", "pods", "nope", "p"),
			code: http.StatusNotFound, msg: `namespaces "nope" not found`},
		{name: "update in a missing namespace", req: req(auth.Update, "apps", "deployments", "nope", "d")},
		{name: "create in a terminating namespace", req: req(auth.Create, "", "pods", "ending", "p"),
			code: http.StatusForbidden, msg: `pods "p" is forbidden: unable to create new content in namespace ending because it is being terminated`, terminus: true},
		{name: "create in a namespace with a deletion timestamp", req: req(auth.Create, "apps", "deployments", "deleted", "d"),
			code: http.StatusForbidden, msg: `deployments.apps "d" is forbidden: unable to create new content in namespace deleted because it is being terminated`, terminus: true},
		{name: "update in a terminating namespace", req: req(auth.Update, "", "pods", "ending", "p")},
		{name: "event in a terminating namespace", req: req(auth.Create, "", "events", "ending", "e"),
			code: http.StatusForbidden, msg: `events "e" is forbidden: unable to create new content in namespace ending because it is being terminated`, terminus: true},
		{name: "events.k8s.io event in a terminating namespace", req: req(auth.Create, "events.k8s.io", "events", "ending", "e"),
			code: http.StatusForbidden, msg: `events.events.k8s.io "e" is forbidden: unable to create new content in namespace ending because it is being terminated`, terminus: true},
		{name: "event in a missing namespace", req: req(auth.Create, "", "events", "nope", "e"),
			code: http.StatusNotFound, msg: `namespaces "nope" not found`},
		{name: "local access review in a missing namespace", req: req(auth.Create, "authorization.k8s.io", "localsubjectaccessreviews", "nope", "")},
		{name: "delete in a missing namespace", req: req(auth.Delete, "", "pods", "nope", "p")},
		{name: "cluster-scoped object", req: req(auth.Create, "", "nodes", "", "n1")},
		{name: "create a namespace", req: req(auth.Create, "", "namespaces", "", "fresh")},
		{name: "delete a namespace", req: req(auth.Delete, "", "namespaces", "", "app")},
		{name: "delete default", req: req(auth.Delete, "", "namespaces", "", "default"),
			code: http.StatusForbidden, msg: `namespaces "default" is forbidden: this namespace may not be deleted`},
		{name: "delete kube-system", req: req(auth.Delete, "", "namespaces", "", "kube-system"),
			code: http.StatusForbidden, msg: `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
		{name: "delete kube-public", req: req(auth.Delete, "", "namespaces", "", "kube-public"),
			code: http.StatusForbidden, msg: `namespaces "kube-public" is forbidden: this namespace may not be deleted`},
		{name: "update kube-system", req: req(auth.Update, "", "namespaces", "", "kube-system")},
		{name: "lookup failure", getter: failingNamespaces{}, req: req(auth.Create, "", "pods", "app", "p"),
			code: http.StatusInternalServerError, msg: "Internal error occurred: looking up namespace app: etcd is down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getter := tc.getter
			if getter == nil {
				getter = nss
			}
			err := (&NamespaceLifecycle{Namespaces: getter}).Admit(context.Background(), tc.req)
			expectStatus(t, err, tc.code, tc.msg)
			if !tc.terminus {
				return
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Details == nil {
				t.Fatalf("err = %#v, want status details", err)
			}
			want := metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "namespace " + tc.req.Attributes.Namespace + " is being terminated", Field: "metadata.namespace"}
			if causes := se.ErrStatus.Details.Causes; len(causes) != 1 || causes[0] != want {
				t.Fatalf("causes = %+v, want [%+v]", causes, want)
			}
		})
	}
}

// cachedNamespaces is a NamespaceGetter whose cache lags its storage.
type cachedNamespaces struct {
	cache, stored namespaceMap
	liveReads     int
}

func (c *cachedNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return c.cache.GetNamespace(ctx, name)
}

func (c *cachedNamespaces) GetNamespaceLive(ctx context.Context, name string) (*corev1.Namespace, error) {
	c.liveReads++
	return c.stored.GetNamespace(ctx, name)
}

// After it admits a namespace's deletion, NamespaceLifecycle reads the
// namespace from storage while its cache still shows it active, for 30
// seconds, as upstream's forced live lookup.
func TestNamespaceLifecycleLiveLookupAfterDelete(t *testing.T) {
	t.Parallel()
	ending := labelledNamespace("app", nil)
	ending.Status.Phase = corev1.NamespaceTerminating
	getter := &cachedNamespaces{
		cache:  namespaceMap{"app": labelledNamespace("app", nil), "gone": labelledNamespace("gone", nil), "other": labelledNamespace("other", nil)},
		stored: namespaceMap{"app": ending, "other": labelledNamespace("other", nil)},
	}
	now := time.Unix(1000, 0)
	l := &NamespaceLifecycle{Namespaces: getter, Now: func() time.Time { return now }}
	ctx := context.Background()
	create := func(ns string) error {
		return l.Admit(ctx, &auth.AdmissionRequest{Operation: auth.Create, Attributes: auth.Attributes{Resource: "pods", Namespace: ns, Name: "p"}})
	}
	del := func(ns string) {
		t.Helper()
		if err := l.Admit(ctx, &auth.AdmissionRequest{Operation: auth.Delete, Attributes: auth.Attributes{Resource: "namespaces", Name: ns}}); err != nil {
			t.Fatalf("deleting %s: %v", ns, err)
		}
	}

	// Before any deletion the cache is trusted.
	expectStatus(t, create("app"), 0, "")
	if getter.liveReads != 0 {
		t.Fatalf("live reads = %d before any deletion, want 0", getter.liveReads)
	}
	del("app")
	del("gone")
	expectStatus(t, create("app"), http.StatusForbidden, `pods "p" is forbidden: unable to create new content in namespace app because it is being terminated`)
	expectStatus(t, create("gone"), http.StatusNotFound, `namespaces "gone" not found`)
	expectStatus(t, create("other"), 0, "")
	if getter.liveReads != 2 {
		t.Fatalf("live reads = %d, want 2 (app and gone, not other)", getter.liveReads)
	}
	// Thirty seconds on, the cache is trusted again.
	now = now.Add(forceLiveLookupTTL)
	expectStatus(t, create("app"), 0, "")
	if getter.liveReads != 2 {
		t.Fatalf("live reads = %d after the TTL, want still 2", getter.liveReads)
	}
}
