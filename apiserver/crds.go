package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/crd"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// Custom resources: every API server watches the stored
// CustomResourceDefinitions and serves the resources they define through
// the same handlers as the built-in ones, from the moment a CRD's names
// are accepted, without a restart. As upstream's apiextensions controllers
// do, it decides whether the names may be served (NamesAccepted), marks
// the CRD Established once it serves it, and, when a CRD is deleted,
// deletes every object of it before letting the CRD go (the
// customresourcecleanup finalizer). Several API servers may do the same
// writes at once; each is a compare-and-swap, so the loser finds the work
// done.

// CRDCleanupFinalizer holds a deleted CRD until its objects are gone.
const CRDCleanupFinalizer = apiextensionsv1.CustomResourceCleanupFinalizer

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// customResources is the state of the CRD watcher.
type customResources struct {
	mu       sync.Mutex
	all      map[string]*apiextensionsv1.CustomResourceDefinition // as last seen, by name
	served   map[string]servedCRD
	cleaning map[string]bool
	docGVs   map[schema.GroupVersion]bool // group versions with a document set
}

func newCustomResources() *customResources {
	return &customResources{
		all:      map[string]*apiextensionsv1.CustomResourceDefinition{},
		served:   map[string]servedCRD{},
		cleaning: map[string]bool{},
	}
}

// CRDRow is the row of customresourcedefinitions as the server serves it:
// a CRD is created with the cleanup finalizer, so that deleting it deletes
// its objects first.
func CRDRow() *resource.Resource {
	row := crd.Row()
	prev := row.PrepareForCreate
	row.PrepareForCreate = func(obj runtime.Object) {
		if prev != nil {
			prev(obj)
		}
		c := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !slices.Contains(c.Finalizers, CRDCleanupFinalizer) {
			c.Finalizers = append(c.Finalizers, CRDCleanupFinalizer)
		}
	}
	return row
}

// servedCRD is what one CRD adds to the table.
type servedCRD struct {
	rows        []*resource.Resource
	fingerprint string // of the spec and accepted names the rows were built from
	docs        map[schema.GroupVersion][]byte
}

// StartCustomResources loads the stored CRDs and serves their resources,
// then follows their changes until ctx ends. It returns once the stored
// CRDs are served, so that a restarted server answers for them at once.
func (s *Server) StartCustomResources(ctx context.Context) error {
	res, ok := s.table.get(crdGVR)
	if !ok {
		return errors.New("apiserver: customresourcedefinitions are not served")
	}
	rev, err := s.loadCRDs(ctx, res)
	if err != nil {
		return err
	}
	go s.followCRDs(ctx, res, rev)
	return nil
}

// loadCRDs reads every CRD and syncs each; it returns the revision read at.
func (s *Server) loadCRDs(ctx context.Context, res *resource.Resource) (int64, error) {
	page, err := s.store.List(ctx, prefixFor(res, ""), "", 0, 0)
	if err != nil {
		return 0, fmt.Errorf("apiserver: listing customresourcedefinitions: %w", err)
	}
	seen := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, kv := range page.KVs {
		obj, err := decodeStored(res, kv)
		if err != nil {
			s.log.Warn("skipping an undecodable CustomResourceDefinition", "key", kv.Key, "err", err)
			continue
		}
		c := obj.(*apiextensionsv1.CustomResourceDefinition)
		seen[c.Name] = c
	}
	s.crds.mu.Lock()
	var gone []string
	for name := range s.crds.all {
		if seen[name] == nil {
			gone = append(gone, name)
		}
	}
	s.crds.all = seen
	s.crds.mu.Unlock()
	for _, name := range gone {
		s.syncCRD(ctx, name)
	}
	for name := range seen {
		s.syncCRD(ctx, name)
	}
	return page.Revision, nil
}

