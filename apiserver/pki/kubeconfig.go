package pki

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names inside the kubeconfig WriteKubeconfig writes.
const (
	KubeconfigCluster = "kubebus"
	KubeconfigUser    = "kubebus-admin"
	KubeconfigContext = "kubebus"
)

// WriteKubeconfig writes to path a kubeconfig with cluster "kubebus"
// (serverURL, the CA embedded), user "kubebus-admin" (the client
// certificate and key in certFile and keyFile embedded; the admin's when
// both are empty) and current context "kubebus" joining them. The file is
// written atomically, mode 0600, since it holds a private key.
func WriteKubeconfig(path, serverURL string, b *Bundle, certFile, keyFile string) error {
	if b == nil || b.CAFile == "" {
		return errors.New("pki: WriteKubeconfig without a Bundle")
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return fmt.Errorf("pki: server URL: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("pki: server URL %q is not an https URL with a host", serverURL)
	}
	if certFile == "" && keyFile == "" {
		certFile, keyFile = b.AdminCertFile, b.AdminKeyFile
	}
	caData, err := os.ReadFile(b.CAFile)
	if err != nil {
		return fmt.Errorf("reading CA certificate: %w", err)
	}
	certData, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("reading client certificate: %w", err)
	}
	keyData, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("reading client key: %w", err)
	}
	// Fail here, not in kubectl, if the pair is unusable.
	if _, err := tls.X509KeyPair(certData, keyData); err != nil {
		return fmt.Errorf("client certificate %s and key %s: %w", certFile, keyFile, err)
	}

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigCluster] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: caData,
	}
	cfg.AuthInfos[KubeconfigUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certData,
		ClientKeyData:         keyData,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:  KubeconfigCluster,
		AuthInfo: KubeconfigUser,
	}
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return fmt.Errorf("creating kubeconfig directory: %w", err)
	}
	if err := WriteFileAtomic(path, data, keyMode); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
