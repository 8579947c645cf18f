package storage_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// maskTransformer stands in for encryption: values of keys under prefix
// are stored as "enc:" (or, written with a retired key, "old:") and their
// bytes flipped; anything else under prefix does not decrypt.
type maskTransformer struct{ prefix string }

func flip(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = c ^ 0xff
	}
	return out
}

func (m maskTransformer) TransformToStorage(_ context.Context, key string, data []byte) ([]byte, error) {
	if !strings.HasPrefix(key, m.prefix) {
		return data, nil
	}
	return append([]byte("enc:"), flip(data)...), nil
}

func (m maskTransformer) TransformFromStorage(_ context.Context, key string, data []byte) ([]byte, bool, error) {
	switch {
	case !strings.HasPrefix(key, m.prefix):
		return data, false, nil
	case bytes.HasPrefix(data, []byte("enc:")):
		return flip(data[4:]), false, nil
	case bytes.HasPrefix(data, []byte("old:")):
		return flip(data[4:]), true, nil
	}
	return nil, false, errors.New("no matching prefix found")
}

// TestIntegrationTransformer checks that every write stores the
// transformed value and every read (get, list, watch, a conflicting
// update) returns it transformed back, or fails naming the key.
func TestIntegrationTransformer(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	etcd := harness.StartEtcd(t)
	s, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}, Transformer: maskTransformer{prefix: "/registry/core/secrets/"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	stored := func(key string) string {
		t.Helper()
		resp, err := raw.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw read of %s: %v, %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	const (
		ns     = "/registry/core/namespaces/ns"
		secret = "/registry/core/secrets/ns/s"
		pod    = "/registry/core/pods/ns/p"
	)
	if _, err := s.Create(ctx, ns, []byte("ns"), ""); err != nil {
		t.Fatal(err)
	}
	w := s.Watch(ctx, "/registry/core/secrets/", 0)
	t.Cleanup(w.Stop)
	rev, err := s.CreateWith(ctx, secret, []byte("v1"), ns, storage.Side{Claim: []storage.KeyValue{{Key: "/kubebus/t/claim", Value: []byte("uid")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, pod, []byte("pod"), ns); err != nil {
		t.Fatal(err)
	}
	if got := stored(secret); got != "enc:"+string(flip([]byte("v1"))) {
		t.Errorf("the secret is stored as %q", got)
	}
	if got := stored(pod); got != "pod" {
		t.Errorf("the pod is stored as %q, want it unchanged", got)
	}
	if got := stored("/kubebus/t/claim"); got != "uid" {
		t.Errorf("the claim is stored as %q, want it unchanged", got)
	}

	rev2, _, err := s.Update(ctx, secret, []byte("v2"), rev)
	if err != nil {
		t.Fatal(err)
	}
	if got := stored(secret); got != "enc:"+string(flip([]byte("v2"))) {
		t.Errorf("the updated secret is stored as %q", got)
	}
	reads := map[string]func() (storage.KV, error){
		"get":              func() (storage.KV, error) { return s.Get(ctx, secret) },
		"get serializable": func() (storage.KV, error) { return s.GetSerializable(ctx, secret) },
		"list": func() (storage.KV, error) {
			p, err := s.List(ctx, "/registry/core/secrets/", "", 0, 0)
			if err != nil || len(p.KVs) != 1 {
				return storage.KV{}, errors.Join(err, errors.New("not one key"))
			}
			return p.KVs[0], nil
		},
		"list serializable": func() (storage.KV, error) {
			p, err := s.ListSerializable(ctx, "/registry/core/secrets/")
			if err != nil || len(p.KVs) != 1 {
				return storage.KV{}, errors.Join(err, errors.New("not one key"))
			}
			return p.KVs[0], nil
		},
		"conflicting update": func() (storage.KV, error) {
			_, cur, err := s.Update(ctx, secret, []byte("v3"), rev)
			if !errors.Is(err, storage.ErrConflict) {
				return storage.KV{}, err
			}
			return cur, nil
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			kv, err := read()
			if err != nil || string(kv.Value) != "v2" || kv.ModRevision != rev2 || kv.Stale {
				t.Errorf("read %q at %d (stale %v), %v; want \"v2\" at %d", kv.Value, kv.ModRevision, kv.Stale, err, rev2)
			}
		})
	}
	if _, _, err := s.Delete(ctx, secret, rev2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ        storage.EventType
		value, old string
	}{{storage.Put, "v1", ""}, {storage.Put, "v2", "v1"}, {storage.Delete, "", "v2"}} {
		ev := nextEvent(t, w)
		if ev.Type != want.typ || string(ev.KV.Value) != want.value || string(ev.Prev.Value) != want.old {
			t.Errorf("watch event %v %q (was %q), want %v %q (was %q)", ev.Type, ev.KV.Value, ev.Prev.Value, want.typ, want.value, want.old)
		}
	}

	// A value written with a retired key reads as stale.
	if _, err := raw.Put(ctx, secret, "old:"+string(flip([]byte("v4")))); err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, secret); err != nil || string(kv.Value) != "v4" || !kv.Stale {
		t.Errorf("get of an old value = %q (stale %v), %v; want \"v4\", stale", kv.Value, kv.Stale, err)
	}

	// A value that does not decrypt fails every read, naming its key.
	if _, err := raw.Put(ctx, secret, "garbage"); err != nil {
		t.Fatal(err)
	}
	fails := map[string]func() error{
		"get": func() error { _, err := s.Get(ctx, secret); return err },
		"list": func() error {
			_, err := s.List(ctx, "/registry/core/", "", 0, 0)
			return err
		},
		"conflicting update": func() error { _, _, err := s.Update(ctx, secret, []byte("v5"), 1); return err },
		"watch": func() error {
			for ev := range w.Events {
				if ev.Type != storage.Progress && string(ev.KV.Value) != "v4" {
					t.Errorf("watch delivered %v %q", ev.Type, ev.KV.Value)
				}
			}
			return w.Err()
		},
	}
	for name, fail := range fails {
		t.Run("undecryptable "+name, func(t *testing.T) {
			err := fail()
			var te *storage.TransformError
			if !errors.As(err, &te) || te.Key != secret || !strings.Contains(err.Error(), `unable to transform key "`+secret+`"`) {
				t.Errorf("got %v, want a TransformError naming %s", err, secret)
			}
		})
	}
}

func nextEvent(t *testing.T, w *storage.Watcher) storage.Event {
	t.Helper()
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
