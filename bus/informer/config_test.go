package informer

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/bus/busauth"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	newPod := func() *corev1.Pod { return &corev1.Pod{} }
	ok := func() Config[*corev1.Pod] {
		return Config[*corev1.Pod]{JetStream: stubJS{}, Component: "scheduler", Resource: "pods", New: newPod}
	}
	tests := []struct {
		name   string
		mutate func(*Config[*corev1.Pod])
		err    string // substring; "" means valid
	}{
		{"valid", func(*Config[*corev1.Pod]) {}, ""},
		{"node mode", func(c *Config[*corev1.Pod]) { c.Node = "n1" }, ""},
		{"no JetStream", func(c *Config[*corev1.Pod]) { c.JetStream = nil }, "JetStream"},
		{"no component", func(c *Config[*corev1.Pod]) { c.Component = "" }, "Component"},
		{"no resource", func(c *Config[*corev1.Pod]) { c.Resource = "" }, "Resource"},
		{"no New", func(c *Config[*corev1.Pod]) { c.New = nil }, "New"},
		{"node mode for another resource", func(c *Config[*corev1.Pod]) { c.Node, c.Resource = "n1", "services" }, "only for core pods"},
		{"unnamed indexer", func(c *Config[*corev1.Pod]) {
			c.Indexers = map[string]IndexFunc[*corev1.Pod]{"": func(*corev1.Pod) []string { return nil }}
		}, "indexer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ok()
			tc.mutate(&c)
			err := c.validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("validate() = %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("validate() = %v, want an error about %q", err, tc.err)
			case err == nil && (c.Logger == nil || c.CheckInterval != DefaultCheckInterval):
				t.Fatal("validate() did not fill in the defaults")
			}
		})
	}
}

// notMeta is a runtime.Object without object metadata.
type notMeta struct{ runtime.Unknown }

func TestConfigNeedsObjectMeta(t *testing.T) {
	t.Parallel()
	c := Config[*notMeta]{JetStream: stubJS{}, Component: "x", Resource: "things", New: func() *notMeta { return &notMeta{} }}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "metav1.Object") {
		t.Fatalf("validate() = %v, want an error about metav1.Object", err)
	}
}

func TestConfigSubjects(t *testing.T) {
	t.Parallel()
	type cfg = Config[*corev1.Pod]
	tests := []struct {
		name                          string
		c                             cfg
		durable, stream, state, chain string
		filters                       []string
	}{
		{"core resource", cfg{Component: "scheduler", Resource: "pods"},
			"scheduler_pods", "KUBE_HISTORY", "kstate.core.pods.>", "kube.core.pods.>",
			[]string{"kube.core.pods.>", "kbus.gap"}},
		{"dotted group and a namespace", cfg{Component: "controller-manager", Group: "apps", Resource: "deployments", Namespace: "kube-system"},
			"controller-manager_deployments-apps_ns-kube-system", "KUBE_HISTORY", "kstate.apps.deployments.kube-system.*", "kube.apps.deployments.>",
			[]string{"kube.apps.deployments.>", "kbus.gap"}},
		{"group with dots", cfg{Component: "gc", Group: "networking.k8s.io", Resource: "ingresses"},
			"gc_ingresses-networking-k8s-io", "KUBE_HISTORY", "kstate.networking%2Ek8s%2Eio.ingresses.>", "kube.networking%2Ek8s%2Eio.ingresses.>",
			[]string{"kube.networking%2Ek8s%2Eio.ingresses.>", "kbus.gap"}},
		{"namespace and instance", cfg{Component: "kube-controller-manager", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease", Instance: "vm"},
			"kube-controller-manager_leases-coordination-k8s-io_ns-kube-node-lease_vm", "KUBE_HISTORY", "kstate.coordination%2Ek8s%2Eio.leases.kube-node-lease.*",
			"kube.coordination%2Ek8s%2Eio.leases.>", []string{"kube.coordination%2Ek8s%2Eio.leases.>", "kbus.gap"}},
		{"node with an instance keeps the old name", cfg{Component: "kubelet", Resource: "pods", Node: "worker.1", Instance: "a b"},
			"kubelet-core-pods-worker%2E1-a%20b", "KUBE_NODEPODS", "kstatenode.worker%2E1.>", "knode.worker%2E1.>",
			[]string{"knode.worker%2E1.>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.c
			got := []string{c.durableName(), c.liveStream(), c.stateFilter(), c.liveFilter()}
			want := []string{tc.durable, tc.stream, tc.state, tc.chain}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("got %q, want %q", got[i], want[i])
				}
			}
			if f := c.liveFilters(); strings.Join(f, " ") != strings.Join(tc.filters, " ") {
				t.Errorf("filters %v, want %v", f, tc.filters)
			}
			if strings.ContainsAny(c.durableName(), ">*. /\\\t\r\n") {
				t.Errorf("durable name %q is not a valid consumer name", c.durableName())
			}
		})
	}
}

