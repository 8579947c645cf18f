package replicaset

import (
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlanClaims(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 3, map[string]string{"app": "web"})
	other := mkRS("other", 1, map[string]string{"app": "web"})
	other.UID = "other-uid"
	deletingRS := rs.DeepCopy()
	deletingRS.DeletionTimestamp = &metav1.Time{Time: t0}

	mine := mkPod("mine", labelled("app", "web"), ownedBy(rs))
	strayed := mkPod("strayed", labelled("app", "db"), ownedBy(rs))
	orphan := mkPod("orphan", labelled("app", "web"))
	orphanDeleting := mkPod("orphan-deleting", labelled("app", "web"), deleting())
	unrelated := mkPod("unrelated", labelled("app", "db"))
	theirs := mkPod("theirs", labelled("app", "web"), ownedBy(other))
	elsewhere := mkPod("elsewhere", labelled("app", "web"))
	elsewhere.Namespace = "other-ns"
	all := []*corev1.Pod{mine, strayed, orphan, orphanDeleting, unrelated, theirs, elsewhere}

	tests := []struct {
		name                  string
		rs                    *appsv1.ReplicaSet
		owned, adopt, release []string
	}{
		{"live", rs, []string{"mine"}, []string{"orphan"}, []string{"strayed"}},
		{"being deleted: neither adopts nor releases", deletingRS, []string{"mine"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := planClaims(tt.rs, selectorOf(t, tt.rs), all)
			if got := names(c.owned); !slices.Equal(got, nonNil(tt.owned)) {
				t.Errorf("owned = %v, want %v", got, tt.owned)
			}
			if got := names(c.adopt); !slices.Equal(got, nonNil(tt.adopt)) {
				t.Errorf("adopt = %v, want %v", got, tt.adopt)
			}
			if got := names(c.release); !slices.Equal(got, nonNil(tt.release)) {
				t.Errorf("release = %v, want %v", got, tt.release)
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestOwnerPatches(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 3, map[string]string{"app": "web"})
	gc := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	p := mkPod("p", labelled("app", "web"))
	p.UID, p.ResourceVersion = "pod-uid", "42"
	p.OwnerReferences = []metav1.OwnerReference{gc}

	decode := func(b []byte, err error) patchMeta {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var m mergePatch
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m.Metadata
	}
	adopt := decode(adoptPatch(rs, p))
	if adopt.ResourceVersion != "42" || adopt.UID != "pod-uid" || len(adopt.OwnerReferences) != 2 ||
		adopt.OwnerReferences[0] != gc || adopt.OwnerReferences[1].UID != rs.UID || !*adopt.OwnerReferences[1].Controller {
		t.Errorf("adopt patch %+v", adopt)
	}
	if len(p.OwnerReferences) != 1 {
		t.Error("adoptPatch changed the cached pod")
	}

	p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
	release := decode(releasePatch(rs, p))
	if len(release.OwnerReferences) != 1 || release.OwnerReferences[0] != gc {
		t.Errorf("release patch %+v", release)
	}
	p.OwnerReferences = p.OwnerReferences[1:]
	b, err := releasePatch(rs, p)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]any
	_ = json.Unmarshal(b, &raw)
	if refs, ok := raw["metadata"]["ownerReferences"].([]any); !ok || len(refs) != 0 {
		t.Errorf("releasing the last owner must send an empty list, got %s", b)
	}
}
