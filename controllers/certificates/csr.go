package certificates

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/apiserver/pki"
)

// Node identities.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// The checks' errors, as upstream words them.
var (
	errOrgNotSystemNodes = errors.New("subject organization is not system:nodes")
	//lint:ignore ST1005 upstream's message, word for word
	errCNNotSystemNode    = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPSANRequired = errors.New("DNS or IP subjectAltName is required")
	errDNSSANNotAllowed   = errors.New("DNS subjectAltNames are not allowed")
	//lint:ignore ST1005 upstream's message, word for word
	errEmailSANNotAllowed = errors.New("Email subjectAltNames are not allowed")
	errIPSANNotAllowed    = errors.New("IP subjectAltNames are not allowed")
	errURISANNotAllowed   = errors.New("URI subjectAltNames are not allowed")
)

// ErrNotNodeName means a kubelet serving CSR names a DNS name or an IP
// address that is not its node's: the approver leaves such a CSR pending.
var ErrNotNodeName = errors.New("not one of the node's names or addresses")

// The usages a kubelet's certificates may have: key encipherment only
// matters to RSA keys, so both sets are accepted.
var (
	kubeletClientUsages      = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	kubeletClientUsagesNoRSA = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	kubeletServingUsages     = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	kubeletServingNoRSA      = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
)

// ParseRequest decodes the PEM CERTIFICATE REQUEST of a CSR's spec.request.
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	return pki.ParseCSR(pemBytes)
}

// ValidateKubeletClient reports why req with usages is not a kubelet's
// client certificate request: subject O exactly [system:nodes], CN
// system:node:<name>, no subject alternative names, usages digital
// signature and client auth (key encipherment optional).
func ValidateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return errOrgNotSystemNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSSANNotAllowed
	case len(req.EmailAddresses) > 0:
		return errEmailSANNotAllowed
	case len(req.IPAddresses) > 0:
		return errIPSANNotAllowed
	case len(req.URIs) > 0:
		return errURISANNotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix) {
		return errCNNotSystemNode
	}
	if u := sets.New(usages...); !u.Equal(kubeletClientUsages) && !u.Equal(kubeletClientUsagesNoRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletClientUsages))
	}
	return nil
}

// ValidateKubeletServing reports why req with usages is not a kubelet's
// serving certificate request: subject O exactly [system:nodes], CN
// system:node:<name>, at least one and only DNS and IP subject
// alternative names, usages digital signature and server auth (key
// encipherment optional).
func ValidateKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return errOrgNotSystemNodes
	}
	if err := checkServingNameKinds(req); err != nil {
		return err
	}
	if u := sets.New(usages...); !u.Equal(kubeletServingUsages) && !u.Equal(kubeletServingNoRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletServingUsages))
	}
	if !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix) {
		return errCNNotSystemNode
	}
	return nil
}

// checkServingNameKinds requires a serving request to name at least one
// DNS name or IP address, and no email address nor URI.
func checkServingNameKinds(req *x509.CertificateRequest) error {
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errDNSOrIPSANRequired
	case len(req.EmailAddresses) > 0:
		return errEmailSANNotAllowed
	case len(req.URIs) > 0:
		return errURISANNotAllowed
	}
	return nil
}

// ValidateKubeletServingNames reports why the subject alternative names
// of req, a kubelet's serving certificate request, are not all node's
// own: every DNS name must be the node's name or one of its Hostname,
// InternalDNS or ExternalDNS addresses (compared case-insensitively, as
// DNS names are), every IP address one of its InternalIP or ExternalIP
// addresses; there must be at least one of them, and no email address nor
// URI. The error of a name that is not the node's wraps ErrNotNodeName.
func ValidateKubeletServingNames(req *x509.CertificateRequest, node *corev1.Node) error {
	if err := checkServingNameKinds(req); err != nil {
		return err
	}
	dnsNames, ips := nodeNames(node)
	for _, name := range req.DNSNames {
		if strings.Contains(name, "*") {
			// A node's name has none; an address it claims may (it writes
			// its own status), and a wildcard would match other hosts.
			return fmt.Errorf("DNS subjectAltName %q: a wildcard: %w", name, ErrNotNodeName)
		}
		if !slices.ContainsFunc(dnsNames, func(n string) bool { return strings.EqualFold(n, name) }) {
			return fmt.Errorf("DNS subjectAltName %q: %w", name, ErrNotNodeName)
		}
	}
	for _, ip := range req.IPAddresses {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok || !slices.Contains(ips, addr.Unmap()) {
			return fmt.Errorf("IP subjectAltName %s: %w", ip, ErrNotNodeName)
		}
	}
	return nil
}

