package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResources checks a container's requests and limits: known or
// fully qualified resource names, no negative quantities, whole numbers for
// extended resources, and requests within limits. Resources that cannot be
// overcommitted (extended resources, huge pages) need a limit equal to the
// request.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	for _, name := range sortedKeys(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
	}
	for _, name := range sortedKeys(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
		limit, ok := r.Limits[name]
		switch {
		case ok && !overcommitAllowed(name) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case ok && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !ok && !overcommitAllowed(name):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

// validateQuantity rejects negative quantities, and fractions of resources
// counted in whole units.
func validateQuantity(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), isNegativeMsg)}
	}
	if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be an integer")}
	}
	return nil
}

// validateContainerResourceName accepts cpu, memory, ephemeral-storage,
// huge pages, kubernetes.io/ resources and extended resources
// (example.com/gpu).
func validateContainerResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return messages(path, name, msgs)
	}
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResource(name) {
			return field.ErrorList{field.Invalid(path, name, "must be a standard resource for containers")}
		}
		return nil
	}
	if !isNativeResource(name) && !isExtendedResource(name) {
		return field.ErrorList{field.Invalid(path, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

func isStandardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return isHugePages(name)
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isNativeResource reports whether name belongs to Kubernetes: it has no
// domain or a kubernetes.io one.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// isExtendedResource reports whether name is a resource advertised by a
// device plugin or an operator: outside kubernetes.io, and usable in a quota
// as "requests.<name>".
func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

// validateNodeQuantities checks the capacity or allocatable of a node.
func validateNodeQuantities(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(list) {
		q := list[name]
		p := path.Key(string(name))
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), isNegativeMsg))
		} else if (name == corev1.ResourcePods || isExtendedResource(name)) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be an integer"))
		}
	}
	return errs
}
