package nodeauth

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/bus/informer"
)

var _ informer.Handler[*corev1.Pod] = PodHandler{}

func nodeUser(name string) auth.User {
	return auth.User{Name: auth.NodeUserPrefix + name, Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
}

// fullPod references one object through every path the graph follows.
func fullPod(ns, name, node string) *corev1.Pod {
	envFrom := func(secret, cm string) []corev1.EnvFromSource {
		return []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}},
		}
	}
	env := func(secret, cm string) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}},
			{Name: "C", Value: "plain"},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: "sa",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
			InitContainers:     []corev1.Container{{Name: "init", EnvFrom: envFrom("init-secret", "init-cm")}},
			Containers:         []corev1.Container{{Name: "app", Env: env("env-secret", "env-cm")}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
				{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

func withEphemeral(p *corev1.Pod, secret string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}},
	}}}
	return p
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	g.AddPod(fullPod("ns", "web", "n1"))
	g.AddPod(fullPod("ns", "pending", "")) // not bound: references nothing
	az := NewAuthorizer(g)
	const noRel = "no relationship found between node 'n1' and this object"
	res := func(verb, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: nodeUser("n1"), Verb: verb, ResourceRequest: true, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	cases := []struct {
		name   string
		attrs  auth.Attributes
		want   auth.Decision
		reason string
	}{
		{"volume secret", res("get", "secrets", "", "ns", "vol-secret"), auth.Allow, ""},
		{"projected secret", res("get", "secrets", "", "ns", "proj-secret"), auth.Allow, ""},
		{"image pull secret", res("get", "secrets", "", "ns", "pull"), auth.Allow, ""},
		{"init envFrom secret", res("get", "secrets", "", "ns", "init-secret"), auth.Allow, ""},
		{"env secret", res("get", "secrets", "", "ns", "env-secret"), auth.Allow, ""},
		{"csi secret", res("get", "secrets", "", "ns", "csi-secret"), auth.Allow, ""},
		{"watch one secret", res("watch", "secrets", "", "ns", "vol-secret"), auth.Allow, ""},
		{"list one configmap", res("list", "configmaps", "", "ns", "vol-cm"), auth.Allow, ""},
		{"projected configmap", res("get", "configmaps", "", "ns", "proj-cm"), auth.Allow, ""},
		{"init envFrom configmap", res("get", "configmaps", "", "ns", "init-cm"), auth.Allow, ""},
		{"env configmap", res("get", "configmaps", "", "ns", "env-cm"), auth.Allow, ""},
		{"claim", res("get", "persistentvolumeclaims", "", "ns", "data"), auth.Allow, ""},
		{"ephemeral claim", res("get", "persistentvolumeclaims", "", "ns", "web-scratch"), auth.Allow, ""},
		{"claim status", res("patch", "persistentvolumeclaims", "status", "ns", "data"), auth.Allow, ""},
		{"token", res("create", "serviceaccounts", "token", "ns", "sa"), auth.Allow, ""},

		{"unrelated secret", res("get", "secrets", "", "ns", "other"), auth.NoOpinion, noRel},
		{"secret of another namespace", res("get", "secrets", "", "other", "vol-secret"), auth.NoOpinion, noRel},
		{"configmap named like a secret", res("get", "configmaps", "", "ns", "vol-secret"), auth.NoOpinion, noRel},
		{"list all secrets", res("list", "secrets", "", "ns", ""), auth.NoOpinion, "No Object name found"},
		{"cluster-wide list", res("list", "secrets", "", "", ""), auth.NoOpinion, "can only read namespaced object of this type"},
		{"update secret", res("update", "secrets", "", "ns", "vol-secret"), auth.NoOpinion, "can only read resources of this type"},
		{"secret subresource", res("get", "secrets", "x", "ns", "vol-secret"), auth.NoOpinion, "cannot read subresource"},
		{"list claims", res("list", "persistentvolumeclaims", "", "ns", "data"), auth.NoOpinion, "can only get individual resources of this type"},
		{"get claim status", res("get", "persistentvolumeclaims", "status", "ns", "data"), auth.NoOpinion, "can only get/update/patch this type"},
		{"unrelated token", res("create", "serviceaccounts", "token", "ns", "default"), auth.NoOpinion, noRel},
		{"get serviceaccount", res("get", "serviceaccounts", "", "ns", "sa"), auth.NoOpinion, "can only create tokens for individual service accounts"},
		{"create serviceaccount", res("create", "serviceaccounts", "", "ns", "sa"), auth.NoOpinion, "can only create token subresource of serviceaccount"},
		{"list all pods", res("list", "pods", "", "", ""), auth.NoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"get its pod", res("get", "pods", "", "ns", "web"), auth.Allow, ""},
		{"get an unbound pod", res("get", "pods", "", "ns", "pending"), auth.NoOpinion, noRel},
		{"list nodes", res("list", "nodes", "", "", ""), auth.NoOpinion, "node 'n1' cannot read all nodes, only its own Node object"},
		{"get another node", res("get", "nodes", "", "", "n2"), auth.NoOpinion, "node 'n1' cannot read 'n2', only its own Node object"},
		{"get its node", res("get", "nodes", "", "", "n1"), auth.Allow, ""},
		{"secrets of another group", auth.Attributes{User: nodeUser("n1"), Verb: "get", ResourceRequest: true, APIGroup: "example.com", Resource: "secrets", Namespace: "ns", Name: "vol-secret"}, auth.NoOpinion, ""},
		{"non-resource", auth.Attributes{User: nodeUser("n1"), Verb: "get", Path: "/healthz"}, auth.NoOpinion, ""},
		{"other node", auth.Attributes{User: nodeUser("n2"), Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns", Name: "vol-secret"}, auth.NoOpinion, "no relationship found between node 'n2' and this object"},
		{"not a node", auth.Attributes{User: auth.User{Name: "system:node:n1"}, Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns", Name: "vol-secret"}, auth.NoOpinion, ""},
		{"unknown node", auth.Attributes{User: auth.User{Name: "system:node:", Groups: []string{auth.NodesGroup}}, Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns", Name: "vol-secret"}, auth.NoOpinion, `unknown node for user "system:node:"`},
		{"user", auth.Attributes{User: auth.User{Name: "alice"}, Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns", Name: "vol-secret"}, auth.NoOpinion, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, reason, err := az.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("Authorize = %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestGraphEvents(t *testing.T) {
	t.Parallel()
	secret := func(node, name string) auth.Attributes {
		return auth.Attributes{User: nodeUser(node), Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns", Name: name}
	}
	pod := func(name, node string, secrets ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		for _, s := range secrets {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: s, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
		}
		return p
	}
	type check struct {
		attrs auth.Attributes
		want  auth.Decision
	}
	cases := []struct {
		name   string
		events func(h PodHandler)
		checks []check
	}{
		{
			name: "shared reference outlives one pod",
			events: func(h PodHandler) {
				h.OnAdd(pod("a", "n1", "shared", "only-a"))
				h.OnAdd(pod("b", "n1", "shared"))
				h.OnDelete(pod("a", "n1", "shared", "only-a"))
			},
			checks: []check{{secret("n1", "shared"), auth.Allow}, {secret("n1", "only-a"), auth.NoOpinion}},
		},
		{
			name: "a secret used twice by one pod is counted once",
			events: func(h PodHandler) {
				p := pod("a", "n1", "s")
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}}
				h.OnAdd(p)
				h.OnAdd(pod("b", "n1", "s"))
				h.OnDelete(pod("b", "n1", "s"))
				h.OnDelete(p)
			},
			checks: []check{{secret("n1", "s"), auth.NoOpinion}},
		},
		{
			name: "binding adds the references",
			events: func(h PodHandler) {
				h.OnAdd(pod("a", "", "s"))
				h.OnUpdate(pod("a", "", "s"), pod("a", "n1", "s"))
			},
			checks: []check{{secret("n1", "s"), auth.Allow}},
		},
		{
			name: "ephemeral containers are added by an update",
			events: func(h PodHandler) {
				p := pod("a", "n1")
				h.OnAdd(p)
				h.OnUpdate(p, withEphemeral(p, "debug"))
			},
			checks: []check{{secret("n1", "debug"), auth.Allow}},
		},
		{
			name: "delete forgets what the pod added, whatever the deleted object holds",
			events: func(h PodHandler) {
				h.OnAdd(pod("a", "n1", "s"))
				h.OnDelete(pod("a", "n1")) // a tombstone without the volumes
			},
			checks: []check{{secret("n1", "s"), auth.NoOpinion}},
		},
		{
			name: "update moving a pod to another node",
			events: func(h PodHandler) {
				h.OnAdd(pod("a", "n1", "s"))
				h.OnUpdate(pod("a", "n1", "s"), pod("a", "n2", "s"))
			},
			checks: []check{{secret("n1", "s"), auth.NoOpinion}, {secret("n2", "s"), auth.Allow}},
		},
		{
			name: "deleting an unknown pod is harmless",
			events: func(h PodHandler) {
				h.OnAdd(pod("a", "n1", "s"))
				h.OnDelete(pod("b", "n1", "s"))
			},
			checks: []check{{secret("n1", "s"), auth.Allow}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewGraph()
			tc.events(g.Handler())
			az := NewAuthorizer(g)
			for _, c := range tc.checks {
				if d, reason, _ := az.Authorize(context.Background(), c.attrs); d != c.want {
					t.Errorf("%s %s: %v (%s), want %v", c.attrs.User.Name, c.attrs.Name, d, reason, c.want)
				}
			}
		})
	}
}

func TestGraphForgetsEverything(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p := fullPod(fmt.Sprintf("ns%d", w), fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%7))
				g.AddPod(p)
				g.UpdatePod(p, withEphemeral(p, "debug"))
				_, _, _ = NewAuthorizer(g).Authorize(context.Background(), auth.Attributes{User: nodeUser("n1"), Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: p.Namespace, Name: "pull"})
				g.DeletePod(p)
			}
		})
	}
	wg.Wait()
	if len(g.pods) != 0 || len(g.nodes) != 0 {
		t.Errorf("graph keeps %d pods and %d nodes after every pod was deleted", len(g.pods), len(g.nodes))
	}
}

func BenchmarkAuthorize(b *testing.B) {
	g := NewGraph()
	const pods, nodes = 10000, 1000
	for i := range pods {
		g.AddPod(fullPod(fmt.Sprintf("ns%d", i%50), fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%nodes)))
	}
	az := NewAuthorizer(g)
	allowed := auth.Attributes{User: nodeUser("n7"), Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns7", Name: "vol-secret"}
	refused := allowed
	refused.Namespace = "ns8"
	other := allowed
	other.Resource = "pods"
	for _, bc := range []struct {
		name  string
		attrs auth.Attributes
		want  auth.Decision
	}{{"allowed", allowed, auth.Allow}, {"refused", refused, auth.NoOpinion}, {"other resource", other, auth.NoOpinion}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d, _, _ := az.Authorize(context.Background(), bc.attrs); d != bc.want {
						b.Fatalf("decision %v, want %v", d, bc.want)
					}
				}
			})
		})
	}
}
