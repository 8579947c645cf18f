package rbac

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// controllerManagerRules are upstream's system:kube-controller-manager rules
// together with the rules of upstream's per-controller roles
// (system:controller:*) for the controllers kubebus runs: kubebus runs them
// all as the one user system:kube-controller-manager.
func controllerManagerRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		eventsRule(),
		// Leader election in kube-system.
		newRule("create").groups(coordinationGroup).resources("leases").rule(),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager").rule(),
		newRule("create").groups(legacyGroup).resources("endpoints").rule(),
		newRule("get", "update").groups(legacyGroup).resources("endpoints").names("kube-controller-manager").rule(),
		// The shared informers and the controllers' own identities.
		newRule("create").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
		newRule("delete").groups(legacyGroup).resources("secrets").rule(),
		newRule("get").groups(legacyGroup).resources("configmaps", "namespaces", "secrets", "serviceaccounts").rule(),
		newRule("update").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
		newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
		newRule("list", "watch").groups("*").resources("*").rule(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
	}
	rules = append(rules, garbageCollectorRules()...)
	rules = append(rules, namespaceControllerRules()...)
	rules = append(rules, workloadControllerRules()...)
	rules = append(rules, endpointsControllerRules()...)
	rules = append(rules, nodeControllerRules()...)
	rules = append(rules, accountControllerRules()...)
	rules = append(rules, certificateControllerRules()...)
	return rules
}

// garbageCollectorRules: the garbage collector reads and deletes anything
// and rewrites owner references.
func garbageCollectorRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").rule(),
	}
}

// namespaceControllerRules: the namespace controller empties a deleted
// namespace and finalizes it; the resource quota controller counts
// everything.
func namespaceControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").rule(),
		newRule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").rule(),
		newRule("patch").groups(legacyGroup).resources("namespaces/status").rule(),
		newRule("get", "list", "delete", "deletecollection").groups("*").resources("*").rule(),
		newRule("update").groups(legacyGroup).resources("resourcequotas/status").rule(),
	}
}

// workloadControllerRules: the deployment and replica set controllers.
func workloadControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "update", "patch").groups(appsGroup, extensionsGroup).resources("deployments").rule(),
		newRule("update").groups(appsGroup, extensionsGroup).resources("deployments/status", "deployments/finalizers").rule(),
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
		newRule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status", "replicasets/finalizers").rule(),
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(legacyGroup).resources("pods").rule(),
		// StatefulSets and DaemonSets, with their revision history.
		newRule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("statefulsets", "daemonsets").rule(),
		newRule("update").groups(appsGroup, extensionsGroup).resources("statefulsets/status", "statefulsets/finalizers",
			"daemonsets/status", "daemonsets/finalizers").rule(),
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup).resources("controllerrevisions").rule(),
		newRule("create").groups(legacyGroup).resources("pods/binding").rule(),
		newRule("get", "create", "delete", "update", "patch", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
		// Jobs, CronJobs and the TTL-after-finished controller.
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(batchGroup).resources("jobs", "cronjobs").rule(),
		newRule("update", "patch").groups(batchGroup).resources("jobs/status", "jobs/finalizers", "cronjobs/status", "cronjobs/finalizers").rule(),
		// Volumes: the binder, the local-path provisioner and the
		// protection controllers.
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(legacyGroup).resources("persistentvolumes").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("persistentvolumes/status", "persistentvolumeclaims/status").rule(),
		// create: the local-path provisioner ensures its default class.
		newRule("get", "list", "watch", "create").groups(storageGroup).resources("storageclasses").rule(),
		// The disruption controller keeps budgets' status.
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		newRule("update").groups(policyGroup).resources("poddisruptionbudgets/status").rule(),
		newRule("get").groups("*").resources("*/scale").rule(),
	}
}

// endpointsControllerRules: the endpoints and endpoint slice controllers.
func endpointsControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule(read...).groups(legacyGroup).resources("services", "pods", "nodes").rule(),
		newRule("get", "list", "create", "update", "delete").groups(legacyGroup).resources("endpoints").rule(),
		newRule("create").groups(legacyGroup).resources("endpoints/restricted").rule(),
		newRule("update").groups(legacyGroup).resources("services/finalizers", "endpoints/finalizers").rule(),
		newRule("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").rule(),
	}
}

// nodeControllerRules: node lifecycle (taints, conditions, evicting the
// pods of lost nodes) and node IPAM (pod CIDRs).
func nodeControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "update", "patch", "delete").groups(legacyGroup).resources("nodes").rule(),
		newRule("patch", "update").groups(legacyGroup).resources("nodes/status").rule(),
		newRule("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").rule(),
	}
}

// accountControllerRules: the ServiceAccount controller (a default account
// per namespace), the root CA publisher (kube-root-ca.crt in every
// namespace) and the clusterrole aggregation controller.
func accountControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("create").groups(legacyGroup).resources("serviceaccounts").rule(),
		newRule("create", "update").groups(legacyGroup).resources("configmaps").rule(),
		newRule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule(),
	}
}

// certificateControllerRules: approving and signing CSRs for the kubelet
// and API client signers, and cleaning up old CSRs.
func certificateControllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		newRule("update").groups(certificatesGroup).resources("certificatesigningrequests/approval", "certificatesigningrequests/status").rule(),
		newRule("approve", "sign").groups(certificatesGroup).resources("signers").names(
			certificatesv1.KubeAPIServerClientKubeletSignerName,
			certificatesv1.KubeletServingSignerName,
			certificatesv1.KubeAPIServerClientSignerName,
		).rule(),
	}
}
