package kcm

import (
	"slices"
	"testing"

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
