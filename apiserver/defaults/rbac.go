package defaults

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// defaultSubjects gives User and Group subjects without an apiGroup the
// RBAC group, as upstream's defaulting does, so manifests that leave it
// out validate.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
