package certificates

import (
	"context"
	"crypto/x509"
	"log/slog"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"

	"github.com/kubebus/kubebus/controllers"
)

// verify parses a PEM certificate and checks that it chains to ca for
// usage at now.
func verify(t *testing.T, ca *CA, pemCert []byte, usage x509.ExtKeyUsage, now time.Time) *x509.Certificate {
	t.Helper()
	certs, err := cert.ParseCertsPEM(pemCert)
	if err != nil || len(certs) != 1 {
		t.Fatalf("certificate: %v (%d certificates)", err, len(certs))
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Fatalf("certificate does not verify for %v: %v", usage, err)
	}
	return certs[0]
}

func TestSign(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, _, _ := testCA(t, now, 2*365*24*time.Hour)
	tests := []struct {
		name          string
		req           request
		usages        []certificatesv1.KeyUsage
		ttl           time.Duration
		wantNotBefore time.Time
		wantNotAfter  time.Time
		wantKeyUsage  x509.KeyUsage
		wantExt       []x509.ExtKeyUsage
	}{
		{name: "kubelet client for a year", req: clientOf("n1"), usages: clientUsages, ttl: 365 * 24 * time.Hour,
			wantNotBefore: now.Add(-backdate), wantNotAfter: now.Add(-backdate).Add(365 * 24 * time.Hour),
			wantKeyUsage: x509.KeyUsageDigitalSignature, wantExt: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{name: "short lived ends on time", req: servingOf("n1"), usages: servingUsages, ttl: time.Hour,
			wantNotBefore: now.Add(-backdate), wantNotAfter: now.Add(time.Hour),
			wantKeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, wantExt: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{name: "never beyond the CA", req: clientOf("n1"), usages: []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth}, ttl: 5 * 365 * 24 * time.Hour,
			wantNotBefore: now.Add(-backdate), wantNotAfter: ca.Cert.NotAfter,
			wantExt: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := parsed(t, tt.req)
			pemCert, err := ca.Sign(req, tt.usages, tt.ttl, now)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			c := verify(t, ca, pemCert, tt.wantExt[0], now)
			if c.Subject.CommonName != tt.req.cn || len(c.Subject.Organization) != len(tt.req.orgs) || len(c.DNSNames) != len(tt.req.dns) || len(c.IPAddresses) != len(tt.req.ips) {
				t.Errorf("subject %v names %v %v, want the request's", c.Subject, c.DNSNames, c.IPAddresses)
			}
			if !c.NotBefore.Equal(tt.wantNotBefore) || !c.NotAfter.Equal(tt.wantNotAfter) {
				t.Errorf("validity %v..%v, want %v..%v", c.NotBefore, c.NotAfter, tt.wantNotBefore, tt.wantNotAfter)
			}
			if c.KeyUsage != tt.wantKeyUsage || len(c.ExtKeyUsage) != len(tt.wantExt) {
				t.Errorf("usages %v %v, want %v %v", c.KeyUsage, c.ExtKeyUsage, tt.wantKeyUsage, tt.wantExt)
			}
			for i := range tt.wantExt {
				if c.ExtKeyUsage[i] != tt.wantExt[i] {
					t.Errorf("extended usages %v, want %v", c.ExtKeyUsage, tt.wantExt)
				}
			}
			if c.IsCA {
				t.Error("issued a CA certificate")
			}
		})
	}
	t.Run("expired CA", func(t *testing.T) {
		t.Parallel()
		if _, err := ca.Sign(parsed(t, clientOf("n1")), clientUsages, time.Hour, ca.Cert.NotAfter.Add(time.Second)); err == nil {
			t.Fatal("an expired CA signed")
		}
	})
}

