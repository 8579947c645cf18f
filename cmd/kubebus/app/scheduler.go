package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/scheduler/config"
	"github.com/kubebus/kubebus/scheduler/shell"
)

func newSchedulerCmd(g *globals) *cobra.Command {
	var (
		o          shell.Options
		kubeconfig string
		configFile string
		elect      bool
		nf         natsFlags
	)
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler: assign pending pods to nodes through pods/binding",
		Long: `Run the scheduler. It reads nodes, pods and namespaces from the bus (NATS
JetStream) and writes only through the API server. Run several: one leads,
chosen by the Lease kube-system/kube-scheduler; the others keep warm caches.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			if o.Config, err = loadSchedulerConfig(configFile); err != nil {
				return err
			}
			if o.NATS, err = nf.credentials(cfg); err != nil {
				return err
			}
			o.REST, o.Logger = cfg, g.logger()
			if !cmd.Flags().Changed("leader-elect") {
				elect = *o.Config.LeaderElection.LeaderElect
			}
			o.Lease.Disabled = !elect
			return shell.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&o.NATSURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	addNATSFlags(f, &nf)
	f.StringVar(&configFile, "config", "", "KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
	f.BoolVar(&elect, "leader-elect", true, "elect a leader through the Lease kube-system/kube-scheduler before scheduling")
	f.StringVar(&o.Instance, "instance", "", "name of this replica for its bus consumers (default the hostname; set it when replicas share a host)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// loadSchedulerConfig reads a KubeSchedulerConfiguration, or returns the
// defaults when file is empty.
func loadSchedulerConfig(file string) (*config.Configuration, error) {
	if file == "" {
		return config.Default(), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the scheduler config: %w", err)
	}
	c, err := config.Load(data)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", file, err)
	}
	return c, nil
}

// runScheduler runs the scheduler in this process.
func runScheduler(ctx context.Context, log *slog.Logger, pkiDir string, hosts []string, addr, natsURL string, creds bus.Credentials, configFile string, shared *cache.Informers) error {
	cfg, err := componentConfig(pkiDir, hosts, addr, "system:kube-scheduler")
	if err != nil {
		return fmt.Errorf("scheduler credentials: %w", err)
	}
	c, err := loadSchedulerConfig(configFile)
	if err == nil {
		if configFile == "" {
			// In process the scheduler talks to its own API server: upstream's
			// 50 QPS client limit would only throttle it, as for the
			// controller-manager.
			c.ClientConnection.QPS, c.ClientConnection.Burst = 1000, 2000
		}
		err = shell.Run(ctx, shell.Options{REST: cfg, NATSURL: natsURL, NATS: creds, Config: c, Logger: log.With("component", "scheduler"), Caches: schedulerCaches(shared)})
	}
	return err
}
