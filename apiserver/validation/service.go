package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxClientIPAffinitySeconds is the longest ClientIP session affinity.
const maxClientIPAffinitySeconds = 86400

var (
	supportedServiceTypes    = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	supportedAffinities      = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	supportedExternalPolicy  = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	supportedInternalPolicy  = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	supportedIPFamilies      = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	supportedIPFamilyPolicy  = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
	supportedTrafficDistribs = []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameNode, corev1.ServiceTrafficDistributionPreferSameZone}
)

// validateService validates a service. Node ports are checked for form
// only; whether they are in the node-port range is the allocator's concern.
func validateService(svc *corev1.Service) field.ErrorList {
	errs := validateMeta(&svc.ObjectMeta, true, apivalidation.NameIsDNS1035Label)
	spec := &svc.Spec
	headless := isHeadless(svc)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		for _, f := range []struct {
			set  bool
			name string
		}{{len(spec.ClusterIPs) > 0, "clusterIPs"}, {len(spec.IPFamilies) > 0, "ipFamilies"}, {spec.IPFamilyPolicy != nil, "ipFamilyPolicy"}} {
			if f.set {
				errs = append(errs, field.Forbidden(specPath.Child(f.name), "may not be set for ExternalName services"))
			}
		}
		// A CNAME may end in a dot.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname == "" {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		} else {
			errs = append(errs, validateDNSSubdomain(cname, specPath.Child("externalName"))...)
		}
	case corev1.ServiceTypeClusterIP:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, supportedServiceTypes))
	}

	errs = append(errs, validateServicePorts(spec, headless)...)
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, validateSessionAffinity(spec)...)
	errs = append(errs, validateClusterIPs(svc)...)
	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if ipErrs := validateIP(ip, p); len(ipErrs) > 0 {
			errs = append(errs, ipErrs...)
		} else {
			errs = append(errs, validateNonSpecialIP(ip, p)...)
		}
	}

	isLB := spec.Type == corev1.ServiceTypeLoadBalancer
	if len(spec.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("loadBalancerSourceRanges")
		if !isLB {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, cidr := range spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(cidr), true, nil)...)
		}
	}
	switch {
	case spec.AllocateLoadBalancerNodePorts != nil && !isLB:
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	case spec.AllocateLoadBalancerNodePorts == nil && isLB:
		errs = append(errs, field.Required(specPath.Child("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		p := specPath.Child("loadBalancerClass")
		if isLB {
			errs = append(errs, validateQualifiedName(*spec.LoadBalancerClass, p)...)
		} else {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	errs = append(errs, validateTrafficPolicies(svc)...)
	if td := spec.TrafficDistribution; td != nil && !slices.Contains(supportedTrafficDistribs, *td) {
		errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *td, supportedTrafficDistribs))
	}
	return errs
}

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// validateServicePorts checks each port and that no two ports share a
// port number, or a node port, for the same protocol.
func validateServicePorts(spec *corev1.ServiceSpec, headless bool) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	ports := map[string]bool{}
	nodePorts := map[string]bool{}
	for i, sp := range spec.Ports {
		p := specPath.Child("ports").Index(i)
		switch {
		case sp.Name == "" && len(spec.Ports) > 1:
			errs = append(errs, field.Required(p.Child("name"), ""))
		case sp.Name != "":
			errs = append(errs, validateDNSLabel(sp.Name, p.Child("name"))...)
			if names[sp.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), sp.Name))
			}
			names[sp.Name] = true
		}
		errs = append(errs, messages(p.Child("port"), sp.Port, validation.IsValidPortNum(int(sp.Port)))...)
		errs = append(errs, validateProtocol(sp.Protocol, p.Child("protocol"))...)
		errs = append(errs, validatePortNumOrName(sp.TargetPort, p.Child("targetPort"))...)
		if sp.AppProtocol != nil {
			errs = append(errs, validateQualifiedName(*sp.AppProtocol, p.Child("appProtocol"))...)
		}
		if sp.NodePort != 0 {
			np := p.Child("nodePort")
			if spec.Type == corev1.ServiceTypeClusterIP {
				errs = append(errs, field.Forbidden(np, "may not be used when `type` is 'ClusterIP'"))
			}
			errs = append(errs, messages(np, sp.NodePort, validation.IsValidPortNum(int(sp.NodePort)))...)
			key := fmt.Sprintf("%s/%d", sp.Protocol, sp.NodePort)
			if nodePorts[key] {
				errs = append(errs, field.Duplicate(np, sp.NodePort))
			}
			nodePorts[key] = true
		}
		key := fmt.Sprintf("%s/%d", sp.Protocol, sp.Port)
		if ports[key] {
			errs = append(errs, field.Duplicate(p, corev1.ServicePort{Protocol: sp.Protocol, Port: sp.Port}))
		}
		ports[key] = true
	}
	return errs
}

