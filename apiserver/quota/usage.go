package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
	storagehelper "k8s.io/component-helpers/storage/volume"
)

// The resources with their own evaluators.
var (
	Pods                   = schema.GroupResource{Resource: "pods"}
	Services               = schema.GroupResource{Resource: "services"}
	PersistentVolumeClaims = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// legacyNames are the short names some resources are also counted under
// ("configmaps" besides "count/configmaps").
var legacyNames = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
}

// storageClassSuffix qualifies a PVC resource by storage class:
// gold.storageclass.storage.k8s.io/requests.storage.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// ObjectCountName is the name that counts the objects of gr in a quota:
// count/pods, count/deployments.apps.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

var (
	podResources = []corev1.ResourceName{
		ObjectCountName(Pods), corev1.ResourcePods,
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	}
	serviceResources = []corev1.ResourceName{
		ObjectCountName(Services), corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
	}
	pvcResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}
)

// MatchingResources returns the names among names that objects of gr are
// charged for.
func MatchingResources(gr schema.GroupResource, names []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range names {
		if matchesResource(gr, name) {
			out = append(out, name)
		}
	}
	return out
}

func matchesResource(gr schema.GroupResource, name corev1.ResourceName) bool {
	switch gr {
	case Pods:
		return slices.Contains(podResources, name) ||
			strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) ||
			strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix) ||
			(!isNative(name) && strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix))
	case Services:
		return slices.Contains(serviceResources, name)
	case PersistentVolumeClaims:
		if name == ObjectCountName(gr) || slices.Contains(pvcResources, name) {
			return true
		}
		for _, r := range pvcResources {
			if strings.HasSuffix(string(name), storageClassSuffix+string(r)) {
				return true
			}
		}
		return false
	}
	alias, ok := legacyNames[gr]
	return name == ObjectCountName(gr) || (ok && name == alias)
}

// Usage returns what obj, an object of gr, charges against a quota at time
// now. Pods, services and claims must be of their typed kinds; any other
// resource counts one object whatever obj is.
func Usage(gr schema.GroupResource, obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	switch gr {
	case Pods:
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("quota: expected a Pod, got %T", obj)
		}
		return podUsage(pod, now), nil
	case Services:
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil, fmt.Errorf("quota: expected a Service, got %T", obj)
		}
		return serviceUsage(svc), nil
	case PersistentVolumeClaims:
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil, fmt.Errorf("quota: expected a PersistentVolumeClaim, got %T", obj)
		}
		return claimUsage(pvc), nil
	}
	out := corev1.ResourceList{ObjectCountName(gr): one}
	if alias, ok := legacyNames[gr]; ok {
		out[alias] = one.DeepCopy()
	}
	return out, nil
}

// podUsage charges every stored pod to count/pods, and a pod that is still
// alive to pods and its compute requests and limits (init containers and
// overhead included).
func podUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{ObjectCountName(Pods): *resource.NewQuantity(1, resource.DecimalSI)}
	if !Charged(pod, now) {
		return out
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	return Add(out, computeUsage(requests, limits))
}

// Charged reports whether a pod counts against compute quota: it has not
// finished (Succeeded or Failed) and is not past the grace period of its
// deletion (a pod stuck terminating on a lost node does not block
// replacements).
func Charged(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// computeUsage maps requests and limits to quota names: cpu and
// requests.cpu are the request, limits.cpu the limit; huge pages and
// extended resources are charged by request.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	for _, r := range []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name] = q.DeepCopy()
			out[r.request] = q.DeepCopy()
		}
		if q, ok := limits[r.name]; ok {
			out[r.limit] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			out[name] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
		if isExtended(name) {
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
	}
	return out
}

// isNative reports whether name has no domain or a kubernetes.io one.
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtended reports whether name is an extended resource (example.com/gpu),
// quota-able as requests.example.com/gpu.
func isExtended(name corev1.ResourceName) bool {
	if isNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// serviceUsage counts the service, its node ports (every port of a NodePort
// or LoadBalancer service, unless a load balancer allocates none, when only
// the ports given one count) and load balancers.
func serviceUsage(svc *corev1.Service) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		ObjectCountName(Services):            one.DeepCopy(),
		corev1.ResourceServices:              one.DeepCopy(),
		corev1.ResourceServicesNodePorts:     resource.Quantity{Format: resource.DecimalSI},
		corev1.ResourceServicesLoadBalancers: resource.Quantity{Format: resource.DecimalSI},
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one.DeepCopy()
	}
	return out
}

// claimUsage counts the claim and its storage request (or the larger
// allocated size), also per storage class. Storage is rounded up to whole
// bytes.
func claimUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims:   one.DeepCopy(),
		ObjectCountName(PersistentVolumeClaims): one.DeepCopy(),
	}
	class := storagehelper.GetPersistentVolumeClaimClass(pvc)
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one.DeepCopy()
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return out
	}
	storage := req.DeepCopy()
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(storage) > 0 {
		storage = alloc.DeepCopy()
	}
	storage.RoundUp(0)
	out[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
	}
	return out
}

// constrained are the names that, when a quota limits them, every
// container must request or limit explicitly (an upstream compatibility
// rule that covers cpu and memory only).
var constrained = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Constraints checks that obj can be charged for the quota names required:
// a pod must set, in every container, each cpu and memory request or limit
// that required names. The error reads "must specify limits.cpu for: a,b;
// requests.memory for: a".
func Constraints(gr schema.GroupResource, required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if gr != Pods || !ok {
		return nil
	}
	var need []corev1.ResourceName
	for _, name := range required {
		if slices.Contains(constrained, name) && !slices.Contains(need, name) {
			need = append(need, name)
		}
	}
	if len(need) == 0 {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			c := &list[i]
			have := computeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, name := range need {
				if _, ok := have[name]; !ok && !slices.Contains(missing[name], c.Name) {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		names := missing[name]
		slices.Sort(names)
		msgs = append(msgs, fmt.Sprintf("%s for: %s", name, strings.Join(names, ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}
