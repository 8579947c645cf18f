package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/apiserver/quota"
	"github.com/kubebus/kubebus/controllers"
)

type reconciler struct {
	client   kubernetes.Interface
	quotas   QuotaSource
	pods     Source[*corev1.Pod]
	services Source[*corev1.Service]
	claims   Source[*corev1.PersistentVolumeClaim]
	objects  map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]
	// runtime are the resources added at runtime (nil: none).
	runtime *runtimeSources
	now     func() time.Time
	log     *slog.Logger
}

// Reconcile writes the quota's status: hard from spec, used recomputed
// from the caches (names nothing counts keep their last value, see
// AddResource). A quota that limits a resource added at runtime whose
// cache has not synced yet is recounted again after SyncRetry.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	q, ok := r.quotas.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	usage, unsynced, err := r.usage(q)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("computing the usage of quota %s: %w", req, err))
	}
	var res controllers.Result
	if len(unsynced) > 0 {
		r.log.Debug("not counting resources whose caches have not synced yet", "quota", req.String(), "resources", sortedGRs(unsynced))
		res.RequeueAfter = SyncRetry
	}
	status := Status(q, usage)
	if apiequality.Semantic.DeepEqual(status, q.Status) {
		return res, nil
	}
	next := q.DeepCopy()
	next.Status = status
	if _, err := r.client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return controllers.Result{}, nil
		}
		return controllers.Result{}, fmt.Errorf("updating the status of quota %s: %w", req, err)
	}
	r.log.Debug("updated quota status", "quota", req.String(), "used", quota.Format(status.Used))
	return res, nil
}

// Status is the status a quota should have given the usage just counted:
// hard is spec.hard; used is the last used overwritten by usage, limited
// to the names spec.hard has.
func Status(q *corev1.ResourceQuota, usage corev1.ResourceList) corev1.ResourceQuotaStatus {
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	for name, v := range usage {
		used[name] = v
	}
	return corev1.ResourceQuotaStatus{Hard: hard, Used: quota.Mask(used, quota.Names(hard))}
}

// usage counts what the namespace uses of the names q limits. unsynced
// are the resources q limits that were added at runtime and whose caches
// have not synced: they are not counted.
func (r *reconciler) usage(q *corev1.ResourceQuota) (total corev1.ResourceList, unsynced []schema.GroupResource, err error) {
	now := r.now()
	total = corev1.ResourceList{}
	names := quota.Names(q.Spec.Hard)
	add := func(gr schema.GroupResource, list func() []runtime.Object) error {
		if len(quota.MatchingResources(gr, names)) == 0 {
			return nil
		}
		u, err := quota.Total(q, gr, list(), now)
		if err != nil {
			return err
		}
		total = quota.Add(total, u)
		return nil
	}
	if err := add(quota.Pods, func() []runtime.Object { return objects(r.pods.ListNamespace(q.Namespace)) }); err != nil {
		return nil, nil, err
	}
	if err := add(quota.Services, func() []runtime.Object { return objects(r.services.ListNamespace(q.Namespace)) }); err != nil {
		return nil, nil, err
	}
	if err := add(quota.PersistentVolumeClaims, func() []runtime.Object { return objects(r.claims.ListNamespace(q.Namespace)) }); err != nil {
		return nil, nil, err
	}
	for gr, src := range r.objects {
		if err := add(gr, func() []runtime.Object { return objects(src.ListNamespace(q.Namespace)) }); err != nil {
			return nil, nil, err
		}
	}
	if r.runtime == nil {
		return total, nil, nil
	}
	for _, e := range r.runtime.snapshot() {
		if !e.src.HasSynced() {
			if len(quota.MatchingResources(e.gr, names)) > 0 {
				unsynced = append(unsynced, e.gr)
			}
			continue
		}
		if err := add(e.gr, func() []runtime.Object { return objects(e.src.ListNamespace(q.Namespace)) }); err != nil {
			return nil, nil, err
		}
	}
	return total, unsynced, nil
}

func objects[T runtime.Object](list []T) []runtime.Object {
	out := make([]runtime.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out
}
