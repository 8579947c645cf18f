package certificates

import (
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

func TestValidateKubeletRequests(t *testing.T) {
	t.Parallel()
	withRSA := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	servingNoRSA := []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature}
	tests := []struct {
		name    string
		serving bool // ValidateKubeletServing, else ValidateKubeletClient
		req     request
		usages  []certificatesv1.KeyUsage
		wantErr string
	}{
		{name: "client", req: clientOf("n1"), usages: clientUsages},
		{name: "client with key encipherment", req: clientOf("n1"), usages: withRSA},
		{name: "client orgs", req: request{cn: "system:node:n1", orgs: []string{"system:nodes", "x"}}, usages: clientUsages, wantErr: "subject organization is not system:nodes"},
		{name: "client no orgs", req: request{cn: "system:node:n1"}, usages: clientUsages, wantErr: "subject organization is not system:nodes"},
		{name: "client DNS SAN", req: request{cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}}, usages: clientUsages, wantErr: "DNS subjectAltNames are not allowed"},
		{name: "client IP SAN", req: request{cn: "system:node:n1", orgs: []string{"system:nodes"}, ips: []string{"10.0.0.1"}}, usages: clientUsages, wantErr: "IP subjectAltNames are not allowed"},
		{name: "client email SAN", req: request{cn: "system:node:n1", orgs: []string{"system:nodes"}, emails: []string{"a@b.c"}}, usages: clientUsages, wantErr: "Email subjectAltNames are not allowed"},
		{name: "client CN", req: request{cn: "alice", orgs: []string{"system:nodes"}}, usages: clientUsages, wantErr: "subject common name does not begin with system:node:"},
		{name: "client server auth", req: clientOf("n1"), usages: servingUsages, wantErr: "usages did not match [client auth digital signature key encipherment]"},
		{name: "serving", serving: true, req: servingOf("n1"), usages: servingUsages},
		{name: "serving without key encipherment", serving: true, req: servingOf("n1"), usages: servingNoRSA},
		{name: "serving needs a SAN", serving: true, req: clientOf("n1"), usages: servingUsages, wantErr: "DNS or IP subjectAltName is required"},
		{name: "serving email SAN", serving: true, req: request{cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}, emails: []string{"a@b.c"}}, usages: servingUsages, wantErr: "Email subjectAltNames are not allowed"},
		{name: "serving client auth", serving: true, req: servingOf("n1"), usages: clientUsages, wantErr: "usages did not match [digital signature key encipherment server auth]"},
		{name: "serving CN", serving: true, req: request{cn: "n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}}, usages: servingUsages, wantErr: "subject common name does not begin with system:node:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			validate := ValidateKubeletClient
			if tt.serving {
				validate = ValidateKubeletServing
			}
			err := validate(parsed(t, tt.req), tt.usages)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestValidateAPIServerClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		usages  []certificatesv1.KeyUsage
		wantErr string
	}{
		{name: "client auth", usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}},
		{name: "with optional usages", usages: []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
		{name: "no client auth", usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, wantErr: "missing required usage for client certificate: client auth"},
		{name: "server auth", usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}, wantErr: "invalid usage for client certificate: server auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errString(ValidateAPIServerClient(tt.usages)); got != tt.wantErr {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	year := 365 * 24 * time.Hour
	secs := func(s int32) *int32 { return &s }
	tests := []struct {
		name    string
		seconds *int32
		max     time.Duration
		want    time.Duration
	}{
		{name: "unset is the maximum", max: year, want: year},
		{name: "shorter is honoured", seconds: secs(3600), max: year, want: time.Hour},
		{name: "longer is capped", seconds: secs(2 * 365 * 24 * 3600), max: year, want: year},
		{name: "at least ten minutes", seconds: secs(60), max: year, want: 10 * time.Minute},
		{name: "flag below the ask", seconds: secs(7200), max: time.Hour, want: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := expiration(tt.seconds, tt.max); got != tt.want {
				t.Fatalf("expiration = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	t.Parallel()
	if _, err := ParseRequest([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")); err == nil {
		t.Fatal("a CERTIFICATE block parsed as a request")
	}
	if _, err := ParseRequest([]byte("junk")); err == nil {
		t.Fatal("junk parsed as a request")
	}
	req, err := ParseRequest(pemRequest(t, clientOf("n1")))
	if err != nil || req.Subject.CommonName != "system:node:n1" {
		t.Fatalf("ParseRequest = %v, %v", req, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValidateKubeletServingNames(t *testing.T) {
	t.Parallel()
	node := nodeAt("n1", "InternalIP", "10.0.0.7", "ExternalIP", "2001:db8::7", "Hostname", "host1",
		"InternalDNS", "n1.internal", "ExternalDNS", "n1.example.com", "InternalIP", "not-an-ip")
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, a := range s {
			out = append(out, net.ParseIP(a))
		}
		return out
	}
	tests := []struct {
		name    string
		req     x509.CertificateRequest
		wantErr string
	}{
		{name: "node name and InternalIP", req: x509.CertificateRequest{DNSNames: []string{"n1"}, IPAddresses: ips("10.0.0.7")}},
		{name: "every address", req: x509.CertificateRequest{DNSNames: []string{"n1", "host1", "n1.internal", "n1.example.com"}, IPAddresses: ips("10.0.0.7", "2001:db8::7")}},
		{name: "DNS names ignore case", req: x509.CertificateRequest{DNSNames: []string{"N1", "N1.Example.COM"}}},
		{name: "IPv4 in IPv6 form", req: x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("10.0.0.7").To16()}}},
		{name: "the API server's name", req: x509.CertificateRequest{DNSNames: []string{"n1", "kubernetes.default.svc"}},
			wantErr: `DNS subjectAltName "kubernetes.default.svc": not one of the node's names or addresses`},
		{name: "another node's name", req: x509.CertificateRequest{DNSNames: []string{"n2"}},
			wantErr: `DNS subjectAltName "n2": not one of the node's names or addresses`},
		{name: "a wildcard over the node's domain", req: x509.CertificateRequest{DNSNames: []string{"*.example.com"}},
			wantErr: `DNS subjectAltName "*.example.com": a wildcard: not one of the node's names or addresses`},
		{name: "the kubernetes Service IP", req: x509.CertificateRequest{DNSNames: []string{"n1"}, IPAddresses: ips("10.0.0.7", "10.96.0.1")},
			wantErr: "IP subjectAltName 10.96.0.1: not one of the node's names or addresses"},
		{name: "an IP address as a DNS name", req: x509.CertificateRequest{DNSNames: []string{"10.0.0.7"}},
			wantErr: `DNS subjectAltName "10.0.0.7": not one of the node's names or addresses`},
		{name: "an IPv6 address not the node's", req: x509.CertificateRequest{IPAddresses: ips("::1")},
			wantErr: "IP subjectAltName ::1: not one of the node's names or addresses"},
		{name: "no names", req: x509.CertificateRequest{}, wantErr: "DNS or IP subjectAltName is required"},
		{name: "an email address", req: x509.CertificateRequest{DNSNames: []string{"n1"}, EmailAddresses: []string{"a@b.c"}},
			wantErr: "Email subjectAltNames are not allowed"},
		{name: "a URI", req: x509.CertificateRequest{DNSNames: []string{"n1"}, URIs: []*url.URL{{Scheme: "spiffe", Host: "cluster", Path: "/n1"}}},
			wantErr: "URI subjectAltNames are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateKubeletServingNames(&tt.req, node)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("error = %q, want %q", got, tt.wantErr)
			}
			if err != nil && strings.Contains(tt.wantErr, "not one of") && !errors.Is(err, ErrNotNodeName) {
				t.Fatalf("error %v does not wrap ErrNotNodeName", err)
			}
		})
	}
}

// TestValidateNotAPIServer: the names in-cluster clients reach the API
// server by and the kubernetes Service's IPs are refused, whatever case
// or trailing dot; other names pass.
func TestValidateNotAPIServer(t *testing.T) {
	t.Parallel()
	serviceIPs := []netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::1")}
	for _, tc := range []struct {
		name    string
		req     x509.CertificateRequest
		refused bool
	}{
		{"node names", x509.CertificateRequest{DNSNames: []string{"n1", "kubernetes-node"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.7")}}, false},
		{"kubernetes", x509.CertificateRequest{DNSNames: []string{"kubernetes"}}, true},
		{"kubernetes.default", x509.CertificateRequest{DNSNames: []string{"Kubernetes.Default"}}, true},
		{"kubernetes.default.svc.", x509.CertificateRequest{DNSNames: []string{"kubernetes.default.svc."}}, true},
		{"the cluster domain's name", x509.CertificateRequest{DNSNames: []string{"kubernetes.default.svc.cluster.local"}}, true},
		{"the Service IP", x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("10.96.0.1")}}, true},
		{"the Service IP mapped to IPv6", x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("::ffff:10.96.0.1")}}, true},
		{"the IPv6 Service IP", x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP("fd00::1")}}, true},
	} {
		err := ValidateNotAPIServer(&tc.req, serviceIPs)
		if tc.refused != (err != nil) || err != nil && !errors.Is(err, ErrAPIServerName) {
			t.Errorf("%s: %v, want refused=%v wrapping ErrAPIServerName", tc.name, err, tc.refused)
		}
	}
}
