package deployment

import (
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/claim"
)

func TestPlanClaims(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	other := mkDeployment(3, "img:1")
	other.UID = "other-uid"
	orphaned := func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil }
	relabelled := func(rs *appsv1.ReplicaSet) { rs.Labels = map[string]string{"app": "db"} }
	theirs := func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(other, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	deletingRS := func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = &metav1.Time{Time: t0} }
	candidates := []*appsv1.ReplicaSet{
		mkRS(d, "mine", "img:1", "1", 3),
		mkRS(d, "strayed", "img:1", "1", 3, relabelled),
		mkRS(d, "orphan", "img:1", "1", 3, orphaned),
		mkRS(d, "orphan-deleting", "img:1", "1", 3, orphaned, deletingRS),
		mkRS(d, "theirs", "img:1", "1", 3, theirs),
	}
	sel, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	c := claim.Sort(d, claim.Selects[*appsv1.ReplicaSet](sel), candidates)
	if !slices.Equal(names(c.Owned), []string{"mine"}) || !slices.Equal(names(c.Adopt), []string{"orphan"}) || !slices.Equal(names(c.Release), []string{"strayed"}) {
		t.Errorf("owned %v adopt %v release %v", names(c.Owned), names(c.Adopt), names(c.Release))
	}
	d.DeletionTimestamp = &metav1.Time{Time: t0}
	c = claim.Sort(d, claim.Selects[*appsv1.ReplicaSet](sel), candidates)
	if !slices.Equal(names(c.Owned), []string{"mine"}) || len(c.Adopt)+len(c.Release) != 0 {
		t.Errorf("a deployment being deleted: owned %v adopt %v release %v", names(c.Owned), names(c.Adopt), names(c.Release))
	}
}

func TestPatches(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	rs := mkRS(d, "rs", "img:1", "1", 3)
	rs.ResourceVersion = "17"
	var got struct {
		Metadata struct {
			ResourceVersion string                  `json:"resourceVersion"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
			Annotations     map[string]string       `json:"annotations"`
		} `json:"metadata"`
	}
	b, err := claim.ReleasePatch(d, rs)
	if err != nil || json.Unmarshal(b, &got) != nil || got.Metadata.ResourceVersion != "17" || got.Metadata.OwnerReferences == nil || len(got.Metadata.OwnerReferences) != 0 {
		t.Errorf("release patch %s (%v)", b, err)
	}
	rs.OwnerReferences = nil
	b, err = claim.AdoptPatch(d, controllerKind, rs)
	if err != nil || json.Unmarshal(b, &got) != nil || len(got.Metadata.OwnerReferences) != 1 || got.Metadata.OwnerReferences[0].UID != d.UID {
		t.Errorf("adopt patch %s (%v)", b, err)
	}
	d.ResourceVersion = "5"
	b, err = revisionPatch(d, "4")
	if err != nil || json.Unmarshal(b, &got) != nil || got.Metadata.ResourceVersion != "5" || got.Metadata.Annotations[RevisionAnnotation] != "4" {
		t.Errorf("revision patch %s (%v)", b, err)
	}
}