// ErrAPIServerName means a kubelet serving CSR names the API server: one
// of the names in-cluster clients reach it by, or the IP of the
// kubernetes Service. Even when a node claims it as its own address, the
// cluster CA must not vouch for a node under it.
var ErrAPIServerName = errors.New("a name of the API server")

// ValidateNotAPIServer reports why req names the API server: the DNS
// names kubernetes, kubernetes.default, kubernetes.default.svc and
// kubernetes.default.svc.<cluster domain>, or an address of serviceIPs
// (the kubernetes Service's cluster IPs). The error wraps
// ErrAPIServerName.
func ValidateNotAPIServer(req *x509.CertificateRequest, serviceIPs []netip.Addr) error {
	for _, name := range req.DNSNames {
		n := strings.ToLower(strings.TrimSuffix(name, "."))
		if n == "kubernetes" || n == "kubernetes.default" || n == "kubernetes.default.svc" || strings.HasPrefix(n, "kubernetes.default.svc.") {
			return fmt.Errorf("DNS subjectAltName %q: %w", name, ErrAPIServerName)
		}
	}
	for _, ip := range req.IPAddresses {
		if addr, ok := netip.AddrFromSlice(ip); ok && slices.Contains(serviceIPs, addr.Unmap()) {
			return fmt.Errorf("IP subjectAltName %s: %w", ip, ErrAPIServerName)
		}
	}
	return nil
}

// nodeNames returns the DNS names (its name and its Hostname, InternalDNS
// and ExternalDNS addresses) and the IP addresses (its InternalIP and
// ExternalIP addresses, unmapped) that are node's own. An address that does
// not parse as the IP its type says is left out.
func nodeNames(node *corev1.Node) (dnsNames []string, ips []netip.Addr) {
	dnsNames = []string{node.Name}
	for _, a := range node.Status.Addresses {
		if a.Address == "" {
			continue
		}
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			dnsNames = append(dnsNames, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Zone() == "" {
				ips = append(ips, ip.Unmap())
			}
		}
	}
	return dnsNames, ips
}

// ValidateAPIServerClient reports why usages do not fit a client
// certificate of the kubernetes.io/kube-apiserver-client signer: client
// auth, optionally digital signature and key encipherment, nothing else.
func ValidateAPIServerClient(usages []certificatesv1.KeyUsage) error {
	clientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !clientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// validators are the signers this package signs for, with the check of
// what each issues.
var validators = map[string]func(*x509.CertificateRequest, []certificatesv1.KeyUsage) error{
	certificatesv1.KubeAPIServerClientSignerName: func(_ *x509.CertificateRequest, u []certificatesv1.KeyUsage) error {
		return ValidateAPIServerClient(u)
	},
	certificatesv1.KubeAPIServerClientKubeletSignerName: ValidateKubeletClient,
	certificatesv1.KubeletServingSignerName:             ValidateKubeletServing,
}

// hasTrue reports whether csr has a condition of type t with status True.
func hasTrue(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// approved reports whether csr is approved and not denied.
func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasTrue(csr, certificatesv1.CertificateApproved) && !hasTrue(csr, certificatesv1.CertificateDenied)
}

// expiration turns spec.expirationSeconds into a certificate lifetime:
// what was asked for, but at most max and at least ten minutes (twice the
// backdating), as upstream.
func expiration(seconds *int32, max time.Duration) time.Duration {
	const min = 10 * time.Minute
	if seconds == nil {
		return max
	}
	switch d := time.Duration(*seconds) * time.Second; {
	case d > max:
		return max
	case d < min:
		return min
	default:
		return d
	}
}
