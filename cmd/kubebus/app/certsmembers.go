package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubebus/kubebus/apiserver/pki"
)

// newCertsServingCmd issues a serving certificate of the cluster CA, for
// a server clients verify against it (a NATS member).
func newCertsServingCmd(pkiDir *string) *cobra.Command {
	var (
		name  string
		hosts []string
	)
	cmd := &cobra.Command{
		Use:   "serving",
		Short: "Issue a serving certificate from the cluster CA for --hosts: serving-NAME.crt and .key in --pki-dir",
		Long: `Issue a serving certificate from the cluster CA, named --name, for the DNS
names and addresses --hosts, as serving-NAME.crt and serving-NAME.key in
--pki-dir (kept when a valid one for exactly those hosts is there): for a
server clients verify against the cluster CA, such as a NATS member
(kubebus nats --cert-file).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := pki.Load(*pkiDir)
			if err != nil {
				return certsLoadError(*pkiDir, err)
			}
			certFile, keyFile, err := b.IssueServing(name, hosts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving certificate %q: %s %s\n", name, certFile, keyFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the certificate's common name, also its file name")
	cmd.Flags().StringSliceVar(&hosts, "hosts", nil, "DNS names and IP addresses the certificate is for")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

// newCertsEtcdCmd makes the etcd CA (apart from the cluster CA) and the
// API server's etcd client certificate.
func newCertsEtcdCmd(pkiDir *string) *cobra.Command {
	var hosts []string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Create the etcd CA in --pki-dir/etcd and the API server's etcd client certificate",
		Long: `Create (or keep) the etcd CA in --pki-dir/etcd (ca.crt, ca.key), apart from
the cluster CA so that only the API servers and the members reach etcd, a
member's certificates there for 127.0.0.1, localhost and --hosts, and the
API server's etcd client certificate in --pki-dir (apiserver-etcd-client.crt
and .key: kubebus apiserver --etcd-certfile, --etcd-keyfile, with
--etcd-cafile --pki-dir/etcd/ca.crt). Copy etcd/ca.crt and etcd/ca.key
into each member's --pki-dir/etcd before its first kubebus etcd run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: *pkiDir, Hosts: hosts})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "etcd CA: %s %s\nAPI server to etcd: %s %s\n",
				b.CAFile, b.CAKeyFile, b.APIServerClientCertFile, b.APIServerClientKeyFile)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&hosts, "hosts", nil, "further names and addresses of the member certificates made here")
	return cmd
}
