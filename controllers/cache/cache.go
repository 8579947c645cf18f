// Package cache builds the bus-fed informers the controller-manager shares
// between its controllers: one informer per resource, each a durable bus
// consumer, with the indexes the controllers look objects up by.
package cache

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/bus/informer"
)

// Index names.
const (
	// ByOwnerUID indexes objects by the UID of each of their owners.
	ByOwnerUID = "metadata.ownerReferences.uid"
	// ByOrphanNamespace indexes objects that have no controller owner by
	// their namespace: the candidates a controller may adopt, found
	// without scanning every object.
	ByOrphanNamespace = "orphans.metadata.namespace"
	// ByNodeName indexes pods by spec.nodeName.
	ByNodeName = "spec.nodeName"
	// ByServiceName indexes EndpointSlices by their kubernetes.io/service-name label.
	ByServiceName = "kubernetes.io/service-name"
)

// Config says which bus and under which durable names.
type Config struct {
	JetStream jetstream.JetStream
	Component string // "kube-controller-manager"
	Instance  string // distinguishes replicas' durables
	Logger    *slog.Logger
	Metrics   prometheus.Registerer
	// Pods, when set, is a pods informer that another part of the process
	// runs (kubebus server's API server keeps one for its authorizer and
	// admission), made with PodIndexers: the caches read pods from it
	// instead of from a bus consumer of their own, so that each pod event
	// is decoded and held once in the process. Run does not run it.
	Pods *informer.Informer[*corev1.Pod]
}

// Informers are the shared caches.
type Informers struct {
	Pods           *informer.Informer[*corev1.Pod]
	ReplicaSets    *informer.Informer[*appsv1.ReplicaSet]
	Deployments    *informer.Informer[*appsv1.Deployment]
	Nodes          *informer.Informer[*corev1.Node]
	Namespaces     *informer.Informer[*corev1.Namespace]
	Services       *informer.Informer[*corev1.Service]
	Endpoints      *informer.Informer[*corev1.Endpoints]
	EndpointSlices *informer.Informer[*discoveryv1.EndpointSlice]
	NodeLeases     *informer.Informer[*coordinationv1.Lease]
	// Who may do what: the service account, root CA publisher, ClusterRole
	// aggregation and certificate controllers.
	ServiceAccounts            *informer.Informer[*corev1.ServiceAccount]
	ConfigMaps                 *informer.Informer[*corev1.ConfigMap]
	ResourceQuotas             *informer.Informer[*corev1.ResourceQuota]
	ClusterRoles               *informer.Informer[*rbacv1.ClusterRole]
	CertificateSigningRequests *informer.Informer[*certificatesv1.CertificateSigningRequest]
	// Workloads and storage: the StatefulSet, DaemonSet, Job, CronJob,
	// TTL-after-finished, volume binder and provisioner controllers.
	StatefulSets           *informer.Informer[*appsv1.StatefulSet]
	DaemonSets             *informer.Informer[*appsv1.DaemonSet]
	ControllerRevisions    *informer.Informer[*appsv1.ControllerRevision]
	Jobs                   *informer.Informer[*batchv1.Job]
	CronJobs               *informer.Informer[*batchv1.CronJob]
	PersistentVolumes      *informer.Informer[*corev1.PersistentVolume]
	PersistentVolumeClaims *informer.Informer[*corev1.PersistentVolumeClaim]
	StorageClasses         *informer.Informer[*storagev1.StorageClass]
	// PodDisruptionBudgets: the disruption controller.
	PodDisruptionBudgets *informer.Informer[*policyv1.PodDisruptionBudget]
	// CustomResourceDefinitions: the resources the garbage collector and
	// the namespace controller follow at runtime.
	CustomResourceDefinitions *informer.Informer[*apiextensionsv1.CustomResourceDefinition]

	all []runner
}

type runner interface {
	Run(ctx context.Context) error
	HasSynced() bool
}

