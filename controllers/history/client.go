package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Client is every ControllerRevision write the history makes.
type Client interface {
	Create(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	// Get reads a revision from the API server (not a cache).
	Get(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error)
	Update(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	Delete(ctx context.Context, namespace, name string) error
}

// NewClient is the Client over client-go.
func NewClient(c kubernetes.Interface) Client { return apiClient{c} }

type apiClient struct{ c kubernetes.Interface }

func (a apiClient) Create(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return a.c.AppsV1().ControllerRevisions(rev.Namespace).Create(ctx, rev, metav1.CreateOptions{})
}

func (a apiClient) Get(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	return a.c.AppsV1().ControllerRevisions(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a apiClient) Update(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return a.c.AppsV1().ControllerRevisions(rev.Namespace).Update(ctx, rev, metav1.UpdateOptions{})
}

func (a apiClient) Delete(ctx context.Context, namespace, name string) error {
	return a.c.AppsV1().ControllerRevisions(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

// maxCollisions bounds CreateControllerRevision's probing; each probe
// needs a different template hashing alike, so it is never reached in
// practice.
const maxCollisions = 100

// CreateControllerRevision creates rev for parent. When a revision of the
// same name already exists with the same data it is returned instead; with
// different data (a hash collision) *collisionCount is bumped, the name and
// hash label recomputed, and the create retried. The caller writes the
// bumped collisionCount into the parent's status.
func CreateControllerRevision(ctx context.Context, c Client, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("history: collisionCount must not be nil")
	}
	clone := rev.DeepCopy()
	if clone.Labels == nil {
		clone.Labels = map[string]string{}
	}
	for range maxCollisions {
		hash := HashControllerRevision(rev, collisionCount)
		clone.Name = ControllerRevisionName(parent.GetName(), hash)
		clone.Namespace = parent.GetNamespace()
		clone.Labels[ControllerRevisionHashLabel] = hash
		created, err := c.Create(ctx, clone)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("creating ControllerRevision %s/%s: %w", clone.Namespace, clone.Name, err)
			}
			return created, nil
		}
		existing, err := c.Get(ctx, clone.Namespace, clone.Name)
		if err != nil {
			return nil, fmt.Errorf("reading ControllerRevision %s/%s: %w", clone.Namespace, clone.Name, err)
		}
		if bytes.Equal(existing.Data.Raw, clone.Data.Raw) && isControlledBy(existing, parent) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("history: %d hash collisions creating a revision of %s/%s", maxCollisions, parent.GetNamespace(), parent.GetName())
}

func isControlledBy(rev *appsv1.ControllerRevision, parent metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(rev)
	return ref == nil || ref.UID == parent.GetUID()
}

// UpdateRevision renumbers rev to revision (re-reading and retrying on a
// conflict); it returns rev unchanged when it already has that number.
func UpdateRevision(ctx context.Context, c Client, rev *appsv1.ControllerRevision, revision int64) (*appsv1.ControllerRevision, error) {
	cur := rev.DeepCopy()
	for attempt := 0; ; attempt++ {
		if cur.Revision == revision {
			return cur, nil
		}
		cur.Revision = revision
		updated, err := c.Update(ctx, cur)
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return nil, fmt.Errorf("renumbering ControllerRevision %s/%s to %d: %w", rev.Namespace, rev.Name, revision, err)
		}
		if cur, err = c.Get(ctx, rev.Namespace, rev.Name); err != nil {
			return nil, fmt.Errorf("reading ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
	}
}

// Adopt makes parent the controller of the orphaned revision rev.
func Adopt(ctx context.Context, c Client, parent metav1.Object, parentKind schema.GroupVersionKind, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if ref := metav1.GetControllerOfNoCopy(rev); ref != nil {
		if ref.UID == parent.GetUID() {
			return rev, nil
		}
		return nil, fmt.Errorf("history: ControllerRevision %s/%s is controlled by %s %s", rev.Namespace, rev.Name, ref.Kind, ref.Name)
	}
	clone := rev.DeepCopy()
	yes := true
	clone.OwnerReferences = append(clone.OwnerReferences, metav1.OwnerReference{
		APIVersion: parentKind.GroupVersion().String(), Kind: parentKind.Kind, Name: parent.GetName(), UID: parent.GetUID(),
		Controller: &yes, BlockOwnerDeletion: &yes,
	})
	updated, err := c.Update(ctx, clone)
	if err != nil {
		return nil, fmt.Errorf("adopting ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return updated, nil
}

// Release removes parent's owner reference from rev. A revision already
// gone or not owned by parent is fine.
func Release(ctx context.Context, c Client, parent metav1.Object, rev *appsv1.ControllerRevision) error {
	clone := rev.DeepCopy()
	refs := clone.OwnerReferences[:0]
	for _, r := range clone.OwnerReferences {
		if r.UID != parent.GetUID() {
			refs = append(refs, r)
		}
	}
	if len(refs) == len(rev.OwnerReferences) {
		return nil
	}
	clone.OwnerReferences = refs
	if _, err := c.Update(ctx, clone); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}
