package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
	"k8s.io/utils/clock"
)

// Subjects of a node's certificates, as upstream.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// Defaults.
const (
	// DefaultRequestTimeout bounds one request: creating the CSR and
	// waiting for it to be approved and signed (upstream's 15 minutes).
	DefaultRequestTimeout = 15 * time.Minute
	// RenewFraction of a certificate's lifetime passes before it is
	// renewed.
	RenewFraction = 0.8
	// Backoff after a failed renewal, doubling up to maxBackoff.
	minBackoff = 5 * time.Second
	maxBackoff = 5 * time.Minute
)

// ErrNoCertificate is what GetCertificate returns until the first
// certificate is signed, in the upstream kubelet's words.
var ErrNoCertificate = errors.New("no serving certificate available for the kubelet")

// Config says which certificate to obtain and where to keep it.
type Config struct {
	// Client creates, approves (with Approve) and watches the CSRs.
	Client kubernetes.Interface
	// SignerName is certificatesv1.KubeletServingSignerName (the default)
	// for a serving certificate or
	// certificatesv1.KubeAPIServerClientKubeletSignerName for a client
	// certificate.
	SignerName string
	// NodeName makes the subject: CN system:node:<NodeName>, O
	// system:nodes.
	NodeName string
	// Hosts are the DNS names and IP addresses of a serving certificate
	// (at least one); a client certificate has none.
	Hosts []string
	// Dir keeps key and certificate (<PairName>-current.pem); empty keeps
	// them in memory only, so a restart requests a new one.
	Dir string
	// PairName prefixes the files in Dir (default "kubelet-server", or
	// "kubelet-client" for a client certificate).
	PairName string
	// Approve has the manager approve its own CSRs (condition Approved,
	// reason AutoApproved): for a caller allowed to approve CSRs of the
	// signer, such as the admin.
	Approve bool
	// Duration, when set, is the lifetime asked for
	// (spec.expirationSeconds); the signer may grant less.
	Duration time.Duration
	// RequestTimeout bounds each request (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	Clock          clock.WithTicker
	Logger         *slog.Logger
}

func (c *Config) validate() error {
	if c.Client == nil {
		return errors.New("certs: no Client")
	}
	if c.SignerName == "" {
		c.SignerName = certificatesv1.KubeletServingSignerName
	}
	switch c.SignerName {
	case certificatesv1.KubeletServingSignerName:
		if len(c.Hosts) == 0 {
			return errors.New("certs: a serving certificate needs hosts (the node's IP addresses and DNS names)")
		}
		if c.PairName == "" {
			c.PairName = "kubelet-server"
		}
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if len(c.Hosts) > 0 {
			return errors.New("certs: a client certificate names no hosts")
		}
		if c.PairName == "" {
			c.PairName = "kubelet-client"
		}
	default:
		return fmt.Errorf("certs: signer %q is neither %s nor %s", c.SignerName,
			certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientKubeletSignerName)
	}
	if c.NodeName == "" {
		return errors.New("certs: no node name")
	}
	if c.Duration < 0 || (c.Duration > 0 && c.Duration < 10*time.Minute) {
		return fmt.Errorf("certs: duration %s is shorter than the 10 minutes a CSR may ask for", c.Duration)
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Manager obtains a certificate and keeps it current. Its methods are safe
// for concurrent use.
type Manager struct {
	cfg   Config
	want  spec
	store certificate.Store
	cert  atomic.Pointer[tls.Certificate]
}

// New checks cfg, opens the store and loads a stored certificate that
// still matches the request and has not expired; it sends no request.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	want, err := newSpec(cfg.SignerName, cfg.NodeName, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, want: want, store: &memStore{}}
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("certs: creating %s: %w", cfg.Dir, err)
		}
		// The store logs every load at info; that is debug here.
		log := logr.FromSlogHandler(cfg.Logger.Handler()).V(1)
		if m.store, err = certificate.NewFileStoreWithLogger(log, cfg.PairName, cfg.Dir, cfg.Dir, "", ""); err != nil {
			return nil, fmt.Errorf("certs: opening the certificate store in %s: %w", cfg.Dir, err)
		}
	}
	cur, err := m.store.Current()
	var none *certificate.NoCertKeyError
	switch {
	case errors.As(err, &none):
	case err != nil:
		cfg.Logger.Warn("the stored certificate is unusable; requesting a new one", "dir", cfg.Dir, "err", err)
	default:
		if err := m.want.check(cur.Leaf); err != nil {
			cfg.Logger.Info("the stored certificate does not match; requesting a new one", "dir", cfg.Dir, "reason", err)
		} else if now := cfg.Clock.Now(); now.Before(cur.Leaf.NotAfter) {
			m.cert.Store(cur)
		}
	}
	return m, nil
}

// Current returns the certificate, or nil before the first is signed.
func (m *Manager) Current() *tls.Certificate { return m.cert.Load() }

// GetCertificate is tls.Config.GetCertificate for a server.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, ErrNoCertificate
}

// GetClientCertificate is tls.Config.GetClientCertificate for a client.
func (m *Manager) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("certs: no client certificate yet")
}

// RenewAt is when a certificate is renewed: once RenewFraction of its
// lifetime has passed.
func RenewAt(leaf *x509.Certificate) time.Time {
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotBefore.Add(time.Duration(float64(life) * RenewFraction))
}

