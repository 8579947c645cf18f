package why

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/bus/tap"
)

// Target names the object to explain.
type Target struct {
	Group, Resource, Namespace, Name string
}

// ParseTarget parses KIND/NAME (kubectl's short and plural names work:
// deploy/web, pods/web-1, svc/web, ns/team-a) in namespace ns; a
// cluster-scoped kind ignores ns.
func ParseTarget(arg, ns string) (Target, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("why: %q is not KIND/NAME (e.g. deployment/web)", arg)
	}
	g, r, err := tap.ParseResource(kind)
	if err != nil {
		return Target{}, err
	}
	if clusterScoped[r] {
		ns = ""
	} else if ns == "" {
		ns = "default"
	}
	return Target{Group: g, Resource: r, Namespace: ns, Name: name}, nil
}

// clusterScoped lists the cluster-scoped resources why knows.
var clusterScoped = map[string]bool{"namespaces": true, "nodes": true, "persistentvolumes": true, "clusterroles": true,
	"clusterrolebindings": true, "priorityclasses": true, "storageclasses": true, "customresourcedefinitions": true}

// query is one read of the bus: a resource in a namespace (every object,
// or one by name).
type query struct {
	group, resource, namespace, name string
	// optional reads only add evidence: a refusal is noted, not fatal.
	optional bool
}

func (q query) flags() tap.Flags {
	return tap.Flags{Resource: qualified(q.group, q.resource), Namespace: q.namespace, Name: q.name}
}

func (q query) String() string {
	s := tap.ResourceName(q.group, q.resource)
	if q.resource == "" {
		s = "every resource"
	}
	if q.name != "" {
		s += " " + q.name
	}
	if q.namespace != "" {
		s += " in " + q.namespace
	}
	return s
}

func qualified(group, resource string) string {
	if resource == "" {
		return ""
	}
	if group == "" {
		return "core/" + resource
	}
	return group + "/" + resource
}

// queries are what to read to explain t: the object itself, what may own
// it or depend on it in its namespace, the nodes, and the proxies' Leases.
func queries(t Target) []query {
	qs := []query{{group: t.Group, resource: t.Resource, namespace: t.Namespace, name: t.Name}}
	ns := t.Namespace
	if t.Group == "" && t.Resource == "namespaces" {
		ns = t.Name
		qs = append(qs, query{namespace: ns, optional: true})
	}
	if ns != "" {
		for _, gr := range [][2]string{{"", "pods"}, {"apps", "replicasets"}, {"apps", "deployments"}, {"", "services"},
			{"discovery.k8s.io", "endpointslices"}, {"", "events"}, {"", "resourcequotas"}} {
			if gr[0] == t.Group && gr[1] == t.Resource && t.Resource != "namespaces" {
				qs[0].name = "" // every object of the target's resource: owners and siblings too
				continue
			}
			qs = append(qs, query{group: gr[0], resource: gr[1], namespace: ns, optional: true})
		}
	}
	qs = append(qs,
		query{resource: "nodes", optional: true},
		query{group: "coordination.k8s.io", resource: "leases", namespace: lifecycle.ProxyLeaseNamespace, optional: true})
	return qs
}

// Gather reads everything needed to explain t from src.
func Gather(ctx context.Context, src Source, t Target) (*World, error) {
	w := NewWorld()
	if err := read(ctx, src, w, queries(t)); err != nil {
		return nil, err
	}
	if anyUnschedulable(w) {
		// Which node came closest depends on every pod bound to them.
		if err := read(ctx, src, w, []query{{resource: "pods", optional: true}}); err != nil {
			return nil, err
		}
	}
	if t.Group == "" && t.Resource == "namespaces" {
		// When every resource of the namespace could not be read, read
		// the ones its deletion conditions say remain.
		var more []query
		for _, gr := range remainingResources(w.Get(targetKey(t))) {
			more = append(more, query{group: gr[0], resource: gr[1], namespace: t.Name, optional: true})
		}
		if len(more) > 0 {
			if err := read(ctx, src, w, more); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// read runs the queries concurrently and files what they return.
func read(ctx context.Context, src Source, w *World, qs []query) error {
	type result struct {
		q    query
		recs []tap.Record
		err  error
	}
	results := make([]result, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs, err := src.Read(ctx, q.flags())
			results[i] = result{q, recs, err}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			var ae *AccessError
			if r.q.optional && errors.As(r.err, &ae) {
				w.Hidden = append(w.Hidden, fmt.Sprintf("%s: %s", r.q, ae.Message))
				continue
			}
			return fmt.Errorf("why: reading %s: %w", r.q, r.err)
		}
		w.Add(r.recs)
	}
	sort.Strings(w.Hidden)
	return nil
}

var remainingRE = regexp.MustCompile(`([a-z0-9.-]+) has \d+ resource instances`)

// remainingResources reads the resources a terminating namespace's
// conditions name as remaining.
func remainingResources(h *History) [][2]string {
	l := h.Latest()
	if l == nil {
		return nil
	}
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, m := range remainingRE.FindAllStringSubmatch(string(l.Object), -1) {
		r, g, _ := strings.Cut(strings.TrimSuffix(m[1], "."), ".")
		gr := [2]string{g, r}
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	return out
}

// anyUnschedulable reports whether a pod read so far is not bound and the
// scheduler said why.
func anyUnschedulable(w *World) bool {
	for _, h := range w.Resource("", "pods", "") {
		p, _, ok := latest[corev1.Pod](h)
		if !ok || p.Spec.NodeName != "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return true
			}
		}
	}
	return false
}