// validConsumerName: what NATS accepts as a consumer name (at most 255
// bytes).
func validConsumerName(t *testing.T, name string) {
	t.Helper()
	if name == "" || len(name) > 255 || strings.ContainsAny(name, ">*. /\\\t\r\n") {
		t.Errorf("durable name %q is not a valid consumer name", name)
	}
}

// hashed matches a name that ends in the hash of its fields.
var hashed = regexp.MustCompile(`^[A-Za-z0-9_-]+~[0-9a-f]{10}$`)

// TestDurableNames: names read as their selection and are unique; where
// the readable form loses something, and only there, a hash tells the
// selections apart.
func TestDurableNames(t *testing.T) {
	t.Parallel()
	type cfg = Config[*corev1.Pod]
	long := strings.Repeat("x", 300)
	tests := []struct {
		c    cfg
		want string // a readable name, or the readable part before "~" of a hashed one
		hash bool
	}{
		{c: cfg{Component: "kube-scheduler", Resource: "pods", Instance: "vm-3399"}, want: "kube-scheduler_pods_vm-3399"},
		{c: cfg{Component: "kube-proxy", Group: "discovery.k8s.io", Resource: "endpointslices"}, want: "kube-proxy_endpointslices-discovery-k8s-io"},
		{c: cfg{Component: "kube-apiserver", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Instance: "Host-1"},
			want: "kube-apiserver_clusterroles-rbac-authorization-k8s-io_Host-1"},
		{c: cfg{Component: "kcm", Resource: "pods", Namespace: "ns-a", Instance: "ns-b"}, want: "kcm_pods_ns-ns-a_ns-b"},
		// Lossy: each of these has a twin below that reads the same.
		{c: cfg{Component: "c", Group: "a-b.c", Resource: "r"}, want: "c_r-a-b-c", hash: true},
		{c: cfg{Component: "c", Group: "a.b-c", Resource: "r"}, want: "c_r-a-b-c", hash: true},
		{c: cfg{Component: "c", Group: "a.b.c", Resource: "r"}, want: "c_r-a-b-c"},
		{c: cfg{Component: "c", Resource: "foo-bar"}, want: "c_foo-bar", hash: true},
		{c: cfg{Component: "c", Group: "bar", Resource: "foo"}, want: "c_foo-bar"},
		{c: cfg{Component: "c", Resource: "r", Instance: "ns-x"}, want: "c_r_ns-x", hash: true},
		{c: cfg{Component: "c", Resource: "r", Namespace: "x"}, want: "c_r_ns-x"},
		{c: cfg{Component: "c", Resource: "r", Instance: "host.example.com-12"}, want: "c_r_host-example-com-12", hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: "host-example-com-12"}, want: "c_r_host-example-com-12"},
		{c: cfg{Component: "c", Resource: "r", Instance: "a b"}, want: "c_r_a-b", hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: "a_b"}, want: "c_r_a-b", hash: true},
		{c: cfg{Component: "c_r", Resource: "a-b"}, want: "c-r_a-b", hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: "ünï"}, want: "c_r_-n-", hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: "a~b"}, want: "c_r_a-b", hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: long}, want: "c_r_" + long[:255-15], hash: true},
		{c: cfg{Component: "c", Resource: "r", Instance: long + "y"}, want: "c_r_" + long[:255-15], hash: true},
	}
	seen := map[string]cfg{}
	for _, tc := range tests {
		name := tc.c.durableName()
		validConsumerName(t, name)
		readable, _, _ := strings.Cut(name, "~")
		if readable != tc.want || hashed.MatchString(name) != tc.hash {
			t.Errorf("%+v: durable name %q, want %q hashed: %v", tc.c, name, tc.want, tc.hash)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%+v and %+v share the durable name %q", tc.c, other, name)
		}
		seen[name] = tc.c
		if again := tc.c.durableName(); again != name {
			t.Errorf("%+v: durable name %q, then %q", tc.c, name, again)
		}
	}
}

// TestNodeDurableNames: a kubelet's informer keeps the consumer name the
// bus's node permissions are keyed on.
func TestNodeDurableNames(t *testing.T) {
	t.Parallel()
	for _, node := range []string{"a", "n1.example.com", "node_1"} {
		c := Config[*corev1.Pod]{Component: "kubelet", Resource: "pods", Node: node}
		if got, want := c.durableName(), busauth.NodeConsumer(node); got != want {
			t.Errorf("node %q: durable name %q, busauth.NodeConsumer %q", node, got, want)
		}
		if c.legacyDurableName() != c.durableName() {
			t.Errorf("node %q: the name changed from %q to %q", node, c.legacyDurableName(), c.durableName())
		}
	}
}
