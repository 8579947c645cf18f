package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/kubelet/agent"
	"github.com/kubebus/kubebus/kubelet/certs"
	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/host"
	"github.com/kubebus/kubebus/kubelet/node"
	"github.com/kubebus/kubebus/kubelet/runtime/containerd"
	"github.com/kubebus/kubebus/kubelet/server"
)

// kubeletVersion is what real nodes report.
const kubeletVersion = "v1.33.0-kubebus"

// nodeOptions configure a real kubelet.
type nodeOptions struct {
	name            string
	rootDir         string
	runtimeEndpoint string // an existing containerd; empty: run our own
	manifestDir     string
	nodeIP          string
	address         string // the log server's address
	port            int
	caFile          string // verifies the API server's client certificate
	caData          []byte // instead of caFile: the kubeconfig's embedded CA
	// The log server's certificate: from tlsCert and tlsKey when given,
	// else through the CSR API, kept in certDir (default ROOT/pki) and,
	// unless noServerCertRotation, renewed at 80% of its lifetime.
	tlsCert, tlsKey      string
	certDir              string
	noServerCertRotation bool
	netns                string // the node network namespace (pods' bridge)
	bridge               string
	cniBinDirs           []string
	maxPods              int64
	gcHigh, gcLow        int
	leaseEvery           time.Duration
	statusEvery          time.Duration
	onReady              func() // called when the node agent posted Ready=True
	// clusterDNS are the nameservers of ClusterFirst pods (the kube-dns
	// Service's ClusterIP), clusterDomain the domain they search.
	clusterDNS    []string
	clusterDomain string
	// contentType is that of the requests to the API server (default
	// protobufContentType, as upstream's kubelet).
	contentType string
}

// protobufContentType is Kubernetes' protobuf media type, which upstream's
// kubelet and scheduler send by default: smaller and cheaper to encode and
// decode than JSON on both ends.
const protobufContentType = "application/vnd.kubernetes.protobuf"

func addNodeFlags(f *pflag.FlagSet, o *nodeOptions, prefix string) {
	f.StringVar(&o.name, prefix+"hostname-override", "", "node name (default the hostname)")
	f.StringVar(&o.runtimeEndpoint, prefix+"container-runtime-endpoint", "", "socket of a running containerd (default: start one with its root, state and socket under the kubelet's root dir)")
	f.StringVar(&o.manifestDir, prefix+"pod-manifest-path", "", "directory of static pod manifests")
	f.StringVar(&o.nodeIP, prefix+"node-ip", "127.0.0.1", "the node's InternalIP, where the API server reaches the kubelet")
	f.StringVar(&o.address, prefix+"address", "127.0.0.1", "address the kubelet's log server listens on")
	f.IntVar(&o.port, prefix+"port", 10250, "port of the kubelet's log server (0 picks a free one)")
	f.StringVar(&o.netns, prefix+"node-netns", "", "path of a network namespace holding the pod network's bridge (e.g. /run/netns/kubebus-node); default the kubelet's own")
	f.StringVar(&o.bridge, prefix+"cni-bridge", "kubebus0", "name of the pod network's bridge")
	f.StringSliceVar(&o.cniBinDirs, prefix+"cni-bin-dir", cni.DefaultPluginDirs, "directories holding the CNI plugins")
	f.Int64Var(&o.maxPods, prefix+"max-pods", 110, "pods this node runs at most")
	f.IntVar(&o.gcHigh, prefix+"image-gc-high-threshold", 85, "disk use (percent) above which unused images are removed")
	f.IntVar(&o.gcLow, prefix+"image-gc-low-threshold", 80, "disk use (percent) image GC frees down to")
	f.StringSliceVar(&o.clusterDNS, prefix+"cluster-dns", nil, "cluster DNS addresses written into the resolv.conf of pods with dnsPolicy ClusterFirst (the kube-dns Service's ClusterIP, the 10th address of the service range, which kubebus server sets); without, those pods get the node's")
	f.StringVar(&o.clusterDomain, prefix+"cluster-domain", "cluster.local", "the cluster's DNS domain, searched by pods with dnsPolicy ClusterFirst")
}

