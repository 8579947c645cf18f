package certificates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// SignerName is the signer's name, as upstream's --controllers knows it.
const SignerName = "csrsigning"

// DefaultSigningDuration is the longest certificate the signer issues
// unless told otherwise (upstream's --cluster-signing-duration).
const DefaultSigningDuration = 365 * 24 * time.Hour

// ReasonSignerValidationFailure is the reason of the Failed condition of a
// CSR its signer cannot honour.
const ReasonSignerValidationFailure = "SignerValidationFailure"

// SignerConfig configures the signing controller.
type SignerConfig struct {
	Client kubernetes.Interface
	CSRs   *informer.Informer[*certificatesv1.CertificateSigningRequest]
	// CertFile and KeyFile are the cluster CA (PEM) the certificates are
	// issued from (upstream's --cluster-signing-cert-file and
	// --cluster-signing-key-file).
	CertFile, KeyFile string
	// Duration bounds the certificates' lifetime (default
	// DefaultSigningDuration); a CSR's spec.expirationSeconds may ask for
	// less.
	Duration time.Duration
	// Now defaults to time.Now.
	Now     func() time.Time
	Options controllers.Options
}

func (c *SignerConfig) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("certificates: Client is required")
	case c.CSRs == nil:
		return errors.New("certificates: the CertificateSigningRequests informer is required")
	case c.CertFile == "" || c.KeyFile == "":
		return errors.New("certificates: the signing certificate and key files are required")
	case c.Duration < 0:
		return errors.New("certificates: Duration is negative")
	}
	if c.Duration == 0 {
		c.Duration = DefaultSigningDuration
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// csrGetter is the part of the CSRs' cache the controllers read.
type csrGetter interface {
	Get(namespace, name string) (*certificatesv1.CertificateSigningRequest, bool)
}

type signer struct {
	client   kubernetes.Interface
	csrs     csrGetter
	ca       *CA
	duration time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// NewSigner loads the CA, builds the signing controller and registers its
// handler on the CSRs' informer: call it before the informer runs.
func NewSigner(cfg SignerConfig) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ca, err := LoadCA(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	s := &signer{client: cfg.Client, csrs: cfg.CSRs, ca: ca, duration: cfg.Duration, now: cfg.Now,
		log: cfg.Options.Logger.With("controller", SignerName)}
	c := controllers.New(SignerName, s, cfg.Options)
	enqueueCSRs(c, cfg.CSRs)
	return c, nil
}

// enqueueCSRs queues every CSR that is added or changes.
func enqueueCSRs(c *controllers.Controller, csrs *informer.Informer[*certificatesv1.CertificateSigningRequest]) {
	csrs.AddHandler(informer.HandlerFuncs[*certificatesv1.CertificateSigningRequest]{
		AddFunc:    func(csr *certificatesv1.CertificateSigningRequest) { c.Enqueue(controllers.Request{Name: csr.Name}) },
		UpdateFunc: func(_, csr *certificatesv1.CertificateSigningRequest) { c.Enqueue(controllers.Request{Name: csr.Name}) },
	})
}

// Reconcile issues the certificate of CSR req.Name when it is approved,
// not yet signed nor failed, and for one of the signers this controller
// signs for.
func (s *signer) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	csr, ok := s.csrs.Get("", req.Name)
	if !ok || len(csr.Status.Certificate) > 0 || !approved(csr) || hasTrue(csr, certificatesv1.CertificateFailed) {
		return controllers.Result{}, nil
	}
	validate, ours := validators[csr.Spec.SignerName]
	if !ours {
		return controllers.Result{}, nil // another signer's
	}
	x509cr, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return controllers.Result{}, s.fail(ctx, csr, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err))
	}
	if err := x509cr.CheckSignature(); err != nil {
		return controllers.Result{}, s.fail(ctx, csr, fmt.Errorf("unable to verify certificate request signature: %w", err))
	}
	if err := validate(x509cr, csr.Spec.Usages); err != nil {
		return controllers.Result{}, s.fail(ctx, csr, err)
	}
	pemCert, err := s.ca.Sign(x509cr, csr.Spec.Usages, expiration(csr.Spec.ExpirationSeconds, s.duration), s.now())
	if err != nil {
		return controllers.Result{}, fmt.Errorf("signing csr %s: %w", csr.Name, err)
	}
	csr = csr.DeepCopy()
	csr.Status.Certificate = pemCert
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return controllers.Result{}, fmt.Errorf("writing the certificate of csr %s: %w", csr.Name, err)
	}
	s.log.Debug("signed certificate", "csr", csr.Name, "signer", csr.Spec.SignerName, "subject", x509cr.Subject.String())
	return controllers.Result{}, nil
}

// fail adds a Failed condition saying why to csr.
func (s *signer) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, why error) error {
	csr = csr.DeepCopy()
	now := metav1.NewTime(s.now())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: ReasonSignerValidationFailure,
		Message: why.Error(), LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("adding a failure condition to csr %s: %w", csr.Name, err)
	}
	s.log.Info("csr failed", "csr", csr.Name, "signer", csr.Spec.SignerName, "reason", why)
	return nil
}
