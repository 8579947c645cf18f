package serviceaccount

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubebus/kubebus/apiserver/pki"

	"k8s.io/client-go/util/keyutil"
)

// Key files in the directory LoadOrCreateKey is given.
const (
	KeyFile       = "sa.key"
	PublicKeyFile = "sa.pub"
)

const (
	keyBits             = 2048
	keyMode os.FileMode = 0o600
	pubMode os.FileMode = 0o644
	dirMode os.FileMode = 0o700
)

// LoadOrCreateKey returns the ServiceAccount token signing key kept in dir
// as sa.key (PEM, mode 0600), with its public half in sa.pub. The first
// call makes an RSA 2048 key; later calls load it, and write sa.pub again
// if it is missing.
func LoadOrCreateKey(dir string) (*rsa.PrivateKey, error) {
	keyPath := filepath.Join(dir, KeyFile)
	data, err := os.ReadFile(keyPath)
	switch {
	case err == nil:
		key, err := parseRSAKey(data)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", keyPath, err)
		}
		if err := ensurePublicKey(dir, &key.PublicKey); err != nil {
			return nil, err
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading service account key: %w", err)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, fmt.Errorf("generating service account key: %w", err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: keyutil.RSAPrivateKeyBlockType, Bytes: x509.MarshalPKCS1PrivateKey(key)})
	// The public key first: a crash in between leaves no sa.key, so the
	// next start makes a new pair instead of trusting a stale sa.pub.
	if err := writePublicKey(dir, &key.PublicKey); err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(keyPath, pemKey, keyMode); err != nil {
		return nil, err
	}
	return key, nil
}

func parseRSAKey(data []byte) (*rsa.PrivateKey, error) {
	k, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("service account key is a %T, want an RSA key", k)
	}
	if rk.N.BitLen() < keyBits {
		return nil, fmt.Errorf("service account key has %d bits, want at least %d", rk.N.BitLen(), keyBits)
	}
	return rk, nil
}

// ensurePublicKey writes sa.pub unless it already holds pub.
func ensurePublicKey(dir string, pub *rsa.PublicKey) error {
	data, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	if err == nil {
		keys, perr := keyutil.ParsePublicKeysPEM(data)
		if perr == nil && len(keys) == 1 && pub.Equal(keys[0]) {
			return nil
		}
	}
	return writePublicKey(dir, pub)
}

func writePublicKey(dir string, pub *rsa.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("encoding service account public key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der})
	return pki.WriteFileAtomic(filepath.Join(dir, PublicKeyFile), data, pubMode)
}

// keyID derives the key id upstream puts in a token's kid header and in
// the JWKS: the unpadded base64url SHA-256 of the DER public key, so the
// key cannot be recovered from it.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
