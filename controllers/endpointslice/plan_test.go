package endpointslice

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type podOpt func(*corev1.Pod)

func newPod(name, ip string, ready bool, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func newService(opts ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// describe renders slices compactly: name type [ports] endpoints, each
// endpoint as ip(pod)+conditions (R ready, S serving, T terminating).
func describe(s *discoveryv1.EndpointSlice) string {
	var ports, eps []string
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d/%s", deref(p.Name), deref(p.Port), deref(p.Protocol)))
	}
	for _, e := range s.Endpoints {
		c := ""
		if deref(e.Conditions.Ready) {
			c += "R"
		}
		if deref(e.Conditions.Serving) {
			c += "S"
		}
		if deref(e.Conditions.Terminating) {
			c += "T"
		}
		eps = append(eps, fmt.Sprintf("%s(%s)%s", strings.Join(e.Addresses, ","), e.TargetRef.Name, c))
	}
	return fmt.Sprintf("%s %s [%s] %s", s.Name, s.AddressType, strings.Join(ports, " "), strings.Join(eps, " "))
}

func describePlan(p plan) []string {
	var out []string
	for _, s := range p.create {
		out = append(out, "create "+describe(s))
	}
	for _, s := range p.update {
		out = append(out, "update "+describe(s))
	}
	for _, s := range p.delete {
		out = append(out, "delete "+s.Name)
	}
	return out
}

// apply turns a plan into the stored slices that would result.
func apply(existing []*discoveryv1.EndpointSlice, p plan) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range slices.Concat(p.create, p.update) {
		c := s.DeepCopy()
		c.UID = types.UID("uid-" + s.Name)
		byName[s.Name] = c
	}
	for _, s := range p.delete {
		delete(byName, s.Name)
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

var (
	name0 = sliceName(newService(), 0)
	name1 = sliceName(newService(), 1)
)

func TestSliceName(t *testing.T) {
	t.Parallel()
	if name0 == name1 || !strings.HasPrefix(name0, "web-") || len(name0) != len("web-")+5 {
		t.Fatalf("names %q %q", name0, name1)
	}
	if sliceName(newService(), 0) != name0 {
		t.Fatal("names are not reproducible")
	}
	long := newService(func(s *corev1.Service) { s.Name = strings.Repeat("x", 63) })
	if n := sliceName(long, 0); len(n) != 63 {
		t.Fatalf("long name %q has %d characters", n, len(n))
	}
}

func TestPlanSlices(t *testing.T) {
	t.Parallel()
	a, b, c := newPod("a", "10.0.0.1", true), newPod("b", "10.0.0.2", true), newPod("c", "10.0.0.3", false)
	tests := []struct {
		name string
		svc  *corev1.Service
		// steps are pod sets synced one after another; each step's plan
		// applies to the previous result.
		steps [][]*corev1.Pod
		max   int
		want  []string // the last step's plan
		taken []string
	}{
		{name: "no pods: a placeholder", steps: [][]*corev1.Pod{nil},
			want: []string{"create " + name0 + " IPv4 [] "}},
		{name: "ready and not ready pods in one slice",
			steps: [][]*corev1.Pod{{c, a, b}},
			want:  []string{"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS 10.0.0.2(b)RS 10.0.0.3(c)"}},
		{name: "nothing changed: no writes",
			steps: [][]*corev1.Pod{{a, b}, {a, b}}},
		{name: "a pod turns not ready: one update",
			steps: [][]*corev1.Pod{{a, b}, {a, newPod("b", "10.0.0.2", false)}},
			want:  []string{"update " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS 10.0.0.2(b)"}},
		{name: "a terminating pod is serving but not ready",
			steps: [][]*corev1.Pod{{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} })}},
			want:  []string{"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)ST"}},
		{name: "publishNotReadyAddresses: terminating and unready pods are ready",
			svc: newService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			steps: [][]*corev1.Pod{{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
				newPod("b", "10.0.0.2", false)}},
			want: []string{"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RST 10.0.0.2(b)RS"}},
		{name: "pods without an IP or finished are left out",
			steps: [][]*corev1.Pod{{newPod("x", "", true), newPod("y", "10.0.0.9", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), a}},
			want:  []string{"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS"}},
		{name: "the last pod goes: the slice becomes the placeholder",
			steps: [][]*corev1.Pod{{a}, nil},
			want:  []string{"update " + name0 + " IPv4 [] "}},
		{name: "many pods are cut into slices", max: 2,
			steps: [][]*corev1.Pod{{a, b, c}},
			want: []string{
				"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS 10.0.0.2(b)RS",
				"create " + name1 + " IPv4 [http/8080/TCP] 10.0.0.3(c)",
			}},
		{name: "a new pod fills the room a removed one left", max: 2,
			steps: [][]*corev1.Pod{{a, b, c}, {b, c, newPod("d", "10.0.0.4", true)}},
			want:  []string{"update " + name0 + " IPv4 [http/8080/TCP] 10.0.0.2(b)RS 10.0.0.4(d)RS"}},
		{name: "an emptied slice is deleted", max: 2,
			steps: [][]*corev1.Pod{{a, b, c}, {a, b}},
			want:  []string{"delete " + name1}},
		{name: "pods resolving ports differently get separate slices",
			steps: [][]*corev1.Pod{{a, newPod("z", "10.0.0.5", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })}},
			want: []string{
				"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS",
				"create " + name1 + " IPv4 [http/9090/TCP] 10.0.0.5(z)RS",
			}},
		{name: "a pod without the named port is listed without ports",
			steps: [][]*corev1.Pod{{newPod("n", "10.0.0.6", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })}},
			want:  []string{"create " + name0 + " IPv4 [] 10.0.0.6(n)RS"}},
		{name: "a taken name is skipped", taken: []string{name0},
			steps: [][]*corev1.Pod{{a}},
			want:  []string{"create " + name1 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS"}},
		{name: "dual stack gets a slice per family",
			svc: newService(func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
			}),
			steps: [][]*corev1.Pod{{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) {
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
			})}},
			want: []string{
				"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS",
				"create " + name1 + " IPv6 [http/8080/TCP] fd00::1(a)RS",
			}},
		{name: "a service port change updates the slice in place",
			steps: [][]*corev1.Pod{{a}, {a}},
			want:  []string{"update " + name0 + " IPv4 [web/8080/TCP] 10.0.0.1(a)RS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := tc.svc
			if svc == nil {
				svc = newService()
			}
			max := tc.max
			if max == 0 {
				max = DefaultMaxEndpointsPerSlice
			}
			var stored []*discoveryv1.EndpointSlice
			var p plan
			for i, pods := range tc.steps {
				if tc.name == "a service port change updates the slice in place" && i == 1 {
					svc = svc.DeepCopy()
					svc.Spec.Ports[0].Name = "web"
				}
				p = planSlices(planInput{svc: svc, pods: pods, existing: stored, max: max,
					nameTaken: func(n string) bool { return slices.Contains(tc.taken, n) }})
				stored = apply(stored, p)
			}
			got := describePlan(p)
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan:\n  got  %q\n  want %q", got, tc.want)
			}
		})
	}
}

