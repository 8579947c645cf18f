package kcm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/controllers/cache"
)

func TestEnabled(t *testing.T) {
	known := []string{"replicaset", "deployment", "garbagecollector", "bootstrapsigner"}
	defaults := []string{"replicaset", "deployment", "garbagecollector"}
	for _, tc := range []struct {
		sel     []string
		want    []string
		wantErr bool
	}{
		{nil, defaults, false},
		{[]string{"*"}, defaults, false},
		{[]string{"*", "-deployment"}, []string{"replicaset", "garbagecollector"}, false},
		{[]string{"*", "bootstrapsigner"}, known, false},
		{[]string{"replicaset"}, []string{"replicaset"}, false},
		{[]string{"nope"}, nil, true},
		{[]string{"*", "-nope"}, nil, true},
	} {
		got, err := Enabled(tc.sel, known, defaults)
		if (err != nil) != tc.wantErr {
			t.Fatalf("Enabled(%v) error = %v", tc.sel, err)
		}
		if !tc.wantErr && !slices.Equal(got, tc.want) {
			t.Errorf("Enabled(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestSharedMetadataNamesServedResources(t *testing.T) {
	served := map[string]bool{}
	for _, r := range servedResources() {
		served[r.GVR().GroupResource().String()] = true
	}
	shared := sharedMetadata(&cache.Informers{})
	if len(shared) == 0 {
		t.Fatal("no shared caches")
	}
	for gr := range shared {
		if !served[gr.String()] {
			t.Errorf("shared cache for %s, which the server does not serve", gr)
		}
	}
}

func TestRootCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, otherFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt")
	if err := os.WriteFile(caFile, []byte("from CAFile"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, []byte("from --root-ca-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tuning  Tuning
		tls     rest.TLSClientConfig
		want    string
		wantErr bool
	}{
		{name: "flag first", tuning: Tuning{RootCAFile: otherFile}, tls: rest.TLSClientConfig{CAData: []byte("data")}, want: "from --root-ca-file"},
		{name: "client CA data", tls: rest.TLSClientConfig{CAData: []byte("data"), CAFile: caFile}, want: "data"},
		{name: "client CA file", tls: rest.TLSClientConfig{CAFile: caFile}, want: "from CAFile"},
		{name: "none", wantErr: true},
		{name: "missing file", tuning: Tuning{RootCAFile: filepath.Join(dir, "missing")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := rootCA(Deps{Tuning: tt.tuning, REST: &rest.Config{TLSClientConfig: tt.tls}})
			if (err != nil) != tt.wantErr || string(got) != tt.want {
				t.Fatalf("rootCA = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