func validateSessionAffinity(spec *corev1.ServiceSpec) field.ErrorList {
	p := specPath.Child("sessionAffinity")
	cfgPath := specPath.Child("sessionAffinityConfig")
	switch spec.SessionAffinity {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			return field.ErrorList{field.Forbidden(cfgPath, "must not be set when session affinity is None")}
		}
	case corev1.ServiceAffinityClientIP:
		const when = "when session affinity type is ClientIP"
		cfg := spec.SessionAffinityConfig
		switch {
		case cfg == nil:
			return field.ErrorList{field.Required(cfgPath, when)}
		case cfg.ClientIP == nil:
			return field.ErrorList{field.Required(cfgPath.Child("clientIP"), when)}
		case cfg.ClientIP.TimeoutSeconds == nil:
			return field.ErrorList{field.Required(cfgPath.Child("clientIP", "timeoutSeconds"), when)}
		case *cfg.ClientIP.TimeoutSeconds <= 0 || *cfg.ClientIP.TimeoutSeconds > maxClientIPAffinitySeconds:
			return field.ErrorList{field.Invalid(cfgPath.Child("clientIP", "timeoutSeconds"), *cfg.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
		}
	default:
		return field.ErrorList{field.NotSupported(p, spec.SessionAffinity, supportedAffinities)}
	}
	return nil
}

// externallyAccessible reports whether traffic from outside the cluster
// reaches the service: node ports, a load balancer or external IPs.
func externallyAccessible(spec *corev1.ServiceSpec) bool {
	return spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0
}

// validateTrafficPolicies checks external and internal traffic policy and
// the health check node port that goes with externalTrafficPolicy Local. A
// missing health check port is not reported: it is allocated.
func validateTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	etp := specPath.Child("externalTrafficPolicy")
	switch {
	case !externallyAccessible(spec):
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etp, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	case spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etp, ""))
	case !slices.Contains(supportedExternalPolicy, spec.ExternalTrafficPolicy):
		errs = append(errs, field.NotSupported(etp, spec.ExternalTrafficPolicy, supportedExternalPolicy))
	}
	if hc := spec.HealthCheckNodePort; hc != 0 {
		p := specPath.Child("healthCheckNodePort")
		if spec.Type != corev1.ServiceTypeLoadBalancer || spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, field.Invalid(p, hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		} else {
			errs = append(errs, messages(p, hc, validation.IsValidPortNum(int(hc)))...)
		}
	}
	itp := specPath.Child("internalTrafficPolicy")
	switch {
	case spec.InternalTrafficPolicy != nil && !slices.Contains(supportedInternalPolicy, *spec.InternalTrafficPolicy):
		errs = append(errs, field.NotSupported(itp, *spec.InternalTrafficPolicy, supportedInternalPolicy))
	case spec.InternalTrafficPolicy == nil && (spec.Type == corev1.ServiceTypeClusterIP ||
		spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer):
		errs = append(errs, field.Required(itp, ""))
	}
	return errs
}

