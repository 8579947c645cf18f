package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/dns"
	"github.com/kubebus/kubebus/kubelet/cni"
)

// dnsOptions configure `kubebus dns`.
type dnsOptions struct {
	listen, resolvConf, zone, netns, advertise, instance string
	upstreams                                            []string
	ttl                                                  uint32
}

func newDNSCmd(g *globals) *cobra.Command {
	var (
		o          dnsOptions
		natsURL    string
		kubeconfig string
		nf         natsFlags
	)
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Run the cluster DNS: Service names from the bus, other names forwarded",
		Long: `Run the cluster DNS server, over UDP and TCP on --listen. It reads Services
and EndpointSlices from the bus (NATS JetStream) and answers the names of
the Kubernetes DNS specification under --cluster-domain: A/AAAA for
<svc>.<ns>.svc (the ClusterIP, or a headless Service's ready endpoints),
<hostname>.<svc>.<ns>.svc, SRV for _<port>._<proto>.<svc>.<ns>.svc, PTR for
ClusterIPs and endpoints, CNAME for ExternalName Services. Other names are
forwarded to --upstream (default the nameservers of --resolv-conf).

It reads only the bus: a client certificate of the cluster CA for
system:kube-dns is enough, e.g.
  kubebus certs client --pki-dir DIR --user system:kube-dns --out dns
  kubebus dns --nats-ca-file DIR/ca.crt --nats-cert-file dns.crt --nats-key-file dns.key
or a kubeconfig (--kubeconfig) whose client certificate is one. With
--advertise-address it also publishes, through the API server (so with a
kubeconfig), the EndpointSlice kube-system/kube-dns-<name> that routes the
kube-dns Service to that address. kubebus server runs it in process.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, log := cmd.Context(), g.logger().With("component", "dns")
			if o.instance == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("dns: naming this server: %w", err)
				}
				o.instance = h
			}
			creds, err := nf.credentialsFrom(kubeconfig)
			if err != nil {
				return fmt.Errorf("dns: bus credentials: %w", err)
			}
			nc, js, err := bus.Connect(natsURL, "kube-dns-"+o.instance, creds)
			if err != nil {
				return fmt.Errorf("dns: connecting to NATS: %w", err)
			}
			defer nc.Close()
			var cs kubernetes.Interface
			if o.advertise != "" {
				rc, err := proxyAPIConfig(kubeconfig, natsFlags{})
				if err != nil {
					return fmt.Errorf("dns: %w", err)
				}
				if rc == nil {
					return errors.New("dns: --advertise-address needs a kubeconfig (--kubeconfig) to publish the endpoint with")
				}
				if cs, err = kubernetes.NewForConfig(rc); err != nil {
					return fmt.Errorf("dns: API client: %w", err)
				}
			}
			return runDNS(ctx, log, o, dns.Config{JetStream: js}, cs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig whose client certificate and CA are the DNS server's bus credentials (identity system:kube-dns, or an admin; default $KUBECONFIG or ~/.kube/config); --nats-* flags override it")
	addNATSFlags(f, &nf)
	f.StringVar(&o.listen, "listen", "0.0.0.0:53", "address:port to serve DNS on, over UDP and TCP")
	f.StringSliceVar(&o.upstreams, "upstream", nil, "resolvers (host or host:port) other names are forwarded to (default the nameservers of --resolv-conf)")
	f.StringVar(&o.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolv.conf whose nameservers are the default upstreams")
	f.StringVar(&o.zone, "cluster-domain", dns.DefaultZone, "the cluster's DNS domain")
	f.Uint32Var(&o.ttl, "ttl", dns.DefaultTTL, "TTL of the cluster's records, in seconds")
	f.StringVar(&o.netns, "node-netns", "", "listen inside this network namespace (e.g. the kubelet's --node-netns), adding the --listen address to its loopback device")
	f.StringVar(&o.advertise, "advertise-address", "", "address pods reach this server at, published as an endpoint of the kube-dns Service (default: none published)")
	f.StringVar(&o.instance, "hostname-override", "", "name of this server for its bus consumers and its EndpointSlice (default the hostname)")
	return cmd
}

// runDNS opens the listeners, publishes the endpoint when cs is given, and
// serves until ctx ends. cfg carries the bus or the shared informers.
func runDNS(ctx context.Context, log *slog.Logger, o dnsOptions, cfg dns.Config, cs kubernetes.Interface) error {
	upstreams, err := dnsUpstreams(o.upstreams, o.resolvConf)
	if err != nil {
		return err
	}
	pc, ln, err := dnsListen(o.netns, o.listen)
	if err != nil {
		return err
	}
	cfg.Instance, cfg.Zone, cfg.TTL, cfg.Upstreams, cfg.PacketConn, cfg.Listener, cfg.Logger = o.instance, o.zone, o.ttl, upstreams, pc, ln, log
	if cs != nil && o.advertise != "" {
		ap, err := netip.ParseAddrPort(o.listen)
		if err != nil {
			pc.Close()
			ln.Close()
			return fmt.Errorf("dns: --listen %q: %w", o.listen, err)
		}
		done := make(chan struct{})
		pctx, cancel := context.WithCancel(ctx)
		go func() {
			defer close(done)
			publishDNSEndpoint(pctx, cs, o.instance, o.advertise, int32(ap.Port()), log)
		}()
		defer func() { cancel(); <-done }()
	}
	return dns.Run(ctx, cfg)
}

// dnsUpstreams returns the upstream resolvers as host:port: the given
// ones (port 53 by default), else the nameservers of resolvConf.
func dnsUpstreams(given []string, resolvConf string) ([]string, error) {
	if len(given) == 0 {
		up, err := dns.HostUpstreams(resolvConf)
		if err != nil {
			return nil, err
		}
		return up, nil
	}
	out := make([]string, 0, len(given))
	for _, u := range given {
		if _, _, err := net.SplitHostPort(u); err != nil {
			u = net.JoinHostPort(u, "53")
		}
		out = append(out, u)
	}
	return out, nil
}

// dnsListen opens the UDP and TCP sockets at addr, inside the network
// namespace netns when given, after adding addr's IP to the namespace's
// loopback device (so that traffic routed into the namespace for it, the
// kube-dns Service's DNATed queries, is delivered to the listeners).
func dnsListen(netns, addr string) (net.PacketConn, net.Listener, error) {
	var (
		pc net.PacketConn
		ln net.Listener
	)
	open := func() error {
		var err error
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return fmt.Errorf("dns: listening on %s/udp: %w", addr, err)
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			pc.Close()
			return fmt.Errorf("dns: listening on %s/tcp: %w", addr, err)
		}
		return nil
	}
	if netns == "" {
		return pc, ln, open()
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dns: listen address %q: %w", addr, err)
	}
	err = cni.InNetNS(netns, func() error {
		if !ap.Addr().IsUnspecified() && !ap.Addr().IsLoopback() {
			bits := 32
			if ap.Addr().Is6() {
				bits = 128
			}
			out, err := exec.Command("ip", "addr", "replace", fmt.Sprintf("%s/%d", ap.Addr(), bits), "dev", "lo").CombinedOutput()
			if err != nil {
				return fmt.Errorf("dns: adding %s to the loopback of %s: %v: %s", ap.Addr(), netns, err, out)
			}
		}
		return open()
	})
	return pc, ln, err
}

// dnsEndpointSlice is the EndpointSlice that routes the kube-dns Service
// to one DNS server at ip:port.
func dnsEndpointSlice(instance, ip string, port int32) *discoveryv1.EndpointSlice {
	at := discoveryv1.AddressTypeIPv4
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
		at = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: apiserver.KubeDNSServiceName + "-" + instance,
			Labels: map[string]string{discoveryv1.LabelServiceName: apiserver.KubeDNSServiceName, discoveryv1.LabelManagedBy: "kubebus-dns"}},
		AddressType: at,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: new("dns"), Protocol: new(corev1.ProtocolUDP), Port: new(port)},
			{Name: new("dns-tcp"), Protocol: new(corev1.ProtocolTCP), Port: new(port)},
		},
	}
}

// publishDNSEndpoint keeps this server's EndpointSlice until ctx ends, then
// deletes it.
func publishDNSEndpoint(ctx context.Context, cs kubernetes.Interface, instance, ip string, port int32, log *slog.Logger) {
	want := dnsEndpointSlice(instance, ip, port)
	api := cs.DiscoveryV1().EndpointSlices(want.Namespace)
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		if err := ensureDNSEndpoint(ctx, api, want); err != nil && ctx.Err() == nil {
			log.Warn("publishing the kube-dns endpoint", "slice", want.Name, "err", err)
			select { // retry soon
			case <-ctx.Done():
			case <-time.After(time.Second):
				continue
			}
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := api.Delete(dctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				log.Warn("removing the kube-dns endpoint", "slice", want.Name, "err", err)
			}
			return
		case <-tick.C:
		}
	}
}

// endpointSliceAPI is what publishDNSEndpoint uses of the client.
type endpointSliceAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*discoveryv1.EndpointSlice, error)
	Create(ctx context.Context, s *discoveryv1.EndpointSlice, opts metav1.CreateOptions) (*discoveryv1.EndpointSlice, error)
	Update(ctx context.Context, s *discoveryv1.EndpointSlice, opts metav1.UpdateOptions) (*discoveryv1.EndpointSlice, error)
}

func ensureDNSEndpoint(ctx context.Context, api endpointSliceAPI, want *discoveryv1.EndpointSlice) error {
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
		cur.AddressType == want.AddressType && cur.Labels[discoveryv1.LabelServiceName] == want.Labels[discoveryv1.LabelServiceName] {
		return nil
	}
	u := cur.DeepCopy()
	u.Endpoints, u.Ports, u.AddressType = want.Endpoints, want.Ports, want.AddressType
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		u.Labels[k] = v
	}
	_, err = api.Update(ctx, u, metav1.UpdateOptions{})
	return err
}

// nodeDNSAddress is where the all-in-one's cluster DNS listens inside the
// local node's network namespace: the address the API forwarder holds on
// its loopback device (nodeAPIAddress), port 53. The kube-dns Service's
// EndpointSlice names it, so pods' queries to the Service's ClusterIP are
// DNATed by the proxy to it.
var nodeDNSAddress = net.JoinHostPort(nodeAPIAddress, "53")

// localDNS reports whether `kubebus server` runs the cluster DNS: with a
// local node whose pod network has a namespace of its own (where the
// server listens), unless --disable-dns.
func localDNS(o serverOptions) bool { return !o.noDNS && !o.noKubelet && o.node.netns != "" }

// setLocalClusterDNS points the local kubelet's ClusterFirst pods at the
// kube-dns Service (the 10th address of the service range) when this
// process runs the cluster DNS and --cluster-dns does not say otherwise.
func setLocalClusterDNS(o *serverOptions) error {
	if !localDNS(*o) || len(o.node.clusterDNS) > 0 {
		return nil
	}
	ip, err := dns.ServiceIP(o.svcIPRange)
	if err != nil {
		return err
	}
	o.node.clusterDNS = []string{ip.String()}
	return nil
}

// runLocalDNS runs the all-in-one's cluster DNS inside the local node's
// network namespace at nodeDNSAddress, on the shared informers when there
// are, and publishes that address as the kube-dns Service's endpoint
// through the API server at addr, as system:kube-dns. Other names go to
// upstreams (default the host's nameservers).
func runLocalDNS(ctx context.Context, log *slog.Logger, pkiDir string, hosts []string, addr, natsURL string, creds bus.Credentials, o nodeOptions, upstreams []string, shared *cache.Informers) error {
	name := o.name
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		name = h
	}
	rc, err := componentConfig(pkiDir, hosts, addr, busauth.KubeDNSUser)
	if err != nil {
		return fmt.Errorf("dns credentials: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("dns: API client: %w", err)
	}
	cfg := dns.Config{}
	if shared != nil {
		cfg.Services, cfg.EndpointSlices = shared.Services, shared.EndpointSlices
	} else {
		nc, js, err := bus.Connect(natsURL, "kube-dns-"+name, creds)
		if err != nil {
			return err
		}
		defer nc.Close()
		cfg.JetStream = js
	}
	do := dnsOptions{listen: nodeDNSAddress, resolvConf: "/etc/resolv.conf", zone: o.clusterDomain, netns: o.netns,
		advertise: nodeAPIAddress, instance: name, upstreams: upstreams, ttl: dns.DefaultTTL}
	return runDNS(ctx, log.With("component", "dns"), do, cfg, cs)
}