// followCRDs watches the CRDs from revision rev on, syncing each change,
// and starts again from a fresh list when the watch ends.
func (s *Server) followCRDs(ctx context.Context, res *resource.Resource, rev int64) {
	for ctx.Err() == nil {
		w := s.store.Watch(ctx, prefixFor(res, ""), rev+1)
		for ev := range w.Events {
			if ev.Type == storage.Progress {
				continue
			}
			rev = ev.Revision
			switch ev.Type {
			case storage.Put:
				obj, err := decodeStored(res, ev.KV)
				if err != nil {
					s.log.Warn("skipping an undecodable CustomResourceDefinition", "key", ev.KV.Key, "err", err)
					continue
				}
				c := obj.(*apiextensionsv1.CustomResourceDefinition)
				s.crds.mu.Lock()
				s.crds.all[c.Name] = c
				s.crds.mu.Unlock()
				s.syncCRD(ctx, c.Name)
				// Another CRD may have been waiting for names this one held.
				s.resyncOthers(ctx, c.Name)
			case storage.Delete:
				name := ev.KV.Key[len(prefixFor(res, "")):]
				s.crds.mu.Lock()
				delete(s.crds.all, name)
				s.crds.mu.Unlock()
				s.syncCRD(ctx, name)
				s.resyncOthers(ctx, name)
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("the CustomResourceDefinition watch ended; listing again", "err", w.Err())
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if r, err := s.loadCRDs(ctx, res); err == nil {
			rev = r
		}
	}
}

// resyncOthers syncs every CRD whose names are not accepted, after a
// change of name that may free their names.
func (s *Server) resyncOthers(ctx context.Context, changed string) {
	s.crds.mu.Lock()
	var waiting []string
	for name, c := range s.crds.all {
		if name != changed && !crdCondition(c, apiextensionsv1.NamesAccepted) {
			waiting = append(waiting, name)
		}
	}
	s.crds.mu.Unlock()
	for _, name := range waiting {
		s.syncCRD(ctx, name)
	}
}

func crdCondition(c *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// syncCRD brings what the server serves for the CRD name in line with it.
func (s *Server) syncCRD(ctx context.Context, name string) {
	s.crds.mu.Lock()
	c := s.crds.all[name]
	var others []*apiextensionsv1.CustomResourceDefinition
	for n, o := range s.crds.all {
		if n != name {
			others = append(others, o)
		}
	}
	s.crds.mu.Unlock()
	if c == nil {
		s.unserveCRD(name)
		return
	}
	if c.DeletionTimestamp != nil {
		s.cleanupCRD(ctx, name)
		return
	}
	accepted, namesCond := crd.AcceptNames(c, others, s.table.builtins())
	want := c.DeepCopy()
	want.Status.AcceptedNames = accepted
	crd.SetCondition(want, namesCond)
	if namesCond.Status == apiextensionsv1.ConditionTrue {
		if err := s.serveCRD(want); err != nil {
			s.log.Error("cannot serve a CustomResourceDefinition", "crd", name, "err", err)
			crd.SetCondition(want, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
				Status: apiextensionsv1.ConditionFalse, Reason: "Installing", Message: err.Error()})
		} else {
			crd.SetCondition(want, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
				Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"})
		}
	} else {
		s.unserveCRD(name)
		crd.SetCondition(want, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"})
	}
	if statusEqual(c.Status, want.Status) {
		return
	}
	if err := s.writeCRDStatus(ctx, name, want.Status); err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("cannot write a CustomResourceDefinition's status", "crd", name, "err", err)
	}
}

func statusEqual(a, b apiextensionsv1.CustomResourceDefinitionStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// writeCRDStatus stores status as the CRD's, if the CRD's spec is still
// the one it was computed from.
func (s *Server) writeCRDStatus(ctx context.Context, name string, status apiextensionsv1.CustomResourceDefinitionStatus) error {
	res, _ := s.table.get(crdGVR)
	ctx = auth.WithUser(ctx, auth.APIServer)
	_, err := s.guaranteedUpdate(ctx, res, "", name, string(resource.Status), false, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
		c.Status.AcceptedNames = status.AcceptedNames
		for _, cond := range status.Conditions {
			crd.SetCondition(c, cond)
		}
		c.ResourceVersion = ""
		return c, nil
	})
	return err
}

// fingerprint identifies what a CRD's rows are built from.
func fingerprint(c *apiextensionsv1.CustomResourceDefinition) string {
	b, _ := json.Marshal([]any{c.Spec, c.Status.AcceptedNames})
	return string(b)
}

// serveCRD serves (or serves anew, when its spec changed) the resources
// of c, whose names are accepted.
func (s *Server) serveCRD(c *apiextensionsv1.CustomResourceDefinition) error {
	fp := fingerprint(c)
	s.crds.mu.Lock()
	old, had := s.crds.served[c.Name]
	s.crds.mu.Unlock()
	if had && old.fingerprint == fp {
		return nil
	}
	if c.Spec.Conversion != nil && c.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
		return errors.New("conversion webhooks are not supported: kubebus converts between versions with the None strategy only")
	}
	rows, err := crd.Resources(c)
	if err != nil {
		return err
	}
	for _, row := range rows {
		stripStatusOnCreate(row)
	}
	docs := map[schema.GroupVersion][]byte{}
	for _, v := range c.Spec.Versions {
		if !v.Served {
			continue
		}
		doc, err := crd.OpenAPIV3(c, v.Name)
		if err != nil {
			return fmt.Errorf("building the OpenAPI document of %s %s: %w", c.Name, v.Name, err)
		}
		docs[schema.GroupVersion{Group: c.Spec.Group, Version: v.Name}] = doc
	}
	if had {
		s.table.remove(old.rows)
		s.stopHubs(old.rows)
		for _, row := range old.rows {
			s.fields.Remove(row)
		}
	}
	for _, row := range rows {
		if err := s.fields.Add(row); err != nil {
			return err
		}
	}
	if err := s.table.add(rows); err != nil {
		for _, row := range rows {
			s.fields.Remove(row)
		}
		s.crds.mu.Lock()
		delete(s.crds.served, c.Name)
		s.crds.mu.Unlock()
		return err
	}
	s.crds.mu.Lock()
	s.crds.served[c.Name] = servedCRD{rows: rows, fingerprint: fp, docs: docs}
	s.crds.mu.Unlock()
	s.publishDocs()
	s.log.Info("serving custom resources", "crd", c.Name, "versions", len(rows))
	return nil
}

// unserveCRD stops serving the resources of the CRD name.
func (s *Server) unserveCRD(name string) {
	s.crds.mu.Lock()
	old, had := s.crds.served[name]
	delete(s.crds.served, name)
	s.crds.mu.Unlock()
	if !had {
		return
	}
	s.table.remove(old.rows)
	s.stopHubs(old.rows)
	for _, row := range old.rows {
		s.fields.Remove(row)
	}
	s.publishDocs()
	s.log.Info("no longer serving custom resources", "crd", name)
}

// publishDocs serves one OpenAPI v3 document per group version of the
// served CRDs, merging the CRDs that share one.
func (s *Server) publishDocs() {
	if s.cfg.OpenAPI == nil {
		return
	}
	s.crds.mu.Lock()
	byGV := map[schema.GroupVersion][][]byte{}
	for _, name := range sortedKeys(s.crds.served) {
		for gv, doc := range s.crds.served[name].docs {
			byGV[gv] = append(byGV[gv], doc)
		}
	}
	had := s.crds.docGVs
	s.crds.docGVs = map[schema.GroupVersion]bool{}
	for gv := range byGV {
		s.crds.docGVs[gv] = true
	}
	s.crds.mu.Unlock()
	for gv, docs := range byGV {
		merged, err := mergeOpenAPI(docs)
		if err == nil {
			err = s.cfg.OpenAPI.SetGroupVersion(gv, merged)
		}
		if err != nil {
			s.log.Warn("cannot serve the OpenAPI document of custom resources", "groupVersion", gv, "err", err)
		}
	}
	for gv := range had {
		if _, still := byGV[gv]; !still {
			s.cfg.OpenAPI.RemoveGroupVersion(gv)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mergeOpenAPI merges OpenAPI v3 documents of one group version: their
// paths and their components, the first document's other fields.
func mergeOpenAPI(docs [][]byte) ([]byte, error) {
	if len(docs) == 1 {
		return docs[0], nil
	}
	var out map[string]any
	for i, d := range docs {
		var doc map[string]any
		if err := json.Unmarshal(d, &doc); err != nil {
			return nil, err
		}
		if i == 0 {
			out = doc
			continue
		}
		mergeMap(out, doc, "paths")
		comps, _ := doc["components"].(map[string]any)
		outComps, _ := out["components"].(map[string]any)
		if outComps == nil {
			outComps = map[string]any{}
			out["components"] = outComps
		}
		for kind := range comps {
			mergeMap(outComps, comps, kind)
		}
	}
	return json.Marshal(out)
}

func mergeMap(dst, src map[string]any, key string) {
	from, _ := src[key].(map[string]any)
	if from == nil {
		return
	}
	to, _ := dst[key].(map[string]any)
	if to == nil {
		to = map[string]any{}
		dst[key] = to
	}
	for k, v := range from {
		to[k] = v
	}
}

// stripStatusOnCreate makes a create of a custom resource with the status
// subresource drop the status it was sent, as upstream does.
func stripStatusOnCreate(row *resource.Resource) {
	if !row.Serves(resource.Status) {
		return
	}
	prev := row.PrepareForCreate
	row.PrepareForCreate = func(obj runtime.Object) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			delete(u.Object, "status")
		}
		if prev != nil {
			prev(obj)
		}
	}
}

// cleanupCRD deletes every object of a CRD being deleted, then removes the
// cleanup finalizer so the CRD goes; it runs in the background, once per
// CRD at a time, retrying until done or ctx ends.
func (s *Server) cleanupCRD(ctx context.Context, name string) {
	s.crds.mu.Lock()
	if s.crds.cleaning[name] {
		s.crds.mu.Unlock()
		return
	}
	s.crds.cleaning[name] = true
	rows := s.crds.served[name].rows
	s.crds.mu.Unlock()
	go func() {
		defer func() {
			s.crds.mu.Lock()
			delete(s.crds.cleaning, name)
			s.crds.mu.Unlock()
		}()
		for ctx.Err() == nil {
			err := s.deleteCustomObjects(ctx, name, rows)
			if err == nil {
				err = s.dropCleanupFinalizer(ctx, name)
			}
			if err == nil || apierrors.IsNotFound(err) {
				s.unserveCRD(name)
				return
			}
			s.log.Info("deleting the objects of a deleted CustomResourceDefinition", "crd", name, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// errObjectsLeft says objects of a deleted CRD remain (their finalizers hold them).
var errObjectsLeft = errors.New("objects remain")

// deleteCustomObjects deletes every object of the CRD; it returns nil once
// none is left.
func (s *Server) deleteCustomObjects(ctx context.Context, name string, rows []*resource.Resource) error {
	if len(rows) == 0 {
		return nil // never served: there can be no objects
	}
	res := rows[0]
	ctx = auth.WithUser(ctx, auth.APIServer)
	page, err := s.store.List(ctx, prefixFor(res, ""), "", 0, 0)
	if err != nil {
		return err
	}
	if len(page.KVs) == 0 {
		return nil
	}
	for _, kv := range page.KVs {
		obj, err := decodeStored(res, kv)
		if err != nil {
			return err
		}
		u := obj.(*unstructured.Unstructured)
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		if _, err := s.deleteObject(ctx, res, u.GetNamespace(), u.GetName(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	n, err := s.store.Count(ctx, prefixFor(res, ""))
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d %w", n, errObjectsLeft)
	}
	return nil
}

// dropCleanupFinalizer removes the cleanup finalizer from the deleted CRD
// name, which deletes it when it was the last.
func (s *Server) dropCleanupFinalizer(ctx context.Context, name string) error {
	res, _ := s.table.get(crdGVR)
	ctx = auth.WithUser(ctx, auth.APIServer)
	_, err := s.guaranteedUpdate(ctx, res, "", name, "", false, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == CRDCleanupFinalizer })
		c.ResourceVersion = ""
		return c, nil
	})
	return err
}
