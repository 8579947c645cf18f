package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// maxCNAMEChase bounds how many CNAMEs an answer follows.
const maxCNAMEChase = 8

// DefaultForwardTimeout bounds one question to one upstream resolver.
const DefaultForwardTimeout = 2 * time.Second

// Server answers DNS queries from an Index and forwards the others to
// upstream resolvers. It implements mdns.Handler.
type Server struct {
	// Index holds the cluster's records.
	Index *Index
	// Upstreams are host:port resolvers, tried in order.
	Upstreams []string
	// Ready, when set, reports whether the Index is complete; before, the
	// cluster's names get SERVFAIL rather than a wrong NXDOMAIN.
	Ready func() bool
	// ForwardTimeout bounds one exchange with one upstream (default
	// DefaultForwardTimeout).
	ForwardTimeout time.Duration
	Logger         *slog.Logger
}

var _ mdns.Handler = (*Server)(nil)

// ServeDNS answers one query.
func (s *Server) ServeDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*s.forwardTimeout())
	defer cancel()
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	m := s.Answer(ctx, r, udp)
	if err := w.WriteMsg(m); err != nil {
		s.logger().Debug("dns: writing the answer", "err", err)
	}
}

// Answer builds the response to r; udp says it goes back over UDP (and
// so is truncated to what the client accepts).
func (s *Server) Answer(ctx context.Context, r *mdns.Msg, udp bool) *mdns.Msg {
	m := new(mdns.Msg)
	if len(r.Question) != 1 || r.Opcode != mdns.OpcodeQuery {
		return m.SetRcode(r, mdns.RcodeFormatError)
	}
	q := r.Question[0]
	res := s.Index.Lookup(q.Name, q.Qtype)
	if res.Forward {
		return s.forwardReply(ctx, r, udp)
	}
	if s.Ready != nil && !s.Ready() {
		return m.SetRcode(r, mdns.RcodeServerFailure)
	}
	m.SetRcode(r, res.Rcode)
	m.Authoritative = true
	m.RecursionAvailable = true
	m.Answer, m.Ns, m.Extra = res.Answer, res.Ns, res.Extra
	s.chase(ctx, m, q)
	return s.fit(r, m, udp)
}

// chase follows a CNAME answer (an ExternalName Service) to the target's
// records of the asked type, from the Index or upstream.
func (s *Server) chase(ctx context.Context, m *mdns.Msg, q mdns.Question) {
	if q.Qtype == mdns.TypeCNAME || q.Qtype == mdns.TypeANY {
		return
	}
	for range maxCNAMEChase {
		if len(m.Answer) == 0 {
			return
		}
		c, ok := m.Answer[len(m.Answer)-1].(*mdns.CNAME)
		if !ok {
			return
		}
		res := s.Index.Lookup(c.Target, q.Qtype)
		if res.Forward {
			fq := new(mdns.Msg)
			fq.SetQuestion(c.Target, q.Qtype)
			up, err := s.forward(ctx, fq, false)
			if err != nil {
				s.logger().Debug("dns: resolving a CNAME target upstream", "target", c.Target, "err", err)
				return
			}
			m.Answer = append(m.Answer, up.Answer...)
			return
		}
		if len(res.Answer) == 0 {
			return
		}
		m.Answer = append(m.Answer, res.Answer...)
	}
}

// forwardReply asks upstream and passes its answer on, or SERVFAIL.
func (s *Server) forwardReply(ctx context.Context, r *mdns.Msg, udp bool) *mdns.Msg {
	up, err := s.forward(ctx, r, udp)
	if err != nil {
		s.logger().Debug("dns: forwarding", "name", r.Question[0].Name, "err", err)
		return new(mdns.Msg).SetRcode(r, mdns.RcodeServerFailure)
	}
	up.Id = r.Id
	return s.fit(r, up, udp)
}

// forward sends r to the upstreams in order until one answers. Over UDP
// a truncated answer is asked again over TCP, unless the client itself
// asked over UDP (it then retries over TCP itself).
func (s *Server) forward(ctx context.Context, r *mdns.Msg, udp bool) (*mdns.Msg, error) {
	if len(s.Upstreams) == 0 {
		return nil, errors.New("no upstream resolver")
	}
	var errs []error
	for _, u := range s.Upstreams {
		c := &mdns.Client{Net: "udp", Timeout: s.forwardTimeout(), UDPSize: mdns.DefaultMsgSize}
		resp, _, err := c.ExchangeContext(ctx, r, u)
		if err == nil && resp.Truncated && !udp {
			c.Net = "tcp"
			resp, _, err = c.ExchangeContext(ctx, r, u)
		}
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// fit truncates a UDP answer to the size the client accepts (512 bytes,
// or its EDNS0 buffer size) and echoes its EDNS0 record.
func (s *Server) fit(r, m *mdns.Msg, udp bool) *mdns.Msg {
	size := mdns.MinMsgSize
	if o := r.IsEdns0(); o != nil {
		size = max(int(o.UDPSize()), mdns.MinMsgSize)
		if m.IsEdns0() == nil {
			m.SetEdns0(o.UDPSize(), false)
		}
	} else {
		// No EDNS0 from the client: none in the answer either.
		extra := m.Extra[:0]
		for _, rr := range m.Extra {
			if _, ok := rr.(*mdns.OPT); !ok {
				extra = append(extra, rr)
			}
		}
		m.Extra = extra
	}
	if udp {
		m.Truncate(size)
	} else {
		m.Truncate(mdns.MaxMsgSize)
	}
	return m
}

func (s *Server) forwardTimeout() time.Duration {
	if s.ForwardTimeout > 0 {
		return s.ForwardTimeout
	}
	return DefaultForwardTimeout
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Serve answers the queries arriving on pc (UDP) and ln (TCP), either of
// which may be nil, until ctx ends, then closes them.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	return serveHandler(ctx, s, pc, ln)
}

// serveHandler serves h on pc and ln until ctx ends.
func serveHandler(ctx context.Context, h mdns.Handler, pc net.PacketConn, ln net.Listener) error {
	var servers []*mdns.Server
	if pc != nil {
		servers = append(servers, &mdns.Server{PacketConn: pc, Handler: h})
	}
	if ln != nil {
		servers = append(servers, &mdns.Server{Listener: ln, Handler: h, ReadTimeout: 10 * time.Second})
	}
	if len(servers) == 0 {
		return errors.New("dns: nothing to serve on")
	}
	errc := make(chan error, len(servers))
	started := make(chan struct{}, len(servers))
	var wg sync.WaitGroup
	for _, srv := range servers {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
		wg.Go(func() { errc <- srv.ActivateAndServe() })
	}
	var err error
	for range servers { // a server stops only once started
		select {
		case <-started:
		case err = <-errc:
			err = fmt.Errorf("dns: serving: %w", err)
		}
	}
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-errc:
			err = fmt.Errorf("dns: serving: %w", err)
		}
	}
	for _, srv := range servers {
		_ = srv.Shutdown()
	}
	wg.Wait()
	return err
}

// HostUpstreams returns the nameservers of a resolv.conf file (the host's
// is /etc/resolv.conf) as host:port.
func HostUpstreams(path string) ([]string, error) {
	cc, err := mdns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("dns: reading %s: %w", path, err)
	}
	var out []string
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out, nil
}
