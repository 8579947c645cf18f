package kcm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/certificates"
	"github.com/kubebus/kubebus/controllers/clusterroleaggregation"
	"github.com/kubebus/kubebus/controllers/cronjob"
	"github.com/kubebus/kubebus/controllers/daemonset"
	"github.com/kubebus/kubebus/controllers/deployment"
	"github.com/kubebus/kubebus/controllers/disruption"
	"github.com/kubebus/kubebus/controllers/endpoints"
	"github.com/kubebus/kubebus/controllers/endpointslice"
	"github.com/kubebus/kubebus/controllers/garbagecollector"
	"github.com/kubebus/kubebus/controllers/job"
	"github.com/kubebus/kubebus/controllers/namespace"
	"github.com/kubebus/kubebus/controllers/nodeipam"
	"github.com/kubebus/kubebus/controllers/nodelifecycle"
	"github.com/kubebus/kubebus/controllers/replicaset"
	"github.com/kubebus/kubebus/controllers/resourcequota"
	"github.com/kubebus/kubebus/controllers/rootcacert"
	"github.com/kubebus/kubebus/controllers/serviceaccount"
	"github.com/kubebus/kubebus/controllers/statefulset"
	"github.com/kubebus/kubebus/controllers/ttlafterfinished"
	"github.com/kubebus/kubebus/controllers/volume/binder"
	"github.com/kubebus/kubebus/controllers/volume/localpath"
	"github.com/kubebus/kubebus/controllers/volume/protection"
)

