package printers

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Printer for policy/v1 PodDisruptionBudgets, with upstream's columns.

func podDisruptionBudgetColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Min Available", "string", "The minimum number of pods that must be available."),
		column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		ageColumn(),
	}
}

func podDisruptionBudgetCells(pdb *policyv1.PodDisruptionBudget, now time.Time) []interface{} {
	orNA := func(v *intstr.IntOrString) string {
		if v == nil {
			return "N/A"
		}
		return v.String()
	}
	return []interface{}{
		pdb.Name,
		orNA(pdb.Spec.MinAvailable),
		orNA(pdb.Spec.MaxUnavailable),
		int64(pdb.Status.DisruptionsAllowed),
		age(pdb.CreationTimestamp, now),
	}
}
