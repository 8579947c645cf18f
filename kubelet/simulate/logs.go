package simulate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/certs"
	"github.com/kubebus/kubebus/kubelet/server"
)

// certBlock is how many node addresses one serving certificate covers. A
// certificate with a few thousand IP SANs would outgrow what TLS clients
// accept in a handshake; 1,000 addresses make about 6 KB.
const certBlock = 1000

// LogConfig has the hollow nodes serve their pods' logs over HTTPS to the
// API server, as kubelets do (kubelet/server), so that `kubectl logs` of a
// pod on a hollow node answers with a line saying the node is simulated
// instead of failing to reach a kubelet.
//
// Every node listens on its own loopback address (Config.NodeIPRange),
// where the API server dials it, on Port or, when Port is 0, on a free
// port it reports in status.daemonEndpoints. That costs one listening
// socket (one file descriptor and one goroutine blocked in accept) per
// node, plus one per open connection: a process of 500 hollow nodes holds
// 513 descriptors when idle. Go raises the soft open-files limit to the
// hard one at start. One server answers on
// all of them and tells the nodes apart by the address a connection
// came in on. A listener per node, rather than one shared address and
// port, keeps every node's Node object truthful: its own InternalIP and
// port reach its own kubelet, and a pod asked for at the wrong node is
// not found, as on a real kubelet.
//
// The serving certificates come through the CertificateSigningRequest API
// (package kubelet/certs, signer kubernetes.io/kubelet-serving), one CSR
// per certBlock nodes (a single one up to 1,000 nodes) for subject
// system:node:<Prefix><first>-<last> naming the nodes' addresses. Config.Client
// approves them itself, so it must be allowed to (the admin kubeconfig is):
// the controller-manager's approver approves only a real node's CSR for its
// own name. The controller-manager signs them and they are renewed at 80%
// of their lifetime; until the first is signed, TLS handshakes fail.
type LogConfig struct {
	// CAFile is the cluster CA's certificate (e.g. DATA_DIR/pki/ca.crt of
	// `kubebus server`): it verifies the API server's client certificate.
	CAFile string
	// ClientUser is the common name of the only client certificate
	// allowed to read logs: the API server's for kubelets.
	ClientUser string
	// Port every node listens on (0: a free port per node).
	Port int
}

func (c *LogConfig) validate() error {
	switch {
	case c.CAFile == "":
		return errors.New("simulate: serving logs needs the cluster CA's certificate file, to verify the API server's client certificate")
	case c.ClientUser == "":
		return errors.New("simulate: serving logs needs the user allowed to read them (the API server's kubelet client)")
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("simulate: log port %d is not a port", c.Port)
	}
	return nil
}

// LogLine is what `kubectl logs` shows for a container on a hollow node.
func LogLine(node, namespace, pod, container string) string {
	return fmt.Sprintf("kubebus: node %s is simulated; pod %s/%s container %s has no real log\n", node, namespace, pod, container)
}

// podLog answers a log request for pod (nil: none by that name) on node
// with LogLine, or with the error a kubelet would give.
func podLog(node string, pod *corev1.Pod, namespace, name, container string, previous bool) (string, error) {
	if pod == nil || pod.Spec.NodeName != node {
		return "", server.PodNotFound(namespace, name)
	}
	named := func(c corev1.Container) bool { return c.Name == container }
	found := slices.ContainsFunc(pod.Spec.Containers, named) || slices.ContainsFunc(pod.Spec.InitContainers, named) ||
		slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == container })
	if !found {
		return "", server.ContainerNotFound(name, container)
	}
	if previous {
		// Hollow containers never restart.
		return "", server.PreviousNotFound(name, container)
	}
	return LogLine(node, namespace, name, container), nil
}

// logTexter is the hollow nodes' server.LogTexter: the node asked is the
// one whose address the connection came in on.
type logTexter struct {
	byAddr map[netip.Addr]int
	nodes  []hollow
}

