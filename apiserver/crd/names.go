package crd

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// AcceptNames decides which of crd's requested names may be served, given
// the other CRDs (others excludes crd) and the built-in rows, as upstream's
// NamingConditionController does. It returns the names for
// status.acceptedNames and the NamesAccepted condition. Names already
// accepted on crd stay accepted.
func AcceptNames(crd *apiextensionsv1.CustomResourceDefinition, others []*apiextensionsv1.CustomResourceDefinition,
	builtin []*resource.Resource) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := namesInGroup(crd, others, builtin)

	cond := apiextensionsv1.CustomResourceDefinitionCondition{
		Type:   apiextensionsv1.NamesAccepted,
		Status: apiextensionsv1.ConditionUnknown,
	}
	conflict := func(reason string, err error) {
		cond.Status = apiextensionsv1.ConditionFalse
		cond.Reason = reason
		cond.Message = err.Error()
	}
	requested := crd.Spec.Names
	accepted := crd.Status.AcceptedNames
	names := *accepted.DeepCopy()

	if err := acceptedOrFresh(requested.Plural, accepted.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = requested.Plural
	}
	if err := acceptedOrFresh(requested.Singular, accepted.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = requested.Singular
	}
	if !slices.Equal(requested.ShortNames, accepted.ShortNames) {
		var errs []error
		ours := sets.New(accepted.ShortNames...)
		for _, s := range requested.ShortNames {
			if ours.Has(s) {
				continue
			}
			if err := acceptedOrFresh(s, "", resources); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			conflict("ShortNamesConflict", utilerrors.NewAggregate(errs))
		} else {
			names.ShortNames = requested.ShortNames
		}
	}
	if err := acceptedOrFresh(requested.Kind, accepted.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = requested.Kind
	}
	if err := acceptedOrFresh(requested.ListKind, accepted.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories

	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status = apiextensionsv1.ConditionTrue
		cond.Reason = "NoConflicts"
		cond.Message = "no conflicts found"
	}
	return names, cond
}

// namesInGroup returns the resource names and kinds the other CRDs and the
// built-in rows of crd's group have taken. Like upstream it tolerates crd
// among others: its own accepted names never conflict with themselves.
func namesInGroup(crd *apiextensionsv1.CustomResourceDefinition, others []*apiextensionsv1.CustomResourceDefinition,
	builtin []*resource.Resource) (resources, kinds sets.Set[string]) {
	resources, kinds = sets.New[string](), sets.New[string]()
	group := crd.Spec.Group
	for _, o := range others {
		if o == nil || o.Spec.Group != group {
			continue
		}
		n := o.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	for _, r := range builtin {
		if r == nil || r.GVK.Group != group {
			continue
		}
		resources.Insert(r.Plural, r.Singular)
		resources.Insert(r.ShortNames...)
		kinds.Insert(r.GVK.Kind, r.GVK.Kind+"List")
	}
	resources.Delete("")
	kinds.Delete("")
	return resources, kinds
}

func acceptedOrFresh(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}
