package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Load opens the CA an earlier Ensure made in dir, creating and replacing
// nothing: for tools that issue certificates from an existing CA (kubebus
// certs). The Bundle's other file paths are where Ensure keeps its leaves,
// which may or may not exist. A missing CA certificate gives an error
// matching os.ErrNotExist; a missing CA key, ErrNoCAKey.
func Load(dir string) (*Bundle, error) {
	if dir == "" {
		return nil, errors.New("pki: Load with an empty directory")
	}
	b := &Bundle{
		CAFile:          filepath.Join(dir, caCertName),
		CAKeyFile:       filepath.Join(dir, caKeyName),
		ServingCertFile: filepath.Join(dir, servingCertName),
		ServingKeyFile:  filepath.Join(dir, servingKeyName),
		AdminCertFile:   filepath.Join(dir, adminCertName),
		AdminKeyFile:    filepath.Join(dir, adminKeyName),
		dir:             dir,
		clock:           time.Now,
	}
	if _, err := os.Stat(b.CAFile); err != nil {
		return nil, fmt.Errorf("pki: no CA in %s: %w", dir, err)
	}
	if _, err := os.Stat(b.CAKeyFile); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoCAKey, b.CAKeyFile)
	}
	// The certificate exists, so this loads and never creates.
	ca, err := loadOrCreateCA(b.CAFile, b.CAKeyFile, b.clock())
	if err != nil {
		return nil, err
	}
	b.ca = ca
	b.CA = x509.NewCertPool()
	b.CA.AddCert(ca.cert)
	return b, nil
}

// IssueClientTo writes to certFile and keyFile a client certificate for
// user with groups (CN and O), unless a valid one for exactly that user
// and those groups is already there. Unlike IssueClient it writes where
// the caller says, creating the directories (0700).
func (b *Bundle) IssueClientTo(certFile, keyFile, user string, groups []string) error {
	if b == nil || b.ca == nil {
		return errors.New("pki: IssueClientTo on a Bundle not made by Ensure or Load")
	}
	if user == "" {
		return errors.New("pki: IssueClientTo with an empty user name")
	}
	if certFile == "" || keyFile == "" || certFile == keyFile {
		return errors.New("pki: IssueClientTo needs two distinct files")
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.MkdirAll(filepath.Dir(f), dirMode); err != nil {
			return fmt.Errorf("pki: creating the directory of %s: %w", f, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := ensureLeaf(certFile, keyFile, b.ca, clientSpec(user, groups), b.clock()); err != nil {
		return fmt.Errorf("client certificate for %q: %w", user, err)
	}
	return nil
}
