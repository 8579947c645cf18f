package natsserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
)

// TestInProcessConnections: a component of the server's own process
// connects in process with the token the server issued for its identity
// and gets that identity's permissions; a wrong token, no token, or the
// token over the network is refused.
func TestInProcessConnections(t *testing.T) {
	integration(t)
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := c.InProcess(busauth.Identity{User: busauth.PublisherUser})
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := bus.ConnectOnce("", "publisher", pub, false)
	if err != nil {
		t.Fatalf("the publisher in process: %v", err)
	}
	defer nc.Close()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.HistoryStream, Subjects: []string{"kube.>"}}); err != nil {
		t.Fatalf("the publisher in process may create streams: %v", err)
	}
	if _, err := js.Publish(ctx, "kube.core.pods.default.p", []byte("{}")); err != nil {
		t.Fatalf("the publisher in process may publish: %v", err)
	}

	node, err := c.InProcess(busauth.Identity{User: "system:node:a", Groups: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}
	violations := make(chan error, 4)
	nnc, err := nats.Connect("", nats.InProcessServer(node.InProcess), nats.Token(node.Token), nats.CustomInboxPrefix(bus.InboxPrefix(node.User)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatalf("a node in process: %v", err)
	}
	defer nnc.Close()
	if err := nnc.Publish("kube.core.pods.default.forged", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("a node's publish in process: %v, want a permissions violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a node in process published to kube.> with no permissions violation")
	}
	for name, token := range map[string]string{"no token": "", "a token the server never issued": "0000"} {
		if tc, err := nats.Connect("", nats.InProcessServer(node.InProcess), nats.Token(token), nats.NoReconnect(), nats.Timeout(time.Second)); err == nil {
			tc.Close()
			t.Errorf("an in-process connection with %s was accepted", name)
		}
	}
	// Over the network the token is no credential: TLS without a
	// certificate is refused.
	cfg, _, err := c.CA.Creds(t, "x").TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificates = nil
	if tc, err := nats.Connect(c.URL(), nats.Secure(cfg), nats.Token(node.Token), nats.NoReconnect()); err == nil {
		tc.Close()
		t.Error("the in-process token was accepted over the network")
	}
	if _, err := c.InProcess(busauth.Identity{User: "somebody"}); !errors.Is(err, busauth.ErrUnknownIdentity) {
		t.Errorf("in-process credentials for an unknown identity: %v, want ErrUnknownIdentity", err)
	}
}
