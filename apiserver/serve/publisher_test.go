package serve

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/bus/publish"
	"github.com/kubebus/kubebus/test/harness"
)

func TestRedactSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     map[string]any // nil: the value is dropped
	}{
		{
			name: "data and stringData go, the rest stays",
			in:   `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns","labels":{"a":"b"},"uid":"u1"},"type":"kubernetes.io/tls","immutable":true,"data":{"tls.key":"c2VjcmV0"},"stringData":{"x":"y"}}`,
			want: map[string]any{"kind": "Secret", "apiVersion": "v1", "metadata": map[string]any{"name": "s", "namespace": "ns", "labels": map[string]any{"a": "b"}, "uid": "u1"}, "type": "kubernetes.io/tls", "immutable": true},
		},
		{
			name: "null data",
			in:   `{"kind":"Secret","metadata":{"name":"s"},"data":null}`,
			want: map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "s"}},
		},
		{
			name: "no data",
			in:   `{"kind":"Secret","metadata":{"name":"s"},"type":"Opaque"}`,
			want: map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "s"}, "type": "Opaque"},
		},
		{
			name: "kubectl apply's copy of the Secret goes too",
			in:   `{"kind":"Secret","metadata":{"name":"s","annotations":{"a":"b","kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"k\":\"c2VjcmV0\"}}"}},"data":{"k":"c2VjcmV0"}}`,
			want: map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "s", "annotations": map[string]any{"a": "b"}}},
		},
		{name: "annotations that are not strings", in: `{"kind":"Secret","metadata":{"annotations":{"a":1}}}`},
		{name: "metadata that is not an object", in: `{"kind":"Secret","metadata":"x"}`},
		{name: "not JSON", in: `k8s:enc:secretbox:v1:key1:...`},
		{name: "not an object", in: `["data"]`},
		{name: "null", in: `null`},
		{name: "empty", in: ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := redactSecret([]byte(tc.in))
			if tc.want == nil {
				if out != nil {
					t.Fatalf("redactSecret(%s) = %s, want nothing", tc.in, out)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("redactSecret(%s) = %s: %v", tc.in, out, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("redactSecret(%s) = %s, want %v", tc.in, out, tc.want)
			}
		})
	}
}

func TestPublishable(t *testing.T) {
	t.Parallel()
	secret := []byte(`{"kind":"Secret","data":{"k":"dg=="}}`)
	for _, tc := range []struct {
		key, want string
	}{
		{"/registry/core/secrets/ns/s", `{"kind":"Secret"}`},
		{"/registry/core/configmaps/ns/s", string(secret)},
		{"/registry/core/secretsx/ns/s", string(secret)},
		{"/registry/example.com/secrets/ns/s", string(secret)},
	} {
		if got := publishable(tc.key, secret); string(got) != tc.want {
			t.Errorf("publishable(%s) = %s, want %s", tc.key, got, tc.want)
		}
	}
}

// TestIntegrationSecretsOffTheBus checks that the source the publisher
// reads never carries Secret data: not in a change, its previous value, a
// delete's tombstone, nor a snapshot.
func TestIntegrationSecretsOffTheBus(t *testing.T) {
	harness.SkipShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	etcd := harness.StartEtcd(t)
	st, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const (
		key = "/registry/core/secrets/ns/s"
		cm  = "/registry/core/configmaps/ns/c"
	)
	secret := func(v string) []byte {
		return []byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns"},"type":"Opaque","data":{"password":"` + v + `"}}`)
	}
	const redacted = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"type":"Opaque"}`
	rev, err := st.Create(ctx, key, secret("djE="), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, cm, []byte(`{"kind":"ConfigMap","data":{"k":"v"}}`), ""); err != nil {
		t.Fatal(err)
	}
	src := storeSource{store: st}
	_, kvs, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{key: redacted, cm: `{"kind":"ConfigMap","data":{"k":"v"}}`}
	for _, kv := range kvs {
		if string(kv.Value) != want[kv.Key] {
			t.Errorf("snapshot of %s = %s, want %s", kv.Key, kv.Value, want[kv.Key])
		}
	}
	rev2, _, err := st.Update(ctx, key, secret("djI="), rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Delete(ctx, key, rev2); err != nil {
		t.Fatal(err)
	}
	changes, _ := src.Changes(ctx, rev)
	for _, want := range []publish.Change{
		{Created: true, Revision: rev, Key: key, Value: []byte(redacted)},
		{Revision: rev2, Key: key, Value: []byte(redacted), Prev: []byte(redacted), PrevRevision: rev},
	} {
		if got := nextChange(t, changes, key); !reflect.DeepEqual(got, want) {
			t.Errorf("change %+v\nwant %+v", printable(got), printable(want))
		}
	}
	if got := nextChange(t, changes, key); !got.Delete || len(got.Value) != 0 || string(got.Prev) != redacted {
		t.Errorf("delete %+v, want the redacted tombstone", printable(got))
	}
}

// printable shows a change's values as text.
func printable(c publish.Change) map[string]any {
	return map[string]any{"delete": c.Delete, "created": c.Created, "rev": c.Revision, "value": string(c.Value), "prev": string(c.Prev), "prevRev": c.PrevRevision}
}

// nextChange returns the next change of key.
func nextChange(t *testing.T, changes <-chan publish.Change, key string) publish.Change {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				t.Fatal("the change stream ended")
			}
			if c.Key == key {
				return c
			}
		case <-timeout:
			t.Fatalf("no change of %s in 10s", key)
		}
	}
}