// registry is the table of controllers the controller-manager knows, in
// start order. Adding a controller is adding a row.
func registry() []entry {
	var gc *garbagecollector.GC // shared: the namespace controller reads its metadata caches
	gcFor := func(d Deps) (*garbagecollector.GC, error) {
		if gc != nil {
			return gc, nil
		}
		mc, err := metadata.NewForConfig(d.REST)
		if err != nil {
			return nil, err
		}
		g, err := garbagecollector.New(garbagecollector.Config{
			JetStream: d.JetStream, Instance: d.Instance, Resources: servedResources(), Shared: sharedMetadata(d.Caches),
			Client: mc, Recorder: d.Recorder("garbage-collector-controller"), Logger: d.Logger.With("controller", "garbagecollector"),
		})
		if err != nil {
			return nil, err
		}
		for _, c := range g.Caches() {
			d.AddCache(c)
		}
		if d.Caches.CustomResourceDefinitions != nil {
			followCRDs(d.Caches.CustomResourceDefinitions, g, d.Logger.With("controller", "garbagecollector"))
		}
		gc = g
		return g, nil
	}
	return []entry{
		{name: "replicaset", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := replicaset.New(replicaset.Config{Client: d.Client, Pods: d.Caches.Pods, ReplicaSets: d.Caches.ReplicaSets,
				Recorder: d.Recorder("replicaset-controller"), Logger: d.Logger})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: "deployment", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := deployment.New(deployment.Config{Client: d.Client, Deployments: d.Caches.Deployments, ReplicaSets: d.Caches.ReplicaSets,
				Pods: d.Caches.Pods, Recorder: d.Recorder("deployment-controller"), Logger: d.Logger})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: statefulset.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return statefulset.New(statefulset.Config{Client: d.Client, StatefulSets: d.Caches.StatefulSets, Pods: d.Caches.Pods,
				ControllerRevisions: d.Caches.ControllerRevisions, PersistentVolumeClaims: d.Caches.PersistentVolumeClaims,
				Recorder: d.Recorder("statefulset-controller"), Logger: d.Logger})
		}},
		{name: daemonset.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return daemonset.New(daemonset.Config{Client: d.Client, DaemonSets: d.Caches.DaemonSets, Nodes: d.Caches.Nodes, Pods: d.Caches.Pods,
				Revisions: d.Caches.ControllerRevisions, Recorder: d.Recorder("daemonset-controller"), Logger: d.Logger})
		}},
		{name: job.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return job.New(job.Config{Client: d.Client, Jobs: d.Caches.Jobs, Pods: d.Caches.Pods, Recorder: d.Recorder("job-controller"), Logger: d.Logger})
		}},
		{name: ttlafterfinished.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return ttlafterfinished.New(ttlafterfinished.Config{Client: d.Client, Jobs: d.Caches.Jobs, Logger: d.Logger})
		}},
		{name: cronjob.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return cronjob.New(cronjob.Config{Client: d.Client, CronJobs: d.Caches.CronJobs, Jobs: d.Caches.Jobs,
				Clock: cronjob.ClockWithSpeed(d.Tuning.CronJobClockSpeed), Recorder: d.Recorder("cronjob-controller"), Logger: d.Logger})
		}},
		{name: binder.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return binder.New(binder.Config{Client: d.Client, Volumes: d.Caches.PersistentVolumes, Claims: d.Caches.PersistentVolumeClaims,
				Classes: d.Caches.StorageClasses, Nodes: d.Caches.Nodes, Recorder: d.Recorder("persistentvolume-controller"), Logger: d.Logger})
		}},
		{name: localpath.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return localpath.New(localpath.Config{Client: d.Client, Claims: d.Caches.PersistentVolumeClaims, Volumes: d.Caches.PersistentVolumes,
				Classes: d.Caches.StorageClasses, Root: d.Tuning.LocalPathRoot, Recorder: d.Recorder(localpath.Provisioner), Logger: d.Logger})
		}},
		{name: protection.ClaimsName, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return protection.NewClaims(protection.Config{Client: d.Client, Claims: d.Caches.PersistentVolumeClaims, Pods: d.Caches.Pods, Logger: d.Logger})
		}},
		{name: protection.VolumesName, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return protection.NewVolumes(protection.Config{Client: d.Client, Volumes: d.Caches.PersistentVolumes, Logger: d.Logger})
		}},
		{name: "nodelifecycle", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := nodelifecycle.New(nodelifecycle.Config{Client: d.Client, Nodes: d.Caches.Nodes, Leases: d.Caches.NodeLeases, Pods: d.Caches.Pods,
				GracePeriod: d.Tuning.NodeMonitorGracePeriod, Recorder: d.Recorder("node-controller"), Options: controllers.Options{Logger: d.Logger}})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: "nodeipam", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := nodeipam.New(nodeipam.Config{Client: d.Client, Nodes: d.Caches.Nodes, ClusterCIDR: d.Tuning.ClusterCIDR,
				Recorder: d.Recorder("cidrAllocator"), Options: controllers.Options{Logger: d.Logger}})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: "endpoints", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := endpoints.New(endpoints.Config{Client: d.Client, Services: d.Caches.Services, Pods: d.Caches.Pods, Endpoints: d.Caches.Endpoints, Options: controllers.Options{Logger: d.Logger}})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: "endpointslice", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			c, err := endpointslice.New(endpointslice.Config{Client: d.Client, Services: d.Caches.Services, Pods: d.Caches.Pods,
				EndpointSlices: d.Caches.EndpointSlices, Nodes: d.Caches.Nodes, Options: controllers.Options{Logger: d.Logger}})
			if err != nil {
				return nil, err
			}
			return c, nil
		}},
		{name: "garbagecollector", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return gcFor(d)
		}},
		{name: "namespace", build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			g, err := gcFor(d)
			if err != nil {
				return nil, err
			}
			mc, err := metadata.NewForConfig(d.REST)
			if err != nil {
				return nil, err
			}
			var res []namespace.Resource
			for _, r := range servedResources() {
				if r.Namespaced {
					inf := g.Informer(r.GVR())
					if inf == nil {
						return nil, fmt.Errorf("no metadata cache for %s", r)
					}
					res = append(res, namespace.Resource{GVR: r.GVR(), Objects: inf})
				}
			}
			c, err := namespace.New(namespace.Config{
				Namespaces: d.Caches.Namespaces, Resources: res, Client: d.Client, Metadata: mc,
				Recorder: d.Recorder("namespace-controller"), WriteConditions: true, Logger: d.Logger.With("controller", "namespace"),
			})
			if err != nil {
				return nil, err
			}
			if d.Caches.CustomResourceDefinitions != nil {
				// After the collector's follower (gcFor), which makes the caches.
				followCRDs(d.Caches.CustomResourceDefinitions, namespaceSink{gc: g, c: c}, d.Logger.With("controller", "namespace"))
			}
			return c, nil
		}},
		{name: serviceaccount.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return serviceaccount.New(serviceaccount.Config{Client: d.Client, Namespaces: d.Caches.Namespaces, ServiceAccounts: d.Caches.ServiceAccounts,
				Options: controllers.Options{Logger: d.Logger}})
		}},
		{name: rootcacert.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			ca, err := rootCA(d)
			if err != nil {
				return nil, err
			}
			return rootcacert.New(rootcacert.Config{Client: d.Client, Namespaces: d.Caches.Namespaces, ConfigMaps: d.Caches.ConfigMaps, RootCA: ca,
				Options: controllers.Options{Logger: d.Logger}})
		}},
		{name: clusterroleaggregation.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return clusterroleaggregation.New(clusterroleaggregation.Config{Client: d.Client, ClusterRoles: d.Caches.ClusterRoles,
				Options: controllers.Options{Logger: d.Logger}})
		}},
		{name: resourcequota.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			g, err := gcFor(d)
			if err != nil {
				return nil, err
			}
			c, err := resourcequota.New(quotaConfig(quotaSources{Quotas: d.Caches.ResourceQuotas, Pods: d.Caches.Pods,
				Services: d.Caches.Services, Claims: d.Caches.PersistentVolumeClaims, Metadata: g.Informer}, d.Client, d.Logger))
			if err != nil {
				return nil, err
			}
			if d.Caches.CustomResourceDefinitions != nil {
				// After the collector's follower (gcFor), which makes the caches.
				followCRDs(d.Caches.CustomResourceDefinitions, quotaSink{metadata: g.Informer, c: c}, d.Logger.With("controller", resourcequota.Name))
			}
			return c, nil
		}},
		{name: disruption.Name, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return disruption.New(disruption.Config{Client: d.Client, PodDisruptionBudgets: d.Caches.PodDisruptionBudgets, Pods: d.Caches.Pods,
				ReplicaSets: d.Caches.ReplicaSets, Deployments: d.Caches.Deployments, StatefulSets: d.Caches.StatefulSets,
				Recorder: d.Recorder("disruption-controller"), Options: controllers.Options{Logger: d.Logger}})
		}},
		{name: certificates.ApproverName, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			return certificates.NewApprover(certificates.ApproverConfig{Client: d.Client, CSRs: d.Caches.CertificateSigningRequests,
				Nodes: d.Caches.Nodes, Services: d.Caches.Services, Options: controllers.Options{Logger: d.Logger}})
		}},
		{name: certificates.SignerName, build: func(_ context.Context, d Deps) (controllers.Runnable, error) {
			t := d.Tuning
			if t.ClusterSigningCertFile == "" || t.ClusterSigningKeyFile == "" {
				d.Logger.Info("not signing certificates: no --cluster-signing-cert-file and --cluster-signing-key-file", "controller", certificates.SignerName)
				return idle{}, nil
			}
			return certificates.NewSigner(certificates.SignerConfig{Client: d.Client, CSRs: d.Caches.CertificateSigningRequests,
				CertFile: t.ClusterSigningCertFile, KeyFile: t.ClusterSigningKeyFile, Duration: t.ClusterSigningDuration,
				Options: controllers.Options{Logger: d.Logger}})
		}},
	}
}

