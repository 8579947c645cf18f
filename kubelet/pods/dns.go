package pods

import (
	"bufio"
	"bytes"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits of a pod's resolv.conf, as upstream's kubelet keeps them (glibc's
// resolver reads at most three nameservers).
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
)

// DNSInput is what PodResolvConf needs besides the pod.
type DNSInput struct {
	// ClusterDNS are the cluster DNS's addresses (the kube-dns Service's
	// ClusterIP); none makes ClusterFirst pods fall back to Default.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (cluster.local when empty).
	ClusterDomain string
	// Host is the node's resolv.conf (what Default pods get).
	Host []byte
}

// ResolvConf is a parsed resolv.conf.
type ResolvConf struct {
	Nameservers, Searches, Options []string
}

// ParseResolvConf reads the nameserver, search (and domain) and options
// lines of a resolv.conf; the last search or domain line wins, as in glibc.
func ParseResolvConf(b []byte) ResolvConf {
	var rc ResolvConf
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				rc.Nameservers = append(rc.Nameservers, f[1])
			}
		case "domain", "search":
			rc.Searches = slices.Clone(f[1:])
		case "options":
			rc.Options = append(rc.Options, f[1:]...)
		}
	}
	return rc
}

// Bytes writes rc as a resolv.conf.
func (rc ResolvConf) Bytes() []byte {
	var b bytes.Buffer
	for _, s := range rc.Nameservers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(rc.Searches) > 0 {
		b.WriteString("search " + strings.Join(rc.Searches, " ") + "\n")
	}
	if len(rc.Options) > 0 {
		b.WriteString("options " + strings.Join(rc.Options, " ") + "\n")
	}
	return b.Bytes()
}

// DNSPolicyInEffect returns the policy the kubelet applies to pod, as
// upstream's: ClusterFirst on the host network is Default (use
// ClusterFirstWithHostNet), and a cluster policy without cluster DNS
// addresses falls back to Default; missing reports that fallback (the
// kubelet warns with a MissingClusterDNS event).
func DNSPolicyInEffect(pod *corev1.Pod, in DNSInput) (policy corev1.DNSPolicy, missing bool) {
	policy = pod.Spec.DNSPolicy
	switch policy {
	case corev1.DNSNone, corev1.DNSDefault:
		return policy, false
	case corev1.DNSClusterFirstWithHostNet:
	default: // ClusterFirst and unset
		if pod.Spec.HostNetwork {
			return corev1.DNSDefault, false
		}
		policy = corev1.DNSClusterFirst
	}
	if len(in.ClusterDNS) == 0 {
		return corev1.DNSDefault, true
	}
	return policy, false
}

// PodResolvConf computes a pod's resolv.conf from its dnsPolicy and
// dnsConfig, as upstream's kubelet:
//
//   - ClusterFirst (and ClusterFirstWithHostNet): the cluster DNS as
//     nameservers, the searches <ns>.svc.<domain> svc.<domain> <domain>
//     then the node's, and options ndots:5;
//   - Default: the node's resolv.conf;
//   - None: only what dnsConfig gives.
//
// dnsConfig's nameservers and searches are then appended (without
// repeats) and its options override those of the same name. The lists
// are cut to the limits above.
func PodResolvConf(pod *corev1.Pod, in DNSInput) ResolvConf {
	host := ParseResolvConf(in.Host)
	policy, _ := DNSPolicyInEffect(pod, in)
	var rc ResolvConf
	switch policy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		domain := strings.TrimSuffix(in.ClusterDomain, ".")
		if domain == "" {
			domain = "cluster.local"
		}
		rc.Nameservers = slices.Clone(in.ClusterDNS)
		rc.Searches = append([]string{pod.Namespace + ".svc." + domain, "svc." + domain, domain}, host.Searches...)
		rc.Options = []string{"ndots:5"}
	case corev1.DNSDefault:
		rc = host
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.Nameservers = appendNew(rc.Nameservers, c.Nameservers...)
		rc.Searches = appendNew(rc.Searches, c.Searches...)
		rc.Options = mergeOptions(rc.Options, c.Options)
	}
	rc.Nameservers = rc.Nameservers[:min(len(rc.Nameservers), MaxDNSNameservers)]
	rc.Searches = fitSearches(rc.Searches)
	return rc
}

// appendNew appends the values not yet in list.
func appendNew(list []string, values ...string) []string {
	for _, v := range values {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// mergeOptions overrides base's options (name or name:value) with the
// pod's of the same name, appending the others.
func mergeOptions(base []string, opts []corev1.PodDNSConfigOption) []string {
	out := slices.Clone(base)
	for _, o := range opts {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		i := slices.IndexFunc(out, func(b string) bool { n, _, _ := strings.Cut(b, ":"); return n == o.Name })
		if i >= 0 {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out
}

// fitSearches drops repeated searches and cuts the list to
// MaxDNSSearchPaths paths and MaxDNSSearchListChars characters.
func fitSearches(s []string) []string {
	out := appendNew(nil, s...)
	out = out[:min(len(out), MaxDNSSearchPaths)]
	for len(out) > 0 && len(strings.Join(out, " ")) > MaxDNSSearchListChars {
		out = out[:len(out)-1]
	}
	return out
}
