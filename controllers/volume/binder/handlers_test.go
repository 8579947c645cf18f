package binder

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
)

// TestVolumeWakesTheClaimNamingIt: a claim that names its volume and
// reached the controller before the volume did is synced again when the
// volume appears, and then binds (the claim and volume caches are fed
// apart, so either may come first).
func TestVolumeWakesTheClaimNamingIt(t *testing.T) {
	t.Parallel()
	preBound := claim(new(""), "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pinned" })
	f := newFixture(t, []*corev1.PersistentVolumeClaim{preBound}, nil)
	var queued []controllers.Request
	f.r.register(func(r controllers.Request) { queued = append(queued, r) })
	f.sync(t, controllers.Request{Namespace: "ns", Name: "data"}) // no volume yet
	if c := f.claim(t); c.Status.Phase == corev1.ClaimBound {
		t.Fatalf("claim bound with no volume: %+v", c.Status)
	}

	pinned := pv("pinned", "", "1Gi")
	if _, err := f.client.CoreV1().PersistentVolumes().Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.r.volumes.(lister[*corev1.PersistentVolume]).Set(pinned)
	want := controllers.Request{Namespace: "ns", Name: "data"}
	if !slices.Contains(queued, want) {
		t.Fatalf("the volume's arrival queued %v, want the claim naming it %v among them", queued, want)
	}
	f.sync(t, want)
	if c := f.claim(t); c.Status.Phase != corev1.ClaimBound {
		t.Errorf("claim after the volume came: %+v, want Bound", c.Status)
	}
}