// runNode runs a real kubelet: its containerd (unless one is given), the
// node agent, the pod network, the pods and the log server. It reads its
// pods from the bus with creds, which must be the node's own identity
// (system:node:NAME): the bus lets a node read only its own pods, through
// consumers named for the node alone (busauth.NodeConsumer), so the pod
// informer has no instance.
func runNode(ctx context.Context, log *slog.Logger, cfg *rest.Config, natsURL string, creds bus.Credentials, o nodeOptions) error {
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("kubelet: node name: %w", err)
		}
		o.name = h
	}
	if net.ParseIP(o.nodeIP) == nil {
		return fmt.Errorf("kubelet: --node-ip %q is not an IP address", o.nodeIP)
	}
	if o.caFile == "" && len(o.caData) == 0 {
		return errors.New("kubelet: the cluster CA certificate is needed to verify the API server's client certificate on the log server: pass --client-ca-file")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("kubelet: --tls-cert-file and --tls-private-key-file go together")
	}
	root, err := filepath.Abs(o.rootDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("kubelet: creating %s: %w", root, err)
	}
	agentLog := log.With("component", "kubelet") // the node agent names its node itself
	log = agentLog.With("node", o.name)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The node agent says at once when the runtime goes down or comes back.
	var agentRef atomic.Pointer[node.Agent]
	endpoint := o.runtimeEndpoint
	var sup *containerd.Supervisor
	if endpoint == "" {
		sup, err = containerd.StartSupervisor(ctx, containerd.SupervisorConfig{Dir: filepath.Join(root, "containerd"), Logger: log,
			OnChange: func(bool) {
				if a := agentRef.Load(); a != nil {
					a.Poke()
				}
			}})
		if err != nil {
			return err
		}
		endpoint = sup.Address()
	}

	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubelet/" + kubeletVersion
	cfg.ContentType = cmp.Or(o.contentType, protobufContentType)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubelet: API client: %w", err)
	}
	nc, js, err := bus.Connect(natsURL, "kubelet-"+o.name, creds)
	if err != nil {
		return err
	}
	defer nc.Close()

	capacity, err := host.Capacity(root, o.maxPods)
	if err != nil {
		return err
	}
	// The runtime needs the node's pod CIDR; until it is there, the node
	// reports NotReady.
	var (
		mu      sync.Mutex
		kubelet *agent.Kubelet
		rt      *containerd.Runtime
	)
	notReady := func() string {
		mu.Lock()
		k, r := kubelet, rt
		mu.Unlock()
		switch {
		case k == nil:
			return "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:waiting for the node's podCIDR"
		case !k.Ready():
			return "PLEG is not healthy: pod sources not synced yet"
		}
		// A containerd that died is restarted by its supervisor with
		// backoff; until it answers, the node says so.
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := r.Version(vctx); err != nil && ctx.Err() == nil {
			return "container runtime is down: " + err.Error()
		}
		return ""
	}
	imagesCtx := ctx
	nodeAgent := &node.Agent{
		Config: node.Config{Name: o.name, InternalIP: o.nodeIP, Capacity: capacity, KubeletPort: int32(o.port),
			NodeInfo: host.SystemInfo(kubeletVersion, "containerd://1")},
		Client: client, Logger: agentLog, LeaseInterval: o.leaseEvery, StatusInterval: o.statusEvery, OnReady: o.onReady,
		Health: func() node.Health {
			h := node.Health{NotReady: notReady()}
			if p, err := host.ReadPressure(root); err == nil {
				h.MemoryPressure, h.DiskPressure, h.PIDPressure = p.Memory, p.Disk, p.PID
			}
			mu.Lock()
			k := kubelet
			mu.Unlock()
			if k != nil {
				h.Images = k.Images(imagesCtx)
			}
			return h
		},
	}
	agentRef.Store(nodeAgent)
	errc := make(chan error, 5)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errc <- nodeAgent.Run(ctx) }()

	// The log server listens first, so the node status can name its port.
	lis, err := net.Listen("tcp", net.JoinHostPort(o.address, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("kubelet: log server: %w", err)
	}
	if o.port == 0 {
		o.port = lis.Addr().(*net.TCPAddr).Port
		nodeAgent.Config.KubeletPort = int32(o.port)
	}

	podCIDR, err := waitPodCIDR(ctx, client, o.name, log)
	if err != nil {
		lis.Close()
		return err
	}
	network, err := cni.New(cni.Config{PodCIDR: podCIDR, BridgeName: o.bridge, PluginDirs: o.cniBinDirs, Dir: filepath.Join(root, "cni"), NetNS: o.netns})
	if err != nil {
		lis.Close()
		return err
	}
	rt, err = containerd.New(ctx, containerd.Config{Address: endpoint, Dir: filepath.Join(root, "runtime"), Network: network, HostIP: o.nodeIP, HostNetNS: o.netns, Logger: log})
	if err != nil {
		lis.Close()
		return err
	}
	defer rt.Close()
	if v, err := rt.Version(ctx); err == nil {
		nodeAgent.Config.NodeInfo.ContainerRuntimeVersion = "containerd://" + v
	}
	k, err := agent.New(agent.Config{
		NodeName: o.name, Client: client, JetStream: js, Runtime: rt,
		RootDir: root, ManifestDir: o.manifestDir, HostIPs: []string{o.nodeIP}, Allocatable: capacity,
		ImageGCHighThreshold: o.gcHigh, ImageGCLowThreshold: o.gcLow, Logger: log,
		ClusterDNS: o.clusterDNS, ClusterDomain: o.clusterDomain,
	})
	if err != nil {
		lis.Close()
		return err
	}
	if o.netns != "" {
		k.ProbeDialer(cni.Dialer(o.netns))
	}
	serving, err := servingCert(ctx, client, root, o, log)
	if err != nil {
		lis.Close()
		return err
	}
	var clientCAs *x509.CertPool
	if o.caFile == "" {
		if clientCAs = x509.NewCertPool(); !clientCAs.AppendCertsFromPEM(o.caData) {
			lis.Close()
			return errors.New("kubelet: the kubeconfig's certificate-authority-data holds no PEM certificate")
		}
	}
	logs, err := server.New(server.Config{
		TLS: serving.tls, CertFile: o.tlsCert, KeyFile: o.tlsKey, ClientCAFile: o.caFile, ClientCAs: clientCAs, Logs: k, Streams: k, Logger: log,
		Authorize: func(user string, _ []string) error {
			if user != apiserver.KubeletClientUser {
				return fmt.Errorf("user %q may not read logs from the kubelet", user)
			}
			return nil
		},
	})
	if err != nil {
		lis.Close()
		return err
	}
	if serving.rotate != nil {
		wg.Add(1)
		go func() { defer wg.Done(); errc <- serving.rotate.Run(ctx) }()
	}
	mu.Lock()
	kubelet = k
	mu.Unlock()
	wg.Add(3)
	go func() { defer wg.Done(); pokeWhenReady(ctx, k, nodeAgent) }()
	go func() { defer wg.Done(); errc <- logs.Serve(ctx, lis) }()
	go func() { defer wg.Done(); errc <- k.Run(ctx) }()
	log.Info("kubelet running", "podCIDR", podCIDR, "runtime", endpoint, "logs", lis.Addr().String())

	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	}
	cancel()
	wg.Wait()
	if sup != nil {
		sup.Wait()
	}
	if first != nil && !errors.Is(first, context.Canceled) {
		return first
	}
	return nil
}

