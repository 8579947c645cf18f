package app

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/kubelet/node"
	"github.com/kubebus/kubebus/kubelet/simulate"
)

func newKubeletCmd(g *globals) *cobra.Command {
	var (
		kubeconfig, natsURL, prefix, cpu, memory, ephemeral, instance string
		nodes, workers                                                int
		pods                                                          int64
		qps                                                           float32
		leaseEvery, statusEvery                                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Run a node agent; with --simulate=N, N hollow nodes that report their pods Running without containers",
		Long: `Run the kubelet. Only simulated nodes are implemented so far: --simulate=N runs
N hollow nodes in this process. Each registers its Node, renews its Lease in
kube-node-lease every 10s, posts its status, receives only its own pods from
the bus (NATS JetStream) and reports them Running; it deletes terminating
pods for good, as a kubelet does once their containers are gone.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes <= 0 {
				return errors.New("kubelet: only simulated nodes are implemented: set --simulate=N")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			cfg.QPS, cfg.Burst = qps, int(2*qps)
			cfg.UserAgent = "kubelet/simulated"
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("creating the API client: %w", err)
			}
			capacity, err := node.Capacity(cpu, memory, ephemeral, pods)
			if err != nil {
				return err
			}
			nc, js, err := bus.Connect(natsURL, "kubelet-simulated")
			if err != nil {
				return err
			}
			defer nc.Close()
			if instance == "" {
				instance, _ = os.Hostname()
			}
			return simulate.Run(cmd.Context(), simulate.Config{
				Client: client, JetStream: js, Nodes: nodes, Prefix: prefix, Capacity: capacity, Workers: workers, Instance: instance,
				LeaseInterval: leaseEvery, StatusInterval: statusEvery,
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.0-kubebus", KubeProxyVersion: "v1.33.0-kubebus", ContainerRuntimeVersion: "simulated://1",
					OSImage: "kubebus hollow node", KernelVersion: "simulated", OperatingSystem: "linux", Architecture: runtime.GOARCH},
				Logger: g.logger(),
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	f.IntVar(&nodes, "simulate", 0, "run this many hollow nodes (no containers)")
	f.StringVar(&prefix, "node-name-prefix", "hollow-", "name prefix of the hollow nodes, followed by their index")
	f.StringVar(&cpu, "cpu", "4", "cpu capacity of each hollow node")
	f.StringVar(&memory, "memory", "32Gi", "memory capacity of each hollow node")
	f.StringVar(&ephemeral, "ephemeral-storage", "100Gi", "ephemeral-storage capacity of each hollow node")
	f.Int64Var(&pods, "pods", 110, "pod capacity of each hollow node")
	f.IntVar(&workers, "workers", 32, "workers writing pod status, shared by all hollow nodes")
	f.Float32Var(&qps, "kube-api-qps", 500, "API requests per second, shared by all hollow nodes (burst twice that)")
	f.DurationVar(&leaseEvery, "node-lease-renew-interval", 10*time.Second, "how often each node renews its Lease in kube-node-lease")
	f.DurationVar(&statusEvery, "node-status-update-frequency", 10*time.Second, "how often each node posts its status")
	f.StringVar(&instance, "instance", "", "name of this process for its bus consumers (default the hostname)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
