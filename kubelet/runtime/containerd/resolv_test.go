package containerd

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSandboxResolvConf(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(node, []byte("nameserver 192.0.2.53\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{cfg: Config{ResolvConf: node}}
	for _, tt := range []struct {
		name string
		pod  []byte
		want string
	}{
		{"the kubelet's", []byte("nameserver 10.96.0.10\noptions ndots:5\n"), "nameserver 10.96.0.10\noptions ndots:5\n"},
		{"empty (dnsPolicy None without dnsConfig)", []byte{}, ""},
		{"none: the node's", nil, "nameserver 192.0.2.53\n"},
	} {
		got, err := r.sandboxResolvConf(&sandboxRecord{ResolvConf: tt.pod})
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	r.cfg.ResolvConf = filepath.Join(dir, "missing")
	if got, err := r.sandboxResolvConf(&sandboxRecord{}); err != nil || len(got) != 0 {
		t.Errorf("missing node file: %q, %v", got, err)
	}
}
