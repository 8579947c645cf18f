package tap

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/bus"
)

// Filter selects the events the tap prints. The zero Filter selects every
// event. The object fields (resource, namespace, name) narrow the stream's
// subject filter, so the server does not send what would be dropped; types,
// the label selector and the minimum revision are checked here.
//
// GAP events always pass: a gap concerns every resource.
type Filter struct {
	// Group and Resource name one resource; Resource "" means all. Group ""
	// is the core group.
	Group    string
	Resource string
	// Namespace "" means all namespaces.
	Namespace string
	// Name "" means every object.
	Name string
	// Types nil means every type.
	Types map[bus.EventType]bool
	// Selector nil means every object. A MODIFIED event passes when the
	// object matches before or after the change, so a label being removed
	// is still shown, as long as the previous state is still on the bus.
	Selector labels.Selector
	// MinRevision drops events older than this revision.
	MinRevision int64
}

// Subjects returns the KUBE_HISTORY subject filters of f: one for object
// events and one for gap events. The two never overlap, as JetStream
// requires.
func (f *Filter) Subjects() []string {
	// Build a concrete subject with bus.HistorySubject, so the escaping is
	// the publisher's, and replace the unset tokens with wildcards.
	const placeholder = "x"
	k := bus.ObjectKey{Group: f.Group, Resource: f.Resource, Namespace: f.Namespace, Name: f.Name}
	if k.Resource == "" {
		k.Group, k.Resource = placeholder, placeholder
	}
	if k.Namespace == "" {
		k.Namespace = placeholder
	}
	if k.Name == "" {
		k.Name = placeholder
	}
	tokens := strings.Split(bus.HistorySubject(k), ".")
	if f.Resource == "" {
		tokens[1], tokens[2] = "*", "*"
	}
	if f.Namespace == "" {
		tokens[3] = "*"
	}
	if f.Name == "" {
		tokens[4] = "*"
	}
	return []string{strings.Join(tokens, "."), bus.GapSubject}
}

// Match reports whether ev passes the filter. An update whose previous
// state matched the selector passes too (it may have just left the
// selection); ev.Previous must be filled in for that.
func (f *Filter) Match(ev *bus.Event) bool {
	if ev.Type == bus.Gap {
		return f.MinRevision == 0 || ev.To >= f.MinRevision
	}
	if !f.matchKey(ev) {
		return false
	}
	if f.Selector == nil || f.Selector.Empty() {
		return true
	}
	if f.Selector.Matches(labels.Set(objectLabels(ev.Object))) {
		return true
	}
	return ev.Type == bus.Modified && len(ev.Previous) > 0 && f.Selector.Matches(labels.Set(objectLabels(ev.Previous)))
}

// matchKey reports whether an object event passes every part of the
// filter but the label selector.
func (f *Filter) matchKey(ev *bus.Event) bool {
	if ev.Type == bus.Gap || ev.Revision < f.MinRevision {
		return false
	}
	if f.Types != nil && !f.Types[ev.Type] {
		return false
	}
	if f.Resource != "" && (ev.Resource != f.Resource || ev.Group != f.Group) {
		return false
	}
	if f.Namespace != "" && ev.Namespace != f.Namespace {
		return false
	}
	return f.Name == "" || ev.Name == f.Name
}

func objectLabels(obj []byte) map[string]string {
	var o struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(obj, &o)
	return o.Metadata.Labels
}

// ParseTypes parses a comma-separated list of event types, in any case.
// An empty list means every type (nil).
func ParseTypes(s string) (map[bus.EventType]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	types := map[bus.EventType]bool{}
	for _, t := range strings.Split(s, ",") {
		switch et := bus.EventType(strings.ToUpper(strings.TrimSpace(t))); et {
		case bus.Added, bus.Modified, bus.Deleted:
			types[et] = true
		default:
			return nil, fmt.Errorf("tap: unknown event type %q (want ADDED, MODIFIED or DELETED)", t)
		}
	}
	return types, nil
}

