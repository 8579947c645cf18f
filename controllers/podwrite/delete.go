package podwrite

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// Deletes is how to delete a controller's pods.
type Deletes struct {
	// Delete deletes a pod if it still has uid (Client.Delete).
	Delete func(ctx context.Context, namespace, name string, uid types.UID) error
	// Recorder records the Events on Object.
	Recorder record.EventRecorder
	Object   runtime.Object
	// Unseen, when set, is called for each pod whose deletion the cache
	// may never show as this call's: it was gone already or replaced by a
	// namesake (NotFound, Conflict), or the deletion failed.
	Unseen func(p *corev1.Pod)
}

// All deletes pods in parallel. It returns the UIDs of those that are
// gone (deleted now, already, or replaced) and every failure, each as
// "deleting pod <name>: <error>".
func (d Deletes) All(ctx context.Context, pods []*corev1.Pod) (map[types.UID]bool, error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		gone = map[types.UID]bool{}
		errs []error
	)
	unseen := func(p *corev1.Pod) {
		if d.Unseen != nil {
			d.Unseen(p)
		}
	}
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.Delete(ctx, p.Namespace, p.Name, p.UID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				gone[p.UID] = true
				d.Recorder.Eventf(d.Object, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				// Gone already (or replaced by a namesake): its deletion
				// may have been observed before it was expected.
				gone[p.UID] = true
				unseen(p)
			default:
				unseen(p)
				errs = append(errs, fmt.Errorf("deleting pod %s: %w", p.Name, err))
				if ctx.Err() == nil {
					d.Recorder.Eventf(d.Object, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return gone, errors.Join(errs...)
}
