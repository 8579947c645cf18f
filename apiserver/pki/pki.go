package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The admin identity: a member of system:masters, which the authorizer lets
// do anything.
const (
	AdminUser  = "kubebus-admin"
	AdminGroup = "system:masters"
)

// servingCommonName is the subject of the serving certificate; clients
// verify its host names, not this.
const servingCommonName = "kubebus-apiserver"

// File names inside Config.Dir.
const (
	caCertName      = "ca.crt"
	caKeyName       = "ca.key"
	servingCertName = "serving.crt"
	servingKeyName  = "serving.key"
	adminCertName   = "admin.crt"
	adminKeyName    = "admin.key"
	clientPrefix    = "client-"
)

// ErrNoCAKey means the CA certificate exists but its key does not, and a
// certificate had to be issued. The CA is not replaced, since clients trust
// it; issue the certificate where the key is (kubebus certs), restore the
// key, or remove the certificate to start a new CA that every client must
// then trust afresh. Without the key, Ensure keeps the valid leaves it
// finds: a process that does not sign runs without the CA's key.
var ErrNoCAKey = errors.New("pki: CA certificate present but its key is missing")

// Config says where the files live and which names the server answers to.
type Config struct {
	Dir   string   // DIR/pki; created 0700 if missing
	Hosts []string // DNS names and IPs for the serving cert, e.g. "localhost", "127.0.0.1", "::1"
}

func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("pki: Config.Dir is empty")
	}
	if len(c.Hosts) == 0 {
		return errors.New("pki: Config.Hosts is empty")
	}
	return nil
}

// Bundle is what Ensure made or found: file paths and the CA to trust.
// Make one with Ensure; its methods are safe for concurrent use.
type Bundle struct {
	CAFile, CAKeyFile, ServingCertFile, ServingKeyFile string
	AdminCertFile, AdminKeyFile                        string // CN "kubebus-admin", O "system:masters"
	CA                                                 *x509.CertPool

	dir   string
	ca    *keyPair
	clock func() time.Time
	mu    sync.Mutex // serialises writes of client pairs
}

// Ensure creates (or loads, when already present and valid) a CA, a serving
// certificate for Hosts signed by the CA, and the admin client certificate.
//
// It replaces a leaf that does not verify against the CA, is expired or
// has less than 30 days left, whose key does not match, or (serving
// certificate) whose names differ from Hosts in either direction: a name
// no longer asked for is dropped. The CA is never replaced once its
// certificate exists; an expired CA or a CA without its key is an error.
func Ensure(cfg Config) (*Bundle, error) {
	return ensure(cfg, time.Now)
}

func ensure(cfg Config, clock func() time.Time) (*Bundle, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hosts, err := parseHosts(cfg.Hosts)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("creating PKI directory: %w", err)
	}
	b := &Bundle{
		CAFile:          filepath.Join(cfg.Dir, caCertName),
		CAKeyFile:       filepath.Join(cfg.Dir, caKeyName),
		ServingCertFile: filepath.Join(cfg.Dir, servingCertName),
		ServingKeyFile:  filepath.Join(cfg.Dir, servingKeyName),
		AdminCertFile:   filepath.Join(cfg.Dir, adminCertName),
		AdminKeyFile:    filepath.Join(cfg.Dir, adminKeyName),
		dir:             cfg.Dir,
		clock:           clock,
	}
	now := clock()
	if b.ca, err = loadOrCreateCA(b.CAFile, b.CAKeyFile, now); err != nil {
		return nil, err
	}
	b.CA = x509.NewCertPool()
	b.CA.AddCert(b.ca.cert)

	serving := leafSpec{commonName: servingCommonName, usage: x509.ExtKeyUsageServerAuth, hosts: hosts}
	if err := ensureLeaf(b.ServingCertFile, b.ServingKeyFile, b.ca, serving, now); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	admin := clientSpec(AdminUser, []string{AdminGroup})
	if err := ensureLeaf(b.AdminCertFile, b.AdminKeyFile, b.ca, admin, now); err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	return b, nil
}

