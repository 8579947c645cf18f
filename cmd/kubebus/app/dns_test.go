package app

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDNSUpstreams(t *testing.T) {
	got, err := dnsUpstreams([]string{"192.0.2.1", "192.0.2.2:5353", "fd00::1", "[fd00::2]:53"}, "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"192.0.2.1:53", "192.0.2.2:5353", "[fd00::1]:53", "[fd00::2]:53"}; !slices.Equal(got, want) {
		t.Errorf("dnsUpstreams = %q, want %q", got, want)
	}
	if _, err := dnsUpstreams(nil, "/nonexistent"); err == nil {
		t.Errorf("no resolv.conf: no error")
	}
}

func TestSetLocalClusterDNS(t *testing.T) {
	o := serverOptions{svcIPRange: "10.100.0.0/16"}
	o.node.netns = "/run/netns/x"
	if err := setLocalClusterDNS(&o); err != nil || !slices.Equal(o.node.clusterDNS, []string{"10.100.0.10"}) {
		t.Errorf("clusterDNS %v, %v", o.node.clusterDNS, err)
	}
	o.node.clusterDNS = []string{"192.0.2.53"} // --cluster-dns wins
	if err := setLocalClusterDNS(&o); err != nil || !slices.Equal(o.node.clusterDNS, []string{"192.0.2.53"}) {
		t.Errorf("given clusterDNS replaced: %v, %v", o.node.clusterDNS, err)
	}
	for _, off := range []serverOptions{{noDNS: true}, {noKubelet: true}, {}} {
		off.svcIPRange = "10.96.0.0/12"
		if off.noDNS || off.noKubelet {
			off.node.netns = "/run/netns/x"
		}
		if err := setLocalClusterDNS(&off); err != nil || off.node.clusterDNS != nil {
			t.Errorf("no local DNS (%+v): clusterDNS %v, %v", off.noDNS, off.node.clusterDNS, err)
		}
	}
}

func TestEnsureDNSEndpoint(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	api := cs.DiscoveryV1().EndpointSlices("kube-system")
	want := dnsEndpointSlice("n1", "10.254.254.254", 53)
	if err := ensureDNSEndpoint(ctx, api, want); err != nil {
		t.Fatal(err)
	}
	got, err := api.Get(ctx, "kube-dns-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["kubernetes.io/service-name"] != "kube-dns" || len(got.Endpoints) != 1 || got.Endpoints[0].Addresses[0] != "10.254.254.254" ||
		len(got.Ports) != 2 || *got.Ports[0].Port != 53 {
		t.Fatalf("slice %+v", got)
	}
	// Someone changed it: put back.
	got.Endpoints[0].Addresses = []string{"10.0.0.1"}
	if _, err := api.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureDNSEndpoint(ctx, api, want); err != nil {
		t.Fatal(err)
	}
	got, _ = api.Get(ctx, "kube-dns-n1", metav1.GetOptions{})
	if got.Endpoints[0].Addresses[0] != "10.254.254.254" {
		t.Errorf("not restored: %v", got.Endpoints)
	}
	if v6 := dnsEndpointSlice("n1", "fd00::53", 53); v6.AddressType != "IPv6" {
		t.Errorf("IPv6 slice address type %s", v6.AddressType)
	}
}