// idle stands for a controller that its configuration turns off.
type idle struct{}

// Run waits for the term to end.
func (idle) Run(ctx context.Context) { <-ctx.Done() }

// rootCA is the CA bundle root-ca-cert-publisher publishes: --root-ca-file,
// or else the CA the API client trusts, as upstream.
func rootCA(d Deps) ([]byte, error) {
	file := d.Tuning.RootCAFile
	if file == "" {
		if len(d.REST.CAData) > 0 {
			return d.REST.CAData, nil
		}
		file = d.REST.CAFile
	}
	if file == "" {
		return nil, errors.New("no root CA to publish: set --root-ca-file")
	}
	ca, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the root CA: %w", err)
	}
	return ca, nil
}

// servedResources lists every resource the API server serves, for the
// controllers that act on all kinds.
func servedResources() []garbagecollector.Resource {
	var out []garbagecollector.Resource
	for _, r := range resource.Builtin() {
		if r.CreateOnly {
			continue // access and token reviews: answered, never stored
		}
		out = append(out, garbagecollector.Resource{Group: r.GVK.Group, Version: r.GVK.Version, Resource: r.Plural, Kind: r.GVK.Kind, Namespaced: r.Namespaced})
	}
	return out
}

// sharedMetadata are the controller-manager's typed caches the garbage
// collector and the namespace controller read as metadata, instead of
// keeping caches of their own of the same resources. The node Lease cache
// is left out: it holds one namespace only.
func sharedMetadata(c *cache.Informers) map[schema.GroupResource]garbagecollector.Objects {
	return map[schema.GroupResource]garbagecollector.Objects{
		{Resource: "pods"}:                                                     informer.Metadata(c.Pods),
		{Group: "apps", Resource: "replicasets"}:                               informer.Metadata(c.ReplicaSets),
		{Group: "apps", Resource: "deployments"}:                               informer.Metadata(c.Deployments),
		{Resource: "nodes"}:                                                    informer.Metadata(c.Nodes),
		{Resource: "namespaces"}:                                               informer.Metadata(c.Namespaces),
		{Resource: "services"}:                                                 informer.Metadata(c.Services),
		{Resource: "endpoints"}:                                                informer.Metadata(c.Endpoints),
		{Group: "discovery.k8s.io", Resource: "endpointslices"}:                informer.Metadata(c.EndpointSlices),
		{Resource: "serviceaccounts"}:                                          informer.Metadata(c.ServiceAccounts),
		{Resource: "configmaps"}:                                               informer.Metadata(c.ConfigMaps),
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:         informer.Metadata(c.ClusterRoles),
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: informer.Metadata(c.CertificateSigningRequests),
		{Resource: "resourcequotas"}:                                           informer.Metadata(c.ResourceQuotas),
		{Group: "apps", Resource: "statefulsets"}:                              informer.Metadata(c.StatefulSets),
		{Group: "apps", Resource: "daemonsets"}:                                informer.Metadata(c.DaemonSets),
		{Group: "apps", Resource: "controllerrevisions"}:                       informer.Metadata(c.ControllerRevisions),
		{Group: "batch", Resource: "jobs"}:                                     informer.Metadata(c.Jobs),
		{Group: "batch", Resource: "cronjobs"}:                                 informer.Metadata(c.CronJobs),
		{Resource: "persistentvolumes"}:                                        informer.Metadata(c.PersistentVolumes),
		{Resource: "persistentvolumeclaims"}:                                   informer.Metadata(c.PersistentVolumeClaims),
		{Group: "policy", Resource: "poddisruptionbudgets"}:                    informer.Metadata(c.PodDisruptionBudgets),
		{Group: "storage.k8s.io", Resource: "storageclasses"}:                  informer.Metadata(c.StorageClasses),
	}
}