func TestPlanSlicesMetadata(t *testing.T) {
	t.Parallel()
	svc := newService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	p := planSlices(planInput{svc: svc, pods: []*corev1.Pod{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web"
	})}, max: 100, zone: func(string) string { return "zone-a" }})
	if len(p.create) != 1 {
		t.Fatalf("plan = %q", describePlan(p))
	}
	s := p.create[0]
	wantLabels := map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName, corev1.IsHeadlessService: ""}
	if fmt.Sprint(s.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels = %v, want %v", s.Labels, wantLabels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" || s.OwnerReferences[0].Kind != "Service" ||
		!deref(s.OwnerReferences[0].Controller) || !deref(s.OwnerReferences[0].BlockOwnerDeletion) {
		t.Errorf("owner references = %+v", s.OwnerReferences)
	}
	ep := s.Endpoints[0]
	if deref(ep.NodeName) != "node-1" || deref(ep.Zone) != "zone-a" || deref(ep.Hostname) != "a-host" ||
		ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID != "uid-a" {
		t.Errorf("endpoint = %+v", ep)
	}
}

func TestPlanSlicesOwnership(t *testing.T) {
	t.Parallel()
	svc := newService()
	a := newPod("a", "10.0.0.1", true)
	base := planSlices(planInput{svc: svc, pods: []*corev1.Pod{a}, max: 100}).create[0]

	stale := base.DeepCopy() // of an earlier service with the same name
	stale.Name, stale.UID = "web-old", "old"
	stale.OwnerReferences[0].UID = "previous-svc"
	foreign := base.DeepCopy() // someone else's slice for the service
	foreign.Name = "web-mine"
	foreign.Labels[discoveryv1.LabelManagedBy] = "someone-else"
	p := planSlices(planInput{svc: svc, pods: []*corev1.Pod{a}, max: 100, existing: []*discoveryv1.EndpointSlice{stale, foreign}})
	got := describePlan(p)
	want := []string{"create " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS", "delete web-old"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan:\n  got  %q\n  want %q", got, want)
	}

	// A slice that grew an extra endpoint the service does not select loses it.
	extra := base.DeepCopy()
	extra.Endpoints = append(extra.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.9.9.9"},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "gone", UID: "gone"}})
	p = planSlices(planInput{svc: svc, pods: []*corev1.Pod{a}, max: 100, existing: []*discoveryv1.EndpointSlice{extra}})
	if got := describePlan(p); !slices.Equal(got, []string{"update " + name0 + " IPv4 [http/8080/TCP] 10.0.0.1(a)RS"}) {
		t.Fatalf("plan = %q", got)
	}
}
