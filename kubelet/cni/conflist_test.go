package cni

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestConfList(t *testing.T) {
	t.Parallel()
	b, err := ConfList(Config{PodCIDR: "10.244.3.0/24", Dir: "/var/lib/kubebus/cni"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "cniVersion": "1.0.0",
  "name": "kubebus",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "kubebus0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [
          [
            {
              "subnet": "10.244.3.0/24"
            }
          ]
        ],
        "routes": [
          {
            "dst": "0.0.0.0/0"
          }
        ],
        "dataDir": "/var/lib/kubebus/cni/ipam"
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      },
      "snat": true
    },
    {
      "type": "firewall",
      "backend": "iptables"
    },
    {
      "type": "loopback"
    }
  ]
}
`
	if string(b) != want {
		t.Fatalf("ConfList:\n%s\nwant:\n%s", b, want)
	}
	list, err := libcni.ConfListFromBytes(b)
	if err != nil {
		t.Fatalf("libcni rejects the list: %v", err)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
	}
	if list.Name != "kubebus" || list.CNIVersion != "1.0.0" || strings.Join(types, ",") != "bridge,portmap,firewall,loopback" {
		t.Errorf("parsed list %s %s %v", list.Name, list.CNIVersion, types)
	}
}

func TestConfListOptions(t *testing.T) {
	t.Parallel()
	b, err := ConfList(Config{PodCIDR: "fd00:10::/64", NetworkName: "n1", BridgeName: "kb-test0", MTU: 1400, Dir: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name    string
		Plugins []struct {
			Bridge string
			MTU    int
			IPAM   struct {
				Routes  []map[string]string
				DataDir string
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	br := got.Plugins[0]
	if got.Name != "n1" || br.Bridge != "kb-test0" || br.MTU != 1400 || br.IPAM.Routes[0]["dst"] != "::/0" || br.IPAM.DataDir != "/x/ipam" {
		t.Errorf("got %+v", got)
	}
}

func TestConfListErrors(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no cidr":       {Dir: "/x"},
		"bad cidr":      {PodCIDR: "10.244.0.0", Dir: "/x"},
		"host bits":     {PodCIDR: "10.244.0.1/24", Dir: "/x"},
		"too small":     {PodCIDR: "10.244.0.0/31", Dir: "/x"},
		"long bridge":   {PodCIDR: "10.244.0.0/24", BridgeName: "abcdefghijklmnop", Dir: "/x"},
		"bad bridge":    {PodCIDR: "10.244.0.0/24", BridgeName: "a b", Dir: "/x"},
		"bad name":      {PodCIDR: "10.244.0.0/24", NetworkName: "../x", Dir: "/x"},
		"no dir":        {PodCIDR: "10.244.0.0/24"},
		"relative dir":  {PodCIDR: "10.244.0.0/24", Dir: "x"},
		"negative mtu":  {PodCIDR: "10.244.0.0/24", Dir: "/x", MTU: -1},
		"too large mtu": {PodCIDR: "10.244.0.0/24", Dir: "/x", MTU: 70000},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ConfList(cfg); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestPortMappings(t *testing.T) {
	t.Parallel()
	got, err := portMappings([]runtime.PortMapping{
		{ContainerPort: 80, HostPort: 8080},
		{ContainerPort: 53, HostPort: 5353, Protocol: "UDP", HostIP: "127.0.0.1"},
		{ContainerPort: 9000}, // no hostPort: not mapped
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []portMapEntry{
		{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
		{HostPort: 5353, ContainerPort: 53, Protocol: "udp", HostIP: "127.0.0.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []runtime.PortMapping{
		{ContainerPort: 80, HostPort: 70000},
		{ContainerPort: 0, HostPort: 80},
		{ContainerPort: 80, HostPort: 80, Protocol: "icmp"},
	} {
		if _, err := portMappings([]runtime.PortMapping{bad}); err == nil {
			t.Errorf("portMappings(%+v): no error", bad)
		}
	}
}
