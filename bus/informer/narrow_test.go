package informer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
)

// keyOf is the etcd key the API server stores an object of a grant's
// resource under.
func keyOf(g busauth.Grant, ns, name string) string {
	group := g.Group
	if group == "" {
		group = "core"
	}
	if ns == "" {
		return "/registry/" + group + "/" + g.Resource + "/" + name
	}
	return "/registry/" + group + "/" + g.Resource + "/" + ns + "/" + name
}

// objectJSON is a stored object of any kind: metadata is all an informer
// of PartialObjectMetadata reads.
func objectJSON(t *testing.T, ns, name, version string) []byte {
	return mustJSON(t, map[string]any{"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]string{"v": version}}})
}

// startBus starts an embedded server with the streams, and an empty fake
// etcd for the real publisher.
func startBus(t *testing.T) (context.Context, *testNATS, jetstream.JetStream, *fakeEtcd) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ctx := testContext(t)
	n := startNATS(t)
	return ctx, n, n.connect(ctx), newFakeEtcd()
}

// Every component whose bus identity is narrowed (kube-proxy, the cluster
// DNS, the scheduler) runs its informers, narrowed, under that identity:
// each loads what the bus holds and follows what is written after, and
// the same connection cannot read another resource, another component's
// consumer or a message by its sequence.
func TestNarrowedComponentsRunTheirInformers(t *testing.T) {
	ctx, n, pub, etcd := startBus(t)
	// One object of every granted resource before the informers start, and
	// a Secret no component here may read.
	type granted struct {
		user string
		g    busauth.Grant
	}
	var all []granted
	for _, user := range []string{busauth.ProxyUser, busauth.KubeDNSUser, busauth.SchedulerUser} {
		_, grants, ok := busauth.Grants(user)
		if !ok || len(grants) == 0 {
			t.Fatalf("busauth.Grants(%s): no grants", user)
		}
		for _, g := range grants {
			all = append(all, granted{user, g})
		}
	}
	nsOf := func(g busauth.Grant) string {
		switch g.Resource {
		case "nodes", "namespaces", "persistentvolumes", "storageclasses":
			return ""
		}
		return "default"
	}
	for _, a := range all {
		etcd.put(keyOf(a.g, nsOf(a.g), "first"), objectJSON(t, nsOf(a.g), "first", "1"))
	}
	last := etcd.put("/registry/core/secrets/default/s", objectJSON(t, "default", "s", "1"))
	runPublisher(t, ctx, pub, etcd)
	waitPublished(t, ctx, pub, last)

	for _, user := range []string{busauth.ProxyUser, busauth.KubeDNSUser, busauth.SchedulerUser} {
		prefix, grants, _ := busauth.Grants(user)
		t.Run(user, func(t *testing.T) {
			const instance = "n1.example.com" // hashed into the names
			nc, js, err := bus.ConnectOnce(n.url(), prefix+instance, n.ca.Creds(t, user), true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			var infs []*Informer[*metav1.PartialObjectMetadata]
			for _, g := range grants {
				inf, err := New(Config[*metav1.PartialObjectMetadata]{JetStream: js, Component: g.Component, Instance: instance,
					Group: g.Group, Resource: g.Resource, Narrow: true, Logger: testLogger(), CheckInterval: 200 * time.Millisecond,
					New: func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} }})
				if err != nil {
					t.Fatal(err)
				}
				rctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- inf.Run(rctx) }()
				t.Cleanup(func() {
					cancel()
					if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("%s informer: %v", g.Resource, err)
					}
				})
				infs = append(infs, inf)
			}
			for i, g := range grants {
				ns := nsOf(g)
				eventually(t, 30*time.Second, g.Resource+" loaded", func() bool {
					_, ok := infs[i].Get(ns, "first")
					return infs[i].HasSynced() && ok
				})
				rev := etcd.put(keyOf(g, ns, "later"), objectJSON(t, ns, "later", "2"))
				eventually(t, 30*time.Second, g.Resource+" followed", func() bool {
					o, ok := infs[i].Get(ns, "later")
					return ok && o.ResourceVersion != "" && o.Labels["v"] == "2" && infs[i].Revision() >= rev
				})
			}

			// What the identity may not do, though its connection can.
			refused := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s: allowed", what)
				}
			}
			short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
			// Consumers of the names this identity may use, on a second
			// connection for an instance whose informers do not run, so
			// that no consumer of those names exists yet.
			g := grants[0]
			const idle = "n3"
			nc3, js3, err := bus.ConnectOnce(n.url(), prefix+idle, n.ca.Creds(t, user), true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc3.Close)
			hist3, err := js3.Stream(ctx, bus.HistoryStream)
			if err != nil {
				t.Fatal(err)
			}
			own := bus.DurableName(g.Component, g.Group, g.Resource, "", idle)
			for what, cc := range map[string]jetstream.ConsumerConfig{
				"a consumer of secrets":             {Durable: own, FilterSubject: bus.ResourceFilter("", "secrets", "")},
				"a consumer of the whole history":   {Durable: own, FilterSubject: "kube.>"},
				"a consumer without a filter":       {Durable: own},
				"a consumer with a list of filters": {Durable: own, FilterSubjects: []string{bus.ResourceFilter(g.Group, g.Resource, ""), bus.GapSubject}},
				"another instance's consumer":       {Durable: bus.DurableName(g.Component, g.Group, g.Resource, "", "n2"), FilterSubject: bus.ResourceFilter(g.Group, g.Resource, "")},
				"the controller-manager's consumer": {Durable: bus.DurableName("kube-controller-manager", g.Group, g.Resource, "", idle), FilterSubject: bus.ResourceFilter(g.Group, g.Resource, "")},
			} {
				cctx, cancel := short()
				_, err := hist3.CreateConsumer(cctx, cc)
				cancel()
				refused(what, err)
				if err == nil {
					_ = pub.DeleteConsumer(ctx, bus.HistoryStream, cc.Durable) // so that each case stands alone
				}
			}
			// The name and filter it is granted: allowed.
			if _, err := hist3.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: own, FilterSubject: bus.ResourceFilter(g.Group, g.Resource, "")}); err != nil {
				t.Errorf("creating its own consumer %s: %v", own, err)
			} else if err := hist3.DeleteConsumer(ctx, own); err != nil {
				t.Errorf("deleting its own consumer %s: %v", own, err)
			}
			hist, err := js.Stream(ctx, bus.HistoryStream)
			if err != nil {
				t.Fatal(err)
			}
			gctx, cancel := short()
			_, err = hist.GetMsg(gctx, 1)
			cancel()
			refused("reading a message by its sequence", err)
			gctx, cancel = short()
			_, err = hist.GetLastMsgForSubject(gctx, bus.ResourceFilter("", "secrets", ""))
			cancel()
			refused("reading the last secret", err)
			// Pulling from a consumer the publisher made for the
			// controller-manager.
			kcm := bus.DurableName("kube-controller-manager", "", "secrets", "", "")
			if _, err := pub.CreateConsumer(ctx, bus.HistoryStream, jetstream.ConsumerConfig{Durable: kcm, FilterSubject: bus.ResourceFilter("", "secrets", "")}); err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+bus.HistoryStream+"."+kcm, []byte(`{"batch":1,"expires":500000000}`), time.Second); !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, nats.ErrPermissionViolation) {
				t.Errorf("pulling from the controller-manager's consumer: %v, want a refusal", err)
			}
		})
	}
}

