package defaults

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// defaultPodDisruptionBudget: a budget that sets neither minAvailable nor
// maxUnavailable keeps one pod available, as upstream.
func defaultPodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) {
	if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
		one := intstr.FromInt32(1)
		pdb.Spec.MinAvailable = &one
	}
}
