package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

func TestBootstrapIsConsistent(t *testing.T) {
	t.Parallel()
	p := Bootstrap()
	l := NewStaticLister(p)

	var metas []*metav1.ObjectMeta
	clusterRoles := map[string]bool{}
	for _, r := range p.ClusterRoles {
		if clusterRoles[r.Name] {
			t.Errorf("ClusterRole %s twice", r.Name)
		}
		clusterRoles[r.Name] = true
		metas = append(metas, &r.ObjectMeta)
		checkRules(t, "ClusterRole "+r.Name, r.Rules, true)
		if r.AggregationRule == nil && len(r.Rules) == 0 {
			t.Errorf("ClusterRole %s grants nothing", r.Name)
		}
	}
	for _, r := range p.Roles {
		metas = append(metas, &r.ObjectMeta)
		checkRules(t, "Role "+r.Namespace+"/"+r.Name, r.Rules, false)
	}
	for _, b := range p.ClusterRoleBindings {
		metas = append(metas, &b.ObjectMeta)
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.APIGroup != rbacv1.GroupName || !clusterRoles[b.RoleRef.Name] {
			t.Errorf("ClusterRoleBinding %s refers to %+v, not a ClusterRole of the policy", b.Name, b.RoleRef)
		}
		if b.Name == "system:node" {
			// Bound to nobody, as upstream: the Node authorizer
			// applies NodeRules to each identified node.
			if len(b.Subjects) != 0 {
				t.Errorf("ClusterRoleBinding system:node binds %v, want nobody", b.Subjects)
			}
			continue
		}
		checkSubjects(t, "ClusterRoleBinding "+b.Name, b.Subjects)
	}
	for _, b := range p.RoleBindings {
		metas = append(metas, &b.ObjectMeta)
		if _, ok := lookupRules(l, b.RoleRef, b.Namespace); !ok || b.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("RoleBinding %s/%s refers to %+v, not a role of the policy", b.Namespace, b.Name, b.RoleRef)
		}
		checkSubjects(t, "RoleBinding "+b.Namespace+"/"+b.Name, b.Subjects)
	}
	for _, m := range metas {
		if m.Labels[BootstrapLabel] != BootstrapLabelValue || m.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s: labels %v annotations %v, want the bootstrap label and autoupdate", m.Name, m.Labels, m.Annotations)
		}
	}
}

func checkRules(t *testing.T, owner string, rules []rbacv1.PolicyRule, cluster bool) {
	t.Helper()
	for i, r := range rules {
		switch {
		case len(r.Verbs) == 0:
			t.Errorf("%s rule %d has no verbs", owner, i)
		case len(r.NonResourceURLs) > 0 && (!cluster || len(r.Resources) > 0 || len(r.APIGroups) > 0):
			t.Errorf("%s rule %d mixes non-resource URLs with resources", owner, i)
		case len(r.NonResourceURLs) == 0 && (len(r.APIGroups) == 0 || len(r.Resources) == 0):
			t.Errorf("%s rule %d lacks API groups or resources", owner, i)
		case len(r.ResourceNames) > 0 && len(r.Resources) > 1:
			t.Errorf("%s rule %d names objects of several resources", owner, i)
		}
	}
}

func checkSubjects(t *testing.T, owner string, subjects []rbacv1.Subject) {
	t.Helper()
	if len(subjects) == 0 {
		t.Errorf("%s binds nobody", owner)
	}
	for _, s := range subjects {
		if (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) && s.APIGroup != rbacv1.GroupName {
			t.Errorf("%s: subject %+v without the RBAC API group", owner, s)
		}
	}
}

