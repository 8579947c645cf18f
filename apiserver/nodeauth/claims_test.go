package nodeauth

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/bus/informer"
)

var _ informer.Handler[*corev1.PersistentVolumeClaim] = ClaimHandler{}

func pvc(ns, name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
}

// TestAuthorizeVolumes: a node may get the PersistentVolume bound to a
// claim of one of its pods (the claim → volume edge), nothing else of
// persistentvolumes, and loses it when the pod, the claim or the binding
// goes.
func TestAuthorizeVolumes(t *testing.T) {
	t.Parallel()
	const noRel = "no relationship found between node 'n1' and this object"
	get := func(node, verb, name, sub string) auth.Attributes {
		return auth.Attributes{User: nodeUser(node), Verb: verb, ResourceRequest: true, Resource: "persistentvolumes", Subresource: sub, Name: name}
	}
	type step struct {
		name   string
		change func(g *Graph)
		attrs  auth.Attributes
		want   auth.Decision
		reason string
	}
	web := fullPod("ns", "web", "n1") // uses claims ns/data and ns/web-scratch
	steps := []step{
		{"claim not yet known", func(g *Graph) { g.AddPod(web) }, get("n1", "get", "pv-data", ""), auth.NoOpinion, noRel},
		{"claim unbound", func(g *Graph) { g.ClaimHandler().OnAdd(pvc("ns", "data", "")) }, get("n1", "get", "pv-data", ""), auth.NoOpinion, noRel},
		{"claim bound", func(g *Graph) { g.ClaimHandler().OnUpdate(nil, pvc("ns", "data", "pv-data")) }, get("n1", "get", "pv-data", ""), auth.Allow, ""},
		{"ephemeral claim bound", func(g *Graph) { g.SetClaim(pvc("ns", "web-scratch", "pv-scratch")) }, get("n1", "get", "pv-scratch", ""), auth.Allow, ""},
		{"other node", nil, get("n2", "get", "pv-data", ""), auth.NoOpinion, "no relationship found between node 'n2' and this object"},
		{"unrelated volume", nil, get("n1", "get", "pv-other", ""), auth.NoOpinion, noRel},
		{"claim of another namespace bound to it", func(g *Graph) { g.SetClaim(pvc("other", "x", "pv-other")) }, get("n1", "get", "pv-other", ""), auth.NoOpinion, noRel},
		{"list", nil, get("n1", "list", "", ""), auth.NoOpinion, "can only get individual resources of this type"},
		{"update", nil, get("n1", "update", "pv-data", ""), auth.NoOpinion, "can only get individual resources of this type"},
		{"status", nil, get("n1", "get", "pv-data", "status"), auth.NoOpinion, "cannot get subresource"},
		{"no name", nil, get("n1", "get", "", ""), auth.NoOpinion, "No Object name found"},
		{"rebound elsewhere", func(g *Graph) { g.SetClaim(pvc("ns", "data", "pv-new")) }, get("n1", "get", "pv-data", ""), auth.NoOpinion, noRel},
		{"new volume", nil, get("n1", "get", "pv-new", ""), auth.Allow, ""},
		{"claim deleted", func(g *Graph) { g.ClaimHandler().OnDelete(pvc("ns", "data", "pv-new")) }, get("n1", "get", "pv-new", ""), auth.NoOpinion, noRel},
		{"pod deleted", func(g *Graph) { g.DeletePod(web) }, get("n1", "get", "pv-scratch", ""), auth.NoOpinion, noRel},
	}
	g := NewGraph()
	az := NewAuthorizer(g)
	for _, s := range steps {
		if s.change != nil {
			s.change(g)
		}
		d, reason, err := az.Authorize(context.Background(), s.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if d != s.want || reason != s.reason {
			t.Errorf("%s: Authorize = %v %q, want %v %q", s.name, d, reason, s.want, s.reason)
		}
	}
	g.DeleteClaim(pvc("ns", "web-scratch", ""))
	g.DeleteClaim(pvc("other", "x", ""))
	if len(g.claimVolume) != 0 || len(g.volumeClaims) != 0 {
		t.Errorf("graph keeps claims: %v %v", g.claimVolume, g.volumeClaims)
	}
}
