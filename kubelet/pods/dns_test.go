package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hostResolv = "# the host's\nnameserver 192.0.2.53\nnameserver 192.0.2.54 # second\nsearch corp.example lab.example\noptions edns0 ndots:2\n"

func dnsPod(policy corev1.DNSPolicy, hostNet bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"},
		Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: cfg}}
}

func TestPodResolvConf(t *testing.T) {
	cluster := DNSInput{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", Host: []byte(hostResolv)}
	noCluster := DNSInput{Host: []byte(hostResolv)}
	const clusterFirst = "nameserver 10.96.0.10\nsearch team.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\noptions ndots:5\n"
	const host = "nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch corp.example lab.example\noptions edns0 ndots:2\n"
	tests := []struct {
		name    string
		pod     *corev1.Pod
		in      DNSInput
		want    string
		missing bool
	}{
		{"ClusterFirst", dnsPod(corev1.DNSClusterFirst, false, nil), cluster, clusterFirst, false},
		{"unset is ClusterFirst", dnsPod("", false, nil), cluster, clusterFirst, false},
		{"ClusterFirst on the host network is Default", dnsPod(corev1.DNSClusterFirst, true, nil), cluster, host, false},
		{"ClusterFirstWithHostNet", dnsPod(corev1.DNSClusterFirstWithHostNet, true, nil), cluster, clusterFirst, false},
		{"Default", dnsPod(corev1.DNSDefault, false, nil), cluster, host, false},
		{"ClusterFirst without cluster DNS falls back", dnsPod(corev1.DNSClusterFirst, false, nil), noCluster, host, true},
		{"other cluster domain", dnsPod(corev1.DNSClusterFirst, false, nil),
			DNSInput{ClusterDNS: []string{"10.0.0.10"}, ClusterDomain: "kube.example.", Host: []byte("nameserver 1.1.1.1\n")},
			"nameserver 10.0.0.10\nsearch team.svc.kube.example svc.kube.example kube.example\noptions ndots:5\n", false},
		{"None with dnsConfig", dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{
			Nameservers: []string{"192.0.2.1"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("1")}, {Name: "rotate"}}}), cluster,
			"nameserver 192.0.2.1\nsearch a.example\noptions ndots:1 rotate\n", false},
		{"None without dnsConfig is empty", dnsPod(corev1.DNSNone, false, nil), cluster, "", false},
		{"dnsConfig merged into ClusterFirst", dnsPod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.96.0.10", "192.0.2.9"}, Searches: []string{"cluster.local", "extra.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}, {Name: "edns0"}}}), cluster,
			"nameserver 10.96.0.10\nnameserver 192.0.2.9\nsearch team.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example extra.example\noptions ndots:2 edns0\n", false},
		{"at most three nameservers", dnsPod(corev1.DNSDefault, false, &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.7", "192.0.2.8"}}), cluster,
			"nameserver 192.0.2.53\nnameserver 192.0.2.54\nnameserver 192.0.2.7\nsearch corp.example lab.example\noptions edns0 ndots:2\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(PodResolvConf(tt.pod, tt.in).Bytes()); got != tt.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, tt.want)
			}
			if _, missing := DNSPolicyInEffect(tt.pod, tt.in); missing != tt.missing {
				t.Errorf("missing cluster DNS = %v, want %v", missing, tt.missing)
			}
		})
	}
}

func TestSearchLimits(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, strings.Repeat("x", 60)+string(rune('a'+i%26))+strings.Repeat("y", i))
	}
	rc := PodResolvConf(dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: many}), DNSInput{})
	if len(rc.Searches) > MaxDNSSearchPaths || len(strings.Join(rc.Searches, " ")) > MaxDNSSearchListChars {
		t.Errorf("%d searches, %d chars", len(rc.Searches), len(strings.Join(rc.Searches, " ")))
	}
	if len(rc.Searches) == 0 || rc.Searches[0] != many[0] {
		t.Errorf("the first searches are kept: %q", rc.Searches)
	}
}

func TestParseResolvConfDomain(t *testing.T) {
	rc := ParseResolvConf([]byte("domain a.example\nsearch b.example c.example\n; comment\nnameserver ::1\n"))
	if strings.Join(rc.Searches, ",") != "b.example,c.example" || strings.Join(rc.Nameservers, ",") != "::1" {
		t.Errorf("%+v", rc)
	}
}