// New creates the informers (they start with Run).
func New(cfg Config) (*Informers, error) {
	inf := &Informers{}
	var err error
	if cfg.Pods != nil {
		inf.Pods = cfg.Pods
	} else if inf.Pods, err = newInformer(cfg, &inf.all, "", "pods", "", func() *corev1.Pod { return &corev1.Pod{} }, PodIndexers()); err != nil {
		return nil, err
	}
	if inf.ReplicaSets, err = newInformer(cfg, &inf.all, "apps", "replicasets", "", func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} },
		map[string]informer.IndexFunc[*appsv1.ReplicaSet]{ByOwnerUID: ownerUIDs[*appsv1.ReplicaSet]}); err != nil {
		return nil, err
	}
	if inf.Deployments, err = newInformer(cfg, &inf.all, "apps", "deployments", "", func() *appsv1.Deployment { return &appsv1.Deployment{} }, nil); err != nil {
		return nil, err
	}
	if inf.Nodes, err = newInformer(cfg, &inf.all, "", "nodes", "", func() *corev1.Node { return &corev1.Node{} }, nil); err != nil {
		return nil, err
	}
	if inf.Namespaces, err = newInformer(cfg, &inf.all, "", "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, nil); err != nil {
		return nil, err
	}
	if inf.Services, err = newInformer(cfg, &inf.all, "", "services", "", func() *corev1.Service { return &corev1.Service{} }, nil); err != nil {
		return nil, err
	}
	if inf.Endpoints, err = newInformer(cfg, &inf.all, "", "endpoints", "", func() *corev1.Endpoints { return &corev1.Endpoints{} }, nil); err != nil {
		return nil, err
	}
	if inf.EndpointSlices, err = newInformer(cfg, &inf.all, "discovery.k8s.io", "endpointslices", "", func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} },
		map[string]informer.IndexFunc[*discoveryv1.EndpointSlice]{ByServiceName: func(s *discoveryv1.EndpointSlice) []string {
			return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}
		}}); err != nil {
		return nil, err
	}
	if inf.NodeLeases, err = newInformer(cfg, &inf.all, "coordination.k8s.io", "leases", corev1.NamespaceNodeLease, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, nil); err != nil {
		return nil, err
	}
	if inf.ServiceAccounts, err = newInformer(cfg, &inf.all, "", "serviceaccounts", "", func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, nil); err != nil {
		return nil, err
	}
	if inf.ConfigMaps, err = newInformer(cfg, &inf.all, "", "configmaps", "", func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, nil); err != nil {
		return nil, err
	}
	if inf.ResourceQuotas, err = newInformer(cfg, &inf.all, "", "resourcequotas", "", func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} }, nil); err != nil {
		return nil, err
	}
	if inf.ClusterRoles, err = newInformer(cfg, &inf.all, rbacv1.GroupName, "clusterroles", "", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} }, nil); err != nil {
		return nil, err
	}
	if inf.CertificateSigningRequests, err = newInformer(cfg, &inf.all, certificatesv1.GroupName, "certificatesigningrequests", "",
		func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} }, nil); err != nil {
		return nil, err
	}
	if err := inf.newWorkloadInformers(cfg); err != nil {
		return nil, err
	}
	return inf, nil
}

