package dns

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// fakeUpstream serves on loopback (UDP and TCP, one port): example.org and
// www.example.org have A 192.0.2.1; big.example.org has 100 A records (too
// many for 512 bytes); other names are NXDOMAIN. It counts questions.
func fakeUpstream(t *testing.T) (addr string, asked func() []string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	q := make(chan string, 100)
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg).SetReply(r)
		name := strings.ToLower(r.Question[0].Name)
		q <- name
		switch name {
		case "example.org.", "www.example.org.":
			if r.Question[0].Qtype == mdns.TypeA {
				m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: r.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.1")})
			}
		case "big.example.org.":
			for i := range 100 {
				m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, byte(i))})
			}
		default:
			m.Rcode = mdns.RcodeNameError
		}
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			m.Truncate(mdns.MinMsgSize)
		}
		_ = w.WriteMsg(m)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHandler(ctx, h, pc, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return pc.LocalAddr().String(), func() []string {
		var out []string
		for {
			select {
			case n := <-q:
				out = append(out, n)
			default:
				return out
			}
		}
	}
}

// startServer serves ix on loopback and returns its address.
func startServer(t *testing.T, ix *Index, upstreams ...string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Index: ix, Upstreams: upstreams, ForwardTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pc.LocalAddr().String()
}

func query(t *testing.T, addr, network, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	c := &mdns.Client{Net: network, Timeout: 3 * time.Second}
	m := new(mdns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, mdns.TypeToString[qtype], network, err)
	}
	return r
}

func TestServer(t *testing.T) {
	up, asked := fakeUpstream(t)
	ix := testIndex()
	addr := startServer(t, ix, "127.0.0.1:1", up) // the first upstream does not answer
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := query(t, addr, network, "web.default.svc.cluster.local.", mdns.TypeA)
			if got := texts(r.Answer); !r.Authoritative || !slices.Equal(got, []string{"A 10.96.0.20"}) {
				t.Errorf("web: aa=%v %q", r.Authoritative, got)
			}
			r = query(t, addr, network, "db.prod.svc.cluster.local.", mdns.TypeA)
			if got := texts(r.Answer); !slices.Equal(got, []string{"A 10.244.0.11", "A 10.244.0.12"}) {
				t.Errorf("headless: %q", got)
			}
			r = query(t, addr, network, "_pg._tcp.db.prod.svc.cluster.local.", mdns.TypeSRV)
			if len(r.Answer) != 2 || len(r.Extra) != 2 {
				t.Errorf("SRV: %v extra %v", r.Answer, r.Extra)
			}
			r = query(t, addr, network, "20.0.96.10.in-addr.arpa.", mdns.TypePTR)
			if got := texts(r.Answer); !slices.Equal(got, []string{"PTR web.default.svc.cluster.local."}) {
				t.Errorf("PTR: %q", got)
			}
			r = query(t, addr, network, "nope.default.svc.cluster.local.", mdns.TypeA)
			if r.Rcode != mdns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != mdns.TypeSOA {
				t.Errorf("NXDOMAIN: rcode %d ns %v", r.Rcode, r.Ns)
			}
			r = query(t, addr, network, "web.default.svc.cluster.local.", mdns.TypeAAAA)
			if r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
				t.Errorf("NODATA: rcode %d answer %v ns %v", r.Rcode, r.Answer, r.Ns)
			}
			// ExternalName: the CNAME, then the target's address from upstream.
			r = query(t, addr, network, "ext.default.svc.cluster.local.", mdns.TypeA)
			if got := texts(r.Answer); !slices.Equal(got, []string{"CNAME example.org.", "A 192.0.2.1"}) {
				t.Errorf("ExternalName: %q", got)
			}
			// Forwarded.
			r = query(t, addr, network, "www.example.org.", mdns.TypeA)
			if got := texts(r.Answer); r.Authoritative || !slices.Equal(got, []string{"A 192.0.2.1"}) {
				t.Errorf("forwarded: aa=%v %q", r.Authoritative, got)
			}
			r = query(t, addr, network, "missing.example.org.", mdns.TypeA)
			if r.Rcode != mdns.RcodeNameError {
				t.Errorf("forwarded NXDOMAIN: rcode %d", r.Rcode)
			}
			// An unknown reverse name goes upstream too.
			r = query(t, addr, network, "1.1.1.10.in-addr.arpa.", mdns.TypePTR)
			if r.Rcode != mdns.RcodeNameError {
				t.Errorf("forwarded PTR: rcode %d", r.Rcode)
			}
		})
	}
	// A big upstream answer is truncated over UDP and whole over TCP.
	if r := query(t, addr, "udp", "big.example.org.", mdns.TypeA); !r.Truncated {
		t.Errorf("big answer over UDP not truncated (%d records)", len(r.Answer))
	}
	if r := query(t, addr, "tcp", "big.example.org.", mdns.TypeA); r.Truncated || len(r.Answer) != 100 {
		t.Errorf("big answer over TCP: truncated %v, %d records", r.Truncated, len(r.Answer))
	}
	got := asked()
	if !slices.Contains(got, "www.example.org.") || slices.Contains(got, "web.default.svc.cluster.local.") {
		t.Errorf("upstream was asked %q", got)
	}
}