// quotaSources are the caches the ResourceQuota controller counts from.
type quotaSources struct {
	Quotas   resourcequota.QuotaSource
	Pods     resourcequota.Source[*corev1.Pod]
	Services resourcequota.Source[*corev1.Service]
	Claims   resourcequota.Source[*corev1.PersistentVolumeClaim]
	// Metadata returns a resource's metadata cache, nil when there is none
	// (the garbage collector's Informer).
	Metadata func(schema.GroupVersionResource) garbagecollector.Objects
}

// quotaConfig wires the ResourceQuota controller: the resources whose
// usage depends on their content (resourcequota.Typed) from the typed
// caches, every other built-in namespaced resource from its metadata
// cache. The resources of CRDs are added as they come (quotaSink).
func quotaConfig(src quotaSources, client kubernetes.Interface, log *slog.Logger) resourcequota.Config {
	objects := map[schema.GroupResource]resourcequota.Source[*metav1.PartialObjectMetadata]{}
	for _, r := range servedResources() {
		gr := r.GVR().GroupResource()
		if !r.Namespaced || resourcequota.Typed(gr) {
			continue
		}
		if inf := src.Metadata(r.GVR()); inf != nil {
			objects[gr] = inf
		}
	}
	return resourcequota.Config{Client: client, Quotas: src.Quotas, Pods: src.Pods, Services: src.Services, Claims: src.Claims,
		Objects: objects, Options: controllers.Options{Logger: log}}
}

// quotaSink adds the namespaced resources of CRDs to the ResourceQuota
// controller, counted from the garbage collector's caches of them, as
// upstream's quota controller follows discovery: its follower must come
// after the collector's, so that the cache exists.
type quotaSink struct {
	// metadata returns a resource's metadata cache, nil when there is none
	// (the garbage collector's Informer).
	metadata func(schema.GroupVersionResource) garbagecollector.Objects
	c        *resourcequota.Controller
}

func (s quotaSink) AddResource(r garbagecollector.Resource) error {
	if !r.Namespaced {
		return nil // quotas are per namespace
	}
	inf := s.metadata(r.GVR())
	if inf == nil {
		return fmt.Errorf("the garbage collector keeps no cache of %s", r)
	}
	if err := s.c.AddResource(r.GVR().GroupResource(), inf); err != nil {
		return fmt.Errorf("counting %s in quotas: %w", r, err)
	}
	return nil
}

func (s quotaSink) RemoveResource(r garbagecollector.Resource) {
	if r.Namespaced {
		s.c.RemoveResource(r.GVR().GroupResource())
	}
}
