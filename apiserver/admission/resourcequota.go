package admission

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/quota"
)

// QuotaStore reads and writes the ResourceQuotas of a namespace as stored
// now (not from a lagging cache: the status written by the previous
// admission must be seen by the next).
type QuotaStore interface {
	ListQuotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error)
	// UpdateQuotaStatus writes q's status if q's resourceVersion is still
	// the stored one, and fails with an apierrors Conflict otherwise.
	UpdateQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error)
}

// QuotaConfig configures the ResourceQuota admission plugin.
type QuotaConfig struct {
	Quotas QuotaStore
	// Now is the clock pods' deletion grace is measured by (default
	// time.Now).
	Now func() time.Time
}

// quotaRetries is how many times a charge that lost a race for a quota's
// status is evaluated again against the newer status, as upstream.
const quotaRetries = 3

// quotaIgnored are resources the plugin never charges, as upstream's
// default configuration.
var quotaIgnored = map[schema.GroupResource]bool{
	{Resource: "events"}: true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
}

// resourceQuota is upstream's ResourceQuota admission plugin.
type resourceQuota struct {
	quotas QuotaStore
	now    func() time.Time
	// locks serialize the charges of one namespace within this server
	// (upstream runs one worker per namespace); the compare-and-swap on
	// the status keeps other servers and the controller honest.
	locks [64]sync.Mutex
}

// NewResourceQuota returns upstream's ResourceQuota admission plugin.
//
// On CREATE of any namespaced object (and on UPDATE of services and
// persistent volume claims, whose usage can grow) it computes what the
// object adds to every quota of the namespace that matches it (status.hard
// names the object is charged for, and the object is in the quota's scopes)
// and refuses with 403 when a quota would be exceeded ("exceeded quota:
// NAME, requested: pods=1, used: pods=3, limited: pods=3") or has no usage
// yet for a limited name ("status unknown for quota: NAME, resources:
// pods"). Otherwise it writes the increased status.used of each quota with
// a compare-and-swap before admitting, re-reading and re-checking a quota
// whose status moved meanwhile, so concurrent creates cannot both take the
// last slot. Dry runs are checked but not charged. Deletes are never
// credited here: the quota controller recomputes usage.
//
// Run it after the plugins that mutate (LimitRanger fills the requests it
// charges).
func NewResourceQuota(c QuotaConfig) auth.Admitter {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &resourceQuota{quotas: c.Quotas, now: c.Now}
}

// Admit implements auth.Admitter.
func (r *resourceQuota) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	gr := schema.GroupResource{Group: req.Attributes.APIGroup, Resource: req.Attributes.Resource}
	ns := req.Attributes.Namespace
	if r.quotas == nil || ns == "" || req.Subresource != "" || req.Object == nil || quotaIgnored[gr] || !quotaHandles(gr, req.Operation) {
		return nil
	}
	mu := &r.locks[lockIndex(ns, len(r.locks))]
	mu.Lock()
	defer mu.Unlock()

	quotas, err := r.quotas.ListQuotas(ctx, ns)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the resource quotas of namespace %s: %w", ns, err))
	}
	for attempt := 0; ; attempt++ {
		if len(quotas) == 0 {
			return nil
		}
		charged, err := checkQuotas(quotas, req, gr, r.now())
		if err != nil || req.DryRun || len(charged) == 0 {
			return err
		}
		failed, lastErr := r.write(ctx, charged)
		if len(failed) == 0 {
			return nil
		}
		if attempt == quotaRetries {
			return lastErr
		}
		// Re-read and re-check only the quotas whose write lost a race;
		// the others already hold this object's charge.
		fresh, err := r.quotas.ListQuotas(ctx, ns)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("listing the resource quotas of namespace %s: %w", ns, err))
		}
		quotas = quotas[:0]
		for _, q := range fresh {
			if failed[q.Name] {
				quotas = append(quotas, q)
			}
		}
	}
}

// write stores the charged quotas' statuses and returns the names of those
// that conflicted, with the last error.
func (r *resourceQuota) write(ctx context.Context, charged []*corev1.ResourceQuota) (map[string]bool, error) {
	var failed map[string]bool
	var lastErr error
	for _, q := range charged {
		_, err := r.quotas.UpdateQuotaStatus(ctx, q)
		if err == nil {
			continue
		}
		if !apierrors.IsConflict(err) {
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				err = apierrors.NewInternalError(fmt.Errorf("updating the status of resource quota %s: %w", q.Name, err))
			}
			return map[string]bool{q.Name: true}, err
		}
		if failed == nil {
			failed = map[string]bool{}
		}
		failed[q.Name] = true
		lastErr = err
	}
	return failed, lastErr
}

