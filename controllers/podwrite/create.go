package podwrite

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Creates is how to create a controller's pods.
type Creates struct {
	// Create creates the i-th pod of the call (0 <= i < n); calls run in
	// parallel.
	Create func(ctx context.Context, i int) (*corev1.Pod, error)
	// Recorder records the Events on Object.
	Recorder record.EventRecorder
	Object   runtime.Object
	// Ignore, when set, picks the errors that count neither as a creation
	// nor as a failure (the Job controller: the namespace is terminating).
	Ignore func(error) bool
}

// InBatches creates n pods in slow-start batches of 1, 2, 4, ... pods,
// each batch in parallel, stopping after a batch with a failure. It
// returns how many pods the API server accepted (or may have: a timeout
// counts, as upstream) and the first failure.
func (c Creates) InBatches(ctx context.Context, n int) (int, error) {
	created := 0
	for from, size := 0, 1; from < n; size *= 2 {
		b := min(size, n-from)
		ok, err := c.batch(ctx, from, b)
		created += ok
		from += b
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

// batch creates pods [from, from+n) in parallel.
func (c Creates) batch(ctx context.Context, from, n int) (int, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		ok       int
		firstErr error
	)
	for i := from; i < from+n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod, err := c.Create(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				c.Recorder.Eventf(c.Object, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
			case apierrors.IsTimeout(err):
				ok++
			case c.Ignore != nil && c.Ignore(err):
			default:
				if firstErr == nil {
					firstErr = err
				}
				if ctx.Err() == nil {
					c.Recorder.Eventf(c.Object, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return ok, firstErr
}
