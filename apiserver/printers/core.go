package printers

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers for the core kinds other than pods and the service family.

const (
	// nodeRolePrefix labels a node with a role: node-role.kubernetes.io/<role>.
	nodeRolePrefix = "node-role.kubernetes.io/"
	// nodeRoleLabel is the older form: kubernetes.io/role=<role>.
	nodeRoleLabel = "kubernetes.io/role"
)

func nodeColumns() []metav1.TableColumnDefinition {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	addresses := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "Whether the node is Ready, and whether scheduling onto it is disabled."),
		column("Roles", "string", "The node's roles, from its node-role.kubernetes.io/<role> labels."),
		ageColumn(),
		column("Version", "string", info["kubeletVersion"]),
		wideColumn("Internal-IP", "string", addresses),
		wideColumn("External-IP", "string", addresses),
		wideColumn("OS-Image", "string", info["osImage"]),
		wideColumn("Kernel-Version", "string", info["kernelVersion"]),
		wideColumn("Container-Runtime", "string", info["containerRuntimeVersion"]),
	}
}

func nodeCells(node *corev1.Node, now time.Time) []interface{} {
	info := node.Status.NodeInfo
	return []interface{}{
		node.Name,
		nodeStatus(node),
		orNone(strings.Join(nodeRoles(node), ",")),
		age(node.CreationTimestamp, now),
		info.KubeletVersion,
		orNone(nodeAddress(node, corev1.NodeInternalIP)),
		orNone(nodeAddress(node, corev1.NodeExternalIP)),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	}
}

// nodeStatus is "Ready" or "NotReady" from the Ready condition ("Unknown"
// without one), with ",SchedulingDisabled" for a cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles returns the node's roles, sorted.
func nodeRoles(node *corev1.Node) []string {
	seen := map[string]bool{}
	var roles []string
	add := func(role string) {
		if role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
		}
	}
	for k, v := range node.Labels {
		if role, ok := strings.CutPrefix(k, nodeRolePrefix); ok {
			add(role)
		} else if k == nodeRoleLabel {
			add(v)
		}
	}
	sort.Strings(roles)
	return roles
}

// nodeAddress returns the node's first address of type t, or "".
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func namespaceColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", corev1.NamespaceStatus{}.SwaggerDoc()["phase"]),
		ageColumn(),
	}
}

func namespaceCells(ns *corev1.Namespace, now time.Time) []interface{} {
	return []interface{}{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
}

func configMapColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Data", "string", "Number of keys in data and binaryData."),
		ageColumn(),
	}
}

func configMapCells(cm *corev1.ConfigMap, now time.Time) []interface{} {
	return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
}

func secretColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		column("Data", "string", "Number of keys in data."),
		ageColumn(),
	}
}

func secretCells(s *corev1.Secret, now time.Time) []interface{} {
	return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}
}

func serviceAccountColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Secrets", "string", "Number of secrets the service account lists."),
		ageColumn(),
	}
}

func serviceAccountCells(sa *corev1.ServiceAccount, now time.Time) []interface{} {
	return []interface{}{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}
}

// eventColumns follow upstream's order, which kubectl shows as
// LAST SEEN TYPE REASON OBJECT MESSAGE, and with -o wide as
// LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME.
// NAME is the last column here, not the first.
func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	name := nameColumn()
	name.Priority = 1
	return []metav1.TableColumnDefinition{
		column("Last Seen", "string", doc["lastTimestamp"]),
		column("Type", "string", doc["type"]),
		column("Reason", "string", doc["reason"]),
		column("Object", "string", doc["involvedObject"]),
		wideColumn("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wideColumn("Source", "string", doc["source"]),
		column("Message", "string", doc["message"]),
		wideColumn("First Seen", "string", doc["firstTimestamp"]),
		wideColumn("Count", "string", doc["count"]),
		name,
	}
}

func eventCells(ev *corev1.Event, now time.Time) []interface{} {
	first := ev.FirstTimestamp.Time
	if first.IsZero() {
		first = ev.EventTime.Time
	}
	last := ev.LastTimestamp.Time
	if last.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last, count = ev.Series.LastObservedTime.Time, ev.Series.Count
	} else if count == 0 {
		count = 1 // events from events.k8s.io/v1 leave count unset for a single occurrence
	}

	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}
	component, host := ev.Source.Component, ev.Source.Host
	if component == "" {
		component = ev.ReportingController
	}
	if host == "" {
		host = ev.ReportingInstance
	}
	source := component
	if host != "" {
		source += ", " + host
	}
	return []interface{}{
		since(last, now),
		ev.Type,
		ev.Reason,
		object,
		ev.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(ev.Message),
		since(first, now),
		int64(count),
		ev.Name,
	}
}