var _ server.LogTexter = (*logTexter)(nil)

func (l *logTexter) LogText(ctx context.Context, namespace, name, container string, previous bool) (string, error) {
	i, ok := l.node(ctx)
	if !ok {
		return "", server.PodNotFound(namespace, name)
	}
	var pod *corev1.Pod
	if p, ok := l.nodes[i].pods.Get(namespace, name); ok {
		pod = p
	}
	return podLog(l.nodes[i].agent.Config.Name, pod, namespace, name, container, previous)
}

// node returns the index of the node whose address ctx's connection came
// in on.
func (l *logTexter) node(ctx context.Context) (int, bool) {
	a, ok := ctx.Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return 0, false
	}
	return l.index(a)
}

func (l *logTexter) index(a net.Addr) (int, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return 0, false
	}
	i, ok := l.byAddr[ap.Addr().Unmap()]
	return i, ok
}

// servingCerts makes the managers of the nodes' serving certificates, one
// per certBlock addresses, and the tls.Config.GetCertificate that picks a
// connection's by its local address. The managers request their
// certificates once they run.
func servingCerts(c Config, addrs []netip.Addr, l *logTexter) ([]*certs.Manager, func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	var ms []*certs.Manager
	for lo := 0; lo < len(addrs); lo += certBlock {
		hi := min(lo+certBlock, len(addrs))
		hosts := make([]string, 0, hi-lo)
		for _, a := range addrs[lo:hi] {
			hosts = append(hosts, a.String())
		}
		m, err := certs.New(certs.Config{Client: c.Client, NodeName: fmt.Sprintf("%s%d-%d", c.Prefix, lo, hi-1), Hosts: hosts,
			Approve: true, Clock: c.Clock, Logger: c.Logger.With("component", "kubelet-simulated-logs")})
		if err != nil {
			return nil, nil, fmt.Errorf("simulate: %w", err)
		}
		ms = append(ms, m)
	}
	return ms, func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		i, ok := l.index(hello.Conn.LocalAddr())
		if !ok {
			return nil, fmt.Errorf("simulate: no hollow node at %s", hello.Conn.LocalAddr())
		}
		return ms[i/certBlock].GetCertificate(hello)
	}, nil
}

// listen opens every node's log listener and returns them with their
// ports; on error none stays open.
func listen(addrs []netip.Addr, port int) ([]net.Listener, []int32, error) {
	lns := make([]net.Listener, 0, len(addrs))
	ports := make([]int32, 0, len(addrs))
	for _, a := range addrs {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, nil, fmt.Errorf("simulate: listening for the logs of the hollow node at %s: %w", a, err)
		}
		lns = append(lns, ln)
		ports = append(ports, int32(ln.Addr().(*net.TCPAddr).Port))
	}
	return lns, ports, nil
}

// newLogServer builds the server answering log requests for nodes at
// addrs, and the managers of its certificates, which the caller runs.
func newLogServer(c Config, addrs []netip.Addr, nodes []hollow) (*server.Server, []*certs.Manager, error) {
	l := &logTexter{byAddr: make(map[netip.Addr]int, len(addrs)), nodes: nodes}
	for i, a := range addrs {
		l.byAddr[a] = i
	}
	ms, getCert, err := servingCerts(c, addrs, l)
	if err != nil {
		return nil, nil, err
	}
	user := c.Logs.ClientUser
	srv, err := server.New(server.Config{
		TLS:          &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS12},
		ClientCAFile: c.Logs.CAFile,
		Text:         l,
		Authorize: func(u string, _ []string) error {
			if u != user {
				return fmt.Errorf("user %q may not read logs from the kubelet", u)
			}
			return nil
		},
		Logger: c.Logger.With("component", "kubelet-simulated-logs"),
	})
	if err != nil {
		return nil, nil, err
	}
	return srv, ms, nil
}
