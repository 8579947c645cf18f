package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// ParseCSR decodes the PEM CERTIFICATE REQUEST of a
// CertificateSigningRequest's spec.request. It does not check the
// signature.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