// versionToken matches an API version such as v1 or v2beta1.
var versionToken = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// ParseResource parses the --resource argument: "pods", "deployments.apps",
// "deployments.v1.apps", "apps/deployments", "core/pods", or one of the
// built-in short names and singular names ("deploy", "svc", "pod"). A bare
// plural of a built-in resource outside the core group ("deployments") gets
// its group; any other bare name is taken to be in the core group.
func ParseResource(s string) (group, resource string, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", "", nil
	}
	if g, r, ok := strings.Cut(s, "/"); ok {
		if g == "" || r == "" || strings.Contains(r, "/") {
			return "", "", fmt.Errorf("tap: resource %q is not group/resource", s)
		}
		if g == "core" {
			g = ""
		}
		return g, r, nil
	}
	if r, g, ok := strings.Cut(s, "."); ok {
		if r == "" || g == "" {
			return "", "", fmt.Errorf("tap: resource %q is not resource.group", s)
		}
		v, rest, dotted := strings.Cut(g, ".")
		switch {
		case versionToken.MatchString(g): // pods.v1
			g = ""
		case dotted && versionToken.MatchString(v): // deployments.v1.apps
			if rest == "" {
				return "", "", fmt.Errorf("tap: resource %q is not resource.version.group", s)
			}
			g = rest
		}
		if g == "core" {
			g = ""
		}
		return g, r, nil
	}
	if gr, ok := builtinNames[s]; ok {
		g, r, _ := strings.Cut(gr, "/")
		return g, r, nil
	}
	return "", s, nil
}

// builtinNames maps the short, singular and bare plural names kubectl users
// type for built-in resources to "group/resource".
var builtinNames = map[string]string{
	"po": "/pods", "pod": "/pods",
	"svc": "/services", "service": "/services",
	"no": "/nodes", "node": "/nodes",
	"ns": "/namespaces", "namespace": "/namespaces",
	"cm": "/configmaps", "configmap": "/configmaps",
	"secret": "/secrets",
	"ep":     "/endpoints",
	"sa":     "/serviceaccounts", "serviceaccount": "/serviceaccounts",
	"ev": "/events", "event": "/events",
	"pv": "/persistentvolumes", "pvc": "/persistentvolumeclaims",
	"limits": "/limitranges", "quota": "/resourcequotas",
	"deploy": "apps/deployments", "deployment": "apps/deployments", "deployments": "apps/deployments",
	"rs": "apps/replicasets", "replicaset": "apps/replicasets", "replicasets": "apps/replicasets",
	"ds": "apps/daemonsets", "daemonset": "apps/daemonsets", "daemonsets": "apps/daemonsets",
	"sts": "apps/statefulsets", "statefulset": "apps/statefulsets", "statefulsets": "apps/statefulsets",
	"controllerrevisions": "apps/controllerrevisions",
	"job":                 "batch/jobs", "jobs": "batch/jobs",
	"cj": "batch/cronjobs", "cronjob": "batch/cronjobs", "cronjobs": "batch/cronjobs",
	"ing": "networking.k8s.io/ingresses", "ingress": "networking.k8s.io/ingresses", "ingresses": "networking.k8s.io/ingresses",
	"netpol": "networking.k8s.io/networkpolicies", "networkpolicies": "networking.k8s.io/networkpolicies",
	"ingressclasses": "networking.k8s.io/ingressclasses",
	"endpointslices": "discovery.k8s.io/endpointslices",
	"leases":         "coordination.k8s.io/leases", "lease": "coordination.k8s.io/leases",
	"pdb": "policy/poddisruptionbudgets", "poddisruptionbudgets": "policy/poddisruptionbudgets",
	"hpa": "autoscaling/horizontalpodautoscalers", "horizontalpodautoscalers": "autoscaling/horizontalpodautoscalers",
	"sc": "storage.k8s.io/storageclasses", "storageclasses": "storage.k8s.io/storageclasses",
	"roles": "rbac.authorization.k8s.io/roles", "rolebindings": "rbac.authorization.k8s.io/rolebindings",
	"clusterroles":              "rbac.authorization.k8s.io/clusterroles",
	"clusterrolebindings":       "rbac.authorization.k8s.io/clusterrolebindings",
	"crd":                       "apiextensions.k8s.io/customresourcedefinitions",
	"crds":                      "apiextensions.k8s.io/customresourcedefinitions",
	"customresourcedefinitions": "apiextensions.k8s.io/customresourcedefinitions",
	"priorityclasses":           "scheduling.k8s.io/priorityclasses",
}
