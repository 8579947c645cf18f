package validation

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages shared by several checks.
const (
	isNegativeMsg    = "must be greater than or equal to 0"
	isNotPositiveMsg = "must be greater than zero"
	immutableMsg     = "field is immutable"
)

var supportedProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

// messages turns the messages of a util/validation check into Invalid errors.
func messages(path *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func validateDNSLabel(value string, path *field.Path) field.ErrorList {
	return messages(path, value, validation.IsDNS1123Label(value))
}

func validateDNSSubdomain(value string, path *field.Path) field.ErrorList {
	return messages(path, value, validation.IsDNS1123Subdomain(value))
}

func validateQualifiedName(value string, path *field.Path) field.ErrorList {
	return messages(path, value, validation.IsQualifiedName(value))
}

func validateNonnegative(value int64, path *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(path, value, isNegativeMsg)}
	}
	return nil
}

// validatePortNumOrName checks a port given as a number or as a named port.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	switch port.Type {
	case intstr.Int:
		return messages(path, port.IntValue(), validation.IsValidPortNum(port.IntValue()))
	case intstr.String:
		return messages(path, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return field.ErrorList{field.InternalError(path, fmt.Errorf("unknown type: %v", port.Type))}
}

// validateProtocol requires a supported port protocol.
func validateProtocol(p corev1.Protocol, path *field.Path) field.ErrorList {
	switch p {
	case "":
		return field.ErrorList{field.Required(path, "")}
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, supportedProtocols)}
}

// validateIP checks an IP address field that predates strict IP parsing:
// any valid address without leading zeros, canonical or not.
func validateIP(value string, path *field.Path) field.ErrorList {
	return validation.IsValidIPForLegacyField(path, value, true, nil)
}

// validateNonSpecialIP rejects addresses that cannot be an endpoint or an
// external IP: unspecified, loopback and link-local.
func validateNonSpecialIP(value string, path *field.Path) field.ErrorList {
	addr, err := netip.ParseAddr(value)
	if err != nil {
		return nil // reported by validateIP
	}
	switch {
	case addr.IsUnspecified():
		return field.ErrorList{field.Invalid(path, value, fmt.Sprintf("may not be unspecified (%v)", value))}
	case addr.IsLoopback():
		return field.ErrorList{field.Invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case addr.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case addr.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(path, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

// isIPv6 reports whether value parses as an IPv6 (not IPv4) address.
func isIPv6(value string) bool {
	addr, err := netip.ParseAddr(value)
	return err == nil && addr.Is6() && !addr.Is4In6()
}

// validateLocalDescendingPath requires a relative path that stays below its
// base: not absolute and without "..".
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	errs = append(errs, validatePathNoBacksteps(p, fldPath)...)
	return errs
}

// validatePathNoBacksteps rejects a path with a ".." element.
func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// sortedKeys returns the keys of m in order, so that errors about map
// entries come out in the same order every time.
func sortedKeys[M ~map[K]V, K ~string, V any](m M) []K {
	return slices.Sorted(maps.Keys(m))
}
