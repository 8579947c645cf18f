package endpointslice_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/endpointslice"
	"github.com/kubebus/kubebus/test/harness"
)

const ns = "eps-test"

// start runs the EndpointSlice controller against a fresh server.
func start(t *testing.T, maxPerSlice int) kubernetes.Interface {
	t.Helper()
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	cs := s.Clientset(t)
	_, js := s.BusConnect(t, "system:kube-controller-manager")
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	inf, err := cache.New(cache.Config{JetStream: js, Component: "endpointslice-test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := endpointslice.New(endpointslice.Config{Client: cs, Services: inf.Services, Pods: inf.Pods,
		EndpointSlices: inf.EndpointSlices, Nodes: inf.Nodes, MaxEndpointsPerSlice: maxPerSlice, Options: controllers.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: log}
	m.AddCache(inf)
	m.Add(ctrl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cs
}

func createPod(t *testing.T, cs kubernetes.Interface, name, app, ip string, ready bool, finalizers ...string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}, Finalizers: finalizers},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip != "" {
		setStatus(t, cs, created, ip, ready)
	}
}

func setStatus(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, ip string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setReady(t *testing.T, cs kubernetes.Interface, name string, ready bool) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setStatus(t, cs, pod, pod.Status.PodIP, ready)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// summary renders a service's slices: each endpoint as pod@ip+conditions
// (R ready, S serving, T terminating), sorted, and the ports.
func summary(list []discoveryv1.EndpointSlice) string {
	var eps, ports []string
	for _, s := range list {
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
			eps = append(eps, fmt.Sprintf("%s@%s%s", e.TargetRef.Name, strings.Join(e.Addresses, ","), c))
		}
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d/%s", deref(p.Name), deref(p.Port), deref(p.Protocol)))
		}
	}
	slices.Sort(eps)
	ports = slices.Compact(slices.Sorted(slices.Values(ports)))
	return fmt.Sprintf("%v ports=%v", eps, ports)
}

func slicesOf(t *testing.T, cs kubernetes.Interface, svc string) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitFor(t *testing.T, cs kubernetes.Interface, svc, want string, wantSlices int) []discoveryv1.EndpointSlice {
	t.Helper()
	var got []discoveryv1.EndpointSlice
	harness.Eventually(t, 20*time.Second, func() error {
		got = slicesOf(t, cs, svc)
		if s := summary(got); s != want || (wantSlices > 0 && len(got) != wantSlices) {
			return fmt.Errorf("slices of %s (%d): %s, want %s in %d", svc, len(got), s, want, wantSlices)
		}
		return nil
	})
	return got
}

func TestIntegrationEndpointSlices(t *testing.T) {
	harness.SkipShort(t)
	cs := start(t, 2)
	ctx := context.Background()

	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An empty service has one placeholder slice.
	waitFor(t, cs, "web", "[] ports=[]", 1)

	createPod(t, cs, "p1", "web", "10.244.2.1", true)
	createPod(t, cs, "p2", "web", "10.244.2.2", true)
	createPod(t, cs, "p3", "web", "10.244.2.3", false, "example.com/hold")
	createPod(t, cs, "p4", "web", "", true) // no IP yet
	createPod(t, cs, "db", "db", "10.244.2.9", true)

	got := waitFor(t, cs, "web", "[p1@10.244.2.1RS p2@10.244.2.2RS p3@10.244.2.3] ports=[http/8080/TCP]", 2)
	for _, s := range got {
		switch {
		case !strings.HasPrefix(s.Name, "web-"):
			t.Errorf("slice name %q", s.Name)
		case s.AddressType != discoveryv1.AddressTypeIPv4:
			t.Errorf("address type %q", s.AddressType)
		case s.Labels[discoveryv1.LabelManagedBy] != endpointslice.ControllerName:
			t.Errorf("labels %v", s.Labels)
		case len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID || !deref(s.OwnerReferences[0].Controller):
			t.Errorf("owner references %+v", s.OwnerReferences)
		}
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || e.TargetRef.UID == "" {
				t.Errorf("targetRef %+v", e.TargetRef)
			}
		}
	}

	t.Run("readiness and IPs", func(t *testing.T) {
		setReady(t, cs, "p3", true)
		setReady(t, cs, "p1", false)
		p4, err := cs.CoreV1().Pods(ns).Get(ctx, "p4", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setStatus(t, cs, p4, "10.244.2.4", true)
		waitFor(t, cs, "web", "[p1@10.244.2.1 p2@10.244.2.2RS p3@10.244.2.3RS p4@10.244.2.4RS] ports=[http/8080/TCP]", 2)
	})

	t.Run("a duplicate slice", func(t *testing.T) {
		// A managed slice that repeats an endpoint, as a sync planned from a
		// stale cache leaves behind: its appearance alone must bring the
		// service back to one entry per pod.
		dup := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "web-dup", Namespace: ns, Labels: map[string]string{
				discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: endpointslice.ControllerName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.2.3"},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p3"}}},
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, dup, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "[p1@10.244.2.1 p2@10.244.2.2RS p3@10.244.2.3RS p4@10.244.2.4RS] ports=[http/8080/TCP]", 2)
	})

	t.Run("terminating", func(t *testing.T) {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "p3", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "[p1@10.244.2.1 p2@10.244.2.2RS p3@10.244.2.3ST p4@10.244.2.4RS] ports=[http/8080/TCP]", 2)
		p3, err := cs.CoreV1().Pods(ns).Get(ctx, "p3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p3.Finalizers = nil
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p3, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "[p1@10.244.2.1 p2@10.244.2.2RS p4@10.244.2.4RS] ports=[http/8080/TCP]", 2)
	})

	t.Run("labels and selector", func(t *testing.T) {
		p2, err := cs.CoreV1().Pods(ns).Get(ctx, "p2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p2.Labels["app"] = "db"
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "[p1@10.244.2.1 p4@10.244.2.4RS] ports=[http/8080/TCP]", 0)
		cur, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Selector = map[string]string{"app": "db"}
		cur.Spec.Ports[0].TargetPort = intstr.FromInt32(5432)
		if _, err := cs.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "[db@10.244.2.9RS p2@10.244.2.2RS] ports=[http/5432/TCP]", 1)
	})

	t.Run("pods gone: placeholder", func(t *testing.T) {
		for _, name := range []string{"db", "p2"} {
			if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, cs, "web", "[] ports=[]", 1)
	})
}
