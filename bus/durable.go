package bus

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxDurableLen is NATS's limit on the length of a consumer name.
const maxDurableLen = 255

// DurableName is the name of an informer's durable consumer (bus/informer)
// of one resource. It says whose consumer it is and what it reads:
//
//	<component>_<resource>[-<group>][_ns-<namespace>][_<instance>]
//
// with the group's dots written as dashes, e.g. "kube-scheduler_pods_vm-1",
// "kube-controller-manager_leases-coordination-k8s-io_ns-kube-node-lease".
// NATS names may not hold '.', '*', '>', whitespace or path separators, so
// every character other than a letter, a digit or '-' is written as '-'.
// Where that loses something (a group or a resource with a dash, a dot in
// a namespace or an instance, an instance that starts with "ns-", a name
// over NATS's 255 bytes), the name would no longer read back as these
// fields: it then ends in '~' and ten hex digits of a hash of the exact
// fields, so two selections never share a name ('~' appears in no name
// without the hash).
//
// The bus's permissions (bus/busauth) name the consumers of a component
// whose reads are narrowed to some resources with this function.
func DurableName(component, group, resource, namespace, instance string) string {
	f := durableFields{Component: component, Group: group, Resource: resource, Namespace: namespace, Instance: instance}
	name := f.readable()
	if back, ok := parseDurable(name); ok && back == f && len(name) <= maxDurableLen {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Component, f.Group, f.Resource, f.Namespace, f.Instance}, "\x00")))
	suffix := "~" + hex.EncodeToString(sum[:])[:10]
	return name[:min(len(name), maxDurableLen-len(suffix))] + suffix
}

// durableFields are what a durable name says.
type durableFields struct {
	Component, Group, Resource, Namespace, Instance string
}

// readable writes the fields as a name, possibly losing something.
func (f durableFields) readable() string {
	rg := nameToken(f.Resource)
	if f.Group != "" {
		rg += "-" + nameToken(f.Group)
	}
	parts := []string{nameToken(f.Component), rg}
	if f.Namespace != "" {
		parts = append(parts, "ns-"+nameToken(f.Namespace))
	}
	if f.Instance != "" {
		parts = append(parts, nameToken(f.Instance))
	}
	return strings.Join(parts, "_")
}

// parseDurable reads a name without a hash back into its fields.
func parseDurable(name string) (durableFields, bool) {
	parts := strings.Split(name, "_")
	if len(parts) < 2 || len(parts) > 4 {
		return durableFields{}, false
	}
	f := durableFields{Component: parts[0]}
	var group string
	f.Resource, group, _ = strings.Cut(parts[1], "-")
	f.Group = strings.ReplaceAll(group, "-", ".")
	rest := parts[2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "ns-") {
		f.Namespace, rest = strings.TrimPrefix(rest[0], "ns-"), rest[1:]
	}
	switch len(rest) {
	case 0:
	case 1:
		f.Instance = rest[0]
	default:
		return durableFields{}, false
	}
	return f, true
}

// nameToken writes every character of s that is not a letter, a digit or
// '-' as '-'.
func nameToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}
