package app

import (
	"context"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/proxy"
	"github.com/kubebus/kubebus/scheduler/shell"
)

// sharedComponent names the durable bus consumers of the informers the
// components of `kubebus server` share.
const sharedComponent = "kubebus-server"

// newSharedCaches builds the informers every in-process component reads
// (the controller-manager, the scheduler, the local proxy): one per
// resource for the whole process, each one durable bus consumer, instead
// of one per component, and the function that runs them until its context
// ends. They read the bus as busauth.InformersUser (creds). The server
// builds them only with the controller-manager, which reads most of them;
// without it each component keeps its own, as it does in a process of its
// own. On failure it returns nils, with the same effect.
//
// pods, when set, is the API server's pods cache (made with
// cache.PodIndexers): the components read pods from it, so that the
// process decodes and holds each pod once, not once for the API server's
// authorizer and admission and again for the components.
func newSharedCaches(log *slog.Logger, natsURL string, creds bus.Credentials, pods *informer.Informer[*corev1.Pod]) (*cache.Informers, func(context.Context) error) {
	log = log.With("component", "informers")
	nc, js, err := bus.Connect(natsURL, sharedComponent, creds)
	if err != nil {
		log.Warn("no shared informers; each component keeps its own", "err", err)
		return nil, nil
	}
	host, _ := os.Hostname()
	caches, err := cache.New(cache.Config{JetStream: js, Component: sharedComponent, Instance: host, Logger: log, Pods: pods})
	if err != nil {
		nc.Close()
		log.Warn("no shared informers; each component keeps its own", "err", err)
		return nil, nil
	}
	return caches, func(ctx context.Context) error {
		defer nc.Close()
		return caches.Run(ctx)
	}
}

// schedulerCaches are the scheduler's view of the shared informers (nil:
// it keeps its own).
func schedulerCaches(c *cache.Informers) *shell.Caches {
	if c == nil {
		return nil
	}
	return &shell.Caches{Nodes: c.Nodes, Pods: c.Pods, Namespaces: c.Namespaces,
		PersistentVolumeClaims: c.PersistentVolumeClaims, PersistentVolumes: c.PersistentVolumes, StorageClasses: c.StorageClasses}
}

// withProxyCaches makes the proxy read the shared informers, when there are.
func withProxyCaches(cfg proxy.Config, c *cache.Informers) proxy.Config {
	if c != nil {
		cfg.Services, cfg.EndpointSlices = c.Services, c.EndpointSlices
	}
	return cfg
}
