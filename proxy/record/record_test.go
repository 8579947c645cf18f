package record

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/bus/lifecycle"
)

const node = "n1"

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), "kube-proxy-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkProgrammed(t *testing.T, l *coordinationv1.Lease, rev int64, at time.Time) {
	t.Helper()
	gotRev, gotAt, ok := lifecycle.ReadProgrammed(l)
	if !ok || gotRev != rev || !gotAt.Equal(at) {
		t.Errorf("lease reads revision %d at %v (ok %v), want %d at %v", gotRev, gotAt, ok, rev, at)
	}
}

// verbs lists the lease calls made, in order.
func verbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "leases" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCreatesThenUpdates: the first record creates the Lease held by the
// node; the next ones update it without reading it again.
func TestCreatesThenUpdates(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	r := New(c, node)
	ctx := context.Background()
	start := time.Now()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	if err := r.RecordProgrammed(ctx, 42, at); err != nil {
		t.Fatal(err)
	}
	l := getLease(t, c)
	checkProgrammed(t, l, 42, at)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != node {
		t.Errorf("holder %v, want %s", l.Spec.HolderIdentity, node)
	}
	if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(start.Truncate(time.Microsecond)) {
		t.Errorf("renew time %v, want the time of the write", l.Spec.RenewTime)
	}
	first := l.Spec.RenewTime.Time
	time.Sleep(2 * time.Millisecond) // so the renewal shows in microseconds
	if err := r.RecordProgrammed(ctx, 50, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	l = getLease(t, c)
	checkProgrammed(t, l, 50, at.Add(time.Second))
	if !l.Spec.RenewTime.Time.After(first) {
		t.Errorf("renew time %v not after the first %v", l.Spec.RenewTime, first)
	}
	if got, want := verbs(c), []string{"get", "create", "get", "update", "get"}; !equal(got, want) {
		// (the gets after create and update are the test's)
		t.Errorf("lease calls %v, want %v", got, want)
	}
}

// TestUpdatesAnExistingLease keeps what others wrote in it.
func TestUpdatesAnExistingLease(t *testing.T) {
	t.Parallel()
	holder := "someone"
	c := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "kube-proxy-n1", Annotations: map[string]string{"keep": "me"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := New(c, node).RecordProgrammed(context.Background(), 7, at); err != nil {
		t.Fatal(err)
	}
	l := getLease(t, c)
	checkProgrammed(t, l, 7, at)
	if l.Annotations["keep"] != "me" || *l.Spec.HolderIdentity != holder || l.Spec.RenewTime == nil {
		t.Errorf("lease %+v lost what was there, or was not renewed", l)
	}
}

// TestRetriesConflicts: a conflict reads the Lease again and retries; a
// Lease deleted meanwhile is created again.
func TestRetriesConflicts(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	r := New(c, node)
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := r.RecordProgrammed(ctx, 1, at); err != nil {
		t.Fatal(err)
	}
	conflicts := 2
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), "kube-proxy-n1", nil)
		}
		return false, nil, nil
	})
	if err := r.RecordProgrammed(ctx, 2, at); err != nil {
		t.Fatal(err)
	}
	checkProgrammed(t, getLease(t, c), 2, at)
	c.ClearActions()
	if err := c.CoordinationV1().Leases("kube-node-lease").Delete(ctx, "kube-proxy-n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordProgrammed(ctx, 3, at); err != nil {
		t.Fatal(err)
	}
	checkProgrammed(t, getLease(t, c), 3, at)
	if got, want := verbs(c), []string{"delete", "update", "get", "create", "get"}; !equal(got, want) {
		t.Errorf("lease calls %v, want %v", got, want)
	}
}

// TestReportsOtherErrors: a refusal is returned, not retried.
func TestReportsOtherErrors(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset()
	c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "kube-proxy-n1", nil)
	})
	err := New(c, node).RecordProgrammed(context.Background(), 1, time.Now())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want the Forbidden", err)
	}
	if got := verbs(c); !equal(got, []string{"get"}) {
		t.Errorf("lease calls %v, want one get", got)
	}
}
