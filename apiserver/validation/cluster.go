package validation

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Priority classes: user classes stop at one billion; the "system-" names
// are reserved for the two built-in classes and their fixed values.
const (
	highestUserPriority = int32(1000000000)
	systemClassPrefix   = "system-"
)

var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateMeta(&ns.ObjectMeta, false, apivalidation.NameIsDNSLabel)
	p := specPath.Child("finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), p.Index(i))...)
		errs = append(errs, validateKubeFinalizer(string(f), p.Index(i))...)
	}
	return errs
}

// validateNode validates a node: its taints, pod CIDRs and resources.
func validateNode(n *corev1.Node) field.ErrorList {
	errs := validateMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validateTaints(n.Spec.Taints, specPath.Child("taints"))...)
	cidrs := specPath.Child("podCIDRs")
	seen := map[string]bool{}
	for i, c := range n.Spec.PodCIDRs {
		errs = append(errs, validation.IsValidCIDRForLegacyField(cidrs.Index(i), c, true, nil)...)
		if seen[c] {
			errs = append(errs, field.Duplicate(cidrs.Index(i), c))
		}
		seen[c] = true
	}
	if c := n.Spec.PodCIDRs; len(c) > 2 || len(c) == 2 && isIPv6(prefixAddr(c[0])) == isIPv6(prefixAddr(c[1])) {
		errs = append(errs, field.Invalid(cidrs, c, "may specify no more than one CIDR for each IP family"))
	}
	status := field.NewPath("status")
	errs = append(errs, validateNodeQuantities(n.Status.Capacity, status.Child("capacity"))...)
	errs = append(errs, validateNodeQuantities(n.Status.Allocatable, status.Child("allocatable"))...)
	return errs
}

func prefixAddr(cidr string) string {
	addr, _, _ := strings.Cut(cidr, "/")
	return addr
}

// validateNodeUpdate adds to the create checks that pod CIDRs and the
// provider ID, once set, never change, and that addresses are unique.
func validateNodeUpdate(n, old *corev1.Node) field.ErrorList {
	errs := validateMetaUpdate(&n.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateNode(n)...)
	// A node stored with podCIDR alone (before the API server kept both)
	// has that one as its list, as upstream's conversion reads it.
	oldCIDRs := old.Spec.PodCIDRs
	if len(oldCIDRs) == 0 && old.Spec.PodCIDR != "" {
		oldCIDRs = []string{old.Spec.PodCIDR}
	}
	if len(oldCIDRs) > 0 && !apiequality.Semantic.DeepEqual(n.Spec.PodCIDRs, oldCIDRs) {
		errs = append(errs, field.Forbidden(specPath.Child("podCIDRs"), `node updates may not change podCIDR except from "" to valid`))
	}
	if old.Spec.ProviderID != "" && n.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(specPath.Child("providerID"), `node updates may not change providerID except from "" to valid`))
	}
	if n.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(specPath.Child("externalID"), "may not be updated"))
	}
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	return errs
}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := validateMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseTransitions"), *t, isNegativeMsg))
	}
	if s := l.Spec.Strategy; s != nil && *s != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(specPath.Child("strategy"), *s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
	}
	if ph := l.Spec.PreferredHolder; ph != nil && *ph != "" && (l.Spec.Strategy == nil || *l.Spec.Strategy == "") {
		errs = append(errs, field.Forbidden(specPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// validatePriorityClass validates a class: a user class may not exceed one
// billion or take a "system-" name. That at most one class is the global
// default needs the other classes and is the caller's check.
func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	errs := validateMeta(&pc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	if strings.HasPrefix(pc.Name, systemClassPrefix) {
		if err := checkSystemPriorityClass(pc); err != "" {
			errs = append(errs, field.Forbidden(metadataPath.Child("name"),
				fmt.Sprintf("priority class names with '%s' prefix are reserved for system use only. error: %s", systemClassPrefix, err)))
		}
	} else if pc.Value > highestUserPriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %d", highestUserPriority)))
	}
	if pp := pc.PreemptionPolicy; pp != nil {
		switch *pp {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(field.NewPath("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *pp, supportedPreemption))
		}
	}
	return errs
}

// checkSystemPriorityClass explains why pc is not one of the built-in
// classes, or returns "".
func checkSystemPriorityClass(pc *schedulingv1.PriorityClass) string {
	value, known := systemPriorityClasses[pc.Name]
	switch {
	case !known:
		return fmt.Sprintf("%v is not a known system priority class", pc.Name)
	case pc.Value != value:
		return fmt.Sprintf("value of %v PriorityClass must be %v", pc.Name, value)
	case pc.GlobalDefault:
		return fmt.Sprintf("globalDefault of %v PriorityClass must be false", pc.Name)
	}
	return ""
}

// validatePriorityClassUpdate adds to the create checks that the value and
// the preemption policy never change.
func validatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	errs := validateMetaUpdate(&pc.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePriorityClass(pc)...)
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}

// Limits of the fields of an event written by a new-style recorder.
const (
	maxReportingInstance = 128
	maxAction            = 128
	maxReason            = 128
	maxNote              = 1024
)

// validateEvent validates a core/v1 Event. An old-style event (no
// eventTime) must live in its object's namespace; a new-style one must also
// say who reported it and what happened.
func validateEvent(ev *corev1.Event) field.ErrorList {
	errs := validateMeta(&ev.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	nsPath := field.NewPath("involvedObject", "namespace")
	objNS := ev.InvolvedObject.Namespace
	if ev.EventTime.IsZero() {
		switch {
		case objNS == "" && ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault,
			objNS != "" && ev.Namespace != objNS:
			errs = append(errs, field.Invalid(nsPath, objNS, "does not match event.namespace"))
		}
		return errs
	}
	if objNS == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, objNS, "does not match event.namespace"))
	}
	reporter := field.NewPath("reportingComponent")
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(reporter, ""))
	} else {
		errs = append(errs, validateQualifiedName(ev.ReportingController, reporter)...)
	}
	for _, f := range []struct {
		name  string
		value string
		max   int
		req   bool
	}{
		{"reportingInstance", ev.ReportingInstance, maxReportingInstance, true},
		{"action", ev.Action, maxAction, true},
		{"reason", ev.Reason, maxReason, true},
		{"message", ev.Message, maxNote, false},
	} {
		p := field.NewPath(f.name)
		if f.req && f.value == "" {
			errs = append(errs, field.Required(p, ""))
		}
		if len(f.value) > f.max {
			errs = append(errs, field.TooLong(p, "", f.max))
		}
	}
	return errs
}
