package natsserver_test

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
	"github.com/kubebus/kubebus/test/harness"
)

// TestClusterRoutes: the members of a NATS cluster on loopback join over
// mutual TLS with route certificates of the cluster CA; a member whose
// route certificate is a kubelet's (also of the cluster CA) is refused, so
// a component cannot join the bus as a route.
func TestClusterRoutes(t *testing.T) {
	integration(t)
	ca := natstest.NewCA(t)
	servingCert, servingKey, err := ca.IssueServing("kubebus-nats-route", []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	free := harness.FreePorts(t, 3)
	ports := map[string]int{"a": free[0], "b": free[1], "c": free[2]}
	route := func(name string) string { return fmt.Sprintf("nats-route://127.0.0.1:%d", ports[name]) }
	member := func(name string, routes []string, user string, groups ...string) natsserver.Config {
		cert, key, err := ca.IssueClient(user, groups)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg, err := natsserver.RouteTLS(ca.CAFile, servingCert, servingKey, cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return natsserver.Config{Name: name, StoreDir: t.TempDir(), Port: -1, TLS: ca.TLS, ReadyTimeout: 15 * time.Second,
			Cluster: natsserver.ClusterConfig{Name: "bus", Port: ports[name], Routes: routes, TLS: tlsCfg},
			Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	cfgs := map[string]natsserver.Config{
		"a": member("a", []string{route("b")}, busauth.RouteUser),
		"b": member("b", []string{route("a")}, busauth.RouteUser),
		"c": member("c", []string{route("a"), route("b")}, "system:node:x", "system:nodes"),
	}
	var mu sync.Mutex
	servers, errs := map[string]*natsserver.Server{}, map[string]error{}
	var wg sync.WaitGroup
	for name, cfg := range cfgs {
		wg.Go(func() {
			s, err := natsserver.Start(cfg)
			mu.Lock()
			defer mu.Unlock()
			servers[name], errs[name] = s, err
		})
	}
	wg.Wait()
	for _, s := range servers {
		if s != nil {
			t.Cleanup(s.Shutdown)
		}
	}
	for _, name := range []string{"a", "b"} {
		if errs[name] != nil {
			t.Fatalf("member %s with a route certificate: %v", name, errs[name])
		}
	}
	if errs["c"] == nil && servers["c"].NumRoutes() > 0 {
		t.Fatalf("a member with a kubelet's certificate joined with %d routes", servers["c"].NumRoutes())
	}
	deadline := time.Now().Add(10 * time.Second)
	for servers["a"].NumRoutes() == 0 || servers["b"].NumRoutes() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("members a and b did not join: %d and %d routes", servers["a"].NumRoutes(), servers["b"].NumRoutes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// a and b have the same routes (a pool of connections each way), and
	// none to c.
	time.Sleep(2 * time.Second) // c retries its routes every second
	if na, nb := servers["a"].NumRoutes(), servers["b"].NumRoutes(); na != nb {
		t.Errorf("a has %d routes and b %d: c joined one of them", na, nb)
	}
	if s := servers["c"]; s != nil && s.NumRoutes() != 0 {
		t.Errorf("c has %d routes", s.NumRoutes())
	}
	t.Logf("a and b joined with %d routes each; c: %v", servers["a"].NumRoutes(), errs["c"])
}
