// Package history keeps ControllerRevisions: the revision history
// StatefulSets and DaemonSets keep of their pod templates.
//
// A revision holds its parent's pod template as a strategic merge patch
// (TemplatePatch), the form kubectl rollout history and rollout undo read
// and apply. Its name is the parent's name and a hash of the data
// (HashControllerRevision); when two different templates hash alike, the
// parent's status.collisionCount is bumped and folded into the hash
// (CreateControllerRevision).
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ControllerRevisionHashLabel is the label a revision and the pods made
// from it carry: the revision's hash.
const ControllerRevisionHashLabel = "controller-revision-hash"

// maxPrefixLen keeps <prefix>-<hash> within a DNS subdomain name (253):
// the hash is at most 10 characters after encoding, plus the dash.
const maxPrefixLen = 223

// ControllerRevisionName is the name of the revision of parent prefix with
// hash.
func ControllerRevisionName(prefix, hash string) string {
	if len(prefix) > maxPrefixLen {
		prefix = prefix[:maxPrefixLen]
	}
	return prefix + "-" + hash
}

// HashControllerRevision hashes rev's data (and probe, the parent's
// collision count, when set) with FNV-32a and renders it in the
// characters safe for names and label values.
func HashControllerRevision(rev *appsv1.ControllerRevision, probe *int32) string {
	h := fnv.New32a()
	if len(rev.Data.Raw) > 0 {
		h.Write(rev.Data.Raw)
	}
	if rev.Data.Object != nil {
		// A revision built in memory may carry an object instead of bytes:
		// hash its JSON form.
		if raw, err := json.Marshal(rev.Data.Object); err == nil {
			h.Write(raw)
		}
	}
	if probe != nil {
		h.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// NewControllerRevision builds (does not create) the revision number
// revision of parent holding data: labelled with templateLabels and the
// hash, owned by parent as its controller, named <parent>-<hash>.
func NewControllerRevision(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string,
	data runtime.RawExtension, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if parent == nil {
		return nil, fmt.Errorf("history: no parent")
	}
	labels := make(map[string]string, len(templateLabels)+1)
	maps.Copy(labels, templateLabels)
	yes := true
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: parent.GetNamespace(),
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         parentKind.GroupVersion().String(),
				Kind:               parentKind.Kind,
				Name:               parent.GetName(),
				UID:                parent.GetUID(),
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Data:     data,
		Revision: revision,
	}
	hash := HashControllerRevision(rev, collisionCount)
	rev.Name = ControllerRevisionName(parent.GetName(), hash)
	rev.Labels[ControllerRevisionHashLabel] = hash
	return rev, nil
}

// EqualRevision says whether a and b hold the same data. Two revisions
// whose hash labels differ are never equal; two nil revisions are.
func EqualRevision(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	ha, oka := a.Labels[ControllerRevisionHashLabel]
	hb, okb := b.Labels[ControllerRevisionHashLabel]
	if oka && okb && ha != hb {
		return false
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw) && apiequality.Semantic.DeepEqual(a.Data.Object, b.Data.Object)
}

// FindEqualRevisions returns the revisions in revs equal to needle, in
// the order of revs.
func FindEqualRevisions(revs []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revs {
		if EqualRevision(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// SortControllerRevisions sorts revs in place by Revision, then creation
// time, then name.
func SortControllerRevisions(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool { return revisionLess(revs[i], revs[j]) })
}

func revisionLess(a, b *appsv1.ControllerRevision) bool {
	if a.Revision != b.Revision {
		return a.Revision < b.Revision
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// NextRevision is the revision number after every one in revs: 1 for no
// revisions.
func NextRevision(revs []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revs {
		highest = max(highest, r.Revision)
	}
	return highest + 1
}