// validateClusterIPs checks clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy together: the singular field is the first of the plural,
// "None" stands alone, at most one address per family, in family order.
func validateClusterIPs(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		errs = append(errs, field.Required(ipsPath, ""))
	case spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	case spec.ClusterIP == "" && len(spec.ClusterIPs) > 0:
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}

	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		p := specPath.Child("ipFamilies").Index(i)
		if !slices.Contains(supportedIPFamilies, f) {
			errs = append(errs, field.NotSupported(p, f, supportedIPFamilies))
		}
		if seen[f] {
			errs = append(errs, field.Duplicate(p, f))
		}
		seen[f] = true
	}
	if pol := spec.IPFamilyPolicy; pol != nil && !slices.Contains(supportedIPFamilyPolicy, *pol) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *pol, supportedIPFamilyPolicy))
	}

	bad := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				bad = true
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		if ipErrs := validateIP(ip, ipsPath.Index(i)); len(ipErrs) > 0 {
			bad = true
			errs = append(errs, ipErrs...)
		}
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if bad {
		return errs
	}
	if len(spec.ClusterIPs) == 2 && isIPv6(spec.ClusterIPs[0]) == isIPv6(spec.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadless(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			switch f := spec.IPFamilies[i]; {
			case f == corev1.IPv4Protocol && isIPv6(ip):
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%d]`", i)))
			case f == corev1.IPv6Protocol && !isIPv6(ip):
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%d]`", i)))
			}
		}
	}
	return errs
}

// validateServiceUpdate adds to the create checks that allocated cluster IPs
// and their families are kept (a second family may be added or dropped),
// and that a load balancer keeps its class.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	errs := validateMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	spec, ospec := &svc.Spec, &old.Spec
	external := spec.Type == corev1.ServiceTypeExternalName || ospec.Type == corev1.ServiceTypeExternalName
	if !external && !(isHeadless(svc) && isHeadless(old)) {
		errs = append(errs, validateKeptPrimary(spec.ClusterIPs, ospec.ClusterIPs, spec.IPFamilyPolicy, "clusterIPs", "clusterIP")...)
	}
	if !external && isHeadless(svc) == isHeadless(old) && !isHeadless(svc) {
		errs = append(errs, validateKeptPrimary(spec.IPFamilies, ospec.IPFamilies, spec.IPFamilyPolicy, "ipFamilies", "ipFamily")...)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && ospec.Type == corev1.ServiceTypeLoadBalancer {
		if n, o := spec.LoadBalancerClass, ospec.LoadBalancerClass; (n == nil) != (o == nil) || n != nil && *n != *o {
			errs = append(errs, field.Invalid(specPath.Child("loadBalancerClass"), n, "may not change once set"))
		}
	}
	return append(errs, validateService(svc)...)
}

// validateKeptPrimary checks a dual-stack list on update: the first entry
// never changes once set; the second may be added, or dropped when the
// policy becomes SingleStack.
func validateKeptPrimary[T ~string](values, old []T, policy *corev1.IPFamilyPolicy, name, singular string) field.ErrorList {
	p := specPath.Child(name)
	switch {
	case len(values) == len(old):
		var errs field.ErrorList
		for i := range old {
			if values[i] != old[i] {
				errs = append(errs, field.Invalid(p.Index(i), values, "may not change once set"))
			}
		}
		return errs
	case len(values) < len(old):
		if len(values) == 0 {
			return field.ErrorList{field.Invalid(p.Index(0), values, fmt.Sprintf("primary %s can not be unset", singular))}
		}
		var errs field.ErrorList
		if values[0] != old[0] {
			errs = append(errs, field.Invalid(p.Index(0), values, "may not change once set"))
		}
		if len(values) == 1 && (policy == nil || *policy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(specPath.Child("ipFamilyPolicy"), policy,
				fmt.Sprintf("must be set to 'SingleStack' when releasing the secondary %s", singular)))
		}
		return errs
	case len(old) > 0 && values[0] != old[0]:
		return field.ErrorList{field.Invalid(p.Index(0), values, "may not change once set")}
	}
	return nil
}
