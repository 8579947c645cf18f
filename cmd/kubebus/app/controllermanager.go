package app

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/controllers/kcm"
)

func newControllerManagerCmd(g *globals) *cobra.Command {
	var (
		o          kcm.Options
		kubeconfig string
		elect      bool
		nf         natsFlags
	)
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers (ReplicaSet, Deployment, garbage collector, ...) against an API server and the bus",
		Long: `Run the controller-manager. It reads the cluster from the bus (NATS JetStream)
and writes only through the API server. Run several: one leads, chosen by the
Lease kube-system/kube-controller-manager; the others keep warm caches.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			if o.NATS, err = nf.credentials(cfg); err != nil {
				return err
			}
			o.REST, o.Logger = cfg, g.logger()
			o.Lease.Disabled = !elect
			return kcm.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&o.NATSURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	addNATSFlags(f, &nf)
	f.BoolVar(&elect, "leader-elect", true, "elect a leader through a Lease before running the controllers")
	addControllerManagerFlags(f, &o)
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// addControllerManagerFlags registers the flags `server` shares.
func addControllerManagerFlags(f *pflag.FlagSet, o *kcm.Options) {
	f.StringSliceVar(&o.Controllers, "controllers", []string{"*"}, "controllers to run: '*' for the defaults, 'name' to add one, '-name' to remove one")
	f.DurationVar(&o.Lease.LeaseDuration, "leader-elect-lease-duration", 0, "lease duration (default 15s)")
	f.DurationVar(&o.Lease.RenewDeadline, "leader-elect-renew-deadline", 0, "renew deadline (default 10s)")
	f.DurationVar(&o.Lease.RetryPeriod, "leader-elect-retry-period", 0, "retry period (default 2s)")
	f.StringVar(&o.Instance, "instance", "", "name of this replica for its bus consumers (default the hostname; set it when replicas share a host)")
	f.DurationVar(&o.Tuning.NodeMonitorGracePeriod, "node-monitor-grace-period", 0, "how long a node may go without renewing its lease before it is marked unknown (default 40s)")
	f.StringVar(&o.Tuning.ClusterCIDR, "cluster-cidr", "", "pod address range split into node podCIDRs (default 10.244.0.0/16)")
	f.StringVar(&o.Tuning.ClusterSigningCertFile, "cluster-signing-cert-file", "", "PEM CA certificate the csrsigning controller issues cluster-scoped certificates from (without it and the key, CSRs are not signed)")
	f.StringVar(&o.Tuning.ClusterSigningKeyFile, "cluster-signing-key-file", "", "PEM private key of --cluster-signing-cert-file; the controller-manager is the only component that needs it")
	f.DurationVar(&o.Tuning.ClusterSigningDuration, "cluster-signing-duration", 365*24*time.Hour, "the longest certificate csrsigning issues; a CSR's spec.expirationSeconds may ask for less")
	f.StringVar(&o.Tuning.RootCAFile, "root-ca-file", "", "CA bundle published as ConfigMap kube-root-ca.crt in every namespace (default: the CA in --kubeconfig)")
	f.StringVar(&o.Tuning.LocalPathRoot, "local-path-root", "", "directory on the nodes under which the local-path provisioner makes volumes (default /var/lib/kubebus/storage; `kubebus server`: <data-dir>/storage)")
	f.Float64Var(&o.Tuning.CronJobClockSpeed, "cronjob-clock-speed", 1, "TESTING ONLY: run the CronJob controller's clock this many times faster than real time from its start, so schedules come due sooner (60: a minute a second); the times it writes are then in the future")
	_ = f.MarkHidden("cronjob-clock-speed")
}
