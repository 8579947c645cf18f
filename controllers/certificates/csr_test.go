package certificates

import (
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
