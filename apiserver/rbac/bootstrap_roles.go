package rbac

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Names of the certificate roles the CSR approver checks with an access
// review: creating certificatesigningrequests/nodeclient (a first kubelet
// client certificate) or /selfnodeclient (a kubelet renewing its own).
const (
	nodeClientRole     = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	selfNodeClientRole = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
)

func clusterRoles() []*rbacv1.ClusterRole {
	roles := []*rbacv1.ClusterRole{
		// A root role that can do anything.
		clusterRole("cluster-admin",
			newRule("*").groups("*").resources("*").rule(),
			newRule("*").urls("*").rule()),
		// Enough to tell whether the server is ready and to discover the
		// API for negotiation.
		clusterRole("system:discovery",
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*").rule()),
		// Health and metrics for monitoring.
		clusterRole("system:monitoring",
			newRule("get").urls("/metrics", "/metrics/slis",
				"/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*").rule()),
		// What a user may learn about themselves.
		clusterRole("system:basic-user",
			newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			newRule("create").groups(authenticationGroup).resources("selfsubjectreviews").rule()),
		// Insensitive information, anonymous included.
		clusterRole("system:public-info-viewer",
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule()),
		// The issuer discovery documents of ServiceAccount tokens.
		clusterRole("system:service-account-issuer-discovery",
			newRule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/").rule()),
		// Authentication and authorization delegation.
		clusterRole("system:auth-delegator",
			newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule()),

		// The user-facing roles: admin is edit plus granting permissions in
		// a namespace; edit is every user-level action in a namespace; view
		// is reading what does not escalate.
		aggregated("admin", aggregateToAdmin),
		labelled(aggregated("edit", aggregateToEdit), aggregateToAdmin),
		labelled(aggregated("view", aggregateToView), aggregateToEdit),
		labelled(clusterRole("system:aggregate-to-admin", aggregateToAdminRules()...), aggregateToAdmin),
		labelled(clusterRole("system:aggregate-to-edit", aggregateToEditRules()...), aggregateToEdit),
		labelled(clusterRole("system:aggregate-to-view", aggregateToViewRules()...), aggregateToView),

		clusterRole("system:node", NodeRules()...),
		clusterRole("system:node-bootstrapper",
			newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule()),
		clusterRole("system:node-proxier",
			newRule("list", "watch").groups(legacyGroup).resources("services", "endpoints").rule(),
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
			newRule("list", "watch").groups(discoveryGroup).resources("endpointslices").rule()),
		// The cluster DNS (kubebus dns) reads what it answers from the
		// bus; the role grants what upstream's system:kube-dns and
		// CoreDNS's system:coredns do, for clients that read the API.
		clusterRole("system:kube-dns",
			newRule("list", "watch").groups(legacyGroup).resources("endpoints", "services", "pods", "namespaces").rule(),
			newRule("list", "watch").groups(discoveryGroup).resources("endpointslices").rule()),
		clusterRole("system:kube-scheduler", schedulerRules()...),
		clusterRole("system:kube-controller-manager", controllerManagerRules()...),

		clusterRole(nodeClientRole,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient").rule()),
		clusterRole(selfNodeClientRole,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient").rule()),
	}
	for _, signer := range []string{
		certificatesv1.KubeAPIServerClientSignerName,
		certificatesv1.KubeAPIServerClientKubeletSignerName,
		certificatesv1.KubeletServingSignerName,
	} {
		roles = append(roles, clusterRole(approverRoleName(signer),
			newRule("approve").groups(certificatesGroup).resources("signers").names(signer).rule()))
	}
	return roles
}

// approverRoleName is upstream's name of the role that may approve CSRs
// for signer: "kubernetes.io/kubelet-serving" gives
// "system:certificates.k8s.io:kubelet-serving-approver".
func approverRoleName(signer string) string {
	return "system:certificates.k8s.io:" + signer[len("kubernetes.io/"):] + "-approver"
}

// eventsRule is writing events, in both API groups.
func eventsRule() rbacv1.PolicyRule {
	return newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

func aggregateToAdminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
		newRule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").rule(),
	}
}

func aggregateToEditRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Reading what escalates.
		newRule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").rule(),
		newRule("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),

		newRule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").rule(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		newRule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events").rule(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),

		newRule(write...).groups(appsGroup).resources("statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale").rule(),
		newRule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
		newRule(write...).groups(batchGroup).resources("jobs", "cronjobs").rule(),
		newRule(write...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
			"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies").rule(),
		newRule(write...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		newRule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses").rule(),
		newRule(readWrite...).groups(coordinationGroup).resources("leases").rule(),
	}
}

func aggregateToViewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
		newRule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").rule(),
		// Reading namespaces in a namespace is reading that namespace: a
		// sign of which namespaces one has access to.
		newRule(read...).groups(legacyGroup).resources("namespaces").rule(),
		newRule(read...).groups(discoveryGroup).resources("endpointslices").rule(),
		newRule(read...).groups(appsGroup).resources("controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").rule(),
		newRule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
		newRule(read...).groups(batchGroup).resources("jobs", "jobs/status", "cronjobs", "cronjobs/status").rule(),
		newRule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale", "networkpolicies").rule(),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
		newRule(read...).groups(networkingGroup).resources("ingresses", "ingresses/status", "networkpolicies").rule(),
	}
}

