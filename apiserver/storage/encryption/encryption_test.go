package encryption_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/storage/encryption"
)

// Keys of each valid size, base64 encoded.
var (
	key16 = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 16))
	key32 = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	keyB  = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
)

const header = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"

// load writes config to a file and loads it.
func load(t *testing.T, config string) (*encryption.Transformers, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return encryption.Load(path)
}

func mustLoad(t *testing.T, config string) *encryption.Transformers {
	t.Helper()
	tr, err := load(t, config)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// provider is the YAML of one provider list element.
func provider(name string, keys ...string) string {
	if name == "identity" {
		return "  - identity: {}\n"
	}
	s := "  - " + name + ":\n      keys:\n"
	for i, k := range keys {
		s += "      - name: key" + string(rune('1'+i)) + "\n        secret: " + k + "\n"
	}
	return s
}

// config is the YAML of a configuration with the given rules.
func config(rules ...string) string {
	return header + "resources:\n" + strings.Join(rules, "")
}

// rule is the YAML of one resources element.
func rule(resources string, providers ...string) string {
	return "- resources: [" + resources + "]\n  providers:\n" + strings.Join(providers, "")
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, want string
	}{
		{"empty file", "", "is empty"},
		{"unknown field", header + "resources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n    colour: red\n", `unknown field "colour"`},
		{"unknown top-level field", header + "extra: 1\nresources: []\n", `unknown field "extra"`},
		{"wrong kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfig\nresources: []\n", `no kind "EncryptionConfig"`},
		{"wrong version", "apiVersion: apiserver.config.k8s.io/v2\nkind: EncryptionConfiguration\nresources: []\n", `version "apiserver.config.k8s.io/v2"`},
		{"missing kind", "apiVersion: apiserver.config.k8s.io/v1\nresources: []\n", `no kind "" is registered`},
		{"no resources", header + "resources: []\n", "resources: Required value: at least one resources is required"},
		{"no providers", header + "resources:\n- resources: [secrets]\n  providers: []\n", "resources[0].providers: Required value"},
		{"kms", header + "resources:\n- resources: [secrets]\n  providers:\n  - kms:\n      name: vault\n      endpoint: unix:///tmp/kms.sock\n", "resources[0].providers[0].kms: Forbidden: kms providers are not supported"},
		{"two providers in one element", header + "resources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n    secretbox:\n      keys: [{name: k, secret: " + key32 + "}]\n", "more than one provider specified in a single element"},
		{"empty provider", header + "resources:\n- resources: [secrets]\n  providers:\n  - {}\n", "provider does not contain any of the expected providers"},
		{"secretbox key size", config(rule("secrets", provider("secretbox", key16))), "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]"},
		{"aes key size", config(rule("secrets", provider("aescbc", base64.StdEncoding.EncodeToString([]byte("short"))))), "got 5, expected one of [16 24 32]"},
		{"not base64", config(rule("secrets", provider("aesgcm", "not base64!"))), "secrets must be base64 encoded"},
		{"no keys", header + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: []\n", "resources[0].providers[0].aescbc.keys: Required value: at least one keys is required"},
		{"key without name", header + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{secret: " + key32 + "}]\n", "keys[0].name: Required value: name is a mandatory field for a key"},
		{"star", config(rule("'*'", provider("identity"))), "use '*.' to encrypt all the resources from core API group"},
		{"capitals", config(rule("Secrets", provider("identity"))), "resource name should not contain capital letters"},
		{"duplicate", config(rule("secrets, secrets", provider("identity"))), "the same resource cannot be specified multiple times"},
		{"overlap", config(rule("secrets, '*.'", provider("identity"))), "using overlapping resources"},
		{"across groups", config(rule("'deployments.*'", provider("identity"))), "encrypting the same resource across groups is not supported"},
		{"masked by earlier rule", config(rule("'*.apps'", provider("identity")) + rule("deployments.apps", provider("secretbox", key32))), `resource "deployments.apps" is masked by earlier rule "*.apps"`},
		{"masked by any", config(rule("'*.*'", provider("identity")) + rule("secrets", provider("secretbox", key32))), `resource "secrets" is masked by earlier rule "*.*"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), key32) {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

func TestProvidersRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const key = "/registry/core/secrets/ns/s"
	plain := []byte(`{"kind":"Secret","apiVersion":"v1","data":{"password":"aHVudGVyMg=="}}`)
	for _, tc := range []struct {
		provider, secret string
		authenticated    bool // the etcd key is authenticated data
	}{
		{"aescbc", key32, false},
		{"aescbc", key16, false},
		{"aesgcm", key32, true},
		{"aesgcm", key16, true},
		{"secretbox", key32, false},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			tr := mustLoad(t, config(rule("secrets", provider(tc.provider, tc.secret))))
			stored, err := tr.TransformToStorage(ctx, key, plain)
			if err != nil {
				t.Fatal(err)
			}
			if want := "k8s:enc:" + tc.provider + ":v1:key1:"; !bytes.HasPrefix(stored, []byte(want)) {
				t.Fatalf("stored %q, want the prefix %q", stored, want)
			}
			if bytes.Contains(stored, []byte("aHVudGVyMg")) {
				t.Fatalf("stored value shows the plaintext: %q", stored)
			}
			again, _ := tr.TransformToStorage(ctx, key, plain)
			if bytes.Equal(stored, again) {
				t.Error("two encryptions of one value are equal: the nonce is not random")
			}
			got, stale, err := tr.TransformFromStorage(ctx, key, stored)
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("TransformFromStorage = %q, stale %v, %v; want the plaintext, fresh", got, stale, err)
			}
			if _, _, err := tr.TransformFromStorage(ctx, key, append(bytes.Clone(stored[:len(stored)-1]), stored[len(stored)-1]^1)); err == nil && tc.provider != "aescbc" {
				t.Error("a tampered value decrypted")
			}
			_, _, err = tr.TransformFromStorage(ctx, "/registry/core/secrets/ns/other", stored)
			if tc.authenticated && err == nil {
				t.Error("a value copied to another key decrypted: the key is not authenticated")
			}
		})
	}
}

func TestResourceMatching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := mustLoad(t, header+"resources:\n"+
		rule("events", provider("identity"))+
		rule("secrets, configmaps", provider("secretbox", key32))+
		rule("'*.apps'", provider("aesgcm", key16))+
		rule("'*.*'", provider("aescbc", key32)))
	for _, tc := range []struct {
		key, want string // want is the prefix stored, "" for the clear
	}{
		{"/registry/core/secrets/ns/a", "k8s:enc:secretbox:v1:key1:"},
		{"/registry/core/configmaps/ns/a", "k8s:enc:secretbox:v1:key1:"},
		{"/registry/apps/deployments/ns/a", "k8s:enc:aesgcm:v1:key1:"},
		{"/registry/apps/replicasets/ns/a", "k8s:enc:aesgcm:v1:key1:"},
		{"/registry/core/pods/ns/a", "k8s:enc:aescbc:v1:key1:"},
		{"/registry/rbac.authorization.k8s.io/roles/ns/a", "k8s:enc:aescbc:v1:key1:"},
		{"/registry/core/events/ns/a", ""},
		{"/kubebus/serviceips/10.0.0.1", ""},
		{"/registry/core", ""},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			stored, err := tr.TransformToStorage(ctx, tc.key, []byte("{}"))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && string(stored) != "{}":
				t.Errorf("stored %q, want it in the clear", stored)
			case tc.want != "" && !bytes.HasPrefix(stored, []byte(tc.want)):
				t.Errorf("stored %q, want the prefix %q", stored, tc.want)
			}
			got, _, err := tr.TransformFromStorage(ctx, tc.key, stored)
			if err != nil || string(got) != "{}" {
				t.Errorf("read back %q, %v", got, err)
			}
		})
	}
}

func TestUnconfiguredPassesThrough(t *testing.T) {
	tr := mustLoad(t, config(rule("secrets", provider("secretbox", key32))))
	ctx := context.Background()
	data := []byte(`{"kind":"Pod"}`)
	allocs := testing.AllocsPerRun(100, func() {
		out, stale, err := tr.TransformFromStorage(ctx, "/registry/core/pods/ns/p", data)
		if err != nil || stale || &out[0] != &data[0] {
			t.Fatalf("TransformFromStorage = %q, %v, %v; want the same bytes", out, stale, err)
		}
		if out, err := tr.TransformToStorage(ctx, "/registry/core/pods/ns/p", data); err != nil || &out[0] != &data[0] {
			t.Fatalf("TransformToStorage = %q, %v; want the same bytes", out, err)
		}
	})
	if allocs != 0 {
		t.Errorf("pass-through allocates %v times", allocs)
	}
	var none *encryption.Transformers
	if out, _, err := none.TransformFromStorage(ctx, "/registry/core/secrets/ns/s", data); err != nil || string(out) != string(data) {
		t.Errorf("a nil Transformers read %q, %v", out, err)
	}
	// Encrypted data of an unconfigured resource is not touched either.
	if out, _, err := tr.TransformFromStorage(ctx, "/registry/core/pods/ns/p", []byte("k8s:enc:secretbox:v1:key1:xyz")); err != nil || string(out) != "k8s:enc:secretbox:v1:key1:xyz" {
		t.Errorf("TransformFromStorage = %q, %v", out, err)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const key = "/registry/core/secrets/ns/s"
	plain := []byte(`{"kind":"Secret"}`)
	oldOnly := mustLoad(t, config(rule("secrets", provider("secretbox", key32))))
	old, err := oldOnly.TransformToStorage(ctx, key, plain)
	if err != nil {
		t.Fatal(err)
	}
	newFirst := mustLoad(t, config(rule("secrets",
		"  - secretbox:\n      keys:\n      - name: key2\n        secret: "+keyB+"\n      - name: key1\n        secret: "+key32+"\n")))
	identityFirst := mustLoad(t, config(rule("secrets", provider("identity"), provider("secretbox", key32))))
	aesFirst := mustLoad(t, config(rule("secrets", provider("aesgcm", key16), provider("secretbox", key32))))
	for _, tc := range []struct {
		name   string
		tr     *encryption.Transformers
		writes string // the prefix a write stores, "" for the clear
	}{
		{"new key first", newFirst, "k8s:enc:secretbox:v1:key2:"},
		{"identity first", identityFirst, ""},
		{"new provider first", aesFirst, "k8s:enc:aesgcm:v1:key1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, stale, err := tc.tr.TransformFromStorage(ctx, key, old)
			if err != nil || !stale || !bytes.Equal(got, plain) {
				t.Fatalf("reading the old value = %q, stale %v, %v; want the plaintext, stale", got, stale, err)
			}
			stored, err := tc.tr.TransformToStorage(ctx, key, plain)
			if err != nil {
				t.Fatal(err)
			}
			if tc.writes == "" && !bytes.Equal(stored, plain) || tc.writes != "" && !bytes.HasPrefix(stored, []byte(tc.writes)) {
				t.Fatalf("a write stored %q, want %q", stored, tc.writes)
			}
			if got, stale, err := tc.tr.TransformFromStorage(ctx, key, stored); err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("reading the rewritten value = %q, stale %v, %v; want the plaintext, fresh", got, stale, err)
			}
		})
	}

	// Without the old key the value is unreadable: an error, never empty.
	if got, _, err := mustLoad(t, config(rule("secrets", provider("secretbox", keyB)))).TransformFromStorage(ctx, key, old); err == nil {
		t.Errorf("reading with the wrong key = %q, want an error", got)
	}
	// A plain value of a resource that must be encrypted is an error unless
	// identity is among its providers.
	if _, _, err := oldOnly.TransformFromStorage(ctx, key, plain); err == nil {
		t.Error("reading a plain value without identity succeeded")
	}
	if got, stale, err := mustLoad(t, config(rule("secrets", provider("secretbox", key32), provider("identity")))).TransformFromStorage(ctx, key, plain); err != nil || !stale || !bytes.Equal(got, plain) {
		t.Errorf("reading a plain value with identity second = %q, stale %v, %v", got, stale, err)
	}
}

func TestWriteDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pki", "encryption.yaml")
	if err := encryption.WriteDefault(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	tr, err := encryption.Load(path)
	if err != nil {
		t.Fatalf("loading the default configuration: %v\n%s", err, first)
	}
	stored, err := tr.TransformToStorage(ctx, "/registry/core/secrets/ns/s", []byte("{}"))
	if err != nil || !bytes.HasPrefix(stored, []byte("k8s:enc:secretbox:v1:key1:")) {
		t.Errorf("a Secret is stored as %q, %v", stored, err)
	}
	if got, stale, err := tr.TransformFromStorage(ctx, "/registry/core/secrets/ns/s", []byte("{}")); err != nil || !stale || string(got) != "{}" {
		t.Errorf("a Secret stored in the clear reads %q, stale %v, %v", got, stale, err)
	}
	if stored, _ := tr.TransformToStorage(ctx, "/registry/core/configmaps/ns/c", []byte("{}")); string(stored) != "{}" {
		t.Errorf("a ConfigMap is stored as %q, want the clear", stored)
	}

	// A second call keeps the file (and its key).
	if err := encryption.WriteDefault(path); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(path); !bytes.Equal(first, second) {
		t.Error("WriteDefault replaced an existing file")
	}
	other := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := encryption.WriteDefault(other); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(other); bytes.Equal(first, again) {
		t.Error("two default configurations have the same key")
	}
}
