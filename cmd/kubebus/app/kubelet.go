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

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/kubelet/node"
	"github.com/kubebus/kubebus/kubelet/simulate"
)

func newKubeletCmd(g *globals) *cobra.Command {
	var (
		kubeconfig, natsURL, prefix, cpu, memory, ephemeral, instance, ipRange string
		nodes, workers                                                         int
		pods                                                                   int64
		qps                                                                    float32
		serveLogs, rotateServerCerts                                           bool
		caKey                                                                  string
		o                                                                      nodeOptions
		nf                                                                     natsFlags
		finish                                                                 simulate.Finish
	)
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Run a node agent: containers on containerd, or with --simulate=N, N hollow nodes",
		Long: `Run the kubelet of one node. It registers the Node, renews its Lease in
kube-node-lease, receives only the pods bound to it from the bus (NATS
JetStream) and runs them on containerd with runc: its own containerd (root,
state and socket under --root-dir) unless --container-runtime-endpoint names
one. Pods get their network from the standard CNI plugins (bridge,
host-local over the node's podCIDR, portmap, firewall, loopback); with
--node-netns the bridge lives in that network namespace instead of the
kubelet's. Container logs are served over HTTPS on --port to the API server,
which proxies pods/log. Static pods come from --pod-manifest-path.

The kubelet holds no key of the cluster CA. Its serving certificate comes
through the CertificateSigningRequest API: signer
kubernetes.io/kubelet-serving, subject system:node:NAME, for the --node-ip
and the node name. The controller-manager approves it for the node's own
name (so the kubeconfig must be the node's: user system:node:NAME, group
system:nodes, e.g. from kubebus certs kubeconfig) and signs it; it is kept
in --cert-dir and renewed at 80% of its lifetime
(--rotate-server-certificates). With --tls-cert-file and
--tls-private-key-file it serves a certificate of your own instead.

With --simulate=N it runs N hollow nodes in this process instead: they
report their pods Running without containers, for testing the control plane
at scale; pods that run to completion (restartPolicy Never or OnFailure)
finish after --simulate-pod-runtime with --simulate-exit-code. Each advertises its own loopback address from --node-ip-range
(inside 127.0.0.0/8) and serves its pods' logs there, over HTTPS on --port
when given or else a free port, verifying the API server's client
certificate with --client-ca-file: ` + "`kubectl logs`" + ` of a pod on a
hollow node shows a line saying the node is simulated, and no request
leaves this machine. Their serving certificates come through the CSR API
too, one CSR per 1,000 nodes (subject system:node:PREFIXFIRST-LAST, naming
their addresses), which this process approves itself (its kubeconfig must
be allowed to: the admin's is) and the controller-manager signs.

On the bus (NATS, mutual TLS) the kubelet's identity is its kubeconfig's
client certificate unless --nats-cert-file says otherwise: a real node's
must be system:node:NAME in system:nodes, which the bus lets read that
node's pods only. Hollow nodes read many nodes' pods on one connection, so
their identity must be a bus reader (system:masters, as the admin's
kubeconfig is).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if caKey != "" {
				return errors.New("kubelet: --ca-key-file is no longer accepted: the kubelet holds no key of the cluster CA. Its serving certificate comes through the CertificateSigningRequest API, approved and signed by the controller-manager (--cluster-signing-cert-file and --cluster-signing-key-file); to serve a certificate of your own, pass --tls-cert-file and --tls-private-key-file")
			}
			o.noServerCertRotation = !rotateServerCerts
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			if nodes > 0 && !cmd.Flags().Changed("kube-api-qps") {
				// As many kubelets would have: 50 each (upstream's default).
				qps = max(qps, 50*float32(nodes))
			}
			cfg.QPS, cfg.Burst = qps, int(2*qps)
			cfg.ContentType = o.contentType
			if instance == "" {
				instance, _ = os.Hostname()
			}
			if nodes <= 0 {
				creds, err := nf.credentials(cfg)
				if err != nil {
					return err
				}
				if o.caFile == "" {
					o.caFile, o.caData = cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData
				}
				return runNode(cmd.Context(), g.logger(), cfg, natsURL, creds, o)
			}
			if o.manifestDir != "" {
				return errors.New("kubelet: hollow nodes run no static pods: --pod-manifest-path needs a real node")
			}
			nodeIPs, err := simulate.ParseNodeIPRange(ipRange)
			if err != nil {
				return fmt.Errorf("kubelet: --node-ip-range: %w", err)
			}
			var logs *simulate.LogConfig
			if serveLogs {
				if o.caFile == "" {
					o.caFile = cfg.TLSClientConfig.CAFile
				}
				if o.caFile == "" {
					return errors.New("kubelet: hollow nodes verify the API server's client certificate with the cluster CA: pass --client-ca-file (DATA_DIR/pki/ca.crt of kubebus server), or --serve-logs=false")
				}
				logs = &simulate.LogConfig{CAFile: o.caFile, ClientUser: apiserver.KubeletClientUser}
				if cmd.Flags().Changed("port") {
					logs.Port = o.port
				}
			}
			cfg.UserAgent = "kubelet/simulated"
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("creating the API client: %w", err)
			}
			capacity, err := node.Capacity(cpu, memory, ephemeral, pods)
			if err != nil {
				return err
			}
			creds, err := nf.credentials(cfg)
			if err != nil {
				return err
			}
			nc, js, err := bus.Connect(natsURL, "kubelet-simulated", creds)
			if err != nil {
				return err
			}
			defer nc.Close()
			return simulate.Run(cmd.Context(), simulate.Config{
				Client: client, JetStream: js, Nodes: nodes, Prefix: prefix, Capacity: capacity, Workers: workers, Instance: instance,
				LeaseInterval: o.leaseEvery, StatusInterval: o.statusEvery, NodeIPRange: nodeIPs, Logs: logs, Finish: finish,
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubeletVersion, KubeProxyVersion: kubeletVersion, ContainerRuntimeVersion: "simulated://1",
					OSImage: "kubebus hollow node", KernelVersion: "simulated", OperatingSystem: "linux", Architecture: runtime.GOARCH},
				Logger: g.logger(),
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	addNATSFlags(f, &nf)
	f.StringVar(&o.contentType, "kube-api-content-type", protobufContentType, "content type of the requests sent to the API server (upstream's default: protobuf)")
	f.Float32Var(&qps, "kube-api-qps", 500, "API requests per second, burst twice that (with --simulate, shared by all hollow nodes; default 50 per node, as many kubelets)")
	f.DurationVar(&o.leaseEvery, "node-lease-renew-interval", 10*time.Second, "how often each node renews its Lease in kube-node-lease")
	f.DurationVar(&o.statusEvery, "node-status-update-frequency", 10*time.Second, "how often each node posts its status")
	f.StringVar(&instance, "instance", "", "with --simulate, name of this process for its bus consumers (default the hostname); a real node's consumers are named for the node alone")
	// A real node.
	f.StringVar(&o.rootDir, "root-dir", "/var/lib/kubebus/kubelet", "where the kubelet keeps pod volumes, logs, its containerd and the pod network's state")
	f.StringVar(&o.caFile, "client-ca-file", "", "the cluster CA certificate: verifies the API server's client certificate on the log server (default the kubeconfig's CA)")
	f.StringVar(&o.tlsCert, "tls-cert-file", "", "the log server's certificate (PEM), issued by the cluster CA for the node's IP; default: one requested through the CSR API")
	f.StringVar(&o.tlsKey, "tls-private-key-file", "", "the key of --tls-cert-file")
	f.StringVar(&o.certDir, "cert-dir", "", "where the certificate obtained through the CSR API is kept (kubelet-server-current.pem; default ROOT-DIR/pki); ignored with --tls-cert-file")
	f.BoolVar(&rotateServerCerts, "rotate-server-certificates", true, "renew the serving certificate through the CSR API at 80% of its lifetime; false requests one at start (or reuses the stored one) and waits for it")
	f.StringVar(&caKey, "ca-key-file", "", "no longer accepted: the kubelet holds no CA key")
	_ = f.MarkHidden("ca-key-file")
	addNodeFlags(f, &o, "")
	// Hollow nodes.
	f.IntVar(&nodes, "simulate", 0, "run this many hollow nodes (no containers) instead of a real node")
	f.StringVar(&prefix, "node-name-prefix", "hollow-", "name prefix of the hollow nodes, followed by their index")
	f.StringVar(&cpu, "cpu", "4", "cpu capacity of each hollow node")
	f.StringVar(&memory, "memory", "32Gi", "memory capacity of each hollow node")
	f.StringVar(&ephemeral, "ephemeral-storage", "100Gi", "ephemeral-storage capacity of each hollow node")
	f.Int64Var(&pods, "pods", 110, "pod capacity of each hollow node")
	f.IntVar(&workers, "workers", 32, "workers writing pod status, shared by all hollow nodes")
	f.StringVar(&ipRange, "node-ip-range", simulate.DefaultNodeIPRange, "range (inside 127.0.0.0/8) the hollow nodes' addresses come from, node i getting its (i+1)-th address")
	f.DurationVar(&finish.Runtime, "simulate-pod-runtime", 5*time.Second, "how long the containers of pods that run to completion (restartPolicy Never or OnFailure) run on hollow nodes before they exit; negative: forever (annotation "+simulate.RuntimeAnnotation+" overrides it per pod)")
	f.Int32Var(&finish.ExitCode, "simulate-exit-code", 0, "the code those containers exit with: 0 makes the pod Succeeded, another Failed (Never) or restarts it (OnFailure) (annotation "+simulate.ExitCodeAnnotation+" overrides it per pod)")
	f.BoolVar(&serveLogs, "serve-logs", true, "serve the hollow nodes' pod logs (a line saying the node is simulated) on their addresses; needs --client-ca-file (or a kubeconfig naming its CA file)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
