package app

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus"
)

// natsFlags are the bus credentials a split component may give: by
// default its bus identity is its API identity (the client certificate
// and CA of its kubeconfig); each file overrides its part.
type natsFlags struct {
	caFile, certFile, keyFile string
}

func addNATSFlags(f *pflag.FlagSet, n *natsFlags) {
	f.StringVar(&n.caFile, "nats-ca-file", "", "CA certificate (PEM) that signs the NATS server's certificate (default the kubeconfig's CA)")
	f.StringVar(&n.certFile, "nats-cert-file", "", "client certificate (PEM) for NATS: its CN and O are the bus identity (default the kubeconfig's client certificate)")
	f.StringVar(&n.keyFile, "nats-key-file", "", "key of --nats-cert-file (default the kubeconfig's client key)")
}

// credentials returns the bus credentials: the flags, completed from cfg
// (a component's kubeconfig; nil when it has none).
func (n natsFlags) credentials(cfg *rest.Config) (bus.Credentials, error) {
	if (n.certFile == "") != (n.keyFile == "") {
		return bus.Credentials{}, errors.New("--nats-cert-file and --nats-key-file go together")
	}
	c := bus.Credentials{CAFile: n.caFile, CertFile: n.certFile, KeyFile: n.keyFile}
	if cfg != nil {
		t := cfg.TLSClientConfig
		if c.CAFile == "" {
			c.CAFile, c.CAData = t.CAFile, t.CAData
		}
		if c.CertFile == "" {
			c.CertFile, c.CertData, c.KeyFile, c.KeyData = t.CertFile, t.CertData, t.KeyFile, t.KeyData
		}
	}
	switch {
	case c.CAFile == "" && len(c.CAData) == 0:
		return bus.Credentials{}, errors.New("no CA for the bus: pass --nats-ca-file or a kubeconfig that names the cluster CA")
	case c.CertFile == "" && len(c.CertData) == 0, c.KeyFile == "" && len(c.KeyData) == 0:
		return bus.Credentials{}, errors.New("no client certificate for the bus: pass --nats-cert-file and --nats-key-file or a kubeconfig with a client certificate")
	}
	return c, nil
}

// credentialsFrom is credentials with the kubeconfig at path, or when path
// is empty the default one ($KUBECONFIG, ~/.kube/config) if any: for
// commands whose kubeconfig only gives the bus identity.
func (n natsFlags) credentialsFrom(path string) (bus.Credentials, error) {
	if n.caFile != "" && n.certFile != "" {
		return n.credentials(nil)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if path != "" {
			return bus.Credentials{}, fmt.Errorf("loading kubeconfig: %w", err)
		}
		cfg = nil
	}
	return n.credentials(cfg)
}

// natsServingName is the embedded NATS server's certificate name (its
// files are pki/serving-kubebus-nats.{crt,key}).
const natsServingName = "kubebus-nats"

// natsHosts are the names the embedded NATS server's certificate carries:
// it listens on loopback.
var natsHosts = []string{"localhost", "127.0.0.1", "::1"}
