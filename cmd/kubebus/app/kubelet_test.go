package app

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/pki"
)

func TestKubeletCertFlags(t *testing.T) {
	t.Parallel()
	b, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki"), Hosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, "https://127.0.0.1:1", b, "", ""); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"the CA key is refused", []string{"--ca-key-file", b.CAKeyFile}, "--ca-key-file is no longer accepted"},
		{"the CA key is refused for hollow nodes", []string{"--simulate=3", "--ca-key-file", b.CAKeyFile}, "--ca-key-file is no longer accepted"},
		{"a certificate without its key", []string{"--client-ca-file", b.CAFile, "--tls-cert-file", b.ServingCertFile}, "--tls-cert-file and --tls-private-key-file go together"},
		{"hollow nodes without a client CA", []string{"--simulate=3"}, "pass --client-ca-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &globals{stderr: io.Discard}
			cmd := newKubeletCmd(g)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--root-dir", t.TempDir()}, tc.args...))
			if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
