package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestImagesToFree(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	imgs := []runtime.Image{
		{ID: "old", Size: 30, LastUsedAt: t0},
		{ID: "used", Size: 50, LastUsedAt: t0.Add(-time.Hour)},
		{ID: "mid", Size: 20, LastUsedAt: t0.Add(time.Hour)},
		{ID: "new", Size: 40, LastUsedAt: t0.Add(2 * time.Hour)},
	}
	inUse := map[string]bool{"used": true}
	ids := func(is []runtime.Image) (out []string) {
		for _, i := range is {
			out = append(out, i.ID)
		}
		return out
	}
	cases := []struct {
		name     string
		used     uint64
		lastUsed map[string]time.Time
		want     []string
	}{
		{"below the high threshold", 84, nil, nil},
		{"above: free down to 80%, oldest first, never in use", 90, nil, []string{"old"}},
		{"more to free", 120, nil, []string{"old", "mid"}},
		{"the kubelet's own record of use wins when later", 90, map[string]time.Time{"old": t0.Add(3 * time.Hour)}, []string{"mid"}},
		{"all unused images when needed", 200, nil, []string{"old", "mid", "new"}},
	}
	for _, c := range cases {
		got := ids(ImagesToFree(imgs, inUse, c.lastUsed, runtime.FsInfo{CapacityBytes: 100, Used: c.used}, 85, 80))
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
		}
	}
	if got := ImagesToFree(imgs, nil, nil, runtime.FsInfo{}, 85, 80); got != nil {
		t.Errorf("no capacity reading: got %v", got)
	}
}

func TestNodeImages(t *testing.T) {
	got := NodeImages([]runtime.Image{{ID: "sha256:a", RepoTags: []string{"a:1"}, Size: 1}, {ID: "sha256:b", RepoTags: []string{"b:1"}, Size: 5}, {Size: 9}})
	if len(got) != 2 || got[0].Names[0] != "b:1" || got[0].Names[1] != "sha256:b" || got[0].SizeBytes != 5 || got[1].Names[0] != "a:1" {
		t.Fatalf("got %+v", got)
	}
}

func TestStaticPod(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	p, err := StaticPod(manifest, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web-n1" || p.Namespace != "default" || p.Spec.NodeName != "n1" || !isStatic(p) || p.UID == "" ||
		p.Annotations[AnnotationConfigHash] != string(p.UID) || p.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		p.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Fatalf("static pod %+v", p)
	}
	again, _ := StaticPod(manifest, "n1")
	other, _ := StaticPod(manifest, "n2")
	if again.UID != p.UID || other.UID == p.UID {
		t.Fatalf("UIDs: same manifest %s/%s, other node %s", p.UID, again.UID, other.UID)
	}
	for name, bad := range map[string]string{
		"not yaml":      "{",
		"no name":       "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n",
		"no containers": "kind: Pod\nmetadata:\n  name: x\n",
		"not a pod":     "kind: Service\nmetadata:\n  name: x\n",
		"unknown field": "kind: Pod\nmetadata:\n  name: x\nspec:\n  bogus: 1\n",
	} {
		if _, err := StaticPod([]byte(bad), "n1"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m := MirrorPod(p, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "nu"}})
	if m.Annotations[corev1.MirrorPodAnnotationKey] != string(p.UID) || m.OwnerReferences[0].UID != "nu" || m.UID != "" || m.Spec.NodeName != "n1" {
		t.Fatalf("mirror %+v", m)
	}
}
