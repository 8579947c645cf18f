package natsserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
)

// cluster is an embedded server with a temporary cluster CA.
type cluster struct{ *natstest.Server }

func newCluster(t *testing.T) *cluster { return &cluster{natstest.Start(t)} }

// conn is a test connection that records the permission violations the
// server reports.
type conn struct {
	*nats.Conn
	mu         sync.Mutex
	violations []string
}

func (c *conn) violated(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.violations {
		if strings.Contains(v, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

// connect connects as user (in groups), as bus.Connect does but keeping
// the server's errors, and fails the test when refused.
func (c *cluster) connect(t *testing.T, user string, groups ...string) (*conn, jetstream.JetStream) {
	t.Helper()
	cfg, cn, err := c.CA.Creds(t, user, groups...).TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	tc := &conn{}
	nc, err := nats.Connect(c.URL(), nats.Secure(cfg), nats.CustomInboxPrefix(bus.InboxPrefix(cn)), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				tc.mu.Lock()
				tc.violations = append(tc.violations, err.Error())
				tc.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	tc.Conn = nc
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return tc, js
}

func integration(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
}

func TestStartRequiresTLS(t *testing.T) {
	if _, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), Port: -1}); err == nil {
		t.Fatal("a server without TLS started")
	}
}

func TestRefusesWithoutClientCertificate(t *testing.T) {
	integration(t)
	c := newCluster(t)
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(c.CA.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	nc, err := nats.Connect(c.URL(), nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatal("a TLS connection without a client certificate was accepted")
	}
	t.Logf("refused as expected: %v", err)
}

func TestRefusesPlainTCP(t *testing.T) {
	integration(t)
	c := newCluster(t)
	nc, err := nats.Connect(c.URL(), nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatal("a connection without TLS was accepted")
	}
	// A client that ignores the server's tls_required and speaks the
	// protocol in the clear gets no PONG.
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(c.URL(), "nats://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("INFO %q (%v): want tls_required", info, err)
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\nPUB kube.core.pods.default.p 2\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "PONG") {
			t.Fatal("a plain-TCP client was answered PONG")
		}
		if err != nil {
			break // closed by the server (or the deadline): refused
		}
	}
}

func TestRefusesUnknownIdentityAndForeignCA(t *testing.T) {
	integration(t)
	c := newCluster(t)
	for _, id := range []busauth.Identity{{User: "alice"}, {User: "system:node:a"}, {User: "mallory", Groups: []string{"system:authenticated"}}} {
		nc, _, err := bus.ConnectOnce(c.URL(), "test", c.CA.Creds(t, id.User, id.Groups...), false)
		if err == nil {
			nc.Close()
			t.Errorf("%+v was accepted", id)
		}
	}
	// The admin of another cluster CA.
	other, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "other"), Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	creds := bus.Credentials{CAFile: c.CA.CAFile, CertFile: other.AdminCertFile, KeyFile: other.AdminKeyFile}
	if nc, _, err := bus.ConnectOnce(c.URL(), "test", creds, false); err == nil {
		nc.Close()
		t.Error("a certificate of another CA was accepted")
	}
}

