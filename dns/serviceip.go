package dns

import (
	"fmt"
	"net/netip"
	"strings"
)

// ServiceIP returns the kube-dns Service's ClusterIP: the 10th address of
// the service cluster IP range (10.96.0.10 for 10.96.0.0/12), as
// kubeadm's. With a dual-stack range list ("v4,v6") the first is used.
func ServiceIP(serviceCIDR string) (netip.Addr, error) {
	first, _, _ := strings.Cut(serviceCIDR, ",")
	p, err := netip.ParsePrefix(strings.TrimSpace(first))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("dns: service range %q: %w", serviceCIDR, err)
	}
	p = p.Masked()
	if p.Addr().BitLen()-p.Bits() < 4 {
		return netip.Addr{}, fmt.Errorf("dns: service range %s has no 10th address", p)
	}
	a := p.Addr()
	for range 10 {
		a = a.Next()
	}
	return a, nil
}
