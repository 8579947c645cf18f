package tap

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/bus"
)

// canonicalFlags renders a parsed Config back as the flags that say it in
// the canonical spelling: group/resource, the types upper-case and sorted,
// the selector's String(), the revision or the age's String().
func canonicalFlags(c Config) Flags {
	f := Flags{Namespace: c.Filter.Namespace, Name: c.Filter.Name, Output: string(c.Printer.Format)}
	if c.Filter.Resource != "" {
		g := c.Filter.Group
		if g == "" {
			g = "core"
		}
		f.Resource = g + "/" + c.Filter.Resource
	}
	if c.Filter.Selector != nil {
		f.Selector = c.Filter.Selector.String()
	}
	var types []string
	for t := range c.Filter.Types {
		types = append(types, string(t))
	}
	slices.Sort(types)
	f.Types = strings.Join(types, ",")
	switch {
	case c.Since.Revision > 0:
		f.Since = strconv.FormatInt(c.Since.Revision, 10)
	case c.Since.Age > 0:
		f.Since = c.Since.Age.String()
	}
	return f
}

func selectorString(c Config) string {
	if c.Filter.Selector == nil {
		return ""
	}
	return c.Filter.Selector.String()
}

// FuzzFilterFlags: the tap's flag parser either errors or gives a filter
// whose canonical spelling parses to the same filter, whose subject
// filters are well-formed NATS filters for exactly its object fields, and
// which matches an event of its own object.
func FuzzFilterFlags(f *testing.F) {
	f.Add("pods", "default", "app=web", "web-0", "added,modified", "10m", "json")
	f.Add("deployments.v1.apps", "", "tier in (a,b),!legacy", "", "", "1234", "yaml")
	f.Add("apps/deployments", "kube-system", "x!=y", "d", "DELETED", "", "table")
	f.Add("deploy", "ns.with.dots", "", "a b", " Added , deleted ", "1h30m", "")
	f.Add("core/pods", "*", "a,b=c", ">", "bogus", "-5", "wide")
	f.Add("x.y.z", "", "", "", "", "0", "")
	f.Fuzz(func(t *testing.T, resource, namespace, selector, name, types, since, output string) {
		in := Flags{Resource: resource, Namespace: namespace, Selector: selector, Name: name, Types: types, Since: since, Output: output}
		cfg, err := in.Config(false)
		if err != nil {
			return
		}
		canon := canonicalFlags(cfg)
		again, err := canon.Config(false)
		if err != nil {
			t.Fatalf("the canonical flags %+v of %+v do not parse: %v", canon, in, err)
		}
		a, b := cfg.Filter, again.Filter
		if a.Group != b.Group || a.Resource != b.Resource || a.Namespace != b.Namespace || a.Name != b.Name ||
			a.MinRevision != b.MinRevision || !maps.Equal(a.Types, b.Types) || selectorString(cfg) != selectorString(again) ||
			cfg.Since != again.Since || cfg.Printer.Format != again.Printer.Format {
			t.Fatalf("%+v parses to\n%+v, its canonical flags %+v to\n%+v", in, a, canon, b)
		}
		checkSubjects(t, &cfg.Filter)
		checkOwnEvent(t, &cfg.Filter)
	})
}

// checkSubjects: two filters, the object one of five tokens with a
// wildcard exactly where a field is unset, each other token the escaped
// field, and the gap subject.
func checkSubjects(t *testing.T, f *Filter) {
	t.Helper()
	subs := f.Subjects()
	if len(subs) != 2 || subs[1] != bus.GapSubject {
		t.Fatalf("Subjects() = %q", subs)
	}
	tokens := strings.Split(subs[0], ".")
	if len(tokens) != 5 {
		t.Fatalf("object subject %q has %d tokens, want 5", subs[0], len(tokens))
	}
	group := f.Group
	if group == "" {
		group = "core"
	}
	for i, want := range []string{"", group, f.Resource, f.Namespace, f.Name} {
		tok := tokens[i]
		switch {
		case i == 0:
			continue
		case (i <= 2 && f.Resource == "") || (i > 2 && want == ""):
			if tok != "*" {
				t.Fatalf("token %d of %q is %q, want *", i, subs[0], tok)
			}
		default:
			if tok == "" || strings.ContainsAny(tok, "*> \t") {
				t.Fatalf("token %d of %q is %q, not one literal token", i, subs[0], tok)
			}
			if got, err := bus.Unescape(tok); err != nil || got != want {
				t.Fatalf("token %d of %q unescapes to %q (%v), want %q", i, subs[0], got, err, want)
			}
		}
	}
}

// checkOwnEvent: an event of the filter's own object and type at its
// minimum revision passes (when no label selector needs labels).
func checkOwnEvent(t *testing.T, f *Filter) {
	t.Helper()
	if f.Selector != nil && !f.Selector.Empty() {
		return
	}
	ev := &bus.Event{Type: bus.Added, Revision: max(f.MinRevision, 1), Group: f.Group, Resource: f.Resource, Namespace: f.Namespace, Name: f.Name,
		Object: json.RawMessage(`{}`)}
	for typ := range f.Types {
		ev.Type = typ
		break
	}
	if ev.Resource == "" {
		ev.Resource = "pods"
	}
	if !f.Match(ev) {
		t.Fatalf("the filter %+v drops its own event %+v", f, ev)
	}
	if f.Match(&bus.Event{Type: ev.Type, Revision: ev.Revision, Group: ev.Group, Resource: ev.Resource, Namespace: ev.Namespace, Name: ev.Name + "x", Object: ev.Object}) && f.Name != "" {
		t.Fatalf("the filter %+v passes another object's event", f)
	}
}
