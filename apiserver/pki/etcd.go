package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// EtcdAPIServerClientUser is the common name of the certificate the API
// server presents to etcd, as upstream kubeadm names it.
const EtcdAPIServerClientUser = "kube-apiserver-etcd-client"

// Subjects of the etcd member certificates; members verify their peers'
// names, not these.
const (
	etcdServerCommonName = "kubebus-etcd-server"
	etcdPeerCommonName   = "kubebus-etcd-peer"
)

// File names of the etcd PKI, laid out as kubeadm does: the etcd CA and the
// member certificates in Config.Dir/etcd, the API server's etcd client
// certificate in Config.Dir.
const (
	etcdDirName             = "etcd"
	etcdServerName          = "server"
	etcdPeerName            = "peer"
	etcdPeerClientName      = "peer-client"
	etcdAPIServerClientName = "apiserver-etcd-client"
)

// etcdDefaultHosts are in every etcd serving and peer certificate.
var etcdDefaultHosts = []string{"127.0.0.1", "localhost"}

// EtcdConfig says where the etcd certificates live and which names the
// member answers to.
type EtcdConfig struct {
	Dir string // the PKI directory (DIR/pki); the etcd CA and member certificates go in Dir/etcd
	// Hosts are the member's DNS names and IPs beyond 127.0.0.1 and
	// localhost, for its serving and peer certificates.
	Hosts []string
}

// EtcdBundle is the file paths of the etcd PKI (EnsureEtcd, EtcdFiles).
type EtcdBundle struct {
	// CAFile and CAKeyFile are the etcd CA, apart from the cluster CA so
	// that only the API server and the members reach etcd: a member trusts
	// this CA alone, for clients and for peers.
	CAFile, CAKeyFile string
	// ServerCertFile and ServerKeyFile are the member's client serving
	// certificate.
	ServerCertFile, ServerKeyFile string
	// PeerCertFile and PeerKeyFile are served to peers, and
	// PeerClientCertFile and PeerClientKeyFile presented to them; both
	// carry the member's names, which peers check against its address.
	PeerCertFile, PeerKeyFile             string
	PeerClientCertFile, PeerClientKeyFile string
	// APIServerClientCertFile and APIServerClientKeyFile are the API
	// server's client certificate (CN EtcdAPIServerClientUser).
	APIServerClientCertFile, APIServerClientKeyFile string
}

// EnsureEtcd creates (or loads, when already present and valid) the etcd
// CA in Dir/etcd, a member's serving, peer and peer client certificates
// for 127.0.0.1, localhost and Hosts, and the API server's etcd client
// certificate, all signed by the etcd CA. Like Ensure it never replaces
// the CA once its certificate exists, and replaces a leaf that is stale,
// mismatched or names other hosts. The members of one cluster share the
// CA: copy Dir/etcd/ca.crt and ca.key to each before its first run.
func EnsureEtcd(cfg EtcdConfig) (*EtcdBundle, error) {
	return ensureEtcd(cfg, time.Now)
}

// EtcdFiles returns where EnsureEtcd keeps the etcd files of the PKI
// directory dir, whether or not they exist: for a process that uses them
// without making them, or a test that reads them.
func EtcdFiles(dir string) *EtcdBundle {
	etcdDir := filepath.Join(dir, etcdDirName)
	pair := func(d, name string) (string, string) {
		return filepath.Join(d, name+".crt"), filepath.Join(d, name+".key")
	}
	b := &EtcdBundle{}
	b.CAFile, b.CAKeyFile = pair(etcdDir, "ca")
	b.ServerCertFile, b.ServerKeyFile = pair(etcdDir, etcdServerName)
	b.PeerCertFile, b.PeerKeyFile = pair(etcdDir, etcdPeerName)
	b.PeerClientCertFile, b.PeerClientKeyFile = pair(etcdDir, etcdPeerClientName)
	b.APIServerClientCertFile, b.APIServerClientKeyFile = pair(dir, etcdAPIServerClientName)
	return b
}

func ensureEtcd(cfg EtcdConfig, clock func() time.Time) (*EtcdBundle, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pki: EtcdConfig.Dir is empty")
	}
	hosts, err := parseHosts(append(slices.Clone(etcdDefaultHosts), cfg.Hosts...))
	if err != nil {
		return nil, fmt.Errorf("pki: etcd: %w", err)
	}
	b := EtcdFiles(cfg.Dir)
	dir := filepath.Dir(b.CAFile)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("creating etcd PKI directory: %w", err)
	}
	now := clock()
	ca, err := loadOrCreateCA(b.CAFile, b.CAKeyFile, now)
	if err != nil {
		return nil, fmt.Errorf("etcd CA in %s: %w", dir, err)
	}
	leaves := []struct {
		what      string
		cert, key string
		spec      leafSpec
	}{
		{"etcd serving", b.ServerCertFile, b.ServerKeyFile,
			leafSpec{commonName: etcdServerCommonName, usage: x509.ExtKeyUsageServerAuth, hosts: hosts}},
		{"etcd peer", b.PeerCertFile, b.PeerKeyFile,
			leafSpec{commonName: etcdPeerCommonName, usage: x509.ExtKeyUsageServerAuth, hosts: hosts}},
		{"etcd peer client", b.PeerClientCertFile, b.PeerClientKeyFile,
			leafSpec{commonName: etcdPeerCommonName, usage: x509.ExtKeyUsageClientAuth, hosts: hosts}},
		{"API server etcd client", b.APIServerClientCertFile, b.APIServerClientKeyFile,
			clientSpec(EtcdAPIServerClientUser, nil)},
	}
	for _, l := range leaves {
		if err := ensureLeaf(l.cert, l.key, ca, l.spec, now); err != nil {
			return nil, fmt.Errorf("%s certificate: %w", l.what, err)
		}
	}
	return b, nil
}