// A narrowed informer whose state read missed the event at h0 (the live
// stream's last sequence when the read began) still gets that event when
// the resource has moved on since: it cannot read h0 by sequence, and the
// resource's last message is then a later one.
func TestNarrowedInformerGetsTheEventAtItsStart(t *testing.T) {
	ctx, n, pub, etcd := startBus(t)
	etcd.put("/registry/core/services/default/a", objectJSON(t, "default", "a", "1"))
	last := etcd.put("/registry/core/services/default/b", objectJSON(t, "default", "b", "1"))
	runPublisher(t, ctx, pub, etcd)
	waitPublished(t, ctx, pub, last)

	nc, js, err := bus.ConnectOnce(n.url(), "kube-proxy-n1", n.ca.Creds(t, busauth.ProxyUser), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	inf, err := New(Config[*metav1.PartialObjectMetadata]{JetStream: js, Component: "kube-proxy", Instance: "n1", Resource: "services", Narrow: true,
		Logger: testLogger(), New: func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} }})
	if err != nil {
		t.Fatal(err)
	}
	live, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	// Service a's event is h0 (the state read, not done here, lacked it),
	// and service b's came after.
	a, err := live.GetLastMsgForSubject(ctx, bus.HistorySubject(bus.ObjectKey{Resource: "services", Namespace: "default", Name: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	inf.live, inf.liveBorn = live, live.CachedInfo().Created
	if err := inf.followFrom(ctx, a.Sequence); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inf.follow(fctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 30*time.Second, "services a and b", func() bool {
		_, okA := inf.Get("default", "a")
		_, okB := inf.Get("default", "b")
		return okA && okB
	})
}
