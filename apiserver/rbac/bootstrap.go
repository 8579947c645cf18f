package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Policy is a set of RBAC objects.
type Policy struct {
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
}

// Labels and annotations of every bootstrap object, as upstream: the label
// marks the defaults, the annotation lets Reconcile keep them current
// until an administrator sets it to "false".
const (
	BootstrapLabel      = "kubernetes.io/bootstrapping"
	BootstrapLabelValue = "rbac-defaults"
)

// Aggregation labels of the admin, edit and view roles.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Users of the kubebus components, as the names in their client
// certificates.
const (
	kubeProxyUser         = "system:kube-proxy"
	kubeDNSUser           = "system:kube-dns"
	kubeSchedulerUser     = "system:kube-scheduler"
	kubeControllerManager = "system:kube-controller-manager"
	monitoringGroup       = "system:monitoring"
)

// API groups the policy names.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	extensionsGroup     = "extensions"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = rbacv1.GroupName
	schedulingGroup     = "scheduling.k8s.io"
	storageGroup        = "storage.k8s.io"
)

// Verb sets.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = append(slices.Clone(read), write...)
)

// Bootstrap returns the default roles and bindings the API server keeps
// in place, after upstream's bootstrap policy: the user-facing cluster-admin,
// admin, edit and view (the last three aggregated from the
// system:aggregate-to-* roles by the clusterrole aggregation controller),
// the discovery and health roles, and the roles of the kubelets
// (system:node, bound to nobody: the Node authorizer applies its rules to
// each node), kube-proxy, the scheduler and the controller manager (which
// runs every kubebus controller as one user, so its role is the union of
// upstream's controller roles). Each call returns fresh objects.
func Bootstrap() Policy {
	p := Policy{
		ClusterRoles:        clusterRoles(),
		ClusterRoleBindings: clusterRoleBindings(),
		Roles:               namespaceRoles(),
		RoleBindings:        namespaceRoleBindings(),
	}
	for _, o := range p.ClusterRoles {
		addBootstrapMetadata(&o.ObjectMeta)
	}
	for _, o := range p.ClusterRoleBindings {
		addBootstrapMetadata(&o.ObjectMeta)
	}
	for _, o := range p.Roles {
		addBootstrapMetadata(&o.ObjectMeta)
	}
	for _, o := range p.RoleBindings {
		addBootstrapMetadata(&o.ObjectMeta)
	}
	return p
}

func addBootstrapMetadata(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[BootstrapLabel] = BootstrapLabelValue
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[rbacv1.AutoUpdateAnnotationKey] = "true"
}

func clusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", group(auth.SystemPrivilegedGroup)),
		clusterBinding("system:monitoring", group(monitoringGroup)),
		clusterBinding("system:discovery", group(auth.AllAuthenticated)),
		clusterBinding("system:basic-user", group(auth.AllAuthenticated)),
		clusterBinding("system:public-info-viewer", group(auth.AllAuthenticated), group(auth.AllUnauthenticated)),
		clusterBinding("system:service-account-issuer-discovery", group(auth.ServiceAccountsGroup)),
		// Bound to nobody, as upstream since 1.8: the Node authorizer
		// grants the system:node rules to identified nodes only
		// (system:node:NAME in system:nodes), never to the whole group.
		// Reconcile takes the group off a binding of an older kubebus.
		clusterBinding("system:node"),
		clusterBinding("system:node-proxier", user(kubeProxyUser)),
		clusterBinding("system:kube-dns", user(kubeDNSUser),
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceSystem, Name: "kube-dns"}),
		clusterBinding("system:kube-scheduler", user(kubeSchedulerUser)),
		clusterBinding("system:kube-controller-manager", user(kubeControllerManager)),
		// Lets the CSR approver approve a kubelet's renewal of its own
		// client certificate.
		clusterBinding(selfNodeClientRole, group(auth.NodesGroup)),
	}
}

// nodeLeaseNamespace holds the nodes' heartbeats and their proxies'
// records of what they programmed (bus/lifecycle).
const nodeLeaseNamespace = "kube-node-lease"

// namespaceRoles are upstream's roles in kube-system for the control plane,
// and kube-proxy's in kube-node-lease.
func namespaceRoles() []*rbacv1.Role {
	return []*rbacv1.Role{
		// Each node's proxy records what it programmed in its Lease
		// kube-proxy-<node> (proxy/record). RBAC cannot name the Leases
		// by prefix, so the rule covers the namespace; it grants neither
		// delete nor anything elsewhere.
		role(nodeLeaseNamespace, "system:node-proxier",
			newRule("get", "create", "update").groups(coordinationGroup).resources("leases").rule()),
		// The cluster DNS publishes the kube-dns Service's endpoints,
		// where it listens (kubebus dns --advertise-address), as
		// EndpointSlices in kube-system.
		role(metav1.NamespaceSystem, "system:kube-dns",
			newRule("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").rule()),
		role(metav1.NamespaceSystem, "extension-apiserver-authentication-reader",
			newRule(read...).groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication").rule()),
		role(metav1.NamespaceSystem, "system::leader-locking-kube-controller-manager",
			newRule("watch").groups(legacyGroup).resources("configmaps").rule(),
			newRule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-controller-manager").rule()),
		role(metav1.NamespaceSystem, "system::leader-locking-kube-scheduler",
			newRule("watch").groups(legacyGroup).resources("configmaps").rule(),
			newRule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-scheduler").rule()),
	}
}

func namespaceRoleBindings() []*rbacv1.RoleBinding {
	return []*rbacv1.RoleBinding{
		roleBinding(nodeLeaseNamespace, "system:node-proxier", "system:node-proxier", user(kubeProxyUser)),
		roleBinding(metav1.NamespaceSystem, "system:kube-dns", "system:kube-dns", user(kubeDNSUser)),
		roleBinding(metav1.NamespaceSystem, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user(kubeControllerManager), user(kubeSchedulerUser)),
		roleBinding(metav1.NamespaceSystem, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user(kubeControllerManager)),
		roleBinding(metav1.NamespaceSystem, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user(kubeSchedulerUser)),
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// aggregated returns a ClusterRole whose rules the aggregation controller
// gathers from the cluster roles labelled label=true.
func aggregated(name, label string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{label: "true"}},
		}},
	}
}

// labelled returns r with label=true, to be aggregated by the role that
// selects it.
func labelled(r *rbacv1.ClusterRole, label string) *rbacv1.ClusterRole {
	r.Labels = map[string]string{label: "true"}
	return r
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules}
}

func clusterBinding(roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
}

func roleBinding(namespace, name, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// ruleBuilder builds a PolicyRule with sorted fields, as upstream's.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) ruleBuilder {
	return ruleBuilder{rbacv1.PolicyRule{Verbs: sorted(verbs)}}
}

func (b ruleBuilder) groups(g ...string) ruleBuilder    { b.r.APIGroups = sorted(g); return b }
func (b ruleBuilder) resources(r ...string) ruleBuilder { b.r.Resources = sorted(r); return b }
func (b ruleBuilder) names(n ...string) ruleBuilder     { b.r.ResourceNames = sorted(n); return b }
func (b ruleBuilder) urls(u ...string) ruleBuilder      { b.r.NonResourceURLs = sorted(u); return b }
func (b ruleBuilder) rule() rbacv1.PolicyRule           { return b.r }

func sorted(v []string) []string {
	c := slices.Clone(v)
	slices.Sort(c)
	return c
}
