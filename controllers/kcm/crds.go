package kcm

import (
	"fmt"
	"log/slog"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/garbagecollector"
	"github.com/kubebus/kubebus/controllers/namespace"
)

// The garbage collector and the namespace controller act on the resources
// of CustomResourceDefinitions too, as upstream's follow discovery: each
// follows the CRDs from the controller-manager's cache and adds the
// resource of every Established CRD, in one version, and removes it when
// the CRD goes or its resource changes.

// crdResource is the resource an Established CRD serves, as the garbage
// collector takes it, in its storage version (upstream's collector uses
// the preferred version; the storage version is the one every object is
// kept in), or else in its first served version: the collector must never
// read a version the server does not serve, where every owner would look
// absent. ok is false when the CRD serves nothing yet.
func crdResource(c *apiextensionsv1.CustomResourceDefinition) (r garbagecollector.Resource, ok bool) {
	if !established(c) || c.Status.AcceptedNames.Plural == "" || c.Status.AcceptedNames.Kind == "" {
		return garbagecollector.Resource{}, false
	}
	version := ""
	for _, v := range c.Spec.Versions {
		if !v.Served {
			continue
		}
		if version == "" || v.Storage {
			version = v.Name
		}
		if v.Storage {
			break
		}
	}
	if version == "" {
		return garbagecollector.Resource{}, false
	}
	return garbagecollector.Resource{Group: c.Spec.Group, Version: version, Resource: c.Status.AcceptedNames.Plural,
		Kind: c.Status.AcceptedNames.Kind, Namespaced: c.Spec.Scope == apiextensionsv1.NamespaceScoped}, true
}

// established reports whether the CRD's condition Established is True.
func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// resourceSink takes the resources served at runtime.
type resourceSink interface {
	AddResource(r garbagecollector.Resource) error
	RemoveResource(r garbagecollector.Resource)
}

// crdFollower keeps a sink's runtime resources in step with the CRDs: the
// resource of each Established CRD, by CRD name.
type crdFollower struct {
	sink resourceSink
	log  *slog.Logger
	mu   sync.Mutex
	have map[string]garbagecollector.Resource
}

// followCRDs adds to crds a handler that keeps sink's resources in step;
// a handler added while the cache runs is first told of every CRD.
func followCRDs(crds *informer.Informer[*apiextensionsv1.CustomResourceDefinition], sink resourceSink, log *slog.Logger) {
	f := newCRDFollower(sink, log)
	crds.AddHandler(informer.HandlerFuncs[*apiextensionsv1.CustomResourceDefinition]{
		AddFunc:    func(c *apiextensionsv1.CustomResourceDefinition) { f.sync(c.Name, c) },
		UpdateFunc: func(_, c *apiextensionsv1.CustomResourceDefinition) { f.sync(c.Name, c) },
		DeleteFunc: func(c *apiextensionsv1.CustomResourceDefinition) { f.sync(c.Name, nil) },
	})
}

func newCRDFollower(sink resourceSink, log *slog.Logger) *crdFollower {
	return &crdFollower{sink: sink, log: log, have: map[string]garbagecollector.Resource{}}
}

// sync brings the sink in step with one CRD (nil: deleted). A resource
// whose names or version changed is removed before the new one is added.
func (f *crdFollower) sync(name string, c *apiextensionsv1.CustomResourceDefinition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var want garbagecollector.Resource
	ok := false
	if c != nil {
		want, ok = crdResource(c)
	}
	old, had := f.have[name]
	if had && ok && old == want {
		return
	}
	if had {
		f.sink.RemoveResource(old)
		delete(f.have, name)
	}
	if !ok {
		return
	}
	if err := f.sink.AddResource(want); err != nil {
		f.log.Error("not acting on the objects of a CustomResourceDefinition", "crd", name, "err", err)
		return
	}
	f.have[name] = want
}

// namespaceSink adds the namespaced resources to the namespace
// controller, with the garbage collector's caches of them: its follower
// must come after the collector's, so that the cache exists.
type namespaceSink struct {
	gc *garbagecollector.GC
	c  *namespace.Controller
}

func (s namespaceSink) AddResource(r garbagecollector.Resource) error {
	if !r.Namespaced {
		return nil
	}
	inf := s.gc.Informer(r.GVR())
	if inf == nil {
		return fmt.Errorf("the garbage collector keeps no cache of %s", r)
	}
	return s.c.AddResource(namespace.Resource{GVR: r.GVR(), Objects: inf})
}

func (s namespaceSink) RemoveResource(r garbagecollector.Resource) {
	if r.Namespaced {
		s.c.RemoveResource(r.GVR())
	}
}
