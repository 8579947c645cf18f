package admission

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/quota"
)

// LimitRangeLister lists the LimitRanges of a namespace.
type LimitRangeLister interface {
	ListLimitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error)
}

// LimitRangerAnnotation records the defaults LimitRanger set on a pod.
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

type limitRanger struct {
	ranges LimitRangeLister
}

// NewLimitRanger returns upstream's LimitRanger admission plugin.
//
// On pod CREATE it first fills, from each LimitRange of the namespace, the
// Container defaults (default limits, defaultRequest requests) into every
// container and init container that lacks them, recording what it set in
// the kubernetes.io/limit-ranger annotation ("LimitRanger plugin set: cpu
// request for container app; ..."), and then enforces each range: the
// Container min, max and maxLimitRequestRatio on every container, the Pod
// ones on the pod's total (init containers included, overhead not). On
// PersistentVolumeClaim CREATE and UPDATE it enforces the
// PersistentVolumeClaim min and max on the storage request. A violation is a
// 403 such as `pods "x" is forbidden: maximum cpu usage per Container is
// 500m, but limit is 1`. Pod updates are left alone: containers'
// resources cannot change.
func NewLimitRanger(l LimitRangeLister) auth.Admitter {
	return limitRanger{ranges: l}
}

// Admit implements auth.Admitter.
func (l limitRanger) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	gr := schema.GroupResource{Group: req.Attributes.APIGroup, Resource: req.Attributes.Resource}
	if l.ranges == nil || req.Subresource != "" || req.Object == nil {
		return nil
	}
	switch {
	case gr == quota.Pods && req.Operation == auth.Create:
	case gr == quota.PersistentVolumeClaims && (req.Operation == auth.Create || req.Operation == auth.Update):
	default:
		return nil
	}
	if req.OldObject != nil {
		if m, err := meta.Accessor(req.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	name := objectName(req.Attributes.Name, req.Object)
	ranges, err := l.ranges.ListLimitRanges(ctx, req.Attributes.Namespace)
	if err != nil {
		gvr := gr.WithVersion(req.Attributes.APIVersion)
		return apierrors.NewForbidden(gr, name, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", req.Operation, gvr))
	}
	switch obj := req.Object.(type) {
	case *corev1.Pod:
		for _, lr := range ranges {
			defaultPodResources(lr, obj)
		}
		for _, lr := range ranges {
			if err := validatePodLimits(lr, obj); err != nil {
				return apierrors.NewForbidden(gr, name, err)
			}
		}
	case *corev1.PersistentVolumeClaim:
		for _, lr := range ranges {
			if err := validateClaimLimits(lr, obj); err != nil {
				return apierrors.NewForbidden(gr, name, err)
			}
		}
	}
	return nil
}

// defaultPodResources fills the range's Container defaults into the pod's
// containers and annotates what it set.
func defaultPodResources(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for name, q := range item.DefaultRequest {
			requests[name] = q.DeepCopy()
		}
		for name, q := range item.Default {
			limits[name] = q.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = defaultContainer(&pod.Spec.Containers[i], requests, limits, "container", notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = defaultContainer(&pod.Spec.InitContainers[i], requests, limits, "init container", notes)
	}
	if len(notes) == 0 {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
}

// defaultContainer sets the defaults c lacks and appends notes such as
// "cpu, memory request for container app".
func defaultContainer(c *corev1.Container, requests, limits corev1.ResourceList, kind string, notes []string) []string {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	fill := func(into, from corev1.ResourceList) []string {
		var set []string
		for _, name := range quota.Names(from) {
			if _, ok := into[name]; !ok {
				into[name] = from[name].DeepCopy()
				set = append(set, string(name))
			}
		}
		return set
	}
	setLimits := fill(c.Resources.Limits, limits)
	setRequests := fill(c.Resources.Requests, requests)
	if len(setRequests) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), kind, c.Name))
	}
	if len(setLimits) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), kind, c.Name))
	}
	return notes
}

// validatePodLimits enforces the range's Container limits on every
// container and its Pod limits on the pod's total.
func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range list {
					errs = append(errs, enforce(item, list[i].Resources.Requests, list[i].Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true, SkipPodLevelResources: true}
			errs = append(errs, enforce(item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// validateClaimLimits enforces the range's PersistentVolumeClaim min and
// max on the claim's requests (a claim's limits are not user input).
func validateClaimLimits(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(item.Type)
		for _, name := range quota.Names(item.Min) {
			if err := minConstraint(kind, name, item.Min[name], pvc.Spec.Resources.Requests, nil); err != nil {
				errs = append(errs, err)
			}
		}
		for _, name := range quota.Names(item.Max) {
			if err := maxRequestConstraint(kind, name, item.Max[name], pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// enforce checks requests and limits against one item's min, max and
// maxLimitRequestRatio.
func enforce(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	kind := string(item.Type)
	var errs []error
	for _, name := range quota.Names(item.Min) {
		errs = appendErr(errs, minConstraint(kind, name, item.Min[name], requests, limits))
	}
	for _, name := range quota.Names(item.Max) {
		errs = appendErr(errs, maxConstraint(kind, name, item.Max[name], requests, limits))
	}
	for _, name := range quota.Names(item.MaxLimitRequestRatio) {
		errs = appendErr(errs, ratioConstraint(kind, name, item.MaxLimitRequestRatio[name], requests, limits))
	}
	return errs
}

func appendErr(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

// atCommonScale returns request, limit and enforced at a common scale: milli
// units when none would overflow, as upstream.
func atCommonScale(request, limit, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := request.Value(), limit.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return request.MilliValue(), limit.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, haveReq := requests[name]
	lim, haveLim := limits[name]
	r, l, e := atCommonScale(req, lim, enforced)
	switch {
	case !haveReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case haveLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, haveReq := requests[name]
	lim, haveLim := limits[name]
	r, l, e := atCommonScale(req, lim, enforced)
	switch {
	case !haveLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case haveReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

// maxRequestConstraint is maxConstraint for kinds without limits (claims).
func maxRequestConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, haveReq := requests[name]
	r, _, e := atCommonScale(req, resource.Quantity{}, enforced)
	switch {
	case !haveReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, haveReq := requests[name]
	lim, haveLim := limits[name]
	r, l, _ := atCommonScale(req, lim, enforced)
	switch {
	case !haveReq || r == 0:
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	case !haveLim || l == 0:
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, allowed := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, allowed = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > allowed {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}
