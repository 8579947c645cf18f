package bus

import (
	"fmt"
	"strings"
)

// Stream names.
const (
	HistoryStream  = "KUBE_HISTORY"
	NodePodsStream = "KUBE_NODEPODS"
	StateStream    = "KUBE_STATE"
)

// Subject prefixes.
const (
	historyPrefix   = "kube"
	nodePrefix      = "knode"
	statePrefix     = "kstate"
	stateNodePrefix = "kstatenode"
	// GapSubject carries control events about revisions that could not be republished.
	GapSubject = "kbus.gap"
	// NodeGapSubject repeats gap events on KUBE_NODEPODS for kubelets.
	NodeGapSubject = "knode._gap"
	// ProgressSubject carries the revision an idle publisher has checked
	// through, so its resume point advances past revisions of non-object keys.
	ProgressSubject = "kbus.progress"
)

// ClusterScope is the namespace token of cluster-scoped objects.
const ClusterScope = "_"

// ObjectKey names one object on the bus.
type ObjectKey struct {
	Group     string // "" for core
	Resource  string // plural, e.g. "pods"
	Namespace string // "" for cluster-scoped
	Name      string
}

// GroupResource is "group/resource" with "core" for the legacy group; it is
// the value of the Kube-Resource header.
func (k ObjectKey) GroupResource() string { return groupToken(k.Group) + "/" + k.Resource }

func groupToken(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

func nsToken(ns string) string {
	if ns == "" {
		return ClusterScope
	}
	return Escape(ns)
}

// HistorySubject is the object's subject on KUBE_HISTORY.
func HistorySubject(k ObjectKey) string {
	return historyPrefix + "." + Escape(groupToken(k.Group)) + "." + Escape(k.Resource) + "." + nsToken(k.Namespace) + "." + Escape(k.Name)
}

// StateSubject is the object's subject on KUBE_STATE.
func StateSubject(k ObjectKey) string {
	return statePrefix + strings.TrimPrefix(HistorySubject(k), historyPrefix)
}

// NodeSubject is a bound pod's subject on KUBE_NODEPODS.
func NodeSubject(node, namespace, name string) string {
	return nodePrefix + "." + Escape(node) + "." + nsToken(namespace) + "." + Escape(name)
}

// StateNodeSubject is a bound pod's subject in KUBE_STATE's per-node view.
func StateNodeSubject(node, namespace, name string) string {
	return stateNodePrefix + strings.TrimPrefix(NodeSubject(node, namespace, name), nodePrefix)
}

// ResourceFilter returns the history-stream filter of a resource, optionally
// narrowed to a namespace.
func ResourceFilter(group, resource, namespace string) string {
	f := historyPrefix + "." + Escape(groupToken(group)) + "." + Escape(resource)
	if namespace != "" {
		return f + "." + Escape(namespace) + ".*"
	}
	return f + ".>"
}

// StateFilter is ResourceFilter on KUBE_STATE.
func StateFilter(group, resource, namespace string) string {
	return statePrefix + strings.TrimPrefix(ResourceFilter(group, resource, namespace), historyPrefix)
}

// NodeFilter returns the KUBE_NODEPODS filter of one node's pods.
func NodeFilter(node string) string { return nodePrefix + "." + Escape(node) + ".>" }

// IsNodeFilter reports whether f is a KUBE_NODEPODS subject or filter.
func IsNodeFilter(f string) bool { return strings.HasPrefix(f, nodePrefix+".") }

// StateNodeFilter returns the KUBE_STATE filter of one node's pods.
func StateNodeFilter(node string) string { return stateNodePrefix + "." + Escape(node) + ".>" }

// ParseHistorySubject is the inverse of HistorySubject (and of StateSubject).
func ParseHistorySubject(subject string) (ObjectKey, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 || (parts[0] != historyPrefix && parts[0] != statePrefix) {
		return ObjectKey{}, fmt.Errorf("bus: %q is not an object subject", subject)
	}
	var k ObjectKey
	var err error
	for i, dst := range []*string{&k.Group, &k.Resource, &k.Namespace, &k.Name} {
		if *dst, err = Unescape(parts[i+1]); err != nil {
			return ObjectKey{}, fmt.Errorf("bus: subject %q: %w", subject, err)
		}
	}
	if k.Group == "core" {
		k.Group = ""
	}
	if parts[3] == ClusterScope {
		k.Namespace = ""
	}
	return k, nil
}

// Escape makes s one safe NATS subject token, reversibly: bytes outside
// [A-Za-z0-9_-:] (and a leading or lone "_", reserved for ClusterScope)
// become %XX.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isPlain(c) && !(c == '_' && i == 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':'
}

// Unescape reverses Escape.
func Unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}
