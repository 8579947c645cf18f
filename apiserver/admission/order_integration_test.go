package admission_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// serverObjects reads quotas and limit ranges straight from the server
// under test (the API server's own caches are bus-fed; here is no bus).
type serverObjects struct {
	srv atomic.Pointer[apiserver.Server]
}

var (
	quotasResource      = corev1.SchemeGroupVersion.WithResource("resourcequotas")
	limitRangesResource = corev1.SchemeGroupVersion.WithResource("limitranges")
)

func (o *serverObjects) ListQuotas(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	objs, err := o.srv.Load().List(ctx, quotasResource, ns)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.ResourceQuota, 0, len(objs))
	for _, x := range objs {
		out = append(out, x.(*corev1.ResourceQuota))
	}
	return out, nil
}

func (o *serverObjects) UpdateQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
	out, err := o.srv.Load().UpdateStatus(ctx, quotasResource, q)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.ResourceQuota), nil
}

func (o *serverObjects) ListLimitRanges(ctx context.Context, ns string) ([]*corev1.LimitRange, error) {
	objs, err := o.srv.Load().List(ctx, limitRangesResource, ns)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.LimitRange, 0, len(objs))
	for _, x := range objs {
		out = append(out, x.(*corev1.LimitRange))
	}
	return out, nil
}

// startWithLimitsAndQuota runs an API server whose admission is the Timed
// chain of LimitRanger (mutating) and ResourceQuota (validating), as the
// server builds it.
func startWithLimitsAndQuota(t *testing.T) kubernetes.Interface {
	t.Helper()
	objs := &serverObjects{}
	cs, srv := startAPIServerAdmitting(t, func(*storage.Store) auth.Admitter {
		return admission.NewTimed([]admission.Plugin{
			{Name: admission.PluginLimitRanger, Admitter: admission.NewLimitRanger(objs)},
			{Name: admission.PluginResourceQuota, Validating: true, Admitter: admission.NewResourceQuota(admission.QuotaConfig{Quotas: objs})},
		}, nil)
	})
	objs.srv.Store(srv)
	return cs
}

// createQuota creates a quota with its status as the quota controller
// would first write it (nothing used).
func createQuota(ctx context.Context, t *testing.T, cs kubernetes.Interface, q *corev1.ResourceQuota) {
	t.Helper()
	created, err := cs.CoreV1().ResourceQuotas(q.Namespace).Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := corev1.ResourceList{}
	for r := range q.Spec.Hard {
		used[r] = resource.MustParse("0")
	}
	created.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	if _, err := cs.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func usedOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, r corev1.ResourceName) string {
	t.Helper()
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := q.Status.Used[r]
	return v.String()
}

func plainPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
}

// TestIntegrationQoSClassAfterLimitRanger: a pod's QoS class is that of
// the resources the mutating plugins gave it, as upstream prepares the
// object after mutating admission: a pod without resources in a namespace
// whose LimitRange gives it requests and limits is Guaranteed, and a
// NotBestEffort quota charges it.
func TestIntegrationQoSClassAfterLimitRanger(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	cs := startWithLimitsAndQuota(t)
	two := corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("1Gi")}
	if _, err := cs.CoreV1().LimitRanges("default").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: two, DefaultRequest: two}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createQuota(ctx, t, cs, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.cpu": resource.MustParse("3")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}}})

	p, err := cs.CoreV1().Pods("default").Create(ctx, plainPod("first"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %q with requests %v and limits %v, want Guaranteed", p.Status.QOSClass,
			p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Resources.Limits)
	}
	if got := usedOf(ctx, t, cs, "default", "compute", "limits.cpu"); got != "2" {
		t.Errorf("NotBestEffort quota's limits.cpu used %s, want 2", got)
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, plainPod("second"), metav1.CreateOptions{})
	want := `pods "second" is forbidden: exceeded quota: compute, requested: limits.cpu=2, used: limits.cpu=2, limited: limits.cpu=3`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("second pod: %v, want %q", err, want)
	}
}

// TestIntegrationInvalidCreatesAreNotCharged: validation runs before the
// validating plugins, as upstream, so an invalid pod is refused with 422
// and quota charges nothing for it.
func TestIntegrationInvalidCreatesAreNotCharged(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	cs := startWithLimitsAndQuota(t)
	createQuota(ctx, t, cs, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("3")}}})
	for _, name := range []string{"bad-0", "bad-1", "bad-2", "bad-3"} {
		bad := plainPod(name)
		bad.Spec.Containers[0].Image = ""
		if _, err := cs.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("pod without an image: %v, want 422 Invalid", err)
		}
	}
	if got := usedOf(ctx, t, cs, "default", "q", "pods"); got != "0" {
		t.Errorf("after four invalid creates quota used pods=%s, want 0", got)
	}
	for _, name := range []string{"good-0", "good-1", "good-2"} {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, plainPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("valid pod %s within quota: %v", name, err)
		}
	}
	if got := usedOf(ctx, t, cs, "default", "q", "pods"); got != "3" {
		t.Errorf("after three valid creates quota used pods=%s, want 3", got)
	}
}
