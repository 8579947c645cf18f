package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/proxy"
	"github.com/kubebus/kubebus/proxy/nft"
	"github.com/kubebus/kubebus/proxy/podroutes"
	"github.com/kubebus/kubebus/proxy/record"
	"github.com/kubebus/kubebus/proxy/rules"
)

func newProxyCmd(g *globals) *cobra.Command {
	var (
		cfg           proxy.Config
		natsURL       string
		cleanup, ipv6 bool
		metricsAddr   string
		netnsPath     string
		kubeconfig    string
		nf            natsFlags
		recordLease   bool
		podRoutes     bool
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the node proxy: program Services into nftables",
		Long: `Run the node proxy. It reads Services and EndpointSlices from the bus (NATS
JetStream) and programs the node's nftables tables "kubebus" (family ip, and
family ip6 for IPv6 Services unless --ipv6=false) so that Service addresses
and node ports reach ready endpoints. It carries no traffic itself. With
--cleanup it deletes the tables and exits.

It reads only the bus: a client certificate of the cluster CA for
system:kube-proxy is enough, e.g.
  kubebus certs client --pki-dir DIR --user system:kube-proxy --out proxy
  kubebus proxy --nats-ca-file DIR/ca.crt --nats-cert-file proxy.crt --nats-key-file proxy.key
or a kubeconfig (--kubeconfig) whose client certificate is one. With a
kubeconfig it also records, through the API server, the bus revision its
rules reflect in the Lease kube-node-lease/kube-proxy-<node> (at most once a
second; --record-programmed=false turns it off), which is how
"kubectl why" sees that a change reached the node.

With --pod-routes it also routes the pod network between nodes that share
a link, as flannel's host-gw does: a route to every other node's podCIDRs
through its InternalIP, from the Nodes on the bus (deploy/compose uses it).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, log := cmd.Context(), g.logger()
			if podRoutes && netnsPath != "" {
				return errors.New("proxy: --pod-routes programs the proxy's own network namespace; it does not go with --node-netns")
			}
			var ncfg nft.Config
			if netnsPath != "" {
				ns, err := os.Open(netnsPath)
				if err != nil {
					return fmt.Errorf("opening the node network namespace: %w", err)
				}
				defer ns.Close()
				ncfg.NetNSFd = int(ns.Fd())
			}
			a, err := nft.New(ncfg)
			if err != nil {
				return err
			}
			if cleanup {
				return a.Cleanup(ctx)
			}
			if cfg.Instance == "" {
				if cfg.Instance, err = os.Hostname(); err != nil {
					return fmt.Errorf("naming this proxy: %w", err)
				}
			}
			creds, err := nf.credentialsFrom(kubeconfig)
			if err != nil {
				return fmt.Errorf("proxy: bus credentials: %w", err)
			}
			_, js, err := bus.Connect(natsURL, "kube-proxy-"+cfg.Instance, creds)
			if err != nil {
				return fmt.Errorf("connecting to NATS: %w", err)
			}
			reg := prometheus.NewRegistry()
			cfg.JetStream, cfg.Applier, cfg.Logger, cfg.Metrics = js, a, log.With("component", "proxy"), reg
			if recordLease {
				rc, err := proxyAPIConfig(kubeconfig, nf)
				if err != nil {
					return fmt.Errorf("proxy: %w", err)
				}
				if rc == nil {
					cfg.Logger.Info("not recording what the proxy programmed: no kubeconfig to reach the API server with (--kubeconfig)")
				} else {
					cs, err := kubernetes.NewForConfig(rc)
					if err != nil {
						return fmt.Errorf("proxy: API client: %w", err)
					}
					cfg.Recorder = record.New(cs, cfg.Instance)
				}
			}
			cfg.Families = proxyFamilies(ctx, a, ipv6, cfg.Logger)
			if metricsAddr != "" {
				srv := &http.Server{Addr: metricsAddr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
				go func() {
					if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
						log.Error("proxy metrics server stopped", "err", err)
					}
				}()
				defer srv.Close()
			}
			if !podRoutes {
				return proxy.Run(ctx, cfg)
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			routed := make(chan error, 1)
			go func() {
				err := podroutes.Run(ctx, podroutes.Config{JetStream: js, Node: cfg.Instance, Applier: podroutes.Netlink{},
					Logger: log.With("component", "pod-routes")})
				cancel()
				routed <- err
			}()
			err = proxy.Run(ctx, cfg)
			cancel()
			if rerr := <-routed; err == nil {
				err = rerr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig whose client certificate and CA are the proxy's bus credentials (identity system:kube-proxy, or an admin; default $KUBECONFIG or ~/.kube/config); --nats-* flags override it")
	addNATSFlags(f, &nf)
	f.StringVar(&cfg.Instance, "hostname-override", "", "name of this node for its bus consumers (default the hostname)")
	f.DurationVar(&cfg.MinSyncPeriod, "min-sync-period", proxy.DefaultMinSyncPeriod, "least time between two syncs of the rules")
	f.DurationVar(&cfg.SyncPeriod, "sync-period", proxy.DefaultSyncPeriod, "how often the rules are rebuilt without a change")
	f.BoolVar(&podRoutes, "pod-routes", false, "route the pod network to the other nodes' podCIDRs through their InternalIPs (nodes on one link)")
	f.StringVar(&netnsPath, "node-netns", "", "program the nftables of this network namespace (e.g. the kubelet's --node-netns) instead of the proxy's own")
	f.BoolVar(&cleanup, "cleanup", false, "delete the proxy's nftables tables and exit")
	f.BoolVar(&ipv6, "ipv6", true, "also program IPv6 Services (table ip6 kubebus) when the kernel can")
	f.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:10249", "address of /metrics (empty: none)")
	f.BoolVar(&recordLease, "record-programmed", true, "record the bus revision the rules reflect in the Lease kube-node-lease/kube-proxy-<node>, through the API server (needs a kubeconfig; identity system:kube-proxy)")
	return cmd
}

// proxyAPIConfig returns the client config the proxy records with: the
// kubeconfig at path, or when path is empty the default one ($KUBECONFIG,
// ~/.kube/config) if the bus credentials come from it too (the --nats-*
// flags do not give them all). It is nil when there is none.
func proxyAPIConfig(path string, nf natsFlags) (*rest.Config, error) {
	if path == "" && nf.caFile != "" && nf.certFile != "" {
		return nil, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if path != "" {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		return nil, nil
	}
	return cfg, nil
}

// proxyFamilies returns the IP families the proxy programs: IPv4, and IPv6
// when wanted and the kernel takes an ip6 table with nat chains.
func proxyFamilies(ctx context.Context, a *nft.Applier, ipv6 bool, log *slog.Logger) []rules.Family {
	if !ipv6 {
		return []rules.Family{rules.IPv4}
	}
	if err := a.Supports(ctx, rules.IPv6); err != nil {
		log.Warn("IPv6 Services will not be programmed: the ip6 table could not be written", "err", err)
		return []rules.Family{rules.IPv4}
	}
	return []rules.Family{rules.IPv4, rules.IPv6}
}