func TestBootstrapAggregation(t *testing.T) {
	t.Parallel()
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range Bootstrap().ClusterRoles {
		roles[r.Name] = r
	}
	// Each aggregated role selects the label carried by the role it
	// gathers: admin ⊇ edit ⊇ view, each with its system:aggregate-to-*.
	for _, tt := range []struct{ role, label string }{
		{"admin", aggregateToAdmin},
		{"edit", aggregateToEdit},
		{"view", aggregateToView},
	} {
		r := roles[tt.role]
		if r == nil || r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 ||
			r.AggregationRule.ClusterRoleSelectors[0].MatchLabels[tt.label] != "true" {
			t.Errorf("%s does not aggregate %s=true: %+v", tt.role, tt.label, r)
		}
		if base := roles["system:aggregate-to-"+tt.role]; base == nil || base.Labels[tt.label] != "true" || len(base.Rules) == 0 {
			t.Errorf("system:aggregate-to-%s is not labelled %s=true with rules", tt.role, tt.label)
		}
	}
	if roles["edit"].Labels[aggregateToAdmin] != "true" || roles["view"].Labels[aggregateToEdit] != "true" {
		t.Error("edit is not aggregated into admin, or view into edit")
	}
}

// TestBootstrapGrants checks who may do what under the bootstrap policy:
// the public endpoints, and every call the kubebus components make.
func TestBootstrapGrants(t *testing.T) {
	t.Parallel()
	a := NewAuthorizer(NewStaticLister(Bootstrap()))
	anonymous := auth.Anonymous
	authenticated := auth.User{Name: "jane", Groups: []string{auth.AllAuthenticated}}
	master := auth.User{Name: "admin", Groups: []string{auth.SystemPrivilegedGroup, auth.AllAuthenticated}}
	monitor := auth.User{Name: "prometheus", Groups: []string{monitoringGroup, auth.AllAuthenticated}}
	node := auth.User{Name: "system:node:n1", Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
	alice := auth.User{Name: "alice", Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
	sa := auth.User{Name: auth.ServiceAccountUser("default", "default"), Groups: []string{auth.ServiceAccountsGroup, auth.AllAuthenticated}}
	scheduler := auth.User{Name: kubeSchedulerUser, Groups: []string{auth.AllAuthenticated}}
	kcm := auth.User{Name: kubeControllerManager, Groups: []string{auth.AllAuthenticated}}
	proxy := auth.User{Name: kubeProxyUser, Groups: []string{auth.AllAuthenticated}}
	kubeDNS := auth.User{Name: kubeDNSUser, Groups: []string{auth.AllAuthenticated}}
	kubeDNSSA := auth.User{Name: auth.ServiceAccountUser("kube-system", "kube-dns"), Groups: []string{auth.ServiceAccountsGroup, auth.AllAuthenticated}}

	res := resourceAttrs
	tests := []struct {
		name string
		a    auth.Attributes
		want bool
	}{
		{"anonymous /version", pathAttrs(anonymous, "get", "/version"), true},
		{"anonymous /livez", pathAttrs(anonymous, "get", "/livez"), true},
		{"anonymous /readyz", pathAttrs(anonymous, "get", "/readyz"), true},
		{"anonymous /healthz", pathAttrs(anonymous, "get", "/healthz"), true},
		{"anonymous /livez/etcd", pathAttrs(anonymous, "get", "/livez/etcd"), false},
		{"anonymous post /version", pathAttrs(anonymous, "post", "/version"), false},
		{"anonymous /api", pathAttrs(anonymous, "get", "/api"), false},
		{"anonymous /metrics", pathAttrs(anonymous, "get", "/metrics"), false},
		{"anonymous get pods", res(anonymous, "get", "", "pods", "", "default", "p"), false},
		{"anonymous list namespaces", res(anonymous, "list", "", "namespaces", "", "", ""), false},
		{"anonymous self access review", res(anonymous, "create", authorizationGroup, "selfsubjectaccessreviews", "", "", ""), false},

		{"authenticated /apis/apps", pathAttrs(authenticated, "get", "/apis/apps"), true},
		{"authenticated /openapi/v3", pathAttrs(authenticated, "get", "/openapi/v3"), true},
		{"authenticated self access review", res(authenticated, "create", authorizationGroup, "selfsubjectaccessreviews", "", "", ""), true},
		{"authenticated self rules review", res(authenticated, "create", authorizationGroup, "selfsubjectrulesreviews", "", "", ""), true},
		{"authenticated whoami", res(authenticated, "create", authenticationGroup, "selfsubjectreviews", "", "", ""), true},
		{"authenticated get pods", res(authenticated, "get", "", "pods", "", "default", "p"), false},
		{"service account issuer discovery", pathAttrs(sa, "get", "/openid/v1/jwks"), true},
		{"service account get pods", res(sa, "get", "", "pods", "", "default", "p"), false},

		{"system:masters anything", res(master, "deletecollection", "apps", "deployments", "", "x", ""), true},
		{"system:masters any path", pathAttrs(master, "put", "/whatever"), true},
		{"monitoring /metrics", pathAttrs(monitor, "get", "/metrics"), true},
		{"monitoring /readyz/etcd", pathAttrs(monitor, "get", "/readyz/etcd"), true},

		// kubelet: RBAC grants a node nothing of the system:node role
		// (the Node authorizer does, to identified nodes: TestNodeRules
		// here, and package nodeauth), nor any other member of
		// system:nodes; only the renewal of its client certificate,
		// which the CSR approver checks with an access review.
		{"kubelet gets its node through RBAC", res(node, "get", "", "nodes", "", "", "n1"), false},
		{"kubelet watches pods through RBAC", res(node, "watch", "", "pods", "", "", ""), false},
		{"kubelet creates a CSR through RBAC", res(node, "create", certificatesGroup, "certificatesigningrequests", "", "", ""), false},
		{"kubelet renews its client certificate", res(node, "create", certificatesGroup, "certificatesigningrequests", "selfnodeclient", "", ""), true},
		{"system:nodes member lists pods", res(alice, "list", "", "pods", "", "", ""), false},
		{"system:nodes member gets a node", res(alice, "get", "", "nodes", "", "", "n1"), false},
		{"system:nodes member updates node status", res(alice, "update", "", "nodes", "status", "", "n1"), false},
		{"system:nodes member deletes a pod", res(alice, "delete", "", "pods", "", "default", "p"), false},
		{"system:nodes member renews a lease", res(alice, "update", coordinationGroup, "leases", "", "kube-node-lease", "n1"), false},
		{"system:nodes member creates a CSR", res(alice, "create", certificatesGroup, "certificatesigningrequests", "", "", ""), false},
		{"system:nodes member reviews a token", res(alice, "create", authenticationGroup, "tokenreviews", "", "", ""), false},

		// scheduler: scheduler/shell.
		{"scheduler binds a pod", res(scheduler, "create", "", "pods", "binding", "default", "p"), true},
		{"scheduler records a pod condition", res(scheduler, "update", "", "pods", "status", "default", "p"), true},
		{"scheduler preempts a pod", res(scheduler, "delete", "", "pods", "", "default", "p"), true},
		{"scheduler takes its lease", res(scheduler, "create", coordinationGroup, "leases", "", "kube-system", ""), true},
		{"scheduler renews its lease", res(scheduler, "update", coordinationGroup, "leases", "", "kube-system", "kube-scheduler"), true},
		{"scheduler reads another lease", res(scheduler, "get", coordinationGroup, "leases", "", "kube-system", "kube-controller-manager"), false},
		{"scheduler records an event", res(scheduler, "patch", eventsGroup, "events", "", "default", "e"), true},
		{"scheduler creates a pod", res(scheduler, "create", "", "pods", "", "default", ""), false},

		// kube-proxy: proxy.
		// kube-dns: reads Services and endpoints; writes its own
		// EndpointSlices in kube-system only.
		{"kube-dns watches services", res(kubeDNS, "watch", "", "services", "", "", ""), true},
		{"kube-dns lists endpoint slices", res(kubeDNS, "list", discoveryGroup, "endpointslices", "", "", ""), true},
		{"kube-dns lists pods", res(kubeDNS, "list", "", "pods", "", "", ""), true},
		{"kube-dns service account watches services", res(kubeDNSSA, "watch", "", "services", "", "", ""), true},
		{"kube-dns creates its slice", res(kubeDNS, "create", discoveryGroup, "endpointslices", "", "kube-system", ""), true},
		{"kube-dns updates its slice", res(kubeDNS, "update", discoveryGroup, "endpointslices", "", "kube-system", "kube-dns-n1"), true},
		{"kube-dns creates a slice elsewhere", res(kubeDNS, "create", discoveryGroup, "endpointslices", "", "default", ""), false},
		{"kube-dns service account creates a slice", res(kubeDNSSA, "create", discoveryGroup, "endpointslices", "", "kube-system", ""), false},
		{"kube-dns deletes a service", res(kubeDNS, "delete", "", "services", "", "default", "s"), false},
		{"kube-dns reads secrets", res(kubeDNS, "get", "", "secrets", "", "default", "s"), false},
		{"proxy watches endpoint slices", res(proxy, "watch", discoveryGroup, "endpointslices", "", "", ""), true},
		{"proxy lists services", res(proxy, "list", "", "services", "", "", ""), true},
		{"proxy gets its node", res(proxy, "get", "", "nodes", "", "", "n1"), true},
		{"proxy deletes a service", res(proxy, "delete", "", "services", "", "default", "s"), false},
		{"proxy creates its lease", res(proxy, "create", coordinationGroup, "leases", "", "kube-node-lease", ""), true},
		{"proxy reads its lease", res(proxy, "get", coordinationGroup, "leases", "", "kube-node-lease", "kube-proxy-n1"), true},
		{"proxy records in its lease", res(proxy, "update", coordinationGroup, "leases", "", "kube-node-lease", "kube-proxy-n1"), true},
		{"proxy deletes a lease", res(proxy, "delete", coordinationGroup, "leases", "", "kube-node-lease", "kube-proxy-n1"), false},
		{"proxy patches a lease", res(proxy, "patch", coordinationGroup, "leases", "", "kube-node-lease", "kube-proxy-n1"), false},
		{"proxy lists leases", res(proxy, "list", coordinationGroup, "leases", "", "kube-node-lease", ""), false},
		{"proxy updates a lease elsewhere", res(proxy, "update", coordinationGroup, "leases", "", "kube-system", "kube-scheduler"), false},
		{"proxy creates a lease elsewhere", res(proxy, "create", coordinationGroup, "leases", "", "default", ""), false},
		{"proxy updates a lease cluster-wide", res(proxy, "update", coordinationGroup, "leases", "", "", "kube-proxy-n1"), false},

		// controller manager: controllers/*.
		{"kcm takes its lease", res(kcm, "create", coordinationGroup, "leases", "", "kube-system", ""), true},
		{"kcm renews its lease", res(kcm, "update", coordinationGroup, "leases", "", "kube-system", "kube-controller-manager"), true},
		{"kcm records an event", res(kcm, "create", "", "events", "", "default", ""), true},
		{"kcm creates pods", res(kcm, "create", "", "pods", "", "default", ""), true},
		{"kcm patches pods", res(kcm, "patch", "", "pods", "", "default", "p"), true},
		{"kcm evicts pods", res(kcm, "create", "", "pods", "eviction", "default", "p"), true},
		{"kcm marks pods not ready", res(kcm, "update", "", "pods", "status", "default", "p"), true},
		{"kcm patches pod status", res(kcm, "patch", "", "pods", "status", "default", "p"), true},
		{"kcm creates replica sets", res(kcm, "create", appsGroup, "replicasets", "", "default", ""), true},
		{"kcm updates replica set status", res(kcm, "update", appsGroup, "replicasets", "status", "default", "r"), true},
		{"kcm patches deployments", res(kcm, "patch", appsGroup, "deployments", "", "default", "d"), true},
		{"kcm updates deployment status", res(kcm, "update", appsGroup, "deployments", "status", "default", "d"), true},
		{"kcm creates endpoints", res(kcm, "create", "", "endpoints", "", "default", ""), true},
		{"kcm updates endpoints", res(kcm, "update", "", "endpoints", "", "default", "s"), true},
		{"kcm deletes endpoints", res(kcm, "delete", "", "endpoints", "", "default", "s"), true},
		{"kcm creates endpoint slices", res(kcm, "create", discoveryGroup, "endpointslices", "", "default", ""), true},
		{"kcm updates endpoint slices", res(kcm, "update", discoveryGroup, "endpointslices", "", "default", "s"), true},
		{"kcm deletes endpoint slices", res(kcm, "delete", discoveryGroup, "endpointslices", "", "default", "s"), true},
		{"kcm patches nodes", res(kcm, "patch", "", "nodes", "", "", "n1"), true},
		{"kcm updates node status", res(kcm, "update", "", "nodes", "status", "", "n1"), true},
		{"kcm deletes nodes", res(kcm, "delete", "", "nodes", "", "", "n1"), true},
		{"kcm empties a namespace", res(kcm, "deletecollection", "apps", "deployments", "", "gone", ""), true},
		{"kcm lists a namespace's objects", res(kcm, "list", "example.com", "widgets", "", "gone", ""), true},
		{"kcm finalizes a namespace", res(kcm, "update", "", "namespaces", "finalize", "", "gone"), true},
		{"kcm patches namespace status", res(kcm, "patch", "", "namespaces", "status", "", "gone"), true},
		{"kcm deletes a namespace", res(kcm, "delete", "", "namespaces", "", "", "gone"), true},
		{"kcm collects garbage", res(kcm, "delete", "example.com", "widgets", "", "default", "w"), true},
		{"kcm rewrites owner references", res(kcm, "patch", "example.com", "widgets", "", "default", "w"), true},
		{"kcm creates service accounts", res(kcm, "create", "", "serviceaccounts", "", "default", ""), true},
		{"kcm publishes the root CA", res(kcm, "create", "", "configmaps", "", "default", ""), true},
		{"kcm updates the root CA", res(kcm, "update", "", "configmaps", "", "default", "kube-root-ca.crt"), true},
		{"kcm aggregates cluster roles", res(kcm, "update", rbacGroup, "clusterroles", "", "", "admin"), true},
		{"kcm escalates cluster roles", res(kcm, "escalate", rbacGroup, "clusterroles", "", "", "admin"), true},
		{"kcm updates quota status", res(kcm, "update", "", "resourcequotas", "status", "default", "q"), true},
		{"kcm approves CSRs", res(kcm, "update", certificatesGroup, "certificatesigningrequests", "approval", "", "c"), true},
		{"kcm signs CSRs", res(kcm, "update", certificatesGroup, "certificatesigningrequests", "status", "", "c"), true},
		{"kcm approves kubelet client certificates", res(kcm, "approve", certificatesGroup, "signers", "", "", "kubernetes.io/kube-apiserver-client-kubelet"), true},
		{"kcm signs kubelet serving certificates", res(kcm, "sign", certificatesGroup, "signers", "", "", "kubernetes.io/kubelet-serving"), true},
		{"kcm signs API client certificates", res(kcm, "sign", certificatesGroup, "signers", "", "", "kubernetes.io/kube-apiserver-client"), true},
		{"kcm signs for another signer", res(kcm, "sign", certificatesGroup, "signers", "", "", "example.com/other"), false},
		{"kcm reviews access", res(kcm, "create", authorizationGroup, "subjectaccessreviews", "", "", ""), true},
		{"kcm creates cluster role bindings", res(kcm, "create", rbacGroup, "clusterrolebindings", "", "", ""), false},
		{"kcm writes a pod's spec to exec", res(kcm, "create", "", "pods", "exec", "default", "p"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, reason, err := a.Authorize(context.Background(), tt.a)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if got := d == auth.Allow; got != tt.want {
				t.Errorf("allowed = %v (%s), want %v", got, reason, tt.want)
			}
		})
	}
}

// TestNodeRules checks what the system:node rules, which the Node
// authorizer applies to identified nodes, allow: every call a kubelet
// makes (kubelet/node, kubelet/agent, kubelet/certs) that the Node
// authorizer does not narrow itself, and nothing a kubelet has no need of.
func TestNodeRules(t *testing.T) {
	t.Parallel()
	node := auth.User{Name: "system:node:n1", Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
	res := resourceAttrs
	tests := []struct {
		name string
		a    auth.Attributes
		want bool
	}{
		{"kubelet creates its node", res(node, "create", "", "nodes", "", "", ""), true},
		{"kubelet updates node status", res(node, "update", "", "nodes", "status", "", "n1"), true},
		{"kubelet patches its node", res(node, "patch", "", "nodes", "", "", "n1"), true},
		{"kubelet renews its lease", res(node, "update", coordinationGroup, "leases", "", "kube-node-lease", "n1"), true},
		{"kubelet creates its lease", res(node, "create", coordinationGroup, "leases", "", "kube-node-lease", ""), true},
		{"kubelet creates a mirror pod", res(node, "create", "", "pods", "", "kube-system", ""), true},
		{"kubelet deletes a pod", res(node, "delete", "", "pods", "", "default", "p"), true},
		{"kubelet updates pod status", res(node, "update", "", "pods", "status", "default", "p"), true},
		{"kubelet patches pod status", res(node, "patch", "", "pods", "status", "default", "p"), true},
		{"kubelet evicts a pod", res(node, "create", "", "pods", "eviction", "default", "p"), true},
		{"kubelet reads a secret only through the Node authorizer", res(node, "get", "", "secrets", "", "default", "s"), false},
		{"kubelet reads a configmap only through the Node authorizer", res(node, "get", "", "configmaps", "", "default", "c"), false},
		{"kubelet reads a claim only through the Node authorizer", res(node, "get", "", "persistentvolumeclaims", "", "default", "c"), false},
		{"kubelet reads a volume only through the Node authorizer", res(node, "get", "", "persistentvolumes", "", "", "v"), false},
		{"kubelet gets the kubernetes service", res(node, "get", "", "services", "", "default", "kubernetes"), true},
		{"kubelet lists services", res(node, "list", "", "services", "", "", ""), true},
		{"kubelet gets endpoints", res(node, "get", "", "endpoints", "", "default", "s"), true},
		{"kubelet lists endpoints", res(node, "list", "", "endpoints", "", "", ""), false},
		{"kubelet lists endpoint slices", res(node, "list", discoveryGroup, "endpointslices", "", "", ""), false},
		{"kubelet creates a token only through the Node authorizer", res(node, "create", "", "serviceaccounts", "token", "default", "default"), false},
		{"kubelet creates a CSR", res(node, "create", certificatesGroup, "certificatesigningrequests", "", "", ""), true},
		{"kubelet gets its CSR", res(node, "get", certificatesGroup, "certificatesigningrequests", "", "", "csr-1"), true},
		{"kubelet watches CSRs", res(node, "watch", certificatesGroup, "certificatesigningrequests", "", "", ""), true},
		{"kubelet records an event", res(node, "create", "", "events", "", "default", ""), true},
		{"kubelet patches an event", res(node, "patch", "", "events", "", "default", "e"), true},
		{"kubelet reviews a token", res(node, "create", authenticationGroup, "tokenreviews", "", "", ""), true},
		{"kubelet reviews access", res(node, "create", authorizationGroup, "subjectaccessreviews", "", "", ""), true},
		{"kubelet reads runtime classes", res(node, "watch", nodeGroup, "runtimeclasses", "", "", ""), true},
		{"kubelet lists leases", res(node, "list", coordinationGroup, "leases", "", "kube-node-lease", ""), false},
		{"kubelet deletes a namespace", res(node, "delete", "", "namespaces", "", "", "default"), false},
		{"kubelet deletes a node", res(node, "delete", "", "nodes", "", "", "n2"), false},
		{"kubelet updates a pod spec", res(node, "update", "", "pods", "", "default", "p"), false},
		{"kubelet approves a CSR", res(node, "update", certificatesGroup, "certificatesigningrequests", "approval", "", "c"), false},
		{"kubelet execs into a pod", res(node, "create", "", "pods", "exec", "default", "p"), false},
	}
	rules := NodeRules()
	for _, tt := range tests {
		if got := RulesAllow(&tt.a, rules...); got != tt.want {
			t.Errorf("%s: allowed = %v, want %v", tt.name, got, tt.want)
		}
	}
	var role *rbacv1.ClusterRole
	for _, r := range Bootstrap().ClusterRoles {
		if r.Name == "system:node" {
			role = r
		}
	}
	if role == nil || !equality.Semantic.DeepEqual(role.Rules, rules) {
		t.Errorf("ClusterRole system:node is %+v, want the node rules", role)
	}
}

func TestBootstrapIsFresh(t *testing.T) {
	t.Parallel()
	p := Bootstrap()
	p.ClusterRoles[0].Rules[0].Verbs[0] = "changed"
	p.ClusterRoles[0].Labels["x"] = "y"
	q := Bootstrap()
	if q.ClusterRoles[0].Rules[0].Verbs[0] == "changed" || q.ClusterRoles[0].Labels["x"] == "y" {
		t.Error("a change to one Bootstrap result shows in the next")
	}
}