// servingTLS is where the log server's certificate comes from: tls (nil
// when the operator's files serve) and the manager to run for rotation.
type servingTLS struct {
	tls    *tls.Config
	rotate *certs.Manager
}

// servingCert sets up the log server's certificate. Without the
// operator's files it comes through the CSR API (signer
// kubernetes.io/kubelet-serving) for the node's IP and name: the stored
// one while it is good, else a new one the controller-manager approves and
// signs. With rotation the request and the renewals happen in the
// background (handshakes fail until the first is signed, as upstream);
// without, the kubelet waits for the certificate here.
func servingCert(ctx context.Context, client kubernetes.Interface, root string, o nodeOptions, log *slog.Logger) (servingTLS, error) {
	if o.tlsCert != "" {
		return servingTLS{}, nil
	}
	dir := o.certDir
	if dir == "" {
		dir = filepath.Join(root, "pki")
	}
	m, err := certs.New(certs.Config{Client: client, NodeName: o.name, Hosts: []string{o.nodeIP, o.name}, Dir: dir, Logger: log})
	if err != nil {
		return servingTLS{}, fmt.Errorf("kubelet: serving certificate: %w", err)
	}
	st := servingTLS{tls: &tls.Config{GetCertificate: m.GetCertificate, MinVersion: tls.VersionTLS12}}
	if !o.noServerCertRotation {
		st.rotate = m
		return st, nil
	}
	if m.Current() == nil {
		log.Info("waiting for the serving certificate: a CSR for the kubelet-serving signer, approved and signed by the controller-manager")
	}
	if _, err := m.Ensure(ctx); err != nil {
		return servingTLS{}, fmt.Errorf("kubelet: serving certificate: %w", err)
	}
	return st, nil
}

// pokeWhenReady has the node agent post the status as soon as the network
// is set up and again once the kubelet has synced its pods, so the node is
// Ready without waiting for the next status tick.
func pokeWhenReady(ctx context.Context, k *agent.Kubelet, a *node.Agent) {
	a.Poke()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !k.Ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	a.Poke()
}

// waitPodCIDR waits until the node IPAM controller gave the node a pod CIDR.
func waitPodCIDR(ctx context.Context, client kubernetes.Interface, name string, log *slog.Logger) (string, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	warned := time.Now()
	for {
		if n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil && n.Spec.PodCIDR != "" {
			return n.Spec.PodCIDR, nil
		}
		if time.Since(warned) > 30*time.Second {
			log.Warn("the node has no podCIDR yet: is the node IPAM controller running with --cluster-cidr?")
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
		}
	}
}