func TestServerNoUpstream(t *testing.T) {
	addr := startServer(t, testIndex())
	if r := query(t, addr, "udp", "example.org.", mdns.TypeA); r.Rcode != mdns.RcodeServerFailure {
		t.Errorf("rcode %d, want SERVFAIL", r.Rcode)
	}
}

func TestServerNotReady(t *testing.T) {
	ix := testIndex()
	ready := false
	s := &Server{Index: ix, Ready: func() bool { return ready }}
	m := new(mdns.Msg).SetQuestion("web.default.svc.cluster.local.", mdns.TypeA)
	if r := s.Answer(context.Background(), m, true); r.Rcode != mdns.RcodeServerFailure {
		t.Errorf("before sync: rcode %d, want SERVFAIL", r.Rcode)
	}
	ready = true
	if r := s.Answer(context.Background(), m, true); r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("after sync: rcode %d answer %v", r.Rcode, r.Answer)
	}
}

// TestServerFollowsChanges: a change of endpoints is answered at once
// (polled for up to 1 s).
func TestServerFollowsChanges(t *testing.T) {
	ix := testIndex()
	addr := startServer(t, ix)
	ix.SetEndpointSlice(epSlice("prod", "db-1", "db", nil, ep{"10.244.0.50", "", true}))
	deadline := time.Now().Add(time.Second)
	for {
		r := query(t, addr, "udp", "db.prod.svc.cluster.local.", mdns.TypeA)
		if slices.Equal(texts(r.Answer), []string{"A 10.244.0.50"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new endpoint not answered within 1 s: %v", r.Answer)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	ix.SetService(svc("prod", "cache", []string{"10.96.0.77"}, corev1.ServicePort{Name: "redis", Port: 6379}))
	ix.SetEndpointSlice(epSlice("prod", "cache-1", "cache", []discoveryv1.EndpointPort{epPort("redis", 6379, corev1.ProtocolTCP)}, ep{"10.244.0.60", "", true}))
	if r := query(t, addr, "tcp", "_redis._tcp.cache.prod.svc.cluster.local.", mdns.TypeSRV); len(r.Answer) != 1 {
		t.Errorf("new service SRV: %v", r.Answer)
	}
}

func TestHostUpstreams(t *testing.T) {
	p := t.TempDir() + "/resolv.conf"
	if err := os.WriteFile(p, []byte("search example.com\nnameserver 192.0.2.53\nnameserver fd00::53\noptions ndots:2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := HostUpstreams(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"192.0.2.53:53", "[fd00::53]:53"}; !slices.Equal(got, want) {
		t.Errorf("HostUpstreams = %q, want %q", got, want)
	}
}