// newWorkloadInformers creates the workload and storage informers.
func (inf *Informers) newWorkloadInformers(cfg Config) error {
	owned := func() map[string]informer.IndexFunc[*appsv1.ControllerRevision] {
		return map[string]informer.IndexFunc[*appsv1.ControllerRevision]{ByOwnerUID: ownerUIDs[*appsv1.ControllerRevision]}
	}
	var err error
	if inf.StatefulSets, err = newInformer(cfg, &inf.all, appsv1.GroupName, "statefulsets", "", func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, nil); err != nil {
		return err
	}
	if inf.DaemonSets, err = newInformer(cfg, &inf.all, appsv1.GroupName, "daemonsets", "", func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} }, nil); err != nil {
		return err
	}
	if inf.ControllerRevisions, err = newInformer(cfg, &inf.all, appsv1.GroupName, "controllerrevisions", "", func() *appsv1.ControllerRevision { return &appsv1.ControllerRevision{} }, owned()); err != nil {
		return err
	}
	if inf.Jobs, err = newInformer(cfg, &inf.all, batchv1.GroupName, "jobs", "", func() *batchv1.Job { return &batchv1.Job{} },
		map[string]informer.IndexFunc[*batchv1.Job]{ByOwnerUID: ownerUIDs[*batchv1.Job]}); err != nil {
		return err
	}
	if inf.CronJobs, err = newInformer(cfg, &inf.all, batchv1.GroupName, "cronjobs", "", func() *batchv1.CronJob { return &batchv1.CronJob{} }, nil); err != nil {
		return err
	}
	if inf.PersistentVolumes, err = newInformer(cfg, &inf.all, "", "persistentvolumes", "", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, nil); err != nil {
		return err
	}
	if inf.PersistentVolumeClaims, err = newInformer(cfg, &inf.all, "", "persistentvolumeclaims", "", func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, nil); err != nil {
		return err
	}
	if inf.StorageClasses, err = newInformer(cfg, &inf.all, storagev1.GroupName, "storageclasses", "", func() *storagev1.StorageClass { return &storagev1.StorageClass{} }, nil); err != nil {
		return err
	}
	if inf.PodDisruptionBudgets, err = newInformer(cfg, &inf.all, policyv1.GroupName, "poddisruptionbudgets", "", func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} }, nil); err != nil {
		return err
	}
	if inf.CustomResourceDefinitions, err = newInformer(cfg, &inf.all, apiextensionsv1.GroupName, "customresourcedefinitions", "",
		func() *apiextensionsv1.CustomResourceDefinition { return &apiextensionsv1.CustomResourceDefinition{} }, nil); err != nil {
		return err
	}
	return nil
}

func newInformer[T runtime.Object](cfg Config, all *[]runner, group, resource, namespace string, newObj func() T, idx map[string]informer.IndexFunc[T]) (*informer.Informer[T], error) {
	i, err := informer.New(informer.Config[T]{
		JetStream: cfg.JetStream, Component: cfg.Component, Instance: cfg.Instance,
		Group: group, Resource: resource, Namespace: namespace, New: newObj, Indexers: idx,
		Logger: cfg.Logger, Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s informer: %w", resource, err)
	}
	*all = append(*all, i)
	return i, nil
}

// PodIndexers are the indexes the controllers look pods up by: a pods
// informer given as Config.Pods must be made with them.
func PodIndexers() map[string]informer.IndexFunc[*corev1.Pod] {
	return map[string]informer.IndexFunc[*corev1.Pod]{
		ByOwnerUID:        ownerUIDs[*corev1.Pod],
		ByOrphanNamespace: orphanNamespace[*corev1.Pod],
		ByNodeName:        func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} },
	}
}

func orphanNamespace[T metav1.Object](obj T) []string {
	if metav1.GetControllerOfNoCopy(obj) != nil {
		return nil
	}
	return []string{obj.GetNamespace()}
}

func ownerUIDs[T metav1.Object](obj T) []string {
	refs := obj.GetOwnerReferences()
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out
}

// Run runs every informer until ctx ends.
func (inf *Informers) Run(ctx context.Context) error {
	return informer.RunAll(ctx, inf.all)
}

// HasSynced reports whether every informer, a lent pods informer
// (Config.Pods) included, has loaded its state.
func (inf *Informers) HasSynced() bool {
	if !inf.Pods.HasSynced() {
		return false
	}
	for _, i := range inf.all {
		if !i.HasSynced() {
			return false
		}
	}
	return true
}
