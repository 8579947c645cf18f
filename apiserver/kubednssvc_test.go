package apiserver

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestKubeDNSService(t *testing.T) {
	want := kubeDNSService("10.96.0.10")
	if want.Namespace != "kube-system" || want.Name != "kube-dns" || want.Spec.ClusterIP != "10.96.0.10" || len(want.Spec.Selector) != 0 {
		t.Fatalf("desired service: %+v", want)
	}
	if len(want.Spec.Ports) != 2 || want.Spec.Ports[0].Protocol != corev1.ProtocolUDP || want.Spec.Ports[1].Name != "dns-tcp" {
		t.Fatalf("ports: %+v", want.Spec.Ports)
	}
	rec := reconcileKubeDNSService(want)

	// As stored: unchanged.
	if _, changed, err := rec(want.DeepCopy()); changed || err != nil {
		t.Errorf("same service: changed %v err %v", changed, err)
	}
	// A user's label is kept; a selector and a changed port are undone.
	cur := want.DeepCopy()
	cur.Labels["team"] = "infra"
	cur.Spec.Selector = map[string]string{"k8s-app": "kube-dns"}
	cur.Spec.Ports[0].TargetPort = intstr.FromInt32(5353)
	got, changed, err := rec(cur)
	if err != nil || !changed {
		t.Fatalf("drifted service: changed %v err %v", changed, err)
	}
	u := got.(*corev1.Service)
	if u.Labels["team"] != "infra" || len(u.Spec.Selector) != 0 || u.Spec.Ports[0].TargetPort.IntValue() != 53 {
		t.Errorf("reconciled: labels %v selector %v ports %+v", u.Labels, u.Spec.Selector, u.Spec.Ports)
	}
	if cur.Spec.Ports[0].TargetPort.IntValue() != 5353 {
		t.Errorf("the stored object was modified")
	}
	// Another ClusterIP cannot be updated: recreate.
	other := want.DeepCopy()
	other.Spec.ClusterIP, other.Spec.ClusterIPs = "10.96.0.99", []string{"10.96.0.99"}
	if _, _, err := rec(other); !errors.Is(err, ErrRecreate) {
		t.Errorf("other cluster IP: err %v, want ErrRecreate", err)
	}
}
