package app

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/serve"
	"github.com/kubebus/kubebus/apiserver/serviceaccount"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/bus/busauth"
)

// newCertsCmd is `kubebus certs`: the cluster CA and the credentials of a
// split deployment, as upstream's `kubeadm init phase certs` and
// `kubeadm kubeconfig user`.
func newCertsCmd() *cobra.Command {
	var (
		pkiDir, svcRange, advertise string
		hosts                       []string
	)
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster CA, the API server's serving certificate and the admin certificate in --pki-dir",
		Long: `Create, in --pki-dir, the cluster CA (ca.crt, ca.key), the API server's
serving certificate for --hosts (serving.crt, serving.key) and the admin
client certificate (admin.crt, admin.key), and the API server's client
certificates (to kubelets, and on the bus as system:kubebus:publisher), or
keep those that are there and still valid. The CA is never replaced.

For a split deployment: run it once, give kubebus apiserver a copy of
--pki-dir without ca.key and the same names (--tls-hosts,
--service-cluster-ip-range, --advertise-address): it keeps the certificates
made here (also the one it shows kubelets, and the ServiceAccount signing
key sa.key that every API server must share) and issues none. Give the
controller-manager the CA to sign with (ca.crt and ca.key: the only
component that needs the key).
Every other component gets a kubeconfig of its own identity from
` + "`kubebus certs kubeconfig`" + `; a kubelet, for instance:

  kubebus certs kubeconfig --pki-dir DIR --user system:node:NAME --group system:nodes \
      --server https://HOST:6443 --out NAME.kubeconfig

and requests its serving certificate through the CertificateSigningRequest
API.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The same names the API server ensures (its hosts, the
			// kubernetes Service's names and address, the advertised
			// address), so an API server without the CA key keeps them.
			b, err := pki.Ensure(pki.Config{Dir: pkiDir, Hosts: serve.ServingHosts(hosts, svcRange, advertise)})
			if err != nil {
				return err
			}
			kcert, kkey, err := b.IssueClient(apiserver.KubeletClientUser, nil)
			if err != nil {
				return err
			}
			// The API server's bus identity: the publisher.
			pcert, pkey, err := b.IssueClient(busauth.PublisherUser, nil)
			if err != nil {
				return err
			}
			// The ServiceAccount signing key every API server shares.
			if _, err := serviceaccount.LoadOrCreateKey(pkiDir); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "CA: %s %s\nAPI server: %s %s\nAPI server to kubelets: %s %s\nAPI server on the bus: %s %s\nadmin: %s %s\n",
				b.CAFile, b.CAKeyFile, b.ServingCertFile, b.ServingKeyFile, kcert, kkey, pcert, pkey, b.AdminCertFile, b.AdminKeyFile)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&pkiDir, "pki-dir", "", "directory of the cluster CA (created 0700 if missing)")
	_ = cmd.MarkPersistentFlagRequired("pki-dir")
	cmd.Flags().StringSliceVar(&hosts, "hosts", []string{"localhost", "127.0.0.1", "::1"}, "DNS names and IP addresses of the API server's serving certificate")
	cmd.Flags().StringVar(&svcRange, "service-cluster-ip-range", servicealloc.DefaultClusterIPRange, "the API server's service range (the kubernetes Service's address is in the serving certificate)")
	cmd.Flags().StringVar(&advertise, "advertise-address", "", "the API server's advertised address, when it has one")
	cmd.AddCommand(newCertsClientCmd(&pkiDir), newCertsKubeconfigCmd(&pkiDir), newCertsServingCmd(&pkiDir), newCertsEtcdCmd(&pkiDir))
	return cmd
}

// identity is the user a client certificate names.
type identity struct {
	user   string
	groups []string
}

func (id *identity) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&id.user, "user", "", "user name: the certificate's common name")
	cmd.Flags().StringArrayVar(&id.groups, "group", nil, "group: an organization of the certificate (repeat for several)")
	_ = cmd.MarkFlagRequired("user")
}

func newCertsClientCmd(pkiDir *string) *cobra.Command {
	var (
		id  identity
		out string
	)
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Issue a client certificate from the cluster CA: PREFIX.crt and PREFIX.key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := pki.Load(*pkiDir)
			if err != nil {
				return certsLoadError(*pkiDir, err)
			}
			certFile, keyFile := out+".crt", out+".key"
			if err := b.IssueClientTo(certFile, keyFile, id.user, id.groups); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "client certificate of %q: %s %s\n", id.user, certFile, keyFile)
			return nil
		},
	}
	id.addFlags(cmd)
	cmd.Flags().StringVar(&out, "out", "", "path prefix of the files written: PREFIX.crt and PREFIX.key")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newCertsKubeconfigCmd(pkiDir *string) *cobra.Command {
	var (
		id          identity
		server, out string
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Write a kubeconfig for a user, with a client certificate from the cluster CA",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("certs: --server %q is not an https URL with a host", server)
			}
			b, err := pki.Load(*pkiDir)
			if err != nil {
				return certsLoadError(*pkiDir, err)
			}
			certFile, keyFile, err := b.IssueClient(id.user, id.groups)
			if err != nil {
				return err
			}
			if err := pki.WriteKubeconfig(out, server, b, certFile, keyFile); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kubeconfig of %q for %s: %s\n", id.user, server, out)
			return nil
		},
	}
	id.addFlags(cmd)
	cmd.Flags().StringVar(&server, "server", "", "the API server's URL, e.g. https://10.0.0.1:6443")
	cmd.Flags().StringVar(&out, "out", "", "the kubeconfig file to write (0600)")
	_ = cmd.MarkFlagRequired("server")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// certsLoadError says what to do when there is no CA to issue from.
func certsLoadError(dir string, err error) error {
	if errors.Is(err, pki.ErrNoCAKey) {
		return fmt.Errorf("%w: certificates are issued where the CA key is", err)
	}
	return fmt.Errorf("%w: run `kubebus certs --pki-dir %s` first", err, filepath.Clean(dir))
}
