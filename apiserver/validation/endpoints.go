package validation

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of an EndpointSlice.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
)

var supportedAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// validateEndpoints validates a core/v1 Endpoints object.
func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	errs := validateMeta(&ep.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	subsets := field.NewPath("subsets")
	for i, ss := range ep.Subsets {
		p := subsets.Index(i)
		// A subset without ports is fine: a headless service needs none.
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j, port := range ss.Ports {
			pp := p.Child("ports").Index(j)
			switch {
			case port.Name == "" && len(ss.Ports) > 1:
				errs = append(errs, field.Required(pp.Child("name"), ""))
			case port.Name != "":
				errs = append(errs, validateDNSLabel(port.Name, pp.Child("name"))...)
			}
			errs = append(errs, messages(pp.Child("port"), port.Port, validation.IsValidPortNum(int(port.Port)))...)
			errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
			if port.AppProtocol != nil {
				errs = append(errs, validateQualifiedName(*port.AppProtocol, pp.Child("appProtocol"))...)
			}
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, p *field.Path) field.ErrorList {
	errs := validateIP(a.IP, p.Child("ip"))
	if len(errs) == 0 {
		errs = validateNonSpecialIP(a.IP, p.Child("ip"))
	}
	if a.Hostname != "" {
		errs = append(errs, validateDNSLabel(a.Hostname, p.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateDNSSubdomain(*a.NodeName, p.Child("nodeName"))...)
	}
	return errs
}

// validateEndpointSlice validates a discovery/v1 EndpointSlice: its address
// type decides what an address may be.
func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateMeta(&es.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	typePath := field.NewPath("addressType")
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	case "":
		errs = append(errs, field.Required(typePath, ""))
	default:
		errs = append(errs, field.NotSupported(typePath, es.AddressType, supportedAddressTypes))
	}

	endpoints := field.NewPath("endpoints")
	if len(es.Endpoints) > maxSliceEndpoints {
		errs = append(errs, field.TooMany(endpoints, len(es.Endpoints), maxSliceEndpoints))
	} else {
		for i := range es.Endpoints {
			errs = append(errs, validateSliceEndpoint(&es.Endpoints[i], es.AddressType, endpoints.Index(i))...)
		}
	}

	ports := field.NewPath("ports")
	if len(es.Ports) > maxSlicePorts {
		return append(errs, field.TooMany(ports, len(es.Ports), maxSlicePorts))
	}
	names := map[string]bool{}
	for i, port := range es.Ports {
		p := ports.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, validateDNSLabel(name, p.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Port != nil {
			errs = append(errs, messages(p.Child("port"), *port.Port, validation.IsValidPortNum(int(*port.Port)))...)
		}
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.AppProtocol != nil {
			errs = append(errs, validateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}

func validateSliceEndpoint(ep *discoveryv1.Endpoint, addrType discoveryv1.AddressType, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	addrs := p.Child("addresses")
	switch n := len(ep.Addresses); {
	case n == 0:
		errs = append(errs, field.Required(addrs, "must contain at least 1 address"))
	case n > maxSliceAddresses:
		errs = append(errs, field.TooMany(addrs, n, maxSliceAddresses))
	}
	for i, a := range ep.Addresses {
		ap := addrs.Index(i)
		switch addrType {
		case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
			ipErrs := validateIP(a, ap)
			switch {
			case len(ipErrs) > 0:
				errs = append(errs, ipErrs...)
			case addrType == discoveryv1.AddressTypeIPv4 && isIPv6(a):
				errs = append(errs, field.Invalid(ap, a, "must be an IPv4 address"))
			case addrType == discoveryv1.AddressTypeIPv6 && !isIPv6(a):
				errs = append(errs, field.Invalid(ap, a, "must be an IPv6 address"))
			default:
				errs = append(errs, validateNonSpecialIP(a, ap)...)
			}
		case discoveryv1.AddressTypeFQDN:
			errs = append(errs, validation.IsFullyQualifiedDomainName(ap, a)...)
		}
	}
	if ep.NodeName != nil {
		errs = append(errs, validateDNSSubdomain(*ep.NodeName, p.Child("nodeName"))...)
	}
	if ep.Hostname != nil {
		errs = append(errs, validateDNSLabel(*ep.Hostname, p.Child("hostname"))...)
	}
	return errs
}

// validateEndpointSliceUpdate adds to the create checks that the address
// type never changes.
func validateEndpointSliceUpdate(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateMetaUpdate(&es.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateEndpointSlice(es)...)
	return append(errs, apivalidation.ValidateImmutableField(es.AddressType, old.AddressType, field.NewPath("addressType"))...)
}