// NodeRules are upstream's NodeRules: what a kubelet may do beyond what
// the Node authorizer grants from its graph (the secrets, configmaps,
// volume claims and volumes of the node's pods and their ServiceAccount
// tokens). The Node authorizer evaluates them itself for identified
// nodes (system:node:NAME in system:nodes), after narrowing pods, nodes,
// leases and csinodes to the node's own; the ClusterRole system:node
// holds them but is bound to nobody, as upstream. Each call returns fresh
// rules.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Checking API access; these creates change nothing.
		newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),
		// Service environment variables.
		newRule(read...).groups(legacyGroup).resources("services").rule(),
		// Registering the node and reporting its status (the Node
		// authorizer narrows reads to the node's own Node,
		// NodeRestriction writes).
		newRule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes/status").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes").rule(),
		newRule("create", "update", "patch").groups(legacyGroup).resources("events").rule(),
		// Pods bound to the node (the Node authorizer narrows get to
		// them and list and watch to a spec.nodeName field selector),
		// mirror pods of static pods, their status and evictions.
		newRule(read...).groups(legacyGroup).resources("pods").rule(),
		newRule("create", "delete").groups(legacyGroup).resources("pods").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("pods/status").rule(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		// What pods use (secrets and configmaps, volume claims and
		// volumes, ServiceAccount tokens) is not here, unlike upstream's:
		// the Node authorizer allows exactly those the node's pods
		// reference, and a binding of this role grants none.
		newRule("get").groups(legacyGroup).resources("endpoints").rule(),
		// Certificates: the kubelet's client and serving certificates.
		newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		// The node's heartbeat in kube-node-lease (the Node authorizer
		// narrows it to the node's own Lease).
		newRule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").rule(),
		newRule(read...).groups(nodeGroup).resources("runtimeclasses").rule(),
		newRule("get").groups(storageGroup).resources("volumeattachments").rule(),
		newRule(read...).groups(storageGroup).resources("csidrivers").rule(),
		newRule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes").rule(),
	}
}

func schedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		// Leader election.
		newRule("create").groups(coordinationGroup).resources("leases").rule(),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-scheduler").rule(),
		newRule("create").groups(legacyGroup).resources("endpoints").rule(),
		newRule("get", "update").groups(legacyGroup).resources("endpoints").names("kube-scheduler").rule(),
		// Scheduling: reading the cluster, binding pods, recording why a
		// pod is pending, and preempting.
		newRule(read...).groups(legacyGroup).resources("nodes").rule(),
		newRule("delete", "get", "list", "watch").groups(legacyGroup).resources("pods").rule(),
		newRule("create").groups(legacyGroup).resources("bindings", "pods/binding").rule(),
		newRule("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
		newRule(read...).groups(legacyGroup).resources("replicationcontrollers", "services", "namespaces").rule(),
		newRule(read...).groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
		newRule(read...).groups(appsGroup).resources("statefulsets").rule(),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		newRule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		// Volume binding, as upstream's system:volume-scheduler: a
		// WaitForFirstConsumer claim learns its node from the scheduler.
		newRule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		newRule(read...).groups(appsGroup).resources("daemonsets").rule(),
		newRule(read...).groups(schedulingGroup).resources("priorityclasses").rule(),
		newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
		newRule(read...).groups(storageGroup).resources("csinodes", "csidrivers", "csistoragecapacities", "storageclasses").rule(),
	}
}
