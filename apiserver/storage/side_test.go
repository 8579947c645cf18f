package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationSideEffects checks that claims and releases commit in the
// same transaction as the object write, or not at all.
func TestIntegrationSideEffects(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	etcd := harness.StartEtcd(t)
	s, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	kv := func(k, v string) storage.KeyValue { return storage.KeyValue{Key: k, Value: []byte(v)} }
	has := func(key, want string) {
		t.Helper()
		got, err := s.Get(ctx, key)
		switch {
		case want == "" && !errors.Is(err, storage.ErrNotFound):
			t.Errorf("%s = %q, %v; want absent", key, got.Value, err)
		case want != "" && (err != nil || string(got.Value) != want):
			t.Errorf("%s = %q, %v; want %q", key, got.Value, err, want)
		}
	}
	if _, err := s.Create(ctx, "/registry/core/namespaces/ns", []byte("{}"), ""); err != nil {
		t.Fatal(err)
	}

	// A create claims its keys.
	rev, err := s.CreateWith(ctx, "/registry/core/services/ns/a", []byte("a"), "/registry/core/namespaces/ns",
		storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/1", "uid-a"), kv("/kubebus/t/2", "uid-a")}})
	if err != nil {
		t.Fatal(err)
	}
	has("/kubebus/t/1", "uid-a")
	has("/kubebus/t/2", "uid-a")

	// A create whose claim is taken writes nothing and names the key.
	_, err = s.CreateWith(ctx, "/registry/core/services/ns/b", []byte("b"), "/registry/core/namespaces/ns",
		storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/3", "uid-b"), kv("/kubebus/t/2", "uid-b")}})
	var ce *storage.ClaimError
	if !errors.Is(err, storage.ErrClaimed) || !errors.As(err, &ce) || ce.Key != "/kubebus/t/2" {
		t.Fatalf("create with a taken claim: %v, want a ClaimError for /kubebus/t/2", err)
	}
	has("/registry/core/services/ns/b", "")
	has("/kubebus/t/3", "")
	// The object's own conditions still come first.
	if _, err := s.CreateWith(ctx, "/registry/core/services/ns/a", []byte("a"), "", storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/2", "x")}}); !errors.Is(err, storage.ErrExists) {
		t.Errorf("create of an existing key: %v, want ErrExists", err)
	}
	if _, err := s.CreateWith(ctx, "/registry/core/services/gone/c", []byte("c"), "/registry/core/namespaces/gone", storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/9", "x")}}); !errors.Is(err, storage.ErrNoParent) {
		t.Errorf("create without its namespace: %v, want ErrNoParent", err)
	}
	has("/kubebus/t/9", "")

	// An update claims and releases; a release of a key holding another
	// value leaves it alone.
	if _, err := s.Create(ctx, "/kubebus/t/other", []byte("uid-other"), ""); err != nil {
		t.Fatal(err)
	}
	rev2, _, err := s.UpdateWith(ctx, "/registry/core/services/ns/a", []byte("a2"), rev, storage.Side{
		Claim:   []storage.KeyValue{kv("/kubebus/t/4", "uid-a")},
		Release: []storage.KeyValue{kv("/kubebus/t/1", "uid-a"), kv("/kubebus/t/other", "uid-a"), kv("/kubebus/t/absent", "uid-a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	has("/kubebus/t/1", "")
	has("/kubebus/t/4", "uid-a")
	has("/kubebus/t/other", "uid-other")

	// A stale update is a conflict, not a claim error, even with a taken claim.
	if _, _, err := s.UpdateWith(ctx, "/registry/core/services/ns/a", []byte("a3"), rev, storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/4", "x")}}); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale update: %v, want ErrConflict", err)
	}
	if _, _, err := s.UpdateWith(ctx, "/registry/core/services/ns/a", []byte("a3"), rev2, storage.Side{Claim: []storage.KeyValue{kv("/kubebus/t/other", "x")}}); !errors.Is(err, storage.ErrClaimed) {
		t.Errorf("update with a taken claim: %v, want ErrClaimed", err)
	}
	has("/registry/core/services/ns/a", "a2")

	// A delete releases.
	if _, _, err := s.DeleteWith(ctx, "/registry/core/services/ns/a", rev2, storage.Side{Release: []storage.KeyValue{kv("/kubebus/t/2", "uid-a"), kv("/kubebus/t/4", "uid-a")}}); err != nil {
		t.Fatal(err)
	}
	has("/registry/core/services/ns/a", "")
	has("/kubebus/t/2", "")
	has("/kubebus/t/4", "")
}