// loadOrCreateCA loads the CA, or makes one when its certificate does not
// exist. The certificate is written last, so its presence means the CA is
// complete; a key without a certificate is an interrupted creation and is
// replaced.
func loadOrCreateCA(certFile, keyFile string, now time.Time) (*keyPair, error) {
	if _, err := os.Stat(certFile); errors.Is(err, os.ErrNotExist) {
		ca, err := newCA(now)
		if err != nil {
			return nil, err
		}
		if err := writePair(certFile, keyFile, ca); err != nil {
			return nil, fmt.Errorf("writing CA: %w", err)
		}
		return ca, nil
	} else if err != nil {
		return nil, fmt.Errorf("checking CA certificate: %w", err)
	}
	var ca *keyPair
	var err error
	if _, statErr := os.Stat(keyFile); errors.Is(statErr, os.ErrNotExist) {
		// A process that does not sign (a split deployment's API server)
		// holds only the CA certificate: it verifies, and keeps the leaves
		// `kubebus certs` issued, but issues none itself.
		ca, err = readCert(certFile)
	} else {
		ca, err = readPair(certFile, keyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("loading CA: %w", err)
	}
	if !ca.cert.IsCA || ca.cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("loading CA: %s is not a CA certificate", certFile)
	}
	if now.After(ca.cert.NotAfter) || now.Before(ca.cert.NotBefore) {
		return nil, fmt.Errorf("loading CA: %s is valid only from %s to %s", certFile,
			ca.cert.NotBefore.Format(time.RFC3339), ca.cert.NotAfter.Format(time.RFC3339))
	}
	return ca, nil
}

// ensureLeaf keeps the pair in certFile and keyFile if it still serves
// spec, and otherwise issues and writes a new one. A pair that is missing,
// unreadable or mismatched is replaced like a stale one: it is ours to
// remake, unlike the CA.
func ensureLeaf(certFile, keyFile string, ca *keyPair, spec leafSpec, now time.Time) error {
	kp, err := readPair(certFile, keyFile)
	if err == nil {
		err = checkLeaf(kp, ca, spec, now)
	}
	if err == nil {
		return nil
	}
	if ca.key == nil {
		return fmt.Errorf("%w: %s cannot be issued here (%v); issue it where the key is, with kubebus certs", ErrNoCAKey, certFile, err)
	}
	kp, err = newLeaf(ca, spec, now)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, kp)
}

func clientSpec(user string, groups []string) leafSpec {
	return leafSpec{commonName: user, orgs: groups, usage: x509.ExtKeyUsageClientAuth}
}

// IssueClient returns the files of a client certificate for user with
// groups (CN and O), issuing one in the bundle's directory unless a valid
// one for exactly that user and those groups is already there. Components
// use it for their identity, e.g. IssueClient("system:kube-scheduler", nil).
func (b *Bundle) IssueClient(user string, groups []string) (certFile, keyFile string, err error) {
	if b == nil || b.ca == nil {
		return "", "", errors.New("pki: IssueClient on a Bundle not made by Ensure")
	}
	if user == "" {
		return "", "", errors.New("pki: IssueClient with an empty user name")
	}
	base := clientPrefix + fileName(user)
	certFile = filepath.Join(b.dir, base+".crt")
	keyFile = filepath.Join(b.dir, base+".key")

	b.mu.Lock()
	defer b.mu.Unlock()
	if err := ensureLeaf(certFile, keyFile, b.ca, clientSpec(user, groups), b.clock()); err != nil {
		return "", "", fmt.Errorf("client certificate for %q: %w", user, err)
	}
	return certFile, keyFile, nil
}

// maxFileName bounds the user part of a client file name; longer names are
// cut and suffixed with a hash.
const maxFileName = 100

// fileName turns a user name into a file name, one-to-one: lower-case
// letters, digits, '-' and '.' stay; ':' becomes '_'; every other byte,
// upper-case letters included (file systems may fold case), becomes %XX.
func fileName(user string) string {
	var sb strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
			sb.WriteByte(c)
		case c == ':':
			sb.WriteByte('_')
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	name := sb.String()
	if len(name) > maxFileName {
		sum := sha256.Sum256([]byte(user))
		name = name[:maxFileName] + "~" + hex.EncodeToString(sum[:8])
	}
	return name
}
