package rbac

import (
	"errors"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Recreate is what Reconcile returns for a binding whose roleRef differs
// from the desired one. A roleRef cannot be changed, so the caller must
// delete the existing binding and create Object in its place.
type Recreate struct {
	runtime.Object
}

// Reconcile brings an existing bootstrap object up to date with the
// desired one, as upstream's reconciliation does at API server start. It
// returns the object to write and whether anything changed; existing and
// desired are not modified.
//
// An object annotated rbac.authorization.kubernetes.io/autoupdate: "false"
// is left as it is. Otherwise desired labels and annotations are added;
// a role gains the rules it misses (the rules it has beyond the desired
// ones are kept) and the desired aggregationRule selectors; a binding
// gains the subjects it misses and a ClusterRoleBinding loses those an
// older bootstrap policy bound and the current one retired
// (retiredSubjects). A binding whose roleRef differs comes back
// as a *Recreate holding the desired binding. Objects of different or
// unknown kinds come back unchanged.
func Reconcile(existing, desired runtime.Object) (updated runtime.Object, changed bool) {
	switch d := desired.(type) {
	case *rbacv1.ClusterRole:
		if e, ok := existing.(*rbacv1.ClusterRole); ok {
			return reconcileRole(reconciliation.ClusterRoleRuleOwner{ClusterRole: e}, reconciliation.ClusterRoleRuleOwner{ClusterRole: d})
		}
	case *rbacv1.Role:
		if e, ok := existing.(*rbacv1.Role); ok {
			return reconcileRole(reconciliation.RoleRuleOwner{Role: e}, reconciliation.RoleRuleOwner{Role: d})
		}
	case *rbacv1.ClusterRoleBinding:
		if e, ok := existing.(*rbacv1.ClusterRoleBinding); ok {
			e, retired := withoutRetiredSubjects(e)
			u, changed := reconcileBinding(reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: e}, reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: d})
			return u, changed || retired
		}
	case *rbacv1.RoleBinding:
		if e, ok := existing.(*rbacv1.RoleBinding); ok {
			return reconcileBinding(reconciliation.RoleBindingAdapter{RoleBinding: e}, reconciliation.RoleBindingAdapter{RoleBinding: d})
		}
	}
	return existing, false
}

// retiredSubjects are subjects older kubebus bootstrap policies bound
// that the current one does not, by ClusterRoleBinding: the whole group
// system:nodes held the system:node role, which the Node authorizer now
// grants to each identified node alone. Upstream keeps extra subjects;
// these come off, or any member of system:nodes, whatever its name,
// would keep every node's powers.
var retiredSubjects = map[string][]rbacv1.Subject{
	"system:node": {group(auth.NodesGroup)},
}

// withoutRetiredSubjects returns b without its retired subjects (a copy,
// and true, when it had any), unless it is annotated autoupdate "false".
func withoutRetiredSubjects(b *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, bool) {
	retired := retiredSubjects[b.Name]
	if len(retired) == 0 || b.Annotations[rbacv1.AutoUpdateAnnotationKey] == "false" {
		return b, false
	}
	isRetired := func(s rbacv1.Subject) bool {
		return slices.ContainsFunc(retired, func(r rbacv1.Subject) bool {
			return s.Kind == r.Kind && s.Name == r.Name && s.Namespace == r.Namespace
		})
	}
	if !slices.ContainsFunc(b.Subjects, isRetired) {
		return b, false
	}
	c := b.DeepCopy()
	c.Subjects = slices.DeleteFunc(c.Subjects, isRetired)
	return c, true
}

func reconcileRole(existing, desired reconciliation.RuleOwner) (runtime.Object, bool) {
	opts := reconciliation.ReconcileRoleOptions{Role: desired, Client: storedRole{existing}}
	res, err := opts.Run() // a dry run: only storedRole.Get is called
	if err != nil || res.Protected || res.Operation != reconciliation.ReconcileUpdate {
		return existing.GetObject(), false
	}
	return res.Role.GetObject(), true
}

func reconcileBinding(existing, desired reconciliation.RoleBinding) (runtime.Object, bool) {
	opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: desired, Client: storedBinding{existing}}
	res, err := opts.Run() // a dry run: only storedBinding.Get is called
	if err != nil || res.Protected {
		return existing.GetObject(), false
	}
	switch res.Operation {
	case reconciliation.ReconcileUpdate:
		return res.RoleBinding.GetObject(), true
	case reconciliation.ReconcileRecreate:
		return &Recreate{Object: desired.GetObject().DeepCopyObject()}, true
	}
	return existing.GetObject(), false
}

// errDryRun answers writes the reconciliation never makes: it runs without
// Confirm, so it only reads the stored object.
var errDryRun = errors.New("rbac: reconciliation is a dry run")

// storedRole serves the existing role to the upstream reconciliation.
type storedRole struct{ reconciliation.RuleOwner }

func (s storedRole) Get(string, string) (reconciliation.RuleOwner, error) { return s.RuleOwner, nil }
func (storedRole) Create(reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return nil, errDryRun
}
func (storedRole) Update(reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return nil, errDryRun
}

// storedBinding serves the existing binding to the upstream reconciliation.
type storedBinding struct{ reconciliation.RoleBinding }

func (s storedBinding) Get(string, string) (reconciliation.RoleBinding, error) {
	return s.RoleBinding, nil
}
func (storedBinding) Create(reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return nil, errDryRun
}
func (storedBinding) Update(reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return nil, errDryRun
}
func (storedBinding) Delete(string, string, types.UID) error { return errDryRun }
