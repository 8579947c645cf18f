package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func testCSRPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func testCertPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validCSR(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-abc", ResourceVersion: "3"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    testCSRPEM(t),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   "system:node:n1",
		},
	}
}

func condition(t certificatesv1.RequestConditionType, s corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: s, Reason: "Test"}
}

func TestValidateCSR(t *testing.T) {
	t.Parallel()
	certPEM := testCertPEM(t)
	tests := []struct {
		name   string
		change func(*certificatesv1.CertificateSigningRequest)
		wants  []want
		detail string
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil, ""},
		{"any name", func(c *certificatesv1.CertificateSigningRequest) { c.Name = "CSR_for:node" }, nil, ""},
		{"request is a certificate request", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = certPEM },
			[]want{invalid("spec.request")}, "PEM block type must be CERTIFICATE REQUEST"},
		{"request parses", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("junk")})
		}, []want{invalid("spec.request")}, ""},
		{"usages required", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, []want{required("spec.usages")}, ""},
		{"usages known", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = append(c.Spec.Usages, "flying") },
			[]want{notSupported("spec.usages[2]")}, ""},
		{"usages once", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
		},
			[]want{duplicate("spec.usages[2]")}, ""},
		{"signer required", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, []want{required("spec.signerName")}, ""},
		{"signer qualified", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "my-signer" },
			[]want{invalid("spec.signerName")}, "must be a fully qualified domain and path of the form 'example.com/signer-name'"},
		{"signer domain has two labels", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			[]want{invalid("spec.signerName")}, "should be a domain with at least two segments separated by dots"},
		{"signer domain labels", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "Example.com/signer" },
			[]want{invalid("spec.signerName")}, `validating label "Example"`},
		{"signer path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/Signer" },
			[]want{invalid("spec.signerName")}, `validating component "Signer"`},
		{"custom signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/team.signer-1" }, nil, ""},
		{"legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" },
			[]want{invalid("spec.signerName")}, "the legacy signerName is not allowed via this API version"},
		{"expiration at least ten minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = new(int32(599)) },
			[]want{invalid("spec.expirationSeconds")}, "may not specify a duration less than 600 seconds (10 minutes)"},
		{"expiration of ten minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = new(int32(600)) }, nil, ""},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				condition(certificatesv1.CertificateApproved, corev1.ConditionTrue), condition(certificatesv1.CertificateDenied, corev1.ConditionTrue)}
		}, []want{invalid("status.conditions[1].type")}, "Approved and Denied conditions are mutually exclusive"},
		{"approved is true", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionFalse)}
		}, []want{notSupported("status.conditions[0].status")}, ""},
		{"custom condition may be false", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition("Issuing", corev1.ConditionFalse)}
		}, nil, ""},
		{"condition type and status", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{}}
		}, []want{required("status.conditions[0].type"), required("status.conditions[0].status")}, ""},
		{"condition once", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				condition(certificatesv1.CertificateFailed, corev1.ConditionTrue), condition(certificatesv1.CertificateFailed, corev1.ConditionTrue)}
		}, []want{duplicate("status.conditions[1].type")}, ""},
		{"certificate is PEM certificates", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = c.Spec.Request },
			[]want{invalid("status.certificate")}, `only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"`},
		{"certificate is PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") },
			[]want{invalid("status.certificate")}, "must contain at least one CERTIFICATE PEM block"},
		{"certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM }, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			csr := validCSR(t)
			tt.change(csr)
			errs := validateCSR(csr)
			expectErrors(t, errs, tt.wants...)
			if tt.detail != "" {
				expectDetail(t, errs, tt.wants[0].path, tt.detail)
			}
		})
	}
}

func TestValidateCSRUpdates(t *testing.T) {
	t.Parallel()
	certPEM, otherPEM := testCertPEM(t), testCertPEM(t)
	approved := condition(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	denied := condition(certificatesv1.CertificateDenied, corev1.ConditionTrue)
	failed := condition(certificatesv1.CertificateFailed, corev1.ConditionTrue)
	type validator func(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList
	tests := []struct {
		name     string
		validate validator
		old      func(*certificatesv1.CertificateSigningRequest)
		change   func(*certificatesv1.CertificateSigningRequest)
		wants    []want
	}{
		{"labels via the resource", validateCSRUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} }, nil},
		{"approve via the resource", validateCSRUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, approved)
		}, []want{forbidden("status.conditions")}},
		{"approve via approval", validateCSRApprovalUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, approved)
		}, nil},
		{"approve via status", validateCSRStatusUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, approved)
		}, []want{forbidden("status.conditions")}},
		{"deny an approved request", validateCSRApprovalUpdate, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		}, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, denied)
		}, []want{invalid("status.conditions[1].type")}},
		{"remove approval", validateCSRApprovalUpdate, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		}, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions = nil }, []want{forbidden("status.conditions")}},
		{"fail via status", validateCSRStatusUpdate, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		}, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, failed)
		}, nil},
		{"certificate via status", validateCSRStatusUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM }, nil},
		{"certificate via the resource", validateCSRUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM },
			[]want{forbidden("status.certificate")}},
		{"certificate via approval", validateCSRApprovalUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM },
			[]want{forbidden("status.certificate")}},
		{"certificate replaced", validateCSRStatusUpdate, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM },
			func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = otherPEM }, []want{forbidden("status.certificate")}},
		{"spec is immutable", validateCSRStatusUpdate, nil, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Username = "system:node:n2" },
			[]want{invalid("spec")}},
		{"stored approved and denied stays accepted", validateCSRUpdate, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved, denied}
		}, func(c *certificatesv1.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := validCSR(t)
			if tt.old != nil {
				tt.old(old)
			}
			csr := old.DeepCopy()
			tt.change(csr)
			expectErrors(t, tt.validate(csr, old), tt.wants...)
		})
	}
}
