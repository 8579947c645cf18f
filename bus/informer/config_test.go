package informer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
			"scheduler-core-pods", "KUBE_HISTORY", "kstate.core.pods.>", "kube.core.pods.>",
			[]string{"kube.core.pods.>", "kbus.gap"}},
		{"dotted group and a namespace", cfg{Component: "controller-manager", Group: "apps", Resource: "deployments", Namespace: "kube-system"},
			"controller-manager-apps-deployments-kube-system", "KUBE_HISTORY", "kstate.apps.deployments.kube-system.*", "kube.apps.deployments.>",
			[]string{"kube.apps.deployments.>", "kbus.gap"}},
		{"group with dots is escaped", cfg{Component: "gc", Group: "networking.k8s.io", Resource: "ingresses"},
			"gc-networking%2Ek8s%2Eio-ingresses", "KUBE_HISTORY", "kstate.networking%2Ek8s%2Eio.ingresses.>", "kube.networking%2Ek8s%2Eio.ingresses.>",
			[]string{"kube.networking%2Ek8s%2Eio.ingresses.>", "kbus.gap"}},
		{"node with an instance", cfg{Component: "kubelet", Resource: "pods", Node: "worker.1", Instance: "a b"},
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
