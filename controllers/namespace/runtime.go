package namespace

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Namespaced resources the server starts serving while the controller
// runs (those of CustomResourceDefinitions) are added with AddResource and
// removed with RemoveResource. A pass empties, and before finalizing
// confirms empty through the API, every resource known when it starts.

// AddResource adds a namespaced resource the server began serving at
// runtime, so that deleting a namespace deletes its objects too and waits
// for them to be gone. Adding a runtime resource again replaces its cache;
// a resource of Config.Resources cannot be added.
func (c *Controller) AddResource(r Resource) error {
	if err := r.validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.resources, func(x Resource) bool { return x.GVR == r.GVR })
	switch {
	case i >= 0 && !c.added[r.GVR]:
		return fmt.Errorf("namespace: %s is one of the resources the controller was built with", r.GVR.GroupResource())
	case i >= 0:
		// A new slice each time: passes under way keep the snapshot they took.
		c.resources = slices.Clone(c.resources)
		c.resources[i] = r
		return nil
	}
	c.resources = append(slices.Clone(c.resources), r)
	c.added[r.GVR] = true
	c.log.Info("emptying deleted namespaces of a resource served at runtime", "resource", r.GVR.GroupResource().String(), "version", r.GVR.Version)
	return nil
}

// RemoveResource removes a resource AddResource added, once the server no
// longer serves it. It does nothing for any other resource.
func (c *Controller) RemoveResource(gvr schema.GroupVersionResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.added[gvr] {
		return
	}
	delete(c.added, gvr)
	c.resources = slices.DeleteFunc(slices.Clone(c.resources), func(x Resource) bool { return x.GVR == gvr })
	c.log.Info("no longer emptying deleted namespaces of a resource not served", "resource", gvr.GroupResource().String())
}

// snapshot returns the resources to empty; callers must not modify it.
func (c *Controller) snapshot() []Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.resources
}