// refused checks that what nc did failed and that the server reported a
// permissions violation for subject.
func refused(t *testing.T, who, what string, nc *conn, subject string, err error) {
	t.Helper()
	if ferr := nc.Flush(); ferr != nil {
		t.Fatalf("%s: flush: %v", who, ferr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !nc.violated(subject) {
		if time.Now().After(deadline) {
			t.Errorf("%s: %s (err %v): the server reported no permissions violation for %q", who, what, err, subject)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPermissions: readers and kubelets cannot write the bus or change its
// streams; the publisher can; a kubelet reads its own node only.
func TestPermissions(t *testing.T) {
	integration(t)
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, pub := c.connect(t, busauth.PublisherUser)
	if err := bus.EnsureStreams(ctx, pub, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"kube.core.pods.default.p", bus.NodeSubject("a", "default", "p"), bus.NodeSubject("b", "default", "q")} {
		if _, err := pub.Publish(ctx, subj, []byte("by the publisher")); err != nil {
			t.Fatalf("publisher publishing %s: %v", subj, err)
		}
	}
	state := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, name := range []string{bus.HistoryStream, bus.NodePodsStream, bus.StateStream} {
			st, err := pub.Stream(ctx, name)
			if err != nil {
				t.Fatalf("stream %s: %v", name, err)
			}
			m[name] = st.CachedInfo().State.Msgs
		}
		return m
	}
	before := state()

	for _, id := range []busauth.Identity{
		{User: "system:node:a", Groups: []string{busauth.NodesGroup}},
		{User: busauth.ControllerManagerUser},
	} {
		nc, js := c.connect(t, id.User, id.Groups...)
		short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
		for _, subj := range []string{bus.NodeSubject("a", "default", "p"), "kube.core.pods.default.p", bus.StateSubject(bus.ObjectKey{Resource: "pods", Namespace: "default", Name: "p"}), bus.GapSubject} {
			pctx, cancel := short()
			_, err := js.Publish(pctx, subj, []byte("forged"))
			cancel()
			refused(t, id.User, "publishing "+subj, nc, subj, err)
		}
		dctx, cancel := short()
		err := js.DeleteStream(dctx, bus.HistoryStream)
		cancel()
		refused(t, id.User, "deleting "+bus.HistoryStream, nc, "$JS.API.STREAM.DELETE."+bus.HistoryStream, err)
		purge := "$JS.API.STREAM.PURGE." + bus.NodePodsStream
		if err := nc.PublishRequest(purge, nc.NewRespInbox(), nil); err != nil {
			t.Fatal(err)
		}
		refused(t, id.User, "purging "+bus.NodePodsStream, nc, purge, nil)
		uctx, cancel := short()
		_, err = js.UpdateStream(uctx, jetstream.StreamConfig{Name: bus.StateStream, Subjects: []string{"kstate.>", "kstatenode.>", "evil.>"}})
		cancel()
		refused(t, id.User, "updating "+bus.StateStream, nc, "$JS.API.STREAM.UPDATE."+bus.StateStream, err)
		// Another identity's inbox.
		inbox := bus.InboxPrefix(busauth.PublisherUser) + ".>"
		if _, err := nc.SubscribeSync(inbox); err != nil {
			t.Fatal(err)
		}
		refused(t, id.User, "subscribing to the publisher's inbox", nc, inbox, nil)
	}
	if after := state(); !equalCounts(before, after) {
		t.Fatalf("the streams changed: %v, then %v", before, after)
	}

	// A reader reads every stream.
	_, kcm := c.connect(t, busauth.ControllerManagerUser)
	if got := readAll(ctx, t, kcm, bus.HistoryStream, jetstream.ConsumerConfig{Durable: "kcm-core-pods", FilterSubjects: []string{"kube.core.pods.>", bus.GapSubject}}); len(got) != 1 {
		t.Errorf("the controller-manager read %v from %s, want the one pod", got, bus.HistoryStream)
	}

	// A kubelet reads its own node's pods, through the consumer named for it
	// and filtered to it, and nothing else.
	ncA, nodeA := c.connect(t, "system:node:a", busauth.NodesGroup)
	own := jetstream.ConsumerConfig{Durable: busauth.NodeConsumer("a"), FilterSubject: bus.NodeFilter("a")}
	if got := readAll(ctx, t, nodeA, bus.NodePodsStream, own); len(got) != 1 || got[0] != bus.NodeSubject("a", "default", "p") {
		t.Errorf("node a read %v, want its one pod", got)
	}
	for what, cc := range map[string]jetstream.ConsumerConfig{
		"another node's pods":   {Durable: busauth.NodeConsumer("a"), FilterSubject: bus.NodeFilter("b")},
		"every node's pods":     {Durable: busauth.NodeConsumer("a"), FilterSubject: "knode.>"},
		"a list of filters":     {Durable: busauth.NodeConsumer("a"), FilterSubjects: []string{bus.NodeFilter("a")}},
		"another consumer name": {Durable: busauth.NodeConsumer("b"), FilterSubject: bus.NodeFilter("a")},
	} {
		st, err := nodeA.Stream(ctx, bus.NodePodsStream)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = st.CreateConsumer(cctx, cc)
		cancel()
		subj := "$JS.API.CONSUMER.CREATE." + bus.NodePodsStream + "." + cc.Durable
		if cc.FilterSubject != "" {
			subj += "." + cc.FilterSubject
		}
		refused(t, "node a", "a consumer of "+what, ncA, subj, err)
	}
	// The last message of its own chain, and not of another's or by
	// sequence: direct gets whose subject carries what is read.
	allowDirect(ctx, t, pub)
	st, err := nodeA.Stream(ctx, bus.NodePodsStream)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetLastMsgForSubject(ctx, bus.NodeFilter("a")); err != nil || m.Subject != bus.NodeSubject("a", "default", "p") {
		t.Errorf("node a reading its last message: %v %v", m, err)
	}
	gctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = st.GetLastMsgForSubject(gctx, bus.NodeFilter("b"))
	cancel()
	refused(t, "node a", "reading node b's last message", ncA, "$JS.API.DIRECT.GET."+bus.NodePodsStream+"."+bus.NodeFilter("b"), err)
	gctx, cancel = context.WithTimeout(ctx, time.Second)
	_, err = st.GetMsg(gctx, 1)
	cancel()
	refused(t, "node a", "reading a message by sequence", ncA, "$JS.API.DIRECT.GET."+bus.NodePodsStream, err)

	// The publisher may do all of it.
	if _, err := pub.Publish(ctx, bus.NodeSubject("a", "default", "p2"), []byte("x")); err != nil {
		t.Errorf("publisher: %v", err)
	}
	if err := pub.DeleteStream(ctx, bus.HistoryStream); err != nil {
		t.Errorf("publisher deleting %s: %v", bus.HistoryStream, err)
	}
}

func equalCounts(a, b map[string]uint64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// readAll reads what a new consumer with cc on stream delivers and
// returns the subjects.
func readAll(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string, cc jetstream.ConsumerConfig) []string {
	t.Helper()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, cc)
	if err != nil {
		t.Fatalf("creating %+v on %s: %v", cc, stream, err)
	}
	batch, err := cons.Fetch(100, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for m := range batch.Messages() {
		subjects = append(subjects, m.Subject())
		if err := m.Ack(); err != nil {
			t.Errorf("ack: %v", err)
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		t.Fatal(err)
	}
	return subjects
}

// allowDirect turns on direct gets on the node and history streams.
func allowDirect(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	t.Helper()
	for _, name := range []string{bus.NodePodsStream, bus.HistoryStream} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.AllowDirect = true
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}
