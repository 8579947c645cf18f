package nodeauth

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/rbac"
)

// TestNodeAccess checks what node credentials reach under the default
// authorizers (the Node authorizer, then RBAC with the bootstrap policy):
// every request the kubelet and its node agent make (kubelet/agent,
// kubelet/node, kubelet/certs) for the node's own objects, and nothing of
// another node's; a member of system:nodes that is no identified node gets
// nothing of a node's.
func TestNodeAccess(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	g.AddPod(fullPod("ns", "web", "n1"))
	g.AddPod(fullPod("ns", "db", "n2"))
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n1"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	g.AddPod(mirror)
	g.SetClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}})
	az := auth.Union{NewAuthorizer(g), rbac.NewAuthorizer(rbac.NewStaticLister(rbac.Bootstrap()))}

	n1 := nodeUser("n1")
	alice := auth.User{Name: "alice", Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
	const (
		core         = ""
		coordination = "coordination.k8s.io"
		certificates = "certificates.k8s.io"
		storage      = "storage.k8s.io"
	)
	res := func(u auth.User, verb, group, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
			Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	selected := func(a auth.Attributes, selector string) auth.Attributes {
		a.FieldSelector = fields.ParseSelectorOrDie(selector).Requirements()
		return a
	}
	cases := []struct {
		name  string
		attrs auth.Attributes
		want  bool
	}{
		// kubelet/node: registering, status, heartbeat.
		{"creates its node", res(n1, "create", core, "nodes", "", "", ""), true},
		{"gets its node", res(n1, "get", core, "nodes", "", "", "n1"), true},
		{"watches its node by name", res(n1, "watch", core, "nodes", "", "", "n1"), true},
		{"updates its node status", res(n1, "update", core, "nodes", "status", "", "n1"), true},
		{"patches its node", res(n1, "patch", core, "nodes", "", "", "n1"), true},
		{"gets its lease", res(n1, "get", coordination, "leases", "", "kube-node-lease", "n1"), true},
		{"creates its lease", res(n1, "create", coordination, "leases", "", "kube-node-lease", ""), true},
		{"renews its lease", res(n1, "update", coordination, "leases", "", "kube-node-lease", "n1"), true},
		// kubelet/agent: pods, mirror pods, what pods use, events.
		{"lists its pods", selected(res(n1, "list", core, "pods", "", "", ""), "spec.nodeName=n1"), true},
		{"watches its pods", selected(res(n1, "watch", core, "pods", "", "", ""), "status.phase!=Succeeded,spec.nodeName=n1"), true},
		{"watches its pods in a namespace", selected(res(n1, "watch", core, "pods", "", "ns", ""), "spec.nodeName==n1"), true},
		{"gets its pod", res(n1, "get", core, "pods", "", "ns", "web"), true},
		{"gets its mirror pod", res(n1, "get", core, "pods", "", "kube-system", "etcd-n1"), true},
		{"updates pod status", res(n1, "update", core, "pods", "status", "ns", "web"), true},
		{"patches pod status", res(n1, "patch", core, "pods", "status", "ns", "web"), true},
		{"deletes a pod", res(n1, "delete", core, "pods", "", "ns", "web"), true},
		{"creates a mirror pod", res(n1, "create", core, "pods", "", "kube-system", ""), true},
		{"evicts a pod", res(n1, "create", core, "pods", "eviction", "ns", "web"), true},
		{"gets the kubernetes service", res(n1, "get", core, "services", "", "default", "kubernetes"), true},
		{"gets a secret of its pod", res(n1, "get", core, "secrets", "", "ns", "vol-secret"), true},
		{"gets a configmap of its pod", res(n1, "get", core, "configmaps", "", "ns", "vol-cm"), true},
		{"gets a claim of its pod", res(n1, "get", core, "persistentvolumeclaims", "", "ns", "data"), true},
		{"gets the volume of its claim", res(n1, "get", core, "persistentvolumes", "", "", "pv-data"), true},
		{"creates a token of its pod's account", res(n1, "create", core, "serviceaccounts", "token", "ns", "sa"), true},
		{"records an event", res(n1, "create", core, "events", "", "ns", ""), true},
		{"patches an event", res(n1, "patch", core, "events", "", "ns", "e"), true},
		// kubelet/certs: its serving and client certificates.
		{"creates a CSR", res(n1, "create", certificates, "certificatesigningrequests", "", "", ""), true},
		{"gets its CSR", res(n1, "get", certificates, "certificatesigningrequests", "", "", "csr-1"), true},
		{"watches its CSR", res(n1, "watch", certificates, "certificatesigningrequests", "", "", "csr-1"), true},
		{"renews its client certificate", res(n1, "create", certificates, "certificatesigningrequests", "selfnodeclient", "", ""), true},
		{"reviews a token", res(n1, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), true},
		{"reviews access", res(n1, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), true},
		{"gets its CSINode", res(n1, "get", storage, "csinodes", "", "", "n1"), true},

		// Nothing of another node's, nor everything.
		{"lists all pods", res(n1, "list", core, "pods", "", "", ""), false},
		{"watches all pods", res(n1, "watch", core, "pods", "", "", ""), false},
		{"lists a namespace's pods", res(n1, "list", core, "pods", "", "ns", ""), false},
		{"lists another node's pods", selected(res(n1, "list", core, "pods", "", "", ""), "spec.nodeName=n2"), false},
		{"lists pods of other nodes", selected(res(n1, "list", core, "pods", "", "", ""), "spec.nodeName!=n1"), false},
		{"lists pods by another field", selected(res(n1, "list", core, "pods", "", "", ""), "metadata.namespace=ns"), false},
		{"gets another node's pod", res(n1, "get", core, "pods", "", "ns", "db"), false},
		{"gets a pod by its node's name elsewhere", res(n1, "get", core, "pods", "", "other", "web"), false},
		{"lists nodes", res(n1, "list", core, "nodes", "", "", ""), false},
		{"watches nodes", res(n1, "watch", core, "nodes", "", "", ""), false},
		{"gets another node", res(n1, "get", core, "nodes", "", "", "n2"), false},
		{"watches another node", res(n1, "watch", core, "nodes", "", "", "n2"), false},
		{"deletes a node", res(n1, "delete", core, "nodes", "", "", "n1"), false},
		{"gets another node's lease", res(n1, "get", coordination, "leases", "", "kube-node-lease", "n2"), false},
		{"renews another node's lease", res(n1, "update", coordination, "leases", "", "kube-node-lease", "n2"), false},
		{"deletes another node's lease", res(n1, "delete", coordination, "leases", "", "kube-node-lease", "n2"), false},
		{"lists leases", res(n1, "list", coordination, "leases", "", "kube-node-lease", ""), false},
		{"watches leases", res(n1, "watch", coordination, "leases", "", "kube-node-lease", ""), false},
		{"gets a lease elsewhere", res(n1, "get", coordination, "leases", "", "kube-system", "n1"), false},
		{"gets another node's CSINode", res(n1, "get", storage, "csinodes", "", "", "n2"), false},
		// The graph has no VolumeAttachment → node edge (kubebus serves
		// none): no node gets one, though the node rules name them.
		{"gets a volume attachment", res(n1, "get", storage, "volumeattachments", "", "", "csi-0123"), false},
		{"gets another node's secret", res(n1, "get", core, "secrets", "", "ns", "other"), false},
		{"lists endpoint slices", res(n1, "list", "discovery.k8s.io", "endpointslices", "", "", ""), false},
		{"updates a pod spec", res(n1, "update", core, "pods", "", "ns", "web"), false},
		{"execs into a pod", res(n1, "create", core, "pods", "exec", "ns", "web"), false},
		{"reads pod logs", res(n1, "get", core, "pods", "log", "ns", "web"), false},
		{"approves a CSR", res(n1, "update", certificates, "certificatesigningrequests", "approval", "", "csr-1"), false},

		// A member of system:nodes that is no node: nothing of a node's.
		{"alice gets a node", res(alice, "get", core, "nodes", "", "", "n1"), false},
		{"alice creates a node", res(alice, "create", core, "nodes", "", "", ""), false},
		{"alice updates node status", res(alice, "update", core, "nodes", "status", "", "n1"), false},
		{"alice lists pods", res(alice, "list", core, "pods", "", "", ""), false},
		{"alice lists a node's pods", selected(res(alice, "list", core, "pods", "", "", ""), "spec.nodeName=n1"), false},
		{"alice gets a pod", res(alice, "get", core, "pods", "", "ns", "web"), false},
		{"alice deletes a pod", res(alice, "delete", core, "pods", "", "ns", "web"), false},
		{"alice writes pod status", res(alice, "update", core, "pods", "status", "ns", "web"), false},
		{"alice creates a pod", res(alice, "create", core, "pods", "", "ns", ""), false},
		{"alice gets a secret", res(alice, "get", core, "secrets", "", "ns", "vol-secret"), false},
		{"alice renews a lease", res(alice, "update", coordination, "leases", "", "kube-node-lease", "n1"), false},
		{"alice creates a CSR", res(alice, "create", certificates, "certificatesigningrequests", "", "", ""), false},
		{"alice records an event", res(alice, "create", core, "events", "", "ns", ""), false},
		{"alice lists services", res(alice, "list", core, "services", "", "", ""), false},
		{"alice reviews a token", res(alice, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), false},
	}
	for _, tc := range cases {
		d, reason, err := az.Authorize(context.Background(), tc.attrs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := d == auth.Allow; got != tc.want {
			t.Errorf("%s: allowed = %v (%q), want %v", tc.name, got, reason, tc.want)
		}
	}
}

// TestNodeAccessReasons checks upstream's reasons for what a node may not
// read.
func TestNodeAccessReasons(t *testing.T) {
	t.Parallel()
	az := NewAuthorizer(NewGraph())
	res := func(verb, group, resource, ns, name string) auth.Attributes {
		return auth.Attributes{User: nodeUser("n1"), Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		attrs  auth.Attributes
		reason string
	}{
		{res("watch", "", "pods", "", ""), "can only list/watch pods with spec.nodeName field selector"},
		{res("list", "", "nodes", "", ""), "node 'n1' cannot read all nodes, only its own Node object"},
		{res("get", "", "nodes", "", "n2"), "node 'n1' cannot read 'n2', only its own Node object"},
		{res("get", "", "pods", "ns", "p"), "no relationship found between node 'n1' and this object"},
		{res("get", "coordination.k8s.io", "leases", "kube-node-lease", "n2"), "can only access node lease with the same name as the requesting node"},
		{res("list", "coordination.k8s.io", "leases", "kube-node-lease", ""), "can only get, create, update, patch, or delete a node lease"},
		{res("get", "coordination.k8s.io", "leases", "default", "n1"), `can only access leases in the "kube-node-lease" system namespace`},
	} {
		d, reason, _ := az.Authorize(context.Background(), tc.attrs)
		if d != auth.NoOpinion || reason != tc.reason {
			t.Errorf("%s %s %s: %v %q, want NoOpinion %q", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Name, d, reason, tc.reason)
		}
	}
}
