package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
)

// ApprovedReason is the reason of the Approved condition a Manager with
// Config.Approve sets, as upstream's approver.
const ApprovedReason = "AutoApproved"

// request generates a key, sends a CSR for s, approves it when asked and
// waits until it is signed. It returns the certificate and key as PEM and
// the name of the CSR.
func request(ctx context.Context, client kubernetes.Interface, s spec, d time.Duration, approve bool) (certPEM, keyPEM []byte, name string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, "", fmt.Errorf("certs: generating a key: %w", err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, "", fmt.Errorf("certs: encoding the key: %w", err)
	}
	ips := make([]net.IP, 0, len(s.ips))
	for _, a := range s.ips {
		ips = append(ips, net.IP(a.AsSlice()))
	}
	csrPEM, err := certutil.MakeCSR(key, &pkix.Name{CommonName: s.commonName, Organization: []string{NodesGroup}}, s.dns, ips)
	if err != nil {
		return nil, nil, "", fmt.Errorf("certs: making the certificate request: %w", err)
	}
	var duration *time.Duration
	if d > 0 {
		duration = &d
	}
	// An empty name asks the server to generate one (csr-xxxxx), as the
	// upstream kubelet does.
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, "", s.signer, duration, s.usages, key)
	if err != nil {
		return nil, nil, "", fmt.Errorf("certs: %w", err)
	}
	if approve {
		if err := approveCSR(ctx, client, name); err != nil {
			return nil, nil, name, err
		}
	}
	certPEM, err = csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return nil, nil, name, fmt.Errorf("certs: CSR %s (signer %s) was not signed: %w", name, s.signer, err)
	}
	return certPEM, keyPEM, name, nil
}

// approveCSR adds the condition Approved to the CSR through its approval
// subresource, unless it is approved already.
func approveCSR(ctx context.Context, client kubernetes.Interface, name string) error {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		req, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range req.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
				return nil // the waiting tells which
			}
		}
		req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateApproved,
			Status:         corev1.ConditionTrue,
			Reason:         ApprovedReason,
			Message:        "Auto approving the certificate of its requester, who may approve it.",
			LastUpdateTime: metav1.Now(),
		})
		_, err = csrs.UpdateApproval(ctx, name, req, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("certs: approving CSR %s: %w", name, err)
	}
	return nil
}
