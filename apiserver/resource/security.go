package resource

import (
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// securityRows are the resources of who may do what: RBAC, quotas and
// limits, certificate signing requests, and the create-only reviews
// (access reviews, token reviews) that are answered, never stored.
func securityRows() []*Resource {
	rbac := rbacv1.SchemeGroupVersion.WithKind
	core := corev1.SchemeGroupVersion.WithKind
	return []*Resource{
		{GVK: rbac("Role"), Plural: "roles", Singular: "role", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} }},
		{GVK: rbac("ClusterRole"), Plural: "clusterroles", Singular: "clusterrole",
			New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{GVK: rbac("RoleBinding"), Plural: "rolebindings", Singular: "rolebinding", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},
		{GVK: rbac("ClusterRoleBinding"), Plural: "clusterrolebindings", Singular: "clusterrolebinding",
			New: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		{GVK: core("LimitRange"), Plural: "limitranges", Singular: "limitrange", Namespaced: true, ShortNames: []string{"limits"},
			New: func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} }},
		{GVK: core("ResourceQuota"), Plural: "resourcequotas", Singular: "resourcequota", Namespaced: true, ShortNames: []string{"quota"},
			Subresources: []Subresource{Status},
			New:          func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{} }},
		{GVK: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), Plural: "certificatesigningrequests", Singular: "certificatesigningrequest",
			ShortNames: []string{"csr"}, Subresources: []Subresource{Status, Approval},
			New: func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} }, NewList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
			PrepareForCreate: func(o runtime.Object) {
				o.(*certificatesv1.CertificateSigningRequest).Status = certificatesv1.CertificateSigningRequestStatus{}
			},
			PrepareForCreateBy: csrRequester,
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": o.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
			}},
		// Create-only: answered by the server, never stored.
		{GVK: authzv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), Plural: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview", CreateOnly: true,
			New: func() runtime.Object { return &authzv1.SelfSubjectAccessReview{} }, NewList: func() runtime.Object { return &authzv1.SelfSubjectAccessReview{} }},
		{GVK: authzv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"), Plural: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview", CreateOnly: true,
			New: func() runtime.Object { return &authzv1.SelfSubjectRulesReview{} }, NewList: func() runtime.Object { return &authzv1.SelfSubjectRulesReview{} }},
		{GVK: authzv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), Plural: "subjectaccessreviews", Singular: "subjectaccessreview", CreateOnly: true,
			New: func() runtime.Object { return &authzv1.SubjectAccessReview{} }, NewList: func() runtime.Object { return &authzv1.SubjectAccessReview{} }},
		{GVK: authzv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"), Plural: "localsubjectaccessreviews", Singular: "localsubjectaccessreview", Namespaced: true, CreateOnly: true,
			New: func() runtime.Object { return &authzv1.LocalSubjectAccessReview{} }, NewList: func() runtime.Object { return &authzv1.LocalSubjectAccessReview{} }},
		{GVK: authnv1.SchemeGroupVersion.WithKind("TokenReview"), Plural: "tokenreviews", Singular: "tokenreview", CreateOnly: true,
			New: func() runtime.Object { return &authnv1.TokenReview{} }, NewList: func() runtime.Object { return &authnv1.TokenReview{} }},
		{GVK: authnv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), Plural: "selfsubjectreviews", Singular: "selfsubjectreview", CreateOnly: true,
			New: func() runtime.Object { return &authnv1.SelfSubjectReview{} }, NewList: func() runtime.Object { return &authnv1.SelfSubjectReview{} }},
	}
}

// csrRequester records the requesting user in a CSR's spec, as upstream's
// strategy does: what a client wrote there is replaced.
func csrRequester(o runtime.Object, u auth.User) {
	csr := o.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID = u.Name, u.UID
	csr.Spec.Groups = append([]string(nil), u.Groups...)
	csr.Spec.Extra = nil
	for k, v := range u.Extra {
		if csr.Spec.Extra == nil {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		csr.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
	}
}
