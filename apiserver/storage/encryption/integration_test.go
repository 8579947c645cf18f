package encryption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/apiserver/storage/encryption"
	"github.com/kubebus/kubebus/test/harness"
)

var _ storage.Transformer = (*encryption.Transformers)(nil)

// TestIntegrationSecretsAtRest stores a Secret through a Store with a
// secretbox configuration, reads etcd directly, and rotates the key.
func TestIntegrationSecretsAtRest(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	etcd := harness.StartEtcd(t)
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	storedAs := func(key string) string {
		t.Helper()
		resp, err := raw.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw read of %s: %v, %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	store := func(config string) *storage.Store {
		t.Helper()
		s, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}, Transformer: mustLoad(t, config)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	const (
		ns     = "/registry/core/namespaces/ns"
		key    = "/registry/core/secrets/ns/db"
		plain  = `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db","namespace":"ns"},"data":{"password":"aHVudGVyMg=="}}`
		plain2 = `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db","namespace":"ns"},"data":{"password":"c3dvcmRmaXNo"}}`
	)
	s := store(config(rule("secrets", provider("secretbox", key32), provider("identity"))))
	if _, err := s.Create(ctx, ns, []byte(`{"kind":"Namespace"}`), ""); err != nil {
		t.Fatal(err)
	}
	rev, err := s.Create(ctx, key, []byte(plain), ns)
	if err != nil {
		t.Fatal(err)
	}
	if got := storedAs(key); !strings.HasPrefix(got, "k8s:enc:secretbox:v1:key1:") || strings.Contains(got, "aHVudGVyMg") {
		t.Fatalf("the Secret is stored as %q, want it encrypted with secretbox", got)
	}
	if got := storedAs(ns); got != `{"kind":"Namespace"}` {
		t.Errorf("the Namespace is stored as %q, want it in the clear", got)
	}
	if kv, err := s.Get(ctx, key); err != nil || string(kv.Value) != plain || kv.Stale {
		t.Errorf("get = %q (stale %v), %v", kv.Value, kv.Stale, err)
	}
	if p, err := s.List(ctx, "/registry/core/secrets/", "", 0, 0); err != nil || len(p.KVs) != 1 || string(p.KVs[0].Value) != plain {
		t.Errorf("list = %+v, %v", p, err)
	}
	if ev := eventAt(t, s, rev); ev.Type != storage.Put || string(ev.KV.Value) != plain {
		t.Errorf("watch event %v %q, want the plaintext", ev.Type, ev.KV.Value)
	}

	// Rotation: a new key first, the old one second. The old value still
	// reads (stale); writing it again encrypts it with the new key.
	rotated := store(config(rule("secrets",
		"  - secretbox:\n      keys:\n      - name: key2\n        secret: "+keyB+"\n      - name: key1\n        secret: "+key32+"\n",
		provider("identity"))))
	kv, err := rotated.Get(ctx, key)
	if err != nil || string(kv.Value) != plain || !kv.Stale {
		t.Fatalf("get after rotation = %q (stale %v), %v; want the plaintext, stale", kv.Value, kv.Stale, err)
	}
	rev2, _, err := rotated.Update(ctx, key, kv.Value, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got := storedAs(key); !strings.HasPrefix(got, "k8s:enc:secretbox:v1:key2:") {
		t.Errorf("the rewritten Secret is stored as %q, want it under key2", got)
	}
	if kv, err := rotated.Get(ctx, key); err != nil || string(kv.Value) != plain || kv.Stale {
		t.Errorf("get after the rewrite = %q (stale %v), %v; want fresh", kv.Value, kv.Stale, err)
	}
	if ev := eventAt(t, rotated, rev2); ev.Type != storage.Put || string(ev.KV.Value) != plain || string(ev.Prev.Value) != plain {
		t.Errorf("watch of the rewrite: %v %q (was %q), want the plaintext twice", ev.Type, ev.KV.Value, ev.Prev.Value)
	}

	// Identity first (decrypting for good): encrypted values still read,
	// new writes are stored in the clear.
	clear := store(config(rule("secrets", provider("identity"),
		"  - secretbox:\n      keys:\n      - name: key2\n        secret: "+keyB+"\n")))
	if kv, err := clear.Get(ctx, key); err != nil || string(kv.Value) != plain || !kv.Stale {
		t.Fatalf("get with identity first = %q (stale %v), %v; want the plaintext, stale", kv.Value, kv.Stale, err)
	}
	rev3, _, err := clear.Update(ctx, key, []byte(plain2), rev2)
	if err != nil {
		t.Fatal(err)
	}
	if got := storedAs(key); got != plain2 {
		t.Errorf("with identity first the Secret is stored as %q, want the clear", got)
	}
	if ev := eventAt(t, clear, rev3); string(ev.KV.Value) != plain2 || string(ev.Prev.Value) != plain {
		t.Errorf("watch: %q (was %q), want %q (was the first value)", ev.KV.Value, ev.Prev.Value, plain2)
	}

	// The old key alone cannot read key2's values: an error naming the key.
	if _, err := s.Create(ctx, "/registry/core/secrets/ns/other", []byte(plain), ns); err != nil {
		t.Fatal(err)
	}
	if _, err := store(config(rule("secrets", provider("secretbox", keyB)))).Get(ctx, "/registry/core/secrets/ns/other"); err == nil || !strings.Contains(err.Error(), "/registry/core/secrets/ns/other") {
		t.Errorf("get with the wrong key: %v, want an error naming the key", err)
	}
}

// eventAt returns the event of revision rev, watched through s.
func eventAt(t *testing.T, s *storage.Store, rev int64) storage.Event {
	t.Helper()
	w := s.Watch(context.Background(), "/registry/core/secrets/", rev)
	defer w.Stop()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ev.Type != storage.Progress {
				return ev
			}
		case <-timeout:
			t.Fatal("no watch event in 10s")
		}
	}
}
