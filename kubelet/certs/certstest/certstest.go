// Package certstest plays the API server and the controller-manager's CSR
// approver and signer for tests of code that obtains certificates through
// the CertificateSigningRequest API (package certs): a fake clientset that
// generates CSR names and honours metadata.name field selectors as the API
// server does, and a Signer with a CA of its own.
package certstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	csrResource = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	csrKind     = certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest")
)

// NewClientset returns a fake clientset whose CSRs get generated names and
// UIDs and whose CSR lists and watches honour a metadata.name field
// selector, as the API server's do (csr.WaitForCertificate relies on it).
func NewClientset() *fake.Clientset {
	cs := fake.NewClientset()
	var n int
	var mu sync.Mutex
	cs.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "" {
			return false, nil, nil
		}
		req := ca.GetObject().(*certificatesv1.CertificateSigningRequest)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if req.Name == "" && req.GenerateName != "" {
			req.Name = fmt.Sprintf("%s%d%s", req.GenerateName, i, utilrand.String(5))
		}
		req.UID = types.UID(fmt.Sprintf("uid-%d", i))
		return false, nil, nil // on to the tracker
	})
	cs.PrependReactor("list", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := cs.Tracker().List(csrResource, csrKind, "")
		if err != nil {
			return true, nil, err
		}
		list := obj.(*certificatesv1.CertificateSigningRequestList)
		var items []certificatesv1.CertificateSigningRequest
		for _, it := range list.Items {
			if sel.Matches(fields.Set{"metadata.name": it.Name}) {
				items = append(items, it)
			}
		}
		list.Items = items
		return true, list, nil
	})
	cs.PrependWatchReactor("certificatesigningrequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		sel := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields
		if sel == nil {
			sel = fields.Everything()
		}
		w, err := cs.Tracker().Watch(csrResource, "")
		if err != nil {
			return true, nil, err
		}
		// The tracker's watch starts now, not at the list's resource
		// version: replay what is there so that no change between the
		// list and the watch is lost.
		obj, err := cs.Tracker().List(csrResource, csrKind, "")
		if err != nil {
			w.Stop()
			return true, nil, err
		}
		return true, replay(obj.(*certificatesv1.CertificateSigningRequestList).Items, w, sel), nil
	})
	return cs
}

// replay is a watch that sends items as Added, then the events of w, all
// filtered by sel on metadata.name.
func replay(items []certificatesv1.CertificateSigningRequest, w watch.Interface, sel fields.Selector) watch.Interface {
	ch := make(chan watch.Event)
	pw := watch.NewProxyWatcher(ch)
	matches := func(o runtime.Object) bool {
		req, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && sel.Matches(fields.Set{"metadata.name": req.Name})
	}
	go func() {
		defer w.Stop()
		defer close(ch)
		send := func(e watch.Event) bool {
			if !matches(e.Object) {
				return true
			}
			select {
			case ch <- e:
				return true
			case <-pw.StopChan():
				return false
			}
		}
		for i := range items {
			if !send(watch.Event{Type: watch.Added, Object: &items[i]}) {
				return
			}
		}
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok || !send(e) {
					return
				}
			case <-pw.StopChan():
				return
			}
		}
	}()
	return pw
}

// Signer signs the CSRs of a clientset with a CA of its own.
type Signer struct {
	CA   *x509.Certificate
	Pool *x509.CertPool // holds CA
	key  *ecdsa.PrivateKey

	mu       sync.Mutex
	validity time.Duration
	now      func() time.Time
	approve  bool
}

// NewSigner makes a signer with a fresh CA. What it signs is valid for an
// hour from time.Now unless changed with SetValidity and SetClock; it
// signs only approved CSRs unless SetApprove(true).
func NewSigner(t testing.TB) *Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "certstest-ca"},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Signer{CA: ca, Pool: pool, key: key, validity: time.Hour, now: time.Now}
}

// CAPEM is the CA certificate as PEM.
func (s *Signer) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.CA.Raw})
}

// SetValidity sets how long what it signs is valid when the CSR asks for
// no duration.
func (s *Signer) SetValidity(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validity = d
}

// SetClock sets the clock certificates start at.
func (s *Signer) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetApprove has it approve pending CSRs too, as the controller-manager's
// approver would.
func (s *Signer) SetApprove(approve bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.approve = approve
}

// Start signs the client's CSRs until the test ends, checking every few
// milliseconds.
func (s *Signer) Start(t testing.TB, client kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := s.signAll(ctx, client); err != nil && ctx.Err() == nil {
				t.Errorf("certstest signer: %v", err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (s *Signer) signAll(ctx context.Context, client kubernetes.Interface) error {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	s.mu.Lock()
	approve, now, validity := s.approve, s.now(), s.validity
	s.mu.Unlock()
	for i := range list.Items {
		req := &list.Items[i]
		if len(req.Status.Certificate) > 0 || has(req, certificatesv1.CertificateDenied) || has(req, certificatesv1.CertificateFailed) {
			continue
		}
		if !has(req, certificatesv1.CertificateApproved) {
			if !approve {
				continue
			}
			req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "certstest"})
			if req, err = csrs.UpdateApproval(ctx, req.Name, req, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		certPEM, err := s.sign(req, now, validity)
		if err != nil {
			return fmt.Errorf("signing %s: %w", req.Name, err)
		}
		req.Status.Certificate = certPEM
		if _, err := csrs.UpdateStatus(ctx, req, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func has(req *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType) bool {
	for _, c := range req.Status.Conditions {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// sign issues the certificate req asks for: its subject, names and usages.
func (s *Signer) sign(req *certificatesv1.CertificateSigningRequest, now time.Time, validity time.Duration) ([]byte, error) {
	block, _ := pem.Decode(req.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("no PEM CERTIFICATE REQUEST")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := cr.CheckSignature(); err != nil {
		return nil, err
	}
	if req.Spec.ExpirationSeconds != nil {
		validity = time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      cr.Subject,
		NotBefore:    now,
		NotAfter:     now.Add(validity),
		DNSNames:     cr.DNSNames,
		IPAddresses:  cr.IPAddresses,
	}
	for _, u := range req.Spec.Usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		default:
			return nil, fmt.Errorf("usage %q", u)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.CA, cr.PublicKey, s.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
