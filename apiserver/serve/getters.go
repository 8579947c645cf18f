package serve

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver"
)

// objects answers admission's and the token authenticator's lookups from
// the API server's bus-fed caches, falling back to etcd on a miss (an
// object created a moment ago may not have reached the cache yet, as
// upstream's listers fall back to a live lookup). Without caches (no bus)
// every lookup is live. The server is set once it is built.
type objects struct {
	caches *authCaches
	srv    atomic.Pointer[apiserver.Server]
}

var (
	gvrNamespaces      = corev1.SchemeGroupVersion.WithResource("namespaces")
	gvrServiceAccounts = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	gvrPods            = corev1.SchemeGroupVersion.WithResource("pods")
	gvrSecrets         = corev1.SchemeGroupVersion.WithResource("secrets")
	gvrNodes           = corev1.SchemeGroupVersion.WithResource("nodes")
	gvrLimitRanges     = corev1.SchemeGroupVersion.WithResource("limitranges")
	gvrQuotas          = corev1.SchemeGroupVersion.WithResource("resourcequotas")
)

func live[T runtime.Object](ctx context.Context, o *objects, gvr schema.GroupVersionResource, ns, name string) (T, error) {
	var zero T
	s := o.srv.Load()
	if s == nil {
		return zero, apierrors.NewServiceUnavailable("the API server is starting")
	}
	obj, err := s.Get(ctx, gvr, ns, name)
	if err != nil {
		return zero, err
	}
	return obj.(T), nil
}

func liveList[T runtime.Object](ctx context.Context, o *objects, gvr schema.GroupVersionResource, ns string) ([]T, error) {
	s := o.srv.Load()
	if s == nil {
		return nil, apierrors.NewServiceUnavailable("the API server is starting")
	}
	objs, err := s.List(ctx, gvr, ns)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(T))
	}
	return out, nil
}

// GetNamespace implements admission.NamespaceGetter.
func (o *objects) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	if o.caches != nil {
		if ns, ok := o.caches.namespaces.Get("", name); ok {
			return ns, nil
		}
	}
	return live[*corev1.Namespace](ctx, o, gvrNamespaces, "", name)
}

// GetNamespaceLive implements admission.LiveNamespaceGetter.
func (o *objects) GetNamespaceLive(ctx context.Context, name string) (*corev1.Namespace, error) {
	return live[*corev1.Namespace](ctx, o, gvrNamespaces, "", name)
}

// GetServiceAccount implements the ServiceAccount getters of admission
// and of the token authenticator.
func (o *objects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if o.caches != nil {
		if sa, ok := o.caches.serviceAccounts.Get(namespace, name); ok {
			return sa, nil
		}
	}
	return live[*corev1.ServiceAccount](ctx, o, gvrServiceAccounts, namespace, name)
}

// GetPod implements the pod getters of NodeRestriction and of the token
// authenticator.
func (o *objects) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if o.caches != nil {
		if p, ok := o.caches.pods.Get(namespace, name); ok {
			return p, nil
		}
	}
	return live[*corev1.Pod](ctx, o, gvrPods, namespace, name)
}

// ListPods implements admission.PodLister (PodSecurity's view of the
// pods a namespace already runs when its enforce level tightens).
func (o *objects) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	if o.caches != nil {
		return o.caches.pods.ListNamespace(namespace), nil
	}
	return liveList[*corev1.Pod](ctx, o, gvrPods, namespace)
}

// GetSecret reads a Secret from etcd (Secrets are not cached: their data
// stays off the bus).
func (o *objects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return live[*corev1.Secret](ctx, o, gvrSecrets, namespace, name)
}

// GetNode reads a Node from etcd.
func (o *objects) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return live[*corev1.Node](ctx, o, gvrNodes, "", name)
}

// ListLimitRanges implements admission.LimitRangeLister.
func (o *objects) ListLimitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error) {
	if o.caches != nil {
		return o.caches.limitRanges.ListNamespace(namespace), nil
	}
	return liveList[*corev1.LimitRange](ctx, o, gvrLimitRanges, namespace)
}

// ListQuotas implements admission.QuotaStore: the cache says whether the
// namespace has quotas at all (the common answer, no, costs no etcd
// read); when it has, they are read from etcd, since quota admission
// compares and swaps their status and must start from what is stored.
func (o *objects) ListQuotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	if o.caches != nil && len(o.caches.quotas.ListNamespace(namespace)) == 0 {
		return nil, nil
	}
	return liveList[*corev1.ResourceQuota](ctx, o, gvrQuotas, namespace)
}

// UpdateQuotaStatus implements admission.QuotaStore.
func (o *objects) UpdateQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
	s := o.srv.Load()
	if s == nil {
		return nil, apierrors.NewServiceUnavailable("the API server is starting")
	}
	out, err := s.UpdateStatus(ctx, gvrQuotas, q)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.ResourceQuota), nil
}
