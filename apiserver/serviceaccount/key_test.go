package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pki")
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if key.N.BitLen() != 2048 {
		t.Errorf("key has %d bits", key.N.BitLen())
	}
	for file, mode := range map[string]os.FileMode{KeyFile: 0o600, PublicKeyFile: 0o644} {
		info, err := os.Stat(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", file, info.Mode().Perm(), mode)
		}
	}
	pubs, err := keyutil.PublicKeysFromFile(filepath.Join(dir, PublicKeyFile))
	if err != nil || len(pubs) != 1 || !key.PublicKey.Equal(pubs[0]) {
		t.Fatalf("sa.pub = %v, %v; want the key's public half", pubs, err)
	}

	again, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !key.Equal(again) {
		t.Error("second call made a new key")
	}

	if err := os.Remove(filepath.Join(dir, PublicKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(dir); err != nil {
		t.Fatal(err)
	}
	pubs, err = keyutil.PublicKeysFromFile(filepath.Join(dir, PublicKeyFile))
	if err != nil || len(pubs) != 1 || !key.PublicKey.Equal(pubs[0]) {
		t.Errorf("sa.pub not rewritten: %v, %v", pubs, err)
	}
}

func TestLoadOrCreateKeyRejects(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM, err := keyutil.MarshalPrivateKeyToPEM(ec)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"garbage": []byte("not a key"),
		"EC key":  ecPEM,
		"empty":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, KeyFile), data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOrCreateKey(dir); err == nil {
				t.Error("LoadOrCreateKey accepted it")
			}
		})
	}
}
