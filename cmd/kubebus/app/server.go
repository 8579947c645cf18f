package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/serve"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/apiserver/storage/embedded"
	"github.com/kubebus/kubebus/apiserver/storage/encryption"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/bus/natsserver"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/kcm"
	"github.com/kubebus/kubebus/kubelet/apiforward"
	"github.com/kubebus/kubebus/kubelet/host"
	"github.com/kubebus/kubebus/proxy"
	"github.com/kubebus/kubebus/proxy/nft"
	"github.com/kubebus/kubebus/proxy/record"
)

type serverOptions struct {
	tokenFile  string
	svcIPRange string
	nodePorts  string
	kcm        kcm.Options
	noKCM      bool
	noSched    bool
	noKubelet  bool
	noProxy    bool
	noDNS      bool     // --disable-dns
	dnsUp      []string // --dns-upstream
	node       nodeOptions
	schedCfg   string
	bus        bus.StreamLimits
	watchCache int64
	// storageMedia is how pods are written to etcd.
	storageMedia string
	limits       serve.Limits
	natsMemory   int64
	natsStore    int64
	dataDir      string
	port         int
	etcdPort     int
	etcdPeer     int
	natsPort     int
	bind         string
	auth         serve.AuthOptions
}

func newServerCmd(g *globals) *cobra.Command {
	var o serverOptions
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the all-in-one cluster: embedded etcd and NATS, the API server and every component",
		Long: `Run the whole cluster in one process. State lives in --data-dir:
  etcd/        the embedded etcd member
  nats/        the embedded NATS JetStream store
  pki/         the CA, serving and client certificates, the ServiceAccount
               signing key, and encryption-config.yaml (the key Secrets are
               encrypted with at rest, made at first start)
  kubeconfig   an admin kubeconfig for kubectl (TLS verified)
Restarting with the same --data-dir keeps every object.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServer(cmd.Context(), g.logger(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "/var/lib/kubebus", "where the cluster keeps its state")
	f.StringVar(&o.bind, "bind-address", "127.0.0.1", "API server address")
	f.IntVar(&o.port, "secure-port", 6443, "API server HTTPS port (0 picks a free one)")
	f.IntVar(&o.etcdPort, "etcd-client-port", 2379, "embedded etcd client port on 127.0.0.1 (0 picks a free one)")
	f.IntVar(&o.etcdPeer, "etcd-peer-port", 2380, "embedded etcd peer port on 127.0.0.1 (0 picks a free one)")
	f.StringVar(&o.svcIPRange, "service-cluster-ip-range", servicealloc.DefaultClusterIPRange, "CIDR Services get their cluster IPs from")
	f.StringVar(&o.nodePorts, "service-node-port-range", servicealloc.DefaultNodePortRange, "ports Services of type NodePort and LoadBalancer get their node ports from")
	f.StringVar(&o.tokenFile, "token-auth-file", "", "static bearer tokens: token,user,uid[,\"groups\"] per line")
	addBusFlags(f, &o.bus)
	addWatchCacheFlag(f, &o.watchCache)
	addStorageMediaTypeFlag(f, &o.storageMedia)
	addLimitFlags(f, &o.limits)
	f.Int64Var(&o.natsMemory, "nats-max-memory", natsserver.DefaultMaxMemory, "bytes the embedded NATS may keep in memory-backed JetStream streams")
	addControllerManagerFlags(f, &o.kcm)
	f.BoolVar(&o.noKCM, "disable-controller-manager", false, "do not run the controller-manager in this process")
	f.BoolVar(&o.noSched, "disable-scheduler", false, "do not run the scheduler in this process")
	f.StringVar(&o.schedCfg, "scheduler-config", "", "KubeSchedulerConfiguration file for the in-process scheduler")
	f.Int64Var(&o.natsStore, "nats-max-store", 0, "bytes the embedded NATS may keep on disk (0: three quarters of the free space at start); at least the sum of the --bus-*-max-bytes limits")
	f.IntVar(&o.natsPort, "nats-port", 4222, "embedded NATS port on 127.0.0.1 (-1 picks a free one)")
	f.BoolVar(&o.noKubelet, "disable-kubelet", false, "do not run a local node (a kubelet with its own containerd) in this process")
	f.BoolVar(&o.noProxy, "disable-proxy", false, "do not run the local node's proxy (nftables, in --node-netns when given) in this process")
	f.BoolVar(&o.noDNS, "disable-dns", false, "do not run the cluster DNS (kube-dns) in this process; it runs with a local node in --node-netns")
	f.StringSliceVar(&o.dnsUp, "dns-upstream", nil, "resolvers (host or host:port) the cluster DNS forwards other names to (default the nameservers of /etc/resolv.conf)")
	addNodeFlags(f, &o.node, "")
	addAuthFlags(f, &o.auth)
	o.node.leaseEvery, o.node.statusEvery = 10*time.Second, 10*time.Second
	return cmd
}

// shutdownGrace bounds how long each tier of the server gets to stop.
const shutdownGrace = 30 * time.Second

// runServer runs the all-in-one: it checks that the local node can start,
// starts etcd and NATS, then the API server, then the components, prints
// the ready banner once the API answers and the local node is Ready, and
// stops in the reverse order: components (releasing their Leases), the API
// server, NATS, etcd.
func runServer(ctx context.Context, log *slog.Logger, stdout io.Writer, o serverOptions) error {
	start := time.Now()
	// The all-in-one's NATS runs in this process and restarts with the
	// publisher, which then finds KUBE_NODEPODS empty and sends the
	// kubelets back to KUBE_STATE: the stream can live in memory.
	o.bus.NodePodsInMemory = true
	if o.bus.NodeMaxBytes <= 0 {
		o.bus.NodeMaxBytes = bus.DefaultNodeMaxBytes
	}
	if o.natsMemory <= 0 {
		o.natsMemory = natsserver.DefaultMaxMemory
	}
	if o.bus.NodeMaxBytes > o.natsMemory {
		// JetStream would refuse to create KUBE_NODEPODS, and the
		// publisher would retry for ever.
		return fmt.Errorf("--bus-nodepods-max-bytes=%d does not fit in the embedded NATS's memory, --nats-max-memory=%d", o.bus.NodeMaxBytes, o.natsMemory)
	}
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return err
	}
	if !o.noKubelet {
		if o.node.name == "" {
			if o.node.name, err = os.Hostname(); err != nil {
				return fmt.Errorf("node name: %w", err)
			}
		}
		err := host.Preflight(host.PreflightConfig{OwnContainerd: o.node.runtimeEndpoint == "", CNIPluginDirs: o.node.cniBinDirs, NetNS: o.node.netns})
		if err != nil {
			return fmt.Errorf("local node %s: %w; or run without a local node: --disable-kubelet", o.node.name, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	kubeconfig, pkiDir := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "pki")
	// etcd trusts its own CA (pki/etcd/ca.crt), not the cluster CA that
	// every component holds a certificate from: only the API server and
	// etcd's peers reach it.
	etcdPKI, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: pkiDir})
	if err != nil {
		return fmt.Errorf("etcd certificates: %w", err)
	}
	etcd, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), ClientPort: o.etcdPort, PeerPort: o.etcdPeer,
		TLS: &embedded.TLS{
			CertFile: etcdPKI.ServerCertFile, KeyFile: etcdPKI.ServerKeyFile, ClientCAFile: etcdPKI.CAFile,
			PeerCertFile: etcdPKI.PeerCertFile, PeerKeyFile: etcdPKI.PeerKeyFile,
			PeerClientCertFile: etcdPKI.PeerClientCertFile, PeerClientKeyFile: etcdPKI.PeerClientKeyFile,
			PeerCAFile: etcdPKI.CAFile,
		}})
	if err != nil {
		return err
	}
	defer etcd.Close()
	log.Info("embedded etcd ready", "endpoint", etcd.Endpoint)
	if !o.noKubelet && o.node.netns != "" && o.auth.AdvertiseAddress == "" {
		// Pods on the local node reach the API server through a forwarder
		// in the node's network namespace (see runLocalNode).
		o.auth.AdvertiseAddress = nodeAPIAddress
	}
	hosts := serve.ServingHosts([]string{"localhost", "127.0.0.1", "::1"}, o.svcIPRange, o.auth.AdvertiseAddress)
	// The bus serves mutual TLS with certificates of the cluster CA, so
	// the CA comes first.
	bundle, err := pki.Ensure(pki.Config{Dir: pkiDir, Hosts: hosts})
	if err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	natsTLS, err := embeddedNATSTLS(bundle)
	if err != nil {
		return err
	}
	ns, err := natsserver.Start(natsserver.Config{StoreDir: filepath.Join(dir, "nats"), Port: o.natsPort, MaxMemory: o.natsMemory, MaxStore: o.natsStore, TLS: natsTLS,
		Logger: log.With("component", "nats")})
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	log.Info("embedded nats ready", "url", ns.URL())

	sup := newSupervisor(ctx, log)
	if o.auth.EncryptionProviderConfig == "" {
		// Secrets are encrypted at rest by default, with a key made once.
		o.auth.EncryptionProviderConfig = filepath.Join(pkiDir, "encryption-config.yaml")
		if err := os.MkdirAll(pkiDir, 0o700); err != nil {
			return err
		}
		if err := encryption.WriteDefault(o.auth.EncryptionProviderConfig); err != nil {
			return fmt.Errorf("encryption at rest: %w", err)
		}
	}
	// The components of this process reach the bus in process: their
	// messages never leave it, so they need no TLS, and each keeps the
	// identity, and so the permissions, its certificate would give it.
	inProcess := func(user string, groups ...string) (bus.Credentials, error) {
		return ns.InProcess(busauth.Identity{User: user, Groups: groups})
	}
	publisher, err := inProcess(busauth.PublisherUser)
	if err != nil {
		return err
	}
	listening := make(chan string, 1)
	// The API server's pods cache, which the components share (see
	// newSharedCaches); handed over before the server listens.
	apiPods := make(chan *informer.Informer[*corev1.Pod], 1)
	sup.Go(sup.tier(), "api server", func(ctx context.Context) error {
		return serve.Run(ctx, serve.Options{
			EtcdServers: []string{etcd.Endpoint}, NATSURL: ns.URL(), NATSCredentials: publisher,
			// In process: the API server's etcd requests do not leave it.
			EtcdClient:  etcd.Client(),
			BindAddress: o.bind, Port: o.port, PKIDir: pkiDir,
			Kubeconfig: kubeconfig, Logger: log, Listening: listening, BusLimits: o.bus, TokenFile: o.tokenFile,
			ServiceClusterIPRange: o.svcIPRange, ServiceNodePortRange: o.nodePorts,
			WatchCacheBytes: o.watchCache, StorageMediaType: o.storageMedia, Limits: o.limits, Auth: o.auth, Hosts: hosts,
			ReadyChecks: map[string]func(context.Context) error{"nats-store": ns.StoreReady},
			PodIndexers: cache.PodIndexers(),
			SharePods: func(p *informer.Informer[*corev1.Pod]) {
				select {
				case apiPods <- p:
				default: // called once; never blocks
				}
			},
		})
	})
	var addr string
	select {
	case addr = <-listening:
	case <-sup.Failed():
		return sup.Wait(shutdownGrace)
	case <-ctx.Done():
		return sup.Wait(shutdownGrace)
	}

	// The informers the components share stop after them.
	var shared *cache.Informers
	var runShared func(context.Context) error
	if !o.noKCM {
		creds, err := inProcess(busauth.InformersUser)
		if err != nil {
			return err
		}
		var pods *informer.Informer[*corev1.Pod]
		select {
		case pods = <-apiPods:
		default:
		}
		shared, runShared = newSharedCaches(log, ns.URL(), creds, pods)
	}
	if runShared != nil {
		sup.Go(sup.tier(), "shared informers", runShared)
	}
	comps := sup.tier()
	if !o.noKCM {
		creds, err := inProcess("system:kube-controller-manager")
		if err != nil {
			return err
		}
		sup.Go(comps, "controller-manager", func(ctx context.Context) error {
			return runControllerManager(ctx, log, pkiDir, hosts, addr, ns.URL(), creds, o.kcm, shared)
		})
	}
	if !o.noSched {
		creds, err := inProcess("system:kube-scheduler")
		if err != nil {
			return err
		}
		sup.Go(comps, "scheduler", func(ctx context.Context) error {
			return runScheduler(ctx, log, pkiDir, hosts, addr, ns.URL(), creds, o.schedCfg, shared)
		})
	}
	nodeReady := make(chan struct{})
	if o.noKubelet {
		close(nodeReady)
	} else {
		var once sync.Once
		o.node.onReady = func() { once.Do(func() { close(nodeReady) }) }
		if err := setLocalClusterDNS(&o); err != nil {
			return err
		}
		nodeCreds, err := inProcess("system:node:"+o.node.name, "system:nodes")
		if err != nil {
			return err
		}
		sup.Go(comps, "local node "+o.node.name, func(ctx context.Context) error {
			return runLocalNode(ctx, log, dir, hosts, addr, ns.URL(), nodeCreds, o.node)
		})
		if o.node.netns != "" && o.auth.AdvertiseAddress == nodeAPIAddress {
			sup.Go(comps, "local node API forwarder", func(ctx context.Context) error {
				_, port, _ := net.SplitHostPort(addr)
				return apiforward.Run(ctx, apiforward.Config{NetNS: o.node.netns, Address: net.JoinHostPort(nodeAPIAddress, port), Target: addr, Logger: log.With("component", "apiforward")})
			})
		}
		if !o.noProxy {
			creds, err := inProcess(busauth.ProxyUser)
			if err != nil {
				return err
			}
			sup.Go(comps, "local node proxy", func(ctx context.Context) error {
				return runLocalProxy(ctx, log, pkiDir, hosts, addr, ns.URL(), creds, o.node, shared)
			})
		}
		if localDNS(o) {
			creds, err := inProcess(busauth.KubeDNSUser)
			if err != nil {
				return err
			}
			sup.Go(comps, "local node dns", func(ctx context.Context) error {
				return runLocalDNS(ctx, log, pkiDir, hosts, addr, ns.URL(), creds, o.node, o.dnsUp, shared)
			})
		}
	}
	go func() {
		select {
		case <-nodeReady:
		case <-comps.ctx.Done():
			return
		}
		took := time.Since(start).Round(100 * time.Millisecond)
		what := fmt.Sprintf("(in %s)", took)
		if !o.noKubelet {
			what = fmt.Sprintf("(node %s Ready after %s)", o.node.name, took)
		}
		fmt.Fprintf(stdout, "kubebus is ready at https://%s %s\n  export KUBECONFIG=%s\n  bus: %s\n", addr, what, kubeconfig, ns.URL())
	}()
	return sup.Wait(shutdownGrace)
}

// nodeAPIAddress is the API server's address inside the local node's
// network namespace: the endpoint of the kubernetes Service, where a
// forwarder passes pods' connections on to the API server's listener.
const nodeAPIAddress = "10.254.254.254"

// runLocalNode runs the all-in-one's own node: a kubelet with its root
// under the data dir, authenticated as system:node:<name> in system:nodes.
func runLocalNode(ctx context.Context, log *slog.Logger, dir string, hosts []string, addr, natsURL string, creds bus.Credentials, o nodeOptions) error {
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		o.name = h
	}
	pkiDir := filepath.Join(dir, "pki")
	cfg, err := componentConfig(pkiDir, hosts, addr, "system:node:"+o.name, "system:nodes")
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	o.rootDir = filepath.Join(dir, "kubelet")
	o.caFile = filepath.Join(pkiDir, "ca.crt")
	return runNode(ctx, log, cfg, natsURL, creds, o)
}

// componentConfig returns a client config for an in-process component,
// authenticated with a client certificate of its own (user in groups, the
// identity the bootstrap RBAC policy knows). hosts are the serving
// certificate's, the same the API server ensures.
func componentConfig(pkiDir string, hosts []string, addr, user string, groups ...string) (*rest.Config, error) {
	b, err := pki.Ensure(pki.Config{Dir: pkiDir, Hosts: hosts})
	if err != nil {
		return nil, err
	}
	cert, key, err := b.IssueClient(user, groups)
	if err != nil {
		return nil, err
	}
	return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{CAFile: b.CAFile, CertFile: cert, KeyFile: key}}, nil
}

// runControllerManager runs the controller-manager in this process, on
// the shared informers when there are.
func runControllerManager(ctx context.Context, log *slog.Logger, pkiDir string, hosts []string, addr, natsURL string, creds bus.Credentials, o kcm.Options, shared *cache.Informers) error {
	cfg, err := componentConfig(pkiDir, hosts, addr, "system:kube-controller-manager")
	if err != nil {
		return fmt.Errorf("controller-manager credentials: %w", err)
	}
	if o.Tuning.ClusterSigningCertFile == "" && o.Tuning.ClusterSigningKeyFile == "" {
		// The all-in-one's controller-manager is the cluster's signer: the
		// only component that reads the CA key.
		o.Tuning.ClusterSigningCertFile, o.Tuning.ClusterSigningKeyFile = filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "ca.key")
	}
	if o.Tuning.LocalPathRoot == "" {
		// The local node shares the host: its volumes go in the data dir.
		o.Tuning.LocalPathRoot = filepath.Join(filepath.Dir(pkiDir), "storage")
	}
	o.NATS = creds
	o.REST, o.NATSURL, o.Logger, o.Caches = cfg, natsURL, log.With("component", "controller-manager"), shared
	return kcm.Run(ctx, o)
}

// runLocalProxy runs the local node's proxy, programming the nftables of
// the node network namespace when there is one, on the shared informers
// when there are. It records what it programmed in its Lease through the
// API server at addr, as system:kube-proxy.
func runLocalProxy(ctx context.Context, log *slog.Logger, pkiDir string, hosts []string, addr, natsURL string, creds bus.Credentials, o nodeOptions, shared *cache.Informers) error {
	name := o.name
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		name = h
	}
	var ncfg nft.Config
	if o.netns != "" {
		f, err := os.Open(o.netns)
		if err != nil {
			return fmt.Errorf("proxy: opening the node network namespace: %w", err)
		}
		defer f.Close()
		ncfg.NetNSFd = int(f.Fd())
	}
	a, err := nft.New(ncfg)
	if err != nil {
		return err
	}
	rc, err := componentConfig(pkiDir, hosts, addr, busauth.ProxyUser)
	if err != nil {
		return fmt.Errorf("proxy credentials: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("proxy: API client: %w", err)
	}
	nc, js, err := bus.Connect(natsURL, "kube-proxy-"+name, creds)
	if err != nil {
		return err
	}
	defer nc.Close()
	plog := log.With("component", "proxy")
	return proxy.Run(ctx, withProxyCaches(proxy.Config{JetStream: js, Instance: name, Applier: a, Logger: plog, Families: proxyFamilies(ctx, a, true, plog),
		Recorder: record.New(cs, name)}, shared))
}

// embeddedNATSTLS is the embedded NATS server's side of the bus's mutual
// TLS: a serving certificate of the cluster CA for loopback, and the CA
// that clients' certificates must chain to.
func embeddedNATSTLS(b *pki.Bundle) (*tls.Config, error) {
	cert, key, err := b.IssueServing(natsServingName, natsHosts)
	if err != nil {
		return nil, fmt.Errorf("nats serving certificate: %w", err)
	}
	return natsserver.ServerTLS(b.CAFile, cert, key)
}