func TestSignerReconcile(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ca, _, _ := testCA(t, now, 10*365*24*time.Hour)
	approvedCSR := func(signer string, r request, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
		return withCondition(newCSR(t, "csr-1", signer, "system:node:n1", []string{"system:nodes"}, r, usages), certificatesv1.CertificateApproved)
	}
	badRequest := approvedCSR(certificatesv1.KubeletServingSignerName, servingOf("n1"), servingUsages)
	badRequest.Spec.Request = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
	oneHour := int32(3600)
	short := approvedCSR(certificatesv1.KubeAPIServerClientSignerName, request{cn: "alice", orgs: []string{"dev"}}, clientUsages)
	short.Spec.ExpirationSeconds = &oneHour
	signed := approvedCSR(certificatesv1.KubeAPIServerClientKubeletSignerName, clientOf("n1"), clientUsages)
	signed.Status.Certificate = []byte("already")
	tests := []struct {
		name       string
		csr        *certificatesv1.CertificateSigningRequest
		wantUsage  x509.ExtKeyUsage // 0: no certificate
		wantFailed string           // the Failed condition's message
		wantLife   time.Duration
	}{
		{name: "kubelet client", csr: approvedCSR(certificatesv1.KubeAPIServerClientKubeletSignerName, clientOf("n1"), clientUsages),
			wantUsage: x509.ExtKeyUsageClientAuth, wantLife: DefaultSigningDuration},
		{name: "kubelet serving", csr: approvedCSR(certificatesv1.KubeletServingSignerName, servingOf("n1"), servingUsages),
			wantUsage: x509.ExtKeyUsageServerAuth, wantLife: DefaultSigningDuration},
		{name: "api server client for an hour", csr: short, wantUsage: x509.ExtKeyUsageClientAuth, wantLife: time.Hour + backdate},
		{name: "pending", csr: newCSR(t, "csr-1", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nil, clientOf("n1"), clientUsages)},
		{name: "denied", csr: withCondition(newCSR(t, "csr-1", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nil, clientOf("n1"), clientUsages), certificatesv1.CertificateDenied)},
		{name: "approved then denied", csr: withCondition(approvedCSR(certificatesv1.KubeAPIServerClientKubeletSignerName, clientOf("n1"), clientUsages), certificatesv1.CertificateDenied)},
		{name: "already failed", csr: withCondition(approvedCSR(certificatesv1.KubeAPIServerClientKubeletSignerName, clientOf("n1"), clientUsages), certificatesv1.CertificateFailed)},
		{name: "already signed", csr: signed},
		{name: "unknown signer", csr: approvedCSR("example.com/my-signer", clientOf("n1"), clientUsages)},
		{name: "kubelet client with a SAN", csr: approvedCSR(certificatesv1.KubeAPIServerClientKubeletSignerName, servingOf("n1"), clientUsages),
			wantFailed: "DNS subjectAltNames are not allowed"},
		{name: "api server client for serving", csr: approvedCSR(certificatesv1.KubeAPIServerClientSignerName, clientOf("n1"), servingUsages),
			wantFailed: "invalid usage for client certificate: server auth"},
		{name: "unparsable request", csr: badRequest, wantFailed: `unable to parse csr "csr-1": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.csr.DeepCopy()
			client := fake.NewClientset(tt.csr.DeepCopy())
			s := &signer{client: client, csrs: csrs{"csr-1": tt.csr}, ca: ca, duration: DefaultSigningDuration,
				now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
			if _, err := s.Reconcile(context.Background(), controllers.Request{Name: "csr-1"}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var writes []*certificatesv1.CertificateSigningRequest
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" {
					if a.GetSubresource() != "status" {
						t.Fatalf("wrote %s/%s, want the status subresource", a.GetResource().Resource, a.GetSubresource())
					}
					writes = append(writes, a.(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest))
				}
			}
			switch {
			case tt.wantUsage != 0:
				if len(writes) != 1 {
					t.Fatalf("%d writes, want 1", len(writes))
				}
				c := verify(t, ca, writes[0].Status.Certificate, tt.wantUsage, now)
				if life := c.NotAfter.Sub(c.NotBefore); life != tt.wantLife {
					t.Errorf("lifetime %v, want %v", life, tt.wantLife)
				}
			case tt.wantFailed != "":
				if len(writes) != 1 {
					t.Fatalf("%d writes, want 1", len(writes))
				}
				conds := writes[0].Status.Conditions
				last := conds[len(conds)-1]
				if last.Type != certificatesv1.CertificateFailed || last.Status != corev1.ConditionTrue || last.Reason != ReasonSignerValidationFailure ||
					len(last.Message) < len(tt.wantFailed) || last.Message[:len(tt.wantFailed)] != tt.wantFailed || len(writes[0].Status.Certificate) != 0 {
					t.Fatalf("conditions = %+v, want Failed %q", conds, tt.wantFailed)
				}
			default:
				if len(writes) != 0 {
					t.Fatalf("writes = %+v, want none", writes)
				}
			}
			if !apiequality.Semantic.DeepEqual(tt.csr, before) {
				t.Fatal("Reconcile modified the cached object")
			}
		})
	}
}

func TestLoadCA(t *testing.T) {
	t.Parallel()
	now := time.Now()
	_, certFile, keyFile := testCA(t, now, time.Hour)
	_, otherCert, otherKey := testCA(t, now, time.Hour)
	tests := []struct {
		name, cert, key string
		wantErr         bool
	}{
		{name: "pair", cert: certFile, key: keyFile},
		{name: "mismatched key", cert: certFile, key: otherKey, wantErr: true},
		{name: "missing key", cert: otherCert, key: keyFile + ".missing", wantErr: true},
		{name: "key as certificate", cert: keyFile, key: keyFile, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := LoadCA(tt.cert, tt.key); (err != nil) != tt.wantErr {
				t.Fatalf("LoadCA error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
