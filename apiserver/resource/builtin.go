package resource

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/defaults"
	"github.com/kubebus/kubebus/apiserver/validation"
)

// Builtin returns the table of resources kubebus serves.
func Builtin() []*Resource {
	core := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	rows := []*Resource{
		{GVK: core("Namespace"), Plural: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Subresources: []Subresource{Status, Finalize},
			New:          func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
			}},
		{GVK: core("Pod"), Plural: "pods", Singular: "pod", Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"},
			Subresources: []Subresource{Status, Binding, Eviction, Log, Exec, Attach, PortForward},
			New:          func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			PrepareForCreate: func(o runtime.Object) {
				p := o.(*corev1.Pod)
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: defaults.PodQOSClass(p)}
			},
			Fields: podFields},
		{GVK: core("Node"), Plural: "nodes", Singular: "node", ShortNames: []string{"no"},
			Subresources: []Subresource{Status},
			New:          func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} },
			PrepareForCreate: func(o runtime.Object) { normalizePodCIDR(o.(*corev1.Node)) },
			PrepareForUpdate: func(o, _ runtime.Object) { normalizePodCIDR(o.(*corev1.Node)) },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)}
			}},
		{GVK: core("Service"), Plural: "services", Singular: "service", Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"},
			Subresources: []Subresource{Status},
			New:          func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*corev1.Service).Status = corev1.ServiceStatus{} },
			PrepareForUpdate: keepServiceAllocations,
			Fields: func(o runtime.Object) fields.Set {
				s := o.(*corev1.Service)
				return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
			}},
		{GVK: core("Endpoints"), Plural: "endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
			New: func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} }},
		{GVK: core("ConfigMap"), Plural: "configmaps", Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
			New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		{GVK: core("Secret"), Plural: "secrets", Singular: "secret", Namespaced: true,
			New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
			Fields: func(o runtime.Object) fields.Set { return fields.Set{"type": string(o.(*corev1.Secret).Type)} }},
		{GVK: core("Event"), Plural: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			New: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} },
			Fields: eventFields},
		{GVK: core("ServiceAccount"), Plural: "serviceaccounts", Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
			Subresources: []Subresource{Token},
			New:          func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} }},
		{GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Plural: "deployments", Singular: "deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Subresources: []Subresource{Status, Scale}, HasGeneration: true,
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{} },
			Scale: &ScaleAccess{
				Get: func(o runtime.Object) (int32, int32, string) {
					d := o.(*appsv1.Deployment)
					return replicas(d.Spec.Replicas), d.Status.Replicas, selectorString(d.Spec.Selector)
				},
				Set: func(o runtime.Object, n int32) { o.(*appsv1.Deployment).Spec.Replicas = &n },
			}},
		{GVK: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), Plural: "replicasets", Singular: "replicaset", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: []string{"all"}, Subresources: []Subresource{Status, Scale}, HasGeneration: true,
			New: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(o.(*appsv1.ReplicaSet).Status.Replicas))}
			},
			Scale: &ScaleAccess{
				Get: func(o runtime.Object) (int32, int32, string) {
					rs := o.(*appsv1.ReplicaSet)
					return replicas(rs.Spec.Replicas), rs.Status.Replicas, selectorString(rs.Spec.Selector)
				},
				Set: func(o runtime.Object, n int32) { o.(*appsv1.ReplicaSet).Spec.Replicas = &n },
			}},
		{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Plural: "leases", Singular: "lease", Namespaced: true,
			New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} }},
		{GVK: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), Plural: "endpointslices", Singular: "endpointslice", Namespaced: true,
			New: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
		{GVK: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), Plural: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
			New: func() runtime.Object { return &schedulingv1.PriorityClass{} }, NewList: func() runtime.Object { return &schedulingv1.PriorityClassList{} }},
	}
	rows = append(rows, securityRows()...)
	rows = append(rows, workloadRows()...)
	rows = append(rows, storageRows()...)
	for _, r := range rows {
		r.Default = defaults.Default
		r.Validate = validation.ValidateCreate
		r.ValidateUpdate = validation.ValidateUpdate
		r.ValidateSubresource = validation.ValidateSubresourceUpdate
	}
	return rows
}

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func eventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func selectorString(ls *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

// normalizePodCIDR makes a node's spec.podCIDR the first of its
// spec.podCIDRs, as upstream's v1 conversion does (one internal field
// behind both): a podCIDR alone becomes the list; beside a list it is
// ignored. The list's rules (valid, set once) then hold for both.
func normalizePodCIDR(n *corev1.Node) {
	if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
}

// keepServiceAllocations keeps the cluster IPs, IP families and node ports
// a PUT leaves out, as upstream does, so `kubectl replace` of a manifest
// works; and, as upstream's dropTypeDependentFields, drops the allocated
// values a type change leaves behind unchanged (cluster IPs when becoming
// ExternalName, node ports when no longer NodePort or LoadBalancer), so
// the allocator releases them.
func keepServiceAllocations(obj, old runtime.Object) {
	s, o := obj.(*corev1.Service), old.(*corev1.Service)
	if s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) == 0 && s.Spec.Type != corev1.ServiceTypeExternalName {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = o.Spec.ClusterIP, append([]string(nil), o.Spec.ClusterIPs...)
	}
	if len(s.Spec.IPFamilies) == 0 && s.Spec.Type != corev1.ServiceTypeExternalName && slices.Equal(s.Spec.ClusterIPs, o.Spec.ClusterIPs) {
		s.Spec.IPFamilies = append([]corev1.IPFamily(nil), o.Spec.IPFamilies...)
	}
	if s.Spec.Type == o.Spec.Type {
		for i := range s.Spec.Ports {
			if s.Spec.Ports[i].NodePort != 0 {
				continue
			}
			for _, op := range o.Spec.Ports {
				if op.Port == s.Spec.Ports[i].Port && op.Protocol == s.Spec.Ports[i].Protocol {
					s.Spec.Ports[i].NodePort = op.NodePort
				}
			}
		}
		if s.Spec.HealthCheckNodePort == 0 && s.Spec.ExternalTrafficPolicy == o.Spec.ExternalTrafficPolicy {
			s.Spec.HealthCheckNodePort = o.Spec.HealthCheckNodePort
		}
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName && o.Spec.Type != corev1.ServiceTypeExternalName {
		if s.Spec.ClusterIP == o.Spec.ClusterIP && slices.Equal(s.Spec.ClusterIPs, o.Spec.ClusterIPs) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(s.Spec.IPFamilies, o.Spec.IPFamilies) {
			s.Spec.IPFamilies = nil
		}
		if s.Spec.IPFamilyPolicy != nil && o.Spec.IPFamilyPolicy != nil && *s.Spec.IPFamilyPolicy == *o.Spec.IPFamilyPolicy {
			s.Spec.IPFamilyPolicy = nil
		}
	}
	if s.Spec.Type != corev1.ServiceTypeNodePort && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		for i := range s.Spec.Ports {
			for _, op := range o.Spec.Ports {
				if op.NodePort != 0 && op.NodePort == s.Spec.Ports[i].NodePort {
					s.Spec.Ports[i].NodePort = 0
				}
			}
		}
	}
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		if s.Spec.HealthCheckNodePort == o.Spec.HealthCheckNodePort {
			s.Spec.HealthCheckNodePort = 0
		}
	}
}
