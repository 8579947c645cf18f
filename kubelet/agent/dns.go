package agent

import (
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/pods"
)

// resolvConf computes the pod's /etc/resolv.conf from its dnsPolicy and
// dnsConfig (pods.PodResolvConf), warning with a MissingClusterDNS event,
// as upstream's kubelet, when a ClusterFirst pod falls back to the node's
// because no cluster DNS is configured.
func (k *Kubelet) resolvConf(pod *corev1.Pod) []byte {
	path := k.cfg.ResolvConf
	if path == "" {
		path = "/etc/resolv.conf"
	}
	host, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		k.cfg.Logger.Warn("reading the node's resolv.conf", "path", path, "err", err)
	}
	in := pods.DNSInput{ClusterDNS: k.cfg.ClusterDNS, ClusterDomain: k.cfg.ClusterDomain, Host: host}
	if _, missing := pods.DNSPolicyInEffect(pod, in); missing {
		k.event(pod, corev1.EventTypeWarning, "MissingClusterDNS",
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			pod.Namespace+"/"+pod.Name, pod.Spec.DNSPolicy, corev1.DNSDefault)
	}
	b := pods.PodResolvConf(pod, in).Bytes()
	if b == nil {
		b = []byte{} // an empty file, not the node's
	}
	return b
}