// Ensure returns the current certificate when it has not reached its
// renewal time and otherwise requests a new one, waiting until it is
// signed, ctx ends or Config.RequestTimeout passes.
func (m *Manager) Ensure(ctx context.Context) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil && m.cfg.Clock.Now().Before(RenewAt(c.Leaf)) {
		return c, nil
	}
	return m.renew(ctx)
}

// Run keeps the certificate current until ctx ends: it requests one at
// once when there is none, and renews it at RenewAt, retrying failures with
// a backoff of 5s doubling to 5m. It returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	backoff := minBackoff
	for {
		wait := time.Duration(0)
		if c := m.cert.Load(); c != nil {
			wait = RenewAt(c.Leaf).Sub(m.cfg.Clock.Now())
		}
		if !m.sleep(ctx, wait) {
			return nil
		}
		if _, err := m.renew(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.cfg.Logger.Warn("renewing the certificate failed; retrying", "signer", m.cfg.SignerName, "in", backoff, "err", err)
			if !m.sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
	}
}

// sleep waits d on the clock and reports false when ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// renew requests a certificate, stores it and makes it current.
func (m *Manager) renew(ctx context.Context) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	start := m.cfg.Clock.Now()
	certPEM, keyPEM, name, err := request(ctx, m.cfg.Client, m.want, m.cfg.Duration, m.cfg.Approve)
	if err != nil {
		return nil, err
	}
	c, err := m.store.Update(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: storing the certificate of CSR %s: %w", name, err)
	}
	if err := m.want.check(c.Leaf); err != nil {
		return nil, fmt.Errorf("certs: the certificate of CSR %s %w", name, err)
	}
	m.cert.Store(c)
	m.cfg.Logger.Info("certificate signed", "signer", m.cfg.SignerName, "csr", name, "subject", c.Leaf.Subject.CommonName,
		"notAfter", c.Leaf.NotAfter.UTC().Format(time.RFC3339), "renewAt", RenewAt(c.Leaf).UTC().Format(time.RFC3339),
		"took", m.cfg.Clock.Since(start).Round(time.Millisecond))
	return c, nil
}

// spec is what a certificate must say.
type spec struct {
	signer     string
	commonName string
	dns        []string     // lower case, sorted, unique
	ips        []netip.Addr // unmapped, sorted, unique
	usages     []certificatesv1.KeyUsage
	extUsage   x509.ExtKeyUsage
}

func newSpec(signer, node string, hosts []string) (spec, error) {
	s := spec{signer: signer, commonName: NodeUserPrefix + node}
	if signer == certificatesv1.KubeletServingSignerName {
		s.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		s.extUsage = x509.ExtKeyUsageServerAuth
	} else {
		s.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		s.extUsage = x509.ExtKeyUsageClientAuth
	}
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			if ip.Zone() != "" {
				return spec{}, fmt.Errorf("certs: host %q: an IP address with a zone cannot be a certificate name", h)
			}
			s.ips = append(s.ips, ip.Unmap())
			continue
		}
		h = strings.ToLower(h)
		if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
			return spec{}, fmt.Errorf("certs: host %q is neither an IP address nor a DNS name", h)
		}
		s.dns = append(s.dns, h)
	}
	s.sortHosts()
	return s, nil
}

func (s *spec) sortHosts() {
	slices.Sort(s.dns)
	s.dns = slices.Compact(s.dns)
	slices.SortFunc(s.ips, netip.Addr.Compare)
	s.ips = slices.Compact(s.ips)
}

// check returns why leaf does not say what s asks for, or nil.
func (s spec) check(leaf *x509.Certificate) error {
	if leaf == nil {
		return errors.New("is missing")
	}
	if leaf.Subject.CommonName != s.commonName {
		return fmt.Errorf("names %q, not %q", leaf.Subject.CommonName, s.commonName)
	}
	if !slices.Equal(leaf.Subject.Organization, []string{NodesGroup}) {
		return fmt.Errorf("has organizations %q, not [%s]", leaf.Subject.Organization, NodesGroup)
	}
	if !slices.Contains(leaf.ExtKeyUsage, s.extUsage) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return fmt.Errorf("is not for %s", s.usages[1])
	}
	got := spec{dns: slices.Clone(leaf.DNSNames)}
	for i, d := range got.dns {
		got.dns[i] = strings.ToLower(d)
	}
	for _, ip := range leaf.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			got.ips = append(got.ips, a.Unmap())
		}
	}
	got.sortHosts()
	if !slices.Equal(got.dns, s.dns) || !slices.Equal(got.ips, s.ips) {
		return fmt.Errorf("names hosts %v %v, not %v %v", got.dns, got.ips, s.dns, s.ips)
	}
	return nil
}

// memStore keeps a pair in memory.
type memStore struct {
	cur atomic.Pointer[tls.Certificate]
}

var _ certificate.Store = (*memStore)(nil)

func (s *memStore) Current() (*tls.Certificate, error) {
	if c := s.cur.Load(); c != nil {
		return c, nil
	}
	e := certificate.NoCertKeyError("no certificate in memory")
	return nil, &e
}

func (s *memStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	s.cur.Store(&c)
	return &c, nil
}
