package printers

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers for cluster machinery: leases and priority classes.

func leaseColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn(),
	}
}

func leaseCells(l *coordinationv1.Lease, now time.Time) []interface{} {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []interface{}{l.Name, holder, age(l.CreationTimestamp, now)}
}

func priorityClassColumns() []metav1.TableColumnDefinition {
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Value", "integer", doc["value"]),
		column("Global-Default", "boolean", doc["globalDefault"]),
		ageColumn(),
		column("PreemptionPolicy", "string", doc["preemptionPolicy"]),
	}
}

func priorityClassCells(pc *schedulingv1.PriorityClass, now time.Time) []interface{} {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}
}