func lockIndex(ns string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(ns))
	return int(h.Sum32() % uint32(n))
}

// quotaHandles reports whether op on gr can change usage: creates always;
// updates of services (a type change adds node ports or load balancers)
// and of claims (a larger request).
func quotaHandles(gr schema.GroupResource, op auth.Operation) bool {
	switch op {
	case auth.Create:
		return true
	case auth.Update:
		return gr == quota.Services || gr == quota.PersistentVolumeClaims
	}
	return false
}

// checkQuotas returns copies of the quotas req's object is charged to, with
// status.used raised by the charge, or the Forbidden error that refuses
// the object.
func checkQuotas(quotas []*corev1.ResourceQuota, req *auth.AdmissionRequest, gr schema.GroupResource, now time.Time) ([]*corev1.ResourceQuota, error) {
	obj := req.Object
	var matched []*corev1.ResourceQuota
	for _, q := range quotas {
		ok, err := quota.Matches(q, gr, obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if !ok {
			continue
		}
		limited := quota.MatchingResources(gr, quota.Names(q.Status.Hard))
		if err := quota.Constraints(gr, limited, obj); err != nil {
			return nil, quotaForbidden(req, gr, fmt.Errorf("failed quota: %s: %w", q.Name, err))
		}
		var unknown []corev1.ResourceName
		for _, name := range limited {
			if _, ok := q.Status.Used[name]; !ok {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			return nil, quotaForbidden(req, gr, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, quota.FormatNames(limited)))
		}
		matched = append(matched, q)
	}
	if len(matched) == 0 {
		return nil, nil
	}
	usage, err := quota.Usage(gr, obj, now)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if neg := quota.Negative(usage); len(neg) > 0 {
		return nil, quotaForbidden(req, gr, fmt.Errorf("quota usage is negative for resource(s): %s", quota.FormatNames(neg)))
	}
	deltas := make([]corev1.ResourceList, len(matched))
	for i := range matched {
		deltas[i] = usage
	}
	if req.Operation == auth.Update {
		if req.OldObject == nil {
			return nil, quotaForbidden(req, gr, errors.New("unable to get previous usage since prior version of object was not found"))
		}
		if m, err := meta.Accessor(req.OldObject); err == nil && m.GetResourceVersion() != "" {
			prev, err := quota.Usage(gr, req.OldObject, now)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			grown := quota.Subtract(usage, prev)
			for i, q := range matched {
				// A quota the old object was outside of is charged in full.
				if ok, err := quota.Matches(q, gr, req.OldObject); err == nil && ok {
					deltas[i] = grown
				}
			}
		}
	}
	var charged []*corev1.ResourceQuota
	for i, q := range matched {
		requested := quota.Mask(quota.RemoveZeros(deltas[i]), quota.Names(q.Status.Hard))
		if len(requested) == 0 {
			continue
		}
		used := quota.Add(q.Status.Used, requested)
		if exceeded := quota.Exceeded(q.Status.Hard, quota.Mask(used, quota.Names(requested))); len(exceeded) > 0 {
			return nil, quotaForbidden(req, gr, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				quota.Format(quota.Mask(requested, exceeded)), quota.Format(quota.Mask(q.Status.Used, exceeded)),
				quota.Format(quota.Mask(q.Status.Hard, exceeded))))
		}
		c := q.DeepCopy()
		c.Status.Used = used
		charged = append(charged, c)
	}
	return charged, nil
}

// quotaForbidden is upstream's admission.NewForbidden: a 403 naming the
// object (or its generateName, or "Unknown").
func quotaForbidden(req *auth.AdmissionRequest, gr schema.GroupResource, err error) error {
	return apierrors.NewForbidden(gr, objectName(req.Attributes.Name, req.Object), err)
}

// objectName is the name a refusal names: the request's, else the
// object's name or generateName, else "Unknown".
func objectName(name string, obj runtime.Object) string {
	if name != "" {
		return name
	}
	if m, err := meta.Accessor(obj); err == nil {
		if m.GetName() != "" {
			return m.GetName()
		}
		if m.GetGenerateName() != "" {
			return m.GetGenerateName()
		}
	}
	return "Unknown"
}
