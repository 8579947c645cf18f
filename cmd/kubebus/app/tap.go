package app

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus/tap"
)

func newTapCmd(g *globals) *cobra.Command {
	var (
		fl         tap.Flags
		lag        bool
		kubeconfig string
		nf         natsFlags
	)
	cmd := &cobra.Command{
		Use:   "tap",
		Short: "Tail every change in the cluster, read straight from the bus",
		Long: `Print the changes the API server republished on the bus (the KUBE_HISTORY
JetStream stream), one row per change, with a field-level diff under every
MODIFIED row whose previous state is still on the bus (events name the
previous revision; tap reads that state from the stream). A GAP line says a
range of revisions was never published.

Without --since, tap follows from now; with --follow=false it prints the
whole retained history and exits. --since takes an etcd revision (replay
from that revision, inclusive) or a duration (replay what was stored in it).

tap is read-only: it never publishes and creates no durable consumer.

Reading NATS directly needs bus credentials of a reader (system:masters,
as the admin kubeconfig's): by default the client certificate and CA of
$KUBECONFIG (or ~/.kube/config), overridden by --nats-ca-file,
--nats-cert-file and --nats-key-file. With --kubeconfig the API server
reads the bus instead.`,
		Example: `  kubebus tap
  kubebus tap --resource deployments.apps -n default --type MODIFIED
  kubebus tap --resource pods -l app=web --since 10m
  kubebus tap --since 1200 --follow=false -o json
  kubebus tap lag
  kubebus tap lag --kubeconfig ~/.kube/config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lag {
				return tapLag(cmd, fl.URL, kubeconfig, nf)
			}
			all, _ := cmd.Flags().GetBool("all-namespaces")
			fl.AllNamespaces = all && cmd.Flags().Changed("all-namespaces")
			if kubeconfig != "" {
				hc, host, err := apiServerClient(cmd, kubeconfig)
				if err != nil {
					return err
				}
				return tap.RunRemote(cmd.Context(), hc, host, fl, isTerminal(cmd.OutOrStdout()), cmd.OutOrStdout())
			}
			cfg, err := fl.Config(isTerminal(cmd.OutOrStdout()))
			if err != nil {
				return err
			}
			cfg.Logger = g.logger()
			creds, err := nf.credentialsFrom("")
			if err != nil {
				return fmt.Errorf("tap: bus credentials: %w", err)
			}
			return tap.Run(cmd.Context(), cfg, creds, cmd.OutOrStdout())
		},
	}
	cmd.PersistentFlags().StringVar(&fl.URL, "nats-url", tap.DefaultURL, "NATS server URL")
	addNATSFlags(cmd.PersistentFlags(), &nf)
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "read through the API server with this kubeconfig instead of from NATS directly")
	f := cmd.Flags()
	f.StringVar(&fl.Resource, "resource", "", "only this resource: pods, deployments.apps, apps/deployments or a short name")
	f.StringVarP(&fl.Namespace, "namespace", "n", "", "only this namespace")
	f.BoolP("all-namespaces", "A", true, "every namespace")
	f.StringVarP(&fl.Selector, "selector", "l", "", "label selector, matched against the object's labels (e.g. app=web,tier!=db)")
	f.StringVar(&fl.Name, "name", "", "only objects with this name")
	f.StringVar(&fl.Types, "type", "", "only these event types: ADDED,MODIFIED,DELETED")
	f.StringVar(&fl.Since, "since", "", "start at an etcd revision (e.g. 1200) or a duration ago (e.g. 10m)")
	f.BoolVarP(&fl.Follow, "follow", "f", true, "keep printing new changes; --follow=false prints what is stored and exits")
	f.StringVarP(&fl.Output, "output", "o", "table", "output format: table, json (one object per line) or yaml")
	f.BoolVar(&fl.NoColor, "no-color", false, "never colour the diff")
	f.BoolVar(&lag, "lag", false, "print consumer lag instead (same as 'kubebus tap lag')")
	cmd.AddCommand(newTapLagCmd(&fl, &kubeconfig, &nf))
	return cmd
}

func newTapLagCmd(fl *tap.Flags, kubeconfig *string, nf *natsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "lag",
		Short: "Show how far every durable consumer of the bus is behind",
		Long: `For every durable consumer on KUBE_HISTORY and KUBE_NODEPODS print its
filter, how many messages it has still to process (undelivered plus
unacknowledged), the age of the oldest one it has not acknowledged, and the
revision at its ack floor; the most behind first.

With --kubeconfig the API server reads the consumers for a user who may list
and watch every resource in every namespace; otherwise lag reads NATS
directly with bus credentials, as tap does.`,
		Example: `  kubebus tap lag
  kubebus tap lag --kubeconfig ~/.kube/config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tapLag(cmd, fl.URL, *kubeconfig, *nf)
		},
	}
}

// tapLag prints the consumers' lag: through the API server with a
// kubeconfig, else from NATS at url.
func tapLag(cmd *cobra.Command, url, kubeconfig string, nf natsFlags) error {
	if kubeconfig != "" {
		hc, host, err := apiServerClient(cmd, kubeconfig)
		if err != nil {
			return err
		}
		return tap.LagRemote(cmd.Context(), hc, host, cmd.OutOrStdout())
	}
	creds, err := nf.credentialsFrom("")
	if err != nil {
		return fmt.Errorf("tap: bus credentials: %w", err)
	}
	return tap.Lag(cmd.Context(), url, creds, cmd.OutOrStdout())
}

// apiServerClient is an HTTP client with the credentials of the kubeconfig
// at path, and the API server it names. --nats-url with --kubeconfig is an
// error: one reads NATS directly, the other through the API server.
func apiServerClient(cmd *cobra.Command, path string) (*http.Client, string, error) {
	if cmd.Flags().Changed("nats-url") {
		return nil, "", errors.New("tap: --kubeconfig reads through the API server and --nats-url reads NATS directly; pick one")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, "", fmt.Errorf("tap: a client for %s: %w", rc.Host, err)
	}
	return hc, rc.Host, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
