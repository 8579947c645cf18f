package claim

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CanAdopt reads owner afresh through get (from the API server, not the
// cache, which may lag): an owner that is gone, replaced or being deleted
// must not adopt. kind names the owner in errors ("replicaset").
func CanAdopt[T metav1.Object](ctx context.Context, kind string, owner T, get func(ctx context.Context, namespace, name string) (T, error)) error {
	fresh, err := get(ctx, owner.GetNamespace(), owner.GetName())
	if err != nil {
		return fmt.Errorf("checking %s %s/%s before adopting: %w", kind, owner.GetNamespace(), owner.GetName(), err)
	}
	if fresh.GetUID() != owner.GetUID() {
		return fmt.Errorf("%s %s/%s was replaced (uid %s, cached %s)", kind, owner.GetNamespace(), owner.GetName(), fresh.GetUID(), owner.GetUID())
	}
	if fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s %s/%s is being deleted", kind, owner.GetNamespace(), owner.GetName())
	}
	return nil
}

// Writes are how Apply carries a Plan out.
type Writes[T Object] struct {
	// Kind names the owned objects in errors ("pod").
	Kind string
	// CanAdopt is asked once before the first adoption (see CanAdopt); an
	// error adopts nothing.
	CanAdopt func(ctx context.Context) error
	// Adopt makes the owner obj's controller and returns the object to
	// count as owned from now on (the zero T: none).
	Adopt func(ctx context.Context, obj T) (T, error)
	// Release removes the owner from obj's owners.
	Release func(ctx context.Context, obj T) error
}

// Apply adopts and releases as p says and returns the objects the owner
// controls afterwards: p.Owned and those adopted. Every failure is in the
// error; one failure does not stop the other writes.
func Apply[T Object](ctx context.Context, p Plan[T], w Writes[T]) ([]T, error) {
	owned := p.Owned
	var errs []error
	if len(p.Adopt) > 0 {
		if err := w.CanAdopt(ctx); err != nil {
			errs = append(errs, err)
		} else {
			var zero T
			for _, o := range p.Adopt {
				got, err := w.Adopt(ctx, o)
				if err != nil {
					errs = append(errs, fmt.Errorf("adopting %s %s/%s: %w", w.Kind, o.GetNamespace(), o.GetName(), err))
					continue
				}
				if got != zero {
					owned = append(owned, got)
				}
			}
		}
	}
	for _, o := range p.Release {
		if err := w.Release(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("releasing %s %s/%s: %w", w.Kind, o.GetNamespace(), o.GetName(), err))
		}
	}
	return owned, errors.Join(errs...)
}
