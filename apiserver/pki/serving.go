package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
)

// servingPrefix names the files of serving certificates IssueServing
// makes.
const servingPrefix = "serving-"

// IssueServing returns the files of a serving certificate with common
// name name for hosts (DNS names and IP addresses), issuing one in the
// bundle's directory unless a valid one for exactly those hosts is already
// there: for servers other than the API server that clients verify
// against the cluster CA, e.g. the embedded NATS server
// (IssueServing("kubebus-nats", hosts)). Without the CA key, only a valid
// existing certificate is returned (ErrNoCAKey otherwise).
func (b *Bundle) IssueServing(name string, hosts []string) (certFile, keyFile string, err error) {
	if b == nil || b.ca == nil {
		return "", "", errors.New("pki: IssueServing on a Bundle not made by Ensure or Load")
	}
	if name == "" || len(hosts) == 0 {
		return "", "", errors.New("pki: IssueServing needs a name and hosts")
	}
	hs, err := parseHosts(hosts)
	if err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	base := servingPrefix + fileName(name)
	certFile = filepath.Join(b.dir, base+".crt")
	keyFile = filepath.Join(b.dir, base+".key")

	b.mu.Lock()
	defer b.mu.Unlock()
	spec := leafSpec{commonName: name, usage: x509.ExtKeyUsageServerAuth, hosts: hs}
	if err := ensureLeaf(certFile, keyFile, b.ca, spec, b.clock()); err != nil {
		return "", "", fmt.Errorf("serving certificate %q: %w", name, err)
	}
	return certFile, keyFile, nil
}
