package endpoints_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/endpoints"
	"github.com/kubebus/kubebus/test/harness"
)

const ns = "ep-test"

// start runs the Endpoints controller against a fresh server.
func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	cs := s.Clientset(t)
	_, js := s.BusConnect(t, "system:kube-controller-manager")
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	inf, err := cache.New(cache.Config{JetStream: js, Component: "endpoints-test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := endpoints.New(endpoints.Config{Client: cs, Services: inf.Services, Pods: inf.Pods, Endpoints: inf.Endpoints,
		Options: controllers.Options{Logger: log}})
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

// createPod creates a pod and, when ip is set, gives it that IP and
// readiness through the status subresource, as a kubelet would.
func createPod(t *testing.T, cs kubernetes.Interface, name, app, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
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

// summary renders Endpoints as "ready=[pods] notReady=[pods] ports=[n/port]".
func summary(ep *corev1.Endpoints) string {
	var ready, notReady, ports []string
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			ready = append(ready, a.TargetRef.Name+"@"+a.IP)
		}
		for _, a := range ss.NotReadyAddresses {
			notReady = append(notReady, a.TargetRef.Name+"@"+a.IP)
		}
		for _, p := range ss.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.Port))
		}
	}
	slices.Sort(ready)
	slices.Sort(notReady)
	ports = slices.Compact(slices.Sorted(slices.Values(ports)))
	return fmt.Sprintf("ready=%v notReady=%v ports=%v", ready, notReady, ports)
}

func waitFor(t *testing.T, cs kubernetes.Interface, name, want string) *corev1.Endpoints {
	t.Helper()
	var ep *corev1.Endpoints
	harness.Eventually(t, 20*time.Second, func() error {
		var err error
		ep, err = cs.CoreV1().Endpoints(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := summary(ep); got != want {
			return fmt.Errorf("endpoints %s: %s, want %s", name, got, want)
		}
		return nil
	})
	return ep
}

func TestIntegrationEndpoints(t *testing.T) {
	harness.SkipShort(t)
	cs := start(t)
	ctx := context.Background()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, cs, "p1", "web", "10.244.1.1", true)
	createPod(t, cs, "p2", "web", "10.244.1.2", true)
	createPod(t, cs, "p3", "web", "10.244.1.3", false)
	createPod(t, cs, "p4", "web", "", false) // no IP yet
	createPod(t, cs, "db", "db", "10.244.1.9", true)

	ep := waitFor(t, cs, "web", "ready=[p1@10.244.1.1 p2@10.244.1.2] notReady=[p3@10.244.1.3] ports=[http/8080]")
	if ep.Labels["tier"] != "front" || ep.Labels[endpoints.LabelManagedBy] != endpoints.ManagedByValue {
		t.Fatalf("labels = %v", ep.Labels)
	}

	t.Run("readiness", func(t *testing.T) {
		setReady(t, cs, "p3", true)
		waitFor(t, cs, "web", "ready=[p1@10.244.1.1 p2@10.244.1.2 p3@10.244.1.3] notReady=[] ports=[http/8080]")
		setReady(t, cs, "p1", false)
		waitFor(t, cs, "web", "ready=[p2@10.244.1.2 p3@10.244.1.3] notReady=[p1@10.244.1.1] ports=[http/8080]")
	})

	t.Run("an IP arrives", func(t *testing.T) {
		p4, err := cs.CoreV1().Pods(ns).Get(ctx, "p4", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setStatus(t, cs, p4, "10.244.1.4", true)
		waitFor(t, cs, "web", "ready=[p2@10.244.1.2 p3@10.244.1.3 p4@10.244.1.4] notReady=[p1@10.244.1.1] ports=[http/8080]")
	})

	t.Run("deletion and labels", func(t *testing.T) {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "p2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		p3, err := cs.CoreV1().Pods(ns).Get(ctx, "p3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p3.Labels["app"] = "other"
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p3, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "ready=[p4@10.244.1.4] notReady=[p1@10.244.1.1] ports=[http/8080]")
	})

	t.Run("service ports and selector", func(t *testing.T) {
		cur, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Ports[0].TargetPort = intstr.FromInt32(9090)
		if cur, err = cs.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "ready=[p4@10.244.1.4] notReady=[p1@10.244.1.1] ports=[http/9090]")
		cur.Spec.Selector = map[string]string{"app": "other"}
		if _, err = cs.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "web", "ready=[p3@10.244.1.3] notReady=[] ports=[http/9090]")
	})

	t.Run("no write without a change", func(t *testing.T) {
		before, err := cs.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p3, err := cs.CoreV1().Pods(ns).Get(ctx, "p3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p3.Annotations = map[string]string{"touched": "yes"}
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, p3, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Annotations = map[string]string{"touched": "yes"}
		if _, err := cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A later service's Endpoints showing up means the controller got past
		// those changes.
		sentinel := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432}}}}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, cs, "sentinel", "ready=[db@10.244.1.9] notReady=[] ports=[/5432]")
		after, err := cs.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Fatalf("endpoints were rewritten without a change: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("service deleted", func(t *testing.T) {
		if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 20*time.Second, func() error {
			_, err := cs.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("endpoints still there (err %v)", err)
		})
	})
}
